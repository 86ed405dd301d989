"""Job files, flags and paths a build refuses before any work, with the bilingual error.

Every case goes through ``mintdim-beam build`` (or the fluent API where the CLI cannot
say it) and must end in exit status 2, the error's class in both blocks, no traceback,
and no output directory written.

* Values of the wrong type or out of range: unit sizes above the documented maximum
  (2^31 used to allocate until the kernel killed the build, 10^20 to overflow with a
  traceback), ``samples_per_shard`` and ``build_batch`` likewise, ``block_size`` that is
  not an integer, booleans given as strings (``versioned: "false"`` was taken as
  true), a ``--build-id`` that is not one plain name (``../x`` wrote outside the root).
* Unknown keys are named with the closest known one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import TESTDATA, OutputDir, refused_by_cli, write_jsonl
from mintdim_beam import errors
from mintdim_beam import pipeline
from mintdim_beam.cli.commands import main

TOKENIZER = str(TESTDATA / "sp_unigram.model")

ROWS = [{"q": "Why do bees matter?", "a": "They pollinate crops."},
        {"q": "Bread", "a": "Yeast makes gas."}]


def _sections(tmp_path: Path, **override) -> dict:
    """Raw YAML text of each section; ``override`` replaces a section's body."""
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    sections = {
        "source": f'  files: ["{data}"]\n  fields: [["q", "a"]]\n  templates: ["{{q}}\\n{{a}}"]\n',
        "tokenizer": f'  sentencepiece: ["{TOKENIZER}"]\n',
        "units": "  sizes: [[16, 64]]\n  build_batch: [4]\n",
        "output": f'  dir: "{tmp_path / "out"}"\n  samples_per_shard: [2]\n',
        "run": "  on_overflow: truncate\n  on_template_unk: continue\n",
    }
    sections.update(override)
    return sections


def _write_job(tmp_path: Path, **override) -> str:
    text = "".join(f"{name}:\n{body}" for name, body in _sections(tmp_path, **override).items())
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _refused(capsys, argv, error: str, *facts: str) -> tuple[str, str]:
    return refused_by_cli(capsys, argv, error, *facts)


# --------------------------------------------------------------------------- unit sizes


@pytest.mark.parametrize("sizes, shown", [
    ("[[64, 2147483648]]", "unit size 2147483648 is above the maximum 16,777,216 tokens"),
    ("[[64, 100000000000000000000]]", "unit size 100000000000000000000 is above the maximum 16,777,216"),
    ("[[16777217]]", "unit size 16777217 is above the maximum 16,777,216 tokens"),
])
def test_unit_sizes_above_the_maximum_are_refused(tmp_path, capsys, sizes, shown):
    job = _write_job(tmp_path, units=f"  sizes: {sizes}\n  build_batch: [4]\n")
    english, vietnamese = _refused(capsys, ["build", job], "UnitValidationError", shown)
    assert "vượt quá giá trị tối đa 16.777.216" in vietnamese
    assert "Cấu hình unit không hợp lệ." in vietnamese
    assert not (tmp_path / "out").exists()
    # The maxima themselves are accepted.
    config = (pipeline("unit-build").source.jsonl(files=[str(tmp_path / "x.jsonl")], fields=[["q"]],
                                                  templates=["{q}"])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[16, 1 << 24]], build_batch=[1 << 20])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[(1 << 31) - 1]).config())
    assert config.outputs[0].sizes == (16, 1 << 24)


def test_build_batch_above_the_maximum_is_refused(tmp_path, capsys):
    job = _write_job(tmp_path, units="  sizes: [[16, 64]]\n  build_batch: [10000000]\n")
    _refused(capsys, ["build", job], "UnitValidationError", "build_batch 10000000 is above the maximum 1,048,576")


@pytest.mark.parametrize("value, shown", [
    ("[100000000000000000000]", "samples_per_shard[0] is 100000000000000000000, above the maximum 2,147,483,647"),
    ("10", "samples_per_shard must be a list of positive ints, got int 10"),
])
def test_samples_per_shard_out_of_range_or_not_a_list(tmp_path, capsys, value, shown):
    job = _write_job(tmp_path, output=f'  dir: "{tmp_path / "out"}"\n  samples_per_shard: {value}\n')
    _refused(capsys, ["build", job], "SamplesPerShardError", shown)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- run options


@pytest.mark.parametrize("value, shown", [
    ("abc", "block_size must be an integer from 1024 to 1073741824 bytes, got 'abc'"),
    ("1e6", "got '1e6'"),            # YAML 1.1 reads 1e6 as a string
    ("1.5e+6", "got 1500000.0"),     # ... and this as a float
    ("true", "got True"),
    ("2147483648", "got 2147483648"),
])
def test_block_size_must_be_an_integer_in_range(tmp_path, capsys, value, shown):
    job = _write_job(tmp_path, run=f"  on_overflow: truncate\n  block_size: {value}\n")
    english, vietnamese = _refused(capsys, ["build", job], "PipelineValidationError", shown)
    assert "block_size phải là số nguyên" in vietnamese
    assert not (tmp_path / "out").exists()


def test_block_size_flag_that_is_not_a_number(tmp_path, capsys):
    _refused(capsys, ["build", _write_job(tmp_path), "--block-size", "4k"], "PipelineValidationError",
             "got '4k'")


def test_a_negative_worker_count_is_refused(tmp_path, capsys):
    """``--direct_num_workers=-2`` used to reach Beam and end in an IndexError traceback."""
    english, vietnamese = _refused(capsys, ["build", _write_job(tmp_path), "--direct_num_workers=-2"],
                                   "PipelineValidationError",
                                   "--direct_num_workers must be 0 (one per core) or a positive integer, got -2")
    assert "--direct_num_workers phải là 0" in vietnamese
    assert not (tmp_path / "out").exists()


def test_an_unknown_runner_is_refused_before_any_work(tmp_path, capsys):
    """``--runner NoSuchRunner`` used to end in Beam's ValueError traceback (exit 1), after
    the output had been claimed and marked."""
    english, vietnamese = _refused(capsys, ["build", _write_job(tmp_path), "--runner", "NoSuchRunner"],
                                   "PipelineValidationError", "--runner NoSuchRunner is not a runner Beam knows")
    assert "--runner NoSuchRunner không phải là runner mà Beam biết" in vietnamese
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["build", "plan"])
@pytest.mark.parametrize("scheme", ["file", "hdfs2"])
def test_a_path_of_a_scheme_without_a_file_system_is_refused(tmp_path, capsys, command, scheme):
    """``file:///...`` or an unknown scheme used to end in Beam's ValueError traceback."""
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    path = f"{scheme}://{data}"
    source = f'  files: ["{path}"]\n  fields: [["q", "a"]]\n  templates: ["{{q}}\\n{{a}}"]\n'
    english, vietnamese = _refused(capsys, [command, _write_job(tmp_path, source=source)], "PipelineValidationError",
                                   f"no file system for {scheme}:// here, so {path} cannot be read or written",
                                   "without file://")
    assert f"không có file system cho {scheme}://" in vietnamese
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tokenizer, given", [
    (f'  type: hf_json\n  files: ["{TESTDATA / "hf_bytelevel_bpe.json"}"]\n  sentencepiece: ["{TOKENIZER}"]\n',
     "type, files, sentencepiece"),
    (f'  sentencepiece: ["{TOKENIZER}"]\n  hf_json: ["{TESTDATA / "hf_bytelevel_bpe.json"}"]\n',
     "sentencepiece, hf_json"),
])
def test_a_tokenizer_given_two_ways_is_refused(tmp_path, capsys, tokenizer, given):
    """``type: hf_json`` beside a ``sentencepiece:`` key used to build with the
    SentencePiece model, silently."""
    english, vietnamese = _refused(capsys, ["build", _write_job(tmp_path, tokenizer=tokenizer)],
                                   "PipelineValidationError", f"the tokenizer section gives {given}; give either "
                                   "type and files, or one of sentencepiece: [...] and hf_json: [...]")
    assert f"section tokenizer có {given}" in vietnamese
    assert not (tmp_path / "out").exists()
    assert main(["build", _write_job(tmp_path, tokenizer=f'  type: sentencepiece\n  files: ["{TOKENIZER}"]\n')]) == 0


@pytest.mark.parametrize("kind", ["yaml", "json"])
def test_a_key_given_twice_in_a_job_file_is_refused(tmp_path, capsys, kind):
    """A second ``run`` section used to replace the first silently (its policies lost)."""
    if kind == "yaml":
        job = _write_job(tmp_path, run="  on_overflow: truncate\n  on_template_unk: continue\n")
        text = Path(job).read_text(encoding="utf-8") + "run:\n  on_overflow: abort\n"
    else:
        job = str(tmp_path / "job.json")
        data = write_jsonl(tmp_path / "data.jsonl", ROWS)
        text = (f'{{"source": {{"files": ["{data}"], "fields": [["q", "a"]], "templates": ["{{q}} {{a}}"]}}, '
                f'"tokenizer": {{"sentencepiece": ["{TOKENIZER}"]}}, '
                f'"units": {{"sizes": [[16, 64]], "build_batch": [4]}}, '
                f'"output": {{"dir": "{tmp_path / "out"}", "samples_per_shard": [2]}}, '
                f'"run": {{"on_overflow": "truncate", "on_overflow": "abort", "on_template_unk": "continue"}}}}')
    Path(job).write_text(text, encoding="utf-8")
    english, vietnamese = _refused(capsys, ["build", job], "PipelineValidationError",
                                   f"job file {job} could not be parsed",
                                   f"the key {'run' if kind == 'yaml' else 'on_overflow'!r} appears twice in one mapping")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("key", ["versioned", "skip_unchanged"])
@pytest.mark.parametrize("value", ['"false"', '"no"', "0", '"true"'])
def test_booleans_given_as_strings_or_numbers_are_refused(tmp_path, capsys, key, value):
    """``versioned: "false"`` used to build a versioned root (a non-empty string is true)."""
    job = _write_job(tmp_path, run=f"  on_overflow: truncate\n  on_template_unk: continue\n  {key}: {value}\n")
    english, vietnamese = _refused(capsys, ["build", job], "PipelineValidationError",
                                   f"run.{key} must be true or false")
    assert "phải là true hoặc false" in vietnamese
    assert not (tmp_path / "out").exists()
    if value == '"false"' and key == "versioned":
        job = _write_job(tmp_path, run="  on_overflow: truncate\n  on_template_unk: continue\n  versioned: false\n")
        assert main(["build", job]) == 0
        assert (tmp_path / "out" / "manifest.json").exists() and not (tmp_path / "out" / "LATEST").exists()
        OutputDir(tmp_path / "out").decoded()


def test_policy_of_the_wrong_type(tmp_path, capsys):
    job = _write_job(tmp_path, run="  on_overflow: 5\n")
    _refused(capsys, ["build", job], "PipelineValidationError", "run.on_overflow must be one of", "got 5")


@pytest.mark.parametrize("build_id", ["../x", "a/b", "..", ".", ".hidden", "LATEST", "", "a" * 129, "x y"])
def test_build_id_must_be_one_plain_name(tmp_path, capsys, build_id):
    """``--build-id ../x`` used to publish outside the versioned root."""
    _refused(capsys, ["build", _write_job(tmp_path), "--versioned", "--build-id", build_id],
             "PipelineValidationError", f"build id {build_id!r} is not a plain name")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "x").exists()


def test_build_id_through_the_api(tmp_path):
    from mintdim_beam.launch.versioned import launch_versioned

    config = (pipeline("unit-build").source.jsonl(files=[write_jsonl(tmp_path / "d.jsonl", ROWS)],
                                                  fields=[["q", "a"]], templates=["{q}\n{a}"])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[64]], build_batch=[4])
              .output.dir(str(tmp_path / "root"), samples_per_shard=[2]).config(on_template_unk="continue"))
    with pytest.raises(errors.PipelineValidationError) as info:
        launch_versioned(config, build_id="../escaped", echo=lambda *a: None)
    assert "build id '../escaped' is not a plain name" in str(info.value)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "root").exists()
    found = launch_versioned(config, build_id="nightly-2026.12.01_a", echo=lambda *a: None)
    assert (tmp_path / "root" / "LATEST").read_text() == "nightly-2026.12.01_a\n"
    OutputDir(tmp_path / "root" / found.build_id).decoded()


def test_build_id_without_versioned_is_refused(tmp_path, capsys):
    _refused(capsys, ["build", _write_job(tmp_path), "--build-id", "b1"], "PipelineValidationError",
             "--build-id needs versioned output roots")
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- keys and sections


@pytest.mark.parametrize("override, facts", [
    (dict(output='  dir: "out"\n  smaples_per_shard: [2]\n'),
     ("unknown key 'smaples_per_shard' in section 'output'", "(did you mean 'samples_per_shard'?)")),
    (dict(run="  on_overflw: truncate\n"), ("unknown key 'on_overflw' in section 'run'", "'on_overflow'")),
    (dict(unit="  sizes: [[64]]\n"), ("unknown section 'unit'", "(did you mean 'units'?)")),
    (dict(run="  zzz: 1\n"), ("unknown key 'zzz' in section 'run' of", "job file sections: source")),
    (dict(units="  [1, 2]\n"), ("section 'units' of", "must be a mapping, got list")),
])
def test_unknown_keys_name_the_closest_known_one(tmp_path, capsys, override, facts):
    english, vietnamese = _refused(capsys, ["build", _write_job(tmp_path, **override)],
                                   "PipelineValidationError", *facts)
    if "did you mean" in english:
        assert "có phải ý bạn là" in vietnamese
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo", "binary"])
def test_a_job_file_that_cannot_be_read(tmp_path, capsys, kind):
    job = tmp_path / "job.yaml"
    if kind == "directory":
        job.mkdir()
        shown = "is not a regular file"
    elif kind == "fifo":
        os.mkfifo(job)
        shown = "is not a regular file"
    else:
        job.write_bytes(b"\xff\xfe source: 1")
        shown = "could not be read as UTF-8 text"
    _refused(capsys, ["build", str(job)], "PipelineValidationError", f"job file {job} {shown}")
