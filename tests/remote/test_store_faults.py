"""A store that fails at publish: every build ends complete (exit 0, a dataset that
verifies) or as a job error (exit 2, the store's answer in both languages).

The build reaches moto's S3 server through :class:`store_faults.FaultProxy`, which
answers chosen requests with a 500 (or drops their connection) before forwarding the
rest. A store that keeps failing is given up on after the bounded retries of
``clients.S3_ATTEMPTS`` (the requests the proxy saw say so, not a clock); what is left
then is no manifest, no ``LATEST`` moved, markers that say the publish failed, the
claim released, and readers that refuse the directory. A store that fails twice and
then answers publishes a dataset equal to one built without faults.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import TESTDATA, run_pipeline, write_jsonl
from remote_fixtures import Remote
from store_faults import RESET, FaultProxy

from mintdim_beam.storage.clients import S3_ATTEMPTS

import textgen  # tests/testdata/textgen.py

REPO = Path(__file__).resolve().parents[2]
# The Vietnamese block's labels, written with escapes (no Vietnamese letter outside errors/).
VI_ANSWER = "Storage tr\u1ea3 l\u1eddi:"
VI_CLAIM_RELEASED = "Claim: \u0111\u00e3 \u0111\u01b0\u1ee3c tr\u1ea3"


@pytest.fixture(scope="module")
def faulty(s3_remote):
    """``(proxy, remote)``: the same bucket as ``s3_remote``, reached through the proxy."""
    upstream = next(f.split("=", 1)[1] for f in s3_remote.options if f.startswith("--s3_endpoint_url="))
    proxy = FaultProxy(upstream)
    options = [f"--s3_endpoint_url={proxy.endpoint}" if f.startswith("--s3_endpoint_url=") else f
               for f in s3_remote.options]
    yield proxy, Remote(s3_remote.root, options, s3_remote.s3_client, s3_remote.request_log)
    proxy.close()


@pytest.fixture
def proxy(faulty):
    faulty[0].clear()
    yield faulty[0]
    faulty[0].clear()


def _job(remote: Remote, tmp_path: Path, tag: str) -> dict:
    rng = random.Random(3)
    local = write_jsonl(tmp_path / "instructions.jsonl", textgen.instruction_records(rng, 50))
    return dict(
        files=[remote.upload(local, f"{tag}/in/instructions.jsonl")],
        fields=[["instruction", "input", "output"]], templates=["{instruction}\n{input}\n{output}"],
        tokenizer_kind="sentencepiece",
        tokenizer_files=[remote.upload(str(TESTDATA / "sp_unigram.model"), f"{tag}/tok/sp_unigram.model")],
        sizes=[[48, 96]], samples_per_shard=[16], on_overflow="extend")


def _job_file(path: Path, job: dict, output: str) -> str:
    path.write_text(json.dumps({
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"sentencepiece": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [8]},
        "output": {"dir": [output], "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": job["on_overflow"]},
    }), encoding="utf-8")
    return str(path)


def _cli(*argv) -> subprocess.CompletedProcess:
    """``mintdim-beam ARGV`` in its own process, as a user runs it (the timeout only
    keeps a hung build from hanging the suite; the bound itself is checked by counting
    the requests the store saw)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    command = os.path.join(os.path.dirname(sys.executable), "mintdim-beam")
    return subprocess.run([command, *argv], capture_output=True, text=True, env=env, timeout=600)


def _assert_store_error(err: str, request: str, answer: str, answer_vi: str = "") -> None:
    assert "Traceback" not in err and "AttributeError" not in err, err
    english, vietnamese = err[err.index("[english]"):].split("[vietnam]")
    assert english.startswith("[english] StoreRequestError: The store kept failing a request; "
                              "the build stopped and published nothing."), err
    assert vietnamese.startswith(" StoreRequestError: "), err
    for block, label, text in ((english, "Store answered:", answer), (vietnamese, VI_ANSWER, answer_vi or answer)):
        assert f"Request: {request}" in block, err
        assert f"{label} {text}" in block, err
    assert f"Attempts: {S3_ATTEMPTS}," in english
    assert "Claim: released; UNIT_BUILD_FAILED.md in the units says the publish failed" in english
    assert VI_CLAIM_RELEASED in vietnamese


def _assert_refused(remote: Remote, out: str) -> None:
    """No manifest, every unit's marker saying the publish failed, the claim gone, and
    the reader refusing the directory."""
    from mintdim_beam.errors import ReaderError
    from mintdim_beam.reader.dataset import open_output

    found = remote.download_tree(out)
    assert "manifest.json" not in found
    assert ".mintdim-claim.json" not in found
    for unit in (48, 96):
        marker = found[f"unit_{unit}/UNIT_BUILD_FAILED.md"].decode()
        assert "This unit was not finalized: the build stopped before publishing." in marker
        assert "StoreRequestError" in marker
    with pytest.raises(ReaderError, match="UNIT_BUILD_FAILED.md"):
        open_output(out, options=remote.options)


def test_manifest_put_failing_for_good_is_a_job_error_and_latest_stays(faulty, proxy, tmp_path):
    """The issue's case: S3 fails every PUT of manifest.json. The CLI exits 2 after the
    retry budget (S3_ATTEMPTS PUTs, not Beam's minutes), with the store's status and
    the path in both languages; the versioned root's LATEST still names the build
    before, which readers still open."""
    from mintdim_beam.reader.dataset import open_output

    _, remote = faulty
    tag = f"manifest-{uuid.uuid4().hex[:6]}"
    job = _job(remote, tmp_path, tag)
    root = f"{remote.root}/{tag}/root"
    job_file = _job_file(tmp_path / "job.json", job, root)
    first = _cli("build", job_file, "--versioned", *remote.options)
    assert first.returncode == 0, first.stderr
    latest = remote.download_tree(root)["LATEST"]
    before = len(open_output(root, options=remote.options))

    proxy.clear()
    proxy.add("PUT", "*/manifest.json", 500)
    second = _cli("build", job_file, "--versioned", "--build-id", "second", *remote.options)
    assert second.returncode == 2, second.stderr
    bucket_key = root[len("s3://"):]
    manifest = f"{root}/second/manifest.json"
    _assert_store_error(second.stderr, f"PUT {manifest} (PutObject)",
                        "500 InternalError: We encountered an internal error. Please try again.")
    assert [r[2] for r in proxy.requests("PUT", f"/{bucket_key}/second/manifest.json")] == [500] * S3_ATTEMPTS
    assert proxy.requests("PUT", f"/{bucket_key}/LATEST") == []
    assert remote.download_tree(root)["LATEST"] == latest
    assert len(open_output(root, options=remote.options)) == before
    _assert_refused(remote, f"{root}/second")


@pytest.mark.parametrize("method, pattern, status", [
    ("DELETE", "*/UNIT_BUILD_FAILED.md", 500),    # the markers' DELETE: the issue's 542 s
    ("PUT", "*/manifest.json", RESET),             # a connection dropped: Beam's AttributeError
])
def test_a_store_that_keeps_failing_leaves_no_output_that_looks_complete(faulty, proxy, tmp_path, capsys,
                                                                        method, pattern, status):
    from mintdim_beam.cli.commands import main

    _, remote = faulty
    tag = f"keeps-{uuid.uuid4().hex[:6]}"
    job = _job(remote, tmp_path, tag)
    out = f"{remote.root}/{tag}/out"
    proxy.add(method, pattern, status)
    code = main(["build", _job_file(tmp_path / "job.json", job, out), *remote.options])
    err = capsys.readouterr().err
    assert code == 2, err
    first = f"{out}/unit_48/UNIT_BUILD_FAILED.md" if method == "DELETE" else f"{out}/manifest.json"
    if status == RESET:
        _assert_store_error(err, f"PUT {first} (PutObject)", "no answer (ConnectionClosedError: ",
                            "kh\u00f4ng c\u00f3 tr\u1ea3 l\u1eddi (ConnectionClosedError: ")
    else:
        _assert_store_error(err, f"DELETE {first} (DeleteObject)", "500 InternalError: ")
    failed = [r for r in proxy.requests(method, "/" + first[len("s3://"):]) if r[2] == status]
    assert len(failed) == S3_ATTEMPTS
    _assert_refused(remote, out)


def test_a_store_that_fails_twice_then_answers_publishes_the_same_dataset(faulty, proxy, tmp_path, capsys):
    """Two 500s on the manifest's PUT and on each marker's DELETE, and a dropped
    connection on a shard's rename: the build retries each within its budget, exits 0,
    and its dataset verifies and equals the one built without faults."""
    from mintdim_beam.cli.commands import main

    _, remote = faulty
    tag = f"transient-{uuid.uuid4().hex[:6]}"
    job = _job(remote, tmp_path, tag)
    clean, out = f"{remote.root}/{tag}/clean", f"{remote.root}/{tag}/out"
    run_pipeline(output_dirs=[clean], options=remote.options, **job)
    proxy.clear()
    proxy.add("PUT", "*/out/manifest.json", 500, times=2)
    proxy.add("DELETE", "*/out/unit_48/UNIT_BUILD_FAILED.md", 500, times=2)
    proxy.add("DELETE", "*/out/unit_96/UNIT_BUILD_FAILED.md", 503, times=2)
    proxy.add("PUT", "*/out/unit_48/shard_000000.bin", RESET, times=1)
    run_pipeline(output_dirs=[out], options=remote.options, **job)
    assert [r[2] for r in proxy.requests("PUT", "*/out/manifest.json")] == [500, 500, 200]
    assert [r[2] for r in proxy.requests("DELETE", "*/out/unit_96/UNIT_BUILD_FAILED.md")] == [503, 503, 204]
    assert [r[2] for r in proxy.requests("PUT", "*/out/unit_48/shard_000000.bin")][:2] == [RESET, 200]
    assert main(["verify", out, *remote.options]) == 0, capsys.readouterr().err
    got, want = remote.download_tree(out), remote.download_tree(clean)
    assert sorted(got) == sorted(want)
    assert [n for n in want if n != "build_info.json" and got[n] != want[n]] == []
