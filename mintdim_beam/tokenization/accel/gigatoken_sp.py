"""SentencePiece BPE ``.model`` files (Llama 2, Mistral) encoded by gigatoken, checked
against the library.

gigatoken (``accel.gigatoken_bpe`` says what it is and why it is not trusted) also loads
SentencePiece BPE models with byte fallback from their bytes, and encodes them about four
times faster than the sentencepiece library on one thread. Measured on 0.10, it is not
the library everywhere: it maps the text of a control piece (``</s>``) to the control
id, which SentencePiece never does; it splits a user-defined piece from its neighbours
otherwise; and with a precompiled normalization map (NFKC) or with
``remove_extra_whitespaces`` it gives other ids for some texts. So a model is encoded by
gigatoken only when every one of these holds, and by the library otherwise:

1. its settings are the ones gigatoken reproduces (:func:`supported`): a BPE model with
   byte fallback, no normalization map (``identity``), extra whitespace kept, spaces
   escaped as ``\u2581`` before words (the dummy prefix either way): the settings of
   Llama 2 and Mistral;
2. gigatoken loads it (from its bytes) without an error or a panic;
3. the probe, once per process on first use: gigatoken's vocabulary, id for id and byte
   for byte (a byte piece is its byte), equals the library's, and it gives the library's
   ids on the battery of ``battery.probe_texts`` (whitespace runs, the special
   pieces in context, long words, a sweep of code points, vocabulary entries as texts,
   random mixes).

Per text, a text holding the content of a control, unknown or user-defined piece goes to
the library, in one call per batch; the probe leaves those texts out too. Everything
else is ``GigatokenBPE``'s: the shape check of every answer, the switch to the library
for the rest of the process on any error, the reload when its word cache has grown.
"""

from __future__ import annotations

from typing import Optional, Sequence

from mintdim_beam.tokenization.accel.battery import probe_texts, vocab_texts
from mintdim_beam.tokenization.accel.gigatoken_bpe import GigatokenBPE, available, first_difference, vocab_difference
from mintdim_beam.tokenization.sp_model import BPE, ModelFacts


def supported(facts: Optional[ModelFacts]) -> Optional[str]:
    """None when gigatoken is known to reproduce a model with these facts; else why not."""
    if facts is None or not facts.complete:
        return "model settings unknown"
    if facts.model_type != BPE:
        return "not a BPE model"
    if not facts.byte_fallback:
        return "no byte fallback"
    if facts.charsmap:
        return f"a normalization map ({facts.normalizer})"
    if facts.remove_extra_whitespaces:
        return "extra whitespace removed"
    if not facts.escape_whitespaces or facts.whitespace_suffix:
        return "spaces not escaped before words"
    return None


class _Library:
    """The fallback: the adapter's library path (``SentencePieceTokenizer.library_batch``)."""

    def __init__(self, encode):
        self.encode_batch = encode

    def append_long(self, text, out) -> bool:
        return False


class GigatokenSentencePiece(GigatokenBPE):
    """Encodes texts for one SentencePiece BPE model through gigatoken, or through the
    library where the module docstring says so.

    ``sp``: the library's ``SentencePieceProcessor``; ``data``: the model's bytes;
    ``library``: the adapter's own batch call, ``(flat, lengths)`` of texts;
    ``specials``: the contents of its control, unknown and user-defined pieces.
    """

    def __init__(self, sp, data: bytes, library, specials: Sequence[str], parallel: bool = False):
        super().__init__(sp, "", {}, fallback=_Library(library), parallel=parallel)
        self._data = data
        self._specials = tuple(s for s in dict.fromkeys(specials) if s)

    @classmethod
    def for_model(cls, sp, data: bytes, facts: Optional[ModelFacts], library, specials: Sequence[str],
                  parallel: bool = False) -> Optional["GigatokenSentencePiece"]:
        """The encoder, or None when gigatoken is absent or the model's settings are not
        ones it reproduces (gigatoken's tokenizer and the probe wait for first use)."""
        if not available() or supported(facts) is not None:
            return None
        return cls(sp, data, library, specials, parallel)

    def _load(self):
        import gigatoken

        return gigatoken.Tokenizer.from_sentencepiece(self._data).backend

    def _probe(self, backend) -> Optional[str]:
        return probe(self._tokenizer, backend, self._specials, self._direct, self._parallel)

    def _direct(self, text: str) -> bool:
        return any(s in text for s in self._specials)

    def _directs(self, texts: list) -> list:
        """The texts holding a special piece's content, found in the joined batch first
        (a joint can make a false alarm, never miss one); then text by text."""
        joined = "\x00".join(texts)
        if not any(s in joined for s in self._specials):
            return []
        return [i for i, t in enumerate(texts) if self._direct(t)]


def expected_vocab(sp) -> dict:
    """id -> bytes as gigatoken should hold the library's pieces: a byte piece
    (``<0xXX>``) is its byte, any other piece its UTF-8 (``\u2581`` included)."""
    out = {}
    for i in range(int(sp.get_piece_size())):
        piece = sp.id_to_piece(i)
        out[i] = bytes([int(piece[3:5], 16)]) if sp.is_byte(i) else piece.encode("utf-8")
    return out


def probe(sp, backend, specials: Sequence[str], direct=None, parallel: bool = False,
          texts: Optional[Sequence[str]] = None) -> Optional[str]:
    """None when gigatoken's ``backend`` agrees with the library's ``sp`` (vocabulary,
    the battery's ids); else the first difference. ``direct``: texts the encoder never
    gives gigatoken are left out. ``texts``: the battery (default ``probe_texts``)."""
    expected = expected_vocab(sp)
    why = vocab_difference(backend, expected)
    if why is not None:
        return why
    if texts is None:
        texts = probe_texts(list(specials), vocab_texts(expected))
    if direct is not None:
        texts = [t for t in texts if not direct(t)]
    want = sp.encode(list(texts), out_type=int, num_threads=1)
    return first_difference(texts, want, backend.encode_batch(list(texts), parallel=parallel))
