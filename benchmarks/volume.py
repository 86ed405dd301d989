"""A build at volume: the time after encoding (write stage and publishing), and memory.

    python benchmarks/volume.py [--gb 10] [--tree CHECKOUT ...] [--runs 1]

Builds ``--gb`` GB of distinct records with the 32k byte-level BPE (``run.py``'s,
trained on the 100 MB corpus) through the CLI, the default local configuration (two
worker processes), and prints for each build its wall seconds, when the progress line
first said ``encoded`` (every block spilled), the seconds after that (the write
stage's shards, index parts and duplicate tasks, then publishing on one worker), the
peak RSS of the process tree and that of its largest process.

The corpus is ``make_corpus.py``'s 300 MB file tiled, each copy's instructions
prefixed with the copy's number (``c1 ``, ``c2 `` ...): no sample repeats from copy to
copy, so the duplicate search sees what a corpus of that size would (about 2%
duplicates, those of each copy), not a corpus of copies. It needs about 2.2 times
``--gb`` of free disk beside ``--work`` (corpus, staging, output).

``--tree``: a checkout to build with instead of this one (repeatable; imported through
``PYTHONPATH``, e.g. a ``git worktree`` of an older commit); the trees take turns, run
after run, so that they share the machine's state.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (corpus, tokenizer, job files, RSS sampling)

TILE_MB = 300
ENCODED = b"encoded"


def tiled_corpus(work: str, gb: float) -> str:
    """``gb`` GB of the 300 MB corpus's copies, each copy's samples made distinct."""
    copies = max(1, round(gb * 1000 / TILE_MB))
    path = os.path.join(work, f"tiled_{copies}x{TILE_MB}mb.jsonl")
    if os.path.exists(path):
        return path
    tile = bench.ensure_corpus(work, TILE_MB)
    head = b'{"instruction": "'
    print(f"[volume] writing {path} ({copies} copies)", flush=True)
    with open(path + ".tmp", "wb") as out:
        for k in range(1, copies + 1):
            marker = head + b"c%d " % k
            with open(tile, "rb") as f:
                for line in f:
                    out.write(marker + line[len(head):] if line.startswith(head) else line)
    os.replace(path + ".tmp", path)
    return path


def build(tree: str, job: str, out: str) -> dict:
    """One CLI build of ``job`` with ``tree``'s package; its phases and peak RSS."""
    shutil.rmtree(out, ignore_errors=True)
    os.sync()
    env = {**os.environ, "PYTHONPATH": tree}
    start = time.perf_counter()
    # Run from the work folder: ``-m`` puts the working directory first on sys.path, and
    # the workers (``-m`` too) inherit it, so a checkout there would shadow ``tree``.
    proc = subprocess.Popen([sys.executable, "-m", "mintdim_beam.cli.commands", "build", job],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=os.path.dirname(job))
    rss = bench.TreeRss(proc.pid)
    encoded, tail = None, b""
    for chunk in iter(lambda: proc.stderr.read1(1 << 16), b""):
        if encoded is None and ENCODED in tail[-len(ENCODED):] + chunk:
            encoded = time.perf_counter() - start
        tail = (tail + chunk)[-4000:]
    proc.wait()
    wall = time.perf_counter() - start
    rss.stop()
    if proc.returncode != 0:
        raise SystemExit(f"the build with {tree} failed ({proc.returncode}):\n{tail.decode(errors='replace')}")
    return {"wall": wall, "encoded": encoded, "peak_rss": rss.total, "peak_process": rss.single}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=10)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--tree", action="append", help="a checkout to build with (repeatable; default: this one)")
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    args = parser.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    corpus = tiled_corpus(args.work, args.gb)
    tokenizer = bench.ensure_bpe(args.work, bench.ensure_corpus(args.work, 100))[0]
    job, out = bench.job_file(args.work, "volume", corpus, "hf_json", tokenizer)
    trees = [os.path.abspath(t) for t in (args.tree or [bench.ROOT])]
    size = os.path.getsize(corpus)
    print(f"[volume] {os.path.basename(corpus)}: {size / 1e9:.2f} GB, load average {os.getloadavg()[0]:.2f}",
          flush=True)
    results = {tree: [] for tree in trees}
    for r in range(args.runs):
        for tree in trees:
            m = build(tree, job, out)
            results[tree].append(m)
            print(f"[volume] run {r + 1} {tree}: " + json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                                                 for k, v in m.items()}), flush=True)
    shutil.rmtree(out, ignore_errors=True)
    print()
    print("| tree | run | wall s | encoded at s | after encoding s | MB/s | peak RSS | largest process |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for tree, runs in results.items():
        for r, m in enumerate(runs, 1):
            enc = m["encoded"]
            phases = f"{enc:.1f} | {m['wall'] - enc:.1f}" if enc is not None else " | "
            print(f"| {os.path.basename(tree)} | {r} | {m['wall']:.1f} | {phases} | {size / 1e6 / m['wall']:.1f} | "
                  f"{m['peak_rss'] >> 20:,} MiB | {m['peak_process'] >> 20:,} MiB |")


if __name__ == "__main__":
    main()
