"""Template parsing and rendering (pure; no Beam, no tokenizer).

A template such as ``"{instruction}\\n\\n{output}"`` is split once, at launch, into an
ordered tuple of segments. Every sample is then rendered segment by segment, because the
spec tokenizes each segment on its own ("exact per-segment tokenization") and writes one
length header per segment. Literal segments are the same for every sample, so they are
kept as text here and tokenized once per template by the workers.

The parser is our own rather than ``string.Formatter`` because ``str.format`` gives
meaning to ``!r`` conversions and ``:spec`` formats; MintDim treats everything between
the braces as the field name.

``{@NAME}`` is a special-token segment (DESIGN.md §8): ``{@bos}``, ``{@eos}``, ``{@pad}``
and ``{@unk}`` name the tokenizer's own tokens by role, any other ``{@<content>}`` a
special or added token by its exact content. It is one token, constant per template
like a literal, and ``sequence_template`` names it ``@NAME``; which id it is, the
tokenizer says (``tokenization.template_tokens``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

#: Name that ``sequence_template`` gives to every literal segment.
LITERAL_NAME = "token_template"
#: What starts a special-token segment's braces (``{@eos}``) and its name (``@eos``).
SPECIAL_MARK = "@"


@dataclass(frozen=True)
class Segment:
    """One piece of a template: a literal text, a ``{field}`` placeholder or a
    ``{@NAME}`` special token."""

    is_field: bool
    text: str  # the field name for a placeholder, NAME for a special token, else the literal text
    is_special: bool = False

    @property
    def is_literal(self) -> bool:
        return not self.is_field and not self.is_special

    @property
    def name(self) -> str:
        """The name this segment carries in ``sequence_template``."""
        if self.is_special:
            return SPECIAL_MARK + self.text
        return self.text if self.is_field else LITERAL_NAME


class TemplateSyntaxError(ValueError):
    """A template whose braces cannot be parsed (``{}``, ``{a``, a lone ``}``)."""

    def __init__(self, problem: str, offending: str):
        super().__init__(problem)
        self.problem = problem
        self.offending = offending


def parse_template(template: str) -> tuple[Segment, ...]:
    """Split ``template`` into literal, field and special-token segments, in order.

    ``{{`` and ``}}`` are literal braces; ``{@NAME}`` is a special token; any other
    ``{name}`` is a placeholder; empty literals are not segments.
    """
    segments: list[Segment] = []
    literal: list[str] = []
    i, n = 0, len(template)
    while i < n:
        ch = template[i]
        if ch == "{":
            if template.startswith("{{", i):
                literal.append("{")
                i += 2
                continue
            end = template.find("}", i + 1)
            nested = template.find("{", i + 1)
            if end < 0 or (0 <= nested < end):
                raise TemplateSyntaxError(f"unbalanced '{{' at position {i}", template[i:i + 20])
            name = template[i + 1:end]
            if not name:
                raise TemplateSyntaxError(f"empty placeholder '{{}}' at position {i}", "{}")
            if name == SPECIAL_MARK:
                raise TemplateSyntaxError(f"empty special token '{{@}}' at position {i}", "{@}")
            if literal:
                segments.append(Segment(False, "".join(literal)))
                literal = []
            if name.startswith(SPECIAL_MARK):
                segments.append(Segment(False, name[len(SPECIAL_MARK):], is_special=True))
            else:
                segments.append(Segment(True, name))
            i = end + 1
        elif ch == "}":
            if template.startswith("}}", i):
                literal.append("}")
                i += 2
                continue
            raise TemplateSyntaxError(f"unbalanced '}}' at position {i}", "}")
        else:
            literal.append(ch)
            i += 1
    if literal:
        segments.append(Segment(False, "".join(literal)))
    return tuple(segments)


def placeholders(segments: Sequence[Segment]) -> list[str]:
    """Field names used by the template, in first-use order, each once."""
    seen: dict[str, None] = {}
    for seg in segments:
        if seg.is_field:
            seen.setdefault(seg.text, None)
    return list(seen)


def sequence_template(segments: Sequence[Segment]) -> list[str]:
    """The on-disk header schema: one name per segment."""
    return [seg.name for seg in segments]


class FieldTypeError(ValueError):
    """A field value that cannot be rendered (a JSON array or object)."""

    def __init__(self, field: str, type_name: str):
        super().__init__(field)
        self.field = field
        self.type_name = type_name


def render_value(field: str, value: Any) -> str:
    """Render one JSON value as segment text.

    Strings are used as they are, ``null`` becomes an empty string, numbers and booleans
    their JSON text; arrays and objects have no agreed text form and are refused.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    raise FieldTypeError(field, "array" if isinstance(value, list) else "object")

