"""From raw JSONL lines to laid-out records: the block encoder (pure: no Beam, no storage).

A worker hands :meth:`BlockEncoder.feed` the lines of each input block (UTF-8 ``bytes``
as read, or ``str``; or :meth:`BlockEncoder.encode_block` those of a single one) and
gets back, per block, a :class:`~mintdim_beam.core.block_result.BlockResult`: the fixed-width
records of every declared unit (in sample order), the variable-width overflow samples
whose unit is only known once every block has been seen (the ``extend`` policy), and the
per-sample metadata that the index writers turn into JSONL rows once global sample ids
are known.

Work is done in slices of about a thousand samples, pipelined: this thread parses,
checks and hashes a slice (``sample_lines``) and submits its field texts to an encode
pool (tokenizers release the GIL); the slice's ids are then laid out into records with
numpy (``record_layout``). This module holds what ties the steps together: the
pipelining of slices across blocks, the tokenizer calls, and the caches that spare the
tokenizer work (``repeat_cache`` for whole samples, ``text_cache`` for field values).
"""

from __future__ import annotations

import operator
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np

from mintdim_beam.core.block_result import BlockResult, merge_slices
from mintdim_beam.core.chat_lines import ChatLineParser, RoleTable
from mintdim_beam.core.pair_lines import PairLineParser
from mintdim_beam.core.config import MAX_UNIT_SIZE, FileSpec, Policies
from mintdim_beam.core.record_layout import Batch, SliceLayout
from mintdim_beam.core.repeat_cache import RepeatCache
from mintdim_beam.core.sample_lines import LineParser, ParsedSlice
from mintdim_beam.core.text_cache import TextCache
from mintdim_beam.tokenization.adapters import Positions, Tokenizer
from mintdim_beam.tokenization.template_tokens import role_tokens
from mintdim_beam.tokenization.unk_rows import CharColumn


#: Ids compared at a time when looking for UNK (``_where``).
_COMPARE_STEP = 1 << 20


def _where(flat: np.ndarray, value: int) -> np.ndarray:
    """Positions of ``value`` in ``flat``, a slice at a time: a huge sample's ids are not
    doubled by a mask of their size."""
    if len(flat) <= _COMPARE_STEP:
        return np.flatnonzero(flat == value)
    return np.concatenate([np.flatnonzero(flat[a:a + _COMPARE_STEP] == value) + a
                           for a in range(0, len(flat), _COMPARE_STEP)])


class _Done:
    """An already computed result with the ``Future.result()`` interface."""

    def __init__(self, value):
        self._value = value

    def result(self):
        return self._value


@dataclass
class _BlockState:
    """A block being encoded: its finished slices and how many are still in flight."""

    key: object
    n_lines: int
    parts: list = field(default_factory=list)
    pending: int = 0
    fed: bool = False        # every slice submitted
    stopped: bool = False    # a slice held the block's first error; later ones are dropped


class BlockEncoder:
    """Turns the lines of one file's blocks into records, with the file's settings.

    Holds the tokenizer, the file's line parser and its record layout (with the literal
    segments' tokens, encoded once per template).
    """

    def __init__(self, spec: FileSpec, tokenizer: Tokenizer, policies: Policies,
                 sizes: Optional[tuple] = None, encode_threads: int = 0, max_extended: int = MAX_UNIT_SIZE):
        self.spec = spec
        self.tok = tokenizer
        self.policies = policies
        self._layout = SliceLayout(spec, tokenizer, policies, np.asarray(sizes or spec.sizes, dtype=np.int64),
                                   max_extended)
        # A special segment renders as its token's text (template_tokens).
        self._chat = None
        if spec.chat is not None:
            # A conversation: each role's prefix and suffix ids, encoded once (format.chat).
            roles = [role_tokens(r, tokenizer, spec.index) for r in spec.chat.roles]
            self._chat = RoleTable(roles, tokenizer.unk_id, spec.chat.max_messages)
            self._lines = ChatLineParser(spec, policies, roles)
        else:
            self._lines = LineParser(spec, policies, {j: c.text for j, c in self._layout.constants.items()})
        if spec.pairs is not None:
            # Two samples a line, rendered by the line parser above (pair_lines).
            self._lines = PairLineParser(spec, policies, self._lines)
        self._slot_field = self._layout.slot_field
        # An empty text is encoded once here: when it has no tokens (every model we
        # know), empty field values skip the tokenizer and the text cache.
        self._empty_has_no_tokens = len(tokenizer.encode("")) == 0
        # encode_threads > 0: encode batches on a thread pool, overlapped with parsing.
        self._pool = ThreadPoolExecutor(encode_threads, thread_name_prefix="encode") if encode_threads else None
        self._max_inflight = max(1, encode_threads)
        self._repeats = RepeatCache()
        self._texts = TextCache()
        self.reset()

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
            parsed, pos = self._lines.parse_slice(lines, pos, base, file_start)
            if parsed is None:
                break
            batch = self._submit(parsed)
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

    def close(self) -> None:
        """Let the encode pool's threads end (they would otherwise live with the process)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def reset(self) -> None:
        """Forget blocks in flight (a failed bundle's), e.g. before a retried bundle."""
        self._inflight = deque()
        self._blocks = deque()

    def _finish_oldest(self, done: list) -> None:
        state, batch = self._inflight.popleft()
        part = self._layout.finish(batch, self._repeats)
        state.pending -= 1
        if not state.stopped:
            state.parts.append(part)
            state.stopped = part["first_error"] is not None   # the block's first error: stop there
        self._complete(done)

    def _complete(self, done: list) -> None:
        while self._blocks and self._blocks[0].fed and not self._blocks[0].pending:
            state = self._blocks.popleft()
            done.append((state.key, merge_slices(state.parts, state.n_lines, self._layout.n)))

    # -- the tokenizer -------------------------------------------------------------

    def _submit(self, parsed: ParsedSlice) -> Batch:
        """Digests as one array, and the field texts (field-slot major) to the encode pool.

        A slice is encoded in tokenizer calls of at most ``build_batch`` samples' texts
        (see :meth:`_encode_calls`).
        """
        S, hashes, good, values = parsed.size, parsed.hashes, parsed.good, parsed.values
        digests = np.frombuffer(b"".join(hashes), np.uint8).reshape(S, 32)
        repeats, store = [], set()
        if values and self._chat is None and self.spec.pairs is None:
            # (A conversation's record depends on its roles as well as its text, a pair's
            # record on its partner's: no repeats.)
            good, values, repeats, store = self._repeats.split(good, values, hashes)
        texts: list = []
        if values:
            for k in self._slot_field:
                texts.extend(map(operator.itemgetter(k), values))
        encoded = None
        if texts:
            if self._chat is not None:
                work = (self._encode_chat, texts, np.asarray(parsed.codes, np.int64).reshape(len(values), -1))
            else:
                work = (self._encode_texts, texts)
            encoded = self._pool.submit(*work) if self._pool else _Done(work[0](*work[1:]))
        return Batch(parsed.base, S, parsed.local_lines, parsed.status, digests, parsed.bad, parsed.empty,
                     parsed.first_error, good, texts, encoded, repeats, store, parsed.extra)

    def _encode_chat(self, texts: list, codes: np.ndarray) -> tuple:
        """:meth:`_encode_texts` of a conversation slice: its contents encoded (the texts of
        every message slot's content part), its prefixes and suffixes taken from the
        roles' ids (``RoleTable``)."""
        G = len(codes)
        contents = [t for m in range(codes.shape[1]) for t in texts[(3 * m + 1) * G:(3 * m + 2) * G]]
        return self._chat.lay_out(codes, self._encode_texts(contents))

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
        # A vocabulary that cannot emit UNK (unk_id None) has none to find (DESIGN.md §8).
        hits = _where(flat, self.tok.unk_id) if self.tok.unk_id is not None else np.zeros(0, np.int64)
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
