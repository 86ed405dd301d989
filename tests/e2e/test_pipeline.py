"""Behaviour tests of the Beam unit build, end to end.

Every build here is small; most run the pipeline and the independent reference
(``tests/reference.py``) on the same inputs through ``build_and_compare`` and then decode
the shards from their bytes (``OutputDir``), comparing each record's segments with the
tokenizer library's own encoding of each segment.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import (
    DirectTokenizer,
    OutputDir,
    assert_nothing_published,
    assert_same_outputs,
    build_and_compare,
    expected_segments,
    list_output_files,
    run_pipeline,
    segment_texts,
    sha256_text,
    write_jsonl,
)
from mintdim_beam import errors

SP = "sentencepiece"
HF = "hf_json"

EN = [
    "Bees pollinate crops and live in large colonies.",
    "Tides rise and fall because the Moon pulls on the oceans.",
    "Bread rises because yeast makes gas that the dough traps.",
    "A rainbow appears when raindrops bend and reflect sunlight.",
    "Compost turns kitchen and garden waste into rich soil.",
    "The queen is the only bee in the hive that lays eggs.",
]
VI = [
    "Ong thụ phấn cho cây trồng và sống thành đàn lớn.",
    "Thủy triều lên xuống vì Mặt Trăng kéo nước biển.",
    "Bánh mì nở vì men tạo ra khí.",
]


def check_decoded(out: OutputDir, tokenizer: DirectTokenizer, template: str, rows_by_id: dict):
    """Every written record equals the direct encoding of each of its segments."""
    out.check_layout()
    decoded = out.decoded()
    assert sorted(decoded) == sorted(rows_by_id)
    for sid, row in rows_by_id.items():
        assert decoded[sid] == expected_segments(tokenizer, template, row), f"sample {sid}"
    return decoded


def words(n: int, start: int = 3) -> str:
    """``n`` words of the WordLevel fixtures, one token each."""
    return " ".join(f"w{start + i}" for i in range(n))


def make_wordlevel(path: Path, vocab_size: int) -> str:
    """A real HF WordLevel tokenizer: ``w<i>`` -> i, ``[UNK]`` 1, ``|`` 2, ``[PAD]`` last id."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    pad_id = vocab_size - 1
    vocab = {f"w{i}": i for i in range(vocab_size) if i not in (1, 2, pad_id)}
    vocab.update({"[UNK]": 1, "|": 2, "[PAD]": pad_id})
    assert len(vocab) == vocab_size
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(pad_id=pad_id, pad_token="[PAD]")
    tok.save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def wordlevel(tmp_path_factory) -> str:
    return make_wordlevel(tmp_path_factory.mktemp("wl") / "wordlevel.json", 400)


# =========================================================================== output mappings


def test_shared_output_two_files(tmp_path, tok):
    """Two files into one directory: sample ids run on across files in declared order."""
    f1 = write_jsonl(tmp_path / "in" / "a.jsonl", [
        {"title": "Bees", "body": EN[0], "extra": [1, 2]},
        {"title": "Tides", "body": EN[1]},
        {"title": "Bread", "body": EN[2]},
    ])
    f2 = write_jsonl(tmp_path / "in" / "dữ liệu" / "b c 100%{x}%d.jsonl", [  # "%" and braces in a path
        "",
        {"body": VI[0], "title": "Ong"},
        {"title": "Triều", "body": VI[1]},
    ])
    template = "{title}: {body}"
    result = build_and_compare(
        tmp_path, files=[f1, f2], fields=[["title", "body"]], templates=[template],
        tokenizer_kind=SP, tokenizer_files=[tok("sp_unigram.model")], sizes=[[8, 16, 32, 64, 128]],
        samples_per_shard=[2], output_dirs="shared")
    assert len(result.outputs) == 1
    out = OutputDir(result.outputs[0].path)
    assert out.sequence_template == ["title", "token_template", "body"]
    assert [(r["sample_id"], r["source_file"], r["source_line"]) for r in out.samples] == [
        (0, f1, 1), (1, f1, 2), (2, f1, 3), (3, f2, 2), (4, f2, 3)]
    rows = [json.loads(x) for x in Path(f1).read_text().splitlines()]
    rows += [json.loads(x) for x in Path(f2).read_text().splitlines() if x]
    check_decoded(out, DirectTokenizer(SP, tok("sp_unigram.model")), template, dict(enumerate(rows)))
    assert out.stats["total_samples"] == 5
    m = out.manifest
    assert m["pipeline"] == "unit-build"
    assert m["tokenizer"] == {"type": "sentencepiece", "path": tok("sp_unigram.model"),
                              "vocab_size": 400, "unk_id": 1, "pad_id": 0}
    assert m["token_storage"] == {"dtype": "uint16", "bytes_per_token": 2, "magic": 65535}
    assert m["sequence_template"] == out.sequence_template
    assert m["length_field_metadata"] == "length_field.json"
    assert m["units"]["sizes"] == [8, 16, 32, 64, 128]
    assert m["source"] == {"files": [f1, f2], "fields": [["title", "body"]] * 2,
                           "templates": [template] * 2}
    assert m["output"]["samples_per_shard"] == 2
    # BuildResult.shards describe the published shard files
    shards = result.outputs[0].shards
    assert sum(s.samples for s in shards) == 5
    for s in shards:
        assert Path(s.path).stat().st_size == s.bytes
        assert s.bytes == s.samples * (1 + 3 + s.unit) * 2


def test_mapped_outputs_two_dirs_mapped_tokenizers(tmp_path, tok):
    """Two files, two directories, every setting mapped (SentencePiece unigram and BPE)."""
    f1 = write_jsonl(tmp_path / "a.jsonl", [{"q": q, "a": a} for q, a in zip(EN, reversed(EN))])
    f2 = write_jsonl(tmp_path / "b.jsonl", [{"câu hỏi": v, "khác": 1} for v in VI + EN[:2]])
    templates = ["Q {q} A {a}", "{câu hỏi}"]
    result = build_and_compare(
        tmp_path, files=[f1, f2], fields=[["q", "a"], ["câu hỏi"]], templates=templates,
        tokenizer_kind=SP, tokenizer_files=[tok("sp_unigram.model"), tok("sp_bpe.model")],
        sizes=[[16, 64, 128], [4, 8, 128]], build_batch=[2, 5], samples_per_shard=[1, 3],
        output_dirs=["out_a", "out_b"])
    assert [Path(o.path).name for o in result.outputs] == ["out_a", "out_b"]
    a, b = (OutputDir(o.path) for o in result.outputs)
    assert a.pad == 0 and b.pad == 3  # sp_bpe: pad id 3, unk id 0
    assert a.sequence_template == ["token_template", "q", "token_template", "a"]
    assert b.sequence_template == ["câu hỏi"]
    rows_a = [json.loads(x) for x in Path(f1).read_text().splitlines()]
    rows_b = [json.loads(x) for x in Path(f2).read_text().splitlines()]
    check_decoded(a, DirectTokenizer(SP, tok("sp_unigram.model")), templates[0], dict(enumerate(rows_a)))
    decoded = check_decoded(b, DirectTokenizer(SP, tok("sp_bpe.model")), templates[1],
                            dict(enumerate(rows_b)))
    # records shorter than their unit really are padded with pad id 3
    assert any(r["token_count"] < r["unit_size"] for r in b.samples)
    assert a.stats["shards"] == len(rows_a)  # samples_per_shard 1
    assert decoded  # every sample of out_b decoded


def test_mixed_outputs_a_b_a(tmp_path, tok):
    """Three files with outputs [A, B, A]: A gets files 0 and 2 in that order."""
    files = [write_jsonl(tmp_path / f"f{i}.jsonl", [{"text": t} for t in chunk])
             for i, chunk in enumerate([EN[:3], EN[3:], VI])]
    (tmp_path / "A").mkdir()  # an existing, empty output directory is fine
    result = build_and_compare(
        tmp_path, files=files, fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
        tokenizer_files=[tok("hf_bytelevel_bpe.json")], sizes=[[4, 8, 16, 64]],
        samples_per_shard=[2], output_dirs=["A", "B", "A/"])
    assert len(result.outputs) == 2
    a = OutputDir(tmp_path / "A")
    b = OutputDir(tmp_path / "B")
    assert [(r["sample_id"], r["source_file"], r["source_line"]) for r in a.samples] == [
        (0, files[0], 1), (1, files[0], 2), (2, files[0], 3),
        (3, files[2], 1), (4, files[2], 2), (5, files[2], 3)]
    assert [(r["sample_id"], r["source_file"]) for r in b.samples] == [
        (0, files[1]), (1, files[1]), (2, files[1])]
    direct = DirectTokenizer(HF, tok("hf_bytelevel_bpe.json"))
    check_decoded(a, direct, "{text}", dict(enumerate({"text": t} for t in EN[:3] + VI)))
    check_decoded(b, direct, "{text}", dict(enumerate({"text": t} for t in EN[3:])))


# =========================================================================== tokenizer kinds


def test_hf_bytelevel_bpe_ignores_saved_padding_and_truncation(tmp_path, tok):
    """The file pads and truncates at 16; the build must encode exactly, one segment each."""
    from tokenizers import Tokenizer

    path = tok("hf_bytelevel_bpe.json")
    saved = Tokenizer.from_file(path)
    assert saved.truncation["max_length"] == 16 and saved.padding["pad_id"] == 0
    long_text = " ".join(EN[:4])
    assert len(saved.encode(long_text, add_special_tokens=False).ids) == 16  # file config truncates
    direct = DirectTokenizer(HF, path)
    assert len(direct.encode(long_text)) > 40
    rows = [{"q": "Bees?", "a": long_text}, {"q": long_text, "a": "ok"}, {"q": "hi", "a": "x"}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    template = "Q: {q}\nA: {a}"
    result = build_and_compare(
        tmp_path, files=[f], fields=[["q", "a"]], templates=[template], tokenizer_kind=HF,
        tokenizer_files=[path], sizes=[[8, 32, 128]], build_batch=[8], samples_per_shard=[4],
        output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    decoded = check_decoded(out, direct, template, dict(enumerate(rows)))
    assert len(decoded[0][3]) == len(direct.encode(long_text)) > 16
    assert len(decoded[1][1]) > 16
    assert [r["unit_size"] for r in out.samples] == [128, 128, 32]
    # a short sample is not padded to the batch's longest sample inside its segments
    assert sum(len(s) for s in decoded[2]) == out.samples[2]["token_count"] < 16


def test_hf_wordpiece_no_post_processor_no_truncation(tmp_path, tok):
    """BERT post-processor ([CLS]/[SEP]) is not applied; truncation at 32 is ignored."""
    from tokenizers import Tokenizer

    path = tok("hf_wordpiece.json")
    saved = Tokenizer.from_file(path)
    cls_id, sep_id = saved.token_to_id("[CLS]"), saved.token_to_id("[SEP]")
    long_text = " ".join(EN)
    rows = [{"q": "Why do bees matter?", "a": long_text}, {"q": VI[0], "a": "Bees 漢字."}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    template = "{q} - {a}"
    result = build_and_compare(
        tmp_path, files=[f], fields=[["q", "a"]], templates=[template], tokenizer_kind=HF,
        tokenizer_files=[path], sizes=[[16, 64, 256]], samples_per_shard=[8], output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    direct = DirectTokenizer(HF, path)
    decoded = check_decoded(out, direct, template, dict(enumerate(rows)))
    assert len(decoded[0][2]) > 32
    flat = [t for seg in decoded[0] + decoded[1] for t in seg]
    assert cls_id not in flat and sep_id not in flat
    unk = out.jsonl("unk_index.jsonl")
    assert [(u["sample_id"], u["unk_field_indices"], u["unk_chars"]) for u in unk] == [
        (1, [2, 2], ["漢", "字"])]  # BERT pre-tokenization splits CJK characters


def test_hf_unigram_unk_from_model_unk_id(tmp_path, tok):
    path = tok("hf_unigram.json")
    rows = [{"text": "The river 漢字 flows 🙂"}, {"text": EN[0]}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    result = build_and_compare(
        tmp_path, files=[f], fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
        tokenizer_files=[path], sizes=[[64]], samples_per_shard=[8], output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    direct = DirectTokenizer(HF, path)
    assert direct.unk_id == 1
    decoded = check_decoded(out, direct, "{text}", dict(enumerate(rows)))
    unk = out.jsonl("unk_index.jsonl")
    assert len(unk) == 1 and unk[0]["sample_id"] == 0
    assert unk[0]["unk_positions"] == [i for i, t in enumerate(decoded[0][0]) if t == 1]
    assert unk[0]["unk_chars"] == ["漢字", "🙂"]


# =========================================================================== templates


def test_template_literal_braces_and_field_used_twice(tmp_path, tok):
    path = tok("hf_bytelevel_bpe.json")
    template = "{{{q}}} => {a} {{x}} {q}"
    rows = [{"q": "why", "a": EN[0]}, {"q": "", "a": "nothing"}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    result = build_and_compare(
        tmp_path, files=[f], fields=[["q", "a"]], templates=[template], tokenizer_kind=HF,
        tokenizer_files=[path], sizes=[[64]], samples_per_shard=[8], output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    assert out.sequence_template == [
        "token_template", "q", "token_template", "a", "token_template", "q"]
    assert segment_texts(template, rows[0]) == ["{", "why", "} => ", EN[0], " {x} ", "why"]
    direct = DirectTokenizer(HF, path)
    decoded = check_decoded(out, direct, template, dict(enumerate(rows)))
    assert decoded[0][1] == decoded[0][5] == direct.encode("why")
    assert out.samples[0]["hash"] == sha256_text("{why} => " + EN[0] + " {x} why")
    assert out.samples[1]["empty_fields"] == ["q"]
    assert decoded[1][1] == decoded[1][5] == []


def test_field_declared_twice_reported_once(tmp_path, tok):
    """decisions.md: empty_fields and 'missing fields' name each declared field once."""
    f = write_jsonl(tmp_path / "in.jsonl", [{"a": None}, {"b": "x"}, {"a": "hi"}])
    result = build_and_compare(
        tmp_path, files=[f], fields=[["a", "a"]], templates=["{a}"], tokenizer_kind=HF,
        tokenizer_files=[tok("hf_bytelevel_bpe.json")], sizes=[[4]], samples_per_shard=[8],
        output_dirs="out", on_bad_record="skip")
    out = OutputDir(result.outputs[0].path)
    assert out.samples[0]["empty_fields"] == ["a"]
    assert out.jsonl("bad_record_index.jsonl")[0]["reason"] == "missing fields: a"


# =========================================================================== overflow


def test_overflow_abort_names_first_overflow(tmp_path, tok, wordlevel):
    """The first overflow in input order (file 2, a later block) aborts the build."""
    f1 = write_jsonl(tmp_path / "one.jsonl", [{"text": words(n)} for n in (1, 2, 3, 4)])
    lines = [{"text": words(1 + i % 4)} for i in range(300)]
    lines[150] = {"text": words(9)}     # line 151: first overflow
    lines[260] = {"text": words(12)}    # a later one
    lines.insert(10, "   ")             # blank lines still count
    f2 = write_jsonl(tmp_path / "two.jsonl", lines)
    with pytest.raises(errors.UnitOverflowError) as info:
        build_and_compare(
            tmp_path, files=[f1, f2], fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
            tokenizer_files=[wordlevel], sizes=[[2, 4]], samples_per_shard=[10],
            output_dirs="out", block_size=1024)
    err = info.value
    assert (err.file, err.line, err.token_count, err.max_unit_size) == (f2, 152, 9, 4)
    text = str(err)
    assert text.startswith("[english] UnitOverflowError") and "\n\n[vietnam] " in text
    assert f"{f2}:152" in text.split("[vietnam]")[0] and f"{f2}:152" in text.split("[vietnam]")[1]
    assert "\n\nPolicy: --on-overflow truncate (or skip, extend) on the command line, on_overflow: truncate" \
        in text.split("[vietnam]")[0]
    out = tmp_path / "out"
    assert_nothing_published(out)
    assert (out / "unit_2" / "UNIT_BUILD_FAILED.md").exists()
    assert (out / "unit_4" / "UNIT_BUILD_FAILED.md").exists()


def test_overflow_truncate_shrinks_last_segments(tmp_path, tok, wordlevel):
    rows = [
        {"a": words(4), "b": words(5)},              # 4 + 1 + 5 = 10 -> [4, 1, 1]
        {"a": words(7), "b": words(2)},              # 10 -> [6, 0, 0]
        {"a": words(2), "b": "w3 zzz w4 qqq"},       # 2 + 1 + 4 = 7 -> [2, 1, 3]: one UNK kept
        {"a": words(1), "b": words(1)},              # 3 fits
    ]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    template = "{a} | {b}"
    result = build_and_compare(
        tmp_path, files=[f], fields=[["a", "b"]], templates=[template], tokenizer_kind=HF,
        tokenizer_files=[wordlevel], sizes=[[3, 6]], samples_per_shard=[2], output_dirs="out",
        on_overflow="truncate")
    out = OutputDir(result.outputs[0].path)
    direct = DirectTokenizer(HF, wordlevel)
    decoded = out.decoded()
    full = [expected_segments(direct, template, r) for r in rows]
    assert [[len(s) for s in decoded[i]] for i in range(4)] == [
        [4, 1, 1], [6, 0, 0], [2, 1, 3], [1, 1, 1]]
    for i in range(4):
        for got, want in zip(decoded[i], full[i]):
            assert got == want[:len(got)]
    assert [r["token_count"] for r in out.samples] == [6, 6, 6, 3]
    assert [r["unit_size"] for r in out.samples] == [6, 6, 6, 3]
    overflow = out.jsonl("overflow_index.jsonl")
    assert [(o["sample_id"], o["token_count"], o["max_unit_size"], o["action"]) for o in overflow] == [
        (0, 10, 6, "truncate"), (1, 10, 6, "truncate"), (2, 7, 6, "truncate")]
    assert all("new_unit_size" not in o for o in overflow)
    unk = out.jsonl("unk_index.jsonl")  # "qqq" was cut off, "zzz" kept
    assert [(u["sample_id"], u["unk_positions"], u["unk_chars"]) for u in unk] == [(2, [4], ["zzz"])]
    assert out.stats["overflow_samples"] == 3 and out.stats["total_tokens"] == 21


def test_overflow_skip_drops_but_counts_duplicates(tmp_path, tok, wordlevel):
    rows = [{"text": words(2)}, {"text": words(9)}, {"text": words(1)},
            {"text": words(9)}, {"text": words(5) + " zzz"}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    result = build_and_compare(
        tmp_path, files=[f], fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
        tokenizer_files=[wordlevel], sizes=[[2, 4]], samples_per_shard=[2], output_dirs="out",
        on_overflow="skip")
    out = OutputDir(result.outputs[0].path)
    assert [r["sample_id"] for r in out.samples] == [0, 2]
    assert [(o["sample_id"], o["action"]) for o in out.jsonl("overflow_index.jsonl")] == [
        (1, "skip"), (3, "skip"), (4, "skip")]
    dups = out.jsonl("duplicate_index.jsonl")
    assert [(d["count"], [s["sample_id"] for s in d["samples"]]) for d in dups] == [(2, [1, 3])]
    assert out.jsonl("unk_index.jsonl") == []  # the UNK sample was skipped
    check_decoded(out, DirectTokenizer(HF, wordlevel), "{text}", {0: rows[0], 2: rows[2]})
    assert out.stats["total_samples"] == 2 and out.stats["overflow_samples"] == 3


def test_overflow_extend_adds_units_in_sample_order(tmp_path, tok, wordlevel):
    counts1 = [1, 10, 3, 6, 12]
    counts2 = [12, 11, 2, 5, 20, 4]
    f1 = write_jsonl(tmp_path / "one.jsonl", [{"text": words(n)} for n in counts1])
    rows2 = [{"text": words(n, start=7)} for n in counts2]
    rows2[1] = {"text": words(5, start=7) + " zzz " + words(5, start=20)}  # 11 tokens, one UNK
    f2 = write_jsonl(tmp_path / "two.jsonl", rows2)
    result = build_and_compare(
        tmp_path, files=[f1, f2], fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
        tokenizer_files=[wordlevel], sizes=[[2, 4]], samples_per_shard=[2], output_dirs="out",
        on_overflow="extend")
    out = OutputDir(result.outputs[0].path)
    overflow = out.jsonl("overflow_index.jsonl")
    assert [(o["sample_id"], o["token_count"], o["new_unit_size"]) for o in overflow] == [
        (1, 10, 10), (3, 6, 10), (4, 12, 12), (5, 12, 12), (6, 11, 12), (8, 5, 10), (9, 20, 20)]
    assert all(o["action"] == "extend" and o["max_unit_size"] == 4 for o in overflow)
    assert out.histogram == {"2": 2, "4": 2, "10": 3, "12": 3, "20": 1}
    assert out.manifest["units"]["sizes"] == [2, 4, 10, 12, 20]
    rows = {i: {"text": words(n)} for i, n in enumerate(counts1)}
    rows.update({5 + i: row for i, row in enumerate(rows2)})
    check_decoded(out, DirectTokenizer(HF, wordlevel), "{text}", rows)
    unk = out.jsonl("unk_index.jsonl")  # UNK inside an extended-unit sample
    assert [(u["sample_id"], u["unk_positions"], u["unk_chars"]) for u in unk] == [(6, [5], ["zzz"])]
    assert out.samples[6]["unit_size"] == 12
    assert not list((tmp_path / "out").glob("unit_*/EMPTY_UNIT.md"))


def test_extended_unit_shards_are_written_in_chunks(tmp_path, wordlevel, monkeypatch):
    """An extended unit's shard is assembled a few records at a time (a wide unit times
    many samples would otherwise be held whole); the bytes are the reference's."""
    from mintdim_beam.storage import files as storage
    from mintdim_beam.beam import write_stage

    chunks = {}
    real_write = storage.write_bytes

    def counting_write(path, data, **kwargs):
        if os.path.basename(os.path.dirname(path)).startswith("unit_"):   # a shard
            data = [data] if isinstance(data, (bytes, bytearray, memoryview)) else list(data)
            chunks[os.path.basename(os.path.dirname(path))] = len(data)
        return real_write(path, data, **kwargs)

    monkeypatch.setattr(storage, "write_bytes", counting_write)
    # two records of unit 10 per chunk: uint16 tokens, the magic and one length per record
    monkeypatch.setattr(write_stage, "EXTENDED_CHUNK_BYTES", 2 * (1 + 1 + 10) * 2)
    counts = [10, 3, 9, 10, 1, 8, 10, 12, 6]
    f = write_jsonl(tmp_path / "one.jsonl", [{"text": words(n)} for n in counts])
    result = build_and_compare(
        tmp_path, files=[f], fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
        tokenizer_files=[wordlevel], sizes=[[2, 4]], samples_per_shard=[8], output_dirs="out",
        on_overflow="extend")
    out = OutputDir(result.outputs[0].path)
    assert out.histogram == {"2": 1, "4": 1, "10": 6, "12": 1}
    # 6 records of unit 10, two per chunk (declared units' shards are copied ranges)
    assert {u: chunks[u] for u in ("unit_10", "unit_12")} == {"unit_10": 3, "unit_12": 1}
    check_decoded(out, DirectTokenizer(HF, wordlevel), "{text}",
                  {i: {"text": words(n)} for i, n in enumerate(counts)})


# =========================================================================== bad records


@pytest.mark.parametrize("bad_line, error_class, reason", [
    ('{"text": "unterminated', errors.SourceParseError, "invalid JSON syntax"),
    ('{"other": "no text field"}', errors.SampleSchemaError, "missing fields: text"),
], ids=["invalid-json", "missing-field"])
def test_bad_record_abort(tmp_path, tok, bad_line, error_class, reason):
    lines = [{"text": f"{EN[i % len(EN)]} {i}"} for i in range(120)]
    lines[70] = bad_line            # line 71, a later block
    lines[100] = "[1, 2, 3]"         # a later bad record is not the one reported
    lines.insert(5, "")
    f = write_jsonl(tmp_path / "in.jsonl", lines)
    with pytest.raises(error_class) as info:
        build_and_compare(
            tmp_path, files=[f], fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
            tokenizer_files=[tok("sp_unigram.model")], sizes=[[16, 64, 128]],
            samples_per_shard=[4], output_dirs="out", block_size=1024)
    err = info.value
    assert (err.file, err.line, err.reason) == (f, 72, reason)
    english, vietnamese = str(err).split("\n\n[vietnam] ")
    assert english.startswith(f"[english] {error_class.__name__}")
    assert f in english and f in vietnamese and "72" in english and "72" in vietnamese
    out = tmp_path / "out"
    assert_nothing_published(out)
    for unit in (16, 64, 128):
        assert (out / f"unit_{unit}" / "UNIT_BUILD_FAILED.md").exists()


def test_bad_record_abort_two_outputs_first_error_in_declared_order(tmp_path, tok):
    """The first bad record in declared file order wins, even in a later block; no output
    is published, every declared unit of every output is marked failed, and the failed
    directories are refused by a second run."""
    lines0 = [{"text": f"{EN[i % 6]} {i}"} for i in range(90)]
    lines0[79] = "[]"                                   # file 0, line 80, a late block
    f0 = write_jsonl(tmp_path / "zero.jsonl", lines0)
    f1 = write_jsonl(tmp_path / "one.jsonl", ['{"text": 1', {"text": "ok"}])  # line 1
    common = dict(files=[f0, f1], fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
                  tokenizer_files=[tok("sp_unigram.model")], sizes=[[32, 64], [16, 128]],
                  samples_per_shard=[8], output_dirs=["A", "B"], block_size=1024)
    with pytest.raises(errors.SourceParseError) as info:
        build_and_compare(tmp_path, **common)
    assert (info.value.file, info.value.line) == (f0, 80)
    assert info.value.reason == "JSON value is not an object"
    for name, units in (("A", (32, 64)), ("B", (16, 128))):
        assert_nothing_published(tmp_path / name)
        for unit in units:
            assert (tmp_path / name / f"unit_{unit}" / "UNIT_BUILD_FAILED.md").exists()
    with pytest.raises(errors.OutputValidationError):
        run_pipeline(**{**common, "output_dirs": [str(tmp_path / "A"), str(tmp_path / "B")]})


def test_bad_records_skip(tmp_path, tok):
    lines = [
        {"q": "Bees", "a": EN[0]},                      # 1 -> id 0
        b'{"q": "caf\xe9", "a": "latin-1"}',            # 2 invalid UTF-8
        '"just a string"',                              # 3 not an object
        "[1, 2]",                                       # 4
        "42",                                           # 5
        "null",                                         # 6
        {"q": "only q"},                                # 7 missing a
        {"x": 1},                                       # 8 missing q a
        {"q": ["list"], "a": "x"},                      # 9 array value
        {"q": "x", "a": {"k": "v"}},                    # 10 object value
        "{not json}",                                   # 11
        '{"q": NaN, "a": "x"}',                         # 12 NaN is not JSON
        "",                                             # 13 blank: no id
        {"q": "Tides", "a": EN[1], "extra": [1]},       # 14 -> id 12
    ]
    f = write_jsonl(tmp_path / "in.jsonl", lines)
    result = build_and_compare(
        tmp_path, files=[f], fields=[["q", "a"]], templates=["{q}: {a}"], tokenizer_kind=SP,
        tokenizer_files=[tok("sp_unigram.model")], sizes=[[32, 128]], samples_per_shard=[4],
        output_dirs="out", on_bad_record="skip")
    out = OutputDir(result.outputs[0].path)
    bad = out.jsonl("bad_record_index.jsonl")
    assert [(b["sample_id"], b["source_line"], b["error"], b["reason"]) for b in bad] == [
        (1, 2, "SourceParseError", "invalid UTF-8"),
        (2, 3, "SourceParseError", "JSON value is not an object"),
        (3, 4, "SourceParseError", "JSON value is not an object"),
        (4, 5, "SourceParseError", "JSON value is not an object"),
        (5, 6, "SourceParseError", "JSON value is not an object"),
        (6, 7, "SampleSchemaError", "missing fields: a"),
        (7, 8, "SampleSchemaError", "missing fields: q a"),
        (8, 9, "SampleSchemaError", "field value must be a string: q"),
        (9, 10, "SampleSchemaError", "field value must be a string: a"),
        (10, 11, "SourceParseError", "invalid JSON syntax"),
        (11, 12, "SourceParseError", "invalid JSON syntax"),
    ]
    assert all(b["source_file"] == f for b in bad)
    assert [(r["sample_id"], r["source_line"]) for r in out.samples] == [(0, 1), (12, 14)]
    check_decoded(out, DirectTokenizer(SP, tok("sp_unigram.model")), "{q}: {a}",
                  {0: lines[0], 12: lines[13]})
    assert out.stats["bad_records"] == 11 and out.stats["total_samples"] == 2


def test_deeply_nested_json_line_is_a_bad_record(tmp_path, tok):
    """A line nested deeper than the documented limit is a bad record naming the limit."""
    nested = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    f = write_jsonl(tmp_path / "in.jsonl", [{"text": "before"}, nested, {"text": "after"}])
    result = build_and_compare(
        tmp_path, files=[f], fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
        tokenizer_files=[tok("sp_unigram.model")], sizes=[[8]], samples_per_shard=[4],
        output_dirs="out", on_bad_record="skip")
    bad = OutputDir(result.outputs[0].path).jsonl("bad_record_index.jsonl")
    assert [(b["source_line"], b["error"], b["reason"]) for b in bad] == [
        (2, "SourceParseError", "JSON nested deeper than 512 levels")]


def test_same_file_listed_twice_and_relative_paths(tmp_path, tok, monkeypatch):
    """Paths stay exactly as declared; one file declared twice gives every sample twice."""
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "data" / "a.jsonl", [{"text": EN[0]}, {"text": EN[1]}])
    rel = "./data/a.jsonl"
    result = build_and_compare(
        tmp_path, files=[rel, "data/a.jsonl"], fields=[["text"]], templates=["{text}"],
        tokenizer_kind=SP, tokenizer_files=[os.path.relpath(tok("sp_unigram.model"))],
        sizes=[[64]], samples_per_shard=[3], output_dirs="./out")
    out = OutputDir(tmp_path / "out")
    assert [(r["sample_id"], r["source_file"], r["source_line"]) for r in out.samples] == [
        (0, rel, 1), (1, rel, 2), (2, "data/a.jsonl", 1), (3, "data/a.jsonl", 2)]
    dups = out.jsonl("duplicate_index.jsonl")
    assert [[s["sample_id"] for s in d["samples"]] for d in dups] == [[0, 2], [1, 3]]
    assert out.manifest["source"]["files"] == [rel, "data/a.jsonl"]
    assert len(result.outputs) == 1


# =========================================================================== UNK


@pytest.mark.parametrize("name, kind", [("sp_unigram.model", SP), ("hf_bpe_unk.json", HF)])
def test_unk_positions_fields_and_chars(tmp_path, tok, name, kind):
    path = tok(name)
    rows = [
        {"a": "hello 漢字 world 🙂", "b": "🙂🙂 x"},
        {"a": EN[0], "b": "a 漢字漢字 🙂x"},
        {"a": "no unknowns here", "b": "none"},
    ]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    template = "{a}\n{b}"
    result = build_and_compare(
        tmp_path, files=[f], fields=[["a", "b"]], templates=[template], tokenizer_kind=kind,
        tokenizer_files=[path], sizes=[[64]], samples_per_shard=[8], output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    direct = DirectTokenizer(kind, path)
    decoded = check_decoded(out, direct, template, dict(enumerate(rows)))
    unk = {u["sample_id"]: u for u in out.jsonl("unk_index.jsonl")}
    assert sorted(unk) == [0, 1]
    for sid, row in unk.items():
        payload = [t for seg in decoded[sid] for t in seg]
        positions = [i for i, t in enumerate(payload) if t == direct.unk_id]
        assert row["unk_positions"] == positions and row["unk_count"] == len(positions)
        bounds = np.cumsum([len(s) for s in decoded[sid]])
        assert row["unk_field_indices"] == [int(np.searchsorted(bounds, p, side="right"))
                                            for p in positions]
        # each unk char is an exact substring of the segment it came from
        texts = segment_texts(template, rows[sid])
        for ch, seg in zip(row["unk_chars"], row["unk_field_indices"]):
            assert ch and ch in texts[seg]
    assert "".join(unk[0]["unk_chars"]) == "漢字🙂🙂🙂"
    assert out.stats["samples_with_unk"] == 2
    assert out.stats["unk_tokens"] == sum(u["unk_count"] for u in unk.values())


def test_template_literal_unk_continue(tmp_path, tok):
    path = tok("sp_unigram.model")
    rows = [{"a": "Bees", "b": "Tides"}, {"a": "漢字", "b": "x"}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    template = "{a} | {b}"
    result = build_and_compare(
        tmp_path, files=[f], fields=[["a", "b"]], templates=[template], tokenizer_kind=SP,
        tokenizer_files=[path], sizes=[[16]], samples_per_shard=[8], output_dirs="out",
        on_template_unk="continue")
    out = OutputDir(result.outputs[0].path)
    decoded = check_decoded(out, DirectTokenizer(SP, path), template, dict(enumerate(rows)))
    unk = out.jsonl("unk_index.jsonl")
    assert [u["sample_id"] for u in unk] == [0, 1]  # every sample carries the literal UNK
    lit_pos = len(decoded[0][0]) + decoded[0][1].index(1)
    assert unk[0]["unk_positions"] == [lit_pos]
    assert unk[0]["unk_field_indices"] == [1] and unk[0]["unk_chars"] == ["|"]
    assert unk[1]["unk_field_indices"] == [0, 1] and unk[1]["unk_chars"] == ["漢字", "|"]


@pytest.mark.parametrize("template", ["{a} | {b} | {c}", "{c} | {a}{b}"])
def test_unk_rows_follow_positions_across_fields_and_literals(tmp_path, tok, template):
    """UNK tokens of fields and of literals interleave in each sample's row by position,
    also when the template's field order is not the declared one and truncation cuts
    some of them (the encoder finds field UNKs field by field and literal UNKs apart)."""
    path = tok("sp_unigram.model")
    rows = [{"a": ["漢", "Bees 字", "x"][i % 3] * (1 + i % 4), "b": ["🙂 tides", "y", "語 z 語"][i % 3],
             "c": ["", "字字 a", "c 🙂"][i % 3]} for i in range(40)]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    result = build_and_compare(
        tmp_path, files=[f], fields=[["a", "b", "c"]], templates=[template], tokenizer_kind=SP,
        tokenizer_files=[path], sizes=[[8, 16]], samples_per_shard=[8], output_dirs="out",
        on_template_unk="continue", on_overflow="truncate", build_batch=(5,))
    unk = OutputDir(result.outputs[0].path).jsonl("unk_index.jsonl")
    assert len(unk) == 40   # the literal "|" is UNK in every sample
    # Literal UNKs between field UNKs, and before them.
    want = {"{a} | {b} | {c}": [["漢", "|", "🙂", "|"], ["字", "字", "|", "|"], ["|", "語", "語", "|"]],
            "{c} | {a}{b}": [["|", "漢", "🙂"], ["字字", "|", "字", "字"], ["🙂", "|", "語", "語"]]}[template]
    assert [u["unk_chars"] for u in unk[:3]] == want
    assert any(u["unk_positions"][-1] >= 12 for u in unk)   # rows reach into truncated units


def test_template_literal_unk_prompt_names_the_literals_and_characters(tmp_path, tok):
    from mintdim_beam.launch import preflight
    from mintdim_beam import pipeline

    f = write_jsonl(tmp_path / "a.jsonl", [{"a": "x", "b": "y"}])
    config = (pipeline("unit-build").source.jsonl(files=[f], fields=[["a", "b"]], templates=["{a} | {b} |"])
              .tokenizer.sentencepiece(files=[tok("sp_unigram.model")]).units(sizes=[[16]], build_batch=[4])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[8]).config(on_template_unk="prompt"))
    asked = []
    found = preflight.check(config, ask=lambda text: asked.append(text) or True, interactive=True)
    assert found.literal_unk == {0: [preflight.LiteralUnk(" | ", ("|",)), preflight.LiteralUnk(" |", ("|",))]}
    assert "  literal segments with UNK 2: ' | ', ' |'\n  characters that encode to UNK: '|'\n" in asked[0]


@pytest.mark.parametrize("policy", ["abort", "prompt"])
def test_template_literal_unk_abort_and_prompt_without_tty(tmp_path, tok, monkeypatch, policy):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a TTY: prompt must abort
    f1 = write_jsonl(tmp_path / "a.jsonl", [{"a": "x", "b": "y"}])
    f2 = write_jsonl(tmp_path / "b.jsonl", [{"a": "x", "b": "y"}])
    out = tmp_path / "out"
    with pytest.raises(errors.TemplateTokenizerError) as info:
        build_and_compare(
            tmp_path, files=[f1, f2], fields=[["a", "b"]], templates=["{a}: {b}", "{a} | {b}"],
            tokenizer_kind=SP, tokenizer_files=[tok("sp_unigram.model")], sizes=[[16]],
            samples_per_shard=[8], output_dirs=[str(out / "1"), str(out / "2")],
            on_template_unk=policy)
    assert info.value.file_index == 1
    assert "[english] TemplateTokenizerError" in str(info.value) and "[vietnam]" in str(info.value)
    # the message names the characters and the literal behind the UNK, and the policy flag
    english, vietnamese = str(info.value).split("\n\n[vietnam] ")
    assert "\n\nCharacters that encode to UNK: '|' (U+007C) in literal segments ' | '\n\n" in english
    assert "\n\nKý tự bị encode thành UNK: '|' (U+007C) trong các đoạn literal ' | '\n\n" in vietnamese
    assert "--on-template-unk continue" in english and "on_template_unk: continue" in english
    assert info.value.unk_chars == ["|"] and info.value.literals == [" | "]
    assert not out.exists()


# =========================================================================== duplicates


def test_duplicates_across_files(tmp_path, tok):
    A, B, C = ({"a": EN[0], "b": "x"}, {"a": EN[1], "b": "y"}, {"a": EN[2], "b": "z"})
    f1 = write_jsonl(tmp_path / "one.jsonl", [A, B, A, {"a": "ab", "b": ""}])
    f2 = write_jsonl(tmp_path / "two.jsonl", [
        B, "", C, '{"a": "broken', {"a": "a", "b": "b"}, A, {"b": "x", "a": EN[0], "z": 1}])
    template = "{a}{b}"   # rendered text "ab" + "" == "a" + "b": same hash
    result = build_and_compare(
        tmp_path, files=[f1, f2], fields=[["a", "b"]], templates=[template], tokenizer_kind=HF,
        tokenizer_files=[tok("hf_bytelevel_bpe.json")], sizes=[[64]], samples_per_shard=[3],
        output_dirs="out", on_bad_record="skip")
    out = OutputDir(result.outputs[0].path)
    dups = out.jsonl("duplicate_index.jsonl")
    got = [(d["count"], [(s["sample_id"], s["source_file"], s["source_line"]) for s in d["samples"]])
           for d in dups]
    assert got == [
        (4, [(0, f1, 1), (2, f1, 3), (8, f2, 6), (9, f2, 7)]),
        (2, [(1, f1, 2), (4, f2, 1)]),
        (2, [(3, f1, 4), (7, f2, 5)]),
    ]
    assert dups[0]["hash"] == sha256_text(EN[0] + "x")
    assert out.stats["duplicate_groups"] == 3 and out.stats["duplicate_samples"] == 8
    assert [b["sample_id"] for b in out.jsonl("bad_record_index.jsonl")] == [6]


# =========================================================================== line handling


def test_crlf_bom_blank_lines_and_missing_final_newline(tmp_path, tok):
    f1 = write_jsonl(tmp_path / "crlf.jsonl", [
        {"text": "first"}, "", "   ", "\t", "\u3000", {"text": "second"}, "\r", {"text": "last"},
    ], newline="\r\n", final_newline=False, bom=True)
    f2 = write_jsonl(tmp_path / "bom_blank.jsonl", ["", {"text": "after bom"}, "  "], bom=True)
    f3 = tmp_path / "empty.jsonl"
    f3.write_bytes(b"")
    f4 = write_jsonl(tmp_path / "blank_only.jsonl", ["", " ", ""], final_newline=False)
    # U+2028, U+0085 and form feed inside a string do not end a line: lines split on \n only
    f5 = write_jsonl(tmp_path / "lf.jsonl", [{"text": "a\u2028b\x85c\x0cd"}, {"text": "no newline"}],
                     final_newline=False)
    assert "\u2028".encode() in Path(f5).read_bytes()
    files = [f1, f2, str(f3), f4, f5]
    result = build_and_compare(
        tmp_path, files=files, fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
        tokenizer_files=[tok("sp_unigram.model")], sizes=[[4, 8, 16]], samples_per_shard=[2],
        output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    assert [(r["sample_id"], r["source_file"], r["source_line"]) for r in out.samples] == [
        (0, f1, 1), (1, f1, 6), (2, f1, 8), (3, f2, 2), (4, f5, 1), (5, f5, 2)]
    check_decoded(out, DirectTokenizer(SP, tok("sp_unigram.model")), "{text}", {
        0: {"text": "first"}, 1: {"text": "second"}, 2: {"text": "last"},
        3: {"text": "after bom"}, 4: {"text": "a\u2028b\x85c\x0cd"}, 5: {"text": "no newline"}})


def _write_block_test_file(path: Path, block: int = 1024):
    """~300 lines (LF and CRLF) of mixed length; lines are padded with JSON whitespace so
    that block boundaries fall exactly on a line start, on the ``\n`` of a CRLF and on
    a ``\n`` itself. Two lines are several blocks long; the file has a BOM and no final
    newline. Returns the path and the boundary cases hit."""
    out = bytearray(b"\xef\xbb\xbf")
    long_row = {"q": "long", "a": " ".join(VI * 40)}
    hit = set()
    n = 0
    while n < 300:
        if n == 40:
            row = long_row
        elif n % 37 == 5:
            row = " "                                  # blank line
        elif n % 53 == 7:
            row = '{"q": "bad"'                        # bad record
        elif n % 29 == 3 and n > 60:
            row = {"q": "dup", "a": EN[1]}
        else:
            row = {"q": f"{n}", "a": (EN + VI)[n % 9] + " " + "ạ" * (n % 13)}
        term = b"\r\n" if n % 3 == 1 else b"\n"
        raw = (row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)).encode("utf-8")
        nxt = (len(out) // block + 1) * block
        if isinstance(row, dict) and row is not long_row:
            case = (nxt // block) % 3
            if case == 0:      # the next line starts exactly on the boundary
                target = nxt - len(term)
            elif case == 1:    # CRLF: "\r" just before the boundary, "\n" on it
                term, target = b"\r\n", nxt - 1
            else:              # the line's "\n" is the boundary byte
                term, target = b"\n", nxt
            pad = target - (len(out) + len(raw))
            if 0 <= pad < 40:
                raw = raw[:-1] + b" " * pad + b"}"
                hit.add(case)
        out += raw + term
        n += 1
    out += json.dumps(long_row, ensure_ascii=False).encode("utf-8")  # long, no final newline
    path.write_bytes(bytes(out))
    return str(path), hit


def test_blocks_build_batch_and_block_size_do_not_change_output(tmp_path, tok):
    f, hit = _write_block_test_file(tmp_path / "big.jsonl")
    assert hit == {0, 1, 2}
    data = Path(f).read_bytes()
    assert max(len(x) for x in data.split(b"\n")) > 4 * 1024   # a line spans many blocks
    assert len(data) > 20 * 1024
    common = dict(files=[f], fields=[["q", "a"]], templates=["{q}: {a}"], tokenizer_kind=SP,
                  tokenizer_files=[tok("sp_unigram.model")], sizes=[[16, 32, 64]],
                  samples_per_shard=[16], on_overflow="extend", on_bad_record="skip")
    base = build_and_compare(tmp_path, output_dirs="small_blocks", block_size=1024,
                             build_batch=[3], **common)
    out = OutputDir(base.outputs[0].path)
    assert out.stats["bad_records"] >= 3 and out.stats["duplicate_groups"] == 2
    assert out.stats["overflow_samples"] >= 2
    assert out.samples[-1]["source_line"] == 301
    run_pipeline(output_dirs=str(tmp_path / "default_blocks"), build_batch=[3], **common)
    run_pipeline(output_dirs=str(tmp_path / "other_batch"), block_size=1024, build_batch=[50],
                 **common)
    assert_same_outputs(tmp_path / "small_blocks", tmp_path / "default_blocks")
    assert_same_outputs(tmp_path / "small_blocks", tmp_path / "other_batch")


def test_slices_and_tokenizer_calls_do_not_change_output(tmp_path, tok, monkeypatch):
    """Blocks are encoded in slices (clean ones on a C-level fast path, the others line
    by line) and each slice in tokenizer calls of at most ``build_batch`` samples' texts.
    Tiny slices and calls, mixing clean and irregular lines in every way, give the
    reference's bytes."""
    from mintdim_beam.core import sample_lines

    rows = []
    for n in range(400):
        if n % 61 == 9:
            rows.append("")                                       # blank line
        elif n % 47 == 11:
            rows.append('{"q": "broken"')                         # bad record (skipped)
        elif n % 43 == 13:
            rows.append({"q": n, "a": None})                      # non-string fields
        elif n % 41 == 17:
            rows.append('  {"q": "spaced", "a": "x"}  ')          # whitespace around the value
        elif n % 31 == 19:
            rows.append({"q": "", "a": EN[n % len(EN)]})          # an empty field
        elif n % 37 == 21:
            rows.append({"q": "dup", "a": VI[0]})                 # duplicates
        else:
            rows.append({"q": f"q{n}", "a": (EN + VI)[n % 9] * (1 + n % 4)})
    f = write_jsonl(tmp_path / "mixed.jsonl", rows, newline="\r\n")
    common = dict(files=[f], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"], tokenizer_kind=SP,
                  tokenizer_files=[tok("sp_unigram.model")], sizes=[[16, 32, 64]],
                  samples_per_shard=[16], on_overflow="extend", on_bad_record="skip")
    base = build_and_compare(tmp_path, output_dirs="default_slices", build_batch=[4096], **common)
    stats = OutputDir(base.outputs[0].path).stats
    assert stats["bad_records"] >= 8 and stats["duplicate_groups"] >= 2
    for samples, chars, batch in ((7, 1 << 19, 3), (1024, 300, 2), (5, 120, 1)):
        monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", samples)
        monkeypatch.setattr(sample_lines, "SLICE_CHARS", chars)
        out = f"slices_{samples}_{chars}_{batch}"
        run_pipeline(output_dirs=str(tmp_path / out), build_batch=[batch], **common)
        assert_same_outputs(tmp_path / "default_slices", tmp_path / out)


def test_repeated_samples_match_the_reference(tmp_path, tok, monkeypatch):
    """Exact repeats reuse earlier results (BlockEncoder's repeat cache): the bytes stay
    the reference's, UNK rows, truncation and empty fields included."""
    from mintdim_beam.core import sample_lines

    monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", 5)
    base = [{"q": "ab", "a": "c"}, {"q": "a", "a": "bc"}, {"q": "漢字 question", "a": "answer ✓ 漢"},
            {"q": "long", "a": " ".join(EN)}, {"q": "", "a": VI[1]}, {"q": "plain", "a": EN[2]}]
    rows = [dict(r) for _ in range(12) for r in base]
    f = write_jsonl(tmp_path / "repeats.jsonl", rows)
    result = build_and_compare(tmp_path, files=[f], fields=[["q", "a"]], templates=["{q}{a}"], tokenizer_kind=SP,
                               tokenizer_files=[tok("sp_unigram.model")], sizes=[[8, 16, 32]],
                               samples_per_shard=[7], output_dirs="out", on_overflow="truncate",
                               on_template_unk="continue", block_size=1024)
    stats = OutputDir(result.outputs[0].path).stats
    assert stats["duplicate_groups"] == 5 and stats["samples_with_unk"] >= 12


# =========================================================================== units and values


def test_empty_units_and_empty_output(tmp_path, tok):
    f1 = write_jsonl(tmp_path / "a.jsonl", [{"text": EN[0]}, {"text": EN[1]}])
    f2 = write_jsonl(tmp_path / "b.jsonl", ["", "  "])
    job = dict(fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
               tokenizer_files=[tok("sp_unigram.model")], sizes=[[1, 2, 64, 128]], samples_per_shard=[8])
    result = build_and_compare(tmp_path, files=[f1], output_dirs=["full"], **job)
    full = tmp_path / "full"
    for unit in (1, 2, 128):
        assert (full / f"unit_{unit}" / "EMPTY_UNIT.md").exists()
        assert not list((full / f"unit_{unit}").glob("shard_*"))
    assert (full / "unit_64" / "shard_000000.bin").exists()
    assert not (full / "unit_64" / "EMPTY_UNIT.md").exists()
    assert OutputDir(full).histogram == {"1": 0, "2": 0, "64": 2, "128": 0}
    assert [o.stats["total_samples"] for o in result.outputs] == [2]
    # DESIGN.md section 8: an output that receives no sample fails the whole build.
    with pytest.raises(errors.BuildLimitError) as info:
        build_and_compare(tmp_path, files=[f1, f2], output_dirs=["full2", "empty"], **job)
    assert (info.value.directory, info.value.samples) == (str(tmp_path / "empty"), 0)
    assert_nothing_published(tmp_path / "full2")
    assert_nothing_published(tmp_path / "empty")


def test_null_number_bool_values_and_empty_fields(tmp_path, tok):
    path = tok("hf_bytelevel_bpe.json")
    fields = ["a", "b", "c", "d", "e", "f", "g", "h"]
    template = "{a}|{b}|{c}|{d}|{e}|{f}|{g}|{h}"
    raw = [
        '{"a": null, "b": 3.5, "c": true, "d": "", "e": 12345678901234567890, '
        '"f": -0.0, "g": 1E5, "h": false}',
        '{"h": "", "g": 0, "f": null, "e": -7, "d": "x", "c": false, "b": 1.0e-7, "a": "A"}',
    ]
    f1 = write_jsonl(tmp_path / "values.jsonl", raw)
    f2 = write_jsonl(tmp_path / "zero.jsonl", ['{"a": null, "d": ""}', '{"a": "", "d": null}'])
    result = build_and_compare(
        tmp_path, files=[f1, f2], fields=[fields, ["a", "d"]], templates=[template, "{a}{d}"],
        tokenizer_kind=HF, tokenizer_files=[path], sizes=[[2, 64]], samples_per_shard=[8],
        output_dirs=["values", "zero"])
    out = OutputDir(tmp_path / "values")
    rows = [json.loads(x) for x in raw]
    assert segment_texts(template, rows[0])[::2] == [
        "", "3.5", "true", "", "12345678901234567890", "-0.0", "100000.0", "false"]
    check_decoded(out, DirectTokenizer(HF, path), template, dict(enumerate(rows)))
    assert [r["empty_fields"] for r in out.samples] == [["a", "d"], ["f", "h"]]
    assert out.samples[0]["hash"] == sha256_text("|3.5|true||12345678901234567890|-0.0|100000.0|false")
    zero = OutputDir(tmp_path / "zero")
    assert [(r["token_count"], r["unit_size"], r["empty_fields"]) for r in zero.samples] == [
        (0, 2, ["a", "d"]), (0, 2, ["a", "d"])]
    assert zero.decoded() == {0: [[], []], 1: [[], []]}  # all-pad records
    assert [d["count"] for d in zero.jsonl("duplicate_index.jsonl")] == [2]
    assert len(result.outputs) == 2


@pytest.fixture(scope="module", params=[(65535, "uint16"), (65536, "uint32"), (70000, "uint32")],
                ids=["65535-uint16", "65536-uint32", "70000-uint32"])
def sized_wordlevel(request, tmp_path_factory):
    """(path, vocab size, expected dtype) of a WordLevel tokenizer with padding enabled;
    the pad id is the last id (65534, 65535 = the uint16 magic, 69999)."""
    vocab_size, dtype = request.param
    path = make_wordlevel(tmp_path_factory.mktemp("wl") / f"wordlevel_{vocab_size}.json", vocab_size)
    return path, vocab_size, dtype


def test_token_dtype_by_vocab_size(tmp_path, sized_wordlevel):
    path, vocab_size, dtype = sized_wordlevel
    top = vocab_size - 2  # the largest regular word id; the pad id is vocab_size - 1
    rows = [{"text": f"w{top} w3 w{top - 1}"}, {"text": "w0 zzz"}, {"text": f"w{top}"}]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    result = build_and_compare(
        tmp_path, files=[f], fields=[["text"]], templates=["{text}"], tokenizer_kind=HF,
        tokenizer_files=[path], sizes=[[2, 4]], samples_per_shard=[2], output_dirs="out")
    out = OutputDir(result.outputs[0].path)
    assert out.length_field["token_dtype"] == dtype
    assert out.pad == vocab_size - 1
    assert out.stats["bytes_per_token"] == (2 if dtype == "uint16" else 4)
    decoded = check_decoded(out, DirectTokenizer(HF, path), "{text}", dict(enumerate(rows)))
    assert decoded[0] == [[top, 3, top - 1]] and decoded[2] == [[top]]
    shard = (tmp_path / "out" / "unit_4" / "shard_000000.bin").read_bytes()
    width = 4 if dtype == "uint32" else 2
    assert len(shard) == 1 * (1 + 1 + 4) * width


# =========================================================================== launch-time errors


def _run_simple(tmp_path, tok, **overrides):
    f = overrides.pop("files", None) or [write_jsonl(tmp_path / "in.jsonl", [{"text": "hi"}])]
    kw = dict(files=f, fields=[["text"]], templates=["{text}"], tokenizer_kind=SP,
              tokenizer_files=[tok("sp_unigram.model")], sizes=[[8]], samples_per_shard=[4],
              output_dirs=str(tmp_path / "out"))
    kw.update(overrides)
    return run_pipeline(**kw)


def test_output_dir_not_empty(tmp_path, tok):
    """The second of two outputs holds a file: refused before anything is written."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    files = [write_jsonl(tmp_path / f"in{i}.jsonl", [{"text": "hi"}]) for i in range(2)]
    first = tmp_path / "first"
    with pytest.raises(errors.OutputValidationError) as info:
        _run_simple(tmp_path, tok, files=files, output_dirs=[str(first), str(out)])
    assert info.value.directory == str(out)
    assert "[english] OutputValidationError" in str(info.value)
    assert list_output_files(out) == {"keep.txt": b"mine"}
    assert not first.exists()


@pytest.mark.parametrize("which", ["source", "tokenizer"])
def test_missing_source_or_tokenizer_file(tmp_path, tok, which):
    missing = str(tmp_path / "nowhere" / ("x.jsonl" if which == "source" else "x.model"))
    kw = {"files": [missing]} if which == "source" else {"tokenizer_files": [missing]}
    with pytest.raises(errors.MintDimFileNotFoundError) as info:
        _run_simple(tmp_path, tok, **kw)
    assert info.value.context == which and info.value.path == missing
    assert missing in str(info.value) and "[vietnam]" in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, kind, special", [
    ("sp_nopad.model", SP, "pad_id"), ("hf_nopad.json", HF, "pad_id"),
    ("hf_bpe_nounk.json", HF, "unk_id")])
def test_tokenizer_without_special_token_refused(tmp_path, tok, name, kind, special):
    with pytest.raises(errors.TokenizerSpecialTokenError) as info:
        _run_simple(tmp_path, tok, tokenizer_kind=kind, tokenizer_files=[tok(name)])
    assert info.value.special_token == special and info.value.tokenizer == tok(name)
    assert special in str(info.value).split("[vietnam]")[0]
    assert not (tmp_path / "out").exists()


MAPPING_CASES = {
    "fields": (dict(fields=[["text"], ["text"]]), errors.FieldMappingError),
    "templates": (dict(templates=["{text}"] * 2), errors.TemplateMappingError),
    "tokenizers": (dict(tokenizer_files=["a.model", "b.model"]), errors.TokenizerMappingError),
    "sizes": (dict(sizes=[[8], [8]]), errors.UnitMappingError),
    "build_batch": (dict(build_batch=[3, 3]), errors.UnitMappingError),
    "outputs": (dict(output_dirs=["o1", "o2"]), errors.OutputMappingError),
    "sps_arity": (dict(samples_per_shard=[4, 4]), errors.SamplesPerShardError),
    "sps_zero": (dict(samples_per_shard=[0]), errors.SamplesPerShardError),
    "sps_bool": (dict(samples_per_shard=[True]), errors.SamplesPerShardError),
}


@pytest.mark.parametrize("case", sorted(MAPPING_CASES))
def test_mapping_errors_before_anything_is_written(tmp_path, tok, case):
    """3 input files, 2 entries: refused by run() before any output directory exists."""
    overrides, error_class = MAPPING_CASES[case]
    files = [write_jsonl(tmp_path / f"in{i}.jsonl", [{"text": "hi"}]) for i in range(3)]
    overrides = dict(overrides)
    if "output_dirs" in overrides:
        overrides["output_dirs"] = [str(tmp_path / d) for d in overrides["output_dirs"]]
    with pytest.raises(error_class) as info:
        _run_simple(tmp_path, tok, files=files, **overrides)
    assert "[english]" in str(info.value) and "[vietnam]" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in0.jsonl", "in1.jsonl", "in2.jsonl"]


@pytest.mark.parametrize("differs, overrides", [
    ("sizes", dict(sizes=[[8], [16]])),
    ("samples_per_shard", dict(samples_per_shard=[4, 5])),
    ("sequence_template", dict(templates=["{text}", "{text}!"])),
    ("tokenizer", dict(tokenizer_kind=SP)),
], ids=["sizes", "samples_per_shard", "sequence_template", "tokenizer"])
def test_shared_output_with_inconsistent_settings(tmp_path, tok, differs, overrides):
    files = [write_jsonl(tmp_path / f"in{i}.jsonl", [{"text": "hi"}]) for i in range(2)]
    out = tmp_path / "out"
    overrides = dict(overrides)
    if differs == "tokenizer":
        overrides["tokenizer_files"] = [tok("sp_unigram.model"), tok("sp_bpe.model")]
    with pytest.raises(errors.OutputMappingError) as info:
        _run_simple(tmp_path, tok, files=files, output_dirs=[str(out), str(out) + "/"], **overrides)
    assert info.value.differs == differs
    assert not out.exists() or not any(out.iterdir())


# =========================================================================== runners


def test_multi_process_runner_gives_identical_output(tmp_path, tok):
    rows = [{"q": f"{i}", "a": (EN + VI)[i % 9] + (" 漢字" if i % 7 == 0 else "")} for i in range(60)]
    rows[10] = rows[3]
    f1 = write_jsonl(tmp_path / "a.jsonl", rows[:30])
    f2 = write_jsonl(tmp_path / "b.jsonl", rows[30:])
    common = dict(files=[f1, f2], fields=[["q", "a"]], templates=["{q}: {a}"], tokenizer_kind=SP,
                  tokenizer_files=[tok("sp_unigram.model")], sizes=[[8, 16]], samples_per_shard=[7],
                  on_overflow="extend", block_size=1024)
    run_pipeline(output_dirs=[str(tmp_path / "default")] * 2, **common)
    run_pipeline(output_dirs=[str(tmp_path / "multi")] * 2,
                 options=["--direct_running_mode=multi_processing", "--direct_num_workers=2"],
                 **common)
    assert_same_outputs(tmp_path / "default", tmp_path / "multi")
    info = json.loads((tmp_path / "multi" / "build_info.json").read_text())
    assert info["direct_running_mode"] == "multi_processing"
