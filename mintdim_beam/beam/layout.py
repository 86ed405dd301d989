"""Where everything lives inside an output directory and its staging area.

A build writes only below ``<output>/.mintdim-staging/<run-id>/`` until it publishes;
the final names (``unit_<size>/shard_NNNNNN.bin``, the index files, ``manifest.json``
last) appear only in the finalize step, so a failed build never leaves a dataset that
looks complete. The run id (``OutputSpec.run_id``, one per build) is also the one in
the output's claim (``claims.py``): two builds that both think they own a directory
(possible on object stores for a moment) never mix their staged files.
"""

from __future__ import annotations

import os

from mintdim_beam.storage import files as storage
from mintdim_beam.core.block_result import SPILL_SUFFIX
from mintdim_beam.format import names
from mintdim_beam.format.names import CLAIM, STAGING



def staging_root(out_path: str) -> str:
    """Every build's staging area in ``out_path`` (one directory per run id below)."""
    return storage.join(out_path, STAGING)


def staging_dir(out) -> str:
    """This build's staging area; ``out`` is an ``OutputSpec`` (its path and run id)."""
    return storage.join(out.path, STAGING, out.run_id)


def make_staging(out) -> None:
    """Create this build's staging area before anything is written to it: locally
    private to this user (mode 0700, the staging root too), since what is staged is
    read back and published. Object stores have no such modes: there the bucket's
    own permissions keep others out."""
    if storage.is_local(out.path):
        os.makedirs(staging_dir(out), mode=0o700, exist_ok=True)
        for directory in (staging_root(out.path), staging_dir(out)):
            os.chmod(directory, 0o700)


def spills_dir(out) -> str:
    """Every block's spill: what the encode stage hands the write stage."""
    return storage.join(staging_dir(out), "blocks")


def block_spill(out, file: int, block: int) -> str:
    """A block's spill: one file, its header then its sections (``block_result.spill_header``).

    One file, not a directory of one file per section: a corpus of many small files is
    as many blocks, and creating a file (and its directory) is most of what a small
    block costs to spill.
    """
    return storage.join(spills_dir(out), f"f{file:05d}-b{block:06d}{SPILL_SUFFIX}")


def block_spills(out):
    """``block_spill`` of ``out`` as a function of ``(file, block)``, its directory
    joined once: a plan of many small blocks names each spill many times."""
    directory = spills_dir(out)
    return lambda file, block: storage.join(directory, f"f{file:05d}-b{block:06d}{SPILL_SUFFIX}")


def parts_dir(out, index_name: str) -> str:
    """The parts of one index file, concatenated (or merged) into it at publish."""
    return storage.join(staging_dir(out), "parts", index_name.rsplit(".", 1)[0])


def part_path(out, index_name: str, file: int, block: int) -> str:
    return storage.join(parts_dir(out, index_name), f"f{file:05d}-b{block:06d}.jsonl")


def published_part(out: str, index_name: str, number: int) -> str:
    """Part ``number`` (block order) of a per-block index, published in place with
    ``index_layout: parts``: ``sample_index/part-00000.jsonl``, ..."""
    return storage.join(out, names.part_name(index_name, number))


def duplicate_part_path(out, task: int) -> str:
    """Duplicate groups found by one digest-range task, sorted by first sample id."""
    return storage.join(parts_dir(out, names.DUPLICATE_INDEX), f"t{task:06d}.jsonl")


def staged_shard(out, unit: int, shard: int) -> str:
    return storage.join(staging_dir(out), "shards", f"unit_{unit}", f"shard_{shard:06d}.bin")


def final_shard(out: str, unit: int, shard: int) -> str:
    return storage.join(out, f"unit_{unit}", f"shard_{shard:06d}.bin")


def unit_dir(out: str, unit: int) -> str:
    return storage.join(out, f"unit_{unit}")


def claim_path(out_path: str) -> str:
    return storage.join(out_path, CLAIM)
