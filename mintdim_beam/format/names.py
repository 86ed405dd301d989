"""The file names and path patterns of an output directory, in one place.

Writer, publisher, reader, ``verify`` and the exports all name the same files; each
name and pattern is stated here once so that none of them can drift from the others
(DESIGN.md §4: the index files, their parts, the unit folders and their shards, the
markers, the summaries and the versioned root's ``LATEST``). Pure: no I/O.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Optional

MANIFEST = "manifest.json"
BUILD_INFO = "build_info.json"          # the one file that may differ between two builds
LENGTH_FIELD = "length_field.json"
STATS = "stats.json"
HISTOGRAM = "histogram.json"
SUMMARY_FILES = (STATS, HISTOGRAM)
CHECKSUMS = "SHA256SUMS"                # sha256 of every data file, written just before the manifest

SAMPLE_INDEX = "sample_index.jsonl"
DUPLICATE_INDEX = "duplicate_index.jsonl"
UNK_INDEX = "unk_index.jsonl"
OVERFLOW_INDEX = "overflow_index.jsonl"
BAD_RECORD_INDEX = "bad_record_index.jsonl"
#: Every index file, in the order the manifest lists them.
INDEX_FILES = (SAMPLE_INDEX, DUPLICATE_INDEX, UNK_INDEX, OVERFLOW_INDEX, BAD_RECORD_INDEX)
#: The indexes written a part per input block (``index_layout: parts``); the duplicate
#: index is merged from the duplicate tasks instead.
PER_BLOCK_INDEXES = (SAMPLE_INDEX, UNK_INDEX, OVERFLOW_INDEX, BAD_RECORD_INDEX)


class IndexLayout(str, Enum):
    """How the per-block indexes are published (the build's ``index_layout``): ``file``,
    one file each (its blocks' parts concatenated at finalize), or ``parts``,
    ``<index>/part-NNNNN.jsonl``, one per block. The value is what ``manifest.json``'s
    ``indexes.layout`` says, and a member equals its value (``IndexLayout.PARTS == "parts"``).
    """

    FILE = "file"
    PARTS = "parts"

    def __str__(self) -> str:   # the value in str() and f-strings, on every Python version
        return self.value

FAILED_MARKER = "UNIT_BUILD_FAILED.md"  # in every declared unit of an output that failed
EMPTY_MARKER = "EMPTY_UNIT.md"          # in a declared unit that received no sample
ERROR_RECORD = "error.json"             # the failure's structured error, beside the markers
LATEST = "LATEST"                       # in a versioned root: the id of the latest published build
#: A build id: one plain path component naming ``ROOT/<build-id>/`` (never ``LATEST``).
BUILD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
STAGING = ".mintdim-staging"            # the build's staging area inside the output directory
CLAIM = ".mintdim-claim.json"           # which build owns the output directory
ROOT_CLAIM = ".mintdim-root-claim.json"  # which build is publishing into a versioned root

#: A shard's path relative to its output directory, as ``sample_index.jsonl`` names it.
SHARD_PATH = re.compile(r"^unit_(\d+)/shard_(\d+)\.bin$")
#: A shard's file name inside its unit folder.
SHARD_NAME = re.compile(r"^shard_(\d{6})\.bin$")


def latest_build_id(data: bytes) -> Optional[str]:
    """The build id a ``LATEST`` file's bytes name (its text, stripped), or None for an
    empty one. Whether it is a plain build id is the caller's check (``BUILD_ID``)."""
    build_id = data.decode("utf-8", "replace").strip()
    return build_id or None


def is_build_id(name: str) -> bool:
    """``name`` can name a build folder of a versioned root (``BUILD_ID``, not ``LATEST``)."""
    return bool(BUILD_ID.fullmatch(name)) and name != LATEST


def unit_dir(unit: int) -> str:
    """``unit_<size>``: the folder of one unit size."""
    return f"unit_{unit}"


def shard_name(shard: int) -> str:
    """``shard_NNNNNN.bin``: the ``shard``-th shard of a unit."""
    return f"shard_{shard:06d}.bin"


def shard_path(unit: int, shard: int) -> str:
    """``unit_<size>/shard_NNNNNN.bin``, relative to the output directory."""
    return f"{unit_dir(unit)}/{shard_name(shard)}"


def parts_folder(index_name: str) -> str:
    """The folder of an index's parts: ``sample_index`` for ``sample_index.jsonl``."""
    return index_name.rsplit(".", 1)[0]


def part_name(index_name: str, number: int) -> str:
    """``<index>/part-NNNNN.jsonl``: the ``number``-th published part of an index
    (``index_layout: parts``), relative to the output directory."""
    return f"{parts_folder(index_name)}/part-{number:05d}.jsonl"
