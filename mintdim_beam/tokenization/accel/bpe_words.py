"""Byte-level BPE encoded word by word, each distinct word once.

A byte-level BPE ``tokenizer.json`` (GPT-2, GPT-NeoX/OLMo, RoBERTa and most models
trained with HF ``ByteLevelBPETokenizer``) tokenizes a text in steps that are each pure
functions of their input: optional NFC normalization, a split into words by one fixed
regular expression, a byte-to-character map of each word, and the BPE model on each
word alone. The ids of a text are therefore the concatenation of the ids of its words,
and a word's ids never depend on its neighbours. Natural text repeats words endlessly,
so this encoder splits texts itself and asks the tokenizer's own model for each distinct
word once; measured on one thread, this is 1.75x (synthetic text with a long tail of
unique words) to 4.5x (English prose) faster than ``encode_batch_fast``, whose per-call
cost is mostly building ``Encoding`` objects, offsets and an Oniguruma split. It holds
the GIL, so it pays where each worker process has a core (``UnitBuild(word_encoder=)``).

Exactness is kept by construction, and texts the construction does not cover go to the
tokenizer itself:

- the model is the tokenizer's own (``Tokenizer.model.tokenize`` on the mapped word), so
  merges, ``byte_fallback``, ``ignore_merges`` and unknown tokens behave identically;
- the split uses the ``regex`` module with the exact GPT-2 pattern of HF's ``ByteLevel``
  pre-tokenizer. ``regex`` and Oniguruma agree on every code point assigned in Unicode
  14.0 (``tests/unit/test_bpe_words.py`` checks each one); a text holding a code point outside
  that set, or a lone surrogate, is encoded by the tokenizer;
- a text holding the content of any added token (the tokenizer matches those before
  splitting) is encoded by the tokenizer;
- with an NFC normalizer, a text that NFC would change is encoded by the tokenizer (for
  Unicode-14 characters, "already NFC" is the same answer in every Unicode version);
- any other configuration (another normalizer, a ``Split`` pre-tokenizer, prefix space,
  BPE dropout, a non-BPE model) gets no word encoder at all: ``for_tokenizer`` returns
  ``None`` and the adapter encodes everything with the tokenizer;
- a word of more than ``2 * PART_BYTES`` bytes (a line of base64, a minified file, a
  run of letters without a space) is encoded in overlapping parts joined where a check
  proves the join exact (``_Parts``), else whole.

The memos are bounded (``MAX_WORDS``, ``MAX_KEY_CHARS``); when full they start again
empty, which costs a few misses and never changes an id.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from array import array
from itertools import chain
from typing import Optional, Sequence

import numpy as np
import regex

from mintdim_beam.tokenization.accel.unicode14 import ASSIGNED

#: Kept ids are a C ``int`` array's bytes (vocabularies are far below 2^31), viewed by
#: numpy with the same native type.
_ID_BYTES = array("i").itemsize
_IDS_DTYPE = np.dtype(f"=i{_ID_BYTES}")

#: HF ``ByteLevel(use_regex=True)``'s split, the GPT-2 pattern.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: Distinct pieces, and distinct chunks, kept per encoder (~25 MB of Python objects each
#: at most).
MAX_WORDS = 1 << 17

#: Longer pieces and chunks are encoded every time, never kept: text without spaces
#: (Chinese, Japanese, a long URL, a minified line) makes long chunks that hardly repeat.
MAX_KEY_CHARS = 64

#: Words of at least twice this many UTF-8 bytes are encoded in parts of about this
#: size (``_Parts``).
PART_BYTES = 1 << 14

#: Bytes by which neighbouring parts overlap: each join is chosen inside an overlap.
PART_OVERLAP = 64

#: Unicode ``White_Space``, which is ``\s`` to ``regex`` and to Oniguruma (checked
#: character by character in the tests).
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

#: A chunk: whitespace, then the non-whitespace after it; or whitespace at the end.
CHUNK = re.compile(f"[{WHITE_SPACE}]*[^{WHITE_SPACE}]+|[{WHITE_SPACE}]+")

#: Where a chunk begins after another: whitespace just after non-whitespace.
CHUNK_START = re.compile(f"(?<=[^{WHITE_SPACE}])[{WHITE_SPACE}]")

#: A long text is cut into windows of about this many characters (``encode_long``).
LONG_WINDOW = 1 << 18


def byte_chars() -> dict:
    """GPT-2's byte -> printable character map, as HF ``ByteLevel`` defines it."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1))
                 + list(range(ord("\xae"), ord("\xff") + 1)))
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


#: ``str.translate`` table from a word's UTF-8 bytes read as Latin-1 to mapped chars.
BYTE_TABLE = str.maketrans({chr(b): c for b, c in byte_chars().items()})

#: The mapped characters of the bytes that UTF-8 text can hold (every byte but 0xC0,
#: 0xC1 and 0xF5-0xFF).
UTF8_BYTE_CHARS = tuple(c for b, c in byte_chars().items() if b not in (0xC0, 0xC1) and b < 0xF5)


def _outside_unicode14() -> "re.Pattern":
    parts = []
    for start, end in ASSIGNED:
        if end > 0x7F:
            start = max(start, 0x80)
            parts.append(re.escape(chr(start)) if start == end
                         else f"{re.escape(chr(start))}-{re.escape(chr(end))}")
    # ASCII is all assigned; texts that are pure ASCII never reach this pattern.
    return re.compile("[^\x00-\x7f" + "".join(parts) + "]")


_OUTSIDE = None


def outside_unicode14():
    """The compiled pattern of a character not assigned in Unicode 14 (or a surrogate),
    made on first use; ASCII is all assigned."""
    global _OUTSIDE
    if _OUTSIDE is None:
        _OUTSIDE = _outside_unicode14()
    return _OUTSIDE


_OUTSIDE_TABLE = None
_FIRST_OUTSIDE = 0


def outside_unicode14_in(texts: list, joined: Optional[str] = None) -> list:
    """The indices of the texts holding a character ``outside_unicode14`` matches, in
    one pass over the batch: its code points (UTF-32, lone surrogates kept as their
    values) looked up in a table of every code point, built from the same ranges. A
    regex over the batch would step through its large class character by character.
    ``joined``: the texts already joined, when the caller has them."""
    global _OUTSIDE_TABLE, _FIRST_OUTSIDE
    if _OUTSIDE_TABLE is None:
        table = np.ones(0x110000, np.bool_)
        table[:0x80] = False
        for start, end in ASSIGNED:
            table[start:end + 1] = False
        _OUTSIDE_TABLE, _FIRST_OUTSIDE = table, int(np.argmax(table))
    joined = "".join(texts) if joined is None else joined
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), "<u4")
    high = codes >= _FIRST_OUTSIDE
    if np.count_nonzero(high) * 8 < len(codes):
        # Few code points above the first unassigned one (Latin text): only these are looked up.
        high = np.flatnonzero(high)
        at = high[_OUTSIDE_TABLE[codes[high]]]
    else:
        # Many (CJK, Vietnamese): one lookup of every code point costs less than picking
        # them out first (2.3x on the generated corpus's non-ASCII texts).
        at = np.flatnonzero(_OUTSIDE_TABLE[codes])
    if not len(at):
        return []
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    return np.unique(np.searchsorted(ends, at, side="right")).tolist()


def _supported(config: dict) -> Optional[bool]:
    """``None`` if the word encoder cannot reproduce ``config``, else whether NFC applies."""
    model = config.get("model") or {}
    if model.get("type") != "BPE" or model.get("dropout") not in (None, 0, 0.0):
        return None
    normalizer = config.get("normalizer")
    if normalizer is None:
        nfc = False
    elif normalizer.get("type") == "NFC":
        nfc = True
    elif normalizer.get("type") == "Sequence" and not normalizer.get("normalizers"):
        nfc = False
    else:
        return None
    pre = config.get("pre_tokenizer")
    if pre and pre.get("type") == "Sequence" and len(pre.get("pretokenizers") or []) == 1:
        pre = pre["pretokenizers"][0]
    if not pre or pre.get("type") != "ByteLevel":
        return None
    if pre.get("add_prefix_space", True) or not pre.get("use_regex", True):
        return None
    return nfc


class _Memo(dict):
    """``key -> ids`` computed on first use; starts again empty past ``max_keys`` keys.

    Keys longer than ``MAX_KEY_CHARS`` are computed and not kept.

    A ``dict`` with ``__missing__``, so a whole batch is looked up in one C-level
    ``map`` and Python runs only for the misses. ``clear()`` is one atomic step under the
    GIL: a thread that loses a key to it computes the key again, nothing worse.
    """

    __slots__ = ("_compute", "_max_keys")

    def __init__(self, compute, max_keys: int = MAX_WORDS):
        super().__init__()
        self._compute = compute
        self._max_keys = max_keys

    def __missing__(self, key):
        value = self._compute(key)
        if len(key) <= MAX_KEY_CHARS:
            if len(self) >= self._max_keys:
                self.clear()
            self[key] = value
        return value


class _Parts:
    """The ids of one very long word, from overlapping parts, exactly as the model gives
    them for the whole word.

    The model merges a word on one thread, and more slowly per byte the longer the word:
    1 MB of letters without a space took 0.27-0.30 s of CPU whole and 0.20 s in 16 KB
    parts on one thread. The parts go to ``encode_batch_fast`` in two calls (the first
    two parts, then the rest; see ``ids``), which also spread them over the tokenizer's
    threads.

    HF's BPE merges a word by repeatedly taking, from a heap, the adjacent pair of
    symbols with the lowest merge rank (leftmost first). Two facts make parts exact:

    1. A merge never crosses a boundary between two of the final tokens, so every run of
       consecutive final tokens is the BPE of its own text: alone, that text sees the
       same merges in the same order.
    2. If ``A`` is the BPE of ``x``, ``B`` the BPE of ``y``, and the last token ``a`` of
       ``A`` and the first token ``b`` of ``B`` encode ``a + b`` as ``[a, b]``, then
       ``A + B`` is the BPE of ``x + y``. Until a merge crosses a token boundary of
       ``A + B``, every token's text evolves as it does alone; the first such merge
       would be the smallest heap entry at the same point of ``x`` alone, of ``y`` alone
       or of ``a + b`` alone, and none of these merges across its token boundaries.

    So each part (the text between two cuts, plus ``PART_OVERLAP`` bytes on each side)
    is encoded by the tokenizer's own model, and each join is made in an overlap, at a
    position where both neighbouring parts have a token boundary and the two tokens
    around it pass the check of (2): by (1), the tokens of a part up to or from such a
    position are the BPE of that text. Positions nearest the middle of the overlap come
    first; where none passes, ``ids`` returns None and the caller encodes the word whole.

    The argument needs symbols that do not depend on their position (no
    ``continuing_subword_prefix`` or ``end_of_word_suffix``), every byte in the
    vocabulary (no unknown or fallback symbols, which fuse across a cut), and parts
    longer than any token (a part is never a vocabulary word that ``ignore_merges``
    would return unmerged). "Every byte" means every byte UTF-8 text can hold:
    GPT-NeoX's vocabulary, for one, has no token for 0xC0, 0xC1 or 0xF5-0xFF. The parts
    go through a tokenizer around the same model that only maps bytes to characters (no
    normalizer, split or added token), so each part is one word.
    """

    def __init__(self, tokenizer, part_bytes: int = PART_BYTES, overlap: int = PART_OVERLAP):
        self._tokenizer = tokenizer
        self._part = part_bytes
        self._overlap = overlap
        self._lock = threading.Lock()
        self._ready = False
        self._plain = None      # the model behind a byte map alone; None: no parts
        self._lengths = None    # bytes per token id
        self._strings = None    # mapped text per token id
        self._pairs: dict = {}  # (a, b) -> whether the model encodes a + b as [a, b]

    @staticmethod
    def possible(config: dict) -> bool:
        model = config.get("model") or {}
        return not model.get("continuing_subword_prefix") and not model.get("end_of_word_suffix")

    def _prepare(self) -> None:
        # Once per process and only for a long word: a build without one pays nothing
        # (the vocabulary's strings take 0.02 s for GPT-NeoX's 50k tokens).
        from tokenizers import Tokenizer
        from tokenizers.pre_tokenizers import ByteLevel

        with self._lock:
            if self._ready:
                return
            vocab = self._tokenizer.get_vocab(with_added_tokens=False)
            size = max(vocab.values(), default=-1) + 1
            strings = [""] * size
            for token, i in vocab.items():
                strings[i] = token
            lengths = np.fromiter(map(len, strings), dtype=np.int64, count=size)
            if size and all(c in vocab for c in UTF8_BYTE_CHARS) and int(lengths.max()) < self._part:
                plain = Tokenizer(self._tokenizer.model)   # the same model, not a copy of it
                plain.pre_tokenizer = ByteLevel(add_prefix_space=False, use_regex=False)
                self._plain, self._lengths, self._strings = plain, lengths, strings
            self._ready = True

    def _joins(self, a: int, b: int) -> bool:
        ok = self._pairs.get((a, b))
        if ok is None:
            if len(self._pairs) >= MAX_WORDS:
                self._pairs.clear()
            ok = self._pairs[a, b] = [t.id for t in self._tokenizer.model.tokenize(
                self._strings[a] + self._strings[b])] == [a, b]
        return ok

    def ids(self, word: str) -> Optional[bytes]:
        """The word's ids as int32 bytes, or None: too short, or no exact join found."""
        raw = word.encode("utf-8")
        n, size, overlap = len(raw), self._part, self._overlap
        if n < 2 * size:
            return None
        if not self._ready:
            self._prepare()
        if self._plain is None:
            return None
        count = n // size   # the last part takes the rest: every part has >= size bytes

        def char_start(at: int) -> int:
            while 0 < at < n and 0x80 <= raw[at] < 0xC0:   # inside a UTF-8 sequence
                at -= 1
            return at

        bounds = [(0 if i == 0 else char_start(i * size - overlap),
                   n if i == count - 1 else char_start((i + 1) * size + overlap)) for i in range(count)]
        encode = getattr(self._plain, "encode_batch_fast", self._plain.encode_batch)   # no offsets
        ids, ends = [], []    # per part: its ids, and the byte offset where each token ends

        def encode_parts(start: int, stop: int) -> None:
            texts = [raw[a:b].decode("utf-8") for a, b in bounds[start:stop]]
            for (a, _), encoding in zip(bounds[start:stop], encode(texts, add_special_tokens=False)):
                part = np.asarray(encoding.ids, dtype=_IDS_DTYPE)
                ids.append(part)
                ends.append(a + np.cumsum(self._lengths[part]))

        # The first two parts go alone: where their join fails, the word is encoded whole
        # having paid for two parts, not all of them. Joins fail on a long run of one
        # character whose vocabulary has a token of many of it (GPT-NeoX: 512 spaces):
        # each part then tokenizes the run in its own phase.
        encode_parts(0, 2)
        kept, first = [], 0   # first: where the kept tokens of the current part start
        for i in range(count - 1):
            if i == 1:
                encode_parts(2, count)
            lo, hi = bounds[i + 1][0], bounds[i][1]          # the overlap of parts i and i + 1
            left_ends = ends[i]
            right_starts = np.concatenate(([lo], ends[i + 1][:-1]))
            left = np.flatnonzero((left_ends >= lo) & (left_ends <= hi))
            left = left[left >= first]
            right = np.flatnonzero(right_starts <= hi)
            at, li, ri = np.intersect1d(left_ends[left], right_starts[right], assume_unique=True,
                                        return_indices=True)
            for j in np.argsort(np.abs(at - (i + 1) * size), kind="stable"):
                last, after = int(left[li[j]]), int(right[ri[j]])
                if self._joins(int(ids[i][last]), int(ids[i + 1][after])):
                    kept.append(ids[i][first:last + 1])
                    first = after
                    break
            else:
                return None
        kept.append(ids[-1][first:])
        return np.concatenate(kept).tobytes()


class ByteLevelWords:
    """Encodes texts for one byte-level BPE tokenizer; see the module docstring.

    Two memos: *pieces* (the GPT-2 split's matches) map to the model's ids, and *chunks*
    (a run of whitespace and the run of non-whitespace after it, or trailing whitespace)
    map to the ids of their pieces. The split never matches across a non-whitespace ->
    whitespace boundary and never looks behind, so a text's pieces are its chunks'
    pieces, each chunk split alone; cutting chunks needs only the whitespace class (the
    ``re`` module, twice as fast as the full split), and a text repeats chunks as often
    as it repeats words.
    """

    def __init__(self, tokenizer, added_contents: Sequence[str], nfc: bool,
                 parts: Optional[_Parts] = None, max_words: int = MAX_WORDS):
        self._tokenizer = tokenizer
        self._nfc = nfc
        self._parts = parts
        # Added tokens grouped by first character: a text is scanned for a token only
        # when it holds that character at all.
        by_first: dict = {}
        for content in added_contents:
            if content:
                by_first.setdefault(content[0], []).append(content)
        self._added = sorted(by_first.items())
        tokenize = tokenizer.model.tokenize
        split = regex.compile(GPT2_PATTERN).findall

        # Ids are kept as raw int32 bytes: a text's ids are then one ``bytes.join`` of
        # its chunks' values and one numpy view, not a Python int per token, and a
        # kept word costs a few bytes per id instead of a list of int objects.
        long_chars = PART_BYTES // 2   # fewer characters cannot make 2 * PART_BYTES bytes
        long_ids = parts.ids if parts is not None else None

        def piece_ids(piece: str) -> bytes:
            if long_ids is not None and len(piece) >= long_chars:
                ids = long_ids(piece)
                if ids is not None:
                    return ids
            return array("i", [t.id for t in tokenize(
                piece.encode("utf-8").decode("latin-1").translate(BYTE_TABLE))]).tobytes()

        pieces = _Memo(piece_ids, max_words)

        def chunk_ids(chunk: str) -> bytes:
            # Most chunks are one word, " ?\p{L}+" (``str.isalpha`` is ``\p{L}`` on
            # every Unicode-14 code point, tested): one piece, kept once, as a chunk.
            if chunk[1:].isalpha() and (chunk[0] == " " or chunk[0].isalpha()):
                return piece_ids(chunk)
            parts = split(chunk)
            if len(parts) == 1:
                return piece_ids(chunk)
            return b"".join(map(pieces.__getitem__, parts))

        self._pieces = pieces
        self._chunks = _Memo(chunk_ids, max_words)
        self._cut = CHUNK.findall

    @classmethod
    def for_tokenizer(cls, tokenizer, config_text: str) -> Optional["ByteLevelWords"]:
        """The word encoder for a loaded HF tokenizer and its JSON, or ``None``."""
        try:
            config = json.loads(config_text)
        except ValueError:
            return None
        nfc = _supported(config)
        if nfc is None:
            return None
        added = [t.get("content", "") for t in config.get("added_tokens") or []]
        parts = _Parts(tokenizer) if _Parts.possible(config) else None
        return cls(tokenizer, added, nfc, parts)

    def _direct(self, text: str) -> bool:
        """Whether ``text`` must be encoded by the tokenizer itself."""
        for first, contents in self._added:
            if first in text and any(c in text for c in contents):
                return True
        if text.isascii():
            return False
        if outside_unicode14().search(text) is not None:
            return True
        return self._nfc and not unicodedata.is_normalized("NFC", text)

    def encode_batch(self, texts: Sequence[str]) -> tuple:
        """(flat ids as int32, ids per text), exactly as the tokenizer encodes them."""
        cut = self._cut
        direct = self._direct
        chunks_per: list = []
        direct_at: list = []
        for i, text in enumerate(texts):
            if direct(text):
                direct_at.append(i)
                chunks_per.append(())
            else:
                chunks_per.append(cut(text))
        ids_of = list(map(self._chunks.__getitem__, chain.from_iterable(chunks_per)))
        per_chunk = np.fromiter(map(len, ids_of), dtype=np.int64, count=len(ids_of)) // _ID_BYTES
        flat = np.frombuffer(b"".join(ids_of), dtype=_IDS_DTYPE)
        chunk_counts = np.fromiter(map(len, chunks_per), dtype=np.int64, count=len(chunks_per))
        token_ends = np.concatenate(([0], np.cumsum(per_chunk)))[np.cumsum(chunk_counts)]
        lengths = np.diff(token_ends, prepend=0)
        if direct_at:
            flat, lengths = self._merge_direct(texts, direct_at, flat, lengths)
        return flat, lengths

    def encode_long(self, text: str, window: int = LONG_WINDOW) -> Optional[np.ndarray]:
        """The ids of one long text as ``encode_batch`` gives them (int32), or None when
        the tokenizer must encode it whole (:meth:`append_long`)."""
        out = array("i")
        return np.frombuffer(out, dtype=_IDS_DTYPE) if self.append_long(text, out, window) else None

    def append_long(self, text: str, out: array, window: int = LONG_WINDOW) -> bool:
        """Append the ids of one long text to ``out`` (a C ``int`` array) as
        ``encode_batch`` gives them; False (nothing appended) when the tokenizer must
        encode it whole.

        The text is cut into windows at chunk starts, so its list of chunks (about 60
        bytes a word) never exists whole: the chunks of the text are the windows'
        chunks in order, each looked up in the same memo, so the ids are the same.
        Each window's ids go straight to ``out``, which grows in place and which numpy
        views without a copy: a huge text's ids exist once (as a list of parts joined
        they existed twice, and once more joined to the other texts of its call)."""
        if self._direct(text):
            return False
        start, n = 0, len(text)
        while start < n:
            found = CHUNK_START.search(text, start + window) if start + window < n else None
            stop = found.start() if found is not None else n
            out.frombytes(b"".join(map(self._chunks.__getitem__, self._cut(text[start:stop]))))
            start = stop
        return True

    def _merge_direct(self, texts, direct_at, flat, lengths):
        tok = self._tokenizer
        encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
        encodings = encode([texts[i] for i in direct_at], add_special_tokens=False)
        pieces = []
        starts = np.concatenate(([0], np.cumsum(lengths)))
        at = 0
        for i, enc in zip(direct_at, encodings):
            pieces.append(flat[starts[at]:starts[i]])
            ids = np.asarray(enc.ids, dtype=flat.dtype)
            pieces.append(ids)
            lengths[i] = len(ids)
            at = i + 1
        pieces.append(flat[starts[at]:])
        return np.concatenate(pieces), lengths
