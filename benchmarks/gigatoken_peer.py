"""The build beside gigatoken's own JSONL path and the bare loops, at two corpus sizes.

    python benchmarks/gigatoken_peer.py [--mb 100 --factor 3 | --small] [--runs 1]
                                        [--corpus A --corpus-large B] [--fields A,B,C]
                                        [--megatron MEGATRON_LM_CHECKOUT] [--plain]

Each row runs in a fresh process (``run.measure``: wall time, peak RSS of the process
tree) on the corpus of ``--mb`` MB and on one ``--factor`` times as large, with the same
32k byte-level BPE (``run.ensure_bpe``, trained on the small corpus):

  bare loop, library    ``bare_loop.py``: parse, render, encode with ``tokenizers`` on
                        one thread (``RAYON_NUM_THREADS=1``), nothing else;
  bare loop, gigatoken  the same loop, each batch in one gigatoken call on one thread;
  gigatoken JSONL       ``gigatoken_jsonl.py``: gigatoken reads and encodes the file
                        itself, one field after another, on all cores, as Megatron-LM's
                        ``preprocess_data_fast.py`` does (with ``--megatron``, also
                        Megatron's ``IndexedDatasetBuilder`` from that checkout);
  build, gigatoken      the default build (``fluent_build.py``: ``run()`` with no
                        runner), accelerators on: gigatoken where its probe passes;
  build, word encoder   the same build with gigatoken hidden from every process of it
                        (a ``sitecustomize`` on ``PYTHONPATH`` that blocks its import):
                        the accelerators of before, the word encoder;
  build, no accel.      (``--plain``) ``accelerators: false``: the library alone.

The build writes shards, four indexes and the duplicate index, and renders the template
(two literals a sample); the loops and gigatoken's path only encode (the template's
literal tokens are counted by the loops, not by gigatoken's path, which has no
template). Printed per row and size: wall seconds, input MB/s, tokens/s, peak RSS;
then per row the marginal rate from the small to the large corpus (start-up cancelled
out) and its ratio to the library's bare loop, the ratios taken within each run.
``--small`` uses 20 and 60 MB, for a machine without the time or memory for 100 and
300. Requires ``psutil`` and gigatoken (``pip install mintdim-beam[fast]``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (corpus, tokenizer, measure, run_pipeline)

KIND = "hf_json"
SINGLE = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _blocker(work: str) -> str:
    """A folder whose ``sitecustomize`` makes ``import gigatoken`` fail in every process
    started with it on ``PYTHONPATH`` (the build's workers inherit the environment)."""
    folder = os.path.join(work, "no_gigatoken")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.modules['gigatoken'] = None   # written by benchmarks/gigatoken_peer.py\n")
    return folder


def _with_path(folder: str) -> dict:
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([folder] + ([path] if path else []))}


def _loop(corpus, tokenizer, fields, gigatoken: bool) -> dict:
    cmd = [sys.executable, os.path.join(HERE, "bare_loop.py"), corpus, KIND, tokenizer, "--fields", ",".join(fields)]
    m = bench.measure(cmd + (["--gigatoken"] if gigatoken else []), env=SINGLE)
    m["tokens"] = json.loads(m["stdout"])["tokens"]
    return m


def _jsonl(work, corpus, tokenizer, fields, megatron) -> dict:
    cmd = [sys.executable, os.path.join(HERE, "gigatoken_jsonl.py"), corpus, tokenizer, "--fields", ",".join(fields)]
    if megatron:
        cmd += ["--megatron", megatron, "--out", os.path.join(work, "megatron_out")]
    m = bench.measure(cmd)
    m["tokens"] = json.loads(m["stdout"])["tokens"]
    return m


def _rows(args, blocker):
    rows = [("bare loop, library (1 thread)", lambda c: _loop(c, args.plain_tok, args.fields, False)),
            ("bare loop, gigatoken (1 thread)", lambda c: _loop(c, args.plain_tok, args.fields, True)),
            ("gigatoken JSONL path (all cores)" + (" + Megatron writer" if args.megatron else ""),
             lambda c: _jsonl(args.work, c, args.plain_tok, args.fields, args.megatron)),
            ("build, gigatoken", lambda c: bench.run_pipeline(args.work, "peer_gt", c, KIND, args.tok, [], fluent=True,
                                                              fields=args.fields)),
            ("build, word encoder (no gigatoken)",
             lambda c: bench.run_pipeline(args.work, "peer_words", c, KIND, args.tok, [], fluent=True,
                                          fields=args.fields, env=_with_path(blocker)))]
    if args.plain:
        rows.append(("build, no accelerators", lambda c: bench.run_pipeline(
            args.work, "peer_plain", c, KIND, args.tok, [], fluent=True, fields=args.fields, accelerators=False)))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--factor", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="20 and 60 MB instead of --mb and --factor")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    parser.add_argument("--corpus", help="the small corpus (default: the generated one of --mb MB)")
    parser.add_argument("--corpus-large", help="the large corpus, with --corpus")
    parser.add_argument("--fields", default=",".join(bench.FIELDS))
    parser.add_argument("--megatron", help="a Megatron-LM checkout: gigatoken's row also writes its indexed dataset")
    parser.add_argument("--plain", action="store_true", help="also the build with accelerators off")
    args = parser.parse_args(argv)
    if bool(args.corpus) != bool(args.corpus_large):
        parser.error("--corpus and --corpus-large go together")
    if args.small:
        args.mb, args.factor = 20, 3
    args.fields = tuple(args.fields.split(","))
    os.makedirs(args.work, exist_ok=True)
    small = os.path.abspath(args.corpus) if args.corpus else bench.ensure_corpus(args.work, args.mb)
    large = os.path.abspath(args.corpus_large) if args.corpus_large else bench.ensure_corpus(args.work, args.mb * args.factor)
    args.tok, args.plain_tok = bench.ensure_bpe(args.work, small, args.fields)
    sizes = {"small": os.path.getsize(small) / 1e6, "large": os.path.getsize(large) / 1e6}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"[peer] {os.cpu_count()} cpus; load average {load}; {os.path.basename(small)} "
          f"({sizes['small']:.0f} MB) -> {os.path.basename(large)} ({sizes['large']:.0f} MB)", flush=True)
    rows = _rows(args, _blocker(args.work))
    marginal = {name: [] for name, _ in rows}
    ratios = {name: [] for name, _ in rows}
    for run in range(1, args.runs + 1):
        got = {}
        for size, corpus in (("small", small), ("large", large)):
            for name, fn in rows:          # interleaved: every row at one size, then the next size
                m = fn(corpus)
                got[name, size] = m
                print(f"run {run} {size:<5} {name:<42} {m['wall']:8.2f} s {sizes[size] / m['wall']:7.2f} MB/s "
                      f"{m['tokens'] / m['wall'] / 1e6:7.2f} Mtok/s {m['peak_rss'] / 2**20:7.0f} MiB", flush=True)
        base = None
        for name, _ in rows:
            s, l = got[name, "small"], got[name, "large"]
            rate = (l["tokens"] - s["tokens"]) / (l["wall"] - s["wall"])
            mb_rate = (sizes["large"] - sizes["small"]) / (l["wall"] - s["wall"])
            base = rate if base is None else base
            marginal[name].append((rate, mb_rate))
            ratios[name].append(rate / base)
            print(f"run {run} marginal {name:<42} {rate / 1e6:7.2f} Mtok/s {mb_rate:7.2f} MB/s "
                  f"{rate / base:6.2f}x the library's loop", flush=True)
    print("\n| row | marginal Mtok/s | marginal MB/s | x library loop |")
    print("|---|---:|---:|---:|")
    for name, _ in rows:
        rates = marginal[name]
        print(f"| {name} | {statistics.median(r for r, _ in rates) / 1e6:.2f} | "
              f"{statistics.median(m for _, m in rates):.2f} | {statistics.median(ratios[name]):.2f}x |")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"[peer] load average at the end {load}")


if __name__ == "__main__":
    main()
