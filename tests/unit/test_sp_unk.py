"""UNK substrings of SentencePiece Unigram models from the normalizer (``mintdim_beam.tokenization.accel.sp_unk``).

The runs of unknown characters must give, text for text, the same substrings as the
serialized protos' offsets (the reference path, and what ``tests/reference.py`` uses),
on every kind of text a normalizer rewrites: NFKC compatibility characters, collapsed
and stripped whitespace, zero-width and control characters, combining marks, scripts
the vocabulary lacks.
"""

from __future__ import annotations

import io
import random
from types import SimpleNamespace

import numpy as np
import pytest
import sentencepiece as spm

from mintdim_beam.tokenization import sp_model
from mintdim_beam.tokenization import adapters as tokenizers
from mintdim_beam.tokenization.accel import sp_unk
from mintdim_beam.tokenization.adapters import SentencePieceTokenizer

# Characters that decide runs and offsets: unknown to the small models (CJK, Thai,
# symbols), rewritten by nmt_nfkc (full-width, ligatures, compatibility forms, NBSP,
# ideographic space), removed (zero-width, controls), whitespace of every kind.
ALPHABET = (
    list("abcdefghij xyz XYZ 0123") + list("{}[]<>^~|`\\@#$%&*_=+")
    + list("你好世界日本語한국어ภาษาไทย") + list("àáảãạăằắẳẵặâầấẩẫậđêềếểễệôồốổỗộơờớởỡợưừứửữự")
    + list("ＡＢＣａｂｃ１２３ｆｕｌｌ") + list("ﬁﬂ№™½²ⅷ") + ["\u00a0", "\u3000", "\u2009", "\u200b", "\u200d",
                                                    "\ufeff", "\t", "\n", "\r", "\x00", "\x07",
                                                    "e\u0301", "\u0301", "  ", "   "]
    + ["\U0001F600", "\U00020000", "\U000E0001", "\ud800", "\U0010FFFF"]
)


def _proto_path(tok: SentencePieceTokenizer, texts, positions) -> list:
    return tok._proto_unk_substrings(texts, positions)


def _unk_positions(tok: SentencePieceTokenizer, texts) -> list:
    flat, lengths = tok.encode_batch(texts)
    out, at = [], 0
    for n in lengths.tolist():
        ids = flat[at:at + n].tolist()
        out.append([k for k, t in enumerate(ids) if t == tok.unk_id])
        at += n
    return out


def _random_texts(seed: int, count: int) -> list:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        n = rng.randint(0, 40)
        text = "".join(rng.choice(ALPHABET) for _ in range(n))
        # Lone surrogates cannot be encoded to UTF-8; the pipeline rejects such records.
        texts.append(text.replace("\ud800", "?"))
    return texts


def _models(tok, realdata_dir):
    paths = [tok("sp_unigram.model")]
    t5 = realdata_dir / "tokenizers" / "t5_spiece_32000.model" if realdata_dir else None
    if t5 is not None and t5.exists():
        paths.append(str(t5))
    return paths


@pytest.fixture(scope="module")
def realdata_dir():
    from conftest import REALDATA
    return REALDATA if REALDATA.is_dir() else None


def test_model_facts_read_by_protobuf(tok):
    # As tests/testdata/make_testdata.py trains them (and the README there lists).
    for name, want in (("sp_unigram.model", (sp_model.UNIGRAM, False, "nmt_nfkc", True)),
                       ("sp_nopad.model", (sp_model.UNIGRAM, False, "identity", True)),
                       ("sp_bpe.model", (2, False, "identity", True))):
        with open(tok(name), "rb") as f:
            facts = sp_model.read_model(f.read())
        assert (facts.model_type, facts.byte_fallback, facts.normalizer, facts.complete) == want, name
    assert sp_model.read_model(b"\x12\x05abc") is None   # a length past the end: no accelerator


def test_unigram_models_take_the_runs_bpe_keeps_the_protos(tok):
    for name, fast in (("sp_unigram.model", True), ("sp_bpe.model", False)):
        with open(tok(name), "rb") as f:
            data = f.read()
        assert (SentencePieceTokenizer(name, data)._unk_runs is not None) is fast, name
        assert SentencePieceTokenizer(name, data, accelerators=False)._unk_runs is None, name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_runs_equal_protos_on_random_texts(tok, realdata_dir, seed):
    texts = _random_texts(seed, 3000)
    for path in _models(tok, realdata_dir):
        with open(path, "rb") as f:
            adapter = SentencePieceTokenizer(path, f.read(), num_threads=1)
        assert adapter._unk_runs is not None
        positions = _unk_positions(adapter, texts)
        held = [(t, p) for t, p in zip(texts, positions) if p]
        assert len(held) > 1000, "the alphabet must produce UNK tokens"
        hold_texts, hold_positions = [t for t, _ in held], [p for _, p in held]
        want = _proto_path(adapter, hold_texts, hold_positions)
        assert adapter.unk_substrings_at(hold_texts, hold_positions) == want
        # The runs path alone (no per-text fallback) already agrees.
        assert [s for t in hold_texts for s in adapter._unk_runs(t)] == want


def test_runs_equal_protos_on_every_bmp_character(tok, realdata_dir):
    """Every BMP code point, alone and between known and unknown neighbours."""
    chars = [chr(c) for c in range(0x20, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    for path in _models(tok, realdata_dir):
        with open(path, "rb") as f:
            adapter = SentencePieceTokenizer(path, f.read(), num_threads=1)
        texts = []
        for k in range(0, len(chars), 64):
            group = chars[k:k + 64]
            texts.append("".join(group))
            texts.append(" a".join(group) + "  ")
            texts.append("\u3000{".join(group) + "\u200b")
        positions = _unk_positions(adapter, texts)
        held = [(t, p) for t, p in zip(texts, positions) if p]
        hold_texts, hold_positions = [t for t, _ in held], [p for _, p in held]
        want = _proto_path(adapter, hold_texts, hold_positions)
        assert [s for t in hold_texts for s in adapter._unk_runs(t)] == want
        found, owner = adapter._unk_runs.column(hold_texts)     # all texts at once
        assert found.tolist() == want
        assert owner.tolist() == [k for k, p in enumerate(hold_positions) for _ in p]


def test_a_text_whose_runs_disagree_goes_to_the_protos(tok):
    with open(tok("sp_unigram.model"), "rb") as f:
        adapter = SentencePieceTokenizer("sp_unigram.model", f.read())
    texts = ["a {b} c", "你好 x 世界", "plain"]
    positions = _unk_positions(adapter, texts)
    want = _proto_path(adapter, texts, positions)
    real = adapter._unk_runs

    def column(texts):      # the runs, less the last run of each text holding "你"
        found, owner = real.column(texts)
        last = {int(o): k for k, o in enumerate(owner.tolist()) if "你" in texts[o]}
        keep = [k for k in range(len(owner)) if k not in last.values()]
        return found.take(keep), owner[keep]

    adapter._unk_runs = SimpleNamespace(column=column)
    assert len(column(texts)[0]) == 3
    assert adapter.unk_substrings_at(texts, positions) == want == ["{", "}", "你好", "世界"]
    # The encoder's form of the positions: one array, and where each text's positions begin.
    counts = [len(p) for p in positions]
    packed = tokenizers.Positions(np.asarray([k for p in positions for k in p], np.int64),
                                  np.cumsum([0] + counts[:-1]))
    assert list(packed) == positions and packed.counts().tolist() == counts == [2, 2, 0]
    assert adapter.unk_column_at(texts, packed).tolist() == want
    with open(tok("sp_bpe.model"), "rb") as f:     # a model whose UNK tokens take the protos
        bpe = SentencePieceTokenizer("sp_bpe.model", f.read())
    lists = _unk_positions(bpe, texts)
    counts = [len(p) for p in lists]
    packed = tokenizers.Positions(np.asarray([k for p in lists for k in p], np.int64), np.cumsum([0] + counts[:-1]))
    assert sum(counts) and bpe.unk_column_at(texts, packed).tolist() == bpe.unk_substrings_at(texts, lists)


def _train(sentences, **options) -> bytes:
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buffer, vocab_size=60, num_threads=1,
        minloglevel=2, byte_fallback=False, shuffle_input_sentence=False, character_coverage=1.0,
        hard_vocab_limit=False, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, **options)
    return buffer.getvalue()


def test_runs_at_the_edges_of_texts_without_a_dummy_prefix():
    """Without the dummy prefix a normalized text can begin (and end) with an unknown
    run: the texts' runs, found all at once, still belong to the right texts."""
    data = _train([f"the cat sat on the mat {i} times" for i in range(200)], add_dummy_prefix=False)
    adapter = SentencePieceTokenizer("bare.model", data)
    assert adapter._unk_runs is not None and adapter._sp.encode("{a")[0] == adapter.unk_id
    texts = ["{a", "t}", "{", "}{ a }", "mat", "a{t}c", "{{", "}"]
    positions = _unk_positions(adapter, texts)
    want = _proto_path(adapter, [t for t, p in zip(texts, positions) if p], [p for p in positions if p])
    held = [t for t, p in zip(texts, positions) if p]
    found, owner = adapter._unk_runs.column(held)
    assert found.tolist() == want == ["{", "}", "{", "}{", "}", "{", "}", "{{", "}"]
    assert owner.tolist() == [0, 1, 2, 3, 3, 4, 4, 5, 6]


def test_a_piece_with_an_unknown_character_keeps_the_protos():
    """A user-defined piece spelled with characters the model has no piece for breaks
    the argument (that piece covers them, no UNK run does): the runs are not used."""
    sentences = [f"the cat sat on the mat {i} times" for i in range(200)]
    plain = _train(sentences)
    marked = _train(sentences, user_defined_symbols=["{|}"])
    sp = spm.SentencePieceProcessor(model_proto=marked)
    assert sp.piece_to_id("{") == sp.unk_id() and sp.encode("a {|} t").count(sp.unk_id()) == 0
    assert SentencePieceTokenizer("plain.model", plain)._unk_runs is not None
    adapter = SentencePieceTokenizer("marked.model", marked)
    assert adapter._unk_runs is None
    texts = ["a {|} t {e}", "{|"]
    positions = _unk_positions(adapter, texts)
    assert adapter.unk_substrings_at(texts, positions) == ["{", "}", "{|"]


def test_texts_changed_only_in_whitespace_and_others_agree_with_the_protos(tok):
    """The aligned path: a text changed only in its whitespace (escaped, collapsed,
    stripped, the dummy prefix added) takes its runs straight from the normalized text;
    any other text asks for offsets. Both agree with the protos."""
    with open(tok("sp_unigram.model"), "rb") as f:
        data = f.read()
    assert sp_model.read_model(data).normalizer in sp_unk.BUILTIN_NORMALIZERS
    adapter = SentencePieceTokenizer("sp_unigram.model", data)
    assert adapter._runs is tokenizers._UNSET      # set up on first use (or prepare) ...
    adapter.prepare()
    assert adapter._runs is not None
    plain = ["a {b} c", "你好 x 世界", "xin chào {thế} giới", "{}",
             "a  {b}", " {b}", "{b}\n", "a\u3000{b}", "{\n\n}\t<x> ", "\xa0 {a}\r\n"]
    changed = ["ｆ{b}", "e\u0301{b}", "a{\u200b}b", "a{\x1c}b", "{\n}ﬁ"]
    for text in plain + changed:
        positions = _unk_positions(adapter, [text])
        want = _proto_path(adapter, [text], positions)
        assert adapter.unk_substrings_at([text], positions) == want, text
        assert adapter._unk_runs(text) == want, text


def test_identity_rules_cannot_exist():
    """Why an unchanged text has positional offsets: sentencepiece refuses a rule that
    maps a string to itself, and each built-in rule changes what it matches."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "rules.tsv")
        with open(rules, "w") as f:
            f.write("61 62\t61 62\n")
        with pytest.raises(ValueError, match="Identity conversion is not allowed"):
            _train([f"the cat sat on the mat {i} times" for i in range(50)], normalization_rule_tsv=rules)


def test_a_user_defined_normalizer_takes_the_offsets(tmp_path):
    """A rule table of the user's is not one of the built-in maps: every text's runs go
    through the normalizer's offsets (and still equal the protos)."""
    rules = tmp_path / "rules.tsv"
    rules.write_text("7B 7B\t7B\n")    # "{{" -> "{"
    data = _train([f"the cat sat on the mat {i} times" for i in range(200)], normalization_rule_tsv=str(rules))
    assert sp_model.read_model(data).normalizer == "user_defined"
    adapter = SentencePieceTokenizer("rules.model", data)
    assert adapter._unk_runs is not None
    texts = ["a {b} c", "a {{b}} c", "{{{", "x {{y"]
    positions = _unk_positions(adapter, texts)
    assert adapter.unk_substrings_at(texts, positions) == _proto_path(adapter, texts, positions)
