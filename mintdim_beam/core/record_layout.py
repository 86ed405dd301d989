"""From a slice's token ids to its records: units, overflow, UNK rows, layout (pure).

The second half of encoding a block, after the tokenizer (``records``): each sample's
segment lengths (field tokens from the encode pool, literal tokens encoded once per
template), its unit, what the overflow policy does with it, the UNK rows of what is
written, and the fixed-width records of every declared unit, all vectorized over the
slice with numpy. Kept apart from parsing (``sample_lines``) and from the pipelining of
slices (``records``) because it is where the output contract is applied: the record
codec itself is ``shard_format``'s, shared with the reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from mintdim_beam import errors
from mintdim_beam.core.block_result import OK, OVF_EXTEND, OVF_SKIP, OVF_TRUNCATE, PAIR_COLLAPSED
from mintdim_beam.core.config import MAX_UNIT_SIZE, FileSpec, Policies
from mintdim_beam.core.repeat_cache import RepeatCache, add_repeats, remember
from mintdim_beam.format.chat import CUT_KEY, PARTS_PER_MESSAGE
from mintdim_beam.format.shard_format import layout_units, ragged_gather_index, slot_storage
from mintdim_beam.tokenization.adapters import TokenizerPanic, Tokenizer
from mintdim_beam.tokenization.template_tokens import constant_segments
from mintdim_beam.tokenization.unk_rows import CharColumn, UnkTable


#: Field tokens of a slice beyond which only the written ones are copied next to the
#: literal tokens for the layout (a huge sample's ids are not copied whole).
_COMPACT_AT = 1 << 20


@dataclass
class Batch:
    """A slice between parsing and layout: checked, hashed, its field texts encoding."""

    base: int
    size: int
    local_line: list          # local line of each sample
    status: np.ndarray
    digests: np.ndarray
    bad: dict
    empty: dict
    first_error: Optional[tuple]
    good: list                # batch positions of the rendered samples to encode
    texts: list               # field texts, field-slot major: texts[k * len(good) + g]
    encoded: object  # Future of (flat, lengths, unk_owner, unk_local, unk_chars), or None
    repeats: list = field(default_factory=list)   # (position, repeat_cache.Finished) of known repeats
    store: set = field(default_factory=set)       # positions whose result to remember
    extra: dict = field(default_factory=dict)     # sample -> extra keys of its sample_index row


class SliceLayout:
    """Lays out the records of one file's slices: its template's literal tokens, its
    units and its policies."""

    def __init__(self, spec: FileSpec, tokenizer: Tokenizer, policies: Policies, sizes: np.ndarray,
                 max_extended: int = MAX_UNIT_SIZE):
        """``max_extended``: the longest sample ``extend`` may give a unit of its own
        (the maximum unit size; smaller only to exercise the limit)."""
        self.spec = spec
        self.tok = tokenizer
        self.policies = policies
        self.sizes = sizes
        self.max_size = int(sizes[-1])
        self.max_extended = max_extended
        # The slots the declared units' records are laid out in: wide enough for the
        # largest declared unit's header lengths. ``extend`` units are known only to
        # the plan; the shard writer widens these records if one needs wider slots.
        self.storage = slot_storage(tokenizer.storage, self.max_size)
        self.segments = spec.segments
        self.n = len(self.segments)
        self.field_slots = [j for j, s in enumerate(self.segments) if s.is_field]
        self._field_slot_array = np.asarray(self.field_slots, dtype=np.int64)
        # Literal and special segments: constant per template (template_tokens), laid
        # out alike; a {@NAME} the tokenizer lacks is refused here too.
        self.constants = constant_segments(self.segments, tokenizer, spec.index, spec.template)
        self.literal_tokens = {j: np.asarray(c.ids, dtype=np.int64) for j, c in self.constants.items()}
        # Each literal's UNK substrings, one per UNK token ("" past what the tokenizer
        # reported), taken for every sample that writes the literal; a {@unk} segment's
        # is its token's text. No vocabulary without UNK has any.
        unk_id = tokenizer.unk_id
        self._literal_unk_column = {
            j: CharColumn.of(self._unk_texts(j, int((toks == unk_id).sum())))
            for j, toks in self.literal_tokens.items() if unk_id is not None and (toks == unk_id).any()
        }
        # Literal tokens appended after a batch's field tokens, for the record layout.
        self._literal_at: dict = {}
        at = 0
        for j, toks in self.literal_tokens.items():
            self._literal_at[j] = at
            at += len(toks)
        self._literal_source = (np.concatenate(list(self.literal_tokens.values())).astype(np.int32)
                                if self.literal_tokens else np.zeros(0, np.int32))
        field_names = list(dict.fromkeys(spec.fields))  # a field declared twice counts once
        position = {name: k for k, name in enumerate(field_names)}
        self.n_fields = len(field_names)
        # Field slot -> index into a sample's values (declared field order).
        self.slot_field = [position[self.segments[j].text] for j in self.field_slots]

    def _unk_texts(self, j: int, count: int) -> list:
        constant = self.constants[j]
        if constant.special:
            return [constant.text] * count
        found = self.tok.unk_substrings(self.segments[j].text)
        return [_pick(found, q) for q in range(count)]

    def finish(self, pb: Batch, repeats: RepeatCache) -> dict:
        """Lengths, units, overflow policy, UNK rows and record layout of one batch;
        results of samples to remember go to ``repeats``, known repeats come from it."""
        base, S, status, digests, local_lines = pb.base, pb.size, pb.status, pb.digests, pb.local_line
        bad, empty, first_error, good = pb.bad, pb.empty, pb.first_error, pb.good
        tok = self.tok
        G = len(good)
        lengths = np.zeros((G, self.n), np.int64)
        seg_tokens: list = [None] * self.n
        seg_offsets: list = [None] * self.n
        nf = len(self.field_slots)
        flat = np.zeros(0, np.int64)
        flat_starts = np.zeros(0, np.int64)
        unk_owner = unk_local = np.zeros(0, np.int64)
        unk_chars = CharColumn()
        failed = None
        if G and nf:
            try:
                flat, lens, unk_owner, unk_local, unk_chars = pb.encoded.result()
            except TokenizerPanic as exc:
                # Named by the first sample whose text it is; the build stops (no policy
                # skips it: another text of the corpus may fail the same way).
                g = pb.texts.index(exc.text) % G if exc.text in pb.texts else 0
                i = good[g]
                failed = errors.TokenizerFailedError(self.spec.tokenizer.path, self.spec.path, local_lines[i], str(exc))
                if first_error is None or base + i < first_error[0]:
                    first_error = (base + i, local_lines[i], failed)
                flat = np.zeros(0, np.int64)
                lens = np.zeros(nf * G, np.int64)
                unk_owner = unk_local = np.zeros(0, np.int64)
            lens = lens.reshape(nf, G)
            flat_starts = np.cumsum(lens.reshape(-1)) - lens.reshape(-1)
            starts = flat_starts.reshape(nf, G)
            for k, j in enumerate(self.field_slots):
                lengths[:, j] = lens[k]
                seg_tokens[j] = flat
                seg_offsets[j] = starts[k]
        for j, toks in self.literal_tokens.items():
            lengths[:, j] = len(toks)
            seg_tokens[j] = toks
            seg_offsets[j] = np.zeros(G, np.int64)
        counts = lengths.sum(axis=1)
        # A pair's two records (adjacent: pair_lines) go to the unit that fits the longer.
        fits = counts if self.spec.pairs is None or not G else np.repeat(counts.reshape(-1, 2).max(axis=1), 2)

        idx = np.searchsorted(self.sizes, fits, side="left")
        over = idx >= len(self.sizes)
        unit = np.where(over, 0, self.sizes[np.minimum(idx, len(self.sizes) - 1)])
        written = lengths
        policy = self.policies.on_overflow
        gstatus = np.full(G, OK, np.int8)
        if over.any():
            if policy == "abort":
                first = int(np.argmax(over))
                i = good[first]
                err = errors.UnitOverflowError(
                    file=self.spec.path, line=local_lines[i],
                    token_count=int(fits[first]), max_unit_size=self.max_size,
                )
                if first_error is None or base + i < first_error[0]:
                    first_error = (base + i, local_lines[i], err)
                gstatus[over] = OVF_SKIP  # the build fails; lay out nothing for these
            elif policy == "truncate":
                gstatus[over] = OVF_TRUNCATE
                unit[over] = self.max_size
                before = np.cumsum(lengths, axis=1) - lengths
                capped = np.clip(self.max_size - before, 0, lengths)
                written = np.where(over[:, None], capped, lengths)
            elif policy == "skip":
                gstatus[over] = OVF_SKIP
            else:
                gstatus[over] = OVF_EXTEND
                # An extended unit is as long as its sample, and no unit may pass the
                # maximum: the plan sees the error before any shard is written.
                beyond = over & (counts > self.max_extended)
                if beyond.any():
                    first = int(np.argmax(beyond))
                    i = good[first]
                    err = errors.UnitOverflowError.beyond_maximum(
                        file=self.spec.path, line=local_lines[i],
                        token_count=int(counts[first]), max_unit_size=self.max_extended,
                    )
                    if first_error is None or base + i < first_error[0]:
                        first_error = (base + i, local_lines[i], err)
                    gstatus[beyond] = OVF_SKIP  # the build fails; spill nothing for these
        if failed is not None:
            gstatus[:] = OVF_SKIP  # the build fails; lay out nothing
        written_counts = written.sum(axis=1)
        ovf_extra = {}
        if self.spec.chat is not None and policy == "truncate" and over.any():
            ovf_extra = cut_messages(base, good, over, lengths, written)

        # Every unit of the batch in one pass; batch-sized arrays stay in cache.
        placed = np.nonzero((gstatus == OK) | (gstatus == OVF_TRUNCATE))[0]
        src_starts = np.zeros((len(placed), self.n), np.int64)
        if len(placed):
            for j in self.field_slots:
                src_starts[:, j] = seg_offsets[j][placed]
        source = flat
        if self.literal_tokens:
            if len(flat) > _COMPACT_AT and len(placed):
                # Only the written field tokens, not a huge sample's every id again.
                source, src_starts = self._written_fields(flat, written[placed], src_starts)
            source = np.concatenate([source, self._literal_source])
            for j, at in self._literal_at.items():
                src_starts[:, j] = len(source) - len(self._literal_source) + at
        records = layout_units(unit[placed], written[placed], src_starts, source,
                               self.storage.magic, tok.pad_id, self.storage.numpy_dtype)
        if self.spec.pairs is not None and len(placed):
            records, first_error = self._collapsed(records, placed, unit, gstatus, good, base, local_lines,
                                                   first_error)
        unk = self._find_unk(good, base, written, gstatus, unk_owner, unk_local, unk_chars)
        ext = np.nonzero(gstatus == OVF_EXTEND)[0]
        ovf_tokens = np.zeros(0, np.int64)
        if len(ext):
            ovf_tokens = self._gather_tokens(ext, lengths, seg_tokens, seg_offsets)

        full_status = status.copy()
        token_count = np.zeros(S, np.int64)
        orig_count = np.zeros(S, np.int64)
        full_unit = np.zeros(S, np.int64)
        good_arr = np.asarray(good, np.int64)
        if G:
            full_status[good_arr] = gstatus
            token_count[good_arr] = written_counts
            orig_count[good_arr] = counts
            full_unit[good_arr] = unit
        if pb.store:
            remember(repeats, pb, self.slot_field, self.n_fields, self.n,
                     good_arr, gstatus, unit, placed, records, unk)
        if pb.repeats:
            records, unk = add_repeats(pb, good_arr, unit, placed, records, unk,
                                       full_status, token_count, orig_count, full_unit)
        return {
            "n": S,
            "local_line": np.asarray(local_lines, np.int64),
            "status": full_status,
            "token_count": token_count,
            "orig_count": orig_count,
            "unit": full_unit,
            "digests": digests,
            "empty": empty,
            "unk": unk,
            "bad": bad,
            "records": records,
            "ovf_samples": base + good_arr[ext] if len(ext) else np.zeros(0, np.int64),
            "ovf_lengths": lengths[ext],
            "ovf_tokens": ovf_tokens,
            "first_error": first_error,
            "extra": pb.extra,
            "ovf_extra": ovf_extra,
        }

    def _collapsed(self, records: dict, placed, unit, gstatus, good, base, local_lines, first_error) -> tuple:
        """Pairs whose two records are the same tokens once written (DESIGN.md §9): left
        out as ``PAIR_COLLAPSED`` (``on_pair_collapse: skip``), or the build's error.
        A pair's records are adjacent rows of its unit's records (one unit, sample order)."""
        n = self.n
        for size in list(records):
            rows = records[size]
            members = placed[unit[placed] == size]
            first, second = rows[0::2], rows[1::2]
            same = ((first[:, 1 + n:] == second[:, 1 + n:]).all(axis=1)
                    & (first[:, 1:1 + n].astype(np.int64).sum(axis=1) == second[:, 1:1 + n].astype(np.int64).sum(axis=1)))
            if not same.any():
                continue
            pairs = np.flatnonzero(same)
            if self.policies.on_pair_collapse == "abort":
                g = int(members[2 * pairs[0]])
                i = good[g]
                err = errors.PairCollapseError(self.spec.path, local_lines[i],
                                               int(first[pairs[0], 1:1 + n].astype(np.int64).sum()), int(size))
                if first_error is None or base + i < first_error[0]:
                    first_error = (base + i, local_lines[i], err)
                continue
            gone = np.concatenate([2 * pairs, 2 * pairs + 1])
            gstatus[members[gone]] = PAIR_COLLAPSED
            records[size] = np.delete(rows, gone, axis=0)
            if not len(records[size]):
                del records[size]
        return records, first_error

    def _written_fields(self, flat, written, src_starts) -> tuple:
        """``(source, src_starts)`` with only the field tokens that ``written`` lays out,
        in sample and field-slot order."""
        slots = self._field_slot_array
        counts = written[:, slots].reshape(-1)
        source = flat[ragged_gather_index(src_starts[:, slots].reshape(-1), counts)]
        src_starts = src_starts.copy()
        src_starts[:, slots] = (np.cumsum(counts) - counts).reshape(-1, len(slots))
        return source, src_starts

    def _gather_tokens(self, rows, lengths, seg_tokens, seg_offsets) -> np.ndarray:
        """Concatenate the payload tokens of ``rows`` (sample-major, segment order), in
        the tokenizer's storage dtype: the type they are spilled and written in (a huge
        sample's tokens are copied once, at 2 or 4 bytes each, not as int64)."""
        pieces = []
        for r in rows:
            for j in range(self.n):
                start = seg_offsets[j][r]
                pieces.append(seg_tokens[j][start:start + lengths[r, j]])
        if not pieces:
            return np.zeros(0, np.int64)
        return np.concatenate(pieces, dtype=self.tok.storage.numpy_dtype, casting="unsafe")   # ids fit it

    def _find_unk(self, good, base, written, gstatus, owner, local, hit_chars) -> UnkTable:
        """UNK rows for the samples that will be written, over the written payload.

        Vectorized over the batch: UNK hits in the flat field tokens (the text each is
        in, its index there and its source substring, from the encode pool) are mapped
        back to (sample, segment, token index); hits that are not written (truncated,
        skipped) are dropped.
        """
        G = len(good)
        if not G:
            return UnkTable()
        unk_id = self.tok.unk_id
        rows, segs, locs, chars = [], [], [], []
        if len(owner):
            r = owner % G
            j = self._field_slot_array[owner // G]
            keep = (local < written[r, j]) & (gstatus[r] != OVF_SKIP) & (gstatus[r] != PAIR_COLLAPSED)
            if keep.all():
                chars.append(hit_chars)
            else:
                chars.append(hit_chars.take(np.flatnonzero(keep)))
                local, r, j = local[keep], r[keep], j[keep]
            rows.append(r)
            segs.append(j)
            locs.append(local)
        for j, lit_chars in self._literal_unk_column.items():
            lit_local = np.nonzero(self.literal_tokens[j] == unk_id)[0]
            r = np.repeat(np.arange(G), len(lit_local))
            local = np.tile(lit_local, G)
            rank = np.tile(np.arange(len(lit_local)), G)
            keep = (local < written[r, j]) & (gstatus[r] != OVF_SKIP) & (gstatus[r] != PAIR_COLLAPSED)
            rows.append(r[keep])
            segs.append(np.full(int(keep.sum()), j, np.int64))
            locs.append(local[keep])
            chars.append(lit_chars.take(rank[keep]))
        if not rows:
            return UnkTable()
        rows, segs, locs = np.concatenate(rows), np.concatenate(segs), np.concatenate(locs)
        if not len(rows):
            return UnkTable()
        positions = (np.cumsum(written, axis=1) - written)[rows, segs] + locs
        # Sample order, then position: within one (sample, segment) the hits already
        # ascend (each comes from one text's ids, or one literal's), and segments follow
        # each other in a sample, so a stable sort by (sample, segment) is enough. The
        # keys are a few ascending runs (one per field slot and literal), which a stable
        # sort merges in about one pass.
        order = np.argsort(rows * self.n + segs, kind="stable")
        samples = base + np.asarray(good, np.int64)[rows[order]]
        return UnkTable(samples, positions[order], segs[order], CharColumn.concat(chars).take(order))


def cut_messages(base: int, good: list, over: np.ndarray, lengths: np.ndarray, written: np.ndarray) -> dict:
    """Sample -> ``{"cut_messages": [...]}`` of each truncated conversation: the messages
    that truncation shortened (or left out), by their index in the conversation."""
    found = {}
    per_message = lengths.reshape(len(lengths), -1, PARTS_PER_MESSAGE).sum(axis=2)
    kept = written.reshape(len(written), -1, PARTS_PER_MESSAGE).sum(axis=2)
    for g in np.flatnonzero(over).tolist():
        present = per_message[g] > 0
        cut = np.flatnonzero(present & (kept[g] < per_message[g])).tolist()
        found[base + good[g]] = {CUT_KEY: cut}
    return found


def _pick(substrings: list, rank: int) -> str:
    """The rank-th UNK substring ("" if the tokenizer reported fewer offsets)."""
    return substrings[rank] if rank < len(substrings) else ""
