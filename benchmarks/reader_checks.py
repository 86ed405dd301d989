"""What the reader's record checks and verify's checksums cost, on a built dataset.

    python benchmarks/reader_checks.py DIR [--random 20000] [--repeat 3]

Prints, best of ``--repeat`` runs each (the shards are read once before, so every
figure is from the page cache: the checks' CPU cost, not the disk's):

* random access: ``ds[i]`` at random positions (every check: magic, lengths against
  the row's token count and empty fields, place in the unit, vocabulary, pad tail),
  against the same records taken straight from the memory-mapped shards, unchecked;
* bulk: every record through ``ds.batches(unit)`` (checked a batch at a time), against
  summing the same memory-mapped shards;
* ``verify`` with and without the sha256 of every file;
* the sha256 of every shard from memory: what a build spends hashing the shards it
  writes (on the workers that write them), and ``open_output(..., checksums=True)``
  on each shard it reads.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> None:
    from mintdim_beam.reader import open_output
    from mintdim_beam.reader.verify import verify_output

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--random", type=int, default=20000, help="random positions read (default 20000)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    ds = open_output(args.dir)
    ix = ds.index
    n = len(ds)
    positions = np.random.default_rng(0).integers(0, n, args.random).tolist()
    rows = ds.rows_by_id
    shard_bytes = sum(ds.shard_records(u, k).nbytes for u in ds.unit_sizes for k in range(ds.shard_count(u)))
    for u in ds.unit_sizes:            # warm the page cache
        for k in range(ds.shard_count(u)):
            int(np.asarray(ds.shard_records(u, k)).sum())

    def checked():
        for i in positions:
            ds[i].payload

    def raw():
        for i in positions:
            r = int(rows[i])
            rec = ds.shard_records(int(ix.unit[r]), int(ix.shard[r]))[int(ix.record[r])]
            rec[1 + ds.meta.n_segments:1 + ds.meta.n_segments + int(ix.token_count[r])]

    def bulk_checked():
        for u in ds.unit_sizes:
            for batch in ds.batches(u):
                int(batch.records.sum())

    def bulk_raw():
        for u in ds.unit_sizes:
            for k in range(ds.shard_count(u)):
                int(np.asarray(ds.shard_records(u, k)).sum())

    print(f"dataset: {n} samples, {len(ds.unit_sizes)} units, {shard_bytes / 2**20:.1f} MiB of shards")
    t_checked, t_raw = _best(checked, args.repeat), _best(raw, args.repeat)
    print(f"random ds[i]: {t_checked / len(positions) * 1e6:.1f} us/sample checked, "
          f"{t_raw / len(positions) * 1e6:.1f} us/sample raw memmap (unchecked)")
    t_bulk, t_bulk_raw = _best(bulk_checked, args.repeat), _best(bulk_raw, args.repeat)
    print(f"bulk batches(): {shard_bytes / 2**20 / t_bulk:.0f} MiB/s checked ({t_bulk:.2f} s), "
          f"{shard_bytes / 2**20 / t_bulk_raw:.0f} MiB/s raw sum ({t_bulk_raw:.2f} s)")
    t_sums = _best(lambda: verify_output(args.dir), 1)
    t_plain = _best(lambda: verify_output(args.dir, checksums=False), 1)
    print(f"verify: {t_sums:.2f} s with checksums, {t_plain:.2f} s with --no-checksums")
    arrays = [np.ascontiguousarray(ds.shard_records(u, k)) for u in ds.unit_sizes for k in range(ds.shard_count(u))]
    t_sha = _best(lambda: [hashlib.sha256(a).hexdigest() for a in arrays], args.repeat)
    print(f"sha256 of every shard: {t_sha:.3f} s ({shard_bytes / 2**20 / t_sha:.0f} MiB/s)")


if __name__ == "__main__":
    main()
