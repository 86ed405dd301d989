"""Scheduled rebuilds and what a failed or repeated build leaves behind.

* ``manifest.json`` carries the build fingerprint; it depends on the input and
  tokenizer bytes, the resolved configuration and the code versions, not on the
  runner, the block size, ``build_batch`` or the output path.
* ``--versioned`` builds publish into ``ROOT/<build-id>/`` and move ``ROOT/LATEST``;
  ``--skip-unchanged`` builds nothing when the fingerprint equals the latest one.
* Finalize is idempotent: run twice, or re-run after a crash in its middle, it gives
  the same bytes; bundles delivered twice (retries) never duplicate a record.
* A failed build (an exception in a worker, the launcher killed or terminated) leaves
  no manifest, no published shard, and ``UNIT_BUILD_FAILED.md`` markers saying why.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (
    TESTDATA,
    assert_nothing_published,
    assert_same_outputs,
    build_and_compare,
    list_output_files,
    run_pipeline,
    write_jsonl,
)
from mintdim_beam.core import digests as digests_module
from mintdim_beam.beam import publish
from mintdim_beam.storage import files as storage
from mintdim_beam.beam import encode_stage, finalize_stage, transforms, write_stage
from mintdim_beam.cli.commands import main

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

SP = "sentencepiece"
TOKENIZER = str(TESTDATA / "sp_unigram.model")


def _job(directory: Path, n: int = 80) -> dict:
    rng = random.Random(n)
    rows = textgen.instruction_records(rng, n)
    rows.insert(n // 2, dict(rows[1]))
    chat = [{"instruction": r["prompt"], "input": "", "output": r["response"]}
            for r in textgen.chat_records(rng, n // 2)]
    return dict(
        files=[write_jsonl(directory / "instructions.jsonl", rows), write_jsonl(directory / "chat.jsonl", chat)],
        fields=[["instruction", "input", "output"]],
        templates=["{instruction}\n{input}\n{output}"],
        tokenizer_kind=SP,
        tokenizer_files=[TOKENIZER],
        sizes=[[48, 96]],
        samples_per_shard=[10],
        on_overflow="extend",
        on_template_unk="continue",
    )


def _job_file(path: Path, job: dict, output, **run) -> str:
    spec = {
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"type": SP, "files": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [16]},
        "output": {"dir": output, "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": job["on_overflow"], "on_template_unk": "continue", **run},
    }
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _canonical(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


# =========================================================================== fingerprint


def test_manifest_carries_the_build_fingerprint(tmp_path):
    job = _job(tmp_path)
    build_and_compare(tmp_path, output_dirs="a", block_size=1024, build_batch=[3], **job)
    # UnitBuild composed into a pipeline of one's own hashes the inputs in a pipeline
    # step (``run()`` hashes local inputs on the launcher); the fingerprint is the same.
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from mintdim_beam.launch import preflight
    from mintdim_beam import pipeline

    config = (pipeline("unit-build").source.jsonl(files=job["files"], fields=job["fields"],
                                                  templates=job["templates"])
              .tokenizer.sentencepiece(files=job["tokenizer_files"])
              .units(sizes=job["sizes"], build_batch=[50])
              .output.dir(str(tmp_path / "b"), samples_per_shard=job["samples_per_shard"])
              .config(on_overflow=job["on_overflow"], on_template_unk=job["on_template_unk"], block_size=8192))
    preflight.check(config)
    flags = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    with beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions(flags)) as p:
        _ = p | transforms.UnitBuild(config)
    assert_same_outputs(tmp_path / "a", tmp_path / "b")   # manifest.json included

    import sentencepiece
    import tokenizers

    fp = json.loads((tmp_path / "a" / "manifest.json").read_text())["fingerprint"]
    assert fp["inputs"] == [{"path": f, "size": os.path.getsize(f), "sha256": _sha256(f)} for f in job["files"]]
    assert fp["tokenizer"] == {"path": TOKENIZER, "size": os.path.getsize(TOKENIZER), "sha256": _sha256(TOKENIZER)}
    assert fp["versions"] == {"mintdim_beam": "0.1.0", "tokenizers": tokenizers.__version__,
                              "sentencepiece": sentencepiece.__version__}
    assert re.fullmatch(r"[0-9a-f]{64}", fp["config_sha256"])
    body = {k: v for k, v in fp.items() if k != "id"}
    assert fp["id"] == hashlib.sha256(_canonical(body)).hexdigest()
    for out, by in (("a", "launcher"), ("b", "pipeline")):
        info = json.loads((tmp_path / out / "build_info.json").read_text())
        assert info["fingerprint"]["computed_by"] == by
        assert info["fingerprint"]["files"] == 3
        assert info["fingerprint"]["bytes"] == sum(os.path.getsize(f) for f in [*job["files"], TOKENIZER])


def test_fingerprint_follows_bytes_config_and_tokenizer_only(tmp_path):
    from mintdim_beam import pipeline

    job = _job(tmp_path)

    def fingerprint(files=job["files"], tok=TOKENIZER, sizes=job["sizes"], batch=8, block=1 << 20, out="o"):
        config = (pipeline("unit-build").source.jsonl(files=files, fields=job["fields"], templates=job["templates"])
                  .tokenizer.sentencepiece(files=[tok]).units(sizes=sizes, build_batch=[batch])
                  .output.dir(str(tmp_path / out), samples_per_shard=[10])
                  .config(on_overflow="extend", block_size=block))
        digests = {p: (os.path.getsize(p), _sha256(p)) for p in digests_module.fingerprint_paths(config)}
        return publish.fingerprint(config, config.outputs[0], digests)

    base = fingerprint()
    assert fingerprint(batch=1000, block=4096, out="elsewhere") == base
    assert fingerprint(sizes=[[48, 64, 96]])["config_sha256"] != base["config_sha256"]
    assert fingerprint(tok=str(TESTDATA / "sp_bpe.model"))["id"] != base["id"]
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(Path(job["files"][0]).read_bytes().replace(b"a", b"b", 1))
    other = fingerprint(files=[str(changed), job["files"][1]])
    assert other["inputs"][0]["sha256"] != base["inputs"][0]["sha256"]
    assert other["inputs"][0]["size"] == base["inputs"][0]["size"] and other["id"] != base["id"]


# =========================================================================== versioned roots


def test_versioned_builds_skip_unchanged_and_move_latest(tmp_path, capsys):
    job = _job(tmp_path)
    roots = [tmp_path / "units" / "instructions", tmp_path / "units" / "chat"]
    path = _job_file(tmp_path / "job.json", job, [str(r) for r in roots])

    assert main(["build", path, "--versioned", "--skip-unchanged", "--build-id", "nightly-1"]) == 0
    for root in roots:
        assert (root / "LATEST").read_text() == "nightly-1\n"
        assert (root / "nightly-1" / "manifest.json").exists()
    first = json.loads((roots[0] / "nightly-1" / "manifest.json").read_text())["fingerprint"]["id"]

    capsys.readouterr()
    assert main(["build", path, "--versioned", "--skip-unchanged"]) == 0
    assert "[unit-build] unchanged" in capsys.readouterr().out
    assert sorted(p.name for p in roots[0].iterdir()) == ["LATEST", "nightly-1"]

    with open(job["files"][1], "a", encoding="utf-8") as f:
        f.write(json.dumps({"instruction": "Một câu hỏi mới?", "input": "", "output": "Một câu trả lời mới."},
                           ensure_ascii=False) + "\n")
    assert main(["build", path, "--versioned", "--skip-unchanged"]) == 0
    latest = (roots[0] / "LATEST").read_text().strip()
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", latest)
    assert (roots[1] / "LATEST").read_text().strip() == latest
    second = json.loads((roots[0] / latest / "manifest.json").read_text())["fingerprint"]["id"]
    chat_first = json.loads((roots[1] / "nightly-1" / "manifest.json").read_text())["fingerprint"]["id"]
    chat_second = json.loads((roots[1] / latest / "manifest.json").read_text())["fingerprint"]["id"]
    assert second == first and chat_second != chat_first     # only the chat input changed
    assert_same_outputs(roots[0] / "nightly-1", roots[0] / latest)
    info = json.loads((roots[1] / latest / "build_info.json").read_text())
    assert info["fingerprint"]["computed_by"] == "launcher" and info["fingerprint"]["seconds"] >= 0
    assert not [p for p in roots[0].iterdir() if ".tmp-" in p.name]

    # Without --skip-unchanged a versioned build always builds.
    assert main(["build", path, "--versioned"]) == 0
    assert (roots[0] / "LATEST").read_text().strip() not in ("nightly-1", latest)
    assert len([p for p in roots[0].iterdir() if p.is_dir()]) == 3
    assert main(["build", path, "--skip-unchanged"]) == 2    # only with --versioned


def test_latest_pointer_only_names_published_builds(tmp_path):
    root = tmp_path / "root"
    (root / "b1").mkdir(parents=True)
    with pytest.raises(FileNotFoundError):
        publish.write_latest(str(root), "b1")
    assert publish.read_latest(str(root)) is None and publish.latest_fingerprint(str(root)) is None
    (root / "b1" / "manifest.json").write_text(json.dumps({"fingerprint": {"id": "abc"}}))
    publish.write_latest(str(root), "b1")
    assert publish.read_latest(str(root)) == "b1" and publish.latest_fingerprint(str(root)) == "abc"
    assert sorted(p.name for p in root.iterdir()) == ["LATEST", "b1"]


# =========================================================================== idempotent publish


@pytest.mark.parametrize("crash_in", ["manifest", "unk_index"])
def test_finalize_twice_and_after_a_crash_gives_the_same_bytes(tmp_path, monkeypatch, crash_in):
    """A finalize that crashed (before the manifest, or between two index files, after
    the first one's parts were removed) and is run again publishes the same bytes."""
    job = _job(tmp_path)
    real_finalize, real_manifest, real_write_ranges = publish.finalize, publish.manifest, storage.write_ranges
    seen = {}

    def crash(*_args, **_kwargs):
        raise RuntimeError("finalize crashed before manifest.json")

    def crash_on_unk(path, ranges, **kwargs):
        if path.endswith("unk_index.jsonl"):
            raise RuntimeError("finalize crashed writing unk_index.jsonl")
        return real_write_ranges(path, ranges, **kwargs)

    def finalize_three_times(config, *args, **kwargs):
        if crash_in == "manifest":
            monkeypatch.setattr(publish, "manifest", crash)
        else:
            monkeypatch.setattr(storage, "write_ranges", crash_on_unk)
        with pytest.raises(RuntimeError):
            list(real_finalize(config, *args, **kwargs))
        monkeypatch.setattr(publish, "manifest", real_manifest)
        monkeypatch.setattr(storage, "write_ranges", real_write_ranges)
        out = Path(config.outputs[0].path)
        staging = out / ".mintdim-staging" / config.run_id     # each build stages under its run id
        assert not (staging / "blocks").exists()     # no spill outlives the write stage
        if crash_in == "unk_index":
            assert (out / "sample_index.jsonl").exists() and not (staging / "parts" / "sample_index").exists()
            assert not (out / "unk_index.jsonl").exists()
            # Its parts are still there for the retry (blocks with no unk row write none).
            seen["unk_parts"] = (staging / "parts" / "unk_index").is_dir()
        seen["after_crash"] = sorted(list_output_files(out))
        first = list(real_finalize(config, *args, **kwargs))     # the retried finalize publishes
        snapshot = list_output_files(out)
        second = list(real_finalize(config, *args, **kwargs))    # and running it again changes nothing
        assert second == first and list_output_files(out) == snapshot
        return iter(first)

    monkeypatch.setattr(publish, "finalize", finalize_three_times)
    build_and_compare(tmp_path, output_dirs="out", block_size=1024, **job)
    crashed = seen["after_crash"]
    assert "manifest.json" not in crashed
    assert {"unit_48/UNIT_BUILD_FAILED.md", "unit_96/UNIT_BUILD_FAILED.md"} <= set(crashed)
    if crash_in == "unk_index":
        assert seen["unk_parts"] == ((tmp_path / "out" / "unk_index.jsonl").stat().st_size > 0)


def test_bundles_delivered_twice_never_duplicate_records(tmp_path, monkeypatch):
    """Every DoFn runs each element twice and emits both results, as a retry can."""
    for cls in (encode_stage.EncodeBlockFn, write_stage.WriteOutputsFn, finalize_stage.HashInputFn):
        def twice(self, element, *side, _process=cls.process):
            first = list(_process(self, element, *side))
            yield from first
            yield from _process(self, element, *side)
        monkeypatch.setattr(cls, "process", twice)
    build_and_compare(tmp_path, output_dirs="out", block_size=1024, **job_with_duplicates(tmp_path))


def job_with_duplicates(tmp_path):
    job = _job(tmp_path / "dups")
    job["on_bad_record"] = "skip"
    with open(job["files"][0], "a", encoding="utf-8") as f:
        f.write('{"instruction": \n')
    return job


# =========================================================================== failed builds


def test_exception_in_a_worker_leaves_nothing_that_looks_complete(tmp_path, monkeypatch):
    job = _job(tmp_path)
    write_shard = write_stage.WriteOutputsFn._write_shard

    def failing(self, task):
        if task.shard == 2:
            raise RuntimeError("disk full while writing a shard")
        return write_shard(self, task)

    monkeypatch.setattr(write_stage.WriteOutputsFn, "_write_shard", failing)
    out = tmp_path / "out"
    with pytest.raises(Exception, match="disk full while writing a shard"):
        run_pipeline(output_dirs=str(out), block_size=1024, **job)
    assert_nothing_published(out)
    for unit in (48, 96):
        text = (out / f"unit_{unit}" / "UNIT_BUILD_FAILED.md").read_text()
        assert "RuntimeError: disk full while writing a shard" in text
    assert [p.name for p in (out / ".mintdim-staging").glob("*/blocks")] == ["blocks"]  # spills stay in staging


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC])
@pytest.mark.parametrize("staged, index_layout", [("/shards/", None), ("/parts/", "parts"),
                                                  ("/sample_index.jsonl", None)])
def test_a_failed_flush_fails_the_build_and_publishes_nothing(tmp_path, monkeypatch, code, staged, index_layout):
    """The write stage flushes each shard, and each index part published as it is,
    early (storage.Flusher); an error there fails the build, where publish's own fsync
    (a new descriptor) might never see it. An index file copied from its parts is
    flushed by publish, before any manifest. A full disk is the spec's DiskFullError,
    in both languages."""
    from mintdim_beam import errors

    job = dict(_job(tmp_path), index_layout=index_layout)
    real = os.fsync

    def fsync(fd):
        if staged in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "out"
    if code == errno.ENOSPC:
        with pytest.raises(errors.DiskFullError) as caught:
            run_pipeline(output_dirs=str(out), block_size=1024, **job)
        assert staged in caught.value.fields["path"]
        assert "No space left on the device" in str(caught.value) and "Thiết bị hết dung lượng" in str(caught.value)
    else:
        with pytest.raises(Exception, match="Input/output error"):
            run_pipeline(output_dirs=str(out), block_size=1024, **job)
    if staged != "/sample_index.jsonl":
        assert_nothing_published(out)
    else:   # publish's flush: the files are in place, never the manifest, and every unit says it failed
        assert not (out / "manifest.json").exists()
        for unit in (48, 96):
            assert (out / f"unit_{unit}" / "UNIT_BUILD_FAILED.md").exists()


def _slow_job(tmp_path: Path) -> tuple[str, Path]:
    """A job that takes a few seconds, so it can be stopped in the middle."""
    rows = textgen.instruction_records(random.Random(3), 15000)
    job = _job(tmp_path)
    job["files"] = [write_jsonl(tmp_path / "big.jsonl", rows)]
    out = tmp_path / "out"
    return _job_file(tmp_path / "slow.json", job, str(out), block_size=16384), out


def _start_and_stop(tmp_path: Path, stop) -> tuple[int, Path]:
    path, out = _slow_job(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "mintdim_beam.cli.commands", "build", path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not any((out / ".mintdim-staging").glob("*/blocks")):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the build never started spilling blocks"
        time.sleep(0.05)
    stop(proc)
    rc = proc.wait(timeout=120)
    return rc, out


def test_launcher_killed_leaves_markers(tmp_path):
    rc, out = _start_and_stop(tmp_path, lambda proc: proc.kill())
    assert rc == -signal.SIGKILL
    assert_nothing_published(out)
    for unit in (48, 96):
        text = (out / f"unit_{unit}" / "UNIT_BUILD_FAILED.md").read_text()
        assert "not finalized" in text and "interrupted" in text


def test_launcher_terminated_says_so(tmp_path):
    rc, out = _start_and_stop(tmp_path, lambda proc: proc.send_signal(signal.SIGTERM))
    assert rc == 130
    assert_nothing_published(out)
    text = (out / "unit_48" / "UNIT_BUILD_FAILED.md").read_text()
    assert "the build was interrupted (terminated by signal SIGTERM" in text
