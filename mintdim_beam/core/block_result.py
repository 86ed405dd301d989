"""What one input block contributes to a build: :class:`BlockResult` (pure).

The encoder (``records``) works in slices of a block and the writers (``transforms``,
``indexes``) only ever see whole blocks, so the per-block result is its own small
concept, shared by both sides: the sample status codes, the result's columns, and how a
block's slices merge into it. A block's result is spilled to staging as a pickle, so it
holds only plain data (numpy arrays, dicts, an :class:`~mintdim_beam.tokenization.unk_rows.UnkTable`).
A block's spill is one file: a header (:func:`spill_header`), then its sections.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from mintdim_beam.tokenization.unk_rows import UnkTable

# Sample status codes kept per sample in BlockResult.status.
OK = 0            # written to a declared unit
BAD = 1           # bad record (skip policy): bad_record_index only
OVF_SKIP = 2      # overflow dropped by the skip policy
OVF_TRUNCATE = 3  # overflow truncated into max(sizes)
OVF_EXTEND = 4    # overflow waiting for its extended unit
PAIR_COLLAPSED = 5   # a preference pair left out: its records were the same tokens (on_pair_collapse=skip)

#: The name ending of a whole block spill (one being written has a temporary name).
SPILL_SUFFIX = ".spill"


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
    #: Sample -> the extra keys of its ``sample_index`` row (a conversation's ``roles``),
    #: and of its ``overflow_index`` row (``cut_messages``); empty for ``jsonl`` sources.
    extra: dict = field(default_factory=dict)
    overflow_extra: dict = field(default_factory=dict)

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
        res.extra.update(p.get("extra", {}))
        res.overflow_extra.update(p.get("ovf_extra", {}))
        if p["first_error"] is not None and res.first_error is None:
            res.first_error = p["first_error"]
    res.unk = UnkTable.concat([p["unk"] for p in parts])
    sizes = sorted({s for p in parts for s in p["records"]})
    for s in sizes:
        res.records[s] = cat([p["records"][s] for p in parts if s in p["records"]])
    res.overflow_samples = cat([p["ovf_samples"] for p in parts])
    res.overflow_lengths = cat([p["ovf_lengths"] for p in parts]).reshape(-1, n_segments)
    # A block of one slice keeps its overflow tokens as they are (a huge sample's
    # tokens are not copied again).
    ovf = [p["ovf_tokens"] for p in parts]
    res.overflow_tokens = ovf[0] if len(ovf) == 1 else cat(ovf)
    return res


def spill_header(sections: dict, progress: dict) -> tuple[bytes, dict]:
    """The header of a spill whose ``sections`` (name -> length, in file order) follow
    it, and where each section lies: ``(header bytes, {name: (offset, length)})``.

    The header is its own length (8 bytes, little-endian) then JSON: the sections and
    the block's progress figures (``progress.Figures``, read by the launcher's watcher).
    Readers are told each section's place by the plan; the header makes a spill
    readable alone.
    """
    def encode(places):
        return json.dumps({"progress": progress, "sections": places}, sort_keys=True).encode("ascii")

    # The offsets count the header, whose length depends on the offsets' digits: widen
    # until they agree (twice at most in practice).
    size = 0
    while True:
        places, at = {}, size
        for name, length in sections.items():
            places[name] = (at, length)
            at += length
        body = encode(places)
        if 8 + len(body) == size:
            return len(body).to_bytes(8, "little") + body, places
        size = 8 + len(body)


def read_spill_header(data: bytes) -> dict:
    """A spill's header from the file's first bytes (``ValueError`` if they are too few)."""
    if len(data) < 8:
        raise ValueError("spill header cut short")
    n = int.from_bytes(data[:8], "little")
    if len(data) < 8 + n:
        raise ValueError("spill header cut short")
    return json.loads(data[8:8 + n])


def split_result(result: BlockResult, line_counts: list) -> list:
    """The results of consecutive blocks encoded as one, their lines one after another
    (``line_counts`` lines each, in order): each block's result as if it had been
    encoded alone, its samples, lines and tokens counted from its own start.

    A group of small files is encoded as one block (``encode_stage``): one tokenizer
    call and one layout per slice of about a thousand samples, not one per file.
    """
    line_starts = np.cumsum([0] + list(line_counts))
    s_at = np.searchsorted(result.local_line, line_starts).tolist()   # first sample of each block
    written = (result.status == OK) | (result.status == OVF_TRUNCATE)
    r_at = {}
    for size, rows in result.records.items():
        placed = np.r_[0, np.cumsum(written & (result.unit == size))]
        if int(placed[-1]) != len(rows):
            raise ValueError(f"unit {size}: {len(rows)} records for {int(placed[-1])} written samples")
        r_at[size] = placed[s_at].tolist()
    o_at = np.searchsorted(result.overflow_samples, s_at).tolist()
    token_ends = np.r_[0, np.cumsum(result.overflow_lengths.sum(axis=1))] if len(result.overflow_samples) else None
    unk = result.unk
    u_at = np.searchsorted(unk.sample, s_at).tolist()
    v_at = np.searchsorted(unk.rendered_sample, s_at).tolist()
    by_block = {}   # "empty_fields" / "bad" -> one dict per block, keyed by its own samples
    for name in ("empty_fields", "bad", "extra", "overflow_extra"):
        found = getattr(result, name)
        by_block[name] = [{} for _ in line_counts]
        if found:
            keys = list(found)
            for k, s in zip((np.searchsorted(s_at, keys, side="right") - 1).tolist(), keys):
                by_block[name][k][s - s_at[k]] = found[s]
    error_block = None
    if result.first_error is not None:
        error_block = int(np.searchsorted(s_at, result.first_error[0], side="right")) - 1
    out = []
    for k, lines in enumerate(line_counts):
        a, b = s_at[k], s_at[k + 1]
        res = BlockResult(n_lines=int(lines))
        res.local_line = result.local_line[a:b] - int(line_starts[k])
        res.status = result.status[a:b]
        res.token_count = result.token_count[a:b]
        res.orig_count = result.orig_count[a:b]
        res.unit = result.unit[a:b]
        res.digests = result.digests[a:b]
        res.empty_fields = by_block["empty_fields"][k]
        res.bad = by_block["bad"][k]
        res.extra = by_block["extra"][k]
        res.overflow_extra = by_block["overflow_extra"][k]
        ua, ub, va, vb = u_at[k], u_at[k + 1], v_at[k], v_at[k + 1]
        if ub > ua or vb > va:
            res.unk = UnkTable(unk.sample[ua:ub] - a, unk.position[ua:ub], unk.segment[ua:ub],
                               unk.chars.take(np.arange(ua, ub)), unk.rendered_sample[va:vb] - a,
                               unk.rendered_count[va:vb], unk.rendered_text[va:vb])
        res.records = {size: result.records[size][at[k]:at[k + 1]] for size, at in r_at.items()
                       if at[k + 1] > at[k]}
        oa, ob = o_at[k], o_at[k + 1]
        if ob > oa:
            res.overflow_samples = result.overflow_samples[oa:ob] - a
            res.overflow_lengths = result.overflow_lengths[oa:ob]
            res.overflow_tokens = result.overflow_tokens[int(token_ends[oa]):int(token_ends[ob])]
        else:
            res.overflow_lengths = result.overflow_lengths[:0]
        if error_block == k:
            sample, line, err = result.first_error
            res.first_error = (sample - a, line - int(line_starts[k]), err)
        out.append(res)
    return out


@dataclass(frozen=True)
class Figures:
    """Input bytes and planned blocks done, samples read, tokens written."""

    bytes: int = 0
    blocks: int = 0
    samples: int = 0
    tokens: int = 0

    def __add__(self, other: "Figures") -> "Figures":
        return Figures(self.bytes + other.bytes, self.blocks + other.blocks,
                       self.samples + other.samples, self.tokens + other.tokens)

    def to_dict(self) -> dict:
        return {"bytes": self.bytes, "blocks": self.blocks, "samples": self.samples, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, d: dict) -> "Figures":
        return cls(int(d["bytes"]), int(d["blocks"]), int(d["samples"]), int(d["tokens"]))

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict()).encode("ascii")

    @classmethod
    def from_json(cls, data: bytes) -> "Figures":
        return cls.from_dict(json.loads(data))
