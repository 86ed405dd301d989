"""What the slot rule costs (DESIGN.md §5): the codec's fit checks on every slice, and
widening declared units' spills when only ``extend`` needs uint32 slots.

    python benchmarks/wide_slots.py [--mb 64] [--unit 2048]

1. The fit checks (``shard_format.check_fits``) on a slice of about a million token ids,
   next to laying the slice out (``layout_units``), which every build does.
2. A shard assembled from ``--mb`` MB of uint16 records: the byte copy of every common
   build (``storage.write_ranges``) against the widening copy to uint32 slots
   (``write_stage.widened``), with the widening's peak Python/numpy allocation
   (tracemalloc), which its chunking bounds whatever the shard's size.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mintdim_beam.storage import files as storage  # noqa: E402
from mintdim_beam.format.shard_format import UINT16, UINT32, check_fits, layout_units, record_slots  # noqa: E402
from mintdim_beam.beam.write_stage import widened  # noqa: E402


def best(f, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def checks() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(50, 1000, size=2048)
    source = rng.integers(0, 32000, size=int(lengths.sum())).astype(np.int32)
    starts = (np.cumsum(lengths) - lengths).reshape(-1, 1)
    units = np.where(lengths <= 512, 512, 1024)
    lay = best(lambda: layout_units(units, lengths.reshape(-1, 1), starts, source, 0xFFFF, 0, np.dtype("<u2")))
    fit = best(lambda: check_fits(source, 0xFFFE, "token id"))
    print(f"[fit] slice of {len(source):,} ids: layout_units {lay * 1e3:.2f} ms, of which the id check "
          f"{fit * 1e3:.2f} ms ({fit / lay:.1%})")


def widening(mb: float, unit: int) -> None:
    width = record_slots(1, unit)
    count = int(mb * 2**20) // (width * 2)
    rng = np.random.default_rng(1)
    records = rng.integers(0, 32000, size=(count, width), dtype=np.uint16)
    records[:, 0] = UINT16.magic
    records[:, 1] = unit
    with tempfile.TemporaryDirectory() as work:
        spill = os.path.join(work, "unit.bin")
        records.tofile(spill)
        size = os.path.getsize(spill)
        ranges = [(spill, 0, size)]
        copy = best(lambda: storage.write_ranges(os.path.join(work, "copy.bin"), ranges), 3)
        wide_path = os.path.join(work, "wide.bin")
        wide = best(lambda: storage.write_bytes(wide_path, widened(ranges, UINT16, UINT32, width)), 3)
        tracemalloc.start()
        storage.write_bytes(wide_path, widened(ranges, UINT16, UINT32, width))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        got = np.fromfile(wide_path, dtype="<u4").reshape(-1, width)
        assert (got[:, 0] == UINT32.magic).all() and (got[:, 1:] == records[:, 1:]).all()
    print(f"[widen] {size / 2**20:.0f} MiB of uint16 records (unit {unit}): byte copy {copy * 1e3:.0f} ms, "
          f"widened to uint32 {wide * 1e3:.0f} ms ({size / 2**20 / wide:.0f} MiB/s read), "
          f"peak allocation while widening {peak / 2**20:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=64)
    parser.add_argument("--unit", type=int, default=2048)
    args = parser.parse_args()
    checks()
    widening(args.mb, args.unit)


if __name__ == "__main__":
    main()
