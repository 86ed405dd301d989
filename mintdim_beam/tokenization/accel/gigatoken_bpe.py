"""BPE ``tokenizer.json`` files encoded by gigatoken, checked against the library.

gigatoken (MIT, ``pip install mintdim-beam[fast]``) re-implements byte-level BPE (and
SentencePiece-style BPE with byte fallback) in Rust: a SIMD split for the pre-tokenizer
patterns it knows, a word cache, merges by rank, one call per batch of texts with the
GIL released. It is an optional dependency,
and it is not trusted: in version 0.10 it silently ignores parts of a configuration
(``single_word``, ``lstrip`` and ``rstrip`` of added tokens, ``end_of_word_suffix``,
BPE dropout, a missing pre-tokenizer), classifies code points assigned after Unicode
14 differently from the library's Oniguruma split, and gives an added token whose content
is already a vocabulary entry the added id where the library keeps the vocabulary's. So a tokenizer is encoded
by gigatoken only when every one of these holds, and by the library (or the word
encoder of ``bpe_words``) otherwise:

1. its configuration is one this module knows gigatoken reproduces (``supported``): a
   BPE model without dropout, subword prefix or suffix; then either byte-level (no byte
   fallback; no normalizer, or NFC; a ``ByteLevel`` pre-tokenizer with the GPT-2
   split, or ``Split`` regexes followed by a ``ByteLevel`` without one: GPT-2, NeoX,
   Llama 3, Qwen, ...) or SentencePiece-style (byte fallback; ``\u2581`` for spaces by a
   ``Prepend``/``Replace`` normalizer or a ``Metaspace`` pre-tokenizer: Llama 2,
   Mistral, ...); added tokens without ``single_word``, ``lstrip`` or ``rstrip``;
2. gigatoken loads it (it refuses a split regex it has no implementation of, a
   vocabulary without all 256 bytes, other model types) without an error or a panic;
3. the probe (``probe``), once per process on first use: gigatoken's vocabulary,
   byte for byte and id for id, equals the library's (model and added tokens; a
   ``<0xXX>`` token is its byte), its
   merges are the library's in the same order, and it gives the library's ids on a
   battery of edge texts (``probe_texts``): whitespace runs of every kind and many
   lengths, each added token alone, glued to words, between spaces and repeated,
   contractions, digit runs, combining marks, emoji sequences, CJK, control and
   format characters, text that merely looks like escapes or surrogates, long words,
   a sweep of code points of every script, vocabulary entries as texts, and random
   texts of all of these.

Per text, what the checks do not cover goes to the fallback encoder, in one call per
batch: a text holding a code point that is not assigned in Unicode 14 (or a lone
surrogate), and, under an NFC normalizer, a text that NFC would change (the argument of
``bpe_words``). Every batch's answer is checked for shape (one row per text, ids inside
the vocabulary); an error, a panic or a wrong shape switches gigatoken off for the
process and the batch is encoded again by the fallback: a failure it can see never
fails a build and never reaches its ids. UNK positions and offsets (the UNK audit) still
come from the library: the adapter asks it for the offsets of the texts whose ids hold
the unknown id. gigatoken's word cache only grows, so its tokenizer is loaded again
from the same bytes whenever the process has grown by ``CACHE_BUDGET`` in its calls
since (``GigatokenBPE._recycle``).
"""

from __future__ import annotations

import json
import logging
import operator
import os
import re
import threading
import unicodedata
from itertools import compress
from typing import Optional, Sequence

import numpy as np

from mintdim_beam.tokenization.accel.battery import SPIECE_SPACE, probe_texts, vocab_texts
from mintdim_beam.tokenization.accel.bpe_words import byte_chars, outside_unicode14, outside_unicode14_in

log = logging.getLogger(__name__)

#: The release this module was checked against: what ``supported`` says of the
#: configuration holds for it (older ones are not taken).
MIN_VERSION = (0, 10)

#: Calls of fewer characters do not set gigatoken up (``GigatokenBPE.encode_batch``).
PROBE_AFTER = 1 << 16

#: gigatoken keeps every distinct word it has seen, in a cache that only grows (0.10:
#: about 10 bytes per character of distinct words, 3 GiB after 340 MB of words that
#: never repeat) and that goes with its tokenizer object. So the tokenizer is loaded
#: again from the same bytes once the process has grown by this much during its calls
#: since it was loaded (resident set before and after each call, ``/proc/self/statm``:
#: what the rest of the worker allocates between calls does not count), or, where that
#: cannot be read, after ``CACHE_CHARS`` characters.
CACHE_BUDGET = 64 << 20
CACHE_CHARS = 1 << 26

#: Ids are handed over as int32, the type of the word encoder's ids.
_IDS = np.int32

#: What a gigatoken call may raise that is not gigatoken failing.
_NOT_GIGATOKEN = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError)


def _version() -> Optional[tuple]:
    try:
        from importlib.metadata import version

        return tuple(int(p) for p in version("gigatoken").split(".")[:2])
    except Exception:  # noqa: BLE001 - not installed, or a version we cannot read
        return None


def available() -> bool:
    """Whether a gigatoken this module was checked against is installed (importable)."""
    import importlib.util

    try:
        if importlib.util.find_spec("gigatoken") is None:
            return False
    except (ImportError, ValueError):
        return False
    found = _version()
    return found is not None and found >= MIN_VERSION


def _nfc(config: dict) -> Optional[bool]:
    normalizer = config.get("normalizer")
    if normalizer is None:
        return False
    kind = normalizer.get("type")
    if kind == "NFC":
        return True
    if kind == "Sequence":
        inner = normalizer.get("normalizers") or []
        if not inner:
            return False
        if len(inner) == 1 and (inner[0] or {}).get("type") == "NFC":
            return True
    return None


def _byte_level(pre: Optional[dict]) -> bool:
    if not pre:
        return False
    if pre.get("type") == "ByteLevel":
        return pre.get("use_regex", True) is True
    if pre.get("type") != "Sequence":
        return False
    steps = pre.get("pretokenizers") or []
    if len(steps) == 1:
        return _byte_level(steps[0])
    if not steps or steps[-1].get("type") != "ByteLevel" or steps[-1].get("use_regex", True):
        return False
    for step in steps[:-1]:
        if step.get("type") != "Split" or "Regex" not in (step.get("pattern") or {}):
            return False
        if step.get("behavior") != "Isolated" or step.get("invert"):
            return False
    return True


def sentencepiece_style(config: dict) -> bool:
    """A SentencePiece BPE with byte fallback as HF converts one (Llama 2, Mistral,
    Gemma): spaces become ``\u2581`` and a word boundary is prepended, by the normalizer
    (``Prepend`` then ``Replace``, no pre-tokenizer) or by a ``Metaspace``
    pre-tokenizer (no normalizer); unknown characters become ``<0xXX>`` byte tokens."""
    model = config.get("model") or {}
    if not model.get("byte_fallback"):
        return False
    normalizer, pre = config.get("normalizer"), config.get("pre_tokenizer")
    if normalizer is None:
        return bool(pre) and pre.get("type") == "Metaspace" and pre.get("replacement") == SPIECE_SPACE\
            and pre.get("prepend_scheme", "always") in ("always", "first")
    steps = normalizer.get("normalizers") if normalizer.get("type") == "Sequence" else None
    if pre is not None or not steps or len(steps) != 2:
        return False
    prepend, replace = steps
    return (prepend.get("type") == "Prepend" and prepend.get("prepend") == SPIECE_SPACE
            and replace.get("type") == "Replace" and replace.get("pattern") == {"String": " "}
            and replace.get("content") == SPIECE_SPACE)


def supported(config: dict) -> Optional[str]:
    """None when gigatoken is known to reproduce ``config``; else why not."""
    model = config.get("model") or {}
    if model.get("type") != "BPE":
        return "not a BPE model"
    if model.get("dropout") not in (None, 0, 0.0):
        return "BPE dropout"
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return "a subword prefix or suffix"
    if model.get("byte_fallback"):
        if not sentencepiece_style(config):
            return "byte fallback, not in SentencePiece's configuration"
    elif _nfc(config) is None:
        return "a normalizer other than NFC"
    elif not _byte_level(config.get("pre_tokenizer")):
        return "not a byte-level pre-tokenizer"
    for token in config.get("added_tokens") or []:
        if token.get("single_word") or token.get("lstrip") or token.get("rstrip"):
            return f"added token {token.get('content')!r} with single_word, lstrip or rstrip"
    return None


# ---------------------------------------------------------------------------------
# The encoder

def _unmap_table() -> dict:
    """``str.translate`` table from the byte-level alphabet to the bytes as Latin-1
    characters; every other Latin-1 character to one no byte maps to, so that
    ``encode("latin-1")`` fails on any character outside the alphabet."""
    table = {ord(c): chr(b) for b, c in byte_chars().items()}
    for b in range(256):
        table.setdefault(b, "\uffff")
    return table


def _token_bytes(token: str, unmap: dict) -> Optional[bytes]:
    try:
        return token.translate(unmap).encode("latin-1")
    except UnicodeEncodeError:
        return None


class _Library:
    """The fallback without a word encoder: the library's batch call."""

    def __init__(self, tokenizer):
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    def encode_batch(self, texts):
        encodings = self._encode(list(texts), add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        flat = np.fromiter((i for e in encodings for i in e.ids), dtype=_IDS, count=int(lengths.sum()))
        return flat, lengths

    def append_long(self, text, out) -> bool:
        return False


class GigatokenBPE:
    """Encodes texts for one BPE tokenizer through gigatoken, or through
    ``fallback`` (an encoder with ``encode_batch``: the word encoder; None: the
    library) where the module docstring says so, and long texts it does not take
    through ``long_fallback`` (``append_long``; default ``fallback``).

    ``parallel``: let gigatoken spread one call over its own threads (the in-memory
    runner on several cores); otherwise it encodes on the calling thread, with the GIL
    released, as a worker process with a core of its own should.

    The probe runs once, on first use or on :meth:`prepare`; ``reason`` then says why
    gigatoken is not used (None while it is).
    """

    def __init__(self, tokenizer, config_text: str, config: dict, fallback=None, parallel: bool = False,
                 long_fallback=None):
        self._tokenizer = tokenizer
        self._config_text = config_text
        self._config = config
        self._fallback = fallback if fallback is not None else _Library(tokenizer)
        self._long_fallback = long_fallback if long_fallback is not None else self._fallback
        self._parallel = parallel
        self._nfc = bool(_nfc(config))
        self._backend = None
        self._size = 0
        self._lock = threading.Lock()
        self._ready = False
        self.reason: Optional[str] = None
        self.calls = self.fallback_texts = self.reloads = 0   # for tests and benchmarks
        self._since_load, self._grown = 0, 0    # characters, and bytes grown in calls, since the load

    @classmethod
    def for_tokenizer(cls, tokenizer, config_text: str, fallback=None, parallel: bool = False,
                      long_fallback=None) -> Optional["GigatokenBPE"]:
        """The encoder, or None when gigatoken is absent or the configuration is not one
        it reproduces (checked without loading gigatoken's tokenizer: that and the probe
        wait for first use)."""
        if not available():
            return None
        try:
            config = json.loads(config_text)
        except ValueError:
            return None
        if not isinstance(config, dict):
            return None
        why = supported(config)
        if why is not None:
            return None
        return cls(tokenizer, config_text, config, fallback, parallel, long_fallback)

    @property
    def active(self) -> bool:
        """Whether gigatoken encodes (the probe passed and nothing failed since)."""
        self.prepare()
        return self._backend is not None

    def prepare(self) -> None:
        """Load gigatoken's tokenizer and run the probe, once."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            try:
                self.reason = self._load_and_probe()
            except _NOT_GIGATOKEN:
                raise
            except BaseException as exc:   # a pyo3 PanicException derives from BaseException
                self.reason = f"gigatoken failed: {type(exc).__name__}: {str(exc).strip()[:200]}"
            if self.reason is not None:
                self._backend = None
                log.info("gigatoken not used for this tokenizer: %s", self.reason)
            self._ready = True

    def _load(self):
        """gigatoken's tokenizer, from the file's bytes (never a path: no Hub look-up)."""
        from gigatoken.gigatoken_rs import load_hf_json

        return load_hf_json(self._config_text)

    def _probe(self, backend) -> Optional[str]:
        """None when ``backend`` agrees with the library (:func:`probe`), else why not."""
        return probe(self._tokenizer, backend, self._config, self._direct, self._parallel)

    def _load_and_probe(self) -> Optional[str]:
        backend = self._load()
        why = self._probe(backend)
        if why is None:
            self._backend = backend
            self._size = int(backend.vocab_size)
            self._since_load, self._grown = 0, 0
        return why

    def _recycle(self, texts: list) -> None:
        """Load gigatoken's tokenizer again when its cache has grown past the budget
        (``CACHE_BUDGET``): the same bytes, the same gigatoken, so the probe holds.
        Called after a call returns, so that nothing of this thread still holds the old
        tokenizer when it is dropped."""
        if self._grown is not None:
            grown = self._grown > CACHE_BUDGET
        else:
            self._since_load += sum(map(len, texts))
            grown = self._since_load > CACHE_CHARS
        if not grown:
            return
        with self._lock:
            if self._backend is None:
                return
            self._backend = None        # the old cache goes once the calls using it return
            try:
                self._backend = self._load()
            except _NOT_GIGATOKEN:
                raise
            except BaseException as exc:
                self._off(exc)
                return
            self.reloads += 1
            self._since_load, self._grown = 0, (None if self._grown is None else 0)   # the same measure

    def _direct(self, text: str) -> bool:
        """Whether ``text`` goes to the fallback (see the module docstring)."""
        if text.isascii():
            return False
        if outside_unicode14().search(text) is not None:
            return True
        return self._nfc and not unicodedata.is_normalized("NFC", text)

    def _directs(self, texts: list) -> list:
        """The indices of the texts of a batch that go to the fallback (``_direct``),
        asked of the whole batch: ASCII texts never go; the code points outside
        Unicode 14 in the others are found in one pass (``outside_unicode14_in``); and
        a concatenation that is NFC has every text NFC (a text's composition and
        ordering happen inside it; joining can only add changes at the joins), so
        texts are asked one by one only under NFC, when the batch is not NFC."""
        ascii = list(map(str.isascii, texts))     # O(1) a text: CPython keeps the flag
        if all(ascii):
            return []
        wide = list(compress(range(len(texts)), map(operator.not_, ascii)))
        others = [texts[i] for i in wide]
        joined = "".join(others)
        outside = [wide[k] for k in outside_unicode14_in(others, joined)]
        if not self._nfc or unicodedata.is_normalized("NFC", joined):
            return outside
        return [i for i, t in enumerate(texts) if self._direct(t)]

    def _off(self, exc: BaseException) -> None:
        self._backend = None
        self.reason = f"gigatoken failed: {type(exc).__name__}: {str(exc).strip()[:200]}"
        log.warning("gigatoken switched off for the rest of this process: %s", self.reason)

    def _gigatoken(self, texts: list):
        """(flat int32, lengths) of ``texts`` from gigatoken, or None (switched off)."""
        backend = self._backend
        if backend is None:
            return None
        try:
            before = _rss()
            rows = backend.encode_batch(texts, parallel=self._parallel)
            after = _rss()
            if before is None or after is None:
                self._grown = None
            elif self._grown is not None:
                self._grown += max(0, after - before)
            layout = rows.layout
            offsets = np.asarray(layout.offsets.data)
            ids = np.asarray(layout.content.data)
            if len(offsets) != len(texts) + 1 or offsets[0] != 0 or ids.dtype != np.uint32:
                raise ValueError(f"unexpected answer: {len(offsets)} offsets for {len(texts)} texts, {ids.dtype}")
            flat = ids[:offsets[-1]]
            if len(flat) and int(flat.max()) >= self._size:
                raise ValueError(f"an id {int(flat.max())} outside the vocabulary ({self._size})")
            lengths = np.diff(offsets).astype(np.int64)
            if len(lengths) and int(lengths.min()) < 0:
                raise ValueError("offsets out of order")
            self.calls += 1
            return flat.view(_IDS), lengths
        except _NOT_GIGATOKEN:
            raise
        except BaseException as exc:
            self._off(exc)
            return None

    def encode_batch(self, texts: Sequence[str]) -> tuple:
        """(flat ids as int32, ids per text), exactly as the tokenizer encodes them.

        Before the probe has run, a call of fewer than ``PROBE_AFTER`` characters goes
        to the fallback without running it: the launcher's template checks and an
        encoder's literals do not pay for gigatoken's set-up (workers call
        :meth:`prepare` first)."""
        texts = list(texts)
        if not self._ready and sum(map(len, texts)) < PROBE_AFTER:
            return self._fallback.encode_batch(texts)
        self.prepare()
        if self._backend is None or not texts:
            return self._fallback.encode_batch(texts)
        direct = self._directs(texts)
        if not direct:
            got = self._gigatoken(texts)
            if got is None:
                return self._fallback.encode_batch(texts)
            self._recycle(texts)
            return got
        if len(direct) == len(texts):
            self.fallback_texts += len(texts)
            return self._fallback.encode_batch(texts)
        keep = np.ones(len(texts), dtype=bool)
        keep[direct] = False
        mine = [t for t, k in zip(texts, keep.tolist()) if k]
        got = self._gigatoken(mine)
        if got is None:
            return self._fallback.encode_batch(texts)
        self._recycle(mine)
        self.fallback_texts += len(direct)
        other = self._fallback.encode_batch([texts[i] for i in direct])
        return _interleave(keep, got, other)

    def append_long(self, text: str, out) -> bool:
        """Append the ids of one long text to ``out`` (a C ``int`` array); False
        (nothing appended) when the fallback cannot and the library must encode it
        whole. gigatoken encodes a long text in one call: its working set is the ids."""
        self.prepare()
        if self._backend is not None and not self._direct(text):
            got = self._gigatoken([text])
            if got is not None:
                self._recycle([text])
                out.frombytes(np.ascontiguousarray(got[0]).astype(np.intc, copy=False).tobytes())
                return True
        return self._long_fallback.append_long(text, out)


_STATM = None   # (pid, descriptor of /proc/<pid>/statm): opened once a process


def _rss() -> Optional[int]:
    """This process's resident set in bytes, or None where ``/proc`` has no ``statm``.

    Read twice a call: the descriptor stays open (a read at offset 0 of a ``/proc``
    file gives it anew), opened again in a forked child, whose ``/proc/self`` differs."""
    global _STATM
    try:
        if _STATM is None or _STATM[0] != os.getpid():
            _STATM = (os.getpid(), os.open("/proc/self/statm", os.O_RDONLY))
        pages = int(os.pread(_STATM[1], 128, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * _PAGE_SIZE


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _interleave(keep: np.ndarray, mine: tuple, other: tuple) -> tuple:
    """Rows of ``mine`` where ``keep`` and of ``other`` elsewhere, in text order."""
    lengths = np.zeros(len(keep), dtype=np.int64)
    lengths[keep] = mine[1]
    lengths[~keep] = other[1]
    flat = np.empty(int(lengths.sum()), dtype=_IDS)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    for rows, flags in ((mine, keep), (other, ~keep)):
        ids, counts = rows
        if not len(ids):
            continue
        # Each row's destination: its text's start, plus the position inside the row.
        row_starts = starts[flags]
        inside = np.arange(len(ids)) - np.repeat(np.cumsum(counts) - counts, counts)
        flat[np.repeat(row_starts, counts) + inside] = ids
    return flat, lengths


# ---------------------------------------------------------------------------------
# The probe

_BYTE_TOKEN = re.compile(r"<0x([0-9A-F]{2})>")


def _spiece_bytes(token: str, unmap=None) -> bytes:
    """A SentencePiece-style token's bytes as gigatoken holds them: ``<0xXX>`` is the
    byte, anything else its UTF-8 (``\u2581`` included)."""
    found = _BYTE_TOKEN.fullmatch(token)
    return bytes([int(found.group(1), 16)]) if found else token.encode("utf-8")


def _expected_vocab(tokenizer, spiece: bool = False) -> Optional[dict]:
    """id -> bytes as the library numbers them: model tokens through the byte map (or,
    ``spiece``, as ``_spiece_bytes``), added tokens as their UTF-8 content. None if a
    model token is not byte-level."""
    unmap = _unmap_table()
    to_bytes = _spiece_bytes if spiece else _token_bytes
    expected = {}
    for token, i in tokenizer.get_vocab(with_added_tokens=False).items():
        raw = to_bytes(token, unmap)
        if raw is None:
            return None
        expected[int(i)] = raw
    for i, added in tokenizer.get_added_tokens_decoder().items():
        expected[int(i)] = added.content.encode("utf-8")
    return expected


def _merges(config: dict, spiece: bool = False) -> Optional[list]:
    unmap = _unmap_table()
    to_bytes = _spiece_bytes if spiece else _token_bytes
    out = []
    for merge in (config.get("model") or {}).get("merges") or []:
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if len(pair) != 2:
            return None
        left, right = to_bytes(pair[0], unmap), to_bytes(pair[1], unmap)
        if left is None or right is None:
            return None
        out.append((left, right))
    return out


def probe(tokenizer, backend, config: dict, direct=None, parallel: bool = False,
          texts: Optional[Sequence[str]] = None) -> Optional[str]:
    """None when gigatoken's ``backend`` agrees with the library's ``tokenizer``
    (vocabulary, added tokens, merges, the battery's ids); else the first difference.

    ``direct``: texts it says the fallback encodes are left out of the battery (the
    encoder never gives them to gigatoken). ``texts``: the battery (default
    :func:`probe_texts`)."""
    if getattr(tokenizer, "padding", None) is not None or getattr(tokenizer, "truncation", None) is not None:
        # The adapter's has both off; one that pads would answer GiBs of ids.
        return "the library's tokenizer pads or truncates its answers"
    spiece = sentencepiece_style(config)
    expected = _expected_vocab(tokenizer, spiece)
    if expected is None:
        return "a vocabulary entry outside the byte-level alphabet"
    why = vocab_difference(backend, expected)
    if why is not None:
        return why
    merges = _merges(config, spiece)
    if merges is None or list(backend.merges) != merges:
        return "merges differ from the library's"
    if texts is None:
        added = [t.content for t in tokenizer.get_added_tokens_decoder().values()]
        texts = probe_texts(added, vocab_texts(expected))
    if direct is not None:
        texts = [t for t in texts if not direct(t)]
    # One text a call: the library's batch call would start its thread pool, whose
    # threads' heaps (about 37 MiB) a worker that encodes with gigatoken never needs.
    want = [tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
    return first_difference(texts, want, backend.encode_batch(texts, parallel=parallel))


def vocab_difference(backend, expected: dict) -> Optional[str]:
    """None when gigatoken's vocabulary is ``expected`` (id -> bytes), id for id, else
    the first difference (the probes of both gigatoken gates)."""
    size = max(expected, default=-1) + 1
    if int(backend.vocab_size) != size:
        return f"vocabulary size {backend.vocab_size}, the library's {size}"
    vocab = backend.vocab
    if len(vocab) != len(expected):
        return f"{len(vocab)} vocabulary entries, the library's {len(expected)}"
    for i, raw in expected.items():
        if vocab.get(i) != raw:
            return f"id {i} is {vocab.get(i)!r}, the library's {raw!r}"
    return None


def first_difference(texts: Sequence[str], want: Sequence[Sequence[int]], rows) -> Optional[str]:
    """None when gigatoken's answer ``rows`` holds the library's ids ``want`` for
    ``texts``, else the first difference (the probes of both gigatoken gates)."""
    offsets = np.asarray(rows.layout.offsets.data)
    ids = np.asarray(rows.layout.content.data)
    if len(offsets) != len(texts) + 1:
        return f"{len(offsets) - 1} rows for {len(texts)} texts"
    lengths = np.fromiter(map(len, want), dtype=np.int64, count=len(want))
    flat = np.fromiter((i for row in want for i in row), dtype=np.int64, count=int(lengths.sum()))
    if np.array_equal(np.diff(offsets), lengths) and np.array_equal(ids[:offsets[-1]].astype(np.int64), flat):
        return None
    for k, row in enumerate(want):
        got = ids[offsets[k]:offsets[k + 1]].tolist()
        if got != row:
            return f"text {texts[k][:60]!r}: {got[:8]} against the library's {row[:8]}"
    return "the ids differ"
