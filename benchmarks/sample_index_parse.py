"""Time and peak memory of parsing ``sample_index.jsonl`` into the reader's columns.

    python benchmarks/sample_index_parse.py [--rows 2000000] [--dir DIR] [--roles N]

Writes a synthetic index of ``--rows`` rows in the writer's exact format (three
units, a few source files, one row in fifty with empty fields), then parses it in a
fresh process each way, printing rows/s and the child's peak RSS (``ru_maxrss``):

* ``bytes``: ``parse_sample_index(whole file)``, what ``verify`` does;
* ``stream``: ``parse_sample_index_pieces`` over the file read 8 MB at a time, what
  the reader does (absent before chunked parsing).

The columns themselves take 88 bytes a row; the rest of the peak is the parse's own.

``--roles N`` also writes a chat output's index (each row ends with ``"roles"``, 1 to N
messages of three roles) and parses it the same ways, so the two are compared in one
run: the role columns cost 4 bytes a row and 2 a message.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import resource, sys, time
from mintdim_beam.reader import sample_index as si
path, how = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if how == "bytes":
    ix = si.parse_sample_index(open(path, "rb").read())
else:
    def pieces():
        with open(path, "rb") as f:
            while True:
                piece = f.read(8 << 20)
                if not piece:
                    return
                yield piece
    import os
    ix = si.parse_sample_index_pieces(pieces(), size_hint=os.path.getsize(path))
wall = time.perf_counter() - start
print(len(ix), wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def write_index(path: str, rows: int, roles: int = 0) -> None:
    import random

    rng = random.Random(0)
    units = (128, 512, 2048)
    counts = dict.fromkeys(units, 0)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(rows):
            unit = units[i % 3]
            rank = counts[unit]
            counts[unit] += 1
            empty = '["input"]' if i % 50 == 7 else "[]"
            said = "" if not roles else ',"roles":[' + ",".join(
                ('"system"', '"user"', '"assistant"')[(k + (k > 0)) % 3] for k in range(1 + i % roles)) + "]"
            f.write(f'{{"sample_id":{i},"hash":"{rng.getrandbits(256):064x}","token_count":{rng.randrange(unit)},'
                    f'"unit_size":{unit},"source_file":"data/part-{i // 100000:05d}.jsonl","source_line":{i % 100000 + 1},'
                    f'"shard_path":"unit_{unit}/shard_{rank // 8192:06d}.bin","empty_fields":{empty},'
                    f'"shard_record":{rank % 8192}{said}}}\n')


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--dir", help="where to write the index (default: a temporary directory)")
    parser.add_argument("--roles", type=int, default=0, metavar="N",
                        help="also time a chat index with 1 to N messages a row (default: 0, none)")
    args = parser.parse_args(argv)
    work = args.dir or tempfile.mkdtemp(prefix="mintdim-index-bench-")
    try:
        for roles in [0] + ([args.roles] if args.roles else []):
            path = os.path.join(work, f"sample_index{roles}.jsonl")
            write_index(path, args.rows, roles)
            _time(path, args.rows, roles)
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


def _time(path: str, rows: int, roles: int) -> None:
    size = os.path.getsize(path)
    print(f"index: {rows} rows{f', 1 to {roles} roles a row' if roles else ''}, {size / 2**20:.1f} MiB")
    from mintdim_beam.reader import sample_index

    ways = ["bytes"] + (["stream"] if hasattr(sample_index, "parse_sample_index_pieces") else [])
    for how in ways:
        subprocess.run(["sync"], check=True)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, path, how], check=True, capture_output=True,
                             text=True).stdout.split()
        rows, wall, peak = int(out[0]), float(out[1]), int(out[2])
        print(f"{how:<7} {rows / wall / 1e6:6.2f} M rows/s ({wall:6.2f} s parse, "
              f"{time.perf_counter() - start:6.2f} s with start-up)  peak RSS {peak:5d} MiB "
              f"({peak * 2**20 / size:.2f}x the index)")


if __name__ == "__main__":
    main()
