"""Tokenizers as models ship them (DESIGN.md §8): a tokenizer.json or the folder holding
it, special tokens from the companion files beside it, and no unk for a vocabulary that
provably cannot emit one. Ids always come from the tokenizer, never from the job."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from mintdim_beam import errors
from mintdim_beam.storage import files as storage
from mintdim_beam.tokenization import special_tokens as ST
from mintdim_beam.tokenization.adapters import open_tokenizer, read_tokenizer, tokenizer_digest

HF, SP = "hf_json", "sentencepiece"


def load(path, kind=HF):
    return open_tokenizer(kind, str(path), storage.read_bytes, exists=storage.exists)


def roles(tok) -> dict:
    return {role: (t.id, t.content) for role, t in tok.special.named.items()}


def folder(tmp_path, tokenizer_json, name="model", **companions):
    """A model folder: ``tokenizer.json`` (a copy of ``tokenizer_json``) and companions by
    file stem (``tokenizer_config=...``, ``special_tokens_map=...``)."""
    where = tmp_path / name
    where.mkdir()
    shutil.copy(tokenizer_json, where / "tokenizer.json")
    for stem, content in companions.items():
        (where / f"{stem}.json").write_text(json.dumps(content), encoding="utf-8")
    return where


def edited(tmp_path, source, edit, name="tokenizer.json"):
    """A copy of the tokenizer.json ``source`` after ``edit(config)``."""
    config = json.loads(open(source, encoding="utf-8").read())
    edit(config)
    path = tmp_path / name
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- folders and companions


def test_a_model_folder_and_its_tokenizer_json_load_alike(tok):
    by_folder = load(tok("hf_chat"))
    by_file = load(tok("hf_chat/tokenizer.json"))
    for t in (by_folder, by_file):
        assert (t.unk_id, t.pad_id, t.vocab_size) == (None, 3, 400)
        # pad and eos from tokenizer_config.json (dict and string forms), bos from special_tokens_map.json
        assert roles(t) == {"bos": (0, "<|endoftext|>"), "eos": (2, "<|im_end|>"), "pad": (3, "<|pad|>")}
        assert t.special.named["pad"].source == "tokenizer_config.json"
        assert t.special.named["bos"].source == "special_tokens_map.json"
        assert t.describe() == {"type": HF, "path": t.path, "vocab_size": 400, "unk_id": None, "pad_id": 3}
    assert by_folder.path == tok("hf_chat")       # named as declared
    assert by_folder.encode("a<|im_end|>") == by_file.encode("a<|im_end|>")


def test_companions_are_read_beside_a_tokenizer_json_only(tmp_path, tok):
    """A file of another name is one tokenizer among others in its folder: nothing beside
    it is taken as its companion."""
    shutil.copy(tok("hf_chat/tokenizer.json"), tmp_path / "chat.json")
    shutil.copy(tok("hf_chat/tokenizer_config.json"), tmp_path / "tokenizer_config.json")
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(tmp_path / "chat.json")
    assert info.value.special_token == "pad_id"
    assert ST.locate(HF, str(tmp_path / "chat.json"), os.path.exists).companions == ()


@pytest.mark.parametrize("companions, want", [
    ({"tokenizer_config": {"pad_token": "<|pad|>"}}, {"pad": (3, "<|pad|>")}),
    ({"tokenizer_config": {"pad_token": {"content": "<|pad|>", "special": True}, "eos_token": None}},
     {"pad": (3, "<|pad|>")}),
    ({"special_tokens_map": {"pad_token": "<|pad|>", "eos_token": {"content": "<|endoftext|>"}}},
     {"pad": (3, "<|pad|>"), "eos": (0, "<|endoftext|>")}),
    ({"tokenizer_config": {"pad_token": "<|pad|>", "bos_token": "<|im_start|>"},
      "special_tokens_map": {"pad_token": {"content": "<|pad|>"}, "bos_token": "<|im_start|>"}},
     {"pad": (3, "<|pad|>"), "bos": (1, "<|im_start|>")}),
], ids=["config-string", "config-dict", "map-only", "both-agree"])
def test_special_tokens_from_companions(tmp_path, tok, companions, want):
    t = load(folder(tmp_path, tok("hf_chat/tokenizer.json"), **companions))
    assert roles(t) == want and t.pad_id == want["pad"][0]


def test_companions_that_disagree_are_refused(tmp_path, tok):
    where = folder(tmp_path, tok("hf_chat/tokenizer.json"), tokenizer_config={"pad_token": "<|pad|>", "eos_token": "<|im_end|>"},
                   special_tokens_map={"eos_token": "<|endoftext|>"})
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(where)
    english, vietnamese = str(info.value).split("[vietnam]")
    assert info.value.special_token == "eos_token" and info.value.tokenizer == str(where)
    assert "'<|im_end|>'" in english and "'<|endoftext|>'" in english and "make both name the same token" in english
    assert "'<|im_end|>'" in vietnamese and "Cách sửa:" in vietnamese
    assert errors.error_from_dict(info.value.to_dict()).english == info.value.english


def test_a_companion_pad_token_not_in_the_vocabulary_is_refused(tmp_path, tok):
    where = folder(tmp_path, tok("hf_chat/tokenizer.json"), tokenizer_config={"pad_token": "<pad>"})
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(where)
    assert info.value.special_token == "pad_id" and info.value.problem == "missing pad_id"
    assert "tokenizer_config.json names pad_token '<pad>', which is not a token" in info.value.english


def test_a_companion_eos_not_in_the_vocabulary_is_no_token(tmp_path, tok):
    """A Hugging Face loader would add such a token with a new id; the build never does."""
    t = load(folder(tmp_path, tok("hf_chat/tokenizer.json"), tokenizer_config={"pad_token": "<|pad|>", "eos_token": "</s>"}))
    assert t.special_token("eos") is None
    assert "eos_token '</s>' of tokenizer_config.json: not in the vocabulary" in t.special.shown()


def test_the_tokenizer_json_padding_wins_over_the_companions(tmp_path, tok):
    t = load(folder(tmp_path, tok("hf_nounk.json"), tokenizer_config={"pad_token": "a"}))
    assert t.pad_id == 0 and roles(t)["pad"] == (0, "<pad>")


def test_a_malformed_companion_is_refused_by_name(tmp_path, tok):
    where = folder(tmp_path, tok("hf_chat/tokenizer.json"))
    (where / "tokenizer_config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(errors.TokenizerValidationError) as info:
        load(where)
    assert info.value.path == str(where / "tokenizer_config.json") and info.value.problem == "not_json"


def test_the_digest_covers_the_companions(tmp_path, tok):
    where = folder(tmp_path, tok("hf_chat/tokenizer.json"), tokenizer_config={"pad_token": "<|pad|>"})
    files, contents = read_tokenizer(HF, str(where), storage.read_bytes, storage.exists)
    assert files.paths == (str(where / "tokenizer.json"), str(where / "tokenizer_config.json"))
    first = tokenizer_digest(files, contents)
    (where / "tokenizer_config.json").write_text(json.dumps({"pad_token": "<|endoftext|>"}), encoding="utf-8")
    assert tokenizer_digest(*read_tokenizer(HF, str(where), storage.read_bytes, storage.exists)) != first
    # without companions it is the file's own sha256, as before
    plain, data = read_tokenizer(HF, tok("hf_nounk.json"), storage.read_bytes, storage.exists)
    import hashlib

    assert tokenizer_digest(plain, data) == hashlib.sha256(data[tok("hf_nounk.json")]).hexdigest()


def test_fingerprint_paths_name_the_files_behind_a_folder(tmp_path, tok):
    from mintdim_beam.core.config import JobSpec, resolve
    from mintdim_beam.core.digests import fingerprint_paths

    where = folder(tmp_path, tok("hf_chat/tokenizer.json"), tokenizer_config={"pad_token": "<|pad|>"})
    src = tmp_path / "in.jsonl"
    src.write_text('{"t": "a"}\n')
    config = resolve(JobSpec(files=[str(src)], fields=[["t"]], templates=["{t}"], tokenizer_kind=HF,
                             tokenizer_files=[str(where)], sizes=[[8]], build_batch=[4],
                             output_dirs=[str(tmp_path / "out")], samples_per_shard=[4]))
    assert fingerprint_paths(config, os.path.exists) == sorted(
        [str(src), str(where / "tokenizer.json"), str(where / "tokenizer_config.json")])


@pytest.mark.parametrize("name", ["models/Qwen2.5-0.5B", "models/olmo/", "gs://bucket/models/llama"])
def test_a_folder_is_a_hf_json_entry(name):
    from mintdim_beam.tokenization.adapters import check_kind_of_path

    check_kind_of_path(HF, name)      # no error: a folder, checked by the launcher
    assert ST.main_file(HF, name).endswith("/tokenizer.json")
    with pytest.raises(errors.TokenizerValidationError):
        check_kind_of_path(HF, "models/tok.model")     # the other format's extension


# --------------------------------------------------------------------------- no unk


@pytest.mark.parametrize("name", ["hf_nounk.json", "hf_bytefallback.json", "hf_chat"])
def test_a_vocabulary_that_covers_every_byte_needs_no_unk(tok, name):
    t = load(tok(name))
    assert t.unk_id is None and "unk" not in t.special.named
    ids = t.encode("漢字 🙂 {x} \x00\t")
    assert ids and t.unk_substrings("漢字 🙂") == []


def _without(config, *pieces):
    vocab = config["model"]["vocab"]
    for p in pieces:
        del vocab[p]


def test_a_byte_level_vocabulary_missing_a_byte_is_refused(tmp_path, tok):
    # 0x00 is 'Ā' in the byte-level alphabet; UTF-8 text can hold it
    path = edited(tmp_path, tok("hf_nounk.json"), lambda c: _without(c, "Ā"))
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(path)
    english = info.value.english
    assert info.value.special_token == "unk_id" and info.value.problem == "missing unk_id"
    assert "byte-level alphabet lacks 1 byte symbols, e.g. byte 0x00" in english
    assert "unk_token" in english and "Cách sửa:" in info.value.vietnamese


def test_bytes_no_utf8_text_holds_are_not_needed(tmp_path, tok):
    """0xC0, 0xC1 and 0xF5..0xFF never occur in UTF-8 (real byte-level vocabularies, such
    as GPT-NeoX's, lack them)."""
    path = edited(tmp_path, tok("hf_nounk.json"), lambda c: _without(c, "ÿ", "À", "õ"))
    assert load(path).unk_id is None


def test_byte_fallback_missing_a_piece_is_refused(tmp_path, tok):
    path = edited(tmp_path, tok("hf_bytefallback.json"), lambda c: _without(c, "<0x41>"))
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(path)
    assert "byte fallback lacks 1 of the 256 <0xNN> pieces, e.g. <0x41>" in info.value.english


def test_a_bpe_that_drops_what_it_cannot_spell_is_refused(tok):
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(tok("hf_bpe_nounk.json"))
    assert info.value.special_token == "unk_id" and info.value.tokenizer == tok("hf_bpe_nounk.json")
    assert "it is neither byte-level nor byte fallback" in info.value.english
    assert "vanish without a trace" in info.value.english


def test_a_subword_suffix_breaks_the_proof(tmp_path, tok):
    path = edited(tmp_path, tok("hf_nounk.json"), lambda c: c["model"].update(end_of_word_suffix="</w>"))
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(path)
    assert "subword prefix or suffix" in info.value.english


def test_a_tokenizer_with_unk_keeps_it_even_when_it_never_fires(tok):
    """Byte-level with an unk token (and SentencePiece byte fallback): the unk id stays,
    so existing outputs do not change."""
    assert load(tok("hf_bytelevel_bpe.json")).unk_id == 1
    sp = load(tok("sp_bytefallback.model"), SP)
    assert sp.unk_id == 1 and sp.unk_substrings("漢字") == []


def test_missing_pad_says_how_to_fix_it(tok):
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(tok("hf_nopad.json"))
    english = info.value.english
    assert "Problem: missing pad_id" in english      # the spec's words, then how to fix it
    assert (f"mintdim-beam tokenizer add-padding {tok('hf_nopad.json')} --pad-token [PAD] "
            f"{tok('hf_nopad.json')[:-5]}.padded.json") in english
    assert "\"pad_token\": \"[PAD]\"" in english and "Tokens of this tokenizer that could pad: '[PAD]'" in english
    assert "mintdim-beam tokenizer add-padding" in info.value.vietnamese
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(tok("sp_nopad.model"), SP)
    assert "pad_id=N" in info.value.english and info.value.problem == "missing pad_id"


# --------------------------------------------------------------------------- special tokens


def test_sentencepiece_special_tokens(tok):
    bpe = load(tok("sp_bpe.model"), SP)
    assert roles(bpe) == {"bos": (1, "<s>"), "eos": (2, "</s>"), "pad": (3, "<pad>"), "unk": (0, "<unk>")}
    assert bpe.special.control == {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3}
    uni = load(tok("sp_unigram.model"), SP)
    assert uni.special_token("bos") is None and uni.special_token("eos") is None
    fallback = load(tok("sp_bytefallback.model"), SP)
    assert fallback.special_token("<|im_end|>").id == 4      # a user-defined piece, by content
    assert "<|im_end|>" not in fallback.special.control      # read from text as itself


def test_hugging_face_added_tokens_by_content(tok):
    t = load(tok("hf_wordpiece.json"))
    assert t.special_token("[CLS]").id == 2 and t.special_token("[SEP]").id == 3
    assert t.special_token("bos") is None and t.special_token("hello") is None   # an ordinary token is not one


# --------------------------------------------------------------------------- launcher checks


def _run(tmp_path, tokenizer, template="{t}", **kw):
    from conftest import run_pipeline, write_jsonl

    src = write_jsonl(tmp_path / "in.jsonl", [{"t": "xin chào"}, {"t": "hello 漢字"}])
    return run_pipeline(files=[src], fields=[["t"]], templates=[template], tokenizer_kind=kw.pop("kind", HF),
                        tokenizer_files=[str(tokenizer)], sizes=[[16, 32]], samples_per_shard=[4],
                        output_dirs=str(tmp_path / "out"), **kw)


def test_a_folder_without_a_tokenizer_json_is_not_found(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(errors.MintDimFileNotFoundError) as info:
        _run(tmp_path, tmp_path / "empty")
    assert info.value.path == str(tmp_path / "empty" / "tokenizer.json") and info.value.context == "tokenizer"
    assert not (tmp_path / "out").exists()


def test_a_file_that_is_neither_format_is_unsupported(tmp_path, tok):
    shutil.copy(tok("hf_nounk.json"), tmp_path / "vocab.txt")
    with pytest.raises(errors.TokenizerValidationError) as info:
        _run(tmp_path, tmp_path / "vocab.txt")
    assert info.value.kind == "unsupported_format" and info.value.path == str(tmp_path / "vocab.txt")


# --------------------------------------------------------------------------- real tokenizers


def _real(realdata, name):
    return realdata / "tokenizers" / name


def test_olmo_needs_no_unk_but_a_pad_token(realdata):
    path = _real(realdata, "olmo_gpt-neox-20b-pii-special.tokenizer.json")
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        load(path)
    assert info.value.special_token == "pad_id"      # its unk is proven unnecessary first
    assert f"add-padding {path} --pad-token <|padding|>" in info.value.english


def test_olmo_as_its_model_folder_ships_it(tmp_path, realdata):
    """OLMo's folders name eos and pad in tokenizer_config.json."""
    where = folder(tmp_path, _real(realdata, "olmo_gpt-neox-20b-pii-special.tokenizer.json"),
                   tokenizer_config={"eos_token": "<|endoftext|>", "pad_token": "<|padding|>",
                                     "bos_token": None, "unk_token": None})
    t = load(where)
    assert (t.unk_id, t.pad_id, t.vocab_size) == (None, 1, 50280)
    assert roles(t) == {"eos": (0, "<|endoftext|>"), "pad": (1, "<|padding|>")}


def test_bert_folder_with_a_special_tokens_map(tmp_path, realdata):
    where = folder(tmp_path, _real(realdata, "bert-base-uncased.tokenizer.json"),
                   special_tokens_map={"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                                       "cls_token": "[CLS]", "mask_token": "[MASK]"})
    t = load(where)
    assert (t.unk_id, t.pad_id) == (100, 0) and t.special_token("[CLS]").id == 101


def test_real_sentencepiece_special_tokens(realdata):
    t5 = load(_real(realdata, "t5_spiece_32000.model"), SP)
    assert roles(t5) == {"eos": (1, "</s>"), "pad": (0, "<pad>"), "unk": (2, "<unk>")}
    llama = load(_real(realdata, "kerashub_llama_export_vocab_290.model"), SP)
    assert (llama.unk_id, roles(llama)["bos"], roles(llama)["eos"]) == (3, (1, "<bos>"), (2, "<eos>"))
    assert llama.unk_substrings("漢字 🙂") == []     # byte fallback: the unk never fires


def test_a_remote_model_folder_is_read_through_the_callers_storage(tok):
    """The tokenization layer never touches storage: ``read_bytes`` and ``exists`` come
    from the caller, so an object-store folder is read like a local one."""
    root = "s3://bucket/models/chat"
    store = {f"{root}/{name}": open(f"{tok('hf_chat')}/{name}", "rb").read()
             for name in ("tokenizer.json", "tokenizer_config.json")}
    asked = []

    def exists(path):
        asked.append(path)
        return path in store

    t = open_tokenizer(HF, root + "/", store.__getitem__, exists=exists)
    assert asked == [f"{root}/tokenizer_config.json", f"{root}/special_tokens_map.json"]
    assert (t.unk_id, t.pad_id, roles(t)["eos"]) == (None, 3, (2, "<|im_end|>"))
    assert "bos" not in roles(t)          # special_tokens_map.json is absent there
