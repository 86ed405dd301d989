"""Guard rails checked before a build publishes (DESIGN.md §8): an output that receives no
sample always fails; ``max_bad_records`` and ``max_unk_fraction`` fail a build above
their limit. Every failure is the bilingual ``BuildLimitError`` naming the output, the
figure and the limit, publishes nothing (exit 2 on the command line), and a build
within its limits writes exactly the bytes of a build without them.

The pure checks (``core.limits``, the plan) are tested from block summaries; the
others build small inputs with the real pipeline.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from conftest import (TESTDATA, OutputDir, assert_nothing_published, assert_same_outputs, quiet,
                      refused_by_cli, write_jsonl)
from mintdim_beam import errors
from mintdim_beam.cli.commands import main
from mintdim_beam.core import limits
from mintdim_beam.core.config import JobSpec, Limits, Policies, resolve, run_settings
from mintdim_beam.core.plan import BlockSummary, make_plan

SP = str(TESTDATA / "sp_unigram.model")      # no CJK in its vocabulary: "漢" is UNK


def _config(outputs=("out",), files=("a.jsonl",), bad="skip", overflow="abort", **limit):
    job = JobSpec(files=list(files), fields=[["t"]], templates=["{t}"], tokenizer_kind="sentencepiece",
                  tokenizer_files=["tok.model"], sizes=[[4, 8]], build_batch=[8],
                  output_dirs=list(outputs), samples_per_shard=[3])
    return resolve(job, Policies(on_bad_record=bad, on_overflow=overflow), limits=Limits(**limit))


def _summary(file, samples, written, bad=0, overflow=0):
    counts = {4: written} if written else {}
    return BlockSummary(file, 0, samples, samples, counts, {4: 2 * written} if written else {}, (), bad,
                        overflow, None)


# --------------------------------------------------------------------------- the settings


@pytest.mark.parametrize("value", [-1, 1.5, -0.1, True, "0.01", "10", float("nan"), [1]])
def test_max_bad_records_is_a_count_or_a_fraction(value):
    with pytest.raises(errors.PipelineValidationError) as info:
        Limits(max_bad_records=value)
    text = str(info.value)
    assert "max_bad_records must be a count" in text and "max_bad_records phải là một số đếm" in text


@pytest.mark.parametrize("value", [2, -0.5, 1.01, False, "0.1"])
def test_max_unk_fraction_is_a_fraction(value):
    with pytest.raises(errors.PipelineValidationError) as info:
        Limits(max_unk_fraction=value)
    assert "max_unk_fraction must be a number from 0 to 1" in str(info.value)


def test_the_limits_default_to_none_and_come_from_the_run_section():
    assert Limits() == Limits(None, None) and _config().limits == Limits()
    run = run_settings({"max_bad_records": 0.01, "max_unk_fraction": 0})
    assert run["limits"] == Limits(0.01, 0)
    assert run_settings({})["limits"] == Limits()


# --------------------------------------------------------------------------- the plan


def test_an_output_that_receives_no_sample_fails_the_plan_with_its_counts():
    """One output gets samples, the other none (all bad): the whole build fails, naming
    the empty one, and the plan carries no write task."""
    config = _config(outputs=("full", "empty"), files=("a.jsonl", "b.jsonl"))
    plan = make_plan(config, [_summary(0, 5, 5), _summary(1, 999, 0, bad=999)])
    err = errors.error_from_dict(plan.error)
    assert isinstance(err, errors.BuildLimitError)
    assert (err.kind, err.directory, err.samples, err.bad_records) == ("no_samples", "empty", 999, 999)
    assert plan.shard_tasks == [] and plan.duplicate_tasks == []
    assert "Directory: empty" in str(err) and "Bad records: 999 (left out by on_bad_record skip)" in str(err)
    assert "Thư mục: empty" in str(err)
    assert errors.error_from_dict(make_plan(config, [_summary(0, 5, 5)]).error).samples == 0


def test_samples_skipped_as_overflow_are_named_when_nothing_is_left():
    config = _config(overflow="skip")
    err = errors.error_from_dict(make_plan(config, [_summary(0, 4, 0, bad=1, overflow=3)]).error)
    assert (err.samples, err.bad_records, err.overflow_skipped) == (4, 1, 3)
    assert "Dropped as overflow: 3 (left out by on_overflow skip)" in str(err)


def test_max_bad_records_counts_and_fractions_exactly():
    summaries = [_summary(0, 100, 43, bad=57)]
    assert make_plan(_config(max_bad_records=57), summaries).error is None
    err = errors.error_from_dict(make_plan(_config(max_bad_records=56), summaries).error)
    assert (err.kind, err.bad_records, err.samples, err.allowed) == ("too_many_bad_records", 57, 100, 56)
    assert "Limit: max_bad_records 56 (at most 56 bad records)" in str(err)
    # 0.57 of 100 is 57 exactly (0.57 * 100 is 56.99999999999999 in floats)
    assert make_plan(_config(max_bad_records=0.57), summaries).error is None
    err = errors.error_from_dict(make_plan(_config(max_bad_records=0.56), summaries).error)
    assert err.allowed == 56 and "Bad records: 57 of 100 samples read (57.00%)" in str(err)
    assert "max_bad_records 0.56 (at most 56 of 100 samples)" in str(err)
    assert "Bad record: 57 trên 100 sample đã đọc (57,00%)" in str(err)
    assert make_plan(_config(), summaries).error is None          # no limit: today's behaviour
    assert make_plan(_config(max_bad_records=0), [_summary(0, 5, 5)]).error is None


def test_the_unk_check_compares_unk_tokens_with_written_tokens():
    config = _config(max_unk_fraction=0.25)
    plan = make_plan(config, [_summary(0, 5, 5)])       # 10 written tokens
    assert limits.unk_error(config, plan.outputs, {0: (2, 1)}) is None
    err = errors.error_from_dict(limits.unk_error(config, plan.outputs, {0: (3, 2)}))
    assert (err.kind, err.unk_tokens, err.tokens, err.allowed) == ("too_much_unk", 3, 10, 2)
    assert "UNK tokens: 3 of 10 written tokens (30.00%), in 2 samples" in str(err)
    assert limits.unk_error(_config(), plan.outputs, {0: (10, 5)}) is None


def test_the_error_survives_json_and_pickle():
    for err in (errors.BuildLimitError("o", 3, 2, 1),
                errors.BuildLimitError.too_many_bad_records("o", 10, 3, 0.1, 1),
                errors.BuildLimitError.too_much_unk("o", 10, 3, 2, 0.2, 2)):
        for copy in (errors.error_from_dict(json.loads(json.dumps(err.to_dict()))), pickle.loads(pickle.dumps(err))):
            assert type(copy) is errors.BuildLimitError and str(copy) == str(err)


# --------------------------------------------------------------------------- builds


def _rows(bad: int, unk: int, good: int = 6) -> list:
    """``good`` plain rows, ``unk`` rows with one UNK each, ``bad`` bad records (an
    object value cannot be rendered)."""
    return ([{"t": f"hello world number {k}"} for k in range(good)]
            + [{"t": f"world 漢 {k}"} for k in range(unk)] + ['{"t": {"x": 1}}'] * bad)


def _job(src, out):
    from mintdim_beam import pipeline

    return (pipeline("unit-build").source.jsonl(files=[src], fields=[["t"]], templates=["{t}"])
            .tokenizer.sentencepiece(files=[SP]).units(sizes=[[16, 32]], build_batch=[4])
            .output.dir(str(out), samples_per_shard=[4]))


def _run(job, **kwargs):
    return job.run(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip", echo=quiet,
                   quiet=True, **kwargs)


def test_a_build_above_max_bad_records_publishes_nothing(tmp_path):
    src = write_jsonl(tmp_path / "a.jsonl", _rows(bad=3, unk=0))
    with pytest.raises(errors.BuildLimitError) as info:
        _run(_job(src, tmp_path / "out"), max_bad_records=2)
    err = info.value
    assert (err.directory, err.bad_records, err.samples, err.limit) == (str(tmp_path / "out"), 3, 9, 2)
    assert_nothing_published(tmp_path / "out")
    marker = (tmp_path / "out" / "unit_16" / "UNIT_BUILD_FAILED.md").read_text()
    assert "Bad records exceed max_bad_records" in marker
    # at the limit the build is the build without one, byte for byte
    _run(_job(src, tmp_path / "within"), max_bad_records=3)
    _run(_job(src, tmp_path / "fraction"), max_bad_records=0.34)      # 3 of 9 is 0.333...
    _run(_job(src, tmp_path / "free"))
    assert_same_outputs(tmp_path / "within", tmp_path / "free")
    assert_same_outputs(tmp_path / "fraction", tmp_path / "free")
    info = json.loads((tmp_path / "within" / "build_info.json").read_text())
    assert info["limits"] == {"max_bad_records": 3, "max_unk_fraction": None}
    assert "limits" not in json.dumps(json.loads((tmp_path / "within" / "manifest.json").read_text()))


def test_a_build_above_max_unk_fraction_publishes_nothing(tmp_path):
    src = write_jsonl(tmp_path / "a.jsonl", _rows(bad=0, unk=3))
    _run(_job(src, tmp_path / "free"))
    stats = OutputDir(tmp_path / "free").stats
    unk, tokens = stats["unk_tokens"], stats["total_tokens"]
    assert unk == 3 and tokens > 3
    with pytest.raises(errors.BuildLimitError) as info:
        _run(_job(src, tmp_path / "out"), max_unk_fraction=(unk - 1) / tokens)
    err = info.value
    assert (err.kind, err.unk_tokens, err.tokens, err.samples_with_unk) == ("too_much_unk", unk, tokens, 3)
    assert_nothing_published(tmp_path / "out")
    _run(_job(src, tmp_path / "within"), max_unk_fraction=unk / tokens)
    assert_same_outputs(tmp_path / "within", tmp_path / "free")


def test_the_command_line_takes_the_limits_from_flags_and_the_run_section(tmp_path, capsys):
    src = write_jsonl(tmp_path / "a.jsonl", _rows(bad=3, unk=3))

    def job_file(name: str) -> str:
        job = {"source": {"files": [src], "fields": [["t"]], "templates": ["{t}"]},
               "tokenizer": {"sentencepiece": [SP]}, "units": {"sizes": [[16, 32]], "build_batch": [4]},
               "output": {"dir": str(tmp_path / name), "samples_per_shard": [4]},
               "run": {"on_overflow": "truncate", "on_template_unk": "continue", "on_bad_record": "skip",
                       "max_bad_records": 0.2}}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(job))
        return str(path)

    english, vietnamese = refused_by_cli(
        capsys, ["build", job_file("a"), "--quiet"], "BuildLimitError",
        "Bad records: 3 of 12 samples read (25.00%)", "Limit: max_bad_records 0.2 (at most 2 of 12 samples)",
        f"Directory: {tmp_path / 'a'}")
    assert "Giới hạn: max_bad_records 0.2 (tối đa 2 trên 12 sample)" in vietnamese
    assert_nothing_published(tmp_path / "a")
    assert main(["build", job_file("b"), "--quiet", "--max-bad-records", "3"]) == 0   # the flag wins
    refused_by_cli(capsys, ["build", job_file("c"), "--quiet", "--max-bad-records", "3", "--max-unk-fraction",
                            "0.01"], "BuildLimitError", "UNK tokens exceed max_unk_fraction")
    refused_by_cli(capsys, ["build", job_file("d"), "--quiet", "--max-unk-fraction", "lots"],
                   "PipelineValidationError",
                   "max_unk_fraction must be a number from 0 to 1 (UNK tokens / written tokens), got 'lots'")


def test_a_versioned_build_that_fails_a_limit_leaves_latest_alone(tmp_path):
    from mintdim_beam.launch.versioned import launch_versioned

    src = write_jsonl(tmp_path / "a.jsonl", _rows(bad=1, unk=0))
    root = tmp_path / "root"
    job = _job(src, root)
    first = launch_versioned(job.config(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip"),
                             echo=quiet, quiet=True, build_id="b1")
    assert (root / "LATEST").read_text() == "b1\n" and not first.skipped
    strict = job.config(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip",
                        max_bad_records=0)
    with pytest.raises(errors.BuildLimitError):
        launch_versioned(strict, echo=quiet, quiet=True, build_id="b2")
    assert (root / "LATEST").read_text() == "b1\n"
    assert not (Path(root) / "b2" / "manifest.json").exists()


def test_a_build_whose_output_gets_no_sample_exits_2_naming_its_counts(tmp_path, capsys):
    """Every line a bad record, skipped: the build fails rather than publish an empty dataset."""
    src = write_jsonl(tmp_path / "a.jsonl", _rows(bad=999, unk=0, good=0))
    job = {"source": {"files": [src], "fields": [["t"]], "templates": ["{t}"]},
           "tokenizer": {"sentencepiece": [SP]}, "units": {"sizes": [[16]], "build_batch": [64]},
           "output": {"dir": str(tmp_path / "out"), "samples_per_shard": [4]},
           "run": {"on_bad_record": "skip", "on_template_unk": "continue"}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    english, vietnamese = refused_by_cli(
        capsys, ["build", str(tmp_path / "job.json"), "--quiet"], "BuildLimitError",
        "Output received no sample; nothing was published.", f"Directory: {tmp_path / 'out'}",
        "Samples read: 999", "Bad records: 999 (left out by on_bad_record skip)")
    assert "Bad record: 999 (bị bỏ qua bởi on_bad_record skip)" in vietnamese
    assert_nothing_published(tmp_path / "out")
