"""Where everything lives inside an output directory and its staging area.

A build writes only below ``<output>/.mintdim-staging/`` until it publishes; the final
names (``unit_<size>/shard_NNNNNN.bin``, the index files, ``manifest.json`` last) appear
only in the finalize step, so a failed build never leaves a dataset that looks complete.
"""

from __future__ import annotations

from . import storage

STAGING = ".mintdim-staging"
FAILED_MARKER = "UNIT_BUILD_FAILED.md"
EMPTY_MARKER = "EMPTY_UNIT.md"
ERROR_RECORD = "error.json"
LATEST = "LATEST"          # in a versioned root: the id of the latest published build


def staging_dir(out: str) -> str:
    return storage.join(out, STAGING)


def block_dir(out: str, file: int, block: int) -> str:
    return storage.join(staging_dir(out), "blocks", f"f{file:05d}-b{block:06d}")


def part_path(out: str, index_name: str, file: int, block: int) -> str:
    stem = index_name.rsplit(".", 1)[0]
    return storage.join(staging_dir(out), "parts", stem, f"f{file:05d}-b{block:06d}.jsonl")


def duplicate_part_path(out: str, task: int) -> str:
    """Duplicate groups found by one digest-range task, sorted by first sample id."""
    return storage.join(staging_dir(out), "parts", "duplicate_index", f"t{task:06d}.jsonl")


def staged_shard(out: str, unit: int, shard: int) -> str:
    return storage.join(staging_dir(out), "shards", f"unit_{unit}", f"shard_{shard:06d}.bin")


def final_shard(out: str, unit: int, shard: int) -> str:
    return storage.join(out, f"unit_{unit}", f"shard_{shard:06d}.bin")


def unit_dir(out: str, unit: int) -> str:
    return storage.join(out, f"unit_{unit}")
