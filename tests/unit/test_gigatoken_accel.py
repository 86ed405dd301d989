"""gigatoken (``accel.gigatoken_bpe``) gives the library's ids, or is not used.

gigatoken is an optional dependency (``pip install mintdim-beam[fast]``): every test here
skips without it. Each HF BPE file of ``tests/testdata`` and OLMo's GPT-NeoX tokenizer
(``../shared/realdata``, skipped when absent) is encoded through the accelerator and by
the library itself on real and adversarial texts; configurations gigatoken gets wrong
are refused by the gate or by the probe; an error, a panic or a wrong answer of
gigatoken switches it off with the library's ids. The build compared byte for byte with
and without accelerators is ``tests/e2e/test_gigatoken_build.py``.
"""

from __future__ import annotations

import json
import random
from array import array
from itertools import chain

import numpy as np
import pytest
from tokenizers import Tokenizer

from conftest import REALDATA, TESTDATA
from mintdim_beam.tokenization.accel import gigatoken_bpe
from mintdim_beam.tokenization.accel.bpe_words import ByteLevelWords
from mintdim_beam.tokenization.accel import battery
from mintdim_beam.tokenization.accel.battery import probe_texts
from mintdim_beam.tokenization.accel.gigatoken_bpe import GigatokenBPE, supported
from mintdim_beam.tokenization.adapters import HF_JSON, load_tokenizer

pytest.importorskip("gigatoken")
if not gigatoken_bpe.available():
    pytest.skip("gigatoken older than the release this accelerator was checked against", allow_module_level=True)

OLMO = REALDATA / "tokenizers" / "olmo_gpt-neox-20b-pii-special.tokenizer.json"


def _hf_bpe_files() -> list:
    """Every HF BPE ``tokenizer.json`` of the test data (byte-level or not)."""
    return [p for p in sorted(TESTDATA.glob("hf_*.json"))
            if json.loads(p.read_text(encoding="utf-8"))["model"]["type"] == "BPE"]


def _library(text: str) -> Tokenizer:
    tok = Tokenizer.from_str(text)
    tok.no_padding()
    tok.no_truncation()
    return tok


def _want(tok, texts):
    rows = [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=False)]
    return (np.fromiter(chain.from_iterable(rows), dtype=np.int64),
            np.fromiter(map(len, rows), dtype=np.int64, count=len(rows)))


def _assert_same(got, want, texts) -> None:
    flat, lengths = got
    assert lengths.tolist() == want[1].tolist()
    if not np.array_equal(flat.astype(np.int64), want[0]):
        starts = np.concatenate(([0], np.cumsum(lengths)))
        for i, text in enumerate(texts):
            assert flat[starts[i]:starts[i + 1]].tolist() == want[0][starts[i]:starts[i + 1]].tolist(), repr(text)
    assert flat.dtype == np.int32 and lengths.dtype == np.int64


ALPHABET = (list("aZéßΩжあ中한ا") + list("07٣½Ⅳ") + ["'", "'s", "'ll", "'D", "’"]
            + [" ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\u200b",
               "\ufeff", "\u0301", "\u0308", "!", "?.", "--", "$", "😀", "🇻🇳", "👍🏽", "\U000e0001", "\ue000",
               "\x00", "\x7f", "\\ud83d"]
            + ["\u088f", "\U0001fae8"]            # assigned after Unicode 14: the fallback's
            + ["<pad>", "<unk>", "<pa", "<|endoftext|>", "<|padding|>", "|||EMAIL_ADDRESS|||", "|||", "    "])


def _texts(seed: int = 0, count: int = 2000) -> list:
    rng = random.Random(seed)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 48))) for _ in range(count)]
    texts += (TESTDATA / "corpus.txt").read_text(encoding="utf-8").splitlines()
    return texts + probe_texts(["<pad>", "<unk>", "<|endoftext|>", "<|padding|>", "  ", "   "], seed=seed + 1)


def _encoder(text: str, **kwargs) -> tuple:
    tok = _library(text)
    enc = GigatokenBPE.for_tokenizer(tok, text, **kwargs)
    return tok, enc


@pytest.mark.parametrize("path", _hf_bpe_files(), ids=lambda p: p.name)
def test_every_hf_bpe_of_the_test_data_gives_the_library_ids(path):
    """Byte-level files and SentencePiece-style byte fallback take gigatoken; the others
    are refused by the gate (gigatoken cannot load ``hf_bpe_unk.json``: not every byte
    is in its vocabulary)."""
    text = path.read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    config = json.loads(text)
    if supported(config) is not None:     # the gate: byte-level, or byte fallback as SentencePiece has it
        assert enc is None and config["pre_tokenizer"]["type"] != "ByteLevel"
        return
    assert enc is not None and enc.active, enc and enc.reason
    texts = _texts()
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert enc.calls >= 1 and enc.fallback_texts > 0        # the Unicode 15 characters went to the library


def test_the_adapter_takes_gigatoken_and_gives_the_plain_bytes():
    path = TESTDATA / "hf_bytelevel_bpe.json"
    data = path.read_bytes()
    fast = load_tokenizer(HF_JSON, str(path), data, threads=1)
    plain = load_tokenizer(HF_JSON, str(path), data, threads=1, accelerators=False)
    threads = load_tokenizer(HF_JSON, str(path), data, threads=1, word_encoder=False)
    fast.prepare()
    assert isinstance(fast._words, GigatokenBPE) and fast._words.active
    assert fast._long_words is fast._words and not fast._words._parallel
    assert isinstance(threads._words, GigatokenBPE) and threads._words._parallel
    assert plain._words is None and plain._long_words is None
    texts = _texts(3) + ["x" * (1 << 20), "a b " * (1 << 19)]      # two long texts, encoded whole
    want = plain.encode_batch(texts)
    for adapter in (fast, threads):
        got = adapter.encode_batch(texts)
        assert np.array_equal(got[1], want[1])
        assert np.array_equal(got[0].astype(np.int64), want[0].astype(np.int64))


def test_without_gigatoken_the_adapter_keeps_the_word_encoder(monkeypatch):
    monkeypatch.setattr(gigatoken_bpe, "available", lambda: False)
    path = TESTDATA / "hf_bytelevel_bpe.json"
    adapter = load_tokenizer(HF_JSON, str(path), path.read_bytes(), threads=1)
    assert isinstance(adapter._words, ByteLevelWords)


@pytest.fixture
def olmo() -> str:
    if not OLMO.exists():
        pytest.skip(f"real third-party tokenizer not available ({OLMO})")
    return OLMO.read_text(encoding="utf-8")


def test_gpt_neox_gives_the_library_ids(olmo):
    """No unk token, so builds refuse it today; compared with the library directly. Its
    added tokens (runs of 2-24 spaces, normalized, under NFC; PII markers) are matched
    inside texts."""
    tok, enc = _encoder(olmo)
    assert enc is not None and enc.active, enc and enc.reason
    texts = _texts(4) + ["e\u0301 caf\u00e9", "Å", "x  |||PHONE_NUMBER|||  y", "  " * 40 + "\n" + " " * 25]
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf_bytelevel_bpe.json", "olmo"])
def test_every_unicode_14_code_point_gives_the_library_ids(name, olmo):
    """Each code point assigned in Unicode 14, in the probe's contexts (the probe at load
    takes every 199th above U+0800)."""
    text = olmo if name == "olmo" else (TESTDATA / name).read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    assert enc.active
    texts = battery._code_point_sweep(1)
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert enc.fallback_texts < len(texts) // 10      # NFC aside, gigatoken encoded them


def _variant(change) -> str:
    config = json.loads((TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8"))
    change(config)
    return json.dumps(config)


def _added(config, content, **flags):
    top = max(max(config["model"]["vocab"].values()), max(t["id"] for t in config["added_tokens"]))
    token = {"id": top + 1, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": False}
    token.update(flags)
    config["added_tokens"].append(token)


@pytest.mark.parametrize("change", [
    lambda c: _added(c, "hello", single_word=True),
    lambda c: _added(c, "<x>", special=True, lstrip=True),
    lambda c: _added(c, "<x>", special=True, rstrip=True),
    lambda c: c["model"].__setitem__("end_of_word_suffix", "</w>"),
    lambda c: c["model"].__setitem__("dropout", 0.5),
    lambda c: c.__setitem__("pre_tokenizer", None),
    lambda c: c.__setitem__("normalizer", {"type": "Lowercase"}),
    lambda c: c["model"].__setitem__("byte_fallback", True),
], ids=["single_word", "lstrip", "rstrip", "suffix", "dropout", "no_pre_tokenizer", "lowercase", "byte_fallback"])
def test_configurations_gigatoken_gets_wrong_are_refused(change):
    """Measured with gigatoken 0.10: each of these is silently ignored by it (or not its
    model), so the gate refuses it before gigatoken loads anything."""
    text = _variant(change)
    _, enc = _encoder(text)
    assert enc is None and supported(json.loads(text)) is not None


@pytest.mark.parametrize("change", [
    lambda c: _added(c, "<|endoftext|>", special=True),
    lambda c: _added(c, "zqzq"),
    lambda c: c.__setitem__("normalizer", {"type": "NFC"}),
    lambda c: c["pre_tokenizer"].__setitem__("add_prefix_space", True),
    lambda c: c["model"].__setitem__("ignore_merges", True),
    lambda c: c.__setitem__("pre_tokenizer", {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "behavior": "Isolated", "invert": False, "pattern": {
            "Regex": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                     r"|\s*[\r\n]+|\s+(?!\S)|\s+"}},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}),
], ids=["special", "non_special", "nfc", "prefix_space", "ignore_merges", "llama3_split"])
def test_configurations_that_pass_give_the_library_ids(change):
    text = _variant(change)
    tok, enc = _encoder(text)
    assert enc is not None and enc.active, enc and enc.reason
    texts = _texts(5, 1000) + ["<|endoftext|>a zqzq", "IT'S 12345 x\r\n\r\n  y"]
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)


def test_an_unknown_split_regex_fails_to_load_and_the_library_encodes():
    text = _variant(lambda c: c.__setitem__("pre_tokenizer", {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "behavior": "Isolated", "invert": False, "pattern": {"Regex": r"\p{L}+|\s+|."}},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}))
    tok, enc = _encoder(text)
    assert enc is not None and not enc.active and "failed" in enc.reason
    texts = _texts(6, 300)
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)


def test_the_probe_finds_a_vocabulary_that_differs(olmo):
    """GPT-NeoX with ``<|endoftext|>`` listed twice, as id 0 and as a new id: the library
    keeps id 0, gigatoken counts one more token."""
    config = json.loads(olmo)
    config["added_tokens"].append({"id": 50280, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                                   "rstrip": False, "normalized": False, "special": True})
    text = json.dumps(config)
    tok, enc = _encoder(text)
    assert not enc.active and "vocabulary" in enc.reason
    texts = ["a<|endoftext|>b", "plain"]
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)


def test_a_library_object_that_pads_is_refused_before_the_battery():
    """A ``tokenizer.json`` may carry padding: a library object left padding would answer
    every battery text at the longest one's length. The probe refuses it without
    encoding anything."""
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok = _library(text)
    tok.enable_padding(pad_id=0, pad_token="<pad>", length=4096)
    from gigatoken.gigatoken_rs import load_hf_json

    why = gigatoken_bpe.probe(tok, load_hf_json(text), json.loads(text),
                              texts=["x" * 10_000_000])   # would be 10 M ids a text if encoded
    assert why == "the library's tokenizer pads or truncates its answers"
    tok.no_padding()
    tok.enable_truncation(8)
    assert gigatoken_bpe.probe(tok, load_hf_json(text), json.loads(text)) == why


def test_the_probe_finds_ids_that_differ():
    """A battery text whose ids gigatoken gets wrong (here: a backend that drops the
    last token of every text) switches it off."""
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok = _library(text)
    from gigatoken.gigatoken_rs import load_hf_json

    real = load_hf_json(text)

    class Short:
        vocab_size, vocab, merges = real.vocab_size, real.vocab, real.merges

        def encode_batch(self, texts, parallel=False):
            import awkward as ak

            return ak.Array([row[:-1] if len(row) else row for row in real.encode_batch_list(texts, parallel=False)])

    why = gigatoken_bpe.probe(tok, Short(), json.loads(text))
    assert why is not None and why.startswith("text ")
    assert gigatoken_bpe.probe(tok, real, json.loads(text)) is None


class _Panic(BaseException):
    """What pyo3 raises for a Rust panic derives from BaseException, not Exception."""


@pytest.mark.parametrize("failure", ["raise", "panic", "rows", "ids"])
def test_a_failing_gigatoken_is_switched_off_and_the_library_encodes(failure):
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    assert enc.active
    real = enc._backend

    class Broken:
        def encode_batch(self, texts, parallel=False):
            if failure == "raise":
                raise RuntimeError("boom")
            if failure == "panic":
                raise _Panic("index out of bounds")
            rows = real.encode_batch(texts[:-1] if failure == "rows" else texts, parallel=False)
            if failure == "ids":
                import awkward as ak

                return ak.Array([[10 ** 6] + row for row in ak.to_list(rows)])
            return rows

    enc._backend = Broken()
    texts = _texts(7, 200)
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert not enc.active and "failed" in enc.reason
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)    # and stays off


def test_a_failure_in_the_probe_is_no_error(monkeypatch):
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text)

    def panic(*args, **kwargs):
        raise _Panic("thread panicked")

    monkeypatch.setattr(gigatoken_bpe, "probe", panic)
    assert not enc.active and "_Panic" in enc.reason
    texts = _texts(8, 100)
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)


def test_mixed_batches_keep_the_text_order():
    """Texts the fallback takes (code points after Unicode 14) sit between texts
    gigatoken takes; empty texts anywhere."""
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text, fallback=ByteLevelWords.for_tokenizer(_library(text), text))
    enc.prepare()
    rng = random.Random(9)
    pool = ["", "plain text", "a\u088fb", "\U0001fae8 new emoji", "中文 text", "  ", "e\u0301"]
    for _ in range(30):
        texts = [rng.choice(pool) for _ in range(rng.randrange(1, 12))]
        got = enc.encode_batch(texts)
        plain = [enc._fallback.encode_batch([t]) for t in texts]
        assert got[1].tolist() == [int(p[1][0]) for p in plain]
        assert got[0].tolist() == [i for p in plain for i in p[0].tolist()]
    assert enc.fallback_texts > 0 and enc.active


def test_small_calls_before_the_probe_do_not_set_gigatoken_up():
    """The launcher checks templates with a few short texts: the library answers, and
    gigatoken is not loaded for them."""
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    texts = ["\n\n", "Q: ", "hello world"]
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert not enc._ready and enc.calls == 0
    texts = _texts(15, 3000)        # more than PROBE_AFTER characters: set up, then encoded
    assert sum(map(len, texts)) >= gigatoken_bpe.PROBE_AFTER
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert enc._ready and enc.calls == 1


def test_long_texts_are_appended_whole():
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    long = "word " * 300_000 + "tail"
    out = array("i", [7])
    assert enc.append_long(long, out)
    assert out.tolist() == [7] + tok.encode(long, add_special_tokens=False).ids
    out = array("i")
    assert not enc.append_long("a\u088f" * 10, out) and not out.tolist()   # the library's, whole


def test_two_threads_at_once_give_the_library_ids():
    from conftest import run_in_threads

    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    enc.prepare()
    batches = [_texts(seed, 300) for seed in range(10, 14)]
    wants = [_want(tok, b) for b in batches]
    results = {}

    def work(k):
        results[k] = enc.encode_batch(batches[k])

    run_in_threads(work, len(batches))
    for k, texts in enumerate(batches):
        _assert_same(results[k], wants[k], texts)


def test_the_growing_cache_is_dropped_by_loading_gigatoken_again(monkeypatch):
    """gigatoken's word cache only grows; past the budget its tokenizer is loaded again
    from the same bytes, and the ids stay the library's."""
    text = (TESTDATA / "hf_bytelevel_bpe.json").read_text(encoding="utf-8")
    tok, enc = _encoder(text)
    assert enc.active
    first = enc._backend
    monkeypatch.setattr(gigatoken_bpe, "CACHE_BUDGET", -1)     # every call is over budget
    texts = _texts(16, 400)
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert enc.reloads == 1 and enc._backend is not first and enc.active
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert enc.reloads == 2
    monkeypatch.setattr(gigatoken_bpe, "CACHE_BUDGET", 1 << 40)
    monkeypatch.setattr(gigatoken_bpe, "_rss", lambda: None)    # no /proc: by characters instead
    monkeypatch.setattr(gigatoken_bpe, "CACHE_CHARS", 10)
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    assert enc.reloads == 3


def _sentencepiece_style(shape: str) -> str:
    """A SentencePiece BPE with byte fallback as HF converts one (Llama 2: a
    ``Prepend``/``Replace`` normalizer; Mistral-like: a ``Metaspace`` pre-tokenizer),
    trained here on the test corpus, its 256 ``<0xXX>`` tokens in the model's vocabulary
    and a pad token configured."""
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if shape == "llama2":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    specials = ["<unk>", "<s>", "</s>", "<pad>"] + [f"<0x{b:02X}>" for b in range(256)]
    tok.train_from_iterator((TESTDATA / "corpus.txt").read_text(encoding="utf-8").splitlines(),
                            trainers.BpeTrainer(vocab_size=800, special_tokens=specials, show_progress=False))
    tok.enable_padding(pad_id=3, pad_token="<pad>")
    config = json.loads(tok.to_str())
    kept = []
    for token in config["added_tokens"]:
        if token["content"].startswith("<0x"):
            config["model"]["vocab"][token["content"]] = token["id"]
        else:
            kept.append(token)
    config["added_tokens"] = kept
    return json.dumps(config, ensure_ascii=False)


@pytest.mark.parametrize("shape", ["llama2", "metaspace"])
def test_sentencepiece_style_bpe_gives_the_library_ids(shape, tmp_path):
    text = _sentencepiece_style(shape)
    assert gigatoken_bpe.sentencepiece_style(json.loads(text))
    tok, enc = _encoder(text)
    assert enc is not None and enc.active, enc and enc.reason
    texts = _texts(17) + ["\u2581", "<0x41>", "a  b", " lead", "trail ", "漢字 😀 \x00"]
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)
    path = tmp_path / "spiece.json"
    path.write_text(text, encoding="utf-8")
    fast = load_tokenizer(HF_JSON, str(path), path.read_bytes(), threads=1)
    plain = load_tokenizer(HF_JSON, str(path), path.read_bytes(), threads=1, accelerators=False)
    fast.prepare()
    assert isinstance(fast._words, GigatokenBPE) and fast._words.active
    got, want = fast.encode_batch(texts), plain.encode_batch(texts)
    assert np.array_equal(got[1], want[1]) and np.array_equal(got[0].astype(np.int64), want[0].astype(np.int64))


def test_sentencepiece_style_without_every_byte_token_is_refused_by_the_probe():
    """The library gives ``<unk>`` for a byte that has no token; gigatoken does not: the
    probe sees it on the battery's CJK and emoji, and the library encodes."""
    config = json.loads(_sentencepiece_style("llama2"))
    for b in range(0xE4, 0xEA):
        config["model"]["vocab"][f"zz{b}"] = config["model"]["vocab"].pop(f"<0x{b:02X}>")
    text = json.dumps(config, ensure_ascii=False)
    tok, enc = _encoder(text)
    assert not enc.active and enc.reason.startswith("text ")
    texts = ["中文 a", "x 漢字 y"]
    _assert_same(enc.encode_batch(texts), _want(tok, texts), texts)


@pytest.mark.parametrize("change", [
    lambda c: c.__setitem__("normalizer", {"type": "NFC"}),
    lambda c: c["normalizer"]["normalizers"].reverse(),
    lambda c: c.__setitem__("pre_tokenizer", {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}),
], ids=["nfc", "replace_first", "byte_level"])
def test_other_byte_fallback_configurations_are_refused(change):
    config = json.loads(_sentencepiece_style("llama2"))
    change(config)
    assert not gigatoken_bpe.sentencepiece_style(config) and supported(config) is not None
