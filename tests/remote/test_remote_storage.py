"""Inputs, tokenizer files and outputs on an object store, through Beam's file systems.

``s3://`` runs against moto's S3 server started on 127.0.0.1 by a fixture (Beam's AWS
file system talks to it through ``--s3_endpoint_url``). The same tests run against a
real ``gs://`` bucket when ``MINTDIM_TEST_GCS_ROOT`` names a writable prefix (for
example ``gs://my-bucket/mintdim-test``) and ``apache-beam[gcp]`` is installed with
application-default credentials; otherwise the GCS cases skip.

A remote build must give the same bytes as a local build of the same job: shards and
summaries byte for byte, index files once the declared source paths are swapped, and
the manifest's fingerprint must record the same sizes and sha256 of every input.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
import uuid
from pathlib import Path

import pytest

from conftest import TESTDATA, DirectTokenizer, build_and_compare, run_pipeline, write_jsonl
from remote_fixtures import BUCKET, Remote, free_port as _free_port

from mintdim_beam.errors import MintDimFileNotFoundError
from mintdim_beam.storage import clients
from mintdim_beam.storage import compressed
from mintdim_beam.storage import s3

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

SP = "sentencepiece"


def _job(directory: Path) -> dict:
    rng = random.Random(7)
    instructions = textgen.instruction_records(rng, 120)
    instructions.insert(30, dict(instructions[3]))
    chat = textgen.chat_records(rng, 60)
    chat.insert(20, {"prompt": "漢字", "response": "🙂 ok"})
    return dict(
        files=[write_jsonl(directory / "instructions.jsonl", [*instructions, '{"broken": ']),
               write_jsonl(directory / "chat.jsonl", chat)],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["{instruction}\n{input}\n{output}", "Người dùng: {prompt}\nTrợ lý: {response}"],
        tokenizer_kind=SP,
        tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
        sizes=[[48, 96], [32, 64]],
        samples_per_shard=[16, 8],
        on_overflow="extend",
        on_bad_record="skip",
        on_template_unk="continue",
    )


def _to_remote(remote: Remote, job: dict, tag: str) -> dict:
    """The same job with its input and tokenizer files uploaded under ``tag``."""
    moved = dict(job)
    moved["files"] = [remote.upload(f, f"{tag}/in/{Path(f).name}") for f in job["files"]]
    moved["tokenizer_files"] = [remote.upload(f, f"{tag}/tok/{Path(f).name}") for f in job["tokenizer_files"]]
    return moved


def _swap_paths(data: bytes, pairs) -> bytes:
    for remote_path, local_path in pairs:
        data = data.replace(remote_path.encode(), local_path.encode())
    return data


def test_full_build_on_remote_storage_matches_local(remote, tmp_path):
    job = _job(tmp_path)
    local_dirs = [str(tmp_path / "local" / "instructions"), str(tmp_path / "local" / "chat")]
    build_and_compare(tmp_path, output_dirs=local_dirs, block_size=2048, build_batch=[4], **job)

    tag = f"full-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(remote, job, tag)
    remote_dirs = [f"{remote.root}/{tag}/out/instructions", f"{remote.root}/{tag}/out/chat"]
    result = run_pipeline(output_dirs=remote_dirs, block_size=4096, build_batch=[9],
                          options=remote.options, **rjob)
    assert [o.path for o in result.outputs] == remote_dirs
    pairs = list(zip(rjob["files"] + rjob["tokenizer_files"], job["files"] + job["tokenizer_files"]))

    for local_dir, remote_dir in zip(local_dirs, remote_dirs):
        got = remote.download_tree(remote_dir)
        want = {p.relative_to(local_dir).as_posix(): p.read_bytes()
                for p in Path(local_dir).rglob("*") if p.is_file()}
        assert sorted(got) == sorted(want)
        assert not any(name.startswith(".mintdim-staging") for name in got)
        for name in sorted(want):
            if name in ("build_info.json", "manifest.json", "SHA256SUMS"):
                continue
            assert _swap_paths(got[name], pairs) == want[name], name
        # the index files name the remote sources, so their checksums differ: each line
        # must hold the sha256 of the file as it was uploaded
        listed = [line.split("  ") for line in got["SHA256SUMS"].decode().splitlines()]
        assert [name for _, name in listed] == [line.split("  ")[1] for line in want["SHA256SUMS"].decode().splitlines()]
        assert all(hashlib.sha256(got[name]).hexdigest() == digest for digest, name in listed)
        got_manifest = json.loads(_swap_paths(got["manifest.json"], pairs))
        want_manifest = json.loads(want["manifest.json"])
        assert got_manifest.pop("checksums")["sha256"] == hashlib.sha256(got["SHA256SUMS"]).hexdigest()
        want_manifest.pop("checksums")
        got_fp, want_fp = got_manifest.pop("fingerprint"), want_manifest.pop("fingerprint")
        assert got_manifest == want_manifest
        assert got_fp["inputs"] == want_fp["inputs"] and got_fp["tokenizer"] == want_fp["tokenizer"]
        assert got_fp["versions"] == want_fp["versions"]


def test_output_checks_read_remote_outputs(remote, tmp_path):
    from mintdim_beam.reader import dataset as reader
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    job["samples_per_shard"] = [64]      # few shards: the reader opens each object anew
    tag = f"checks-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(remote, job, tag)
    out = f"{remote.root}/{tag}/out"
    run_pipeline(output_dirs=[out + "/instructions", out + "/chat"], block_size=4096,
                 options=remote.options, **rjob)
    # The CLI takes Beam's file-system flags; --tokenizer re-tokenizes rows read back
    # from the s3:// sources with the s3:// tokenizer the manifest names.
    assert main(["verify", f"{out}/instructions", "--tokenizer", "--sample", "16", *remote.options]) == 0
    remote.configure()

    opened = reader.open_output(f"{out}/chat")
    assert len(opened) == 61
    tok = DirectTokenizer(SP, job["tokenizer_files"][0])
    segments = [[int(x) for x in seg.ids] for seg in opened.sample(20).segments]
    assert segments == [tok.encode(t) for t in ("Người dùng: ", "漢字", "\nTrợ lý: ", "🙂 ok")]



def test_exports_read_remote_datasets_and_write_remote_files(remote, tmp_path):
    """``export`` reads an s3:// dataset through FileSystems and may write there too."""
    import pyarrow.parquet as pq

    from mintdim_beam.reader import dataset as reader
    from mintdim_beam.cli.commands import main
    from test_export import read_megatron

    job = _job(tmp_path)
    tag = f"export-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(remote, job, tag)
    out = f"{remote.root}/{tag}/out"
    run_pipeline(output_dirs=[out + "/instructions", out + "/chat"], block_size=4096,
                 options=remote.options, **rjob)
    prefix = tmp_path / "mg" / "chat"
    assert main(["export", f"{out}/chat", "--format", "megatron", str(prefix), *remote.options]) == 0
    remote_parquet = f"{remote.root}/{tag}/export/chat.parquet"
    assert main(["export", f"{out}/chat", "--format", "parquet", remote_parquet, *remote.options]) == 0

    remote.configure()
    opened = reader.open_output(f"{out}/chat")
    want = [sample.payload.tolist() for sample in opened]
    assert len(want) == 61
    assert read_megatron(prefix)["sequences"] == want
    exported = remote.download_tree(f"{remote.root}/{tag}/export")
    assert sorted(exported) == ["chat.parquet"]       # no temporary object left
    (tmp_path / "chat.parquet").write_bytes(exported["chat.parquet"])
    table = pq.read_table(tmp_path / "chat.parquet")
    assert table.column("input_ids").to_pylist() == want
    assert table.column("sample_id").to_pylist() == opened.sample_ids.tolist()

def test_versioned_root_on_remote_storage(remote, tmp_path):
    from mintdim_beam.launch import versioned
    from mintdim_beam.beam import publish

    job = _job(tmp_path)
    tag = f"versioned-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(remote, job, tag)
    roots = [f"{remote.root}/{tag}/units/instructions", f"{remote.root}/{tag}/units/chat"]
    config = _config(rjob, roots)
    first = versioned.launch_versioned(config, options=remote.options, skip_unchanged=True, echo=lambda *_: None)
    assert not first.skipped
    remote.configure()
    assert [publish.read_latest(r) for r in roots] == [first.build_id] * 2
    second = versioned.launch_versioned(config, options=remote.options, skip_unchanged=True, echo=lambda *_: None)
    assert second.skipped and second.build_id == first.build_id
    names = remote.download_tree(roots[0])
    assert {n.split("/")[0] for n in names} == {"LATEST", first.build_id}


def test_failed_remote_build_publishes_nothing(remote, tmp_path):
    from mintdim_beam import errors

    job = _job(tmp_path)
    job["on_bad_record"] = "abort"
    tag = f"fail-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(remote, job, tag)
    out = f"{remote.root}/{tag}/out"
    with pytest.raises(errors.SourceParseError):
        run_pipeline(output_dirs=[out + "/instructions", out + "/chat"], options=remote.options, **rjob)
    names = remote.download_tree(out + "/instructions")
    assert "manifest.json" not in names
    assert not [n for n in names if n.startswith("unit_") and n.endswith(".bin")]
    markers = [n for n in names if n.endswith("UNIT_BUILD_FAILED.md")]
    assert sorted(markers) == ["unit_48/UNIT_BUILD_FAILED.md", "unit_96/UNIT_BUILD_FAILED.md"]
    assert b"SourceParseError" in names[markers[0]]


def _config(job: dict, output_dirs):
    from mintdim_beam import pipeline

    p = pipeline("unit-build").source.jsonl(files=job["files"], fields=job["fields"], templates=job["templates"])
    p = p.tokenizer.sentencepiece(files=job["tokenizer_files"])
    p = p.units(sizes=job["sizes"], build_batch=[8]).output.dir(output_dirs, samples_per_shard=job["samples_per_shard"])
    return p.config(on_overflow=job["on_overflow"], on_template_unk=job["on_template_unk"],
                    on_bad_record=job["on_bad_record"], block_size=4096)


@pytest.fixture(scope="module")
def dask_address():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    yield cluster.scheduler_address
    cluster.close()


def test_dask_workers_reach_remote_storage(s3_remote, dask_address, tmp_path):
    """Dask workers get no pipeline options from the runner: the DoFns configure S3."""
    from apache_beam.runners.dask.dask_runner import DaskRunner

    job = _job(tmp_path)
    tag = f"dask-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    dirs = {name: [f"{s3_remote.root}/{tag}/{name}/instructions", f"{s3_remote.root}/{tag}/{name}/chat"]
            for name in ("memory", "dask")}
    run_pipeline(output_dirs=dirs["memory"], block_size=4096, options=s3_remote.options, **rjob)
    run_pipeline(output_dirs=dirs["dask"], block_size=2048, build_batch=[7], runner=DaskRunner(),
                 options=[*s3_remote.options, "--dask_client_address", dask_address], **rjob)
    for a, b in zip(dirs["memory"], dirs["dask"]):
        got, want = s3_remote.download_tree(b), s3_remote.download_tree(a)
        assert sorted(got) == sorted(want)
        assert [n for n in want if n != "build_info.json" and got[n] != want[n]] == []


# --------------------------------------------------------------------------- unreachable storage


def _job_file(path: Path, job: dict, output_dirs) -> str:
    text = json.dumps({
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"sentencepiece": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [8]},
        "output": {"dir": output_dirs, "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": job["on_overflow"], "on_template_unk": job["on_template_unk"],
                "on_bad_record": job["on_bad_record"]},
    })
    path.write_text(text, encoding="utf-8")
    return str(path)


def _flags_with(remote: Remote, **changed) -> list:
    flags = dict(f[2:].split("=", 1) for f in remote.options)
    flags.update(changed)
    return [f"--{k}={v}" for k, v in flags.items()]


def _assert_failed_fast(code, elapsed, err, path, endpoint):
    """The bilingual StorageAccessError, naming the path, the flag and the endpoint, in
    seconds (Beam's own retries take minutes), with exit 2 and no traceback."""
    assert code == 2
    assert elapsed < 15, elapsed
    assert "Traceback" not in err
    assert "[english] StorageAccessError: Storage could not be reached with the options given." in err
    assert "[vietnam] StorageAccessError: Không truy cập được storage với các option đã cho." in err
    assert f"Path: {path}" in err and f"Đường dẫn: {path}" in err
    assert "check --s3_endpoint_url" in err and "kiểm tra --s3_endpoint_url" in err
    assert endpoint in err


def test_unreachable_endpoint_fails_the_build_in_seconds(s3_remote, tmp_path, capsys):
    """A wrong --s3_endpoint_url is said at once, not after Beam's ten minutes of retries."""
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    tag = f"unreachable-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    out = f"{s3_remote.root}/{tag}/out"
    job_file = _job_file(tmp_path / "job.json", rjob, [out + "/instructions", out + "/chat"])
    closed = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    code = main(["build", job_file, *_flags_with(s3_remote, s3_endpoint_url=closed)])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    _assert_failed_fast(code, elapsed, err, rjob["files"][0], closed)
    assert s3_remote.download_tree(out + "/instructions") == {}   # nothing written


def test_missing_output_bucket_is_named_before_the_build(s3_remote, tmp_path, capsys):
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    tag = f"nobucket-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    out = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/out"
    job_file = _job_file(tmp_path / "job.json", rjob, [out + "/instructions", out + "/chat"])
    code = main(["build", job_file, *s3_remote.options])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "StorageAccessError" in err and f"Path: {out}/instructions" in err
    assert "the bucket does not exist" in err and "bucket không tồn tại" in err


def test_workers_check_access_at_setup(s3_remote):
    """The check a DoFn's setup() runs: bounded, with the error the launcher gives."""
    from mintdim_beam import errors
    from mintdim_beam.storage import access as storage_access

    closed = _flags_with(s3_remote, s3_endpoint_url=f"http://127.0.0.1:{_free_port()}")
    path = f"{s3_remote.root}/in/some.jsonl"
    started = time.monotonic()
    with pytest.raises(errors.StorageAccessError) as caught:
        storage_access.check([path, "/local/file.jsonl"], closed)
    assert time.monotonic() - started < 15
    assert caught.value.path == path and caught.value.problem == "endpoint"
    rebuilt = errors.error_from_dict(caught.value.to_dict())
    assert str(rebuilt) == str(caught.value)
    storage_access.check([path], s3_remote.options)     # the right endpoint: reached


def _unreachable_argv(command: str, dataset: str, tmp_path: Path) -> list:
    return {
        "verify": ["verify", dataset],
        "inspect": ["inspect", dataset, "--sample-id", "0"],
        "plan": ["plan", dataset],
        "report": ["report", dataset, "-o", str(tmp_path / "report.html")],
        "export": ["export", dataset, str(tmp_path / "mg"), "--format", "megatron"],
    }[command]


@pytest.mark.parametrize("command", ["verify", "inspect", "plan", "report", "export"])
def test_commands_that_read_a_dataset_fail_fast_on_unreachable_storage(s3_remote, tmp_path, capsys, command):
    """The same check as the build's, on the paths the command was given: exit 2 in
    seconds with the message that names the path and the flag, not minutes of retries."""
    from mintdim_beam.cli.commands import main

    dataset = f"{s3_remote.root}/unreachable-{uuid.uuid4().hex[:6]}/out/chat"
    closed = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    code = main([*_unreachable_argv(command, dataset, tmp_path), *_flags_with(s3_remote, s3_endpoint_url=closed)])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    _assert_failed_fast(code, elapsed, err, dataset, closed)
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "mg.bin").exists()


def test_plan_of_a_job_fails_fast_on_unreachable_storage(s3_remote, tmp_path, capsys):
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    tag = f"unreachable-plan-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    job_file = _job_file(tmp_path / "job.json", rjob, [str(tmp_path / "a"), str(tmp_path / "b")])
    started = time.monotonic()
    code = main(["plan", job_file, *_flags_with(s3_remote, s3_endpoint_url=f"http://127.0.0.1:{_free_port()}")])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 15, elapsed
    assert "Traceback" not in err
    assert "[english] StorageAccessError" in err and f"Path: {rjob['files'][0]}" in err
    assert "check --s3_endpoint_url" in err


def test_reader_fails_fast_on_unreachable_storage(s3_remote, tmp_path):
    """open_output(..., options=...) gives FileSystems its settings and checks them first."""
    from mintdim_beam import errors
    from mintdim_beam.reader import dataset as reader

    job = _job(tmp_path)
    tag = f"reader-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    out = f"{s3_remote.root}/{tag}/out"
    run_pipeline(output_dirs=[out + "/instructions", out + "/chat"], block_size=4096,
                 options=s3_remote.options, **rjob)
    closed = _flags_with(s3_remote, s3_endpoint_url=f"http://127.0.0.1:{_free_port()}")
    started = time.monotonic()
    with pytest.raises(errors.StorageAccessError) as caught:
        reader.open_output(f"{out}/chat", options=closed)
    assert time.monotonic() - started < 15
    assert caught.value.path == f"{out}/chat" and caught.value.problem == "endpoint"
    assert "check --s3_endpoint_url" in str(caught.value)
    opened = reader.open_output(f"{out}/chat", options=s3_remote.options)   # the right endpoint
    assert len(opened) == 61


# --------------------------------------------------------------------------- server-side concatenation


def _put(s3_remote: Remote, path: str, data: bytes) -> None:
    bucket, key = path[len("s3://"):].split("/", 1)
    s3_remote.s3_client.put_object(Bucket=bucket, Key=key, Body=data)


def _get(s3_remote: Remote, path: str) -> tuple:
    bucket, key = path[len("s3://"):].split("/", 1)
    found = s3_remote.s3_client.get_object(Bucket=bucket, Key=key)
    return found["Body"].read(), found["ETag"].strip('"')


def test_s3_concatenation_copies_large_parts_server_side(s3_remote):
    """Parts of 5 MiB or more are copied by the store; smaller runs are grouped."""
    from mintdim_beam.storage import compose
    from mintdim_beam.storage import files as storage

    MiB = 1 << 20
    sizes = [6 * MiB, 100, 200, 6 * MiB, 3 * MiB, 7 * MiB + 5, 10, 0, 12 * MiB, 4 * MiB, 2 * MiB, 9]
    rng = random.Random(3)
    tag = f"{s3_remote.root}/concat-{uuid.uuid4().hex[:6]}"
    sources = [f"{tag}/parts/p{i:03d}" for i in range(len(sizes))]
    blobs = [rng.randbytes(n) for n in sizes]
    for path, data in zip(sources, blobs):
        _put(s3_remote, path, data)
    # 6 MiB copied; 100 + 200 + the next source's first 5 MiB - 300 uploaded, its rest
    # (1 MiB + 300 < 5 MiB) cannot stand alone, so that source is read whole instead;
    # 3 MiB + the next 2 MiB + 5 uploaded, the rest copied; 10 B and the 12 MiB source's
    # head uploaded, the rest copied; 4 + 2 MiB uploaded together; the last 9 B alone.
    plan = compose.plan_parts(sizes)
    assert [p[0] for p in plan] == ["copy", "upload", "upload", "copy", "upload", "copy", "upload", "upload"]
    assert plan[1] == ("upload", [(1, 0, 100), (2, 0, 200), (3, 0, 6 * MiB)])
    assert plan[2] == ("upload", [(4, 0, 3 * MiB), (5, 0, 2 * MiB)])
    assert plan[3] == ("copy", 5, 2 * MiB, 7 * MiB + 5)
    assert all(sum(e - s for _, s, e in p[1]) <= 2 * compose.MIN_PART for p in plan if p[0] == "upload")
    read_through = sum(e - s for p in plan if p[0] == "upload" for _, s, e in p[1])
    assert read_through == sum(sizes) - 6 * MiB - (5 * MiB + 5) - (12 * MiB - (5 * MiB - 10))

    clients.configure(s3_remote.options)
    target = f"{tag}/joined.jsonl"
    sha = __import__("hashlib").sha256()
    assert compose.concatenate(target, sources, sha=sha) == sum(sizes)
    data, etag = _get(s3_remote, target)
    assert data == b"".join(blobs)
    assert etag.endswith(f"-{len(plan)}")                       # one multipart upload of those parts
    assert sha.hexdigest() == __import__("hashlib").sha256(data).hexdigest()

    # More parts than one upload may hold: composed in a tree, same bytes.
    tree = f"{tag}/tree.jsonl"
    assert compose.concatenate(tree, sources, max_parts=3) == sum(sizes)
    assert _get(s3_remote, tree)[0] == b"".join(blobs)
    assert sorted(p.rsplit("/", 1)[1] for p in storage.list_files(f"{tag}/parts")) == \
        [f"p{i:03d}" for i in range(len(sizes))]                 # no intermediate object left
    # Only small sources: one uploaded part; none: an empty object.
    small = f"{tag}/small.jsonl"
    compose.concatenate(small, sources[1:3])
    assert _get(s3_remote, small)[0] == blobs[1] + blobs[2]
    empty = f"{tag}/empty.jsonl"
    compose.concatenate(empty, [sources[7]])
    assert _get(s3_remote, empty)[0] == b""


def test_parts_layout_on_remote_storage_matches_local(s3_remote, tmp_path):
    """index_layout parts on s3://: the parts are renamed in place (server-side), the
    tree equals a local parts build, and verify reads the parts back."""
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    local = [str(tmp_path / "local" / "instructions"), str(tmp_path / "local" / "chat")]
    run_pipeline(output_dirs=local, block_size=4096, index_layout="parts", **job)
    tag = f"parts-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    remote_dirs = [f"{s3_remote.root}/{tag}/out/instructions", f"{s3_remote.root}/{tag}/out/chat"]
    run_pipeline(output_dirs=remote_dirs, block_size=4096, index_layout="parts", options=s3_remote.options, **rjob)
    pairs = list(zip(rjob["files"] + rjob["tokenizer_files"], job["files"] + job["tokenizer_files"]))
    for local_dir, remote_dir in zip(local, remote_dirs):
        got = s3_remote.download_tree(remote_dir)
        want = {p.relative_to(local_dir).as_posix(): p.read_bytes() for p in Path(local_dir).rglob("*") if p.is_file()}
        assert sorted(got) == sorted(want)
        assert "sample_index/part-00000.jsonl" in got and "sample_index.jsonl" not in got
        assert [n for n in want if n.endswith(".jsonl") and _swap_paths(got[n], pairs) != want[n]] == []
    assert main(["verify", remote_dirs[1], *s3_remote.options]) == 0   # reads the parts back


def test_s3_reads_are_ranged_gets_and_small_writes_one_put(s3_remote):
    """A small file goes up in one PUT (not a multipart upload: its ETag is the md5 of
    its bytes), a large one as a multipart upload; reads give the bytes asked for,
    sequential ones through a read-ahead, and a missing object is FileNotFoundError."""
    from mintdim_beam.storage import files as storage

    clients.configure(s3_remote.options)
    tag = f"{s3_remote.root}/requests-{uuid.uuid4().hex[:6]}"
    rng = random.Random(5)
    small, large = rng.randbytes(300_000), rng.randbytes(s3.SINGLE_PUT + 4096)
    sha = hashlib.sha256()
    view = memoryview(bytearray(small))
    assert storage.write_bytes(f"{tag}/small.bin", [view[:1000], view[1000:]], sha=sha) == len(small)
    view[:] = b"\0" * len(view)          # a chunk's buffer reused by its maker changes nothing stored
    data, etag = _get(s3_remote, f"{tag}/small.bin")
    assert data == small and etag == hashlib.md5(small).hexdigest()
    assert sha.hexdigest() == hashlib.sha256(small).hexdigest()
    assert storage.write_bytes(f"{tag}/large.bin", [large[:5], large[5:]]) == len(large)
    data, etag = _get(s3_remote, f"{tag}/large.bin")
    assert data == large and "-" in etag                  # multipart
    assert storage.write_bytes(f"{tag}/empty.bin", []) == 0
    assert _get(s3_remote, f"{tag}/empty.bin")[0] == b""

    assert storage.read_range(f"{tag}/small.bin", 1234, 5000) == small[1234:6234]
    assert storage.read_range(f"{tag}/small.bin", len(small) - 10, 100) == small[-10:]
    assert storage.read_bytes(f"{tag}/empty.bin") == b""
    assert storage.file_digest(f"{tag}/large.bin") == (len(large), hashlib.sha256(large).hexdigest())
    with storage.open_read(f"{tag}/small.bin", readahead=1 << 16) as f:
        assert f.read(8) == small[:8]
        f.seek(100)
        assert f.read(16) == small[100:116]
        f.seek(-4, os.SEEK_END)
        assert f.read() == small[-4:] and f.read(10) == b"" and f.tell() == len(small)
    with compressed.open_decompressed(f"{tag}/small.bin", "uncompressed") as f:
        assert b"".join(iter(lambda: f.read(7000), b"")) == small
    with pytest.raises(FileNotFoundError, match="gone.bin: no such object"):
        storage.read_range(f"{tag}/gone.bin", 0, 10)
    # Many ranges (fetched a few at a time) are written in their order.
    ranges = [(f"{tag}/small.bin" if i % 3 else f"{tag}/large.bin", i * 997, 50 + i * 13) for i in range(40)]
    ranges.append((f"{tag}/small.bin", len(small) - 77, None))
    want = b"".join((small if "small" in p else large)[a:] if n is None else (small if "small" in p else large)[a:a + n]
                    for p, a, n in ranges)
    sha = hashlib.sha256()
    assert storage.write_ranges(f"{tag}/joined.bin", ranges, sha=sha) == len(want)
    assert _get(s3_remote, f"{tag}/joined.bin")[0] == want and sha.hexdigest() == hashlib.sha256(want).hexdigest()
    with pytest.raises(EOFError, match=f"small.bin: {len(small) + 5} bytes expected, {len(small)} found"):
        storage.write_ranges(f"{tag}/short.bin", [(f"{tag}/small.bin", 0, 10), (f"{tag}/small.bin", 5, len(small))])
    assert not storage.exists(f"{tag}/short.bin")


def _upload_tree(s3_remote: Remote, local: str, remote: str) -> None:
    for p in sorted(Path(local).rglob("*")):
        if p.is_file():
            _put(s3_remote, f"{remote}/{p.relative_to(local).as_posix()}", p.read_bytes())


def test_index_parts_on_remote_storage_are_listed_once_and_fetched_once_each(s3_remote, tmp_path):
    """A parts dataset on s3:// (tens of parts per index), as the store sees it: each
    index folder is listed, and each part fetched by one GET (verify: one to hash it,
    one to parse it), with no request that asks for a part's size or existence."""
    from mintdim_beam.reader import dataset as reader
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    local = [str(tmp_path / "local" / "instructions"), str(tmp_path / "local" / "chat")]
    run_pipeline(output_dirs=local, block_size=1024, index_layout="parts", **job)
    parts = sorted(p.relative_to(local[0]).as_posix() for p in Path(local[0]).rglob("part-*.jsonl"))
    assert len([p for p in parts if p.startswith("sample_index/")]) >= 20
    dataset = f"{s3_remote.root}/listed-{uuid.uuid4().hex[:6]}/instructions"
    _upload_tree(s3_remote, local[0], dataset)
    key = dataset[len("s3://"):]

    def on_parts(requests):
        """Requests naming a part, by part: {part: [method, ...]}."""
        found = {}
        for method, path in requests:
            name = path.lstrip("/")[len(key) + 1:] if path.lstrip("/").startswith(key + "/") else None
            if name in parts:
                found.setdefault(name, []).append(method)
        return found

    before = len(s3_remote.requests())
    assert main(["verify", dataset, *s3_remote.options]) == 0
    during = s3_remote.requests()[before:]
    assert on_parts(during) == {p: ["GET", "GET"] for p in parts}
    folders = sorted({p.split("/")[0] for p in parts})
    prefix = "prefix=" + key.split("/", 1)[1] + "/"
    listed = [path.split(prefix, 1)[1].split("/&", 1)[0] for method, path in during
              if method == "GET" and prefix in path and "_index/&" in path]
    assert sorted(listed) == folders            # each folder of parts listed once

    before = len(s3_remote.requests())
    opened = reader.open_output(dataset, options=s3_remote.options)
    assert len(opened) == len(reader.open_output(local[0]))
    assert opened.sample(5).payload.tolist() == reader.open_output(local[0]).sample(5).payload.tolist()
    assert on_parts(s3_remote.requests()[before:]) == {p: ["GET"] for p in parts if p.startswith("sample_index/")}


# --------------------------------------------------------------------------- progress of a build to a bucket


def test_spills_on_remote_storage_are_watched_each_once(s3_remote):
    """The local runner's progress, with the output on s3://: each spill's header is
    read once (a ranged read of its first bytes), unfinished or foreign names skipped."""
    from mintdim_beam.launch import build_progress
    from mintdim_beam.core.block_result import spill_header
    from mintdim_beam.core.block_result import Figures

    clients.configure(s3_remote.options)
    spills = f"{s3_remote.root}/watch-{uuid.uuid4().hex[:6]}/blocks"

    def spill(name, figures, body=b"x" * 10_000):
        header, _ = spill_header({"unit_64": len(body)}, figures.to_dict())
        _put(s3_remote, f"{spills}/{name}", header + body)

    watcher = build_progress.StoreSpillWatcher([spills, f"{s3_remote.root}/absent/blocks"])
    assert watcher.poll() == Figures()
    spill("f00000-b000000.spill", Figures(10, 1, 3, 30))
    _put(s3_remote, f"{spills}/f00001-b000000.spill.tmp-0123", b"\x40")       # not a spill name
    _put(s3_remote, f"{spills}/f00002-b000000.spill", b"\x40\0\0\0\0\0\0\0{")  # cut short
    assert watcher.poll() == Figures(10, 1, 3, 30)
    spill("f00001-b000000.spill", Figures(5, 1, 1, 10))
    spill("f00002-b000000.spill", Figures(0, 0, 2, 20), body=b"")
    _put(s3_remote, f"{spills}/f00004-b000000.spill", b"")                    # an empty object
    long_header = Figures(7, 1, 1, 1)
    header, _ = spill_header({f"unit_{k}": 1 for k in range(400)}, long_header.to_dict())
    assert len(header) > 4096                                                   # read in a second request
    _put(s3_remote, f"{spills}/f00003-b000000.spill", header + b"y" * 400)
    before = len(s3_remote.requests())
    assert watcher.poll() == Figures(22, 3, 7, 61)
    fetched = [path for method, path in s3_remote.requests()[before:] if method == "GET" and ".spill" in path]
    assert len(fetched) == 5                                  # four new objects, the long header twice
    assert watcher.poll() == Figures(22, 3, 7, 61)


def test_a_local_build_to_remote_storage_shows_progress_and_the_summary(s3_remote, tmp_path, capsys):
    from mintdim_beam.launch import progress
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    tag = f"progress-{uuid.uuid4().hex[:6]}"
    rjob = _to_remote(s3_remote, job, tag)
    out = f"{s3_remote.root}/{tag}/out"
    job_file = _job_file(tmp_path / "job.json", rjob, [out + "/instructions", out + "/chat"])
    assert main(["build", job_file, *s3_remote.options]) == 0
    shown = capsys.readouterr()
    total = sum(os.path.getsize(f) for f in job["files"])
    lines = [line for line in shown.err.splitlines() if line.startswith("[unit-build] ")]
    assert lines, shown.err
    assert lines[-1].startswith(f"[unit-build] {progress.format_size(total)} / {progress.format_size(total)} "
                                f"(100.0%), blocks ")
    summary = [line for line in shown.out.splitlines() if line.startswith("[unit-build] finished in ")]
    assert len(summary) == 1 and f"{progress.format_size(total)} read at" in summary[0]
    on_store = sum(len(b) for d in ("instructions", "chat") for b in s3_remote.download_tree(f"{out}/{d}").values())
    assert summary[0].endswith(f"tokens/s, {progress.format_size(on_store)} on disk")


# --------------------------------------------------------------------------- input listing


def _input_requests(requests, folder_key: str) -> tuple:
    """The build's listings of ``folder_key`` (not the one-key access probe) and its
    HEADs of objects below it, from the server's log."""
    from urllib.parse import parse_qs, unquote, urlsplit

    listings, heads = 0, []
    for method, target in requests:
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        prefix = query.get("prefix", [None])[0]
        if method == "GET" and prefix is not None and prefix.startswith(folder_key) \
                and query.get("max-keys") != ["1"]:
            listings += 1
        elif method == "HEAD" and unquote(parts.path).lstrip("/").startswith(f"{BUCKET}/{folder_key}"):
            heads.append(unquote(parts.path))
    return listings, heads


def test_a_build_lists_its_inputs_once(s3_remote, tmp_path):
    """A pattern's folder is listed once by the whole launcher (expansion, checks, local
    mode, progress total, block list), and a few named files are asked for once each,
    not once per step; publishing asks once more, to check that no input changed under
    the build (``publish._changed_input``). The output is that of the same files built
    locally."""
    rng = random.Random(11)
    local_in = tmp_path / "in"
    files = [write_jsonl(local_in / f"part-{i:03d}.jsonl", textgen.instruction_records(rng, 6)) for i in range(24)]
    named = [write_jsonl(tmp_path / "few" / f"named-{i}.jsonl", textgen.instruction_records(rng, 5)) for i in range(3)]
    tag = f"listing-{uuid.uuid4().hex[:6]}"
    for f in files:
        s3_remote.upload(f, f"{tag}/in/{Path(f).name}")
    remote_named = [s3_remote.upload(f, f"{tag}/few/{Path(f).name}") for f in named]
    tokenizer = s3_remote.upload(str(TESTDATA / "sp_unigram.model"), f"{tag}/tok/sp_unigram.model")
    job = dict(fields=[["instruction", "input", "output"]], templates=["{instruction}\n{input}\n{output}"],
               tokenizer_kind=SP, sizes=[[48, 96]], samples_per_shard=[16], on_overflow="extend")
    want = tmp_path / "local"
    run_pipeline(files=files + named, tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
                 output_dirs=[str(want)], block_size=1024, **job)

    got = tmp_path / "remote"
    key = f"{s3_remote.root[len('s3://'):]}/{tag}".split("/", 1)[1]
    before = len(s3_remote.requests())
    run_pipeline(files=[f"{s3_remote.root}/{tag}/in/part-*.jsonl", *remote_named], tokenizer_files=[tokenizer],
                 output_dirs=[str(got)], block_size=1024, options=s3_remote.options, **job)
    during = s3_remote.requests()[before:]
    assert _input_requests(during, f"{key}/in/")[0] == 2                 # launch, and the check at publish
    listings, heads = _input_requests(during, f"{key}/few/")
    assert listings == 0 and len(heads) == 2 * len(named)   # one HEAD each: size, and so existence; again at publish

    shards = sorted(p.relative_to(want).as_posix() for p in want.rglob("*.bin"))
    assert shards and shards == sorted(p.relative_to(got).as_posix() for p in got.rglob("*.bin"))
    assert all((want / name).read_bytes() == (got / name).read_bytes() for name in shards)

    # The plan command lists them once too (its check, and the blocks it tokenizes).
    from mintdim_beam.cli.commands import main

    plan_job = dict(job, files=[f"{s3_remote.root}/{tag}/in/part-*.jsonl", *remote_named],
                    tokenizer_files=[tokenizer], on_template_unk="abort", on_bad_record="abort")
    job_file = _job_file(tmp_path / "job.json", plan_job, [str(tmp_path / "planned")])
    before = len(s3_remote.requests())
    assert main(["plan", job_file, *s3_remote.options]) == 0
    during = s3_remote.requests()[before:]
    assert _input_requests(during, f"{key}/in/")[0] == 1
    listings, heads = _input_requests(during, f"{key}/few/")
    assert listings == 0 and len(heads) == len(named)

    # Asked for in one round (one HEAD each), a missing named file is still the
    # missing-file error naming it, before anything is written.
    missing = f"{s3_remote.root}/{tag}/few/named-9.jsonl"
    with pytest.raises(MintDimFileNotFoundError) as info:
        run_pipeline(files=[*remote_named[:2], missing, remote_named[2]], tokenizer_files=[tokenizer],
                     output_dirs=[str(tmp_path / "never")], options=s3_remote.options, **job)
    assert info.value.context == "source" and info.value.path == missing
    assert missing in str(info.value) and "[vietnam]" in str(info.value)
    assert not (tmp_path / "never").exists()
