"""The portable path: SDK workers started the way Flink, Spark and Dataflow start them.

A portable runner does not run DoFns in its own process: it hands each stage to an SDK
harness in a container or, with ``--environment_type=EXTERNAL``, to a worker pool
(``python -m apache_beam.runners.worker.worker_pool_main``), which is what the
``docker/flink`` recipe runs beside its task managers. Here the job goes through Beam's
``PortableRunner`` with its embedded job service and such a pool started as its own
process, so the build crosses the same Fn API boundary (gRPC data and state channels,
pickled DoFns, ``setup()`` in a fresh interpreter) as on Flink.

The Dask test starts its cluster from the ``dask scheduler`` and ``dask worker`` command
lines, as an operator does on real hosts, rather than with ``LocalCluster``.

Each build must give the same bytes as the in-memory build checked against the
reference implementation.
"""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TESTDATA, assert_same_outputs, build_and_compare, run_pipeline, write_jsonl
from remote_fixtures import worker_pool_env

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two files, two outputs, a few dozen 1 KiB blocks; built in memory and checked."""
    root = tmp_path_factory.mktemp("portable")
    rng = random.Random(7)
    rows = textgen.instruction_records(rng, 120)
    rows.insert(30, dict(rows[3]))
    rows.insert(50, '{"instruction": "broken"')
    chat = textgen.chat_records(rng, 60)
    chat.insert(20, {"prompt": "漢字 ✨", "response": "🙂"})
    job = dict(
        files=[write_jsonl(root / "instructions.jsonl", rows), write_jsonl(root / "chat.jsonl", chat)],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
                   "Người dùng: {prompt}\n\nTrợ lý: {response}"],
        tokenizer_kind="sentencepiece",
        tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
        sizes=[[32, 64, 96], [32, 64]],
        samples_per_shard=[9, 5],
        on_overflow="extend",
        on_bad_record="skip",
        on_template_unk="continue",
    )
    base = [str(root / "base" / "instructions"), str(root / "base" / "chat")]
    build_and_compare(root, output_dirs=base, block_size=1024, build_batch=[3], **job)
    return root, job, base


def _build(root: Path, job: dict, name: str, **kwargs) -> list:
    outputs = [str(root / name / "instructions"), str(root / name / "chat")]
    run_pipeline(output_dirs=outputs, **job, **kwargs)
    return outputs


def test_build_through_a_beam_worker_pool_gives_identical_bytes(corpus):
    """PortableRunner + ``--environment_type=EXTERNAL``: the Flink/Spark worker-pool path."""
    root, job, base = corpus
    port = _free_port()
    pool = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=worker_pool_env())
    try:
        _wait_for_port(port, pool, "the worker pool")
        outputs = _build(root, job, "pool", block_size=2048, build_batch=[5], runner="PortableRunner",
                         options=["--job_endpoint=embed", "--environment_type=EXTERNAL",
                                  f"--environment_config=localhost:{port}"])
    finally:
        _stop(pool)
    for a, b in zip(base, outputs):
        assert_same_outputs(a, b)


def test_build_on_a_dask_cluster_started_from_the_command_line(corpus):
    """``dask scheduler`` and ``dask worker`` processes, as on real hosts (not LocalCluster)."""
    pytest.importorskip("distributed")
    from apache_beam.runners.dask.dask_runner import DaskRunner

    root, job, base = corpus
    port = _free_port()
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        _wait_for_port(port, scheduler, "dask scheduler")
        worker = subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", f"tcp://127.0.0.1:{port}", "--nworkers", "2", "--nthreads", "1",
             "--no-dashboard", "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        outputs = _build(root, job, "dask_cli", block_size=1536, build_batch=[7], runner=DaskRunner(),
                         options=["--dask_client_address", f"tcp://127.0.0.1:{port}"])
    finally:
        if worker is not None:
            _stop(worker)
        _stop(scheduler)
    for a, b in zip(base, outputs):
        assert_same_outputs(a, b)
