"""A very long text encoded by a Hugging Face tokenizer in pieces cut at spaces, where
the tokenizer provably gives the same ids and offsets as for the whole text.

Why: ``tokenizers`` keeps, for every byte of a text it encodes, the alignments of its
normalized string, and for every token an ``Encoding`` entry (id, type id, string,
offsets, masks, word index). A WordPiece ``tokenizer.json`` (BERT) needed about 100
bytes per byte of text for the ids alone, and 150 with offsets (the UNK audit), so one
200 MB line would need 30 GB. Cut into pieces of ``PIECE_CHARS`` characters, encoded a
few at a time, a text needs what those pieces need.

Why it is exact, for the configurations :func:`cuttable` accepts (anything else is
encoded whole). A text is cut only just before a space (U+0020); ``A`` is the text
before a cut and ``B`` the rest, which starts with that space.

- Added tokens are matched first. Their contents hold no whitespace and none strips
  whitespace around it (``lstrip``/``rstrip``), so no match holds the space at a cut:
  every match lies within ``A`` or within ``B``. A ``single_word`` match at the end of
  ``A`` sees the end of the text where the whole text has a space: a word boundary
  either way.
- The normalizer is none, ``Lowercase`` or ``BertNormalizer``. Each of their steps maps
  one character at a time (removing control characters, spaces around CJK characters,
  lower case, and accents stripped as NFD then removal of the marks), except the
  canonical ordering inside NFD, which only reorders combining marks between two
  characters of combining class 0; the space is one, so nothing moves across a cut.
  Hence normalize(A + B) = normalize(A) + normalize(B), with the same alignments.
- The pre-tokenizer is ``BertPreTokenizer``, ``Whitespace`` or ``WhitespaceSplit``:
  their words never hold whitespace, so the space ends ``A``'s last word in the whole
  text as the end of ``A`` does, and only separates in ``B``.
- The model is ``WordPiece``, ``WordLevel`` or ``BPE`` without dropout, each of which
  encodes every word alone (``max_input_chars_per_word`` counts one word's characters).
- The post-processor adds nothing: the adapter encodes without special tokens and with
  padding and truncation off.

So the ids of the text are those of ``A`` then ``B``, and a token's offsets in ``B`` are
shifted by ``len(A)`` characters (offsets are character offsets into the Python string).
``tests/unit/test_long_texts.py`` compares both with the whole text's on real text and on
texts built to break each step (combining marks after a cut, CJK, control characters,
added tokens next to a cut).
"""

from __future__ import annotations

from array import array
from typing import Optional, Sequence

import numpy as np

#: Texts of at least this many characters are cut (when the tokenizer allows it).
LONG_TEXT_CHARS = 1 << 20

#: About this many characters per piece (a piece ends at the first space from here).
PIECE_CHARS = 1 << 18

#: Pieces given to the tokenizer in one call: its threads take them together.
PIECES_PER_CALL = 4

_NORMALIZERS = (None, "Lowercase", "BertNormalizer")
_PRE_TOKENIZERS = ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")
_MODELS = ("WordPiece", "WordLevel", "BPE")
_POST_PROCESSORS = (None, "TemplateProcessing", "BertProcessing")
_WHITESPACE = frozenset(" \t\n\r\x0b\x0c\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                        + "".join(map(chr, range(0x2000, 0x200b))))


def cuttable(tokenizer) -> bool:
    """Whether a loaded ``tokenizers.Tokenizer`` encodes a text cut before spaces exactly
    as whole (see the module docstring). Read from the loaded objects, since a
    ``tokenizer.json`` may leave a section's type to be inferred (BERT's model)."""
    def kind(component) -> Optional[str]:
        return None if component is None else type(component).__name__

    if (kind(tokenizer.normalizer) not in _NORMALIZERS
            or kind(tokenizer.pre_tokenizer) not in _PRE_TOKENIZERS
            or kind(tokenizer.model) not in _MODELS
            or getattr(tokenizer.model, "dropout", None) not in (None, 0, 0.0)
            or kind(tokenizer.post_processor) not in _POST_PROCESSORS):
        return False
    for token in tokenizer.get_added_tokens_decoder().values():
        if token.lstrip or token.rstrip or any(c in _WHITESPACE for c in token.content):
            return False
    return True


def cut_points(text: str, piece_chars: int = PIECE_CHARS) -> list:
    """Where the pieces of ``text`` start: 0, then the first space at or after each
    ``piece_chars`` characters past the previous start."""
    starts = [0]
    while True:
        at = text.find(" ", starts[-1] + piece_chars)
        if at < 0:
            return starts
        starts.append(at)


class PieceEncoder:
    """Encodes long texts piece by piece with a loaded ``tokenizers.Tokenizer`` (padding
    and truncation off), for a configuration :func:`cuttable` accepted."""

    def __init__(self, tokenizer, piece_chars: int = PIECE_CHARS):
        self._tok = tokenizer
        self._piece_chars = piece_chars
        self._fast = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    def _groups(self, text: str):
        """``(piece starts, pieces)`` a few pieces at a time."""
        starts = cut_points(text, self._piece_chars)
        bounds = list(zip(starts, starts[1:] + [len(text)]))
        for k in range(0, len(bounds), PIECES_PER_CALL):
            group = bounds[k:k + PIECES_PER_CALL]
            yield [a for a, _ in group], [text[a:b] for a, b in group]

    def ids(self, text: str) -> np.ndarray:
        """The ids of ``text`` (int32), as the tokenizer encodes the whole text."""
        out = array("i")
        self.append_ids(text, out)
        return np.frombuffer(out, dtype=np.intc)

    def append_ids(self, text: str, out: array) -> None:
        """Append the ids of ``text`` to ``out`` (a C ``int`` array: ids are far below
        2^31), piece by piece: the text's ids exist once, in an array that grows in
        place and that numpy views without a copy."""
        for _, pieces in self._groups(text):
            for e in self._fast(pieces, add_special_tokens=False):
                out.extend(e.ids)

    def substrings_at(self, text: str, positions: Sequence[int]) -> list:
        """The text of the token at each of ``positions`` of ``text``'s ids."""
        wanted = sorted(set(int(p) for p in positions))
        found = dict(zip(wanted, self._substrings(text, wanted)))
        return [found[int(p)] for p in positions]

    def _substrings(self, text: str, wanted: list) -> list:
        out: list = []
        first, k = 0, 0    # first: the group's first token position; k: next wanted
        for starts, pieces in self._groups(text):
            if k >= len(wanted):
                break
            for start, enc in zip(starts, self._tok.encode_batch(pieces, add_special_tokens=False)):
                n = len(enc.ids)
                offsets = None
                while k < len(wanted) and wanted[k] < first + n:
                    offsets = enc.offsets if offsets is None else offsets
                    a, b = offsets[wanted[k] - first]
                    out.append(text[start + a:start + b])
                    k += 1
                first += n
        return out
