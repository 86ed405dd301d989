"""What one input block contributes to a build: :class:`BlockResult` (pure).

The encoder (``records``) works in slices of a block and the writers (``transforms``,
``indexes``) only ever see whole blocks, so the per-block result is its own small
concept, shared by both sides: the sample status codes, the result's columns, and how a
block's slices merge into it. A block's result is spilled to staging as a pickle, so it
holds only plain data (numpy arrays, dicts, an :class:`~mintdim_beam.unk_rows.UnkTable`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .unk_rows import UnkTable

# Sample status codes kept per sample in BlockResult.status.
OK = 0            # written to a declared unit
BAD = 1           # bad record (skip policy): bad_record_index only
OVF_SKIP = 2      # overflow dropped by the skip policy
OVF_TRUNCATE = 3  # overflow truncated into max(sizes)
OVF_EXTEND = 4    # overflow waiting for its extended unit


@dataclass
class BlockResult:
    """Everything one block contributes; arrays are indexed by local sample number."""

    n_lines: int = 0
    local_line: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    status: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    token_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    orig_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    unit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    digests: np.ndarray = field(default_factory=lambda: np.zeros((0, 32), np.uint8))
    empty_fields: dict = field(default_factory=dict)   # sample -> [field names]
    unk: UnkTable = field(default_factory=UnkTable)
    bad: dict = field(default_factory=dict)            # sample -> (error class, reason)
    records: dict = field(default_factory=dict)        # unit size -> (m, slots) array, sample order
    overflow_samples: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    overflow_lengths: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    overflow_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    first_error: Optional[tuple] = None                 # (local sample, local line, error dict)

    @property
    def n_samples(self) -> int:
        return int(self.status.shape[0])


def merge_slices(parts: list[dict], n_lines: int, n_segments: int) -> BlockResult:
    """One block's result from its slices' (``record_layout.SliceLayout.finish``), in order."""
    res = BlockResult(n_lines=n_lines)
    if not parts:
        return res
    cat = np.concatenate
    res.local_line = cat([p["local_line"] for p in parts])
    res.status = cat([p["status"] for p in parts])
    res.token_count = cat([p["token_count"] for p in parts])
    res.orig_count = cat([p["orig_count"] for p in parts])
    res.unit = cat([p["unit"] for p in parts])
    res.digests = cat([p["digests"] for p in parts])
    for p in parts:
        res.empty_fields.update(p["empty"])
        res.bad.update(p["bad"])
        if p["first_error"] is not None and res.first_error is None:
            res.first_error = p["first_error"]
    res.unk = UnkTable.concat([p["unk"] for p in parts])
    sizes = sorted({s for p in parts for s in p["records"]})
    for s in sizes:
        res.records[s] = cat([p["records"][s] for p in parts if s in p["records"]])
    res.overflow_samples = cat([p["ovf_samples"] for p in parts])
    res.overflow_lengths = cat([p["ovf_lengths"] for p in parts]).reshape(-1, n_segments)
    res.overflow_tokens = cat([p["ovf_tokens"] for p in parts])
    return res
