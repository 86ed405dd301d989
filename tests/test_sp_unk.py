"""UNK substrings of SentencePiece Unigram models from the normalizer (``mintdim_beam.sp_unk``).

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

from mintdim_beam import sp_unk, tokenizers
from mintdim_beam.tokenizers import SentencePieceTokenizer

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


def test_model_facts_from_the_wire_format(tok):
    # As tests/testdata/make_testdata.py trains them (and the README there lists).
    for name, want in (("sp_unigram.model", (sp_unk.UNIGRAM, False, "nmt_nfkc")),
                       ("sp_nopad.model", (sp_unk.UNIGRAM, False, "identity")),
                       ("sp_bpe.model", (2, False, "identity"))):
        with open(tok(name), "rb") as f:
            assert sp_unk.model_facts(f.read()) == want, name
    with pytest.raises(ValueError):
        sp_unk.model_facts(b"\x12\x05abc")   # a length past the end


def test_unigram_models_take_the_runs_bpe_keeps_the_protos(tok):
    for name, fast in (("sp_unigram.model", True), ("sp_bpe.model", False)):
        with open(tok(name), "rb") as f:
            adapter = SentencePieceTokenizer(name, f.read())
        assert (adapter._unk_runs is not None) is fast, name


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


@pytest.fixture
def normalize_calls(monkeypatch):
    """``with_offsets`` of every ``normalize`` call of adapters built in the test."""
    calls = []
    real = spm.SentencePieceProcessor.normalize

    def normalize(self, text, with_offsets=None):
        calls.append(bool(with_offsets))
        return real(self, text, with_offsets=with_offsets)

    monkeypatch.setattr(spm.SentencePieceProcessor, "normalize", normalize)
    return calls


def test_texts_the_normalizer_leaves_alone_need_no_offsets(tok, normalize_calls):
    """The aligned path: a text changed only in its whitespace (escaped, collapsed,
    stripped, the dummy prefix added) takes its runs straight from the normalized text;
    any other text asks for offsets. Both agree with the protos."""
    with open(tok("sp_unigram.model"), "rb") as f:
        data = f.read()
    assert sp_unk.model_facts(data)[2] in sp_unk.BUILTIN_NORMALIZERS
    adapter = SentencePieceTokenizer("sp_unigram.model", data)
    assert adapter._runs is tokenizers._UNSET      # set up on first use (or prepare) ...
    adapter.prepare()
    assert adapter._runs is not None and adapter._data is None   # ... then the bytes go
    plain = ["a {b} c", "你好 x 世界", "xin chào {thế} giới", "{}",
             "a  {b}", " {b}", "{b}\n", "a\u3000{b}", "{\n\n}\t<x> ", "\xa0 {a}\r\n"]
    changed = ["ｆ{b}", "e\u0301{b}", "a{\u200b}b", "a{\x1c}b", "{\n}ﬁ"]
    for text in plain + changed:
        positions = _unk_positions(adapter, [text])
        want = _proto_path(adapter, [text], positions)
        normalize_calls.clear()
        assert adapter.unk_substrings_at([text], positions) == want, text
        assert (True in normalize_calls) is (text in changed), text


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


def test_a_user_defined_normalizer_always_takes_the_offsets(normalize_calls, tmp_path):
    """A rule table of the user's is not one of the built-in maps: every text's runs go
    through the normalizer's offsets (and still equal the protos)."""
    rules = tmp_path / "rules.tsv"
    rules.write_text("7B 7B\t7B\n")    # "{{" -> "{"
    data = _train([f"the cat sat on the mat {i} times" for i in range(200)], normalization_rule_tsv=str(rules))
    assert sp_unk.model_facts(data)[2] == "user_defined"
    adapter = SentencePieceTokenizer("rules.model", data)
    assert adapter._unk_runs is not None
    texts = ["a {b} c", "a {{b}} c", "{{{", "x {{y"]
    positions = _unk_positions(adapter, texts)
    normalize_calls.clear()
    assert adapter.unk_substrings_at(texts, positions) == _proto_path(adapter, texts, positions)
    assert normalize_calls and all(normalize_calls)


def _whitespace_only(text: str) -> str:
    """What the normalizer makes of a text no rule touches: spaces escaped and collapsed,
    leading and trailing ones dropped, the dummy prefix added (none to an empty text)."""
    words = [w for w in text.split(" ") if w]
    return "\u2581" + "\u2581".join(words) if words else ""


def test_rule_chars_are_every_character_a_rule_can_touch(tok, realdata_dir):
    """``rule_chars`` reads the model's rule map: every character a rule changes is in
    the table; one outside it is left as it is, alone and next to any other such
    character; and the characters it adds beyond those (ones that only follow a key's
    first character, like U+0301 after "e") do combine with a base."""
    for path in _models(tok, realdata_dir):
        with open(path, "rb") as f:
            data = f.read()
        sp = spm.SentencePieceProcessor(model_proto=data)
        table = sp_unk.rule_chars(data)
        assert table is not None and not table[ord(" ")]
        assert table[0x301] and table[0xFF41] and table[ord("\n")] and not table[ord("e")]
        clean, later = [], []
        for c in range(0x21, 0x10000):
            if 0xD800 <= c <= 0xDFFF:
                continue
            kept = sp.normalize(chr(c)) in (chr(c), "\u2581" + chr(c))
            if not kept:
                assert table[c], (path, hex(c))                   # a rule maps it
            (later if table[c] else clean).append(chr(c)) if kept else None
        assert len(clean) > 50_000 and later
        rng = random.Random(7)
        for _ in range(300):      # untouched characters and spaces: only whitespace changes
            text = "".join(rng.choice(clean) if rng.random() < 0.8 else " " for _ in range(rng.randint(1, 60)))
            assert sp.normalize(text) == _whitespace_only(text), (path, text)
        # Nothing outside the table combines with a base before it (the bases a rule
        # map composes with: Latin, Greek, Cyrillic, kana, Hangul jamo, and more).
        bases = ("aeiouyAEIOUYnNcCsSkKhHgGwWrRlLzZdDtT" "αεηιουωΑΕΗΙΟΥΩиеИЕ" "かきくけこさはカキクケコサハゝヽ"
                 "\u1100\u1161\u11a8가" "अकডਕકଡகఅಕകඅ" "<=>")
        for b in bases:
            for k in range(0, len(clean), 2000):
                text = " ".join(b + d for d in clean[k:k + 2000])
                if sp.normalize(text) != _whitespace_only(text):
                    bad = [d for d in clean[k:k + 2000] if sp.normalize(b + d) != _whitespace_only(b + d)]
                    pytest.fail(f"{path}: {b!r} combines with {bad[:5]!r}, which the table does not hold")


def test_rule_chars_without_a_rule_map_or_escaped_spaces(tok):
    """The identity normalizer has no rules: no character is touched. A model that
    keeps spaces unescaped takes no shortcut (its runs could hold spaces)."""
    with open(tok("sp_nopad.model"), "rb") as f:
        data = f.read()
    assert sp_unk.model_facts(data)[2] == "identity"
    table = sp_unk.rule_chars(data)
    assert table is not None and not table.any()
    spec = b"\x0a\x08nmt_nfkc" + b"\x28\x00"               # name, escape_whitespaces: false
    assert sp_unk.rule_chars(b"\x1a" + bytes([len(spec)]) + spec) is None
    assert sp_unk.rule_chars(b"\x1a\x0a\x0a\x08nmt_nfkc") is not None     # escaping by default


def test_texts_no_rule_touches_skip_the_normalizer(tok, realdata_dir, monkeypatch):
    """Texts without a character any rule involves take their runs from themselves,
    the others from the normalized text; both agree with the protos."""
    for path in _models(tok, realdata_dir):
        with open(path, "rb") as f:
            adapter = SentencePieceTokenizer(path, f.read(), num_threads=1)
        processor = type(adapter._sp._processor)
        normalized = []
        real = processor._Normalize
        monkeypatch.setattr(processor, "_Normalize", lambda self, text, *a: normalized.append(text) or real(self, text, *a))
        adapter.prepare()
        untouched = ["a {b} c", "你好 x 世界", "xin chào {thế} giới", "{}", "a  {b}  ", " {b}", "x {y} z {w}"]
        touched = ["ｆ{b}", "e\u0301{b}", "a{\u200b}b", "{b}\n", "a\u3000{b}", "{\u2581}"]
        texts = untouched + touched
        positions = _unk_positions(adapter, texts)
        assert all(positions), "each text holds an UNK token"
        want = _proto_path(adapter, texts, positions)
        normalized.clear()
        assert adapter.unk_substrings_at(texts, positions) == want, path
        assert sorted(normalized) == sorted(touched), (path, normalized)   # each once, no untouched one
        monkeypatch.undo()


def test_rule_chars_on_random_rule_maps_gives_a_table_or_none():
    """A damaged or foreign rule map must not break loading a model: the shortcut is
    then simply off (None) or the table conservative."""
    import numpy as np

    def varint(n: int) -> bytes:
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            if not n:
                return out + bytes([b])
            out += bytes([b | 0x80])

    rng = np.random.default_rng(0)
    for i in range(300):
        units = rng.integers(0, 2**32, size=int(rng.integers(1, 3000)), dtype=np.uint64).astype("<u4")
        if i % 2:
            units &= np.uint32(0x3FF)        # small offsets: many labels match
        charsmap = len(units.tobytes()).to_bytes(4, "little") + units.tobytes()
        spec = b"\x12" + varint(len(charsmap)) + charsmap
        table = sp_unk.rule_chars(b"\x1a" + varint(len(spec)) + spec)
        assert table is None or table.shape == (0x110000,)
