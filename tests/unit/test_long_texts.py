"""Long texts cut at spaces give exactly the ids and UNK substrings of the whole text
(``long_texts``), checked against the library on real and on adversarial text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import REALDATA, TESTDATA

from mintdim_beam.tokenization import long_texts
from mintdim_beam.tokenization.long_texts import PieceEncoder, cut_points, cuttable
from mintdim_beam.tokenization.adapters import load_tokenizer

TEST_TOKENIZERS = ["hf_wordpiece.json", "hf_bpe_unk.json"]
REAL_TOKENIZERS = ["bert-base-uncased.tokenizer.json", "all-MiniLM-L6-v2.tokenizer.json"]

#: Texts built to break one step each where a cut falls (every space is a cut below).
ADVERSARIAL = [
    "Cafe\u0301 \u0301x \u0323\u0301y na\u00efve \u1e9b\u0323",        # combining marks right after cuts
    "\u4e2d\u6587 \u5b57x \u3042\u3044 \ud55c\uad6d\uc5b4",              # CJK: spaces added around them
    "a\x00b \x07c \u200bd \ufffde \t\n\r f\u00a0g\u3000h",               # control, zero-width, other spaces
    "[CLS] [SEP]x y[MASK] [UNK] [PAD][PAD] [cls] [Mask]",               # added tokens at cuts
    "ΣΑΣ ΟΔΟΣ Σ σ ς İstanbul ǅungla ß ﬁ ⅷ",                           # case mappings that are not one-to-one
    "supercalifragilisticexpialidocious" * 5 + " " + "x" * 120 + " ok",  # words over max_input_chars_per_word
    "{} | 🙂🙃 emoji🙂 ~~~ ... ,,, !? «»",                                # UNK-heavy characters
    "  leading and trailing  ",
]


def _strings(value, out: list) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def realdata_text(limit: int) -> str:
    """The real English and Vietnamese texts of the data files, joined."""
    texts: list = []
    for name in ("alpaca_en_demo.jsonl", "oasst_prompt_lottery_en_250_text.jsonl", "xcopa_test.vi.jsonl"):
        with open(REALDATA / "data" / name, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    _strings(json.loads(line), texts)
    return "\n".join(texts)[:limit]


def tokenizer_paths():
    paths = [pytest.param(str(TESTDATA / name), id=name) for name in TEST_TOKENIZERS]
    for name in REAL_TOKENIZERS:
        path = REALDATA / "tokenizers" / name
        paths.append(pytest.param(str(path), id=name, marks=pytest.mark.skipif(
            not path.exists(), reason="real tokenizers absent")))
    return paths


def library(path: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.no_truncation()
    return tok


@pytest.mark.slow     # about a second per tokenizer
@pytest.mark.parametrize("path", tokenizer_paths())
def test_pieces_give_the_whole_texts_ids_and_unk_substrings(path):
    tok = library(path)
    assert cuttable(tok)
    unk_id = tok.token_to_id(tok.model.unk_token)
    cases = [(text, (1, 7, 1000)) for text in ADVERSARIAL]
    if (REALDATA / "data").exists():
        cases.append((realdata_text(300_000), (997, 20_000)))
    for text, piece_sizes in cases:
        whole = tok.encode(text, add_special_tokens=False)
        ids, offsets = whole.ids, whole.offsets
        substrings = [text[a:b] for a, b in offsets]
        unk = [k for k, i in enumerate(ids) if i == unk_id][::-1]      # any order
        for piece_chars in piece_sizes:
            pieces = PieceEncoder(tok, piece_chars=piece_chars)
            assert pieces.ids(text).tolist() == ids, (path, piece_chars, text[:60])
            assert pieces.substrings_at(text, range(len(ids))) == substrings
            assert pieces.substrings_at(text, unk) == [substrings[k] for k in unk]


def test_only_configurations_with_an_exact_cut_are_cut():
    from tokenizers import Tokenizer

    accepted = json.loads((TESTDATA / "hf_wordpiece.json").read_text(encoding="utf-8"))
    assert cuttable(Tokenizer.from_str(json.dumps(accepted)))
    for name in ("hf_bytelevel_bpe.json", "hf_unigram.json"):   # ByteLevel, Metaspace
        assert not cuttable(library(str(TESTDATA / name))), name

    def changed(edit):
        config = json.loads(json.dumps(accepted))
        edit(config)
        return Tokenizer.from_str(json.dumps(config))

    added = accepted["added_tokens"][0]
    refused = {
        "NFKC": lambda c: c.update(normalizer={"type": "NFKC"}),
        "sequence normalizer": lambda c: c.update(normalizer={"type": "Sequence", "normalizers": []}),
        "Metaspace": lambda c: c.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁",
                                                       "prepend_scheme": "always", "split": True}),
        "no pre-tokenizer": lambda c: c.update(pre_tokenizer=None),
        "added token with a space": lambda c: c["added_tokens"].append(
            {**added, "id": len(c["model"]["vocab"]), "content": "new line"}),
        "added token that strips": lambda c: c["added_tokens"][0].update(rstrip=True),
        "ByteLevel post-processor": lambda c: c.update(post_processor={"type": "ByteLevel", "add_prefix_space": False,
                                                                      "trim_offsets": True, "use_regex": True}),
    }
    for name, edit in refused.items():
        assert not cuttable(changed(edit)), name
    bpe = json.loads((TESTDATA / "hf_bpe_unk.json").read_text(encoding="utf-8"))
    assert cuttable(Tokenizer.from_str(json.dumps(bpe)))
    bpe["model"]["dropout"] = 0.1
    assert not cuttable(Tokenizer.from_str(json.dumps(bpe)))


def test_cut_points_fall_before_spaces():
    text = "ab cd  ef g" + "h" * 20 + " i"
    assert cut_points(text, 3) == [0, 5, 9, 31]
    assert cut_points(text, 100) == [0]
    assert all(text[k] == " " for k in cut_points(text, 1)[1:])


@pytest.mark.slow     # seconds per tokenizer
@pytest.mark.parametrize("name", ["hf_wordpiece.json", "hf_bpe_unk.json", "hf_bytelevel_bpe.json"])
def test_the_adapter_encodes_long_texts_as_the_library_does_whole(name):
    """Through the build's adapter: texts of LONG_TEXT_CHARS or more go in pieces (or
    word by word for the byte-level BPE), shorter ones whole, in one batch."""
    path = str(TESTDATA / name)
    tok = library(path)
    unit = "Tôi đi học. The cat sat on the mat, naïve café 中文 🙂 {x} " * 7
    long_text = (unit * (long_texts.LONG_TEXT_CHARS // len(unit) + 2))[:long_texts.LONG_TEXT_CHARS + 11]
    texts = ["short one", long_text, "", "another short 🙂"]
    encodings = [tok.encode(t, add_special_tokens=False) for t in texts]
    expected = [(e.ids, e.offsets) for e in encodings]     # each property call copies the whole list
    for accelerators in (True, False):
        adapter = load_tokenizer("hf_json", path, Path(path).read_bytes(), accelerators=accelerators,
                                 word_encoder=False)
        flat, lengths = adapter.encode_batch(texts)
        assert lengths.tolist() == [len(ids) for ids, _ in expected]
        assert flat.tolist() == [i for ids, _ in expected for i in ids]
        positions = [[k for k, i in enumerate(ids) if i == adapter.unk_id] for ids, _ in expected]
        assert adapter.unk_substrings_at(texts, positions) == [
            t[offsets[k][0]:offsets[k][1]] for t, (_, offsets), ks in zip(texts, expected, positions) for k in ks]
    assert np.asarray(flat).dtype.kind == "i"


@pytest.mark.parametrize("path", [pytest.param(str(TESTDATA / "hf_bytelevel_bpe.json"), id="hf_bytelevel_bpe"),
                                  pytest.param(str(REALDATA / "tokenizers" / "olmo_gpt-neox-20b-pii-special.tokenizer.json"),
                                               id="olmo", marks=pytest.mark.skipif(
                                                   not (REALDATA / "tokenizers").exists(),
                                                   reason="real tokenizers absent"))])
def test_byte_level_words_in_windows_give_the_whole_texts_ids(path):
    """``ByteLevelWords.encode_long`` cuts a long text into windows at chunk starts
    (whitespace after non-whitespace), so the list of its chunks never exists whole."""
    from mintdim_beam.tokenization.accel import bpe_word_encoder

    tok = library(path)
    words = bpe_word_encoder(tok, Path(path).read_text(encoding="utf-8"))
    texts = ["a  b\t\tc \n\n d   \u3000e\u00a0 f  ", " lead", "trail ", "x" * 50 + "  " + "y" * 50,
             "Tôi đi học.  The cat\tsat\n\non the mat,   naïve café 🙂 {x}  " * 40]
    if (REALDATA / "data").exists():
        texts.append(realdata_text(300_000))
    contents = [t.content for t in tok.get_added_tokens_decoder().values()]
    windowed = 0
    for text in texts:
        whole = tok.encode(text, add_special_tokens=False).ids
        for window in (1, 3, 1000):
            got = words.encode_long(text, window=window)
            if got is None:     # GPT-NeoX has added tokens of spaces: such a text is the tokenizer's
                assert any(c in text for c in contents)
                continue
            windowed += 1
            assert got.tolist() == whole, (path, window, text[:40])
    assert windowed >= 6
    added = tok.get_added_tokens_decoder()[0].content
    assert words.encode_long("text with " + added + " inside") is None    # the tokenizer's, whole
