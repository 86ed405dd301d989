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
itself, so the rest was copied character by character), and a text holding no
character any of the model's rules involves (:func:`rule_chars`, read from the rule
map itself) needs no normalize call either: only its whitespace could change.

:func:`unk_runs` checks the model's type and that property once, and the runs finder
checks itself against the protos on a probe text; per text, a run count that differs
from the number of UNK tokens sends that text to the proto path. Any other model
(BPE, word, char) keeps the proto path.
"""

from __future__ import annotations

import re
from itertools import accumulate, chain
from typing import Callable, Optional

import numpy as np

from .shard_format import ragged_gather_index
from .unk_rows import CharColumn

#: TrainerSpec.model_type values (sentencepiece_model.proto).
UNIGRAM = 1

#: Normalizers whose rule maps sentencepiece generates from Unicode (NFKC, case folding,
#: NMT clean-up): every rule changes the text it matches. A user-defined rule table may
#: hold any rule, so only these take the aligned path below.
BUILTIN_NORMALIZERS = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")

_PROBE = "Hello {world} ^^ — naïve café 你好, xin chào thế giới \u3000ｆｕｌｌ  end\u200b.\n~`|<>"
#: Texts whose only change is whitespace, with UNK runs at its edges.
_WHITESPACE_PROBES = ("a{\n\n}b", "  {a", "x {\t\n }y~", "{ ", "a\u3000{\u3000}\xa0", "q{\r\n}z <\t>")


def model_facts(data: bytes) -> tuple[int, bool, str]:
    """``(trainer_spec.model_type, trainer_spec.byte_fallback, normalizer_spec.name)``.

    Read from the protobuf wire format in one pass: the ``sentencepiece_model_pb2``
    module shipped with sentencepiece may need a newer protobuf runtime than the one
    installed (Beam pins its own), and three fields do not justify a second protobuf
    stack.
    """
    kind, byte_fallback, normalizer = UNIGRAM, False, ""
    for number, value in _fields(data):
        if number == 2 and isinstance(value, bytes):          # ModelProto.trainer_spec
            for inner, v in _fields(value):
                if inner == 3 and isinstance(v, int):         # TrainerSpec.model_type
                    kind = v
                elif inner == 35 and isinstance(v, int):      # TrainerSpec.byte_fallback
                    byte_fallback = bool(v)
        elif number == 3 and isinstance(value, bytes):        # ModelProto.normalizer_spec
            for inner, v in _fields(value):
                if inner == 1 and isinstance(v, bytes):       # NormalizerSpec.name
                    normalizer = v.decode("utf-8", "replace")
    return kind, byte_fallback, normalizer


def _fields(data: bytes):
    """``(field number, value)`` of one protobuf message: ints for varints, bytes else."""
    pos, end = 0, len(data)
    while pos < end:
        key = data[pos]
        if key < 0x80 and key & 7 == 2 and pos + 1 < end and data[pos + 1] < 0x80:
            # The common case, 32k times in a model: a short length-delimited field.
            number, size = key >> 3, data[pos + 1]
            value, pos = data[pos + 2:pos + 2 + size], pos + 2 + size
        else:
            key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _varint(data, pos)
            elif wire == 1:
                value, pos = data[pos:pos + 8], pos + 8
            elif wire == 2:
                size, pos = _varint(data, pos)
                value, pos = data[pos:pos + size], pos + size
            elif wire == 5:
                value, pos = data[pos:pos + 4], pos + 4
            else:
                raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > end:
            raise ValueError("truncated protobuf message")
        yield number, value


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated protobuf varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def unk_runs(sp, data: bytes, proto_substrings: Callable) -> Optional[Callable[[str], list]]:
    """A function ``text -> [source substring of each UNK token, in order]``, or None.

    Its ``column(texts)`` attribute gives the same for many texts at once, as
    ``(CharColumn of every text's substrings in order, the text index of each)``.

    None when the argument above does not hold for this model: not Unigram, byte
    fallback on, a usable piece holding a character with no piece of its own, a
    sentencepiece release without ``normalize(..., with_offsets=True)``, or a probe
    text on which the runs differ from ``proto_substrings`` (the reference path:
    ``(texts, positions) -> substrings``).
    """
    try:
        kind, byte_fallback, normalizer = model_facts(data)
    except (ValueError, IndexError):
        return None
    if kind != UNIGRAM or byte_fallback:
        return None
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
    # The extension's own call, without the wrapper's checks (a tenth of the audit's
    # time on text the model cannot spell); the probes below check it too.
    normalize_plain = getattr(getattr(sp, "_processor", None), "_Normalize", None) or normalize
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
    # Texts no normalization rule can touch skip the normalizer altogether: their runs
    # are the runs of the text itself, with spaces known (``untouched``): a space only
    # becomes a "▁" or goes, and no run holds either.
    classes = None
    if aligned:
        touched = rule_chars(data)
        if touched is not None and not touched[ord(" ")]:
            untouched = known_table.copy()
            untouched[ord(" ")] = True
            # One lookup per code point answers both questions: bit 0, in a run
            # (neither a known character nor a space); bit 1, some rule involves it.
            classes = (~untouched).view(np.uint8) | (touched.view(np.uint8) << 1)

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
            normalized, offsets = normalize(text, with_offsets=True)
            parts = split(normalized)       # known, unknown, known, ..., known
            if len(parts) == 1:
                return []
            ends = list(accumulate(map(len, parts)))
            return [text[offsets[ends[i - 1]]:offsets[ends[i]]] for i in range(1, len(parts), 2)]

        def runs(text: str) -> list:
            if aligned:
                normalized = normalize_plain(text)
                if unchanged(text, normalized):
                    return findall(normalized)
            return with_offsets(text)

        def column(texts: list) -> tuple:
            """``(CharColumn of every text's runs, in order; the text of each run)``."""
            plain: list = []
            other: list = []
            parts, owners = [], []
            rest = list(range(len(texts)))
            if classes is not None and texts:
                # One pass over every text's code points: the texts without a character
                # any rule involves take their runs from themselves.
                codes, starts, ends = _code_points(texts)
                kind = classes[codes]
                at = np.flatnonzero(kind >= 2)
                text = np.searchsorted(starts, at, side="right") - 1
                clean = np.ones(len(texts), bool)
                clean[text[at < ends[text]]] = False     # not the "▁" that joins two texts
                if clean.any():
                    found, owner = _runs(codes, starts, (kind & 1).view(bool))
                    keep = clean[owner]
                    if not keep.all():
                        found, owner = found.take(np.flatnonzero(keep)), owner[keep]
                    parts.append(found)
                    owners.append(owner)
                    rest = np.flatnonzero(~clean).tolist()
            if aligned:
                normalized = {i: normalize_plain(texts[i]) for i in rest}
                for i in rest:
                    (plain if unchanged(texts[i], normalized[i]) else other).append(i)
            else:
                other = rest
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


def _unknown_runs(normalized: list, known_table: np.ndarray) -> tuple:
    """The maximal runs of characters outside ``known_table`` of each normalized text:
    ``(CharColumn of the runs in order, the text of each run)``.

    All texts at once, with numpy over their code points (:func:`_code_points`), runs
    cut where the table lookup changes. No Python string is made per run.
    """
    codes, starts, _ = _code_points(normalized)
    return _runs(codes, starts, ~known_table[codes])


def _code_points(texts: list) -> tuple:
    """``(code points of the texts joined by "▁", where each text starts, where it ends)``.

    "▁" is known to every model this module serves, so no run spans two texts.
    """
    codes = np.frombuffer("\u2581".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32)
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    ends = np.cumsum(lengths + 1) - 1
    return codes, ends - lengths, ends


def _runs(codes: np.ndarray, starts: np.ndarray, unknown: np.ndarray) -> tuple:
    """The maximal runs of ``codes`` where ``unknown`` holds, and the text (by ``starts``)
    of each."""
    padded = np.zeros(len(unknown) + 2, bool)
    padded[1:-1] = unknown
    edges = np.flatnonzero(padded[1:] != padded[:-1])   # a run's first, then its stop
    first, stops = edges[0::2], edges[1::2]
    owner = np.searchsorted(starts, first, side="right") - 1
    return CharColumn(codes[unknown], np.cumsum(stops - first)), owner


def rule_chars(data: bytes) -> Optional[np.ndarray]:
    """A table of the code points some normalization rule of the model can involve, or
    None if the model's normalizer is not one this can read.

    The rules are the keys of the normalizer spec's precompiled character map: a
    darts-clone double array over the keys' UTF-8 bytes. A character is involved if it
    is a whole key (a rule maps it) or stands after the first character of a key (so a
    rule may match across it, like "e" + U+0301). A text without such characters is left
    as it is by every rule, since a match needs a key's whole first character to be a
    key of its own or to be followed by one of its later characters; only the
    whitespace rules (escape, collapse, dummy prefix) change it. Whitespace escaping must
    be on (spaces become the known "▁"). The whole trie is walked level by level, all
    nodes of a level at once; its nodes are shared between keys (it is a word graph),
    so a node is kept once per partial character.
    """
    charsmap, escape = b"", True
    for number, value in _fields(data):
        if number == 3 and isinstance(value, bytes):          # ModelProto.normalizer_spec
            for inner, v in _fields(value):
                if inner == 2 and isinstance(v, bytes):       # precompiled_charsmap
                    charsmap = v
                elif inner == 5 and isinstance(v, int):       # escape_whitespaces
                    escape = bool(v)
    if not escape:
        return None
    table = np.zeros(0x110000, bool)
    if not charsmap:
        return table
    if len(charsmap) < 4:
        return None
    size = int.from_bytes(charsmap[:4], "little")
    if size % 4 or size + 4 > len(charsmap) or not size:
        return None
    units = np.frombuffer(charsmap[4:4 + size], "<u4").astype(np.int64)
    offset = (units >> 10) << ((units & (1 << 9)) >> 6)
    label = units & ((1 << 31) | 0xFF)
    leaf = ((units >> 8) & 1).astype(bool)
    # A node's children are the units whose label is a byte c and that sit at the node's
    # base XOR c, so each unit names its parent's base: the children of all nodes of a
    # level are found by one search. (darts-clone gives every node a base of its own; if
    # two shared one, each would get the other's children too: a larger table, never a
    # smaller one.)
    child = np.flatnonzero((label > 0) & (label < 0x100))   # no NUL: keys are C strings
    parent_base = child ^ label[child]
    order = np.argsort(parent_base, kind="stable")
    child, parent_base = child[order], parent_base[order]
    # The frontier: node, code point so far, bytes left of the character, and whether a
    # character of the key was completed already.
    pos = np.zeros(1, np.int64)
    cp = left = later = np.zeros(1, np.int64)
    for _ in range(64):                                   # keys are short; a bound all the same
        if not len(pos):
            return table
        base = pos ^ offset[pos]
        lo = np.searchsorted(parent_base, base, side="left")
        hi = np.searchsorted(parent_base, base, side="right")
        f = np.repeat(np.arange(len(pos)), hi - lo)
        node = child[ragged_gather_index(lo, hi - lo)]
        b = label[node]
        starting = left[f] == 0
        if (starting == ((b >= 0x80) & (b < 0xC0))).any() or (b >= 0xF5).any() or ((b >= 0xC0) & (b < 0xC2)).any():
            return None                                   # not UTF-8: no shortcut
        size_ = np.where(b < 0x80, 1, np.where(b >= 0xF0, 4, np.where(b >= 0xE0, 3, 2)))
        bits = np.where(b < 0x80, b, np.where(b >= 0xF0, b & 7, np.where(b >= 0xE0, b & 15, b & 31)))
        code = np.where(starting, bits, (cp[f] << 6) | (b & 63))
        rest = np.where(starting, size_ - 1, left[f] - 1)
        done = rest == 0
        if (code[done] >= len(table)).any():
            return None
        table[code[done & (later[f] == 1)]] = True            # a later character of a key
        table[code[done & (later[f] == 0) & leaf[node]]] = True   # a one-character key
        after = np.where(done, 1, later[f])
        state = np.unique((((node * 4 + rest) * 2 + after) << 21) | np.where(done, 0, code))
        pos, left = state >> 24, (state >> 22) & 3
        later, cp = (state >> 21) & 1, state & ((1 << 21) - 1)
    return None


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
