"""Time and peak memory of ``mintdim-beam export`` (Megatron and Parquet) on a built dataset.

    python benchmarks/export.py DIR [--repeat 1] [--keep]

Each export runs as its own ``mintdim-beam export`` process (start-up included, as a
user runs it), after a ``sync`` so that no run pays for an earlier one's writes. Peak
RSS is the child's own ``ru_maxrss`` (``os.wait4``), and its
anonymous part is sampled from ``/proc`` (mapped shard pages apart). The dataset's own reading cost (parsing
``sample_index.jsonl``) is printed apart, from a process that only opens the reader
and loads the index, so the export's share is visible. Prints one line per run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def _anon_kib(pid: int) -> int:
    """The process's anonymous resident memory (KiB): its own data, not mapped files."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _run(argv: list) -> tuple[float, int, int]:
    """Wall seconds, peak RSS and peak anonymous RSS (MiB) of one child process.

    Peak RSS is the child's own ``ru_maxrss`` (from ``wait4``); it counts the pages of
    memory-mapped shards the export has read, which the kernel can drop at any time.
    The anonymous part (sampled every 20 ms from ``/proc``) is what the export holds.
    """
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    anon = 0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        anon = max(anon, _anon_kib(child.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return wall, usage.ru_maxrss // 1024, anon // 1024


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the exported files")
    args = parser.parse_args(argv)

    import json

    stats = json.loads(open(os.path.join(args.dir, "stats.json"), encoding="utf-8").read())
    print(f"dataset {args.dir}: {stats['total_samples']} samples, {stats['total_tokens']} tokens, "
          f"{stats['token_dtype']}")
    work = tempfile.mkdtemp(prefix="mintdim-export-bench-")
    try:
        index_only = [sys.executable, "-c",
                      "import sys; from mintdim_beam.reader import open_output; len(open_output(sys.argv[1]))",
                      args.dir]
        for k in range(args.repeat):
            wall, peak, anon = _run(index_only)
            print(f"index only   run {k}: {wall:6.2f} s  peak RSS {peak:5d} MiB (anonymous {anon:5d} MiB)")
            for fmt, out in (("megatron", os.path.join(work, "mg")), ("parquet", os.path.join(work, "x.parquet"))):
                cmd = [sys.executable, "-m", "mintdim_beam.cli.commands", "export", args.dir, "--format", fmt, out,
                       "--overwrite"]
                wall, peak, anon = _run(cmd)
                size = sum(os.path.getsize(os.path.join(work, f)) for f in os.listdir(work)
                           if f.startswith(os.path.basename(out)))
                print(f"{fmt:<12} run {k}: {wall:6.2f} s  peak RSS {peak:5d} MiB (anonymous {anon:5d} MiB)  "
                      f"{stats['total_tokens'] / wall / 1e6:6.2f} M tokens/s  output {size / 2**20:7.1f} MiB")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
