"""End-to-end builds on real third-party tokenizers and data (``../shared/realdata``).

Skipped when that directory is absent. The files are read in place, never copied.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import (
    REALDATA,
    DirectTokenizer,
    OutputDir,
    assert_nothing_published,
    build_and_compare,
    expected_segments,
    run_pipeline,
    segment_texts,
    write_jsonl,
)
from mintdim_beam import errors

pytestmark = pytest.mark.skipif(not REALDATA.is_dir(), reason=f"{REALDATA} is not available")

SP = "sentencepiece"
HF = "hf_json"


def data(name: str) -> str:
    return str(REALDATA / "data" / name)


def tokenizer(name: str) -> str:
    return str(REALDATA / "tokenizers" / name)


def read_rows(path: str) -> list:
    return [json.loads(line) for line in Path(path).read_bytes().decode("utf-8").split("\n")
            if line.strip()]


def test_alpaca_with_t5_sentencepiece(tmp_path):
    src = data("alpaca_en_demo.jsonl")
    t5 = tokenizer("t5_spiece_32000.model")
    template = "{instruction}\n\n{input}\n\n{output}"
    result = build_and_compare(
        tmp_path, files=[src], fields=[["instruction", "input", "output"]], templates=[template],
        tokenizer_kind=SP, tokenizer_files=[t5], sizes=[[64, 128, 256, 512]],
        build_batch=[256], samples_per_shard=[200], output_dirs="alpaca", on_overflow="extend")
    out = OutputDir(result.outputs[0].path)
    rows = read_rows(src)
    assert len(rows) == 999 and out.stats["total_samples"] == 999

    # duplicates: 13 groups holding 27 records, i.e. 14 records repeat an earlier one
    dups = out.jsonl("duplicate_index.jsonl")
    rendered = Counter("".join(segment_texts(template, r)) for r in rows)
    assert len(dups) == sum(1 for c in rendered.values() if c > 1) == 13
    assert sum(d["count"] for d in dups) - len(dups) == 14
    for d in dups:
        ids = [s["sample_id"] for s in d["samples"]]
        assert ids == sorted(ids) and d["count"] == len(ids)
        texts = {"".join(segment_texts(template, rows[i])) for i in ids}
        assert len(texts) == 1
    assert out.stats["duplicate_groups"] == 13 and out.stats["duplicate_samples"] == 27

    # empty inputs are reported in empty_fields
    empty = [r["sample_id"] for r in out.samples if "input" in r["empty_fields"]]
    assert empty == [i for i, r in enumerate(rows) if r["input"] == ""]
    assert len(empty) > 500

    # the longest records were placed in extended units, in sample order
    assert out.manifest["units"]["sizes"][:4] == [64, 128, 256, 512]
    assert len(out.manifest["units"]["sizes"]) > 4

    # exact per-segment encoding, checked on a spread of records
    direct = DirectTokenizer(SP, t5)
    assert direct.encode("\n\n") == []  # T5 drops newlines: the literals have no tokens
    for row in out.samples[::37]:
        assert out.decode(row) == expected_segments(direct, template, rows[row["sample_id"]])
    out.check_layout()
    for unk in out.jsonl("unk_index.jsonl"):
        for ch, seg in zip(unk["unk_chars"], unk["unk_field_indices"]):
            assert ch in segment_texts(template, rows[unk["sample_id"]])[seg]


def test_xcopa_numbers_bools_with_byte_fallback(tmp_path):
    src = data("xcopa_test.vi.jsonl")
    model = tokenizer("kerashub_llama_export_vocab_290.model")
    fields = ["premise", "choice1", "choice2", "question", "label", "idx", "changed"]
    template = ("Premise: {premise}\nChoice 1: {choice1}\nChoice 2: {choice2}\n"
                "Question: {question}\nLabel: {label}\nIdx: {idx}\nChanged: {changed}")
    result = build_and_compare(
        tmp_path, files=[src], fields=[fields], templates=[template], tokenizer_kind=SP,
        tokenizer_files=[model], sizes=[[128, 256, 384, 512]], build_batch=[100],
        samples_per_shard=[128], output_dirs="xcopa")
    out = OutputDir(result.outputs[0].path)
    rows = read_rows(src)
    assert out.stats["total_samples"] == 500
    direct = DirectTokenizer(SP, model)
    decoded = out.decoded()
    seq = out.sequence_template
    label_seg, idx_seg, changed_seg = seq.index("label"), seq.index("idx"), seq.index("changed")
    for sid, row in enumerate(rows):
        segments = decoded[sid]
        assert segments == expected_segments(direct, template, row)
        assert segments[label_seg] == direct.encode(json.dumps(row["label"]))
        assert segments[idx_seg] == direct.encode(str(row["idx"]))
        assert segments[changed_seg] == direct.encode("true" if row["changed"] else "false")
    # byte fallback: Vietnamese letters become byte pieces, never UNK
    assert out.jsonl("unk_index.jsonl") == [] and out.stats["unk_tokens"] == 0
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=model)
    pieces = {sp.id_to_piece(t) for t in decoded[0][seq.index("premise")]}
    assert any(p.startswith("<0x") for p in pieces)
    assert all(r["empty_fields"] == [] for r in out.samples)


def test_oasst_bare_strings_abort(tmp_path):
    src = data("oasst_prompt_lottery_en_250_text.jsonl")
    with pytest.raises(errors.SourceParseError) as info:
        build_and_compare(
            tmp_path, files=[src], fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
            tokenizer_files=[tokenizer("t5_spiece_32000.model")], sizes=[[512]],
            samples_per_shard=[100], output_dirs="oasst")
    err = info.value
    assert (err.file, err.line, err.reason) == (src, 1, "JSON value is not an object")
    assert "[english] SourceParseError" in str(err) and "[vietnam] SourceParseError" in str(err)
    assert_nothing_published(tmp_path / "oasst")


def test_oasst_bare_strings_skip(tmp_path):
    """Every line skipped as a bad record: the output would receive no sample, which
    fails the build (DESIGN.md section 8) with the counts, publishing nothing."""
    src = data("oasst_prompt_lottery_en_250_text.jsonl")
    with pytest.raises(errors.BuildLimitError) as info:
        build_and_compare(
            tmp_path, files=[src], fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
            tokenizer_files=[tokenizer("t5_spiece_32000.model")], sizes=[[256, 512]],
            samples_per_shard=[100], output_dirs="oasst", on_bad_record="skip")
    err = info.value
    assert (err.directory, err.samples, err.bad_records) == (str(tmp_path / "oasst"), 250, 250)
    assert "Bad records: 250 (left out by on_bad_record skip)" in str(err)
    assert "Bad record: 250 (bị bỏ qua bởi on_bad_record skip)" in str(err)
    assert_nothing_published(tmp_path / "oasst")
    for unit in (256, 512):
        assert "Output received no sample" in (tmp_path / "oasst" / f"unit_{unit}" / "UNIT_BUILD_FAILED.md").read_text()


def test_minilm_wordpiece_padding_and_truncation_ignored(tmp_path):
    from tokenizers import Tokenizer

    path = tokenizer("all-MiniLM-L6-v2.tokenizer.json")
    saved = Tokenizer.from_file(path)
    assert saved.padding["length"] == 128 and saved.truncation["max_length"] == 128
    alpaca = read_rows(data("alpaca_en_demo.jsonl"))
    direct = DirectTokenizer(HF, path)
    long_rows = [r for r in alpaca if len(direct.encode(r["output"])) > 300][:3]
    short_rows = [r for r in alpaca if len(direct.encode(r["output"])) < 40][:3]
    rows = [{"q": r["instruction"], "a": r["output"]} for r in long_rows + short_rows]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    template = "question: {q}\nanswer: {a}"
    result = build_and_compare(
        tmp_path, files=[src], fields=[["q", "a"]], templates=[template], tokenizer_kind=HF,
        tokenizer_files=[path], sizes=[[64, 128, 256, 512, 1024]], build_batch=[16],
        samples_per_shard=[4], output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    assert out.pad == 0
    decoded = out.decoded()
    for sid, row in enumerate(rows):
        assert decoded[sid] == expected_segments(direct, template, row)
        flat = [t for seg in decoded[sid] for t in seg]
        assert 101 not in flat and 102 not in flat  # no [CLS] / [SEP]
    assert all(sum(len(s) for s in decoded[i]) > 300 for i in range(3))  # not cut at 128
    assert all(out.samples[i]["unit_size"] >= 512 for i in range(3))
    # short samples are not padded to the file's length 128 inside the payload
    assert all(out.samples[i]["token_count"] < 64 for i in range(3, 6))


@pytest.mark.parametrize("name, kind, special", [
    ("bert-base-uncased.tokenizer.json", HF, {"pad_id"}),
    # no unk token (and, despite the vocabulary's <|padding|>, no padding configured either)
    ("olmo_gpt-neox-20b-pii-special.tokenizer.json", HF, {"unk_id", "pad_id"}),
    ("sp_test_model_1000.model", SP, {"pad_id"}),
])
def test_real_tokenizers_without_special_tokens_refused(tmp_path, name, kind, special):
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": "hello"}])
    out = tmp_path / "out"
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        run_pipeline(files=[src], fields=[["text"]], templates=["{text}"], tokenizer_kind=kind,
                     tokenizer_files=[tokenizer(name)], sizes=[[8]], samples_per_shard=[4],
                     output_dirs=str(out))
    assert info.value.special_token in special
    assert info.value.tokenizer == tokenizer(name)
    assert not out.exists()
