"""Readers take a versioned root (DESIGN.md §8), and ``build --versioned --keep N``.

``open_output(ROOT)``, ``verify``, ``inspect``, ``export``, ``report`` and ``plan`` given
a root read the build its ``LATEST`` names and say which (stderr on the command line,
``reader.build_id`` in Python); a ``LATEST`` that names no published build is an error
naming the root. ``--keep N`` removes a root's complete builds older than its N newest
(by ``build_info.json`` ``started_at``), never the one ``LATEST`` names, one still
claimed by a build, or one without ``manifest.json``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import TESTDATA, refused_by_cli, write_jsonl
from mintdim_beam.cli.commands import main
from mintdim_beam.errors import MintDimError, ReaderError
from mintdim_beam.reader import open_output

SP = str(TESTDATA / "sp_unigram.model")


def _job(tmp_path, rows=None) -> str:
    rows = rows or [{"t": f"hello world number {k}"} for k in range(7)]
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    job = {"source": {"files": [src], "fields": [["t"]], "templates": ["{t}"]},
           "tokenizer": {"sentencepiece": [SP]}, "units": {"sizes": [[16, 32]], "build_batch": [4]},
           "output": {"dir": str(tmp_path / "root"), "samples_per_shard": [4]},
           "run": {"on_overflow": "truncate", "on_template_unk": "continue", "versioned": True}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return str(path)


def _build(job: str, build_id: str, *flags: str) -> None:
    assert main(["build", job, "--quiet", "--build-id", build_id, *flags]) == 0


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A root with builds b1 and b2 of different inputs; LATEST names b2."""
    tmp = tmp_path_factory.mktemp("versioned")
    _build(_job(tmp), "b1")
    _build(_job(tmp, [{"t": f"world {k}"} for k in range(5)]), "b2")
    return tmp / "root"


def _run(capsys, argv) -> tuple:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_open_output_reads_the_build_latest_names(root):
    ds = open_output(str(root))
    assert (ds.path, ds.build_id, ds.root) == (str(root / "b2"), "b2", str(root))
    assert len(ds) == 5 and len(open_output(str(root / "b1"))) == 7
    plain = open_output(str(root / "b1"))
    assert (plain.build_id, plain.root) == (None, None)


def test_every_consumer_command_reads_latest_and_says_so(root, tmp_path, capsys):
    said = f"mintdim-beam {{}}: reading {root / 'b2'} (LATEST)"
    code, out, err = _run(capsys, ["verify", str(root)])
    assert code == 0 and said.format("verify") in err and f"verify OK {root / 'b2'}" in out
    code, out, err = _run(capsys, ["inspect", str(root), "--sample-id", "4", "--json"])
    assert code == 0 and said.format("inspect") in err and json.loads(out)["sample_id"] == 4
    code, out, err = _run(capsys, ["plan", str(root), "-k", "1"])
    assert code == 0 and said.format("plan") in err and f"output={root / 'b2'} samples=5" in out
    code, out, err = _run(capsys, ["export", str(root), "--format", "megatron", str(tmp_path / "mg")])
    assert code == 0 and said.format("export") in err and "samples=5" in out
    assert _run(capsys, ["export", str(root / "b2"), "--format", "megatron", str(tmp_path / "direct")])[0] == 0
    for ext in (".bin", ".idx"):
        assert (tmp_path / f"mg{ext}").read_bytes() == (tmp_path / f"direct{ext}").read_bytes()
    pytest.importorskip("matplotlib")
    code, out, err = _run(capsys, ["report", str(root), "-o", str(tmp_path / "r.html")])
    assert code == 0 and said.format("report") in err and (tmp_path / "r.html").stat().st_size > 0


def test_a_latest_that_names_no_published_build_is_the_roots_problem(root, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(root, broken)
    (broken / "LATEST").write_text("b3\n")
    with pytest.raises(ReaderError) as info:
        open_output(str(broken))
    text = str(info.value)
    assert f"{broken}: LATEST: names build b3, which is not a published dataset" in text
    assert "[vietnam] ReaderError" in text and "không phải dataset đã publish" in text
    code, out, _ = _run(capsys, ["verify", str(broken)])
    assert code == 1 and f"{broken}: LATEST: names build b3, which is not a published dataset" in out
    refused_by_cli(capsys, ["inspect", str(broken), "--sample-id", "0"], "ReaderError", "LATEST: names build b3")
    (broken / "LATEST").write_text("../b1\n")
    with pytest.raises(ReaderError, match="holds '../b1', not a build id"):
        open_output(str(broken))
    (broken / "LATEST").write_text("b1")
    assert open_output(str(broken)).build_id == "b1"


# --------------------------------------------------------------------------- --keep


def _set_started(build: Path, when: str) -> None:
    info = json.loads((build / "build_info.json").read_text())
    info["started_at"] = when
    (build / "build_info.json").write_text(json.dumps(info))


def test_keep_removes_the_oldest_complete_builds_only(tmp_path, capsys):
    job = _job(tmp_path)
    root = tmp_path / "root"
    _build(job, "z-first")
    _build(job, "a-second")
    # dated by started_at, not by name
    _set_started(root / "z-first", "2020-01-01T00:00:00+00:00")
    _set_started(root / "a-second", "2020-01-02T00:00:00+00:00")
    # a build still being written (claimed) and a failed one (no manifest) are never removed
    shutil.copytree(root / "z-first", root / "claimed")
    _set_started(root / "claimed", "2019-01-01T00:00:00+00:00")
    (root / "claimed" / ".mintdim-claim.json").write_text("{}")
    (root / "failed").mkdir()
    (root / "failed" / "build_info.json").write_text('{"started_at": "2019-01-01T00:00:00+00:00"}')
    capsys.readouterr()
    assert main(["build", job, "--quiet", "--build-id", "m-third", "--keep", "2"]) == 0
    out = capsys.readouterr().out
    assert f"kept the 2 newest builds in {root}; removed z-first" in out
    assert sorted(os.listdir(root)) == ["LATEST", "a-second", "claimed", "failed", "m-third"]
    assert (root / "LATEST").read_text() == "m-third\n"


def test_keep_never_removes_the_build_latest_names(tmp_path):
    from mintdim_beam.beam import retention

    job = _job(tmp_path)
    root = tmp_path / "root"
    for k, name in enumerate(("b1", "b2", "b3")):
        _build(job, name)
        _set_started(root / name, f"2020-01-0{k + 1}T00:00:00+00:00")
    (root / "LATEST").write_text("b1\n")         # a rollback to the oldest
    done = retention.prune(str(root), 1)
    assert done.removed == ("b2",) and sorted(os.listdir(root)) == ["LATEST", "b1", "b3"]


def test_keep_is_checked_before_any_work(tmp_path, capsys):
    job = _job(tmp_path)
    refused_by_cli(capsys, ["build", job, "--keep", "0"], "PipelineValidationError",
                   "keep must be a whole number of builds, at least 1, got 0")
    plain = json.loads(Path(job).read_text())
    plain["run"]["versioned"] = False
    Path(job).write_text(json.dumps(plain))
    refused_by_cli(capsys, ["build", job, "--keep", "3"], "PipelineValidationError",
                   "keep needs versioned output roots")
    assert not (tmp_path / "root").exists()
    with pytest.raises(MintDimError):
        from mintdim_beam.launch.versioned import launch_versioned
        from mintdim_beam.launch.api import load_job_file
        from mintdim_beam.core.config import resolve

        launch_versioned(resolve(load_job_file(job)[0]), keep=True)
