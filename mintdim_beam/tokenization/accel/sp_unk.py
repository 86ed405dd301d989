"""Source substrings of a SentencePiece model's UNK tokens, without encoding twice.

The UNK audit needs, for every UNK token, the source text it stands for. The general
way is a second encode of each text holding one, to serialized protos that carry every
piece's byte offsets, parsed in Python: on text a model cannot spell (Vietnamese or CJK
with an English vocabulary) that costs more than the encoding itself.

For a Unigram model the answer follows from the text alone. Its encoder puts an UNK
node on a character exactly when no usable single-character piece matches there, and
the processor merges consecutive UNK pieces into one. If every character of every
usable piece is itself a usable single-character piece ("known"), no piece can cover
an unknown character, so the path's UNK tokens are, in order, exactly the maximal runs
of unknown characters of the *normalized* text. Their source substrings come from the
normalizer's own offsets (normalized character -> source character), the same mapping
the protos' offsets are made from. A normalize call is a fraction of an encode, and
the runs are one regular-expression split. A text the normalizer changed only in its
whitespace needs no offsets at all (sentencepiece refuses rules that map a string to
itself, so the rest was copied character by character). Measured with the T5 model on
the benchmark corpus, one thread: 0.8-1.3 s per 100 MB against 8-9.5 s for the protos,
while encoding the same text takes 6-9 s (``benchmarks/accelerators.py``).

:func:`unk_runs` checks the model's type and that property once, and the runs finder
checks itself against the protos on probe texts; per text, a run count that differs
from the number of UNK tokens sends that text to the proto path
(``SentencePieceTokenizer.unk_column_at``). Any other model (BPE, word, char) keeps
the proto path, and so does every model when the build's ``accelerators`` option is off.
"""

from __future__ import annotations

import re
from itertools import accumulate, chain
from typing import Callable, Optional

import numpy as np

from mintdim_beam.tokenization.sp_model import UNIGRAM, read_model
from mintdim_beam.tokenization.unk_rows import CharColumn

#: Normalizers whose rule maps sentencepiece generates from Unicode (NFKC, case folding,
#: NMT clean-up): every rule changes the text it matches. A user-defined rule table may
#: hold any rule, so only these take the aligned path below.
BUILTIN_NORMALIZERS = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")

# The Latin letters of its Vietnamese greeting are escaped (caf\xe9, ch\xe0o th\u1ebf gi\u1edbi): the
# package's source spells Vietnamese only in the errors layer's wording.
_PROBE = "Hello {world} ^^ — naïve caf\xe9 你好, xin ch\xe0o th\u1ebf gi\u1edbi \u3000ｆｕｌｌ  end\u200b.\n~`|<>"
#: Texts whose only change is whitespace, with UNK runs at its edges.
_WHITESPACE_PROBES = ("a{\n\n}b", "  {a", "x {\t\n }y~", "{ ", "a\u3000{\u3000}\xa0", "q{\r\n}z <\t>")

#: A text longer than this many characters is normalized with offsets window by window
#: (:func:`_window_bounds`), where the model allows it (:func:`_local_at_spaces`):
#: sentencepiece returns the offsets as a list of Python ints, about 36 bytes a
#: character, which for one 200 MB line is many times the line.
WINDOW = 1 << 18
#: Where a window may end: before a run of spaces with printable ASCII on both sides.
_CUT = re.compile(r"(?<=[!-~]) +(?=[!-~])")
_PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]


def unk_runs(sp, proto_substrings: Callable) -> Optional[Callable[[str], list]]:
    """A function ``text -> [source substring of each UNK token, in order]``, or None.

    Its ``column(texts)`` attribute gives the same for many texts at once, as
    ``(CharColumn of every text's substrings in order, the text index of each)``.

    None when the argument above does not hold for this model: not Unigram, byte
    fallback on, a usable piece holding a character with no piece of its own, a
    sentencepiece release without ``normalize(..., with_offsets=True)``, or a probe
    text on which the runs differ from ``proto_substrings`` (the reference path:
    ``(texts, positions) -> substrings``).
    """
    facts = read_model(sp.serialized_model_proto())
    if facts is None or facts.model_type != UNIGRAM or facts.byte_fallback:
        return None
    normalizer = facts.normalizer
    pieces = sp.id_to_piece(list(range(sp.get_piece_size())))

    def usable(i: int) -> bool:     # a piece the encoder may emit (in its trie, not unused)
        return not (sp.is_unknown(i) or sp.is_control(i) or sp.is_unused(i) or sp.is_byte(i))

    known = {p for i, p in enumerate(pieces) if len(p) == 1 and usable(i)}
    # Only pieces holding a character outside ``known`` need their type looked up.
    unknown = set("".join(pieces)) - known
    if not known or any(usable(i) for i, p in enumerate(pieces) if not unknown.isdisjoint(p)):
        return None
    unknown_class = "[^" + _char_class(known) + "]+"
    split = re.compile("(" + unknown_class + ")").split
    findall = re.compile(unknown_class).findall
    normalize = sp.normalize
    # The aligned path: a text the normalizer changed only in its whitespace (escaped
    # as "▁", runs of it collapsed to one, leading and trailing whitespace dropped, the
    # dummy prefix added) needs no offsets, because no run holds whitespace: each run
    # *is* its source substring. (A kept "▁" stands at its whitespace run's first
    # character, and trailing whitespace belongs to no piece; the probes below check
    # both against the protos.) That holds when no other rule matched: a rule that left
    # its match unchanged would only move offsets, and the built-in normalizers have
    # none. "▁" must be known so that no run holds an escaped space.
    aligned = normalizer in BUILTIN_NORMALIZERS and "\u2581" in known

    known_table = np.zeros(0x110000, bool)
    known_table[[ord(c) for c in known]] = True
    windows_ok: list = []

    def local() -> bool:
        """:func:`_local_at_spaces` for this model, checked when a huge text first comes."""
        if not windows_ok:
            windows_ok.append(_local_at_spaces(normalize))
        return windows_ok[0]

    def make_runs(collapsed: bool):
        def unchanged(text: str, normalized: str) -> bool:
            """Whether the normalizer changed ``text`` only in its whitespace."""
            # Most texts have single spaces only: escaping them is all the check needs.
            if "\n" not in text and "  " not in text and text[:1] != " " and text[-1:] != " ":
                plain = text.replace(" ", "\u2581")
                if normalized == plain or normalized == "\u2581" + plain:
                    return True
            if collapsed:
                plain = "\u2581".join(text.split())
                return normalized == plain or normalized == "\u2581" + plain
            return False

        def with_offsets(text: str) -> list:
            if len(text) > WINDOW and local():
                bounds = _window_bounds(text, WINDOW)
                if len(bounds) > 2:
                    return [s for a, b in zip(bounds, bounds[1:]) for s in whole_with_offsets(text[a:b])]
            return whole_with_offsets(text)

        def whole_with_offsets(text: str) -> list:
            normalized, offsets = normalize(text, with_offsets=True)
            parts = split(normalized)       # known, unknown, known, ..., known
            if len(parts) == 1:
                return []
            ends = list(accumulate(map(len, parts)))
            return [text[offsets[ends[i - 1]]:offsets[ends[i]]] for i in range(1, len(parts), 2)]

        def runs(text: str) -> list:
            if aligned and len(text) <= WINDOW:
                normalized = normalize(text)
                if unchanged(text, normalized):
                    return findall(normalized)
            return with_offsets(text)

        def column(texts: list) -> tuple:
            """``(CharColumn of every text's runs, in order; the text of each run)``."""
            plain: list = []
            other: list = []
            parts, owners = [], []
            if aligned:
                # A huge text goes window by window (with_offsets), not whole.
                normalized = {i: normalize(text) for i, text in enumerate(texts) if len(text) <= WINDOW}
                for i, text in enumerate(texts):
                    (plain if i in normalized and unchanged(text, normalized[i]) else other).append(i)
            else:
                other = list(range(len(texts)))
            if plain:
                found, owner = _unknown_runs([normalized[i] for i in plain], known_table)
                parts.append(found)
                owners.append(np.asarray(plain, np.int64)[owner])
            if other:
                found = [with_offsets(texts[i]) for i in other]
                parts.append(CharColumn.of(chain.from_iterable(found)))
                owners.append(np.repeat(np.asarray(other, np.int64), [len(f) for f in found]))
            if len(parts) == 1:
                return parts[0], owners[0]
            if not parts:
                return CharColumn(), np.zeros(0, np.int64)
            owner = np.concatenate(owners)
            order = np.argsort(owner, kind="stable")
            return CharColumn.concat(parts).take(order), owner[order]

        runs.column = column
        return runs

    probes = (_PROBE, "".join(sorted(known))[:200] + _PROBE, "x", *_WHITESPACE_PROBES)
    try:
        unk_id = sp.unk_id()
        wanted = []
        for probe in probes:
            ids = sp.encode(probe)
            wanted.append(proto_substrings([probe], [[k for k, t in enumerate(ids) if t == unk_id]]))
        # Whitespace collapsed without offsets if the probes agree, else only spaces.
        flat = [s for w in wanted for s in w]
        owners = [k for k, w in enumerate(wanted) for _ in w]
        for runs in (make_runs(True), make_runs(False)):
            if [runs(probe) for probe in probes] == wanted:
                found, owner = runs.column(list(probes))
                if found.tolist() == flat and owner.tolist() == owners:
                    return runs
    except (TypeError, ValueError, RuntimeError):   # no normalize offsets in this release
        return None
    return None


def _window_bounds(text: str, size: int) -> list:
    """``[0, ..., len(text)]``: windows of at least ``size`` characters (the last aside),
    each ending at the first place :data:`_CUT` allows from there."""
    bounds = [0]
    while len(text) - bounds[-1] > size:
        found = _CUT.search(text, bounds[-1] + size)
        if found is None:
            break
        bounds.append(found.start())
    bounds.append(len(text))
    return bounds


def _local_at_spaces(normalize) -> bool:
    """Whether normalizing a text in windows cut as :data:`_CUT` allows gives the whole's
    normalized text and offsets: for every pair of printable ASCII characters ``a`` and
    ``b`` and runs of one to three spaces, ``a`` and the run with ``b`` normalized apart
    must give the whole's characters, each at the whole's source offset (the second
    window's leading "▁", its dummy prefix standing for the run, at the run's start,
    where the first window ends). Then every UNK run and its source substring are the
    same (no run holds "▁"). The built-in normalizers have this property: each collapses
    a run of spaces into one "▁" and adds one before the text.
    """
    try:
        spaces = (" ", "  ", "   ")
        n = len(_PRINTABLE)
        left = normalize(_PRINTABLE, with_offsets=True)
        right = normalize([run + b for run in spaces for b in _PRINTABLE], with_offsets=True)
        whole = normalize([a + run + b for run in spaces for a in _PRINTABLE for b in _PRINTABLE],
                          with_offsets=True)
        for r in range(len(spaces)):
            for i in range(n):
                text_1, offsets_1 = left[i]
                for j in range(n):
                    text_2, offsets_2 = right[r * n + j]
                    text_w, offsets_w = whole[(r * n + i) * n + j]
                    if text_w != text_1 + text_2 or offsets_w != offsets_1 + [1 + o for o in offsets_2[1:]]:
                        return False
        return True
    except (TypeError, ValueError, RuntimeError):
        return False


def _unknown_runs(normalized: list, known_table: np.ndarray) -> tuple:
    """The maximal runs of characters outside ``known_table`` of each normalized text:
    ``(CharColumn of the runs in order, the text of each run)``.

    All texts at once, with numpy over their code points (:func:`_code_points`), runs
    cut where the table lookup changes. No Python string is made per run.
    """
    codes, starts = _code_points(normalized)
    return _runs(codes, starts, ~known_table[codes])


def _code_points(texts: list) -> tuple:
    """``(code points of the texts joined by "▁", where each text starts)``.

    "▁" is known to every model this module serves, so no run spans two texts.
    """
    codes = np.frombuffer("\u2581".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32)
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    return codes, np.cumsum(lengths + 1) - 1 - lengths


def _runs(codes: np.ndarray, starts: np.ndarray, unknown: np.ndarray) -> tuple:
    """The maximal runs of ``codes`` where ``unknown`` holds, and the text (by ``starts``)
    of each."""
    padded = np.zeros(len(unknown) + 2, bool)
    padded[1:-1] = unknown
    edges = np.flatnonzero(padded[1:] != padded[:-1])   # a run's first, then its stop
    first, stops = edges[0::2], edges[1::2]
    owner = np.searchsorted(starts, first, side="right") - 1
    return CharColumn(codes[unknown], np.cumsum(stops - first)), owner


def _char_class(chars) -> str:
    """A regular-expression character class body matching exactly ``chars``, as ranges."""
    points = sorted(map(ord, chars))
    ranges: list = []
    for c in points:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                   for a, b in ranges)
