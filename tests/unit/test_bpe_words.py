"""The word-by-word byte-level BPE encoder gives the tokenizer's own ids, always.

``mintdim_beam.tokenization.accel.bpe_words`` re-implements the tokenizer's split (with the ``regex``
module instead of Oniguruma) and asks the tokenizer's model for each distinct word, so
these tests compare it with ``Tokenizer.encode_batch`` on every Unicode 14.0 code point,
on random texts built from the characters where splits are decided, around added tokens,
under NFC, across cache resets and from several threads at once.
"""

from __future__ import annotations

import json
import random
import unicodedata
from itertools import chain

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.pre_tokenizers import ByteLevel

from conftest import run_in_threads
from mintdim_beam.tokenization.accel import bpe_words
from mintdim_beam.tokenization.accel.bpe_words import BYTE_TABLE, GPT2_PATTERN, ByteLevelWords
from mintdim_beam.tokenization.accel.unicode14 import ASSIGNED
from mintdim_beam.tokenization.adapters import load_tokenizer


def _config(testdata, **changes) -> str:
    config = json.loads((testdata / "hf_bytelevel_bpe.json").read_text(encoding="utf-8"))
    config.update(changes)
    return json.dumps(config)


def _pair(config_text: str, max_words: int = bpe_words.MAX_WORDS, parts=bpe_words._Parts):
    """The tokenizer and its word encoder (memos of ``max_words`` keys, parts of class ``parts``)."""
    tok = Tokenizer.from_str(config_text)
    tok.no_padding()
    tok.no_truncation()
    words = ByteLevelWords.for_tokenizer(tok, config_text)
    assert words is not None
    config = json.loads(config_text)
    added = [t.get("content", "") for t in config.get("added_tokens") or []]
    return tok, ByteLevelWords(tok, added, words._nfc, parts(tok) if words._parts else None, max_words)


def _expected(tok, texts):
    ids = [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=False)]
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64)
    return flat, np.array([len(i) for i in ids], dtype=np.int64)


def _assert_same(tok, words, texts):
    want_flat, want_lengths = _expected(tok, texts)
    flat, lengths = words.encode_batch(list(texts))
    assert lengths.tolist() == want_lengths.tolist()
    if not np.array_equal(flat, want_flat):
        starts = np.concatenate(([0], np.cumsum(lengths)))
        for i, text in enumerate(texts):
            got = flat[starts[i]:starts[i + 1]].tolist()
            want = want_flat[starts[i]:starts[i + 1]].tolist()
            assert got == want, f"text {text!r}"
    assert flat.dtype == np.int32 and lengths.dtype == np.int64


# Characters where the split's decisions happen: letters of several scripts, digits of
# several kinds, apostrophes, every kind of space and line break, marks, symbols,
# characters unassigned in Unicode 14 (encoded by the tokenizer itself), and the
# literal content of an added token.
ALPHABET = (list("aZéßΩжあ中한ا") + list("07٣½Ⅳ") + ["'", "'s", "'ll", "'D", "’"]
            + [" ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\u200b", "\ufeff"]
            + ["\u0301", "\u0308", "!", "?.", "--", "$", "😀", "🇻🇳", "\U000e0001", "\ue000"]
            + ["\u088f", "\U0001fae8", "<pad>", "<unk>", "<pa"])


def _random_texts(seed: int, count: int) -> list:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40))) for _ in range(count)]


def test_random_texts_match_the_tokenizer(testdata):
    tok, words = _pair(_config(testdata))
    texts = _random_texts(1, 4000)
    _assert_same(tok, words, texts)
    # Again with a warm cache, in other batch shapes.
    for start in range(0, len(texts), 333):
        _assert_same(tok, words, texts[start:start + 333])


def test_real_text_matches_the_tokenizer(testdata):
    tok, words = _pair(_config(testdata))
    corpus = (testdata / "corpus.txt").read_text(encoding="utf-8")
    lines = corpus.splitlines()
    _assert_same(tok, words, lines + [corpus, "", " ", "\n\n"])


def test_added_tokens_are_left_to_the_tokenizer(testdata):
    tok, words = _pair(_config(testdata))
    texts = ["before<pad>after", "<unk>", "a <pad> b <unk>c", "<pa d>", "no token here"]
    assert [words._direct(t) for t in texts] == [True, True, True, False, False]
    _assert_same(tok, words, texts)


def test_code_points_after_unicode_14_are_left_to_the_tokenizer(testdata):
    tok, words = _pair(_config(testdata))
    assert words._direct("new letter \u088f here")          # ARABIC LETTER ... (Unicode 17)
    assert words._direct("emoji \U0001fae8")                # SHAKING FACE (Unicode 15)
    assert words._direct("lone \ud800 surrogate") is True
    assert not words._direct("Tiếng Việt, 中文, 😀, \ue000, café, Ωmega, ß, \xa0, \u0301")
    _assert_same(tok, words, ["new letter \u088f here", "emoji \U0001fae8", "plain"])


def test_nfc_normalizer(testdata):
    config = _config(testdata, normalizer={"type": "NFC"})
    tok, words = _pair(config)
    decomposed = "cafe\u0301 Vie\u0323\u0302t"
    assert words._direct(decomposed)
    assert not words._direct(unicodedata.normalize("NFC", decomposed))
    _assert_same(tok, words, [decomposed, unicodedata.normalize("NFC", decomposed)] + _random_texts(2, 2000))


def test_a_full_cache_starts_again_without_changing_ids(testdata):
    tok, words = _pair(_config(testdata), max_words=50)
    texts = _random_texts(3, 1500)
    for start in range(0, len(texts), 100):
        _assert_same(tok, words, texts[start:start + 100])
    assert 0 < len(words._pieces) <= 50 and 0 < len(words._chunks) <= 50


def test_long_words_are_encoded_and_not_kept(testdata):
    tok, words = _pair(_config(testdata))
    rng = random.Random(5)
    long_texts = ["".join(rng.choice("abcdefgh中文") for _ in range(200)) + " tail" for _ in range(50)]
    punctuated = ",".join(long_texts[:5]) + "," + "!" * 300
    _assert_same(tok, words, long_texts + [long_texts[0], punctuated, "x" * 100_000])
    assert max(map(len, words._chunks)) <= bpe_words.MAX_KEY_CHARS
    assert 0 < len(words._pieces) and max(map(len, words._pieces)) <= bpe_words.MAX_KEY_CHARS


def _model_ids(tok, word: str) -> list:
    """The model's ids for one word, whole: what the tokenizer gives a text of that word."""
    return [t.id for t in tok.model.tokenize(word.encode("utf-8").decode("latin-1").translate(BYTE_TABLE))]


def _long_words(testdata, length: int) -> dict:
    """Words of every kind a text can hold without a split, ``length`` characters each."""
    rng = random.Random(11)
    prose = "".join((testdata / "corpus.txt").read_text(encoding="utf-8").split())
    kinds = {
        "prose without spaces": prose, "letters": "etaoinshrdlucmfwyp", "one letter": "a", "two letters": "ab",
        "digits": "0123456789", "Vietnamese": "ăâđêôơưáàảãạấầẩẫậệếềểễ", "CJK": "中文字词语句段篇",
        "emoji": "😀🇻🇳", "punctuation": "!?.,;:-", "spaces": " ", "line breaks": "\n",
    }
    words = {}
    for name, alphabet in kinds.items():
        if name == "prose without spaces":
            words[name] = (prose * (length // len(prose) + 1))[:length]
        elif len(alphabet) <= 2:
            words[name] = (alphabet * length)[:length]
        else:
            words[name] = "".join(rng.choice(alphabet) for _ in range(length))
    return words


@pytest.mark.parametrize("part_bytes,overlap", [(64, 8), (256, 32), (bpe_words.PART_BYTES, bpe_words.PART_OVERLAP)])
def test_long_words_in_parts_are_the_models_ids(testdata, part_bytes, overlap):
    tok, _ = _pair(_config(testdata))
    parts = bpe_words._Parts(tok, part_bytes, overlap)
    for name, word in _long_words(testdata, max(3000, 2 * part_bytes + 999)).items():
        got = parts.ids(word)
        assert got is not None, name
        assert np.frombuffer(got, dtype=np.int32).tolist() == _model_ids(tok, word), name
    assert parts._pairs and all(parts._pairs.values())   # joins were checked


def test_a_join_is_made_only_where_the_check_proves_it(testdata):
    """Without an overlap the only join is the cut itself: the check refuses most, and
    joining there anyway gives wrong ids."""
    tok, _ = _pair(_config(testdata))
    words = _long_words(testdata, 20000)
    checked = bpe_words._Parts(tok, 100, 0)
    trusting = bpe_words._Parts(tok, 100, 0)
    trusting._joins = lambda a, b: True
    wrong = 0
    for word in (words["prose without spaces"], words["letters"]):
        assert checked.ids(word) is None
        wrong += np.frombuffer(trusting.ids(word), dtype=np.int32).tolist() != _model_ids(tok, word)
    assert wrong == 2
    assert not all(checked._pairs.values())


def test_a_word_without_a_proven_join_is_encoded_whole(testdata):
    calls = []

    class Refusing(bpe_words._Parts):
        def _joins(self, a, b):
            calls.append((a, b))
            return False

    tok, words = _pair(_config(testdata), parts=Refusing)
    long_words = list(_long_words(testdata, 2 * bpe_words.PART_BYTES + 10).values())
    _assert_same(tok, words, long_words + ["short words still work"])
    assert calls


def test_a_failed_first_join_stops_after_two_parts(testdata):
    tok, _ = _pair(_config(testdata))
    word = _long_words(testdata, 3000)["letters"]

    class Spy:
        def __init__(self, plain):
            self.plain, self.calls = plain, []

        def encode_batch_fast(self, texts, **kwargs):
            self.calls.append(len(texts))
            return self.plain.encode_batch_fast(texts, **kwargs)

        encode_batch = encode_batch_fast

    for joins, calls in ((None, [2, 3000 // 100 - 2]), (lambda a, b: False, [2])):
        parts = bpe_words._Parts(tok, 100, 8)
        parts._prepare()
        parts._plain = spy = Spy(parts._plain)
        if joins is not None:
            parts._joins = joins
        assert (parts.ids(word) is None) == (joins is not None)
        assert spy.calls == calls


def test_parts_need_the_vocabulary_to_allow_them(testdata):
    tok, words = _pair(_config(testdata))
    longest = max(map(len, tok.get_vocab(with_added_tokens=False)))
    word = _long_words(testdata, 4000)["letters"]
    assert bpe_words._Parts(tok, longest, 2).ids(word) is None   # a part could be a token
    assert bpe_words._Parts(tok, longest + 1, 2).ids(word) is not None
    prefixed = json.loads(_config(testdata))
    prefixed["model"]["continuing_subword_prefix"] = "##"
    assert ByteLevelWords.for_tokenizer(tok, json.dumps(prefixed))._parts is None
    assert words._parts is not None


def test_threads_share_the_parts(testdata):
    tok, _ = _pair(_config(testdata))
    parts = bpe_words._Parts(tok, 128, 16)
    long_words = list(_long_words(testdata, 3000).values())
    wanted = [_model_ids(tok, w) for w in long_words]
    failures = []

    def work(k):
        for word, want in zip(long_words[k:] + long_words[:k], wanted[k:] + wanted[:k]):
            if np.frombuffer(parts.ids(word), dtype=np.int32).tolist() != want:
                failures.append(k)

    run_in_threads(work, 6)   # all at once on first use: the vocabulary is read once
    assert failures == []


def test_threads_share_one_encoder(testdata):
    tok, words = _pair(_config(testdata), max_words=200)
    batches = [_random_texts(10 + k, 300) for k in range(8)]
    wanted = [_expected(tok, b) for b in batches]
    failures = []

    def work(k):
        for _ in range(3):
            flat, lengths = words.encode_batch(batches[k])
            if not (np.array_equal(flat, wanted[k][0]) and np.array_equal(lengths, wanted[k][1])):
                failures.append(k)

    run_in_threads(work, 8)
    assert failures == []


@pytest.mark.parametrize("changes", [
    {"normalizer": {"type": "Lowercase"}},
    {"normalizer": {"type": "NFKC"}},
    {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}},
    {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}},
    {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\d"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}},
    {"pre_tokenizer": {"type": "Whitespace"}},
])
def test_other_configurations_get_no_word_encoder(testdata, changes):
    config = _config(testdata, **changes)
    assert ByteLevelWords.for_tokenizer(Tokenizer.from_str(config), config) is None


def test_dropout_and_other_models_get_no_word_encoder(testdata):
    config = json.loads(_config(testdata))
    config["model"]["dropout"] = 0.1
    text = json.dumps(config)
    assert ByteLevelWords.for_tokenizer(Tokenizer.from_str(text), text) is None
    for name in ("hf_wordpiece.json", "hf_unigram.json"):
        text = (testdata / name).read_text(encoding="utf-8")
        assert ByteLevelWords.for_tokenizer(Tokenizer.from_str(text), text) is None


def test_the_adapter_uses_it_and_can_be_told_not_to(testdata):
    path = str(testdata / "hf_bytelevel_bpe.json")
    data = (testdata / "hf_bytelevel_bpe.json").read_bytes()
    with_words = load_tokenizer("hf_json", path, data)
    without = load_tokenizer("hf_json", path, data, accelerators=False)
    assert with_words._words is not None and without._words is None
    # No word encoder; gigatoken, where it is installed, on its own threads (test_gigatoken_accel.py).
    assert not isinstance(load_tokenizer("hf_json", path, data, word_encoder=False)._words, ByteLevelWords)
    texts = _random_texts(4, 500)
    a, b = with_words.encode_batch(texts), without.encode_batch(texts)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_byte_table_is_hf_byte_level():
    # HF's ByteLevel alphabet is the 256 characters the table maps bytes to.
    assert sorted(ByteLevel.alphabet()) == sorted(chr(b).translate(BYTE_TABLE) for b in range(256))
    for b in range(256):
        piece = bytes([b]).decode("latin-1")
        if b < 0x80:
            (mapped, _), = ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(piece)
            assert mapped == piece.translate(BYTE_TABLE)


def test_chunk_cuts_at_the_splits_whitespace():
    import re

    import regex

    space = regex.compile(r"\s")
    ours = re.compile(f"[{bpe_words.WHITE_SPACE}]")
    differ = [cp for cp in range(0x110000)
              if bool(space.match(chr(cp))) != bool(ours.match(chr(cp)))]
    assert differ == []
    assert bpe_words.CHUNK.findall("a  b\n\nc, d\u3000e ") == ["a", "  b", "\n\nc,", " d", "\u3000e", " "]


def test_isalpha_is_the_splits_letter_class_on_unicode_14():
    """The encoder takes a chunk of letters (" ?\\p{L}+") as one word by ``str.isalpha``."""
    import regex

    letter = regex.compile(r"\p{L}")
    differ = [cp for start, end in ASSIGNED for cp in range(start, end + 1)
              if chr(cp).isalpha() != bool(letter.match(chr(cp)))]
    assert differ == []


@pytest.mark.slow     # every assigned code point: several seconds
def test_split_agrees_with_the_tokenizer_on_every_unicode_14_code_point():
    """Every assigned code point, between letters, digits, spaces, apostrophes and itself.

    This is the premise of the word encoder: if an upgrade of ``regex`` or of the
    tokenizers library ever classifies an assigned character differently, this fails.
    """
    import regex

    split = regex.compile(GPT2_PATTERN).findall
    pre = ByteLevel(add_prefix_space=False, use_regex=True)
    code_points = [cp for start, end in ASSIGNED for cp in range(start, end + 1)]
    assert len(code_points) > 280_000
    for at in range(0, len(code_points), 8192):
        text = "".join(f"{c}a{c} {c}{c}1{c}  {c}'{c}\n{c}." for c in map(chr, code_points[at:at + 8192]))
        ours = [w.encode("utf-8").decode("latin-1").translate(BYTE_TABLE) for w in split(text)]
        theirs = [piece for piece, _ in pre.pre_tokenize_str(text)]
        if ours != theirs:
            for c in map(chr, code_points[at:at + 8192]):
                one = f"{c}a{c} {c}{c}1{c}  {c}'{c}\n{c}."
                assert [w.encode("utf-8").decode("latin-1").translate(BYTE_TABLE) for w in split(one)] == \
                    [p for p, _ in pre.pre_tokenize_str(one)], f"U+{ord(c):04X}"


@pytest.mark.slow     # a real 50k-vocabulary tokenizer
def test_realdata_olmo_tokenizer(realdata):
    """GPT-NeoX/OLMo: NFC normalizer, added tokens made of spaces, on the real datasets."""
    path = realdata / "tokenizers" / "olmo_gpt-neox-20b-pii-special.tokenizer.json"
    config = path.read_text(encoding="utf-8")
    tok = Tokenizer.from_str(config)
    words = ByteLevelWords.for_tokenizer(tok, config)
    assert words is not None and words._nfc
    texts = []
    for name in ("alpaca_en_demo.jsonl", "xcopa_test.vi.jsonl", "oasst_prompt_lottery_en_250_text.jsonl"):
        for line in (realdata / "data" / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            texts.extend(map(str, record.values()) if isinstance(record, dict) else [record])
    # Nearly every real text takes the word path (the rest hold an added token's spaces).
    assert sum(map(words._direct, texts)) < 0.02 * len(texts)
    texts += ["x" + " " * 30 + "y", "<|endoftext|>", unicodedata.normalize("NFD", "Tiếng Việt")]
    # Words long enough to be encoded in parts, from the same texts without their spaces.
    letters = "".join(ch for ch in "".join(texts) if ch.isalpha())
    texts += [letters[:40_000], letters[40_000:90_000].lower(), "9" * 40_000]
    _assert_same(tok, words, texts)
    assert words._parts._plain is not None and words._parts._pairs   # GPT-NeoX allows parts


def test_the_batch_check_of_unicode_14_agrees_with_the_pattern_on_every_code_point():
    """``outside_unicode14_in`` (a table over a batch) finds exactly the texts the
    pattern finds, for every code point (lone surrogates included), alone and
    among others in a batch."""
    from mintdim_beam.tokenization.accel.bpe_words import outside_unicode14, outside_unicode14_in

    pattern = outside_unicode14()
    points = [chr(c) for c in range(0x110000)]
    want = [i for i, c in enumerate(points) if pattern.search(c) is not None]
    assert outside_unicode14_in(points) == want
    assert 0xD800 in want and 0x41 not in want and len(want) > 800_000
    rng = random.Random(3)
    pool = ["", "ascii", "Tiếng Việt", "中文", "\U0001fae8", "a\u088fb", "\ud800", "e\u0301"]
    for _ in range(200):
        texts = [rng.choice(pool) for _ in range(rng.randrange(1, 9))]
        assert outside_unicode14_in(texts) == [i for i, t in enumerate(texts) if pattern.search(t)]
    # Both ways of looking: few code points above U+0377, the first unassigned one (Latin
    # text, accents included), and many (CJK).
    for filler in ("plain Latin text, café " * 40, "中文的句子" * 40):
        texts = [filler, filler + "a\u088fb", filler, "\ud800" + filler, filler]
        assert outside_unicode14_in(texts) == [1, 3]
