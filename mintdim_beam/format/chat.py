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
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

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
