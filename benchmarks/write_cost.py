"""What writing a file costs on this machine, in milliseconds of CPU per MB.

    python benchmarks/write_cost.py [--mb 400] [--reps 3] [--dir DIR]

A build writes several times its input (block spills, shards, index parts and the
published index), so the price of a written MB weighs on every figure of the other
benchmarks. Three ways, each ``--reps`` times, a pause between reps:

  new      ``write()`` of ``--mb`` MB from a 1 MiB buffer into a new file (kept), so
           the page cache grows into memory it has not held before;
  copy     ``os.copy_file_range`` of that file into another new file (kept): the
           kernel copies, no byte passes through the process;
  reused   both files deleted, then ``write()`` of ``--mb`` MB at once, into the pages
           just freed.

On an ordinary machine the three are close (a memory copy). On a virtual machine that
hands freed memory back to its host (free page reporting), a page the guest has not
touched lately costs a fault in the host on first write, and ``new`` can cost ten
times ``reused``. Prints one row per way: median and range over the reps.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time

MB = 1 << 20


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _write(path: str, mb: int, buf: bytes) -> None:
    with open(path, "wb", buffering=0) as f:
        f.writelines(buf for _ in range(mb))


def _copy(src: str, dst: str, size: int) -> None:
    with open(src, "rb") as s, open(dst, "wb") as d:
        done = 0
        while done < size:
            n = os.copy_file_range(s.fileno(), d.fileno(), size - done, done)
            if n == 0:
                raise EOFError(src)
            done += n


def _timed(fn, *args) -> float:
    start = _cpu()
    fn(*args)
    return _cpu() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=400)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pause", type=float, default=4.0, help="seconds between reps")
    parser.add_argument("--dir", help="where to write (default: a temporary folder)")
    args = parser.parse_args(argv)
    buf = os.urandom(MB)
    seen: dict = {"new": [], "copy": [], "reused": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for rep in range(args.reps):
            time.sleep(args.pause)
            a, b, c = (os.path.join(folder, f"{name}{rep}.bin") for name in "abc")
            seen["new"].append(_timed(_write, a, args.mb, buf))
            seen["copy"].append(_timed(_copy, a, b, args.mb * MB))
            os.remove(a)
            os.remove(b)
            seen["reused"].append(_timed(_write, c, args.mb, buf))
            os.remove(c)
    print(f"| way | CPU ms per MB, median of {args.reps} | range |")
    print("|---|---:|---:|")
    for way, cpu in seen.items():
        per = [1000 * s / args.mb for s in cpu]
        print(f"| {way} | {statistics.median(per):.2f} | {min(per):.2f}-{max(per):.2f} |")


if __name__ == "__main__":
    main()
