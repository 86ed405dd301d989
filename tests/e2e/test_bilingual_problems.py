"""The [vietnam] block says in Vietnamese what the [english] block says.

Errors of our own (not in the spec) once printed their English problem line in both
blocks. Each case below is raised through the public entry point a user meets (the
fluent API, a job file, the command line) and checked by class and by both texts whole.
The spec's own examples that repeat English in the Vietnamese block ("tokenizer file
path must be str, got int", "missing pad_id", "invalid JSON syntax") keep it.
"""

from __future__ import annotations

import pytest

from conftest import TESTDATA, write_jsonl
from mintdim_beam import errors
from mintdim_beam import pipeline
from mintdim_beam.core.config import Policies

UNIT_RULES_EN = ("Rules:\n\n• sizes must be positive integers\n• sizes must be sorted ascending\n"
                 "• build_batch must be a positive integer")
UNIT_RULES_VI = ("Quy tắc:\n\n• sizes phải là các số nguyên dương\n• sizes phải được sắp xếp tăng dần\n"
                 "• build_batch phải là số nguyên dương")
TOKENIZER_RULES_EN = ("Rules:\n\n• tokenizer.files must be a list of tokenizer file paths\n"
                      "• each tokenizer file path must be a string\n"
                      "• unk_id and pad_id are loaded from the tokenizer library")
TOKENIZER_RULES_VI = ("Quy tắc:\n\n• tokenizer.files phải là list các đường dẫn file tokenizer\n"
                      "• mỗi đường dẫn file tokenizer phải là string\n"
                      "• unk_id và pad_id được lấy từ thư viện tokenizer")
MODEL = str(TESTDATA / "sp_unigram.model")


def job(**changed):
    given = dict(files=["a.jsonl"], fields=[["q"]], templates=["{q}"], tok=[MODEL], sizes=[[16]], bb=[4],
                 out="out", sps=[4])
    given.update(changed)
    return (pipeline("unit-build").source.jsonl(files=given["files"], fields=given["fields"],
                                                templates=given["templates"])
            .tokenizer.sentencepiece(files=given["tok"]).units(sizes=given["sizes"], build_batch=given["bb"])
            .output.dir(given["out"], samples_per_shard=given["sps"]))


def pipeline_texts(problem_en, rules_en, problem_vi, rules_vi):
    return (f"PipelineValidationError: Invalid pipeline configuration.\n\nProblem: {problem_en}\n\nRules:\n\n"
            f"• {rules_en}",
            f"PipelineValidationError: Cấu hình pipeline không hợp lệ.\n\nVấn đề: {problem_vi}\n\nQuy tắc:\n\n"
            f"• {rules_vi}")


def unit_texts(problem_en, problem_vi):
    return (f"UnitValidationError: Invalid unit config.\n\nProblem: {problem_en}\n\n{UNIT_RULES_EN}",
            f"UnitValidationError: Cấu hình unit không hợp lệ.\n\nVấn đề: {problem_vi}\n\n{UNIT_RULES_VI}")


def tokenizer_texts(problem_en, problem_vi):
    return (f"TokenizerValidationError: Invalid tokenizer configuration.\n\nComponent: files\n\n"
            f"Problem: {problem_en}\n\n{TOKENIZER_RULES_EN}",
            f"TokenizerValidationError: Cấu hình tokenizer không hợp lệ.\n\nThành phần: files\n\n"
            f"Vấn đề: {problem_vi}\n\n{TOKENIZER_RULES_VI}")


CASES = {
    "policy value": (
        lambda: Policies(on_overflow="drop"), errors.PipelineValidationError, pipeline_texts(
            "on_overflow must be one of abort, truncate, skip, extend, got 'drop'",
            "on_overflow: abort | truncate | skip | extend",
            "on_overflow phải là một trong abort, truncate, skip, extend, hiện tại là 'drop'",
            "on_overflow: abort | truncate | skip | extend")),
    "source.files not a list": (
        lambda: job(files="a.jsonl").config(), errors.PipelineValidationError, pipeline_texts(
            "source.files must be a list, got str", "source.files is a list of non-empty path strings",
            "source.files phải là một list, hiện tại là str", "source.files là list các chuỗi đường dẫn không rỗng")),
    "source.files item": (
        lambda: job(files=[3]).config(), errors.PipelineValidationError, pipeline_texts(
            "source.files[0] must be non-empty path strings, got int",
            "source.files is a list of non-empty path strings",
            "source.files[0] phải thuộc loại chuỗi đường dẫn không rỗng, hiện tại là int",
            "source.files là list các chuỗi đường dẫn không rỗng")),
    "source.fields item": (
        lambda: job(fields=["q"]).config(), errors.PipelineValidationError, pipeline_texts(
            "source.fields[0] must be lists of field names, got str", "source.fields is a list of lists of field names",
            "source.fields[0] phải thuộc loại list tên field, hiện tại là str",
            "source.fields là list các list tên field")),
    "unknown pipeline": (
        lambda: pipeline("other"), errors.PipelineValidationError, pipeline_texts(
            "unknown pipeline 'other'", 'pipeline("unit-build") is the only pipeline',
            "không có pipeline 'other'", 'pipeline("unit-build") là pipeline duy nhất')),
    "options type": (
        lambda: job().run(options=5, echo=lambda *a, **k: None), errors.PipelineValidationError, pipeline_texts(
            "options must be a list of Beam flags or a PipelineOptions, got int",
            "options: list of Beam flags such as ['--direct_num_workers=2'], or PipelineOptions",
            "options phải là một list các Beam flag hoặc một PipelineOptions, hiện tại là int",
            "options: list các Beam flag, ví dụ ['--direct_num_workers=2'], hoặc PipelineOptions")),
    "tokenizer.files not a list": (
        lambda: job(tok=MODEL).config(), errors.TokenizerValidationError, tokenizer_texts(
            "tokenizer.files must be a list, got str", "tokenizer.files phải là một list, hiện tại là str")),
    "sizes not lists": (
        lambda: job(sizes=[16]).config(), errors.UnitValidationError, unit_texts(
            "sizes must be a list of lists of positive integers",
            "sizes phải là một list gồm các list số nguyên dương")),
    "build_batch not a list": (
        lambda: job(bb=4).config(), errors.UnitValidationError, unit_texts(
            "build_batch must be a list of positive integers", "build_batch phải là một list các số nguyên dương")),
    "sizes not positive": (
        lambda: job(sizes=[[0, 16]]).config(), errors.UnitValidationError, unit_texts(
            "sizes must be positive integers, got [0, 16]", "sizes phải là các số nguyên dương, hiện tại là [0, 16]")),
    "sizes not ascending": (
        lambda: job(sizes=[[32, 16]]).config(), errors.UnitValidationError, unit_texts(
            "sizes must be sorted ascending, got [32, 16]",
            "sizes phải được sắp xếp tăng dần, hiện tại là [32, 16]")),
    "build_batch not positive": (
        lambda: job(bb=[0]).config(), errors.UnitValidationError, unit_texts(
            "build_batch must be a positive integer, got 0", "build_batch phải là số nguyên dương, hiện tại là 0")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_problem_lines_are_translated(case):
    make, cls, (english, vietnamese) = CASES[case]
    with pytest.raises(errors.MintDimError) as info:
        make()
    assert type(info.value) is cls
    assert info.value.english == english
    assert info.value.vietnamese == vietnamese


def test_the_spec_example_keeps_its_english_problem():
    """The spec prints "Vấn đề: tokenizer file path must be str, got int"."""
    with pytest.raises(errors.TokenizerValidationError) as info:
        job(tok=[3]).config()
    assert (info.value.english, info.value.vietnamese) == tokenizer_texts(
        "tokenizer file path must be str, got int", "tokenizer file path must be str, got int")


def test_encode_threads_problem_is_translated(tmp_path):
    src = write_jsonl(tmp_path / "d.jsonl", [{"q": "x"}])
    with pytest.raises(errors.MintDimError) as info:
        job(files=[src], out=str(tmp_path / "out")).run(options=["--encode_threads=0"], echo=lambda *a, **k: None)
    assert type(info.value) is errors.PipelineValidationError
    assert (info.value.english, info.value.vietnamese) == pipeline_texts(
        "--encode_threads must be a positive integer, got 0",
        "--encode_threads: a positive integer, or leave it out for the default",
        "--encode_threads phải là số nguyên dương, hiện tại là 0",
        "--encode_threads: một số nguyên dương, hoặc bỏ trống để dùng giá trị mặc định")
    assert not (tmp_path / "out").exists()


SECTIONS = ("source (chat, fields, files, pairs, templates), tokenizer (files, hf_json, sentencepiece, type), "
            "units (build_batch, sizes), output (dir, samples_per_shard), run (accelerators, block_size, "
            "index_layout, keep, max_bad_records, max_unk_fraction, on_bad_record, on_overflow, on_pair_collapse, "
            "on_template_unk, skip_unchanged, versioned)")


@pytest.mark.parametrize("kind", ["directory", "binary", "unparsable", "build-id"])
def test_job_file_problems_are_translated(tmp_path, capsys, kind):
    from mintdim_beam.cli.commands import main

    job_file = tmp_path / "job.yaml"
    argv = ["build", str(job_file)]
    if kind == "directory":
        job_file.mkdir()
        en, vi = f"job file {job_file} is not a regular file", f"job file {job_file} không phải là file thường"
    elif kind == "binary":
        job_file.write_bytes(b"\xff\xfe source: 1")
        detail = "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
        en = f"job file {job_file} could not be read as UTF-8 text: {detail}"
        vi = f"không đọc được job file {job_file} dưới dạng văn bản UTF-8: {detail}"
    elif kind == "unparsable":
        job_file.write_text("source: [1, 2\n")
        import yaml

        try:
            yaml.safe_load("source: [1, 2\n")
        except yaml.YAMLError as exc:
            detail = str(exc)
        en, vi = f"job file {job_file} could not be parsed: {detail}", f"không parse được job file {job_file}: {detail}"
    else:
        job_file.write_text("source: {}\n")
        argv += ["--build-id", "b1"]
        en = "--build-id needs versioned output roots (--versioned or run.versioned: true)"
        vi = "--build-id cần output root có phiên bản (--versioned hoặc run.versioned: true)"
    assert main(argv) == 2
    err = capsys.readouterr().err
    english, vietnamese = pipeline_texts(en, "job file sections: " + SECTIONS, vi,
                                         "các section của job file: " + SECTIONS)
    assert err == f"[english] {english}\n\n[vietnam] {vietnamese}\n"
