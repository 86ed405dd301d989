"""From raw JSONL lines to laid-out records (pure: no Beam, no storage).

A worker hands :meth:`BlockEncoder.feed` the lines of each input block (UTF-8 ``bytes``
as read, or ``str``; or :meth:`BlockEncoder.encode_block` those of a single one) and
gets back, per block, a :class:`BlockResult`: the fixed-width records of every declared
unit (in sample order), the variable-width overflow samples whose unit is only known
once every block has been seen (the ``extend`` policy), and the per-sample metadata
that the index writers turn into JSONL rows once global sample ids are known.

Work is done in slices of about a thousand samples: C-level passes to parse, render and
hash clean lines, tokenizer calls of at most ``build_batch`` samples' texts on an
encode pool, numpy for lengths, units, truncation and record layout.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from bisect import bisect_left
from itertools import accumulate, chain, compress, starmap
from typing import Iterable, Optional

import numpy as np
import orjson

from . import errors
from .config import FileSpec, Policies
from .shard_format import layout_units, ragged_gather_index
from .template import FieldTypeError, render_value
from .tokenizers import Positions, Tokenizer
from .text_cache import Rest, TextCache
from .unk_rows import CharColumn, UnkTable, unk_part

# Sample status codes kept per sample in BlockResult.status.
OK = 0            # written to a declared unit
BAD = 1           # bad record (skip policy): bad_record_index only
OVF_SKIP = 2      # overflow dropped by the skip policy
OVF_TRUNCATE = 3  # overflow truncated into max(sizes)
OVF_EXTEND = 4    # overflow waiting for its extended unit

_BOM = "\ufeff"
# A slice of a block: the unit of pipelining between parsing and encoding (see
# BlockEncoder._start_batch). Measured on 2 cores: ~1k samples per slice is the best
# trade-off between overlap (smaller) and per-slice numpy overhead (larger).
SLICE_SAMPLES = 1024
SLICE_CHARS = 1 << 19
_NO_HASH = bytes(32)  # digest slot of a bad record


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


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


class _Done:
    """An already computed result with the ``Future.result()`` interface."""

    def __init__(self, value):
        self._value = value

    def result(self):
        return self._value


@dataclass
class _Batch:
    """A batch between ``_start_batch`` and ``_finish_batch``: checked, hashed, encoding."""

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
    encoded: object  # Future of (flat, lengths), or None when there is nothing to encode
    repeats: list = field(default_factory=list)   # (position, _Finished) of known repeats
    store: set = field(default_factory=set)       # positions whose result to remember


@dataclass(frozen=True)
class _Finished:
    """Everything a written sample contributes, as a pure function of its rendered fields."""

    lengths: tuple            # field lengths in characters (with the digest: the key)
    unit: int
    count: int
    record: np.ndarray        # its record row
    unk_count: int
    unk_text: str             # its row's UNK part (``unk_rows``), "" without UNK


class _RepeatCache:
    """Results of samples that occur again, so that exact repeats are not encoded again.

    Real corpora repeat samples (the generated benchmark corpus has about 2%, scraped
    instruction data far more), and a repeat needs neither the tokenizer nor the UNK
    audit: its record is a pure function of its field values. The sha256 digest (made
    for the duplicate index anyway) plus the field lengths identify those values: the
    literals between fields are fixed. A digest seen once is only remembered; its second
    occurrence is encoded and its result kept; later ones reuse it. Both the digests
    seen and the results kept are bounded, so memory does not grow with the corpus.
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

    def keep(self, digest: bytes, result: _Finished) -> None:
        """Keep ``result`` unless the cache is full (so it holds at most one result more
        than ``MAX_BYTES``)."""
        if not self.full():
            self.entries[digest] = result
            self.nbytes += result.record.nbytes + 2 * len(result.unk_text)


@dataclass
class _BlockState:
    """A block being encoded: its finished slices and how many are still in flight."""

    key: object
    n_lines: int
    parts: list = field(default_factory=list)
    pending: int = 0
    fed: bool = False        # every slice submitted
    stopped: bool = False    # a slice held the block's first error; later ones are dropped


@dataclass
class _Parsed:
    """One non-blank line after parsing and rendering (or its error)."""

    values: Optional[tuple] = None  # rendered text per declared field
    empty: tuple = ()
    error: Optional[errors.MintDimError] = None


# One decoder for every line: ``json.loads`` with keyword arguments builds a new one per
# call. Its scanner parses one JSON value at an offset, which is the fast path below.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SCAN = _DECODER.scan_once
_JSON_SPACE = " \t\n\r"
# The fast path's parser (:meth:`BlockEncoder._clean_chunk`): orjson reads UTF-8 bytes
# itself and accepts a subset of what the standard decoder accepts, with the same values
# for the strings a template renders. Anything it refuses takes the standard decoder.
_LOADS = orjson.loads
_CONTAINERS = frozenset((dict, list))
# Nesting the fast path leaves to the standard decoder, which refuses what exceeds the
# interpreter's recursion limit (less the caller's stack), where orjson allows 1024 levels.
FAST_MAX_DEPTH = 128


class BlockEncoder:
    """Turns the lines of one file's blocks into records, with the file's settings.

    Holds the tokenizer and the literal segments' tokens (encoded once per template).
    """

    def __init__(self, spec: FileSpec, tokenizer: Tokenizer, policies: Policies,
                 sizes: Optional[tuple] = None, encode_threads: int = 0):
        self.spec = spec
        self.tok = tokenizer
        self.policies = policies
        self.sizes = np.asarray(sizes or spec.sizes, dtype=np.int64)
        self.max_size = int(self.sizes[-1])
        self.segments = spec.segments
        self.n = len(self.segments)
        self.field_slots = [j for j, s in enumerate(self.segments) if s.is_field]
        self._field_slot_array = np.asarray(self.field_slots, dtype=np.int64)
        self.literal_tokens = {
            j: np.asarray(tokenizer.encode(s.text), dtype=np.int64)
            for j, s in enumerate(self.segments) if not s.is_field
        }
        # Each literal's UNK substrings, one per UNK token ("" past what the tokenizer
        # reported), taken for every sample that writes the literal.
        self._literal_unk_column = {
            j: CharColumn.of(_pick(tokenizer.unk_substrings(self.segments[j].text), q)
                             for q in range(int((toks == tokenizer.unk_id).sum())))
            for j, toks in self.literal_tokens.items() if (toks == tokenizer.unk_id).any()
        }
        # Literal tokens appended after a batch's field tokens, for the record layout.
        self._literal_at: dict = {}
        at = 0
        for j, toks in self.literal_tokens.items():
            self._literal_at[j] = at
            at += len(toks)
        self._literal_source = (np.concatenate(list(self.literal_tokens.values())).astype(np.int32)
                                if self.literal_tokens else np.zeros(0, np.int32))
        # An empty text is encoded once here: when it has no tokens (every model we
        # know), empty field values skip the tokenizer and the text cache.
        self._empty_has_no_tokens = len(tokenizer.encode("")) == 0
        self.field_names = list(dict.fromkeys(spec.fields))  # a field declared twice counts once
        position = {name: k for k, name in enumerate(self.field_names)}
        # Field slot -> index into a sample's values (declared field order).
        self._slot_field = [position[self.segments[j].text] for j in self.field_slots]
        # The rendered sample (what is hashed) in one C call: literals inline, fields by index.
        self._render = "".join(
            "{%d}" % position[s.text] if s.is_field else s.text.replace("{", "{{").replace("}", "}}")
            for s in self.segments
        ).format
        self._get_fields = operator.itemgetter(*self.field_names)
        self._one_field = len(self.field_names) == 1
        # encode_threads > 0: encode batches on a thread pool, overlapped with parsing.
        self._pool = ThreadPoolExecutor(encode_threads, thread_name_prefix="encode") if encode_threads else None
        self._max_inflight = max(1, encode_threads)
        self._repeats = _RepeatCache()
        self._texts = TextCache()
        self.reset()

    # -- parsing -------------------------------------------------------------------

    def _parse(self, local_line: int, line, file_start: bool) -> Optional[_Parsed]:
        """The general path: any line, with the spec's error for each way it can be bad."""
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError:
                if file_start and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                if not line.strip():
                    return None
                return self._error(local_line, errors.SourceParseError, "invalid UTF-8")
        if file_start and line.startswith(_BOM):
            line = line[1:]
        if not line.strip():
            return None
        try:
            obj = _DECODER.decode(line)
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            return self._error(local_line, errors.SourceParseError, "invalid JSON syntax")
        if not isinstance(obj, dict):
            return self._error(local_line, errors.SourceParseError, "JSON value is not an object")
        missing = [f for f in self.field_names if f not in obj]
        if missing:
            err = errors.SampleSchemaError(
                file=self.spec.path, line=local_line, declared=self.field_names,
                missing=missing, available=list(obj.keys()),
            )
            return _Parsed(error=err)
        try:
            values = tuple(render_value(name, obj[name]) for name in self.field_names)
        except FieldTypeError as exc:
            err = errors.SampleSchemaError.wrong_type(
                file=self.spec.path, line=local_line, declared=self.field_names,
                field=exc.field, type_name=exc.type_name,
            )
            return _Parsed(error=err)
        empty = tuple(name for name, v in zip(self.field_names, values) if v == "")
        return _Parsed(values=values, empty=empty)

    def _error(self, local_line, cls, reason) -> _Parsed:
        return _Parsed(error=cls(file=self.spec.path, line=local_line, reason=reason))

    # -- the block -----------------------------------------------------------------

    def encode_block(self, lines: Iterable, file_start: bool = False) -> BlockResult:
        """Encode every line of one block; ``file_start`` marks the file's first block."""
        self.reset()
        done = self.feed(None, lines, file_start) + self.drain()
        return done[-1][1]

    def feed(self, key, lines: Iterable, file_start: bool = False) -> list:
        """Start encoding one block; return ``[(key, BlockResult)]`` of blocks now complete.

        Slices are pipelined across blocks, not only within one: while the encode pool
        (tokenizers release the GIL) works on the last slices of a block, this thread
        already parses the next block, so the pool never drains at block boundaries.
        Blocks complete in the order they were fed; :meth:`drain` finishes the rest.
        """
        lines = lines if isinstance(lines, list) else list(lines)
        state = _BlockState(key, len(lines))
        self._blocks.append(state)
        done: list = []
        pos = base = 0
        while pos < len(lines):
            batch, pos = self._start_batch(lines, pos, base, file_start)
            if batch is None:
                break
            base += batch.size
            state.pending += 1
            self._inflight.append((state, batch))
            if batch.first_error is not None:
                break  # later lines cannot hold the block's first error
            while len(self._inflight) > self._max_inflight:
                self._finish_oldest(done)
        state.fed = True
        self._complete(done)
        return done

    def drain(self) -> list:
        """Finish every slice in flight; ``[(key, BlockResult)]`` of the remaining blocks."""
        done: list = []
        while self._inflight:
            self._finish_oldest(done)
        self._complete(done)
        return done

    def reset(self) -> None:
        """Forget blocks in flight (a failed bundle's), e.g. before a retried bundle."""
        self._inflight = deque()
        self._blocks = deque()

    def _finish_oldest(self, done: list) -> None:
        state, batch = self._inflight.popleft()
        part = self._finish_batch(batch)
        state.pending -= 1
        if not state.stopped:
            state.parts.append(part)
            state.stopped = part["first_error"] is not None   # the block's first error: stop there
        self._complete(done)

    def _complete(self, done: list) -> None:
        while self._blocks and self._blocks[0].fed and not self._blocks[0].pending:
            state = self._blocks.popleft()
            done.append((state.key, self._merge(state.parts, state.n_lines)))

    def _start_batch(self, lines: list, pos: int, base: int, file_start: bool):
        """Parse, check and hash one slice of ``lines[pos:]``, and submit its field texts
        to the encode pool. Returns ``(batch, next_pos)``.

        A slice is at most ``SLICE_SAMPLES`` samples and about ``SLICE_CHARS`` characters
        (bytes, for lines not decoded):
        small enough that parsing the next slice overlaps encoding this one, large
        enough that per-slice numpy work stays small. It is encoded in tokenizer calls of
        at most ``build_batch`` samples' texts (see :meth:`_submit`).

        Most slices take the fast path (:meth:`_clean_chunk`); a slice with anything
        unusual (blank lines, whitespace around the value, a BOM, non-string fields,
        errors) goes line by line, each line through :meth:`_parse` unless it is clean.
        """
        limit = SLICE_SAMPLES
        if not (file_start and pos == 0):
            chunk = lines[pos:pos + limit]
            total = list(accumulate(map(len, chunk)))
            if total and total[-1] > SLICE_CHARS:
                chunk = chunk[:max(1, bisect_left(total, SLICE_CHARS))]
            clean = self._clean_chunk(chunk)
            if clean is not None:
                values, hashes, empty = clean
                S = len(chunk)
                empty = {base + i: names for i, names in empty.items()}
                return self._submit(base, list(range(pos, pos + S)), np.zeros(S, np.int8), hashes,
                                    {}, empty, None, list(range(S)), values), pos + S
        scan, get, render, one = _SCAN, self._get_fields, self._render, self._one_field
        sha256 = hashlib.sha256
        local_lines: list = []
        values: list = []       # values of the good samples
        good: list = []
        hashes: list = []
        bad: dict = {}
        empty: dict = {}
        first_error = None
        abort = self.policies.on_bad_record == "abort"
        n = len(lines)
        chars = 0
        while pos < n and len(local_lines) < limit and chars < SLICE_CHARS:
            local_line = pos
            line = lines[pos]
            pos += 1
            if type(line) is bytes:
                try:
                    line = line.decode("utf-8")
                except UnicodeDecodeError:
                    pass   # _parse names the line
            chars += len(line)
            vals = None
            if type(line) is str and line[:1] == "{" and not (file_start and local_line == 0):
                try:
                    obj, end = scan(line, 0)
                    if end == len(line) or not line[end:].strip(_JSON_SPACE):
                        vals = (get(obj),) if one else get(obj)
                        for v in vals:
                            if type(v) is not str:
                                vals = None
                                break
                except (StopIteration, KeyError, ValueError, TypeError, RecursionError):
                    vals = None
                if vals is not None:
                    empty_names = ()
                    if "" in vals:
                        empty_names = tuple(name for name, v in zip(self.field_names, vals) if v == "")
                    parsed_error = None
            if vals is None:
                parsed = self._parse(local_line, line, file_start and local_line == 0)
                if parsed is None:
                    continue  # a blank line: no sample
                vals, empty_names, parsed_error = parsed.values, parsed.empty, parsed.error
            i = len(local_lines)
            local_lines.append(local_line)
            if parsed_error is None:
                try:
                    digest = sha256(render(*vals).encode("utf-8")).digest()
                except UnicodeEncodeError:  # a lone surrogate from a JSON \u escape
                    parsed_error = errors.SourceParseError(file=self.spec.path, line=local_line,
                                                           reason="invalid UTF-8")
            if parsed_error is not None:
                hashes.append(_NO_HASH)
                bad[base + i] = (type(parsed_error).__name__, parsed_error.reason)
                if abort:
                    first_error = (base + i, local_line, parsed_error)
                    break
                continue
            hashes.append(digest)
            values.append(vals)
            good.append(i)
            if empty_names:
                empty[base + i] = list(empty_names)
        S = len(local_lines)
        if S == 0:
            return None, pos
        status = np.zeros(S, np.int8)
        if bad:
            status[np.asarray(list(bad), np.int64) - base] = BAD
        return self._submit(base, local_lines, status, hashes, bad, empty, first_error, good, values), pos

    def _clean_chunk(self, chunk: list):
        """``(values, digests, empty)`` for a chunk of lines that are all clean samples, else None.

        A clean line is one JSON object (JSON whitespace around it allowed) with every
        declared field a string: the common case, done with one C-level pass per step
        (parse, pick fields, render, encode, hash) instead of a Python loop over lines.
        Lines are UTF-8 ``bytes`` (or ``str``), parsed by orjson: about 0.25 s instead
        of 0.45 s per 100 MB of real text for the standard decoder and the decode before
        it (docs/decisions.md, "orjson for clean lines"). Any other chunk is redone
        line by line, where every problem gets its exact error.
        """
        try:
            objs = list(map(_LOADS, chunk))
            # dict.values refuses a line that is not an object; deep nesting is left to
            # the standard decoder, whose limit is lower than orjson's.
            if not _CONTAINERS.isdisjoint(map(type, chain.from_iterable(map(dict.values, objs)))):
                if not all(map(_shallow, objs)):
                    return None
            if self._one_field:
                singles = list(map(self._get_fields, objs))
                values = [(v,) for v in singles]
                kinds = set(map(type, singles))
            else:
                values = list(map(self._get_fields, objs))
                kinds = set(map(type, chain.from_iterable(values)))
            if kinds != {str}:
                return None
            data = list(map(str.encode, starmap(self._render, values)))
        except Exception:  # noqa: BLE001 - any failure means: take the line-by-line path
            return None
        sha256 = hashlib.sha256
        hashes = [sha256(d).digest() for d in data]
        empty: dict = {}
        for k, column in enumerate(zip(*values)):
            if "" in column:
                name = self.field_names[k]
                at = compress(range(len(column)), map(operator.not_, column))   # the empty ones
                if empty:
                    for i in at:
                        empty.setdefault(i, []).append(name)
                else:
                    empty = {i: [name] for i in at}
        return values, hashes, empty

    def _submit(self, base, local_lines, status, hashes, bad, empty, first_error, good, values) -> "_Batch":
        """Digests as one array, and the field texts (field-slot major) to the encode pool."""
        S = len(local_lines)
        digests = np.frombuffer(b"".join(hashes), np.uint8).reshape(S, 32)
        repeats, store = [], set()
        if values:
            good, values, repeats, store = self._repeats.split(good, values, hashes)
        texts: list = []
        if values:
            columns = list(zip(*values))
            for k in self._slot_field:
                texts.extend(columns[k])
        encoded = None
        if texts:
            encoded = (self._pool.submit(self._encode_texts, texts) if self._pool
                       else _Done(self._encode_texts(texts)))
        return _Batch(base, S, local_lines, status, digests, bad, empty, first_error, good, texts, encoded,
                      repeats, store)

    def _encode_texts(self, texts: list) -> tuple:
        """The encode-pool side of a slice: ``(flat, lengths, unk_owner, unk_local, unk_chars)``.

        Tokenizer calls of at most ``build_batch`` samples' worth of texts, in order, so
        that their concatenation is the encoding of ``texts``; then, for every UNK token
        in token order, the text it is in (``unk_owner``), its index in that text's ids
        (``unk_local``) and its source substring (``unk_chars``), which needs a second
        tokenizer pass over the texts that hold one (a ``CharColumn``, no string per
        token). Both passes release the GIL, so they overlap the parsing of later slices.
        """
        flat, lengths = self._encode_present(texts)
        hits = np.flatnonzero(flat == self.tok.unk_id)
        if not len(hits):
            return flat, lengths, hits, hits, CharColumn()
        starts = np.cumsum(lengths) - lengths
        owner = np.searchsorted(starts, hits, side="right") - 1
        local = hits - starts[owner]
        bounds = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        chars = self.tok.unk_column_at([texts[o] for o in owner[bounds].tolist()], Positions(local, bounds))
        return flat, lengths, owner, local, chars

    def _encode_present(self, texts: list) -> tuple:
        """``(flat, lengths)`` of ``texts``, asking the text cache for the non-empty ones.

        Optional fields are often left empty (six in ten Alpaca inputs): an empty text
        adds no tokens, so its length is 0 and the others' ids are the whole ``flat``.
        Sent on, each would cost a tokenizer call's per-text work, and would keep the
        text cache from resting on data whose texts never repeat (``""`` always does).
        """
        if not self._empty_has_no_tokens or "" not in texts:
            return self._texts.encode(texts, self._encode_calls)
        present = np.fromiter(map(bool, texts), bool, len(texts))
        flat, some = self._texts.encode([t for t in texts if t], self._encode_calls)
        lengths = np.zeros(len(texts), np.int64)
        lengths[present] = some
        return flat, lengths

    def _encode_calls(self, texts: list) -> tuple:
        """``(flat ids, lengths)`` of ``texts`` in tokenizer calls of at most ``build_batch``
        samples' worth of texts."""
        step = self.spec.build_batch * len(self._slot_field)
        calls = [texts[a:a + step] for a in range(0, len(texts), step)] if len(texts) > step else [texts]
        results = [self.tok.encode_batch(c) for c in calls]
        if len(results) == 1:
            return results[0]
        flats, lens = zip(*results)
        return np.concatenate(flats), np.concatenate(lens)

    def _finish_batch(self, pb: "_Batch") -> dict:
        """Lengths, units, overflow policy, UNK rows and record layout of one batch."""
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
        if G and nf:
            flat, lens, unk_owner, unk_local, unk_chars = pb.encoded.result()
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

        idx = np.searchsorted(self.sizes, counts, side="left")
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
                    token_count=int(counts[first]), max_unit_size=self.max_size,
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
        written_counts = written.sum(axis=1)

        unk = self._find_unk(good, base, written, gstatus, unk_owner, unk_local, unk_chars)

        # Every unit of the batch in one pass; batch-sized arrays stay in cache.
        placed = np.nonzero((gstatus == OK) | (gstatus == OVF_TRUNCATE))[0]
        src_starts = np.zeros((len(placed), self.n), np.int64)
        if len(placed):
            for j in self.field_slots:
                src_starts[:, j] = seg_offsets[j][placed]
        source = flat
        if self.literal_tokens:
            source = np.concatenate([flat, self._literal_source])
            for j, at in self._literal_at.items():
                src_starts[:, j] = len(flat) + at
        records = layout_units(unit[placed], written[placed], src_starts, source,
                               tok.storage.magic, tok.pad_id, tok.storage.numpy_dtype)
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
            self._remember(pb, good_arr, gstatus, unit, placed, records, unk)
        if pb.repeats:
            records, unk = self._add_repeats(pb, good_arr, unit, placed, records, unk,
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
        }

    def _remember(self, pb: "_Batch", good_arr, gstatus, unit, placed, records: dict, unk: UnkTable) -> None:
        """Keep the results of the slice's samples to store (written whole, not truncated)."""
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
        G, slots = len(pb.good), len(self._slot_field)
        samples = pb.base + good_arr[wanted]
        # Each wanted sample's UNK rows: the table is sorted by sample, so one range each,
        # and all their substrings in one gather.
        first = np.searchsorted(unk.sample, samples, side="left")
        last = np.searchsorted(unk.sample, samples, side="right")
        chars = unk.chars.take(ragged_gather_index(first, last - first)).tolist() if len(unk) else []
        at = 0
        for g, r, a, b in zip(wanted.tolist(), rows.tolist(), first.tolist(), last.tolist()):
            if self._repeats.full():
                return
            p = good_arr[g]
            u = int(unit[g])
            lengths = [0] * len(self.field_names)
            for k in range(slots):
                lengths[self._slot_field[k]] = len(pb.texts[k * G + g])
            record = records[u][r]
            mine = chars[at:at + b - a]
            at += b - a
            self._repeats.keep(pb.digests[p].tobytes(), _Finished(
                tuple(lengths), u, int(record[1:1 + self.n].sum()), record.copy(), len(mine),
                unk_part(unk.position[a:b], unk.segment[a:b], mine) if mine else ""))

    def _add_repeats(self, pb: "_Batch", good_arr, unit, placed, records: dict, unk: UnkTable,
                     full_status, token_count, orig_count, full_unit) -> tuple:
        """Merge the known repeats' results into the slice's, in sample order."""
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

    def _gather_tokens(self, rows, lengths, seg_tokens, seg_offsets) -> np.ndarray:
        """Concatenate the payload tokens of ``rows`` (sample-major, segment order)."""
        pieces = []
        for r in rows:
            for j in range(self.n):
                start = seg_offsets[j][r]
                pieces.append(seg_tokens[j][start:start + lengths[r, j]])
        return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)

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
            keep = (local < written[r, j]) & (gstatus[r] != OVF_SKIP)
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
            keep = (local < written[r, j]) & (gstatus[r] != OVF_SKIP)
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

    def _merge(self, parts: list[dict], n_lines: int) -> BlockResult:
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
        res.overflow_lengths = cat([p["ovf_lengths"] for p in parts]).reshape(-1, self.n)
        res.overflow_tokens = cat([p["ovf_tokens"] for p in parts])
        return res


def _shallow(obj) -> bool:
    """Whether a parsed line nests at most ``FAST_MAX_DEPTH`` containers deep."""
    level, depth = [obj], 1
    while level:
        if depth > FAST_MAX_DEPTH:
            return False
        inner = []
        for c in level:
            inner.extend(v for v in (c.values() if type(c) is dict else c) if type(v) in _CONTAINERS)
        level, depth = inner, depth + 1
    return True


def _pick(substrings: list, rank: int) -> str:
    """The rank-th UNK substring ("" if the tokenizer reported fewer offsets)."""
    return substrings[rank] if rank < len(substrings) else ""
