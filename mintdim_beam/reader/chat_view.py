"""A chat output read back (DESIGN.md §9): its layout, each row's message roles as codes
of that layout, and which payload positions a training loss covers by role.

A chat record's header has three segment lengths per message slot (``format.chat``)
and its ``sample_index`` row lists the roles of its messages, so the positions of
every role are known from the header alone: nothing is decoded or re-tokenized. The
index keeps roles as codes into the names it met (``sample_index``); here they become
codes into the manifest's ``chat.roles``, once, and a role the manifest does not
declare, a row without ``roles`` or with more messages than slots is a damaged index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import numpy as np

from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format.chat import ABSENT, MESSAGE_PARTS, PARTS_PER_MESSAGE, ROLES_KEY, is_chat_template
from mintdim_beam.format.names import LENGTH_FIELD, MANIFEST, SAMPLE_INDEX


@dataclass(frozen=True)
class ChatLayout:
    """The ``chat`` entry of a chat output's manifest, checked against its segments."""

    max_messages: int
    roles: tuple
    parts: tuple = MESSAGE_PARTS

    def as_dict(self) -> dict:
        return {"max_messages": self.max_messages, "message_parts": list(self.parts), "roles": list(self.roles),
                "roles_key": ROLES_KEY}

    def codes(self, roles: Iterable[str], what: str = "loss_roles") -> list:
        """Each of ``roles``' code; KeyError naming the roles the dataset has."""
        roles = list(roles)
        unknown = [r for r in roles if r not in self.roles]
        if unknown:
            raise KeyError(f"{what}: no role named {unknown} in this dataset; its roles: {list(self.roles)}")
        return [self.roles.index(r) for r in roles]


def layout_of(meta) -> Optional[ChatLayout]:
    """The chat layout of a dataset (``output_files.Metadata``), None when it is not a
    chat output; ``ReaderError`` (``chat_layout``) when its manifest says one thing and
    its segments or ``length_field.json`` another."""
    chat = meta.manifest.get("chat")
    template = tuple(meta.sequence_template)
    if chat is None:
        if is_chat_template(template):
            return _bad(meta, "manifest.json has no chat entry, yet its sequence_template is a chat output's")
        return None
    if not isinstance(chat, dict):
        return _bad(meta, f"manifest.json chat must be an object, got {chat!r}")
    slots = chat.get("max_messages")
    roles = chat.get("roles")
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1 or \
            template != tuple(f"message{i}.{p}" for i in range(slots) for p in MESSAGE_PARTS):
        return _bad(meta, f"chat.max_messages {slots!r} does not match the {len(template)} segments of "
                          f"sequence_template (three per message slot)")
    if not isinstance(roles, list) or not roles or not all(isinstance(r, str) and r for r in roles) \
            or len(set(roles)) != len(roles):
        return _bad(meta, f"chat.roles must be a list of distinct role names, got {roles!r}")
    if chat.get("message_parts") != list(MESSAGE_PARTS) or chat.get("roles_key") != ROLES_KEY:
        return _bad(meta, f"chat.message_parts must be {list(MESSAGE_PARTS)} and roles_key {ROLES_KEY!r}")
    theirs = (meta.length_field or {}).get("chat")
    if theirs != chat:
        return _bad(meta, f"{LENGTH_FIELD} says chat {theirs!r}, {MANIFEST} {chat!r}")
    return ChatLayout(slots, tuple(roles))


def _bad(meta, detail: str):
    raise ReaderError("chat_layout", meta.path, file=MANIFEST, detail=detail)


def index_codes(layout: ChatLayout, index, path: Optional[str] = None) -> np.ndarray:
    """The layout's code of each of the index's role names (``index.role_names``), after
    checking every row: it has ``roles``, no more than ``max_messages`` of them, each a
    role the manifest declares. ``ReaderError`` naming the first row that fails."""
    found = index_problems(layout, index, first_only=True)
    if found:
        row, kind, facts = found[0]
        raise ReaderError(kind, path, file=SAMPLE_INDEX, line=int(index.row_line[row]), **facts)
    return np.asarray([layout.roles.index(n) if n in layout.roles else ABSENT for n in index.role_names],
                      np.int16)


def index_problems(layout: ChatLayout, index, first_only: bool = False) -> list:
    """``(row, kind, facts)`` of each row whose ``roles`` do not fit the layout: missing,
    too many, or naming an undeclared role (``read_messages`` words each kind)."""
    out = []
    n = len(index)
    if index.role_count is None:
        return [(0, "index_roles_missing", {})] if n else []
    for row in np.flatnonzero(index.role_count < 0)[:1 if first_only else None].tolist():
        out.append((row, "index_roles_missing", {}))
    for row in np.flatnonzero(index.role_count > layout.max_messages)[:1 if first_only else None].tolist():
        out.append((row, "index_roles_many", {"count": int(index.role_count[row]), "most": layout.max_messages}))
    unknown = [k for k, name in enumerate(index.role_names) if name not in layout.roles]
    if unknown:
        rows = np.repeat(np.arange(n), np.maximum(index.role_count, 0))
        for k in unknown:
            hits = rows[index.role_codes == k]
            for row in (hits[:1] if first_only else np.unique(hits)).tolist():
                out.append((row, "index_role_unknown", {"role": index.role_names[k], "roles": list(layout.roles)}))
    out.sort(key=lambda p: p[0])
    return out[:1] if first_only else out


def slot_codes(index, mapping: np.ndarray, rows: Sequence[int], max_messages: int) -> np.ndarray:
    """``(len(rows), max_messages)`` int16: each row's message slots' role codes (the
    layout's), ``ABSENT`` past its last message (and for a role ``mapping`` lacks)."""
    rows = np.asarray(rows, np.int64)
    out = np.full((len(rows), max_messages), ABSENT, np.int16)
    counts = index.role_count[rows].astype(np.int64)
    starts = index.role_start[rows]
    counts = np.clip(counts, 0, max_messages)    # a row with more is refused by index_codes
    if not counts.sum():
        return out
    at = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    r = np.repeat(np.arange(len(rows)), counts)
    slot = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    out[r, slot] = mapping[index.role_codes[at]]
    return out


def message_tokens(lengths: np.ndarray, parts: Iterable[str] = MESSAGE_PARTS) -> np.ndarray:
    """``(records, max_messages)``: the tokens each message slot holds in ``parts``, from
    the header lengths ``(records, 3 * max_messages)``."""
    lengths = np.asarray(lengths, np.int64)
    by_part = np.asarray([p in set(parts) for p in MESSAGE_PARTS])
    per = lengths.reshape(lengths.shape[0], -1, PARTS_PER_MESSAGE)
    return (per * by_part).sum(axis=2)


def unlisted_slots(lengths: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``(j, slot, tokens)`` rows of the records whose header gives tokens to a message
    slot past the messages their ``roles`` list (``codes`` ``ABSENT`` there): the roles
    and the header disagree, so no mask by role can be trusted."""
    tokens = message_tokens(np.asarray(lengths).reshape(len(codes), -1))
    j, slot = np.nonzero((tokens > 0) & (np.asarray(codes) == ABSENT))
    return np.stack([j, slot, tokens[j, slot]], axis=1) if len(j) else np.zeros((0, 3), np.int64)


def raise_unlisted(reader, rows: np.ndarray, records: np.ndarray, codes: np.ndarray) -> None:
    """``ReaderError`` (``roles_slots``) for the first of ``rows`` whose record holds a
    message its ``roles`` do not list (:func:`unlisted_slots`)."""
    n = reader.meta.n_segments
    found = unlisted_slots(records[:, 1:1 + n], codes)
    if len(found):
        j, slot, count = (int(v) for v in found[0])
        row = int(rows[j])
        ix = reader.index
        raise ReaderError("roles_slots", reader.path, shard=reader.meta.shard_path(int(ix.unit[row]), int(ix.shard[row])),
                          record=int(ix.record[row]), sample_id=int(ix.sample_id[row]), line=int(ix.row_line[row]),
                          slot=slot, count=count, listed=int(np.count_nonzero(codes[j] != ABSENT)))
