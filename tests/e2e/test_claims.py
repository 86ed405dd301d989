"""One output directory belongs to one build.

Two builds started together into one directory used to both find it empty, both exit 0
and publish a dataset that fails ``verify``. Now preflight claims the directory
atomically (``claims.py``) before writing anything: exactly one build claims it, builds
and publishes; the other exits 2 with ``OutputClaimedError`` naming the directory and
the build that owns it, and writes nothing. A build that was killed leaves its claim,
and the next build says so (the process is gone, delete the directory) instead of
taking it over. Versioned roots keep working: each build id is its own directory.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, TESTDATA, OutputDir, write_jsonl
from mintdim_beam.beam import claims
from mintdim_beam import errors
from mintdim_beam.launch import preflight
from mintdim_beam import pipeline
from mintdim_beam.cli.commands import main
from mintdim_beam.storage import clients

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

TOKENIZER = str(TESTDATA / "sp_unigram.model")
CLAIM = ".mintdim-claim.json"


def _job_file(tmp_path: Path, out, rows: int = 3000, **run) -> str:
    data = tmp_path / "data.jsonl"
    if not data.exists():
        write_jsonl(data, textgen.instruction_records(random.Random(5), rows))
    spec = {
        "source": {"files": [str(data)], "fields": [["instruction", "input", "output"]],
                   "templates": ["{instruction}\n{input}\n{output}"]},
        "tokenizer": {"type": "sentencepiece", "files": [TOKENIZER]},
        "units": {"sizes": [[48, 96]], "build_batch": [64]},
        "output": {"dir": str(out), "samples_per_shard": [500]},
        "run": {"on_overflow": "extend", "on_template_unk": "continue", "block_size": 65536, **run},
    }
    path = tmp_path / f"job-{len(list(tmp_path.glob('job-*')))}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


def _cli(*args, cwd) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen([sys.executable, "-m", "mintdim_beam.cli.commands", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)


def _config(tmp_path: Path, out):
    data = write_jsonl(tmp_path / "small.jsonl", [{"q": "one two", "a": "three"}])
    return (pipeline("unit-build").source.jsonl(files=[data], fields=[["q", "a"]], templates=["{q} {a}"])
            .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[16]], build_batch=[4])
            .output.dir(str(out), samples_per_shard=[4]).config(on_template_unk="continue"))


# --------------------------------------------------------------------------- the claim itself


def test_of_many_claims_at_once_exactly_one_wins(tmp_path):
    out = str(tmp_path / "out")
    barrier = threading.Barrier(16)
    won, lost = [], []

    def attempt(k):
        barrier.wait()
        try:
            claims.claim(out, f"run{k:02d}")
            won.append(k)
        except errors.OutputClaimedError as exc:
            lost.append(exc)

    threads = [threading.Thread(target=attempt, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 15
    assert json.loads((tmp_path / "out" / CLAIM).read_text())["run_id"] == f"run{won[0]:02d}"
    assert {exc.owner for exc in lost} == {f"run{won[0]:02d}"}
    assert all(exc.status == "running" and exc.pid == os.getpid() for exc in lost)
    # Raised on a worker (the check before publishing), it reaches the launcher whole.
    for copy in (errors.error_from_dict(json.loads(json.dumps(lost[0].to_dict()))), pickle.loads(pickle.dumps(lost[0]))):
        assert type(copy) is errors.OutputClaimedError and str(copy) == str(lost[0])


def test_an_empty_claim_is_explained(tmp_path):
    """A build killed between creating its claim and writing it leaves an empty file."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / CLAIM).write_bytes(b"")
    with pytest.raises(errors.OutputClaimedError) as info:
        preflight.check(_config(tmp_path, tmp_path / "out"))
    assert info.value.status == "unreadable"
    assert "Status: its claim file is empty or unreadable" in str(info.value)
    assert "delete the directory and build again" in str(info.value)
    assert os.listdir(tmp_path / "out") == [CLAIM]


def test_preflight_of_two_builds_at_once_claims_for_one(tmp_path):
    configs = [_config(tmp_path, tmp_path / "out") for _ in range(2)]
    assert configs[0].run_id != configs[1].run_id
    barrier = threading.Barrier(2)
    results = {}

    def check(k):
        barrier.wait()
        try:
            preflight.check(configs[k])
            results[k] = None
        except errors.MintDimError as exc:
            results[k] = exc

    threads = [threading.Thread(target=check, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [k for k, exc in results.items() if exc is None]
    assert len(winners) == 1
    loser = results[1 - winners[0]]
    assert isinstance(loser, (errors.OutputClaimedError, errors.OutputValidationError))
    assert os.listdir(tmp_path / "out") == [CLAIM]    # the loser wrote nothing
    assert json.loads((tmp_path / "out" / CLAIM).read_text())["run_id"] == configs[winners[0]].run_id


# --------------------------------------------------------------------------- two real builds


def test_two_builds_started_together_into_one_directory(tmp_path):
    out = tmp_path / "out"
    procs = [_cli("build", _job_file(tmp_path, out), cwd=tmp_path) for _ in range(2)]
    done = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in done)
    assert codes == [0, 2], done
    (_, out_ok, _), = [d for d in done if d[0] == 0]
    (_, _, err), = [d for d in done if d[0] == 2]
    assert "Traceback" not in err
    english, vietnamese = err[err.index("[english]"):].split("[vietnam]")
    assert f"Directory: {out}" in english and f"Thư mục: {out}" in vietnamese
    info = json.loads((out / "build_info.json").read_text())
    if "OutputClaimedError" in english:      # the usual case: the other build was still running
        assert f"Claimed by: build {info['run_id']} (host " in english
        assert "Output directory belongs to another build." in english
        assert "Thư mục output thuộc về một build khác." in vietnamese
    else:                                     # it had finished and published before this one looked
        assert english.startswith("[english] OutputValidationError: Output directory already exists")
    assert f"output={out} samples=3000" in out_ok
    assert main(["verify", str(out)]) == 0
    dataset = OutputDir(out)
    assert dataset.stats["total_samples"] == 3000
    dataset.decoded()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []   # no claim, no staging
    assert not list(out.glob("unit_*/UNIT_BUILD_FAILED.md"))


def test_a_killed_build_leaves_a_claim_that_is_explained_never_taken_over(tmp_path, capsys):
    out = tmp_path / "out"
    proc = _cli("build", _job_file(tmp_path, out, rows=15000, block_size=16384), cwd=tmp_path)
    deadline = time.monotonic() + 300
    while not any((out / ".mintdim-staging").glob("*/blocks")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=60)
    claim = json.loads((out / CLAIM).read_text())
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))

    assert main(["build", _job_file(tmp_path, out, rows=15000)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    english, vietnamese = err[err.index("[english]"):].split("[vietnam]")
    assert english.startswith("[english] OutputClaimedError: Output directory belongs to another build.")
    assert f"Claimed by: build {claim['run_id']} (host {claim['host']}, process {proc.pid}," in english
    assert "Status: that process is no longer running on this host: the build was killed or crashed" in english
    assert "delete the directory and build again" in english
    assert "hãy xoá thư mục rồi build lại" in vietnamese
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before      # nothing taken over
    assert json.loads((out / CLAIM).read_text()) == claim

    shutil.rmtree(out)                                   # what the error says to do
    assert main(["build", _job_file(tmp_path, out, rows=15000)]) == 0
    assert OutputDir(out).stats["total_samples"] == 15000


def test_a_build_whose_claim_changed_publishes_nothing(tmp_path):
    """Finalize checks the claim is still its own: a build whose claim another one
    replaced (what an object store allows) stops without publishing, removes its own
    staging and leaves the other build's claim alone."""
    out = tmp_path / "out"
    proc = _cli("build", _job_file(tmp_path, out, rows=15000, block_size=16384), cwd=tmp_path)
    deadline = time.monotonic() + 300
    while not any((out / ".mintdim-staging").glob("*/blocks")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    mine = json.loads((out / CLAIM).read_text())["run_id"]
    other = {"run_id": "0123456789abcdef", "host": "elsewhere", "pid": 7, "started_at": "later"}
    (out / CLAIM).write_text(json.dumps(other))
    code, _, err = proc.wait(timeout=600), *proc.communicate()
    assert code == 2, err
    assert "Traceback" not in err
    english, vietnamese = err[err.index("[english]"):].split("[vietnam]")
    assert english.startswith("[english] OutputClaimedError: Output directory belongs to another build.")
    assert "Claimed by: build 0123456789abcdef (host elsewhere, process 7, started later)" in english
    assert not (out / "manifest.json").exists() and not list(out.glob("unit_*/shard_*.bin"))
    assert not (out / "sample_index.jsonl").exists() and not (out / "stats.json").exists()
    assert not (out / ".mintdim-staging" / mine).exists()
    assert json.loads((out / CLAIM).read_text()) == other


def test_versioned_builds_with_one_build_id_at_once(tmp_path):
    """Two versioned builds given the same id: one publishes ROOT/<id>, the other stops
    (on the root's claim, or on ROOT/<id>'s if the first one finished already); LATEST
    names the published one and ``--skip-unchanged`` then builds nothing."""
    root = tmp_path / "root"
    job = _job_file(tmp_path, root)
    procs = [_cli("build", job, "--versioned", "--build-id", "nightly", cwd=tmp_path) for _ in range(2)]
    done = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in done) == [0, 2], done
    (_, _, err), = [d for d in done if d[0] == 2]
    assert "Traceback" not in err and ("OutputClaimedError" in err or "OutputValidationError" in err)
    assert f"Directory: {root}" in err
    assert (root / "LATEST").read_text() == "nightly\n"
    assert main(["verify", str(root / "nightly")]) == 0
    again = _cli("build", job, "--versioned", "--skip-unchanged", cwd=tmp_path)
    code, stdout, stderr = again.wait(timeout=600), *again.communicate()
    assert code == 0 and "unchanged: fingerprint equals LATEST (nightly)" in stdout, stderr
    assert sorted(p.name for p in root.iterdir()) == ["LATEST", "nightly"]


def test_a_failed_build_releases_its_claim(tmp_path, capsys):
    """A build that fails says so in its markers and lets go: the next build is told
    the directory is not empty, as for any earlier output."""
    out = tmp_path / "out"
    with open(write_jsonl(tmp_path / "data.jsonl", textgen.instruction_records(random.Random(5), 50)), "a") as f:
        f.write("{broken\n")
    assert main(["build", _job_file(tmp_path, out)]) == 2
    assert "SourceParseError" in capsys.readouterr().err
    assert not (out / CLAIM).exists() and (out / "unit_48" / "UNIT_BUILD_FAILED.md").exists()
    assert main(["build", _job_file(tmp_path, out)]) == 2
    assert "[english] OutputValidationError: Output directory already exists" in capsys.readouterr().err


# --------------------------------------------------------------------------- object stores


def test_claims_on_an_object_store(s3_remote):
    """No create-if-absent through FileSystems: a claim is written, left to settle and read
    back. A build whose claim another one replaced stops, during the settle time or at
    the check before publishing (``claims.py`` says what is guaranteed)."""
    from mintdim_beam.beam import claims
    from mintdim_beam import errors
    from mintdim_beam.storage import files as storage

    clients.configure(s3_remote.options)
    base = f"{s3_remote.root}/claims-{os.urandom(3).hex()}"

    def claim_of(run_id: str) -> bytes:
        return json.dumps({"run_id": run_id, "host": "elsewhere", "pid": 1, "started_at": "then"}).encode()

    # Another build's claim lands while this one's settles: this one stops.
    out = f"{base}/a"

    def replace_once_written():
        deadline = time.monotonic() + 30
        while (claims.read(out) or {}).get("run_id") != "mine" and time.monotonic() < deadline:
            time.sleep(0.02)
        storage.write_bytes(f"{out}/.mintdim-claim.json", claim_of("other"))

    late = threading.Thread(target=replace_once_written)
    late.start()
    with pytest.raises(errors.OutputClaimedError) as info:
        claims.claim(out, "mine", settle=3.0)
    late.join()
    assert (info.value.owner, info.value.status, info.value.host) == ("other", "replaced", "elsewhere")
    assert "it replaced this build's claim (object stores cannot claim a directory atomically)" in str(info.value)
    # A build that finds a claim stops before writing.
    with pytest.raises(errors.OutputClaimedError) as info:
        claims.claim(out, "third", settle=0)
    assert (info.value.owner, info.value.status) == ("other", "unknown")

    # Replaced after it settled: the check before publishing stops it.
    out = f"{base}/b"
    claims.claim(out, "mine", settle=0.1)
    claims.check_owned(out, "mine")
    storage.write_bytes(f"{out}/.mintdim-claim.json", claim_of("later"))
    with pytest.raises(errors.OutputClaimedError) as info:
        claims.check_owned(out, "mine")
    assert (info.value.owner, info.value.status) == ("later", "replaced")
    claims.release(out, "mine")                        # not this build's to remove
    assert claims.read(out)["run_id"] == "later"
