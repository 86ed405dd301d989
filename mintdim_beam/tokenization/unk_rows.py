"""A block's UNK audit: its UNK tokens as columns, and the text of a row's UNK part (pure).

``unk_index.jsonl`` has one row per written sample that holds UNK, listing every UNK
token's payload position, field index and source substring. A block of a script the
tokenizer cannot spell holds millions of them, so :class:`UnkTable` keeps the tokens as
columns (numpy arrays, the substrings as code points in a :class:`CharColumn`), never an
object per token.

A row ends with its *UNK part*, everything after ``source_line``::

    "unk_count":2,"unk_positions":[3,9],"unk_field_indices":[0,2],"unk_chars":["漢","字"]}

which is a pure function of the sample's rendered fields. A sample met again (the
encoder's repeat cache) therefore gets its first occurrence's UNK part as one string,
rendered once when the result was kept: the table lists such samples in its
``rendered_*`` columns instead of their tokens, every occurrence refers to the same
string object, and a pickle writes it once. On a corpus that repeats text the
tokenizer cannot spell, this is most of the audit's work saved twice (in the encoder
and in the index writer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from mintdim_beam.format.shard_format import ragged_gather_index

#: The UNK part of an ``unk_index.jsonl`` row, from ``"unk_count"`` to the newline, as a
#: printf format of the count and the three lists' comma-joined items.
UNK_PART = '"unk_count":%d,"unk_positions":[%s],"unk_field_indices":[%s],"unk_chars":[%s]}\n'

# A str as a JSON string, as json.dumps(..., ensure_ascii=False) writes it (C encoder).
json_string = json.encoder.encode_basestring

# Separators for joining many strings into one: non-ASCII code points that text hardly
# holds (noncharacters, then private use); the first that none holds is taken.
_SEPARATORS = ("\uffff", "\ufffe", "\U0010ffff", "\U0010fffe", "\ue000")

# Code points as text and back. "surrogatepass": a source substring is any str.
_UTF32 = "utf-32-le"


def _ends(lengths) -> np.ndarray:
    return np.cumsum(np.asarray(lengths, np.int64), dtype=np.int64)


@dataclass
class CharColumn:
    """Many short strings as one array of their code points and each one's end.

    A block of a script the tokenizer cannot spell has millions of UNK tokens, each
    with its source substring. As Python strings each costs an object to make, sort,
    pickle and join again; as a column they move with numpy (filter, reorder, concat)
    and become text once, when the index rows are written.
    """

    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def of(cls, strings) -> "CharColumn":
        strings = list(strings)
        codes = np.frombuffer("".join(strings).encode(_UTF32, "surrogatepass"), np.uint32)
        return cls(codes, _ends(np.fromiter(map(len, strings), np.int64, len(strings))))

    def __len__(self) -> int:
        return len(self.ends)

    def __eq__(self, other) -> bool:
        return (isinstance(other, CharColumn) and np.array_equal(self.ends, other.ends)
                and np.array_equal(self.codes, other.codes))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.ends, prepend=0)

    def text(self) -> str:
        """Every string, concatenated."""
        return self.codes.tobytes().decode(_UTF32, "surrogatepass")

    def tolist(self) -> list:
        text = self.text()
        return list(map(text.__getitem__, map(slice, np.r_[0, self.ends[:-1]].tolist(), self.ends.tolist())))

    def take(self, index) -> "CharColumn":
        """The strings at ``index`` (integer positions, any order, repeats allowed)."""
        index = np.asarray(index, np.int64)
        lengths = self.lengths[index]
        return CharColumn(self.codes[ragged_gather_index(self.ends[index] - lengths, lengths)], _ends(lengths))

    @staticmethod
    def concat(columns) -> "CharColumn":
        columns = [c for c in columns if len(c)]
        if len(columns) < 2:
            return columns[0] if columns else CharColumn()
        shift = np.cumsum([0] + [len(c.codes) for c in columns[:-1]])
        return CharColumn(np.concatenate([c.codes for c in columns]),
                          np.concatenate([c.ends + int(k) for c, k in zip(columns, shift)]))

    def joined(self) -> Optional[tuple]:
        """``(sep, sep.join(strings))`` for a separator none of the strings holds (so
        its occurrences are exactly the joins), or None if each separator occurs."""
        for sep in _SEPARATORS:
            if not (self.codes == ord(sep)).any():
                break
        else:
            return None
        n = len(self.ends)
        if n == 0:
            return sep, ""
        at = self.ends[:-1] + np.arange(n - 1)          # each separator's place
        out = np.full(len(self.codes) + n - 1, ord(sep), np.uint32)
        keep = np.ones(len(out), bool)
        keep[at] = False
        out[keep] = self.codes
        return sep, out.tobytes().decode(_UTF32, "surrogatepass")


def unk_part(positions: np.ndarray, segments: np.ndarray, chars: list) -> str:
    """The UNK part (``UNK_PART``) of one sample's row, from its UNK tokens in order."""
    return UNK_PART % (len(chars), ",".join(map(str, positions.tolist())),
                       ",".join(map(str, segments.tolist())), ",".join(map(json_string, chars)))


def _ints(values=()) -> np.ndarray:
    return np.asarray(values, np.int64)


_INT_COLUMNS = ("sample", "position", "segment", "rendered_sample", "rendered_count")


def _narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) in the smallest of int8 ... int64 that holds them all."""
    if not len(values):
        return values
    lo, hi = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return values.astype(dtype)
    return values


@dataclass
class UnkTable:
    """The UNK tokens of a block's written samples.

    Column entries, one per token, sorted by local sample, then payload position:
    ``sample``, ``position``, ``segment`` and ``chars`` (each token's source substring,
    a :class:`CharColumn`; a list of strings is taken too). Rendered entries, one per
    sample, in sample order: ``rendered_sample``, ``rendered_count`` (its UNK tokens) and
    ``rendered_text`` (its UNK part). A sample is in one or the other, never both.
    """

    sample: np.ndarray = field(default_factory=_ints)
    position: np.ndarray = field(default_factory=_ints)
    segment: np.ndarray = field(default_factory=_ints)
    chars: CharColumn = field(default_factory=CharColumn)
    rendered_sample: np.ndarray = field(default_factory=_ints)
    rendered_count: np.ndarray = field(default_factory=_ints)
    rendered_text: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.chars, CharColumn):
            self.chars = CharColumn.of(self.chars)

    def __len__(self) -> int:
        """Column entries (UNK tokens not rendered); ``tokens`` counts them all."""
        return len(self.sample)

    @property
    def tokens(self) -> int:
        return len(self.sample) + int(self.rendered_count.sum())

    def row_parts(self) -> list:
        """``(sample, UNK part)`` of every row, in sample order: what the table means,
        whichever entries hold it (two tables are the same audit if these are equal)."""
        rows = list(zip(self.rendered_sample.tolist(), self.rendered_text))
        if len(self):
            chars = self.chars.tolist()
            starts = np.flatnonzero(np.r_[True, self.sample[1:] != self.sample[:-1]])
            for a, b in zip(starts.tolist(), np.r_[starts[1:], len(self)].tolist()):
                rows.append((int(self.sample[a]), unk_part(self.position[a:b], self.segment[a:b], chars[a:b])))
        return sorted(rows)

    def __getstate__(self) -> dict:
        """Integer columns in the narrowest type that holds them, code points and ends
        as two arrays: a spilled block's UNK table is most of its ``meta.pkl`` (a block
        of the generated benchmark corpus: 5.2 MB with int64 columns, 2.5 MB so)."""
        state = {name: _narrow(getattr(self, name)) for name in _INT_COLUMNS}
        state["rendered_text"] = self.rendered_text
        state["char_codes"], state["char_ends"] = self.chars.codes, _narrow(self.chars.ends)
        return state

    def __setstate__(self, state: dict) -> None:
        # Tables pickled before rendered entries, or with their strings as a list or as
        # a (separator, joined text) that splits into them, load as today's.
        state = {"rendered_sample": _ints(), "rendered_count": _ints(), "rendered_text": [], **state}
        for name in _INT_COLUMNS:
            state[name] = _ints(state[name])
        if "char_codes" in state:
            state["chars"] = CharColumn(state.pop("char_codes"), _ints(state.pop("char_ends")))
        chars = state["chars"]
        if isinstance(chars, tuple):
            chars = chars[1].split(chars[0])
        if not isinstance(chars, CharColumn):
            state["chars"] = CharColumn.of(chars)
        self.__dict__.update(state)

    @staticmethod
    def concat(tables: list) -> "UnkTable":
        """The tables of consecutive slices (their samples ascend from one to the next)."""
        tables = [t for t in tables if t.tokens]
        if len(tables) < 2:
            return tables[0] if tables else UnkTable()
        cat = np.concatenate
        return UnkTable(cat([t.sample for t in tables]), cat([t.position for t in tables]),
                        cat([t.segment for t in tables]), CharColumn.concat([t.chars for t in tables]),
                        cat([t.rendered_sample for t in tables]), cat([t.rendered_count for t in tables]),
                        [x for t in tables for x in t.rendered_text])
