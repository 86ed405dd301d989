"""Chat records: how a conversation's messages sit in a fixed-width record (pure).

A chat source (DESIGN.md §9) renders each message of a list field by the template of
its role. Records keep a fixed number of segment lengths per output (§5), so every
conversation of an output has ``max_messages`` message slots, and each slot is three
segments, in order:

    message<i>.prefix    what the role's template puts before ``{content}``
    message<i>.content   the message's content, tokenized on its own
    message<i>.suffix    what the role's template puts after ``{content}``

A message slot past the conversation's last message has three zero-length segments. The
roles of each sample's messages are in its ``sample_index`` row (``roles``), so a reader
knows which payload positions belong to which role from the header alone: slot ``i``'s
tokens are segments ``3i .. 3i+2``. Writer, reader and ``verify`` take the layout from
here, and the rendering of one conversation (:func:`render_messages`), which the build
and ``verify --tokenizer`` must agree on to the byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from mintdim_beam.errors import chat_messages as C
from mintdim_beam.errors.bilingual import Text
from mintdim_beam.format.template import Segment, TemplateSyntaxError, parse_template

#: The one placeholder a role template has.
CONTENT = "content"
#: The segments of one message slot, in record order.
MESSAGE_PARTS = ("prefix", "content", "suffix")
PARTS_PER_MESSAGE = len(MESSAGE_PARTS)
#: Key of the sample index's column of each sample's message roles.
ROLES_KEY = "roles"
#: Key of an overflow row's list of the messages that truncation shortened.
CUT_KEY = "cut_messages"
#: Role code of a message slot past the conversation's last message.
ABSENT = -1


def segment_name(message: int, part: str) -> str:
    """``message3.content``: the name ``sequence_template`` gives a slot's segment."""
    return f"message{message}.{part}"


def chat_sequence_template(max_messages: int) -> tuple:
    """The on-disk header schema of a chat output: three segments per message slot."""
    return tuple(segment_name(i, part) for i in range(max_messages) for part in MESSAGE_PARTS)


def is_chat_template(sequence_template: Sequence[str]) -> bool:
    """Whether a ``sequence_template`` is a chat output's (:func:`chat_sequence_template`)."""
    n = len(sequence_template)
    return bool(n) and n % PARTS_PER_MESSAGE == 0 and tuple(sequence_template) == chat_sequence_template(
        n // PARTS_PER_MESSAGE)


class RoleTemplateError(ValueError):
    """A role template that cannot render a message: its problem, in a few words."""


@dataclass(frozen=True)
class RoleTemplate:
    """One role's template split around its ``{content}``: the segments before it and after."""

    role: str
    template: str
    prefix: tuple   # of Segment (literals and {@NAME} specials)
    suffix: tuple

    @property
    def segments(self) -> tuple:
        return self.prefix + (Segment(True, CONTENT),) + self.suffix


def parse_role_template(role: str, template: str) -> RoleTemplate:
    """Split ``template`` (the ``jsonl`` template grammar) around its one ``{content}``.

    ``RoleTemplateError`` when it does not parse, names another field, or holds
    ``{content}`` other than exactly once."""
    try:
        segments = parse_template(template)
    except TemplateSyntaxError as exc:
        raise RoleTemplateError(f"{exc.problem} ({exc.offending!r})") from None
    others = [s.text for s in segments if s.is_field and s.text != CONTENT]
    if others:
        raise RoleTemplateError(f"{{{others[0]}}} is not a chat placeholder: only {{{CONTENT}}} is")
    at = [j for j, s in enumerate(segments) if s.is_field]
    if len(at) != 1:
        raise RoleTemplateError(f"{{{CONTENT}}} must appear exactly once, found {len(at)} times")
    return RoleTemplate(role, template, segments[:at[0]], segments[at[0] + 1:])


def chat_layout(max_messages: int, roles: Sequence[str]) -> dict:
    """The ``chat`` entry of ``manifest.json`` and ``length_field.json``: what a reader
    needs to tell each payload position's message and role from a record's header and
    its ``sample_index`` row."""
    return {"max_messages": max_messages, "message_parts": list(MESSAGE_PARTS), "roles": list(roles),
            "roles_key": ROLES_KEY}


#: A preference pair's records (DESIGN.md §9), in record order, and the keys of their
#: ``sample_index`` rows: ``pair_id`` (the pair's ordinal: its chosen record's sample id
#: halved), ``pair_role`` (chosen or rejected) and, for conversations, how many of the
#: messages are the shared prompt's.
PAIR_ROLES = ("chosen", "rejected")
PAIR_ID_KEY = "pair_id"
PAIR_ROLE_KEY = "pair_role"
PROMPT_MESSAGES_KEY = "prompt_messages"
#: The ``action`` of the overflow rows of a pair left out because it collapsed.
COLLAPSED = "collapsed"


def json_type_name(value) -> str:
    """A JSON value's type as a message names it (``null``, ``number``, ``array``, ...)."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def render_messages(messages, role_key: str, content_key: str, code: dict, prefix: Sequence[str],
                    suffix: Sequence[str], max_messages: int, field: str) -> Union[tuple, Text]:
    """One conversation's slot texts: ``(texts, codes, empty)``, or what is wrong with it.

    ``messages`` is the line's value of the list ``field``; ``code`` maps each role to its
    code, ``prefix[code]`` and ``suffix[code]`` are the texts of what its template puts
    around ``{content}`` (``{@NAME}`` segments as their token's text). ``texts`` holds
    the three texts of every slot (absent slots ``""``), whose concatenation the
    sample's hash is taken over; ``codes`` one code per slot (:data:`ABSENT` past the
    last message); ``empty`` the messages whose content renders empty (a null content
    renders ``""``, as a null field does, e.g. a tool-call turn's). A problem is a
    bilingual ``Text`` naming the message."""
    if not isinstance(messages, list):
        return C.CHAT_NOT_LIST.format(field=field, type_name=json_type_name(messages))
    if len(messages) > max_messages:
        return C.CHAT_TOO_MANY.format(count=len(messages), maximum=max_messages)
    vals: list = []
    codes: list = []
    empty: list = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return C.CHAT_MESSAGE_NOT_OBJECT.format(index=i, type_name=json_type_name(message))
        for key in (role_key, content_key):
            if key not in message:
                return C.CHAT_MESSAGE_KEY.format(index=i, key=key, keys=list(message))
        role, content = message[role_key], message[content_key]
        if not isinstance(role, str):
            return C.CHAT_ROLE_NOT_STRING.format(index=i, type_name=json_type_name(role))
        k = code.get(role)
        if k is None:
            return C.CHAT_ROLE_UNKNOWN.format(index=i, role=role, roles=list(code))
        if content is None:
            content = ""
        elif not isinstance(content, str):
            return C.CHAT_CONTENT_TYPE.format(index=i, type_name=json_type_name(content))
        if content == "":
            empty.append(i)
        vals += (prefix[k], content, suffix[k])
        codes.append(k)
    absent = max_messages - len(messages)
    vals += ("",) * (PARTS_PER_MESSAGE * absent)
    codes += [ABSENT] * absent
    return tuple(vals), tuple(codes), empty


def role_mask(lengths, roles_codes, wanted_roles: Iterable[int], parts: Iterable[str] = MESSAGE_PARTS,
              width: int = None) -> np.ndarray:
    """Boolean ``(..., width)`` mask of the payload positions of the messages whose role
    code is in ``wanted_roles``, in their ``parts`` (of :data:`MESSAGE_PARTS`).

    From the header alone: ``lengths`` are a record's segment lengths ``(3 * M,)``, or
    ``(records, 3 * M)``; ``roles_codes`` the slots' role codes ``(M,)`` or
    ``(records, M)`` (:data:`ABSENT`, or any code not wanted, for a slot left out).
    ``width`` defaults to the longest record's token count."""
    lengths = np.asarray(lengths, np.int64)
    codes = np.asarray(roles_codes, np.int64)
    single = lengths.ndim == 1
    lengths, codes = lengths.reshape(-1, lengths.shape[-1]), codes.reshape(-1, codes.shape[-1])
    k, n = lengths.shape
    if n != PARTS_PER_MESSAGE * codes.shape[1] or codes.shape[0] != k:
        raise ValueError(f"{n} segment lengths per record do not fit {codes.shape[1]} message slots")
    parts = set(parts)
    unknown = parts - set(MESSAGE_PARTS)
    if unknown:
        raise KeyError(f"no message part named {sorted(unknown)}; parts: {list(MESSAGE_PARTS)}")
    wanted = np.asarray(sorted(set(int(c) for c in wanted_roles)), np.int64)
    by_part = np.asarray([p in parts for p in MESSAGE_PARTS])
    chosen = (np.isin(codes, wanted) & (codes != ABSENT))[:, :, None] & by_part[None, None, :]
    chosen = chosen.reshape(k, n) & (lengths > 0)
    ends = np.cumsum(lengths, axis=1)
    if width is None:
        width = int(ends[:, -1].max()) if k and n else 0
    starts = ends - lengths
    r, j = np.nonzero(chosen)
    delta = np.zeros((k, width + 1), np.int32)
    np.add.at(delta, (r, np.minimum(starts[r, j], width)), 1)
    np.add.at(delta, (r, np.minimum(ends[r, j], width)), -1)
    mask = np.cumsum(delta, axis=1)[:, :width] > 0
    return mask[0] if single else mask
