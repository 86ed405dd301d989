"""gigatoken (``accel.gigatoken_sp``) gives the library's ids for a SentencePiece BPE
model, or is not used.

gigatoken is optional (``pip install mintdim-beam[fast]``): every test here skips
without it. The models are trained here from the test corpus, in the settings the gate
takes (Llama 2's: byte fallback, no normalization map, whitespace kept) and in ones it
refuses; gigatoken's ids are compared with the library's on real, random and
adversarial text. Whole builds are compared in ``tests/e2e/test_gigatoken_build.py``.
"""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
import sentencepiece as spm

from conftest import REALDATA, TESTDATA
from mintdim_beam.tokenization.accel import gigatoken_bpe, gigatoken_sp
from mintdim_beam.tokenization.accel.battery import probe_texts
from mintdim_beam.tokenization.adapters import SentencePieceTokenizer
from mintdim_beam.tokenization.sp_model import read_model

pytest.importorskip("gigatoken")
if not gigatoken_bpe.available():
    pytest.skip("gigatoken older than the release this accelerator was checked against", allow_module_level=True)

LINES = (TESTDATA / "corpus.txt").read_text(encoding="utf-8").splitlines()
LLAMA = dict(normalization_rule_name="identity", remove_extra_whitespaces=False, split_digits=True,
             allow_whitespace_only_pieces=True, user_defined_symbols=["<|im_end|>"])


def train(**options) -> bytes:
    """A 600-piece SentencePiece BPE model with byte fallback and a pad piece."""
    buffer = io.BytesIO()
    spm.set_random_generator_seed(7)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES), model_writer=buffer, model_type="bpe", vocab_size=600,
        byte_fallback=True, pad_id=3, num_threads=1, minloglevel=2, character_coverage=1.0,
        shuffle_input_sentence=False, **options)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def llama() -> bytes:
    return train(**LLAMA)


ALPHABET = (list("aZéßΩжあ中한ا07٣½") + [" ", "  ", "\t", "\n", "\r\n", "\xa0", "\u3000", "\u200b", "\u2581",
                                          "\u0301", "😀", "🇻🇳", "\x00", "\x7f", "\ufeff"]
            + ["<s>", "</s>", "<unk>", "<pad>", "<|im_end|>", "<0x41>", "</", "s>", "<|im_", "    "])


def _texts(seed: int = 0, count: int = 2000) -> list:
    rng = random.Random(seed)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 48))) for _ in range(count)]
    return texts + LINES + probe_texts(["<s>", "</s>", "<unk>", "<pad>", "<|im_end|>"], seed=seed + 1)


def _adapters(data: bytes, threads: int = 1) -> tuple:
    fast = SentencePieceTokenizer("m.model", data, num_threads=threads)
    plain = SentencePieceTokenizer("m.model", data, num_threads=threads, accelerators=False)
    return fast, plain


def _assert_same(fast, plain, texts) -> None:
    got, want = fast.encode_batch(texts), plain.encode_batch(texts)
    assert got[1].tolist() == want[1].tolist()
    if not np.array_equal(got[0], want[0]):
        starts = np.concatenate(([0], np.cumsum(want[1])))
        for i, text in enumerate(texts):
            assert got[0][starts[i]:starts[i + 1]].tolist() == want[0][starts[i]:starts[i + 1]].tolist(), repr(text)
    assert got[0].dtype == want[0].dtype == np.int32


def test_the_gate_takes_llama_settings_only(llama):
    assert gigatoken_sp.supported(read_model(llama)) is None
    assert gigatoken_sp.supported(read_model(train(**{**LLAMA, "add_dummy_prefix": False}))) is None
    refused = {
        "sp_unigram.model": "not a BPE model",
        "sp_bpe.model": "no byte fallback",
        "sp_bytefallback.model": "extra whitespace removed",
    }
    for name, why in refused.items():
        assert gigatoken_sp.supported(read_model((TESTDATA / name).read_bytes())) == why, name
    assert gigatoken_sp.supported(read_model(train())) == "a normalization map (nmt_nfkc)"
    assert gigatoken_sp.supported(None) == "model settings unknown"
    for name in refused:
        fast, _ = _adapters((TESTDATA / name).read_bytes())
        assert fast._giga is None, name


@pytest.mark.parametrize("threads", [1, -1], ids=["calling_thread", "own_threads"])
def test_the_adapter_gives_the_library_ids(llama, threads):
    fast, plain = _adapters(llama, threads)
    assert plain._giga is None
    fast.prepare()
    assert fast._giga.active, fast._giga.reason
    texts = _texts()
    _assert_same(fast, plain, texts)
    giga = fast._giga
    assert giga.calls >= 1
    # Texts holding a control, unknown or user-defined piece's text are the library's.
    held = sum(any(s in t for s in ("<s>", "</s>", "<unk>", "<pad>", "<|im_end|>")) for t in texts)
    assert giga.fallback_texts == held > 0


def test_a_batch_without_special_text_goes_to_gigatoken_whole(llama):
    fast, plain = _adapters(llama)
    fast.prepare()
    texts = [t for t in LINES if "<" not in t] + ["a" * 20000, " " * 500 + "b", ""]
    _assert_same(fast, plain, texts)
    assert fast._giga.fallback_texts == 0 and fast._giga.calls == 1


def test_the_probe_finds_what_gigatoken_gets_wrong(llama):
    """gigatoken maps the text of a control piece to its id, which SentencePiece never
    does: the probe sees it when those texts are not routed away; and under an NFKC
    map it disagrees on some texts, which the gate refuses without asking."""
    import gigatoken

    sp = spm.SentencePieceProcessor(model_proto=llama)
    backend = gigatoken.Tokenizer.from_sentencepiece(llama).backend
    specials = ["<s>", "</s>", "<unk>", "<pad>", "<|im_end|>"]
    assert gigatoken_sp.probe(sp, backend, specials, direct=lambda t: any(s in t for s in specials)) is None
    why = gigatoken_sp.probe(sp, backend, specials, texts=["plain", "a </s> b"])
    assert why is not None and "'a </s> b'" in why
    nfkc = train()
    why = gigatoken_sp.probe(spm.SentencePieceProcessor(model_proto=nfkc),
                             gigatoken.Tokenizer.from_sentencepiece(nfkc).backend, specials)
    assert why is not None and why.startswith("text ")


def test_a_failing_gigatoken_gives_the_library_ids(llama):
    """An error in a call switches gigatoken off for the process; the batch is the
    library's."""
    fast, plain = _adapters(llama)
    fast.prepare()

    class Broken:
        vocab_size = fast.vocab_size

        def encode_batch(self, texts, parallel=False):
            raise RuntimeError("boom")

    fast._giga._backend = Broken()
    texts = LINES[:200]
    _assert_same(fast, plain, texts)
    assert not fast._giga.active and "boom" in fast._giga.reason


def test_the_real_sentencepiece_models_are_left_to_the_library():
    """T5 and the Llama export of the real set are Unigram models: neither reaches gigatoken."""
    folder = REALDATA / "tokenizers"
    if not folder.is_dir():
        pytest.skip("the real tokenizers are absent")
    for name in ("t5_spiece_32000.model", "kerashub_llama_export_vocab_290.model"):
        assert gigatoken_sp.supported(read_model((folder / name).read_bytes())) == "not a BPE model", name
    assert SentencePieceTokenizer("t5.model", (folder / "t5_spiece_32000.model").read_bytes())._giga is None
