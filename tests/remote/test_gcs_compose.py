"""Publishing on ``gs://``: index parts joined by GCS ``compose`` requests, in a tree.

The plan of compose requests is checked on its own (order, at most 32 sources a
request). The requests themselves run against ``gcp-storage-emulator`` (a local GCS
JSON API, started in this process) through google-cloud-storage: the index parts of a
local ``index_layout: parts`` build are uploaded, composed with
``compose.concatenate``, and the result must be byte for byte the index file of the
same build with ``index_layout: file``, its sha256 the one ``SHA256SUMS`` lists, and
no intermediate object left behind. Beam's GCS file system takes no endpoint from its
options, so a whole build cannot be pointed at the emulator: the client is handed to
``concatenate`` directly. Skips when google-cloud-storage or the emulator is missing.
"""

from __future__ import annotations

import hashlib
import random
import socket

import pytest

from conftest import TESTDATA, run_pipeline, write_jsonl

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

BUCKET = "mintdim-compose"
INDEXES = ("sample_index.jsonl", "unk_index.jsonl", "overflow_index.jsonl", "bad_record_index.jsonl")


def _simulate(count: int, fan_in: int) -> tuple:
    """Run the plan on lists of source numbers: ``(result, requests, largest request)``."""
    from mintdim_beam.storage.compose import plan_compose

    current = [[i] for i in range(count)]
    requests, largest = 0, 0
    levels = plan_compose(count, fan_in)
    for depth, groups in enumerate(levels):
        assert [a for a, _ in groups] == list(range(0, len(current), fan_in))     # every object, in order
        assert groups[-1][1] == len(current)
        following = []
        for a, b in groups:
            if b - a > 1 or depth == len(levels) - 1:
                requests += 1
                largest = max(largest, b - a)
            following.append([i for obj in current[a:b] for i in obj])
        current = following
    assert len(current) == (1 if count else 0)
    return (current[0] if current else []), requests, largest, len(levels)


@pytest.mark.parametrize("count", [1, 2, 31, 32, 33, 63, 64, 1000, 1024, 1025, 32769])
def test_compose_plan_keeps_order_with_at_most_32_sources_a_request(count):
    joined, requests, largest, levels = _simulate(count, 32)
    assert joined == list(range(count))
    assert largest <= 32
    # Each request turns up to 32 objects into one: about count / 31 of them.
    assert requests <= -(-(count - 1) // 31) + levels
    depth = 1
    while 32 ** depth < count:
        depth += 1
    assert levels == depth


def test_compose_plan_with_a_small_fan_in_builds_a_deeper_tree():
    from mintdim_beam.storage.compose import plan_compose

    assert plan_compose(0) == []
    assert plan_compose(5, 2) == [[(0, 2), (2, 4), (4, 5)], [(0, 2), (2, 3)], [(0, 2)]]
    joined, _, largest, levels = _simulate(100, 3)
    assert joined == list(range(100)) and largest <= 3 and levels == 5
    with pytest.raises(ValueError, match="at least 2 objects"):
        plan_compose(4, 1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def gcs():
    """A google-cloud-storage client of an in-memory GCS emulator with one bucket."""
    storage = pytest.importorskip("google.cloud.storage")
    pytest.importorskip("apache_beam.io.gcp.gcsio")
    emulator = pytest.importorskip("gcp_storage_emulator.server")
    from google.auth.credentials import AnonymousCredentials

    port = _free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    try:
        yield storage.Client(project="mintdim", credentials=AnonymousCredentials(),
                             client_options={"api_endpoint": f"http://127.0.0.1:{port}"})
    finally:
        server.stop()


def _names(client, prefix: str) -> list:
    return sorted(b.name for b in client.list_blobs(BUCKET, prefix=prefix))


def _local_builds(tmp_path) -> tuple:
    """The same job built locally with each index layout, in blocks small enough for
    more than 32 parts an index."""
    rng = random.Random(11)
    rows = textgen.instruction_records(rng, 400)
    rows.insert(50, dict(rows[7]))
    job = dict(files=[write_jsonl(tmp_path / "in.jsonl", [*rows[:200], '{"broken": ', *rows[200:]])],
               fields=[["instruction", "input", "output"]], templates=["{instruction}\n{input}\n{output}"],
               tokenizer_kind="sentencepiece", tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
               sizes=[[32, 64]], samples_per_shard=[64], on_overflow="truncate", on_bad_record="skip",
               on_template_unk="continue", block_size=2048)
    single, parts = tmp_path / "file", tmp_path / "parts"
    run_pipeline(output_dirs=[str(single)], **job)
    run_pipeline(output_dirs=[str(parts)], index_layout="parts", **job)
    return single, parts


def test_gcs_compose_gives_the_index_file_of_a_local_build(gcs, tmp_path):
    """Parts composed on GCS (one level, and a tree of 4-source requests) are the
    local build's index file byte for byte; the sha256 fed is SHA256SUMS's."""
    from mintdim_beam.storage import compose

    single, parts = _local_builds(tmp_path)
    listed = dict(reversed(line.split("  ", 1)) for line in (single / "SHA256SUMS").read_text().splitlines())
    bucket = gcs.bucket(BUCKET)
    for name in INDEXES:
        local_parts = sorted((parts / name[:-len(".jsonl")]).glob("part-*.jsonl"))
        assert len(local_parts) > 32
        sources = []
        for p in local_parts:
            bucket.blob(f"build/staging/{name}/{p.name}").upload_from_filename(str(p))
            sources.append(f"gs://{BUCKET}/build/staging/{name}/{p.name}")
        want = (single / name).read_bytes()
        for fan_in, target in ((32, f"build/out/{name}"), (4, f"build/tree/{name}")):
            sha = hashlib.sha256()
            size = compose.concatenate(f"gs://{BUCKET}/{target}", sources, sha=sha, gcs=gcs, max_compose=fan_in)
            assert size == len(want)
            assert bucket.blob(target).download_as_bytes() == want
            assert sha.hexdigest() == listed[name] == hashlib.sha256(want).hexdigest()
        # No intermediate object is left next to the parts.
        assert _names(gcs, f"build/staging/{name}/") == [f"build/staging/{name}/{p.name}" for p in local_parts]


def test_gcs_compose_of_a_missing_part_publishes_nothing(gcs):
    from mintdim_beam.storage import compose

    bucket = gcs.bucket(BUCKET)
    sources = []
    for i in range(40):
        bucket.blob(f"missing/parts/p{i:03d}").upload_from_string(b"line %d\n" % i)
        sources.append(f"gs://{BUCKET}/missing/parts/p{i:03d}")
    sources.insert(35, f"gs://{BUCKET}/missing/parts/gone")
    with pytest.raises(FileNotFoundError, match="missing/parts/gone: no such object to concatenate"):
        compose.concatenate(f"gs://{BUCKET}/missing/out.jsonl", sources, gcs=gcs, max_compose=4)
    assert _names(gcs, "missing/") == sorted(f"missing/parts/p{i:03d}" for i in range(40))
    # None at all: an empty object; one: a copy.
    assert compose.concatenate(f"gs://{BUCKET}/missing/empty.jsonl", [], gcs=gcs) == 0
    assert bucket.blob("missing/empty.jsonl").download_as_bytes() == b""
    sha = hashlib.sha256()
    assert compose.concatenate(f"gs://{BUCKET}/missing/one.jsonl", sources[:1], sha=sha, gcs=gcs) == 7
    assert bucket.blob("missing/one.jsonl").download_as_bytes() == b"line 0\n"
    assert sha.hexdigest() == hashlib.sha256(b"line 0\n").hexdigest()


@pytest.mark.parametrize("count", [5, 18, 33, 64])
def test_gcs_compose_trees_carry_objects_between_levels(gcs, count):
    """Tree shapes where an object skips a level (a lone source, or an intermediate
    object of the level before) keep it until it is composed, and keep the order."""
    from mintdim_beam.storage import compose

    bucket = gcs.bucket(BUCKET)
    blobs = [b"%d-%s\n" % (i, b"x" * (i % 7)) for i in range(count)]
    sources = []
    for i, data in enumerate(blobs):
        bucket.blob(f"tree{count}/parts/p{i:03d}").upload_from_string(data)
        sources.append(f"gs://{BUCKET}/tree{count}/parts/p{i:03d}")
    sha = hashlib.sha256()
    assert compose.concatenate(f"gs://{BUCKET}/tree{count}/out", sources, sha=sha, gcs=gcs,
                               max_compose=4) == sum(map(len, blobs))
    assert bucket.blob(f"tree{count}/out").download_as_bytes() == b"".join(blobs)
    assert sha.hexdigest() == hashlib.sha256(b"".join(blobs)).hexdigest()
    assert _names(gcs, f"tree{count}/") == sorted([f"tree{count}/out", *(s.split("/", 3)[3] for s in sources)])
