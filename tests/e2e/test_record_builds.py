"""The block encoder's records end to end: the JSON nesting limit and one huge line in
full builds, against the reference implementation (the encoder on its own is
``tests/unit/test_records.py``)."""

from __future__ import annotations

import json

import pytest

from conftest import TESTDATA, assert_nothing_published, assert_same_outputs, build_and_compare, run_pipeline, write_jsonl
from mintdim_beam import errors
from mintdim_beam.core import record_layout
from mintdim_beam.core import sample_lines
from test_records import _DEPTHS, LIMIT, TOKENIZER, TOO_DEEP, _deep_line, _nesting_rows


_NESTING_JOB = dict(fields=[["q", "a"]], templates=["{q}\n{a}"], tokenizer_kind="sentencepiece",
                    tokenizer_files=[TOKENIZER], sizes=[[8, 16, 32]], samples_per_shard=[4],
                    on_overflow="extend", block_size=2048)
_MULTI = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


def test_json_nesting_limit_gives_one_dataset_on_every_runner(tmp_path):
    """In memory and in worker processes, lines past the limit are the same bad records
    (the reference implementation's), and the published bytes are identical."""
    path = write_jsonl(tmp_path / "deep.jsonl", _nesting_rows() * 3)
    job = dict(files=[path], on_bad_record="skip", **_NESTING_JOB)
    build_and_compare(tmp_path, output_dirs="memory", **job)
    run_pipeline(output_dirs=str(tmp_path / "multi"), options=_MULTI, **job)
    assert_same_outputs(tmp_path / "memory", tmp_path / "multi")
    rows = [json.loads(r) for r in (tmp_path / "multi" / "bad_record_index.jsonl").read_text().splitlines()]
    assert [(r["source_line"], r["error"], r["reason"]) for r in rows] == [
        (2 + 2 * k + (2 * len(_DEPTHS) + 2) * copy, *TOO_DEEP)   # source lines count from 1
        for copy in range(3) for k, ok in enumerate(_DEPTHS.values()) if not ok]


@pytest.mark.parametrize("options", [None, _MULTI])
def test_a_line_past_the_json_nesting_limit_fails_the_build_under_abort(tmp_path, options):
    rows = [{"q": "first", "a": "plain"}, _deep_line(LIMIT, "at"), _deep_line(LIMIT + 1, "past"),
            {"q": "last", "a": "plain"}]
    path = write_jsonl(tmp_path / "deep.jsonl", rows)
    with pytest.raises(errors.SourceParseError) as caught:
        run_pipeline(files=[path], output_dirs=str(tmp_path / "out"), options=options, **_NESTING_JOB)
    text = str(caught.value)
    assert "[english] SourceParseError" in text and "[vietnam] SourceParseError" in text
    assert f"{path}" in text and "Line: 3" in text and f"Reason: JSON nested deeper than {LIMIT} levels" in text
    assert_nothing_published(tmp_path / "out")


# ------------------------------------------------------------------------- one huge line


@pytest.mark.parametrize("on_overflow", ["truncate", "extend"])
def test_a_huge_line_gives_the_reference_bytes(tmp_path, on_overflow):
    """A sample of over a million characters and tokens is hashed part by part and only
    its written tokens are copied for the layout (memory, benchmarks/huge_line.py); the
    published bytes are the reference's, UNK rows and literal segments included."""
    words = ["word", "text,", "long", "漢字", "tokens.", "Việt", "again", "✓"]
    huge = " ".join(words[(i * 7) % 11 % len(words)] for i in range(300_000))
    assert len(huge) > sample_lines._HASH_IN_PARTS
    rows = [{"q": "first", "a": "a short answer"}, {"q": "big", "a": huge}, {"q": "last", "a": "漢 end"}]
    path = write_jsonl(tmp_path / "huge.jsonl", rows)
    build_and_compare(tmp_path, files=[path], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"],
                      tokenizer_kind="sentencepiece", tokenizer_files=[TOKENIZER], sizes=[[8, 16, 32]],
                      samples_per_shard=[4], output_dirs="out", on_overflow=on_overflow,
                      on_template_unk="continue")
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["overflow_samples"] == 1 and stats["samples_with_unk"] == 2
    overflow = json.loads((tmp_path / "out" / "overflow_index.jsonl").read_text())
    assert overflow["source_line"] == 2 and overflow["token_count"] > record_layout._COMPACT_AT


@pytest.mark.parametrize("on_bad_record", ["skip", "abort"])
def test_a_lone_surrogate_escape_is_a_bad_record_as_in_the_reference(tmp_path, on_bad_record):
    """``"\\ud800"`` is valid JSON text but no Unicode string: the build's invalid UTF-8
    record, line and policy, the same in the reference (which used to crash on it), in a
    used field only; the same escape in a field the template does not use is harmless."""
    path = write_jsonl(tmp_path / "s.jsonl", [
        '{"q": "fine", "a": "ok"}',
        '{"q": "x\\udc00y", "a": "ok"}',
        '{"q": "fine", "a": "ok", "unused": "\\ud800"}',
        '{"q": "\\ud83d\\ude00 pair", "a": "ok"}',
    ])
    job = dict(files=[path], fields=[["q", "a"]], templates=["{q} {a}"], tokenizer_kind="sentencepiece",
               tokenizer_files=[str(TESTDATA / "sp_unigram.model")], sizes=[[16, 32]], samples_per_shard=[4],
               output_dirs="out", on_overflow="truncate", on_template_unk="continue", on_bad_record=on_bad_record)
    if on_bad_record == "abort":
        with pytest.raises(errors.SourceParseError) as info:
            build_and_compare(tmp_path, **job)
        assert (info.value.file, info.value.line, info.value.reason) == (path, 2, "invalid UTF-8")
        assert_nothing_published(tmp_path / "out")
    else:
        build_and_compare(tmp_path, **job)
        rows = [json.loads(x) for x in (tmp_path / "out" / "bad_record_index.jsonl").read_text().splitlines()]
        assert [(r["sample_id"], r["source_line"], r["reason"]) for r in rows] == [(1, 2, "invalid UTF-8")]
