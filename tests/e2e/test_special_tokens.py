"""``{@NAME}`` special-token segments and lookalike literals (DESIGN.md §8), built and
compared byte for byte with the reference (tests/reference.py), and read back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import OutputDir, build_and_compare, parse_template as ref_parse, run_pipeline, write_jsonl
from mintdim_beam import errors
from mintdim_beam.format.template import Segment, parse_template, placeholders, sequence_template

HF, SP = "hf_json", "sentencepiece"

ROWS = [
    {"q": "xin chào", "a": "hello world"},
    {"q": "Bees share the location of good flowers", "a": "with a short dance 漢字 🙂"},
    {"q": "", "a": "one"},
    {"q": "xin chào", "a": "hello world"},          # a duplicate of sample 0
]


def build(tmp_path, tokenizer, template, rows=ROWS, kind=SP, sizes=((8, 16, 32, 64),), **kw):
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    kw.setdefault("output_dirs", "out")
    return build_and_compare(tmp_path, files=[src], fields=[["q", "a"]], templates=[template], tokenizer_kind=kind,
                             tokenizer_files=[tokenizer], sizes=[list(s) for s in sizes], samples_per_shard=[3],
                             **kw)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- grammar


def test_special_segments_in_the_grammar():
    segments = parse_template("{@bos}{q}\n{@<|im_end|>}{{@eos}}{a}{@eos}")
    assert segments == (Segment(False, "bos", True), Segment(True, "q"), Segment(False, "\n"),
                        Segment(False, "<|im_end|>", True), Segment(False, "{@eos}"), Segment(True, "a"),
                        Segment(False, "eos", True))
    assert sequence_template(segments) == ["@bos", "q", "token_template", "@<|im_end|>", "token_template", "a",
                                           "@eos"]
    assert placeholders(segments) == ["q", "a"]
    assert [s.is_literal for s in segments] == [False, False, True, False, True, False, False]
    # the reference reads the template alike
    assert ref_parse("{@bos}{q}{{@eos}}") == [("special", "bos"), ("field", "q"), ("literal", "{@eos}")]


def test_an_empty_special_segment_is_a_syntax_error(tmp_path, tok):
    src = write_jsonl(tmp_path / "in.jsonl", [{"q": "a"}])
    with pytest.raises(errors.TemplateFieldMismatchError) as info:
        run_pipeline(files=[src], fields=[["q"]], templates=["{q}{@}"], tokenizer_kind=SP,
                     tokenizer_files=[tok("sp_bpe.model")], sizes=[[8]], samples_per_shard=[2],
                     output_dirs=str(tmp_path / "out"))
    assert "empty special token {@}" in info.value.english and "{@eos}" in info.value.vietnamese


# --------------------------------------------------------------------------- builds against the reference


def test_sentencepiece_bos_and_eos(tmp_path, tok):
    result = build(tmp_path, tok("sp_bpe.model"), "{@bos}{q}: {a}{@eos}")
    out = OutputDir(result.outputs[0].path)
    assert out.sequence_template == ["@bos", "q", "token_template", "a", "@eos"]
    for segments in out.decoded().values():
        assert segments[0] == [1] and segments[-1] == [2]        # the model's bos_id() and eos_id()
    # the rendered text, and so the hash, holds the token's text (docs/decisions.md)
    assert out.samples[0]["hash"] == sha("<s>xin chào: hello world</s>")
    assert [r["count"] for r in out.jsonl("duplicate_index.jsonl")] == [2]
    unk = out.jsonl("unk_index.jsonl")
    assert [r["sample_id"] for r in unk] == [1] and set(unk[0]["unk_field_indices"]) == {3}


def test_sentencepiece_user_defined_piece_by_content(tmp_path, tok):
    result = build(tmp_path, tok("sp_bytefallback.model"), "{@bos}{q}{@<|im_end|>}\n{a}{@eos}")
    out = OutputDir(result.outputs[0].path)
    assert out.sequence_template == ["@bos", "q", "@<|im_end|>", "token_template", "a", "@eos"]
    assert all(s[2] == [4] for s in out.decoded().values())
    assert out.jsonl("unk_index.jsonl") == []          # byte fallback: 漢字 and 🙂 are bytes


def test_hugging_face_model_folder_chat_template(tmp_path, tok):
    """hf_chat: byte-level BPE without unk (unk_id null) and without padding; pad and eos
    from its tokenizer_config.json; <|im_start|> by content."""
    template = "{@<|im_start|>}user\n{q}{@<|im_end|>}\n{@<|im_start|>}assistant\n{a}{@eos}"
    result = build(tmp_path, tok("hf_chat"), template, kind=HF)
    out = OutputDir(result.outputs[0].path)
    assert out.pad == 3
    assert out.length_field["unk_token_id"] is None and list(out.length_field)[-1] == "unk_token_id"
    assert out.manifest["tokenizer"] == {"type": HF, "path": tok("hf_chat"), "vocab_size": 400, "unk_id": None,
                                         "pad_id": 3}
    assert out.stats["samples_with_unk"] == 0 and out.jsonl("unk_index.jsonl") == []
    for segments in out.decoded().values():
        assert (segments[0], segments[3], segments[5], segments[-1]) == ([1], [2], [1], [2])
    assert out.samples[0]["hash"] == sha("<|im_start|>user\nxin chào<|im_end|>\n<|im_start|>assistant\n"
                                         "hello world<|im_end|>")
    fingerprint = out.manifest["fingerprint"]
    assert fingerprint["tokenizer"]["path"] == str(Path(tok("hf_chat")) / "tokenizer.json")
    assert [e["path"] for e in fingerprint["tokenizer_companions"]] == [
        str(Path(tok("hf_chat")) / name) for name in ("tokenizer_config.json", "special_tokens_map.json")]


def test_an_added_special_token_written_as_a_literal_is_that_token(tmp_path, tok):
    """The library reads an added special token from text, so a literal spelling it
    encodes to its id: no lookalike, and the same ids as {@<|im_end|>}."""
    literal = build(tmp_path / "a", tok("hf_chat"), "{q}<|im_end|>{a}", kind=HF)
    special = build(tmp_path / "b", tok("hf_chat"), "{q}{@<|im_end|>}{a}", kind=HF)
    lit, spe = OutputDir(literal.outputs[0].path), OutputDir(special.outputs[0].path)
    assert [s[1] for s in lit.decoded().values()] == [s[1] for s in spe.decoded().values()] == [[2]] * 4
    assert [r["hash"] for r in lit.samples] == [r["hash"] for r in spe.samples]


def test_byte_fallback_without_unk_and_a_token_by_content(tmp_path, tok):
    result = build(tmp_path, tok("hf_bytefallback.json"), "{@<s>}{q}: {a}{@</s>}", kind=HF)
    out = OutputDir(result.outputs[0].path)
    assert out.manifest["tokenizer"]["unk_id"] is None and out.length_field["unk_token_id"] is None
    assert all(s[0] == [1] and s[-1] == [2] for s in out.decoded().values())


def test_truncation_shrinks_special_segments_like_literals(tmp_path, tok):
    result = build(tmp_path, tok("sp_bpe.model"), "{@bos}{q}: {a}{@eos}", sizes=((8,),),
                   on_overflow="truncate")
    out = OutputDir(result.outputs[0].path)
    long = out.decoded()[1]
    assert sum(map(len, long)) == 8 and long[-1] == []       # the eos did not fit
    assert out.jsonl("overflow_index.jsonl")[0]["action"] == "truncate"


def test_unk_segment_is_audited_with_its_token_text(tmp_path, tok):
    """{@unk} asks for the unknown token by name: not a template UNK for on_template_unk,
    but the payload holds UNK, so the audit lists it (its text: the piece)."""
    result = build(tmp_path, tok("sp_bpe.model"), "{q} {@unk} {a}")
    out = OutputDir(result.outputs[0].path)
    rows = {r["sample_id"]: r for r in out.jsonl("unk_index.jsonl")}
    assert sorted(rows) == [0, 1, 2, 3]
    first = rows[0]
    assert first["unk_field_indices"] == [2] and first["unk_chars"] == ["<unk>"]
    assert out.decoded()[0][2] == [0]


def test_existing_templates_are_unchanged_by_the_grammar(tmp_path, tok):
    """No {@...}, a tokenizer with unk: the spec's four length_field keys, nothing added."""
    result = build(tmp_path, tok("sp_bpe.model"), "{q}: {a}")
    out = OutputDir(result.outputs[0].path)
    assert list(out.length_field) == ["magic", "sequence_template", "token_dtype", "pad_token_id"]
    assert out.manifest["tokenizer"]["unk_id"] == 0 and "tokenizer_companions" not in out.manifest["fingerprint"]


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("template, segment, problem", [
    ("{q}{@eos}{a}", "@eos", "the tokenizer defines no eos token"),
    ("{q}{@<|im_end|>}{a}", "@<|im_end|>", "no special or added token of the tokenizer has the content '<|im_end|>'"),
])
def test_a_segment_the_tokenizer_lacks_is_refused(tmp_path, tok, template, segment, problem):
    with pytest.raises(errors.TemplateTokenizerError) as info:
        build(tmp_path, tok("sp_unigram.model"), template, on_template_unk="continue")
    err = info.value
    assert (err.kind, err.segment, err.tokenizer, err.file_index) == ("special_missing", segment,
                                                                       tok("sp_unigram.model"), 0)
    english, vietnamese = str(err).split("[vietnam]")
    assert problem in english and "{" + segment + "}" in english and tok("sp_unigram.model") in english
    assert "Special tokens it has: {@pad} = '<pad>' (0), {@unk} = '<unk>' (1)" in english
    assert "Đoạn special token" in vietnamese and tok("sp_unigram.model") in vietnamese
    assert errors.error_from_dict(err.to_dict()).english == err.english
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("policy", ["continue", "abort", "prompt"])
def test_a_literal_lookalike_of_a_control_token_is_refused_whatever_the_policy(tmp_path, tok, policy):
    """SentencePiece never reads a control piece from text: a literal "</s>" would be the
    characters <, /, s, > in every sample, not the eos the template means."""
    with pytest.raises(errors.TemplateTokenizerError) as info:
        build(tmp_path, tok("sp_bpe.model"), "<s>{q} {a}</s>", on_template_unk=policy)
    err = info.value
    assert err.kind == "lookalike" and err.literal == "<s>" and (err.token, err.token_id) == ("<s>", 1)
    assert err.segment == "{@bos}" and 1 not in err.ids
    english = err.english
    assert "Fix: write {@bos} where the token belongs" in english
    assert "whatever on_template_unk says" in english and "{@bos}" in err.vietnamese
    assert not (tmp_path / "out").exists()


def test_a_lookalike_inside_a_longer_literal(tmp_path, tok):
    with pytest.raises(errors.TemplateTokenizerError) as info:
        build(tmp_path, tok("sp_bytefallback.model"), "{q}\nend</s>\n{a}")
    assert (info.value.kind, info.value.token, info.value.segment) == ("lookalike", "</s>", "{@eos}")


def test_lookalike_check_counts_each_spelling(tok):
    from mintdim_beam.storage import files as storage
    from mintdim_beam.tokenization.adapters import open_tokenizer
    from mintdim_beam.tokenization.template_tokens import constant_segments, lookalike

    chat = open_tokenizer(HF, tok("hf_chat"), storage.read_bytes, exists=storage.exists)
    segments = parse_template("{q}<|im_end|><|im_end|>{a}")
    assert lookalike(segments, chat, constant_segments(segments, chat)) is None
    sp = open_tokenizer(SP, tok("sp_bpe.model"), storage.read_bytes)
    segments = parse_template("{q} <pad> {a}")
    assert lookalike(segments, sp, constant_segments(segments, sp)) == (1, "<pad>", 3)


# --------------------------------------------------------------------------- reading back


@pytest.fixture
def chat_build(tmp_path, tok):
    template = "{@<|im_start|>}user\n{q}{@<|im_end|>}\n{@<|im_start|>}assistant\n{a}{@eos}"
    return build(tmp_path, tok("hf_chat"), template, kind=HF).outputs[0].path


def test_the_reader_and_training_view_name_special_segments(chat_build):
    from mintdim_beam.reader import open_output

    ds = open_output(chat_build)
    sample = ds.sample(0)
    assert sample.segment("@eos").tolist() == [2] and sample.segment("@<|im_end|>").tolist() == [2]
    view = ds.causal_lm(loss_segments=["a", "@eos"], shift=False)
    item = view[0]
    lengths = sample.lengths.tolist()
    start = sum(lengths[:7])
    want = np.full(len(item["labels"]), -100)
    want[start:start + lengths[7] + 1] = item["input_ids"][start:start + lengths[7] + 1]
    assert item["labels"].tolist() == want.tolist()
    assert item["labels"][start + lengths[7]] == 2       # the eos is a target


def test_verify_and_retokenize_a_build_without_unk(chat_build):
    from mintdim_beam.reader.verify import verify_output

    report = verify_output(chat_build, tokenizer="manifest", sample_rows=0)
    assert report.ok, report.problems
    assert report.retokenized == 4


def test_verify_notices_an_unk_id_that_contradicts_the_manifest(chat_build):
    from mintdim_beam.reader.verify import verify_output

    lf = Path(chat_build) / "length_field.json"
    data = json.loads(lf.read_text())
    data["unk_token_id"] = 5
    lf.write_text(json.dumps(data, indent=2) + "\n")
    report = verify_output(chat_build, checksums=False)
    assert any("unk id: length_field.json says 5, manifest.json says None" in str(p) for p in report.problems)


def test_report_and_inspect_of_a_build_without_unk(chat_build, tmp_path, capsys):
    from mintdim_beam.cli.commands import main

    assert main(["report", chat_build, "-o", str(tmp_path / "r.html")]) == 0
    assert "unk none (cannot occur)" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert main(["inspect", chat_build, "--sample-id", "0"]) == 0
    shown = capsys.readouterr().out
    assert "@<|im_start|> (1 tokens)" in shown and "@eos (1 tokens)" in shown


def test_an_ordinary_token_named_as_a_role_is_no_lookalike(tmp_path, tok):
    """A companion may name an ordinary token as eos ("!"): literals holding "!" are text."""
    import shutil

    from mintdim_beam.storage import files as storage
    from mintdim_beam.tokenization.adapters import open_tokenizer
    from mintdim_beam.tokenization.template_tokens import constant_segments, lookalike

    where = tmp_path / "model"
    where.mkdir()
    shutil.copy(tok("hf_chat/tokenizer.json"), where / "tokenizer.json")
    (where / "tokenizer_config.json").write_text(json.dumps({"pad_token": "<|pad|>", "eos_token": "!"}))
    t = open_tokenizer(HF, str(where), storage.read_bytes, exists=storage.exists)
    assert t.special_token("eos").content == "!"
    segments = parse_template("{q}!!! {a}{@eos}")
    assert lookalike(segments, t, constant_segments(segments, t)) is None
