"""What each extra input file costs: one corpus as one file, then as many small files.

    python benchmarks/many_files.py                    # 2,000 files of 20 KiB vs one 40 MB file
    python benchmarks/many_files.py --files 500 --kib 20 --gzip

The corpus is synthetic instruction records (``tests/testdata/textgen.py``, seeded),
written once as one JSONL file and once cut at line ends into ``--files`` files of about
``--kib`` KiB (``--gzip``: the small files gzip-compressed, named ``*.jsonl.gz``). Both
builds use the default local runner and the same job; the small files are named by one
pattern. Each build runs in a fresh child process; the parent samples the child's
process tree every 50 ms (psutil) for its peak thread count. Printed per build: wall
time and CPU time (user + system, the child and its worker processes) of ``run()`` in
the child, peak threads in one process; then the extra time per extra file,
``(t_many - t_one) / (files - 1)`` in ms. On a machine shared with other work the wall
times swing with the load; the CPU times much less.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests" / "testdata" / "sp_unigram.model"


def write_corpus(directory: Path, files: int, kib: int, compress: bool) -> tuple[str, str]:
    """The corpus as one file and as ``files`` files; returns (one path, pattern)."""
    sys.path.insert(0, str(ROOT / "tests" / "testdata"))
    import textgen

    rng = random.Random(23)
    target = files * kib * 1024
    lines, size = [], 0
    while size < target:
        for row in textgen.instruction_records(rng, 1000):
            line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
            lines.append(line)
            size += len(line)
    one = directory / "one.jsonl"
    one.write_bytes(b"".join(lines))
    parts = directory / "parts"
    parts.mkdir()
    per = -(-len(lines) // files)
    suffix = ".jsonl.gz" if compress else ".jsonl"
    for k in range(files):
        data = b"".join(lines[k * per:(k + 1) * per])
        (parts / f"part-{k:06d}{suffix}").write_bytes(gzip.compress(data) if compress else data)
    return str(one), str(parts / f"part-*{suffix}")


def _child(source: str, out: str) -> None:
    sys.path.insert(0, str(ROOT))
    from mintdim_beam import pipeline

    job = (pipeline("unit-build").source.jsonl(files=[source], fields=[["instruction", "input", "output"]],
                                               templates=["{instruction}\n{input}\n{output}"])
           .tokenizer.sentencepiece(files=[str(TOKENIZER)]).units(sizes=[[64, 128, 256]], build_batch=[256])
           .output.dir(out, samples_per_shard=[4096]))
    started, cpu = time.perf_counter(), _cpu()
    result = job.run(on_overflow="truncate", on_template_unk="continue", echo=lambda *a: None)
    print(json.dumps({"wall": time.perf_counter() - started, "cpu": _cpu() - cpu,
                      "samples": result.outputs[0].stats["total_samples"]}))


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _threads(pid: int) -> int:
    import psutil

    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    peak = 0
    for p in procs:
        try:
            peak = max(peak, p.num_threads())
        except psutil.NoSuchProcess:
            pass
    return peak


def build(source: str, out: str) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--child", source, out], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _threads(proc.pid))
        time.sleep(0.05)
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"build of {source} failed:\n{stderr[-3000:]}")
    figures = json.loads(stdout.strip().splitlines()[-1])
    figures["threads"] = peak
    return figures


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--kib", type=int, default=20)
    parser.add_argument("--gzip", action="store_true", help="compress the small files")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return
    work = Path(tempfile.mkdtemp(prefix="many-files-"))
    try:
        one, pattern = write_corpus(work, args.files, args.kib, args.gzip)
        mb = os.path.getsize(one) / 1e6
        a = build(one, str(work / "out-one"))
        b = build(pattern, str(work / "out-many"))
        assert a["samples"] == b["samples"], (a, b)
        kind = "gzip files" if args.gzip else "files"
        print(f"corpus {mb:.1f} MB, {a['samples']:,} samples")
        print(f"one file        : {a['wall']:6.2f} s wall, {a['cpu']:6.2f} s CPU  (peak threads in a process: "
              f"{a['threads']})")
        print(f"{args.files:,} {kind:10s}: {b['wall']:6.2f} s wall, {b['cpu']:6.2f} s CPU  (peak threads in a process: "
              f"{b['threads']})")
        print(f"extra wall time per extra file: {(b['wall'] - a['wall']) / (args.files - 1) * 1000:.2f} ms "
              f"(CPU: {(b['cpu'] - a['cpu']) / (args.files - 1) * 1000:.2f} ms)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
