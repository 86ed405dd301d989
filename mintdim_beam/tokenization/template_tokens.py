"""A template's constant segments against one tokenizer: literal and special-token ids.

Literal segments are the same text for every sample and are encoded once; a ``{@NAME}``
segment is one token the tokenizer names (DESIGN.md §8). Both are laid out like any
other segment. What a special segment contributes to the rendered text (what
``hash`` covers, and what ``unk_chars`` shows for ``{@unk}``) is its token's text:
the SentencePiece piece or the Hugging Face token content (docs/decisions.md,
"Templates"), the text a decoder that keeps special tokens gives for it.

Used by the build (``core``), the launcher's checks and ``verify --tokenizer``
(``reader``), so a template is read one way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mintdim_beam.errors import TemplateTokenizerError
from mintdim_beam.format.template import SPECIAL_MARK, Segment


@dataclass(frozen=True)
class Constant:
    """A literal or special segment's ids and the text it renders as."""

    ids: tuple
    text: str
    special: bool = False


def constant_segments(segments: Sequence[Segment], tokenizer, file_index: int = 0,
                      template: str = "") -> dict:
    """``{segment index: Constant}`` of every literal and special segment.

    A ``{@NAME}`` the tokenizer has no token for is a ``TemplateTokenizerError``
    (``special_missing``) naming the tokenizer, the segment and the tokens it has."""
    found = {}
    for j, seg in enumerate(segments):
        if seg.is_field:
            continue
        if seg.is_special:
            token = tokenizer.special_token(seg.text)
            if token is None:
                raise TemplateTokenizerError.special_missing(
                    file_index, template, tokenizer.path, SPECIAL_MARK + seg.text, tokenizer.special.shown())
            found[j] = Constant((int(token.id),), token.content, True)
        else:
            found[j] = Constant(tuple(int(i) for i in tokenizer.encode(seg.text)), seg.text)
    return found


def lookalike(segments: Sequence[Segment], tokenizer, constants: dict) -> Optional[tuple]:
    """The first literal that spells one of the tokenizer's special tokens without
    encoding to it: ``(segment index, token text, token id)``, or None.

    A literal holding a token's text must hold that token's id at least as often as the
    text appears (an added special token is matched in text by the library and passes;
    SentencePiece never reads control pieces from text, so a literal ``</s>`` does not).
    Longer texts are found first; a text inside a longer one's match is not counted."""
    tokens = sorted(tokenizer.special.lookalikes().items(), key=lambda kv: (-len(kv[0]), kv[0]))
    for j, seg in enumerate(segments):
        if not seg.is_literal:
            continue
        ids = constants[j].ids
        covered = [False] * len(seg.text)
        for text, token_id in tokens:
            seen, at = 0, seg.text.find(text)
            while at >= 0:
                if not any(covered[at:at + len(text)]):
                    seen += 1
                    covered[at:at + len(text)] = [True] * len(text)
                at = seg.text.find(text, at + len(text))
            if seen and ids.count(token_id) < seen:
                return j, text, token_id
    return None


def spelling(tokenizer, token_text: str, token_id: int) -> str:
    """How to write the token as a segment: its role if it has one, else its content."""
    for role, token in tokenizer.special.named.items():
        if token.id == token_id:
            return "{" + SPECIAL_MARK + role + "}"
    return "{" + SPECIAL_MARK + token_text + "}"


def check_lookalikes(segments: Sequence[Segment], tokenizer, constants: dict, file_index: int,
                     template: str) -> None:
    """Raise ``TemplateTokenizerError`` (``lookalike``) for the first :func:`lookalike`."""
    hit = lookalike(segments, tokenizer, constants)
    if hit is not None:
        j, text, token_id = hit
        raise TemplateTokenizerError.lookalike(file_index, template, segments[j].text, text, token_id,
                                               spelling(tokenizer, text, token_id), constants[j].ids)


@dataclass(frozen=True)
class RoleTokens:
    """A chat role's template against one tokenizer (``format.chat``): the ids and text of
    what it puts before and after ``{content}``, each part's literals encoded on their
    own and its ``{@NAME}`` segments one token each, and the source substring behind
    each UNK token of each part, in token order."""

    role: str
    prefix: Constant
    suffix: Constant
    prefix_unk: tuple = ()
    suffix_unk: tuple = ()


def role_tokens(role_template, tokenizer, file_index: int = 0) -> RoleTokens:
    """:class:`RoleTokens` of a ``format.chat.RoleTemplate``; a ``{@NAME}`` the tokenizer
    lacks is a ``TemplateTokenizerError`` as in any template."""
    parts = []
    for segments in (role_template.prefix, role_template.suffix):
        constants = constant_segments(segments, tokenizer, file_index, role_template.template)
        ids, text, unk = [], [], []
        for j, seg in enumerate(segments):
            c = constants[j]
            ids.extend(c.ids)
            text.append(c.text)
            count = sum(1 for i in c.ids if tokenizer.unk_id is not None and i == tokenizer.unk_id)
            if count:
                found = [c.text] * count if c.special else list(tokenizer.unk_substrings(seg.text))
                unk.extend(found[q] if q < len(found) else "" for q in range(count))
        parts.append((Constant(tuple(ids), "".join(text)), tuple(unk)))
    (prefix, prefix_unk), (suffix, suffix_unk) = parts
    return RoleTokens(role_template.role, prefix, suffix, prefix_unk, suffix_unk)


def check_role_lookalikes(role_template, tokenizer, file_index: int) -> None:
    """:func:`check_lookalikes` for the literals of a chat role's template."""
    segments = role_template.segments
    check_lookalikes(segments, tokenizer, constant_segments(segments, tokenizer, file_index, role_template.template),
                     file_index, role_template.template)
