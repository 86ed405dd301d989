"""A versioned root is published into by one build at a time, and LATEST moves together.

Two versioned builds on one root used to both exit 0, LATEST naming the later-started
one and then, when the other finished, the older one. Now the second build stops before
it starts, naming the first; and moving several roots' LATEST is all or nothing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys


import pytest

from conftest import TESTDATA, write_jsonl

from mintdim_beam.beam import publish
from mintdim_beam.cli.commands import main


def _job_file(tmp_path, roots) -> str:
    a = write_jsonl(tmp_path / "a.jsonl", [{"a": f"first {i}"} for i in range(20)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"a": f"second {i}"} for i in range(20)])
    job = {"source": {"files": [a, b], "fields": [["a"]], "templates": ["{a}"]},
           "tokenizer": {"type": "sentencepiece", "files": [str(TESTDATA / "sp_unigram.model")]},
           "units": {"sizes": [[32, 64]], "build_batch": [8]},
           "output": {"dir": [str(r) for r in roots], "samples_per_shard": [16]},
           "run": {"on_overflow": "truncate", "on_template_unk": "continue", "on_bad_record": "abort"}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return str(path)


def _claim(root, pid: int, run_id="other-build"):
    root.mkdir(parents=True, exist_ok=True)
    (root / ".mintdim-root-claim.json").write_text(json.dumps(
        {"run_id": run_id, "host": socket.gethostname(), "pid": pid, "started_at": "2026-12-01T00:00:00+00:00"}))


def test_a_second_build_on_a_root_stops_naming_the_first(tmp_path, capsys):
    roots = [tmp_path / "train", tmp_path / "eval"]
    path = _job_file(tmp_path, roots)
    assert main(["build", path, "--versioned", "--build-id", "v1", "--quiet"]) == 0
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _claim(roots[1], sleeper.pid)            # a build still running on this host
        capsys.readouterr()
        assert main(["build", path, "--versioned", "--build-id", "v2", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "OutputClaimedError" in err and "other-build" in err and str(roots[1]) in err
        assert "[vietnam]" in err and "Traceback" not in err
        for root in roots:
            assert (root / "LATEST").read_text() == "v1\n"
            assert not (root / "v2").exists()
        assert not (roots[0] / ".mintdim-root-claim.json").exists()     # its own claim released
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_root_claim_of_a_build_that_is_gone_is_taken_over(tmp_path):
    roots = [tmp_path / "train", tmp_path / "eval"]
    path = _job_file(tmp_path, roots)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _claim(roots[0], dead.pid)
    assert main(["build", path, "--versioned", "--build-id", "v1", "--quiet"]) == 0
    assert all((root / "LATEST").read_text() == "v1\n" for root in roots)
    assert not any((root / ".mintdim-root-claim.json").exists() for root in roots)


def test_latest_moves_in_every_root_or_none(tmp_path, monkeypatch, capsys):
    roots = [tmp_path / "train", tmp_path / "eval"]
    path = _job_file(tmp_path, roots)
    assert main(["build", path, "--versioned", "--build-id", "v1", "--quiet"]) == 0
    real = publish.write_latest

    def full_on_second(root, build_id):
        if root == str(roots[1]):
            raise OSError(28, "No space left on device", os.path.join(root, "LATEST"))
        return real(root, build_id)

    monkeypatch.setattr(publish, "write_latest", full_on_second)
    capsys.readouterr()
    assert main(["build", path, "--versioned", "--build-id", "v2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "DiskFullError" in err and "Thiết bị hết dung lượng" in err and "Traceback" not in err
    # What the write needed, beside what was free: the LATEST it was writing, "v2\n".
    assert "Bytes the write needed: 3" in err and "S\u1ed1 byte c\u1ea7n ghi: 3" in err
    for root in roots:
        assert (root / "LATEST").read_text() == "v1\n", root


@pytest.mark.parametrize("where", ["finalize", "collect"])
def test_an_interrupt_after_publishing_exits_0_for_the_complete_dataset(tmp_path, monkeypatch, capsys, where):
    """SIGTERM once every output is published (the pipeline still returning, or the
    launcher collecting results) used to exit 130 for a complete, unmarked dataset."""
    from mintdim_beam.launch import launcher

    roots = [tmp_path / "train", tmp_path / "eval"]
    path = _job_file(tmp_path, roots)
    job = json.loads(open(path).read())
    job["output"]["dir"] = [str(tmp_path / "one"), str(tmp_path / "two")]
    open(path, "w").write(json.dumps(job))
    name = "_run_pipeline" if where == "finalize" else "collect"
    real = getattr(launcher, name)
    calls = []

    def interrupted(*args, **kwargs):
        found = real(*args, **kwargs)
        if not calls:
            calls.append(1)
            raise KeyboardInterrupt
        return found

    monkeypatch.setattr(launcher, name, interrupted)
    assert main(["build", path, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "every output" in out and "published" in out
    for d in ("one", "two"):
        assert (tmp_path / d / "manifest.json").exists()
        assert not list((tmp_path / d).glob("unit_*/UNIT_BUILD_FAILED.md"))
