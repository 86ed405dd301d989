"""Tokenizer files that cannot be loaded: one clear bilingual error naming the file.

An empty, truncated or garbage ``.model``, a ``tokenizer.json`` that is not JSON or not a
tokenizer, and a file of one format declared as the other all raise
``TokenizerValidationError`` ("Tokenizer file cannot be loaded."), from the adapter and
from the CLI (exit 2, no traceback, nothing written to the output: in
``tests/e2e/test_tokenizer_cli.py``).
"""

from __future__ import annotations

import json

import pytest

from conftest import TESTDATA
from mintdim_beam.errors import TokenizerValidationError, error_from_dict
from mintdim_beam.tokenization.adapters import HF_JSON, SENTENCEPIECE, load_tokenizer

SP_MODEL = (TESTDATA / "sp_unigram.model").read_bytes()
HF_JSON_TEXT = (TESTDATA / "hf_bpe_unk.json").read_bytes()

TITLE_EN = "[english] TokenizerValidationError: Tokenizer file cannot be loaded."
TITLE_VI = "[vietnam] TokenizerValidationError: Không thể nạp file tokenizer."

# (kind, file name, bytes, problem, English problem text, Vietnamese problem text, fix)
CASES = [
    (SENTENCEPIECE, "empty.model", b"", "empty", "Problem: the file is empty (0 bytes)",
     "Vấn đề: file rỗng (0 byte)", None),
    (SENTENCEPIECE, "truncated.model", SP_MODEL[:1000], "not_sentencepiece",
     "Problem: SentencePiece cannot read it as a model: the file is truncated, damaged or not a .model file",
     "Vấn đề: SentencePiece không đọc được file này như một model", None),
    (SENTENCEPIECE, "garbage.model", b"\x00garbage\xff" * 10, "not_sentencepiece",
     "SentencePiece cannot read it as a model", "SentencePiece không đọc được file này", None),
    (SENTENCEPIECE, "json.model", HF_JSON_TEXT, "not_sentencepiece", "SentencePiece cannot read it as a model",
     "SentencePiece không đọc được file này",
     "Fix: the file is a Hugging Face tokenizer.json: declare it under tokenizer hf_json, with a .json name"),
    (HF_JSON, "empty.json", b"", "empty", "Problem: the file is empty (0 bytes)", "Vấn đề: file rỗng (0 byte)", None),
    (HF_JSON, "broken.json", b'{"model": {', "not_json",
     "Problem: it is not valid JSON (Expecting property name enclosed in double quotes: line 1, column 12)",
     "Vấn đề: file không phải JSON hợp lệ (Expecting property name enclosed in double quotes: line 1, column 12)",
     None),
    (HF_JSON, "truncated.json", HF_JSON_TEXT[:500], "not_json", "Problem: it is not valid JSON (",
     "Vấn đề: file không phải JSON hợp lệ (", None),
    (HF_JSON, "other.json", b'{"name": "not a tokenizer"}', "no_model",
     'Problem: it is JSON without a "model" section, so not a Hugging Face tokenizer',
     'Vấn đề: file là JSON nhưng không có mục "model", nên không phải tokenizer Hugging Face', None),
    (HF_JSON, "list.json", b"[1, 2]", "no_model", 'it is JSON without a "model" section',
     'không có mục "model"', None),
    (HF_JSON, "bad_model.json", b'{"model": {"type": "Nope"}}', "not_tokenizer",
     "Problem: it is JSON but not a Hugging Face tokenizer (", "Vấn đề: file là JSON nhưng không phải tokenizer", None),
    (HF_JSON, "model.json", SP_MODEL, "not_utf8",
     "Problem: it is not UTF-8 text (byte 0x", "Vấn đề: file không phải văn bản UTF-8 (byte 0x",
     "Fix: the file is a SentencePiece model: declare it under tokenizer sentencepiece, with a .model name"),
]


@pytest.mark.parametrize("kind,name,data,problem,english,vietnamese,fix", CASES, ids=[c[1] for c in CASES])
def test_a_file_that_cannot_be_loaded_is_named(kind, name, data, problem, english, vietnamese, fix):
    with pytest.raises(TokenizerValidationError) as caught:
        load_tokenizer(kind, f"./tok/{name}", data)
    err = caught.value
    assert err.fields["kind"] == "unloadable" and err.problem == problem and err.path == f"./tok/{name}"
    en, vi = str(err).split("\n\n[vietnam] ")
    vi = "[vietnam] " + vi
    assert en.startswith(TITLE_EN) and vi.startswith(TITLE_VI)
    assert f"File: ./tok/{name}" in en and f"File: ./tok/{name}" in vi
    assert english in en and vietnamese in vi
    assert (fix is not None) is ("Fix:" in en) and (fix is None or fix in en)
    assert error_from_dict(json.loads(json.dumps(err.to_dict()))).english == err.english


def test_empty_model_text():
    """Not "missing unk_id": the library makes an empty processor of empty bytes."""
    with pytest.raises(TokenizerValidationError) as caught:
        load_tokenizer(SENTENCEPIECE, "./tok/t.model", b"")
    assert str(caught.value) == """\
[english] TokenizerValidationError: Tokenizer file cannot be loaded.

File: ./tok/t.model

Declared type: sentencepiece (.model)

Problem: the file is empty (0 bytes)

Rule: a tokenizer file must be whole, as its library saved it: a SentencePiece .model or a Hugging Face tokenizer.json

[vietnam] TokenizerValidationError: Không thể nạp file tokenizer.

File: ./tok/t.model

Loại đã khai báo: sentencepiece (.model)

Vấn đề: file rỗng (0 byte)

Quy tắc: file tokenizer phải nguyên vẹn, đúng như thư viện của nó đã lưu: file .model của SentencePiece \
hoặc tokenizer.json của Hugging Face"""


def test_a_model_cut_between_two_pieces_is_refused():
    """The library loads it (fewer pieces, default settings) and would encode with it."""
    import sentencepiece as spm

    cut = SP_MODEL[:2000]
    assert spm.SentencePieceProcessor(model_proto=cut).get_piece_size() > 0
    with pytest.raises(TokenizerValidationError) as caught:
        load_tokenizer(SENTENCEPIECE, "./tok/cut.model", cut)
    assert caught.value.problem == "not_sentencepiece"
    assert "SentencePiece cannot read it as a model: the file is truncated" in caught.value.english
