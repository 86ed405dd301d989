"""Beam's Prism runner (the Go portable runner) builds the same bytes as the in-memory build.

Prism is built from Beam's Go module of the installed Beam version by
``tools/fetch_runners.sh`` (Go needed) and cached; without it these tests skip. Each
build crosses the Fn API boundary: pipeline protos to Prism's job service, bundles to an
SDK harness over gRPC. The harness runs in the launcher (LOOPBACK, Beam's default for
Prism), in a separate worker-pool process (EXTERNAL, what a cluster's workers do), or
behind a Prism job service started as its own process (``--runner=PortableRunner
--job_endpoint``, as a user of a long-running Prism would).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import assert_nothing_published, assert_same_outputs, run_pipeline
from runner_engines import cli, free_port, prism_binary, prism_flags, stop, wait_for_port, worker_pool
from runner_jobs import in_memory_build, job_file, make_job, outputs

pytestmark = pytest.mark.runners


@pytest.fixture(scope="module")
def prism() -> list:
    flags, missing = prism_flags()
    if missing:
        pytest.skip(missing)
    return flags


@pytest.fixture(scope="module", params=["sentencepiece", "bytelevel"])
def built(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"prism_{request.param}")
    job = make_job(root, request.param)
    return root, job, in_memory_build(root, job)


def test_prism_loopback_gives_identical_bytes(built, prism):
    root, job, base = built
    outs = outputs(root, "prism")
    result = run_pipeline(output_dirs=outs, block_size=1536, build_batch=[5], options=prism, **job)
    assert result.build_info["runner"] == "PrismRunner"
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)


def test_prism_with_an_external_worker_pool_gives_identical_bytes(built, prism, tmp_path):
    root, job, base = built
    outs = outputs(root, "prism_pool")
    with open(tmp_path / "pool.log", "wb") as log:
        pool, port = worker_pool(log)
        try:
            run_pipeline(output_dirs=outs, block_size=2048, build_batch=[7],
                         options=prism + ["--environment_type=EXTERNAL", f"--environment_config=localhost:{port}"],
                         **job)
        finally:
            stop(pool)
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)


def test_a_prism_job_service_process_gives_identical_bytes(built, prism, tmp_path):
    """Prism started on its own (``prism --job_port``), the build sent with ``PortableRunner``."""
    root, job, base = built
    port = free_port()
    outs = outputs(root, "prism_service")
    with open(tmp_path / "prism.log", "wb") as log:
        service = subprocess.Popen([str(prism_binary()), f"--job_port={port}", "--serve_http=false"],
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, service, "the Prism job service")
            result = run_pipeline(output_dirs=outs, block_size=1024, build_batch=[2], runner="PortableRunner",
                                  options=[f"--job_endpoint=localhost:{port}", "--environment_type=LOOPBACK"],
                                  **job)
        finally:
            stop(service)
    assert result.build_info["runner"] == "PortableRunner"
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)


def test_cli_build_on_prism_then_verify_with_the_tokenizer(built, prism):
    """``mintdim-beam build JOB --runner=PrismRunner --prism_location=...`` in a fresh process,
    then ``mintdim-beam verify OUT --tokenizer`` re-tokenizes every row from its source."""
    root, job, base = built
    outs = outputs(root, "prism_cli")
    done = cli("build", job_file(root, job, outs, block_size=3000), "--quiet", *prism)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"[unit-build] done output={outs[0]}" in done.stdout
    # --log-level (default ERROR) holds for Prism's job server too, whose logger Beam sets to INFO.
    assert "PrismRunner" not in done.stderr, done.stderr
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)
    again = cli("build", job_file(root, job, outputs(root, "prism_cli_info"), block_size=3000), "--quiet",
                "--log-level", "INFO", *prism)
    assert again.returncode == 0 and "INFO PrismRunner: " in again.stderr, again.stderr[-3000:]
    checked = cli("verify", *outs, "--tokenizer", "--sample", "0")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("verify OK") == 2


def test_a_bad_record_stops_a_prism_build_as_it_stops_a_local_one(built, prism):
    """The same spec error (class, file, line) and nothing published, on either runner."""
    from mintdim_beam.errors import MintDimError

    root, job, _ = built
    strict = dict(job, on_bad_record="abort")
    raised = {}
    for name, options in (("local", None), ("prism", prism)):
        outs = outputs(root, f"abort_{name}")
        with pytest.raises(MintDimError) as err:
            run_pipeline(output_dirs=outs, block_size=1024, options=options, **strict)
        raised[name] = (type(err.value).__name__, err.value.file, err.value.line)
        for out in outs:
            assert_nothing_published(out)
            assert (Path(out) / "UNIT_BUILD_FAILED.md").exists() or any(Path(out).glob("*/UNIT_BUILD_FAILED.md"))
    assert raised["prism"] == raised["local"]
    assert raised["local"][1] == job["files"][0] and raised["local"][2] == 51
