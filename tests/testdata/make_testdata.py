"""Regenerate the small real tokenizers in tests/testdata/ and the bundled demo data.

Run ``python tests/testdata/make_testdata.py`` from anywhere; ``--check`` regenerates
into a temporary directory and fails if any committed file would change.

Why: the pipeline's tests must run offline against *real* SentencePiece and Hugging Face
tokenizer files (exact per-segment encoding, UNK positions and offsets, pad ids, the
refusal of files without unk or pad). Downloading a hub tokenizer is impossible in CI
and a hand-written vocabulary would not behave like a trained model, so we train tiny
models ourselves on text this project wrote (``textgen.py``: English plus Vietnamese
with diacritics, no third-party data) and commit the result.

What it writes, all deterministically (fixed seeds, ``num_threads=1`` for SentencePiece,
one thread for ``tokenizers``, sorted inputs, no file paths embedded). SentencePiece and
``BpeTrainer`` are reproducible as they are; ``WordPieceTrainer`` and ``UnigramTrainer``
(tokenizers 0.23.3) are not, see ``wordpiece_from_bpe`` and ``canonical_unigram``:

tests/testdata/
    corpus.txt              the generated training corpus (one sentence a line)
    sp_unigram.model        SentencePiece unigram, nmt_nfkc, pad 0 / unk 1, no bos/eos
    sp_bpe.model            SentencePiece BPE, identity normalization, unk 0 / pad 3
    sp_nopad.model          SentencePiece unigram without a pad id (must be refused)
    hf_bytelevel_bpe.json   byte-level BPE, padding + truncation configured (ignored)
    hf_bpe_unk.json         char-level BPE, Whitespace pre-tokenizer, [UNK] fires
    hf_wordpiece.json       BERT-style WordPiece, padding + truncation configured
    hf_unigram.json         HF Unigram (UnigramTrainer), Metaspace, unk_id in the model
    hf_nounk.json           byte-level BPE without unk_token: every byte covered, so no
                            unk is needed (unk_id null)
    hf_nopad.json           WordPiece without padding configured (must be refused)
    hf_bpe_nounk.json       char-level BPE without unk_token (must be refused: unknown
                            characters would vanish)
    hf_bytefallback.json    BPE with byte fallback and all 256 <0xNN> pieces, no unk_token
    hf_chat/                a model folder: byte-level BPE tokenizer.json without unk and
                            without padding, with chat tokens; tokenizer_config.json and
                            special_tokens_map.json name pad, eos and bos
    sp_bytefallback.model   SentencePiece BPE with byte fallback, bos/eos, a user-defined
                            <|im_end|>
    README.md               file table and *measured* behaviour on control chars etc.
mintdim_beam/demo/
    instructions.jsonl      ~300 English instruction records (duplicates, extra keys,
                            empty inputs, one CJK/emoji record for the UNK index)
    chat_vi.jsonl           ~100 Vietnamese prompt/response records
    demo.model              SentencePiece unigram (vocab 800) trained on both files
    README.md               what the files are, template literals that are UNK-free

The corpus has no CJK, no emoji and no ``{``, ``}`` or ``|``; the tokenizers without
byte fallback therefore map those to their unknown token. Every claim the READMEs make
about a tokenizer is measured here and checked with asserts before anything is trusted.
"""

from __future__ import annotations

import os

# One thread for the Rust trainers: parallel merges/pruning must not depend on timing.
# Set before ``tokenizers`` is imported, which reads them once.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse
import filecmp
import io
import json
import random
import sys
import tempfile
import unicodedata
from pathlib import Path

import sentencepiece as spm
import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import textgen  # noqa: E402  (sibling module; this file is run as a script)

TESTDATA_DIR = Path(__file__).resolve().parent
DEMO_DIR = TESTDATA_DIR.parent.parent / "mintdim_beam" / "demo"

CORPUS_SEED = 20240611
DEMO_SEED = 20240612
CHAT_SEED = 20240613
SP_SEED = 1234

CJK = "漢字"
EMOJI = "🙂"
PROBES = ["\n", "a\nb", "\t", "{", "}", CJK, EMOJI]
# Characters the generated text must never contain (see module docstring).
FORBIDDEN_CHARS = set("{}|") | set(CJK) | {EMOJI}

# Demo templates; their literals are checked against demo.model.
DEMO_TEMPLATES = {
    "instructions.jsonl (Alpaca style)":
        "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
    "instructions.jsonl (spec style)": "{instruction}\n\n{input}\n\n{output}",
    "chat_vi.jsonl": "Người dùng: {prompt}\n\nTrợ lý: {response}",
}
DEMO_LITERALS = [
    " ", "\n", "\n\n", "\t", ": ", "### ", "|", "{", "}",
    "### Instruction:\n", "\n\n### Input:\n", "\n\n### Response:\n", "### Response:\n",
    "Người dùng: ", "\n\nTrợ lý: ",
]
# Literals the demo templates use: these must stay UNK-free.
DEMO_CLEAN_LITERALS = [
    "\n\n", "### Instruction:\n", "\n\n### Input:\n", "\n\n### Response:\n", "### Response:\n",
    "Người dùng: ", "\n\nTrợ lý: ",
]

#: The added special tokens of hf_chat/tokenizer.json, ids 0..3.
CHAT_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]

DEMO_INSTRUCTION_RECORDS = 294      # + 1 CJK/emoji record + 5 duplicates = 300 lines
DEMO_EMOJI_INDEX = 136              # 0-based position before duplicates are inserted
DEMO_DUPLICATES_AFTER = {60: 12, 150: 40, 220: 40, 240: 101, 290: 180}  # after i: copy of j
DEMO_CHAT_RECORDS = 100


# ------------------------------------------------------------------------ helpers

def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    _write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def _check_text(strings) -> None:
    for text in strings:
        assert unicodedata.is_normalized("NFC", text), text
        bad = [c for c in text if c in FORBIDDEN_CHARS
               or not (c.isascii() or "LATIN" in unicodedata.name(c, ""))]
        assert not bad, (text, bad)


def train_sentencepiece(sentences: list[str], byte_fallback: bool = False, **options) -> bytes:
    """Serialized model; trained from memory so no input path lands in trainer_spec."""
    spm.set_random_generator_seed(SP_SEED)
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buffer,
        num_threads=1, minloglevel=2, byte_fallback=byte_fallback, shuffle_input_sentence=False,
        character_coverage=1.0, **options)
    return buffer.getvalue()


def sp_load(path: Path) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=str(path))


def hf_exact(path: Path) -> Tokenizer:
    """The file as the pipeline uses it: padding and truncation switched off."""
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return tok


def hf_unk_id(tok: Tokenizer) -> int | None:
    model = json.loads(tok.to_str())["model"]
    if model["type"] == "Unigram":
        return model.get("unk_id")
    unk = model.get("unk_token")
    return None if unk is None else tok.token_to_id(unk)


def hf_pad_id(tok: Tokenizer) -> int | None:
    return None if tok.padding is None else tok.padding["pad_id"]


def encode(path: Path, text: str) -> tuple[list[int], list[str]]:
    if path.suffix == ".model":
        sp = sp_load(path)
        return sp.encode(text, out_type=int), sp.encode(text, out_type=str)
    enc = hf_exact(path).encode(text, add_special_tokens=False)
    return enc.ids, enc.tokens


def unk_id_of(path: Path) -> int | None:
    if path.suffix == ".model":
        return sp_load(path).unk_id()
    return hf_unk_id(Tokenizer.from_file(str(path)))


def pad_id_of(path: Path) -> int | None:
    if path.suffix == ".model":
        pad = sp_load(path).pad_id()
        return pad if pad >= 0 else None
    return hf_pad_id(Tokenizer.from_file(str(path)))


def vocab_size_of(path: Path) -> int:
    if path.suffix == ".model":
        return sp_load(path).get_piece_size()
    return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=True)


def yields_unk(path: Path, text: str) -> bool:
    unk = unk_id_of(path)
    return unk is not None and unk in encode(path, text)[0]


def _show(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _cell(path: Path, text: str) -> str:
    ids, pieces = encode(path, text)
    if not ids:
        return "no tokens"
    shown = " ".join(f"`{_show(p)[1:-1]}`" for p in pieces)
    return f"{shown} **UNK**" if yields_unk(path, text) else shown


# ---------------------------------------------------------------- test tokenizers

def _hf_train(tok: Tokenizer, trainer, lines: list[str]) -> Tokenizer:
    tok.train_from_iterator(lines, trainer=trainer, length=len(lines))
    return tok


def _bert_style(model) -> Tokenizer:
    tok = Tokenizer(model)
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def wordpiece_from_bpe(lines: list[str], bpe_vocab_size: int, specials: list[str]) -> Tokenizer:
    """A WordPiece tokenizer whose vocabulary comes from a deterministic BPE run.

    ``WordPieceTrainer`` (tokenizers 0.23.3) is not reproducible: the ids of the "##"
    characters follow hash-map order and change how tied merges are broken, so the
    vocabulary differs between runs. ``BpeTrainer`` without a subword prefix is
    reproducible; every BPE token ``t`` becomes both ``t`` and ``##t``.
    """
    bpe = _hf_train(_bert_style(models.BPE(unk_token="[UNK]")), trainers.BpeTrainer(
        vocab_size=bpe_vocab_size, special_tokens=specials, show_progress=False), lines)
    by_id = sorted(json.loads(bpe.to_str())["model"]["vocab"].items(), key=lambda kv: kv[1])
    assert [t for t, _ in by_id[:len(specials)]] == specials
    pieces = [t for t, _ in by_id[len(specials):]]
    vocab = {t: i for i, t in enumerate(specials + pieces + ["##" + t for t in pieces])}
    tok = _bert_style(models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(specials)
    return tok


def canonical_unigram(tok: Tokenizer, n_special: int) -> Tokenizer:
    """Make a ``UnigramTrainer`` result reproducible without changing its piece set.

    The trainer sums floats and scores the required characters it had pruned
    (``min_score + k * 0.0001``) in hash-set order, so the last digits and the order of
    the rarest characters change between runs. Scores are rounded to 6 decimals, the
    pieces within 0.01 of the lowest score share that lowest score, and pieces after the
    special tokens are ordered by (score descending, piece).
    """
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    rest = [(piece, score) for piece, score in vocab[n_special:]]
    floor = min(score for _, score in rest)
    rest = [(piece, round(floor if score < floor + 0.01 else score, 6)) for piece, score in rest]
    rest.sort(key=lambda ps: (-ps[1], ps[0]))
    data["model"]["vocab"] = vocab[:n_special] + [list(ps) for ps in rest]
    specials = {t["content"] for t in data["added_tokens"]}
    for entry in data["added_tokens"]:  # ids follow the new order (specials keep theirs)
        assert entry["id"] < n_special and vocab[entry["id"]][0] in specials
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


def build_test_tokenizers(out: Path, lines: list[str]) -> None:
    (out / "sp_unigram.model").write_bytes(train_sentencepiece(
        lines, model_type="unigram", vocab_size=400, normalization_rule_name="nmt_nfkc",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1))
    # identity normalization keeps the file small and gives a model on which "\n" and
    # "\t" are UNK (the spec's "\n\n" template literal then trips the UNK check).
    (out / "sp_bpe.model").write_bytes(train_sentencepiece(
        lines, model_type="bpe", vocab_size=400, normalization_rule_name="identity",
        pad_id=3, unk_id=0, bos_id=1, eos_id=2))
    (out / "sp_nopad.model").write_bytes(train_sentencepiece(
        lines, model_type="unigram", vocab_size=300, normalization_rule_name="identity",
        pad_id=-1, unk_id=0, bos_id=-1, eos_id=-1))

    byte_alphabet = pre_tokenizers.ByteLevel.alphabet()

    def byte_level(model) -> Tokenizer:
        tok = Tokenizer(model)
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return tok

    tok = _hf_train(byte_level(models.BPE(unk_token="<unk>")), trainers.BpeTrainer(
        vocab_size=500, special_tokens=["<pad>", "<unk>"], initial_alphabet=byte_alphabet,
        show_progress=False), lines)
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    tok.enable_truncation(max_length=16)
    tok.save(str(out / "hf_bytelevel_bpe.json"), pretty=True)

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    _hf_train(tok, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["[UNK]", "[PAD]"], show_progress=False), lines)
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    tok.save(str(out / "hf_bpe_unk.json"), pretty=True)

    tok = wordpiece_from_bpe(lines, 200, ["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    # A BERT post-processor: encoding with add_special_tokens=True would add [CLS]/[SEP].
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    tok.enable_truncation(max_length=32)
    tok.save(str(out / "hf_wordpiece.json"), pretty=True)

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    _hf_train(tok, trainers.UnigramTrainer(
        vocab_size=400, unk_token="<unk>", special_tokens=["<pad>", "<unk>"], show_progress=False),
        lines)
    tok = canonical_unigram(tok, n_special=2)
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    tok.save(str(out / "hf_unigram.json"), pretty=True)

    tok = _hf_train(byte_level(models.BPE()), trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>"], initial_alphabet=byte_alphabet,
        show_progress=False), lines)
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    tok.save(str(out / "hf_nounk.json"), pretty=True)

    wordpiece_from_bpe(lines, 100, ["[PAD]", "[UNK]"]).save(str(out / "hf_nopad.json"), pretty=True)

    # DESIGN.md section 8: tokenizers as model folders ship them.
    tok = Tokenizer(models.BPE())      # no unk_token and nothing to fall back on: refused
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    _hf_train(tok, trainers.BpeTrainer(vocab_size=300, special_tokens=["[PAD]"], show_progress=False), lines)
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    tok.save(str(out / "hf_bpe_nounk.json"), pretty=True)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    _hf_train(tok, trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>", "</s>"],
                                       show_progress=False), lines)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    for b in range(256):               # Llama-style: the byte pieces are model vocabulary
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    data["model"]["byte_fallback"] = True
    data["model"]["unk_token"] = None
    tok = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Metaspace()])
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    tok.save(str(out / "hf_bytefallback.json"), pretty=True)

    chat = out / "hf_chat"
    chat.mkdir(exist_ok=True)
    tok = _hf_train(byte_level(models.BPE()), trainers.BpeTrainer(
        vocab_size=400, special_tokens=CHAT_SPECIALS, initial_alphabet=byte_alphabet, show_progress=False),
        lines)
    tok.save(str(chat / "tokenizer.json"), pretty=True)
    added = {"content": "<|pad|>", "lstrip": False, "normalized": False, "rstrip": False,
             "single_word": False, "special": True}
    _write_text(chat / "tokenizer_config.json", json.dumps(
        {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": added, "model_max_length": 512,
         "tokenizer_class": "PreTrainedTokenizerFast"}, indent=2) + "\n")
    _write_text(chat / "special_tokens_map.json", json.dumps(
        {"bos_token": "<|endoftext|>", "eos_token": dict(added, content="<|im_end|>"), "pad_token": "<|pad|>"},
        indent=2) + "\n")

    (out / "sp_bytefallback.model").write_bytes(train_sentencepiece(
        lines, byte_fallback=True, model_type="bpe", vocab_size=512, normalization_rule_name="identity",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, user_defined_symbols=["<|im_end|>"]))


def verify_test_tokenizers(out: Path) -> None:
    expected = {  # file: (unk id, pad id)
        "sp_unigram.model": (1, 0), "sp_bpe.model": (0, 3), "sp_nopad.model": (0, None),
        "hf_bytelevel_bpe.json": (1, 0), "hf_bpe_unk.json": (0, 1), "hf_wordpiece.json": (1, 0),
        "hf_unigram.json": (1, 0), "hf_nounk.json": (None, 0), "hf_nopad.json": (1, None),
        "hf_bpe_nounk.json": (None, 0), "hf_bytefallback.json": (None, 0), "hf_chat/tokenizer.json": (None, None),
        "sp_bytefallback.model": (1, 0),
    }
    for name, ids in expected.items():
        got = (unk_id_of(out / name), pad_id_of(out / name))
        assert got == ids, (name, got, ids)
        assert (out / name).stat().st_size < 300_000, name

    sp = sp_load(out / "sp_unigram.model")
    assert (sp.bos_id(), sp.eos_id()) == (-1, -1)
    bpe = sp_load(out / "sp_bpe.model")
    assert (bpe.bos_id(), bpe.eos_id(), bpe.id_to_piece(3)) == (1, 2, "<pad>")
    assert sp_load(out / "sp_nopad.model").pad_id() == -1

    for name in ("sp_unigram.model", "hf_bpe_unk.json", "hf_wordpiece.json"):
        for text in (CJK, EMOJI):
            assert yields_unk(out / name, text), (name, text)

    def loaded(name: str) -> Tokenizer:
        return Tokenizer.from_file(str(out / name))

    bbpe = loaded("hf_bytelevel_bpe.json")
    assert bbpe.padding is not None and bbpe.padding["pad_token"] == "<pad>"
    assert bbpe.truncation is not None and bbpe.truncation["max_length"] == 16
    assert bbpe.model.unk_token == "<unk>" and bbpe.token_to_id("<pad>") == 0
    assert not yields_unk(out / "hf_bytelevel_bpe.json", CJK + EMOJI + "\n\t{}")
    assert loaded("hf_bpe_unk.json").padding["pad_token"] == "[PAD]"
    wordpiece = loaded("hf_wordpiece.json")
    assert wordpiece.padding["pad_token"] == "[PAD]"
    assert wordpiece.truncation is not None and wordpiece.truncation["max_length"] == 32
    assert loaded("hf_unigram.json").padding["pad_token"] == "<pad>"
    nounk = loaded("hf_nounk.json")
    assert nounk.padding is not None and json.loads(nounk.to_str())["model"]["unk_token"] is None
    nopad = loaded("hf_nopad.json")
    assert nopad.padding is None and nopad.token_to_id("[PAD]") == 0

    alphabet = set(pre_tokenizers.ByteLevel.alphabet())
    assert alphabet <= set(json.loads(nounk.to_str())["model"]["vocab"])       # every byte: no unk needed
    chat = loaded("hf_chat/tokenizer.json")
    assert chat.padding is None and json.loads(chat.to_str())["model"]["unk_token"] is None
    assert alphabet <= set(json.loads(chat.to_str())["model"]["vocab"])
    assert [chat.token_to_id(t) for t in CHAT_SPECIALS] == list(range(len(CHAT_SPECIALS)))
    assert chat.encode("a<|im_end|>b", add_special_tokens=False).ids[1] == chat.token_to_id("<|im_end|>")
    fallback = loaded("hf_bytefallback.json")
    fallback_vocab = json.loads(fallback.to_str())["model"]["vocab"]
    assert all(f"<0x{b:02X}>" in fallback_vocab for b in range(256))
    assert fallback.decode(fallback.encode(CJK + EMOJI, add_special_tokens=False).ids) == CJK + EMOJI
    assert "<0x" in " ".join(fallback.encode(CJK, add_special_tokens=False).tokens)
    bpe_nounk = loaded("hf_bpe_nounk.json")
    assert bpe_nounk.encode(CJK, add_special_tokens=False).ids == []      # vanishes without a trace
    spf = sp_load(out / "sp_bytefallback.model")
    assert (spf.bos_id(), spf.eos_id(), spf.piece_to_id("<|im_end|>")) == (2, 3, 4)
    assert sum(spf.is_byte(i) for i in range(spf.get_piece_size())) == 256
    assert not yields_unk(out / "sp_bytefallback.model", CJK + EMOJI + "{}")
    assert spf.encode("a<|im_end|>b", out_type=str)[1:2] == ["<|im_end|>"]
    assert spf.encode("</s>") != [spf.eos_id()]                          # a control piece is never read

    # The saved padding/truncation must not leak into exact encoding.
    long_text = "Bees share the location of good flowers with a short dance. " * 4
    assert len(encode(out / "hf_bytelevel_bpe.json", long_text)[0]) > 16
    assert len(encode(out / "hf_bytelevel_bpe.json", "Bees")[0]) < 16


TEST_FILES = [
    # file, kind, purpose
    ("sp_unigram.model", "SentencePiece unigram, `nmt_nfkc`",
     "main SentencePiece fixture; CJK/emoji/braces give UNK (byte offsets in `unk_chars`)"),
    ("sp_bpe.model", "SentencePiece BPE, `identity` normalization",
     "unk id 0 and pad id 3 (neither is 0 = pad); bos/eos exist but are never added; `\\n`/`\\t` are UNK"),
    ("sp_nopad.model", "SentencePiece unigram, `identity`",
     "`pad_id=-1`: must be refused (`TokenizerSpecialTokenError`, pad_id)"),
    ("hf_bytelevel_bpe.json", "HF BPE, ByteLevel pre-tokenizer/decoder",
     "unk token set but never fires; padding (`<pad>`) and truncation (16) saved in the file must be ignored"),
    ("hf_bpe_unk.json", "HF BPE (char level), Whitespace pre-tokenizer",
     "`[UNK]` fires on unseen characters (char offsets in `unk_chars`); padding `[PAD]`; unk id 0"),
    ("hf_wordpiece.json", "HF WordPiece, BertNormalizer(lowercase) + BertPreTokenizer; "
     "vocab from BpeTrainer (`t` and `##t`)",
     "`[UNK]` replaces whole words; BERT `[CLS] $A [SEP]` post-processor must not be applied; "
     "padding `[PAD]`, truncation 32 saved"),
    ("hf_unigram.json", "HF Unigram (UnigramTrainer, canonicalized), Metaspace pre-tokenizer",
     "unk comes from the Unigram model's `unk_id`; padding `<pad>`"),
    ("hf_nounk.json", "HF BPE, ByteLevel, no `unk_token`",
     "its vocabulary holds every byte symbol, so it cannot emit UNK: accepted with `unk_id` null"),
    ("hf_nopad.json", "HF WordPiece (as hf_wordpiece), `[PAD]` only in the vocabulary",
     "no padding configured: must be refused (`TokenizerSpecialTokenError`, pad_id)"),
    ("hf_bpe_nounk.json", "HF BPE (char level), Whitespace, no `unk_token`",
     "unknown characters vanish without a trace: must be refused (`TokenizerSpecialTokenError`, unk_id)"),
    ("hf_bytefallback.json", "HF BPE, Metaspace, byte fallback with all 256 `<0xNN>` pieces, no `unk_token`",
     "cannot emit UNK: accepted with `unk_id` null; `<s>`/`</s>` are special added tokens, bos/eos not configured"),
    ("hf_chat/tokenizer.json", "HF byte-level BPE in a model folder, no `unk_token`, no padding; special "
     "`<|endoftext|>` `<|im_start|>` `<|im_end|>` `<|pad|>`",
     "read as the folder `hf_chat/`: pad `<|pad|>` and eos `<|im_end|>` from `tokenizer_config.json`, bos "
     "`<|endoftext|>` from `special_tokens_map.json`; `unk_id` null"),
    ("sp_bytefallback.model", "SentencePiece BPE, `identity`, byte fallback, bos 2 / eos 3, user-defined "
     "`<|im_end|>` (4)",
     "unk never fires (bytes instead); `{@bos}`/`{@eos}`/`{@<|im_end|>}` segments; a literal `</s>` is a lookalike"),
]


def testdata_readme(out: Path, n_lines: int) -> str:
    def fmt(value):
        return "none" if value is None else str(value)

    rows = [
        f"| `{name}` | {kind} | {vocab_size_of(out / name)} | {fmt(unk_id_of(out / name))} | "
        f"{fmt(pad_id_of(out / name))} | {(out / name).stat().st_size:,} | {purpose} |"
        for name, kind, purpose in TEST_FILES
    ]
    probe_head = " | ".join(f"`{_show(p)}`" for p in PROBES)
    probe_rows = [
        f"| `{name}` | " + " | ".join(_cell(out / name, p) for p in PROBES) + " |"
        for name, _, _ in TEST_FILES
    ]
    sp_newline = encode(out / "sp_unigram.model", "\n")
    newline_note = (
        "produces **no tokens at all** (not UNK)" if not sp_newline[0]
        else ("is **UNK**" if yields_unk(out / "sp_unigram.model", "\n")
              else f"encodes to {sp_newline[1]} (not UNK)"))
    return f"""# Test tokenizers

Small *real* tokenizers, trained by this project on its own synthetic text, for the
pipeline's tests. Do not edit by hand: everything here (except this directory's two
scripts) is written by

    python tests/testdata/make_testdata.py          # regenerate
    python tests/testdata/make_testdata.py --check  # fail if anything would change

which also writes the demo data in `mintdim_beam/demo/`. Generated with sentencepiece
{spm.__version__} and tokenizers {tokenizers.__version__}; the output is byte-identical
across runs (fixed seeds, single-threaded training, sorted inputs).

`corpus.txt` ({n_lines} lines, {(out / 'corpus.txt').stat().st_size:,} bytes) is the training
text: English and Vietnamese sentences from the word lists and templates in `textgen.py`.
It contains no CJK characters, no emoji and no `{{`, `}}` or `|`, so every tokenizer
without byte fallback maps those to its unknown token.

## Files

vocab size = `get_piece_size()` (SentencePiece) or `get_vocab_size(with_added_tokens=True)`
(HF); pad id for HF files is only the *configured* padding (`Tokenizer.padding["pad_id"]`).

| file | kind | vocab size | unk id | pad id | bytes | what it is for |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

`sp_unigram.model` is large for its vocabulary because a SentencePiece model embeds the
precompiled `nmt_nfkc` normalization table (about 235 KB); the `identity` models do not.

## Measured behaviour of each literal on its own

Each cell is the token sequence from encoding the string alone, exactly as the pipeline
does (SentencePiece `encode(text)`; HF `encode(text, add_special_tokens=False)` with
padding and truncation switched off). **UNK** marks a sequence that contains the unk id.

| file | {probe_head} |
|---|{'---|' * len(PROBES)}
{chr(10).join(probe_rows)}

Notes:

- `"\\n"` with `sp_unigram.model` {newline_note}: `nmt_nfkc` turns newlines
  and tabs into spaces and the extra-whitespace rule removes a lone space. Inside text it
  is just a word boundary (`"a\\nb"` above). The `identity`-normalized SentencePiece
  models keep `"\\n"` and `"\\t"` as characters they have never seen, hence UNK.
- HF tokenizers with Whitespace/Bert pre-tokenizers drop whitespace, so `"\\n"` gives no
  tokens; the Metaspace-based `hf_unigram.json` keeps `"\\n"` as a character: UNK.
- Runs of unknown characters: SentencePiece and HF Unigram give **one** UNK for `漢字`
  (two characters, six UTF-8 bytes); HF BPE gives one `[UNK]` per character; WordPiece
  gives one `[UNK]` per word, and BertPreTokenizer makes every CJK character a word.
- Byte-level BPE never produces UNK: unseen characters become byte tokens; so does byte
  fallback (`<0xNN>` pieces). A BPE without an unknown token and without either
  (`hf_bpe_nounk.json`) drops what it cannot spell without a trace, which is why such a
  tokenizer is refused.
- WordPiece strips accents when `lowercase=True` (BertNormalizer default), so Vietnamese
  diacritics are removed before lookup (`trời` -> `troi`; `đ` stays).

## Reproducibility

`python tests/testdata/make_testdata.py --check` retrains everything in a temporary
directory and compares bytes. SentencePiece (`num_threads=1`, fixed seed, sentences
from memory so no path is stored in the model) and HF `BpeTrainer` reproduce exactly.
Two HF trainers of tokenizers {tokenizers.__version__} do not, so the script works around them:

- `WordPieceTrainer` numbers the `##` characters in hash-map order, which changes how
  tied merges are broken and so the vocabulary itself. `hf_wordpiece.json` and
  `hf_nopad.json` instead take the vocabulary of a `BpeTrainer` run (same normalizer
  and pre-tokenizer): each BPE token `t` gives `t` and `##t`.
- `UnigramTrainer` keeps the same pieces every run but scores the rare characters it
  re-adds after pruning (`min_score + k * 0.0001`) in hash-set order and sums floats in
  hash order. `hf_unigram.json` rounds scores to 6 decimals, gives every piece within
  0.01 of the lowest score that lowest score, and orders pieces by score, then text.
"""


# --------------------------------------------------------------------------- demo

def build_demo_records() -> tuple[list[dict], list[dict], dict]:
    rows = textgen.instruction_records(random.Random(DEMO_SEED), DEMO_INSTRUCTION_RECORDS)
    rows.insert(DEMO_EMOJI_INDEX, dict(textgen.EMOJI_CJK_RECORD))
    # A few extra keys the pipeline must ignore (declared fields only).
    rows[3] = {"id": "demo-0003", **rows[3]}
    rows[77] = {**rows[77], "source": "synthetic"}
    rows[150] = {**rows[150], "meta": {"difficulty": "easy", "tags": ["demo", "short"]}}
    rows[199] = {"id": 199, **rows[199], "lang": "en"}
    lines: list[dict] = []
    for i, row in enumerate(rows):
        lines.append(row)
        if i in DEMO_DUPLICATES_AFTER:
            lines.append(dict(rows[DEMO_DUPLICATES_AFTER[i]]))
    chat = textgen.chat_records(random.Random(CHAT_SEED), DEMO_CHAT_RECORDS)

    dumped = [json.dumps(row, ensure_ascii=False) for row in lines]
    groups = {}
    for line_no, text in enumerate(dumped, 1):
        groups.setdefault(text, []).append(line_no)
    facts = {
        "emoji_line": dumped.index(json.dumps(textgen.EMOJI_CJK_RECORD, ensure_ascii=False)) + 1,
        "duplicate_groups": sorted(g for g in groups.values() if len(g) > 1),
        "extra_key_lines": [n for n, row in enumerate(lines, 1)
                            if set(row) - {"instruction", "input", "output"}],
        "empty_input": sum(1 for row in lines if row["input"] == ""),
    }
    return lines, chat, facts


def demo_training_sentences(instructions: list[dict], chat: list[dict]) -> list[str]:
    """Both files rendered with the demo templates, one line a sentence, sorted.

    Lines are not de-duplicated so piece scores follow the real frequencies. Rendering puts the template labels ("### Response:", "Trợ lý:") in the training text
    so they are covered; the single CJK/emoji line is left out so those stay uncovered.
    """
    texts = []
    for row in instructions:
        texts.append(DEMO_TEMPLATES["instructions.jsonl (Alpaca style)"].format(**row))
    for row in chat:
        texts.append(DEMO_TEMPLATES["chat_vi.jsonl"].format(**row))
    lines = (line.strip() for text in texts for line in text.split("\n"))
    return sorted(line for line in lines if line and not set(line) & FORBIDDEN_CHARS)


def build_demo(out: Path) -> None:
    instructions, chat, facts = build_demo_records()
    _check_text(v for row in chat for v in row.values())
    _check_text(row[k] for row in instructions for k in ("instruction", "input", "output")
                if row != textgen.EMOJI_CJK_RECORD)
    _write_jsonl(out / "instructions.jsonl", instructions)
    _write_jsonl(out / "chat_vi.jsonl", chat)
    sentences = demo_training_sentences(instructions, chat)
    (out / "demo.model").write_bytes(train_sentencepiece(
        sentences, model_type="unigram", vocab_size=800, normalization_rule_name="nmt_nfkc",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1))

    model = out / "demo.model"
    sp = sp_load(model)
    assert (sp.get_piece_size(), sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (800, 0, 1, -1, -1)
    for row in instructions:
        has_unk = any(yields_unk(model, row[k]) for k in ("instruction", "input", "output"))
        assert has_unk == (row == textgen.EMOJI_CJK_RECORD), row
    for row in chat:
        assert not any(yields_unk(model, v) for v in row.values()), row
    for literal in DEMO_CLEAN_LITERALS:
        assert not yields_unk(model, literal), literal
    assert 250 <= len(instructions) <= 350 and 80 <= len(chat) <= 120
    assert 0.28 <= facts["empty_input"] / len(instructions) <= 0.40, facts["empty_input"]
    words = [sum(len(row[k].split()) for k in ("instruction", "input", "output")) for row in instructions]
    assert min(words) <= 4 and 100 <= max(words) <= 130, (min(words), max(words))
    facts["words"] = (min(words), max(words))
    _write_text(out / "README.md", demo_readme(out, instructions, chat, facts, len(sentences)))


def demo_readme(out: Path, instructions, chat, facts, n_sentences: int) -> str:
    model = out / "demo.model"
    literal_rows = []
    for literal in DEMO_LITERALS:
        ids, pieces = encode(model, literal)
        shown = " ".join(f"`{_show(p)[1:-1]}`" for p in pieces) if ids else "no tokens"
        verdict = "**UNK**" if yields_unk(model, literal) else "clean"
        literal_rows.append(f"| `{_show(literal)}` | {shown} | {verdict} |")
    templates = "\n".join(f"- {name}: `{_show(t)}`" for name, t in DEMO_TEMPLATES.items())
    dups = "; ".join(", ".join(map(str, g)) for g in facts["duplicate_groups"])
    n_dup_samples = sum(len(g) for g in facts["duplicate_groups"])
    return f"""# Demo data

Small synthetic data sets for trying `mintdim_beam` without downloading anything. They are
shipped as package data and were **generated by `tests/testdata/make_testdata.py`**
(the same script that trains the test tokenizers); do not edit them by hand, rerun it.
All text was written for this project from the templates and word lists in
`tests/testdata/textgen.py`.

| file | what it is |
|---|---|
| `instructions.jsonl` | {len(instructions)} English records `{{"instruction", "input", "output"}}` |
| `chat_vi.jsonl` | {len(chat)} Vietnamese records `{{"prompt", "response"}}` with diacritics |
| `demo.model` | SentencePiece unigram, vocab {sp_load(model).get_piece_size()}, `pad_id=0`, `unk_id=1`, no bos/eos, no byte fallback, `nmt_nfkc` |

`instructions.jsonl` on purpose contains (line numbers are 1-based):

- records from {facts['words'][0]} to {facts['words'][1]} words (all three fields together);
  some outputs are multi-line (lists, notes);
- {facts['empty_input']} records with an empty `input`;
- exact duplicate lines, grouped: {dups} ({len(facts['duplicate_groups'])} groups,
  {n_dup_samples} samples);
- extra keys that must be ignored (`id`, `source`, `meta`, `lang`) on lines
  {", ".join(map(str, facts['extra_key_lines']))};
- line {facts['emoji_line']}: the only record with characters `demo.model` cannot encode
  (`漢字` and `🙂` in `output`), so the UNK index is exercised.

`demo.model` was trained on both files rendered with the Alpaca-style and chat templates
below ({n_sentences} lines, sorted, the CJK/emoji line left out), so every other record encodes without UNK
(checked by the generator).

Suggested templates:

{templates}

Template literals encoded on their own with `demo.model` (`sp.encode(literal, out_type=int)`):

| literal | pieces | UNK? |
|---|---|---|
{chr(10).join(literal_rows)}

"no tokens" means the literal vanishes: `nmt_nfkc` maps `\\n` and `\\t` to spaces and
removes extra whitespace, so a separator made only of whitespace adds no tokens.
`|`, `{{` and `}}` never occur in the training text and are UNK.
"""


# --------------------------------------------------------------------------- main

def generate(testdata_dir: Path, demo_dir: Path) -> list[Path]:
    """Write every generated file; return their paths."""
    testdata_dir.mkdir(parents=True, exist_ok=True)
    demo_dir.mkdir(parents=True, exist_ok=True)
    lines = textgen.corpus_lines(random.Random(CORPUS_SEED), n_english=200, n_vietnamese=100)
    _check_text(lines)
    _write_text(testdata_dir / "corpus.txt", "".join(line + "\n" for line in lines))
    build_test_tokenizers(testdata_dir, lines)
    verify_test_tokenizers(testdata_dir)
    _write_text(testdata_dir / "README.md", testdata_readme(testdata_dir, len(lines)))
    build_demo(demo_dir)
    names = ["corpus.txt", "README.md"] + [name for name, _, _ in TEST_FILES]
    names += ["hf_chat/tokenizer_config.json", "hf_chat/special_tokens_map.json"]
    demo_names = ["instructions.jsonl", "chat_vi.jsonl", "demo.model", "README.md"]
    return [testdata_dir / n for n in names] + [demo_dir / n for n in demo_names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="regenerate into a temporary directory and compare with the committed files")
    args = parser.parse_args(argv)
    if not args.check:
        for path in generate(TESTDATA_DIR, DEMO_DIR):
            print(f"{path.stat().st_size:>8,}  {path}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh_testdata, fresh_demo = Path(tmp) / "testdata", Path(tmp) / "demo"
        fresh = generate(fresh_testdata, fresh_demo)
        differ = []
        for path in fresh:
            if path.is_relative_to(fresh_testdata):
                committed = TESTDATA_DIR / path.relative_to(fresh_testdata)
            else:
                committed = DEMO_DIR / path.relative_to(fresh_demo)
            if not committed.exists() or not filecmp.cmp(path, committed, shallow=False):
                differ.append(str(committed))
    for name in differ:
        print(f"would change: {name}", file=sys.stderr)
    print("up to date" if not differ else f"{len(differ)} file(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
