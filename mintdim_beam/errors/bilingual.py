"""The English/Vietnamese pair every MintDim error text is made of, and its layout.

Every error of the spec prints an English block and a Vietnamese block with the same
facts. A message is a title followed by paragraphs separated by one blank line, exactly
as the spec prints it; a bullet list is one paragraph with one `• ` item per line. The
helpers below build each paragraph as an English/Vietnamese pair so a fact can never
appear in one language and be forgotten in the other.

This module holds no wording: the texts themselves are the `*_messages` modules beside
it (`build_messages`, `job_messages`, `read_messages`).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

BULLET = "• "
PARAGRAPH_BREAK = "\n\n"


class Text(NamedTuple):
    """One paragraph in both languages, so both blocks are always built together."""

    en: str
    vi: str

    def format(self, **facts: object) -> "Text":
        """Both templates with ``facts`` filled in. A fact that is itself a `Text` (a
        translated phrase, a number grouped per language) fills each block with its own
        language; any other fact reads the same in both."""
        en = {key: value.en if isinstance(value, Text) else value for key, value in facts.items()}
        vi = {key: value.vi if isinstance(value, Text) else value for key, value in facts.items()}
        return Text(self.en.format(**en), self.vi.format(**vi))


def same(text: str) -> Text:
    """A paragraph that reads the same in both blocks (paths, code identifiers)."""
    return Text(text, text)


def labeled(label: Text, value_en: object, value_vi: object | None = None) -> Text:
    """`Label: value` in both languages; the value is shared unless a translation is given."""
    en = str(value_en)
    vi = en if value_vi is None else str(value_vi)
    return Text(f"{label.en} {en}", f"{label.vi} {vi}")


def bullets(items_en: Iterable[object], items_vi: Iterable[object] | None = None) -> Text:
    """A bullet-list paragraph; the items are shared unless translated items are given."""
    en_items = [str(item) for item in items_en]
    vi_items = en_items if items_vi is None else [str(item) for item in items_vi]
    return Text(
        "\n".join(BULLET + item for item in en_items),
        "\n".join(BULLET + item for item in vi_items),
    )


def bullet_pairs(items: Iterable[Text]) -> Text:
    """A bullet-list paragraph from items that are already translated pairs."""
    items = list(items)
    return bullets([item.en for item in items], [item.vi for item in items])


def words(items: Iterable[object]) -> str:
    """Space-separated list, as the spec prints field names and keys."""
    return " ".join(str(item) for item in items)


def number_en(value: int) -> str:
    """English grouping: 5,000,000,000."""
    return f"{value:,}"


def number_vi(value: int) -> str:
    """Vietnamese grouping: 5.000.000.000."""
    return f"{value:,}".replace(",", ".")


def number(value: int) -> Text:
    """A count grouped the way each language writes it."""
    return Text(number_en(value), number_vi(value))


def percent(fraction: float) -> Text:
    """A share as each language writes it: 12.50% and 12,50%."""
    en = f"{fraction:.2%}"
    return Text(en, en.replace(".", ","))


def plural_en(count: object, singular: str, plural: str) -> str:
    """English noun agreeing with `count`; Vietnamese nouns do not inflect."""
    return singular if count == 1 else plural


def render(error_name: str, title: Text, paragraphs: Sequence[Text]) -> tuple[str, str]:
    """Build the English and Vietnamese blocks: `Name: title`, then blank-line paragraphs.

    A paragraph that is empty in one language is left out of that block only; the spec
    has notes (such as the closing line of PipelineValidationError) that exist in one
    language alone.
    """
    en = PARAGRAPH_BREAK.join([f"{error_name}: {title.en}", *(p.en for p in paragraphs if p.en)])
    vi = PARAGRAPH_BREAK.join([f"{error_name}: {title.vi}", *(p.vi for p in paragraphs if p.vi)])
    return en, vi


def joined(parts: Iterable[Text], separator: str = "; ") -> Text:
    """Paragraph parts joined the same way in both languages."""
    parts = list(parts)
    return Text(separator.join(p.en for p in parts), separator.join(p.vi for p in parts))
