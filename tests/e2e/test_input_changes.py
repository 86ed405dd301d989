"""The fingerprint vouches for exactly the bytes the dataset holds.

An input appended while a build runs (between listing and hashing, or while blocks are
read) used to give a build with exit 0 whose manifest fingerprinted lines it never
built. Now the build fails with InputChangedError and publishes nothing, and
``verify --tokenizer`` reports source lines beyond the last sample.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import TESTDATA, write_jsonl

from mintdim_beam import errors, pipeline
from mintdim_beam.cli.consumer_commands import main as consumer_main
from mintdim_beam.launch import launcher
from mintdim_beam.storage import line_blocks


def _job(src, out):
    return (pipeline("unit-build").source.jsonl(files=[src], fields=[["a"]], templates=["{a}"])
            .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
            .units(sizes=[[32, 64]], build_batch=[8]).output.dir(str(out), samples_per_shard=[16]))


def _run(job):
    return job.run(on_overflow="truncate", on_template_unk="continue", quiet=True, echo=lambda *a: None,
                   block_size=1024)


def _append(path, rows=100):
    with open(path, "a", encoding="utf-8") as f:
        for i in range(rows):
            f.write(json.dumps({"a": f"appended line {i}"}) + "\n")


def _refused(job, src, out):
    with pytest.raises(errors.InputChangedError) as caught:
        _run(job)
    err = caught.value
    assert err.fields["file"] == src and err.fields["size_now"] > err.fields["listed_size"]
    text = str(err)
    assert "[english]" in text and "[vietnam]" in text and "nothing was published" in text
    assert not (out / "manifest.json").exists()
    marker = next(out.glob("unit_*/UNIT_BUILD_FAILED.md"))
    assert "An input file changed while the build read it" in marker.read_text()
    return err


def test_lines_appended_before_the_inputs_are_hashed_fail_the_build(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"line {i} of the source"} for i in range(200)])
    real = launcher.hash_inputs

    def appending(config, *args, **kwargs):
        _append(src)
        return real(config, *args, **kwargs)

    monkeypatch.setattr(launcher, "hash_inputs", appending)
    _refused(_job(src, tmp_path / "out"), src, tmp_path / "out")


def test_lines_appended_while_the_blocks_are_read_fail_the_build(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"line {i} of the source"} for i in range(200)])
    real = line_blocks.read_block_lines
    done = []

    def appending(path, start, end, decode=True):
        found = real(path, start, end, decode)
        if not done:
            _append(src)
            done.append(1)
        return found

    monkeypatch.setattr(line_blocks, "read_block_lines", appending)
    _refused(_job(src, tmp_path / "out"), src, tmp_path / "out")


def test_verify_reports_source_lines_beyond_the_last_sample(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"line {i} of the source"} for i in range(50)])
    out = tmp_path / "out"
    _run(_job(src, out))
    assert consumer_main(["verify", str(out), "--tokenizer"]) == 0
    capsys.readouterr()
    _append(src, 7)
    assert consumer_main(["verify", str(out), "--tokenizer"]) == 1
    shown = capsys.readouterr().out
    assert "the sources hold 57 non-blank lines, the dataset's indexes 50 sample ids (0..49): 7 source lines " \
           "were never built" in shown
    assert "the source changed after the build" in shown


def test_a_manifest_naming_a_device_as_source_is_listed_not_read(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"line {i}"} for i in range(20)])
    out = tmp_path / "out"
    _run(_job(src, out))
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["source"]["files"] = ["/dev/zero"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    done = subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", "verify", str(out), "--tokenizer"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "/dev/zero: cannot read the source file for re-tokenization" in done.stdout
    assert "not a regular file" in done.stdout


def test_a_multi_output_build_that_fails_publishing_publishes_no_output(tmp_path, monkeypatch):
    """ENOSPC on the second output's first index file: before, the first output had a
    manifest and verified while the build failed. A build is one unit: no manifest."""
    import errno

    from mintdim_beam.storage import compose

    a = write_jsonl(tmp_path / "a.jsonl", [{"a": f"first {i}"} for i in range(30)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"a": f"second {i}"} for i in range(30)])
    outs = [tmp_path / "train", tmp_path / "eval"]
    job = (pipeline("unit-build").source.jsonl(files=[a, b], fields=[["a"]], templates=["{a}"])
           .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
           .units(sizes=[[32, 64]], build_batch=[8]).output.dir([str(o) for o in outs], samples_per_shard=[16]))
    real = compose.concatenate

    def full_disk(final, sources, *args, **kwargs):
        if str(outs[1]) in final:
            raise OSError(errno.ENOSPC, "No space left on device", final)
        return real(final, sources, *args, **kwargs)

    monkeypatch.setattr(compose, "concatenate", full_disk)
    with pytest.raises(errors.DiskFullError) as caught:
        _run(job)
    err = caught.value
    assert err.fields["path"] == str(outs[1] / "sample_index.jsonl") and err.fields["free_bytes"] > 0
    assert "No space left on the device" in str(err) and "Thiết bị hết dung lượng" in str(err)
    for out in outs:
        assert not (out / "manifest.json").exists(), out
        markers = list(out.glob("unit_*/UNIT_BUILD_FAILED.md"))
        assert markers and "No space left on the device" in markers[0].read_text(), out
        assert not (out / ".mintdim-claim.json").exists()          # released: the next build is told why
        assert not list(out.rglob("*.tmp-*"))


def test_a_claim_the_launcher_released_is_never_taken_again_by_its_workers(tmp_path, monkeypatch):
    """On Dask a SIGTERM to the launcher released the claim while a worker ran
    finalize; the worker then claimed the directory again and published. A worker of a
    launched build never claims: a claim gone is one its launcher released."""
    from mintdim_beam.beam import publish

    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"line {i}"} for i in range(20)])
    out = tmp_path / "out"
    real = publish.finalize

    def released_first(config, *args, **kwargs):
        (out / ".mintdim-claim.json").unlink()        # what the interrupted launcher does
        yield from real(config, *args, **kwargs)

    monkeypatch.setattr(publish, "finalize", released_first)
    with pytest.raises(errors.OutputClaimedError) as caught:
        _run(_job(src, out))
    assert caught.value.fields["status"] == "released"
    assert "released its claim" in str(caught.value) and "đã trả claim" in str(caught.value)
    assert not (out / "manifest.json").exists() and not (out / ".mintdim-claim.json").exists()


def test_every_published_file_is_on_disk_before_the_manifest(tmp_path, monkeypatch):
    """After a power loss a manifest must not name shards whose bytes never reached the
    disk: shards, index files and summaries are flushed (and their directories) before
    manifest.json is written, and the manifest itself before the build returns."""
    import os

    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"line {i} of the corpus"} for i in range(60)])
    out = tmp_path / "out"
    synced = []
    real = os.fsync

    def recording(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    _run(_job(src, out))
    published = sorted(str(p) for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest_at = next(i for i, p in enumerate(synced) if p.startswith(str(out / "manifest.json")))
    before = set(synced[:manifest_at])
    missing = [p for p in published if p not in before]
    assert missing == []
    assert any(p.endswith("shard_000000.bin") for p in before) and str(out) in before
