"""Beam's Flink runner builds the same bytes as the in-memory build: embedded, then on a cluster.

The job server is Beam's ``beam-runners-flink-<flink>-job-server`` jar of the installed
Beam version, cached by ``tools/fetch_runners.sh``; the cluster is a Flink distribution
of the same Flink minor version (``tools/fetch_runners.sh flink-dist`` unpacks one from
PyPI's apache-flink packages), started from its own ``bin/jobmanager.sh`` and
``bin/taskmanager.sh`` as three processes, two TaskManagers of one slot each. Without
Java, the jar or the distribution these tests skip and say which is missing.

* ``--flink_master=[local]``: the job server runs the pipeline on a Flink mini cluster
  in its own JVM;
* ``--flink_master=localhost:<rest port>``: the job server submits it to the cluster,
  whose TaskManagers hand bundles to a Python worker pool (``--environment_type=EXTERNAL``);
  the Flink REST API must show both TaskManagers reading records for the job.
"""

from __future__ import annotations

import pytest

from conftest import assert_same_outputs, run_pipeline
from runner_engines import FlinkCluster, flink_distribution, flink_job_server_jar, flink_local_flags, stop, worker_pool
from runner_jobs import in_memory_build, make_job, outputs

pytestmark = pytest.mark.runners


@pytest.fixture(scope="module")
def flink() -> list:
    flags, missing = flink_local_flags()
    if missing:
        pytest.skip(missing)
    return flags


@pytest.fixture(scope="module")
def built(flink, tmp_path_factory):
    root = tmp_path_factory.mktemp("flink")
    job = make_job(root, "bytelevel")
    return root, job, in_memory_build(root, job)


def test_embedded_flink_gives_identical_bytes(built, flink):
    root, job, base = built
    outs = outputs(root, "flink_local")
    result = run_pipeline(output_dirs=outs, block_size=1536, build_batch=[5], options=flink, **job)
    assert result.build_info["runner"] == "FlinkRunner"
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)


def test_embedded_flink_with_an_external_worker_pool_gives_identical_bytes(built, flink, tmp_path):
    root, job, base = built
    outs = outputs(root, "flink_pool")
    flags = [f for f in flink if not f.startswith("--environment_type")]
    with open(tmp_path / "pool.log", "wb") as log:
        pool, port = worker_pool(log)
        try:
            run_pipeline(output_dirs=outs, block_size=2048, build_batch=[7],
                         options=flags + ["--environment_type=EXTERNAL", f"--environment_config=localhost:{port}"],
                         **job)
        finally:
            stop(pool)
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)


@pytest.fixture(scope="module")
def cluster(flink, tmp_path_factory):
    home = flink_distribution()
    _, version = flink_job_server_jar()
    if home is None:
        pytest.skip("no Flink distribution under the cache (tools/fetch_runners.sh flink-dist)")
    if not home.name.startswith(f"flink-{version}."):
        pytest.skip(f"the cached distribution {home.name} is not Flink {version}, the job server's")
    with FlinkCluster(home, tmp_path_factory.mktemp("flink_cluster"), taskmanagers=2) as running:
        yield running


def test_a_flink_cluster_of_two_taskmanagers_gives_identical_bytes(built, flink, cluster, tmp_path):
    root, job, base = built
    outs = outputs(root, "flink_cluster")
    flags = [f for f in flink if not f.startswith(("--environment_type", "--flink_master"))]
    with open(tmp_path / "pool.log", "wb") as log:
        pool, port = worker_pool(log)
        try:
            run_pipeline(output_dirs=outs, block_size=1024, build_batch=[3],
                         options=flags + [f"--flink_master={cluster.master}", "--environment_type=EXTERNAL",
                                          f"--environment_config=localhost:{port}"], **job)
        finally:
            stop(pool)
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)
    jobs = cluster.job_taskmanagers()
    assert len(jobs) == 1, jobs
    assert len(next(iter(jobs.values()))) == 2, f"not both TaskManagers read records: {jobs}"
