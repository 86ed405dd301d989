"""Exact accelerators: parts of a tokenizer library's behaviour, re-implemented for speed.

The tokenizer adapters (``mintdim_beam.tokenization.adapters``) work with the libraries' public
APIs alone. Two steps cost much more there than they need to, and each has a faster
implementation here that gives the same ids and the same UNK substrings:

- ``bpe_words``: a byte-level BPE ``tokenizer.json`` encoded word by word, each
  distinct word once, with the tokenizer's own model (its split re-implemented with the
  ``regex`` module; ``unicode14`` lists the code points on which that split is known to
  agree with the library's);
- ``sp_unk``: the UNK audit of a SentencePiece Unigram model, from the normalized text
  instead of a second encode to protos;
- ``gigatoken_bpe``: a byte-level BPE ``tokenizer.json`` encoded by gigatoken (an
  optional dependency, ``pip install mintdim-beam[fast]``), taken only when its
  configuration, vocabulary, merges and a battery of probe texts agree with the library;
  where gigatoken is absent or disagrees, the word encoder or the library encode;
- ``gigatoken_sp``: a SentencePiece BPE ``.model`` with byte fallback in Llama 2's
  settings encoded by gigatoken, under the same kind of probe against the library.

Each entry point below checks its conditions on the loaded tokenizer (the model's type
and configuration, then probe texts compared with the library's own answer) and returns
None when they do not hold; the adapter then uses the library alone. Per text, what the
construction does not cover (an added token, a code point newer than Unicode 14, a run
count that differs from the UNK count) goes to the library too.

All of them are switched off together by the build option ``accelerators: false``
(job file ``run`` section, ``--no-accelerators``, or ``run(accelerators=False)``):
the published bytes are the same either way (``tests/e2e/test_accel.py``), only the CPU
time differs. Figures: ``benchmarks/accelerators.py``.
"""

from __future__ import annotations

from typing import Callable, Optional


def bpe_word_encoder(tokenizer, config_text: str):
    """A ``bpe_words.ByteLevelWords`` for a loaded HF tokenizer and its JSON, or None."""
    from mintdim_beam.tokenization.accel.bpe_words import ByteLevelWords

    return ByteLevelWords.for_tokenizer(tokenizer, config_text)


def gigatoken_encoder(tokenizer, config_text: str, fallback=None, parallel: bool = False,
                      long_fallback=None):
    """A ``gigatoken_bpe.GigatokenBPE`` for a loaded HF tokenizer and its JSON, or None
    (gigatoken not installed, or a configuration it is not known to reproduce). Its
    probe runs on first use; until it passes, and wherever it did not, ``fallback``
    (None: the library) and ``long_fallback`` encode."""
    from mintdim_beam.tokenization.accel.gigatoken_bpe import GigatokenBPE

    return GigatokenBPE.for_tokenizer(tokenizer, config_text, fallback=fallback, parallel=parallel,
                                      long_fallback=long_fallback)


def gigatoken_sp_encoder(sp, data: bytes, facts, library: Callable, specials, parallel: bool = False):
    """A ``gigatoken_sp.GigatokenSentencePiece`` for a loaded SentencePiece BPE model, or
    None (gigatoken not installed, or settings it is not known to reproduce). Its probe
    runs on first use; until it passes, and wherever it did not, ``library`` encodes."""
    from mintdim_beam.tokenization.accel.gigatoken_sp import GigatokenSentencePiece

    return GigatokenSentencePiece.for_model(sp, data, facts, library, specials, parallel=parallel)


def sentencepiece_unk_runs(sp, proto_substrings: Callable) -> Optional[Callable]:
    """``sp_unk.unk_runs`` for a loaded ``SentencePieceProcessor``, or None."""
    from mintdim_beam.tokenization.accel.sp_unk import unk_runs

    return unk_runs(sp, proto_substrings)
