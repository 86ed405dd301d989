"""A block's UNK audit: its UNK tokens as columns, and the text of a row's UNK part (pure).

``unk_index.jsonl`` has one row per written sample that holds UNK, listing every UNK
token's payload position, field index and source substring. A block of a script the
tokenizer cannot spell holds millions of them, so :class:`UnkTable` keeps the tokens as
columns (numpy arrays and one list of strings), never an object per token.

A row ends with its *UNK part*, everything after ``source_line``::

    "unk_count":2,"unk_positions":[3,9],"unk_field_indices":[0,2],"unk_chars":["ệ","ư"]}

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

#: The UNK part of an ``unk_index.jsonl`` row, from ``"unk_count"`` to the newline, as a
#: printf format of the count and the three lists' comma-joined items.
UNK_PART = '"unk_count":%d,"unk_positions":[%s],"unk_field_indices":[%s],"unk_chars":[%s]}\n'

# A str as a JSON string, as json.dumps(..., ensure_ascii=False) writes it (C encoder).
json_string = json.encoder.encode_basestring

# Separators for joining many strings into one: non-ASCII code points that text hardly
# holds (noncharacters, then private use); ``join_unique`` takes the first none holds.
_SEPARATORS = ("\uffff", "\ufffe", "\U0010ffff", "\U0010fffe", "\ue000")


def join_unique(strings: list) -> Optional[tuple]:
    """``(sep, sep.join(strings))`` with a separator that occurs in none of the strings
    (so ``joined.split(sep)`` gives them back), or None if each separator occurs."""
    for sep in _SEPARATORS:
        joined = sep.join(strings)
        if joined.count(sep) == len(strings) - 1:
            return sep, joined
    return None


def unk_part(positions: np.ndarray, segments: np.ndarray, chars: list) -> str:
    """The UNK part (``UNK_PART``) of one sample's row, from its UNK tokens in order."""
    return UNK_PART % (len(chars), ",".join(map(str, positions.tolist())),
                       ",".join(map(str, segments.tolist())), ",".join(map(json_string, chars)))


def _ints(values=()) -> np.ndarray:
    return np.asarray(values, np.int64)


@dataclass
class UnkTable:
    """The UNK tokens of a block's written samples.

    Column entries, one per token, sorted by local sample, then payload position:
    ``sample``, ``position``, ``segment`` and ``chars`` (each token's source substring).
    Rendered entries, one per sample, in sample order: ``rendered_sample``,
    ``rendered_count`` (its UNK tokens) and ``rendered_text`` (its UNK part). A sample
    is in one or the other, never both.
    """

    sample: np.ndarray = field(default_factory=_ints)
    position: np.ndarray = field(default_factory=_ints)
    segment: np.ndarray = field(default_factory=_ints)
    chars: list = field(default_factory=list)
    rendered_sample: np.ndarray = field(default_factory=_ints)
    rendered_count: np.ndarray = field(default_factory=_ints)
    rendered_text: list = field(default_factory=list)

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
            starts = np.flatnonzero(np.r_[True, self.sample[1:] != self.sample[:-1]])
            for a, b in zip(starts.tolist(), np.r_[starts[1:], len(self)].tolist()):
                rows.append((int(self.sample[a]), unk_part(self.position[a:b], self.segment[a:b], self.chars[a:b])))
        return sorted(rows)

    def joined_chars(self) -> Optional[tuple]:
        """``join_unique(chars)``: kept from unpickling when the table came that way
        (the index writer joins the strings again, so they need not be split)."""
        packed = self.__dict__.get("_packed")
        return packed if packed is not None else join_unique(self.chars)

    def __getstate__(self) -> dict:
        # Millions of short strings pickle one by one; joined, they are one string.
        state = {k: v for k, v in self.__dict__.items() if k != "_packed"}
        found = self.joined_chars() if len(self) > 1 else None
        if found is not None:
            state["chars"] = found
        return state

    def __setstate__(self, state: dict) -> None:
        state = {"rendered_sample": _ints(), "rendered_count": _ints(), "rendered_text": [], **state}
        if isinstance(state["chars"], tuple):
            # Split on first use of ``chars`` (see __getattr__), if ever.
            self.__dict__.update({k: v for k, v in state.items() if k != "chars"}, _packed=state["chars"])
            return
        self.__dict__.update(state)

    def __getattr__(self, name: str):
        # Only reached for attributes not set: ``chars`` of a table unpickled packed.
        packed = self.__dict__.get("_packed")
        if name != "chars" or packed is None:
            raise AttributeError(name)
        sep, joined = packed
        chars = self.__dict__["chars"] = joined.split(sep)
        return chars

    @staticmethod
    def concat(tables: list) -> "UnkTable":
        """The tables of consecutive slices (their samples ascend from one to the next)."""
        tables = [t for t in tables if t.tokens]
        if len(tables) < 2:
            return tables[0] if tables else UnkTable()
        cat = np.concatenate
        return UnkTable(cat([t.sample for t in tables]), cat([t.position for t in tables]),
                        cat([t.segment for t in tables]), [c for t in tables for c in t.chars],
                        cat([t.rendered_sample for t in tables]), cat([t.rendered_count for t in tables]),
                        [x for t in tables for x in t.rendered_text])
