"""Token ids of field values that recur across samples, so each is encoded about twice.

Segments are encoded independently (``sequence_template`` renders each field on its
own), so a field value's ids are a pure function of its text and the tokenizer: the
same instruction, system prompt or answer in ten thousand otherwise different samples
needs the tokenizer only for its first occurrences. The sample cache of ``repeat_cache``
catches samples that repeat whole; this one catches values that repeat inside samples
that do not. Like it, a value's first occurrence is only remembered (by its string
hash), its second is encoded and kept, later ones are copied from the kept ids; both
what is remembered and what is kept are bounded, and the cache rests on data where
values hardly repeat, where its bookkeeping would cost more than it saves. The kept
ids are compared by the text itself (a dict keyed by the string), never by hash, so
the cache changes no output, only how often the tokenizer is asked.

The cache is shared by the encode pool's threads: lookups and stores hold a lock, the
tokenizer call does not.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from mintdim_beam.format.shard_format import ragged_gather_index


class Rest:
    """When a cache rests: on data that hardly repeats, its bookkeeping costs more than
    it saves, so after a window of ``window`` items of which fewer than ``min_share``
    had been seen before, it rests for ``windows`` windows, then looks again. Shared by
    this cache and the sample cache of ``repeat_cache``."""

    def __init__(self, window: int = 1 << 16, min_share: float = 0.02, windows: int = 4):
        self.window, self.min_share, self.windows = window, min_share, windows
        self.items = self.again = self.left = 0

    def count(self, n: int) -> tuple:
        """Count ``n`` items into the window: ``(resting, just started resting)``.
        The caller adds the items seen before to :attr:`again`."""
        self.items += n
        started = False
        if self.items >= self.window:
            if self.left:
                self.left -= 1
            elif self.again < self.min_share * self.items:
                self.left, started = self.windows, True
            self.items = self.again = 0
        return bool(self.left), started


class TextCache:
    MAX_SEEN = 1 << 16         # string hashes remembered (~5 MiB)
    MAX_TOKENS = 1 << 19       # ids kept (2 MiB as int32); when full, they start over
    MAX_TEXT_TOKENS = 1 << 13  # a longer value is not kept

    def __init__(self):
        self._lock = threading.Lock()
        self._seen: set = set()
        self._entries: dict = {}                # text -> (offset, length) in self._ids
        self._ids = np.zeros(0, np.int32)   # vocabularies are far below 2^31
        self._used = 0
        self._rest = Rest()
        self.hits = 0                           # texts served from the cache (for tests)

    def encode(self, texts: list, encode: Callable) -> tuple:
        """``encode(texts)`` (``(flat ids, lengths)``), asking ``encode`` only for the
        texts not kept, then splicing the kept ids in at their places."""
        with self._lock:
            resting, started = self._rest.count(len(texts))
            if started:
                self._seen.clear()
            if resting:
                found = None
                again: set = set()
            else:
                found = list(map(self._entries.get, texts)) if self._entries else None
                keys = list(map(hash, texts))
                again = self._seen.intersection(keys)
                self._rest.again += len(again)
                if len(self._seen) > self.MAX_SEEN:
                    self._seen.clear()
                self._seen.update(keys)
                ids = self._ids
        if found is None or found.count(None) == len(found):
            flat, lengths = encode(texts)
            if again:
                self._keep(texts, keys, again, flat, lengths, range(len(texts)))
            return flat, lengths
        miss = [i for i, f in enumerate(found) if f is None]
        hit = [i for i, f in enumerate(found) if f is not None]
        self.hits += len(hit)
        n = len(texts)
        lengths = np.zeros(n, np.int64)
        hit_at = np.fromiter((found[i][0] for i in hit), np.int64, len(hit))
        hit_len = np.fromiter((found[i][1] for i in hit), np.int64, len(hit))
        lengths[hit] = hit_len
        flat_m = None
        if miss:
            flat_m, len_m = encode([texts[i] for i in miss])
            lengths[miss] = len_m
        starts = np.cumsum(lengths) - lengths
        flat = np.empty(int(lengths.sum()), np.result_type(ids, flat_m) if miss else ids.dtype)
        flat[ragged_gather_index(starts[hit], hit_len)] = ids[ragged_gather_index(hit_at, hit_len)]
        if miss:
            flat[ragged_gather_index(starts[miss], len_m)] = flat_m
            if again:
                self._keep([texts[i] for i in miss], [keys[i] for i in miss], again, flat_m, len_m,
                           range(len(miss)))
        return flat, lengths

    def _keep(self, texts, keys, again: set, flat, lengths, order) -> None:
        """Keep the ids of the texts seen before (their second occurrence)."""
        if len(flat) and int(flat.max()) > np.iinfo(np.int32).max:
            return   # ids the int32 store cannot hold (no real vocabulary has them)
        starts = np.cumsum(lengths) - lengths
        with self._lock:
            for i in order:
                if keys[i] not in again or texts[i] in self._entries:
                    continue
                length = int(lengths[i])
                if length > self.MAX_TEXT_TOKENS:
                    continue
                if self._used + length > len(self._ids):
                    if len(self._ids) < self.MAX_TOKENS:
                        grown = np.zeros(min(self.MAX_TOKENS, max(2 * len(self._ids), 1 << 14, length)), np.int32)
                        grown[:self._used] = self._ids[:self._used]
                        self._ids = grown
                    if self._used + length > len(self._ids):
                        # Full: start over in a new array (a thread splicing from the old
                        # one keeps its reference to it).
                        self._ids = np.zeros(self.MAX_TOKENS, np.int32)
                        self._entries = {}
                        self._used = 0
                start = int(starts[i])
                self._ids[self._used:self._used + length] = flat[start:start + length]
                self._entries[texts[i]] = (self._used, length)
                self._used += length
