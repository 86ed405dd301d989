"""Samples that occur again reuse their first result: the encoder's repeat cache (pure).

Real corpora repeat samples (the generated benchmark corpus has about 2%, scraped
instruction data far more), and a repeat needs neither the tokenizer nor the UNK audit:
its record is a pure function of its field values. Kept apart from the encoder because
it is an optimisation with its own bounds and bookkeeping, which must change no output
(tests/unit/test_records.py compares every block with a fresh encoder's result): what to
remember (:class:`RepeatCache`), what a kept result holds (:class:`Finished`), how a
slice's results are kept (:func:`remember`) and merged back in (:func:`add_repeats`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mintdim_beam.core.block_result import OK
from mintdim_beam.format.shard_format import ragged_gather_index
from mintdim_beam.core.text_cache import Rest
from mintdim_beam.tokenization.unk_rows import UnkTable, unk_part


@dataclass(frozen=True)
class Finished:
    """Everything a written sample contributes, as a pure function of its rendered fields."""

    lengths: tuple            # field lengths in characters (with the digest: the key)
    unit: int
    count: int
    record: np.ndarray        # its record row
    unk_count: int
    unk_text: str             # its row's UNK part (``unk_rows``), "" without UNK


class RepeatCache:
    """Results of samples that occur again, so that exact repeats are not encoded again.

    The sha256 digest (made for the duplicate index anyway) plus the field lengths
    identify a sample's field values: the literals between fields are fixed. A digest
    seen once is only remembered; its second occurrence is encoded and its result kept;
    later ones reuse it. Both the digests seen and the results kept are bounded, so
    memory does not grow with the corpus.
    """

    MAX_SEEN = 1 << 16        # digests remembered (~6 MiB)
    MAX_BYTES = 8 << 20       # results kept: a few thousand records of usual widths

    def __init__(self):
        self.seen: set = set()
        self.entries: dict = {}
        self.nbytes = 0
        self.rest = Rest()        # windows of 2^16 samples; rest below 2% repeats

    def split(self, positions: list, values: list, hashes: list) -> tuple:
        """``(fresh, fresh_values, repeats, store)`` of a slice's rendered samples.

        On data that hardly repeats, the bookkeeping costs more than it saves, so the
        cache rests for a while after a window with fewer than 2% repeats.
        """
        resting, started = self.rest.count(len(positions))
        if started:
            self.seen.clear()
        if resting:
            return positions, values, [], set()
        digests = [hashes[p] for p in positions]
        found = list(map(self.entries.get, digests)) if self.entries else None
        again = self.seen.intersection(digests)
        self.rest.again += len(again)
        if len(self.seen) > self.MAX_SEEN:
            self.seen.clear()
        self.seen.update(digests)
        if not found or not any(found):
            store = {p for p, d in zip(positions, digests) if d in again} if again else set()
            return positions, values, [], store
        fresh, fresh_values, repeats, store = [], [], [], set()
        for p, v, d, hit in zip(positions, values, digests, found):
            if hit is not None and hit.lengths == tuple(map(len, v)):
                repeats.append((p, hit))
                continue
            fresh.append(p)
            fresh_values.append(v)
            if d in again:
                store.add(p)
        return fresh, fresh_values, repeats, store

    def full(self) -> bool:
        """Whether the kept results reached ``MAX_BYTES`` (then none is worth preparing)."""
        return self.nbytes >= self.MAX_BYTES

    def keep(self, digest: bytes, result: Finished) -> None:
        """Keep ``result`` unless the cache is full (so it holds at most one result more
        than ``MAX_BYTES``)."""
        if not self.full():
            self.entries[digest] = result
            self.nbytes += result.record.nbytes + 2 * len(result.unk_text)


def remember(cache: RepeatCache, pb, slot_field: list, n_fields: int, n_segments: int,
             good_arr, gstatus, unit, placed, records: dict, unk: UnkTable) -> None:
    """Keep the results of the slice's samples to store (written whole, not truncated).

    ``pb`` is the slice (``record_layout.Batch``); ``slot_field`` maps each field slot
    of the template to its index among the ``n_fields`` declared fields.
    """
    wanted = np.searchsorted(good_arr, np.asarray(sorted(pb.store), np.int64))   # good_arr ascends
    wanted = wanted[gstatus[wanted] == OK]
    if not len(wanted):
        return
    # Each placed sample's row in its unit's records: rank among the placed of its unit.
    placed_unit = unit[placed]
    order = np.argsort(placed_unit, kind="stable")
    sizes, first, counts = np.unique(placed_unit[order], return_index=True, return_counts=True)
    row = np.empty(len(placed), np.int64)
    row[order] = np.arange(len(placed)) - np.repeat(first, counts)
    rows = row[np.searchsorted(placed, wanted)]   # OK samples are placed; placed ascends
    G, slots = len(pb.good), len(slot_field)
    samples = pb.base + good_arr[wanted]
    # Each wanted sample's UNK rows: the table is sorted by sample, so one range each,
    # and all their substrings in one gather.
    first = np.searchsorted(unk.sample, samples, side="left")
    last = np.searchsorted(unk.sample, samples, side="right")
    chars = unk.chars.take(ragged_gather_index(first, last - first)).tolist() if len(unk) else []
    at = 0
    for g, r, a, b in zip(wanted.tolist(), rows.tolist(), first.tolist(), last.tolist()):
        if cache.full():
            return
        p = good_arr[g]
        u = int(unit[g])
        lengths = [0] * n_fields
        for k in range(slots):
            lengths[slot_field[k]] = len(pb.texts[k * G + g])
        record = records[u][r]
        mine = chars[at:at + b - a]
        at += b - a
        cache.keep(pb.digests[p].tobytes(), Finished(
            tuple(lengths), u, int(record[1:1 + n_segments].sum()), record.copy(), len(mine),
            unk_part(unk.position[a:b], unk.segment[a:b], mine) if mine else ""))


def add_repeats(pb, good_arr, unit, placed, records: dict, unk: UnkTable,
                full_status, token_count, orig_count, full_unit) -> tuple:
    """Merge the known repeats' results into the slice's, in sample order:
    ``(records, unk)``; the per-sample columns are filled in place."""
    pos = np.asarray([p for p, _ in pb.repeats], np.int64)
    hits = [h for _, h in pb.repeats]
    full_status[pos] = OK
    token_count[pos] = orig_count[pos] = [h.count for h in hits]
    full_unit[pos] = [h.unit for h in hits]
    placed_pos, placed_unit = good_arr[placed], unit[placed]
    merged = dict(records)
    for u in sorted({h.unit for h in hits}):
        mine = [k for k, h in enumerate(hits) if h.unit == u]
        rows = np.stack([hits[k].record for k in mine])
        where = np.concatenate([placed_pos[placed_unit == u], pos[mine]])
        both = np.concatenate([records[u], rows]) if u in records else rows
        merged[u] = both[np.argsort(where, kind="stable")]
    # A repeat's UNK part is the string its first occurrence rendered (``unk_rows``).
    with_unk = [(p, h) for p, h in pb.repeats if h.unk_count]
    if with_unk:
        unk = UnkTable(unk.sample, unk.position, unk.segment, unk.chars,
                       np.asarray([pb.base + p for p, _ in with_unk], np.int64),
                       np.asarray([h.unk_count for _, h in with_unk], np.int64),
                       [h.unk_text for _, h in with_unk])
    return merged, unk
