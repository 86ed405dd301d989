"""One written sample as the reader hands it out: where it came from, where it lives,
its segments, and for a chat output the roles of its messages.

Kept apart from :mod:`mintdim_beam.reader.dataset` (which finds and checks records): a
:class:`Sample` is plain data over one checked record, and everything it answers
(segments by name, a role's positions) comes from the record's header and its index
row, never from re-tokenizing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple, Optional

import numpy as np

from mintdim_beam.format.chat import ABSENT, MESSAGE_PARTS, PARTS_PER_MESSAGE, role_mask


class SegmentTokens(NamedTuple):
    """One template segment of a record: its position, name and token ids."""

    index: int
    name: str
    ids: np.ndarray


@dataclass(frozen=True)
class Sample:
    """One written sample: where it came from, where it lives, and its segments."""

    sample_id: Optional[int]        # None for a record that no index row points to
    unit_size: int
    shard_path: str
    shard_record: int
    source_file: Optional[str]
    source_line: Optional[int]
    hash: Optional[str]
    empty_fields: tuple
    record: np.ndarray              # the raw record slots (magic, lengths, payload)
    sequence_template: tuple
    #: A chat output's: the roles of the sample's messages, in order (None otherwise).
    roles: Optional[tuple] = None
    #: A preference pair's: the id its two records share, and ``chosen`` or ``rejected``.
    pair_id: Optional[int] = None
    pair_role: Optional[str] = None

    @property
    def lengths(self) -> np.ndarray:
        return self.record[1:1 + len(self.sequence_template)].astype(np.int64)

    @property
    def token_count(self) -> int:
        return int(self.lengths.sum())

    @property
    def payload(self) -> np.ndarray:
        """The written tokens, without padding."""
        start = 1 + len(self.sequence_template)
        return self.record[start:start + self.token_count]

    @property
    def padded_payload(self) -> np.ndarray:
        return self.record[1 + len(self.sequence_template):]

    @property
    def segments(self) -> tuple:
        """Every segment in ``sequence_template`` order (literals named token_template)."""
        out, start = [], 0
        payload = self.padded_payload
        for j, (name, n) in enumerate(zip(self.sequence_template, self.lengths.tolist())):
            out.append(SegmentTokens(j, name, payload[start:start + n]))
            start += n
        return tuple(out)

    def segment(self, name: str) -> np.ndarray:
        """Tokens of the segments called ``name``, concatenated in order.

        For a field used once this is just that field's tokens; ``"token_template"``
        gives every literal's tokens.
        """
        return self.select([name])

    def select(self, names: Iterable[str]) -> np.ndarray:
        """Tokens of every segment whose name is in ``names``, in payload order."""
        names = set(names)
        unknown = names - set(self.sequence_template)
        if unknown:
            raise KeyError(f"no segment named {sorted(unknown)}; segments: {list(self.sequence_template)}")
        parts = [s.ids for s in self.segments if s.name in names]
        return np.concatenate(parts) if parts else self.record[:0]

    # a chat output's messages
    @property
    def messages(self) -> tuple:
        """Each message of a chat sample as a :class:`MessageTokens` (its role and its
        prefix, content and suffix ids as written: truncation may have shortened them)."""
        if self.roles is None:
            raise ValueError("not a chat sample: its dataset has no message roles")
        segs = self.segments
        return tuple(MessageTokens(i, role, *(segs[PARTS_PER_MESSAGE * i + p].ids for p in range(PARTS_PER_MESSAGE)))
                     for i, role in enumerate(self.roles))

    def role_mask(self, roles: Iterable[str], parts: Iterable[str] = MESSAGE_PARTS,
                  width: Optional[int] = None) -> np.ndarray:
        """Boolean mask of the payload positions of the messages whose role is in
        ``roles`` (in their ``parts``), ``width`` long (default: the unit size)."""
        if self.roles is None:
            raise ValueError("not a chat sample: its dataset has no message roles")
        wanted = set(roles)
        slots = len(self.sequence_template) // PARTS_PER_MESSAGE
        codes = [0 if r in wanted else 1 for r in self.roles] + [ABSENT] * (slots - len(self.roles))
        return role_mask(self.lengths, codes, [0], parts, self.unit_size if width is None else width)


class MessageTokens(NamedTuple):
    """One message of a chat sample: its index, role and the ids of its three parts."""

    index: int
    role: str
    prefix: np.ndarray
    content: np.ndarray
    suffix: np.ndarray
