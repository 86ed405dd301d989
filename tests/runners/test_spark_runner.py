"""Beam's Spark runner builds the same bytes as the in-memory build: local mode, then a cluster.

The job server is Beam's ``beam-runners-spark-3-job-server`` jar of the installed Beam
version, cached by ``tools/fetch_runners.sh``; the cluster is a Spark 3 distribution under
the cache (``spark-3.*``: ``bin/spark-class`` and ``jars/``, as PyPI's pyspark carries
them), started as a standalone Master and two Workers, each its own process. Without
Java, the jar or the distribution these tests skip and say which is missing.
"""

from __future__ import annotations

import pytest

from conftest import assert_same_outputs, run_pipeline
from runner_engines import SparkCluster, spark_distribution, spark_local_flags, stop, worker_pool
from runner_jobs import in_memory_build, make_job, outputs

pytestmark = pytest.mark.runners


@pytest.fixture(scope="module")
def spark() -> list:
    flags, missing = spark_local_flags()
    if missing:
        pytest.skip(missing)
    return flags


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("spark")
    job = make_job(root, "bytelevel")
    return root, job, in_memory_build(root, job)


def test_spark_in_local_mode_gives_identical_bytes(built, spark):
    root, job, base = built
    outs = outputs(root, "spark_local")
    result = run_pipeline(output_dirs=outs, block_size=1536, build_batch=[5], options=spark, **job)
    assert result.build_info["runner"] == "SparkRunner"
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)


@pytest.fixture(scope="module")
def cluster(spark, tmp_path_factory):
    home = spark_distribution()
    if home is None:
        pytest.skip("no Spark 3 distribution (spark-3.*/bin/spark-class) under the cache")
    with SparkCluster(home, tmp_path_factory.mktemp("spark_cluster"), workers=2) as running:
        yield running


def test_a_spark_cluster_of_two_workers_gives_identical_bytes(built, spark, cluster, tmp_path):
    root, job, base = built
    outs = outputs(root, "spark_cluster")
    flags = [f for f in spark if not f.startswith(("--environment_type", "--spark_master_url"))]
    with open(tmp_path / "pool.log", "wb") as log:
        pool, port = worker_pool(log)
        try:
            run_pipeline(output_dirs=outs, block_size=1024, build_batch=[3],
                         options=flags + [f"--spark_master_url={cluster.master}", "--environment_type=EXTERNAL",
                                          f"--environment_config=localhost:{port}"], **job)
        finally:
            stop(pool)
    for a, b in zip(base, outs):
        assert_same_outputs(a, b)
    apps = cluster.executors_per_worker()
    assert all(apps) and len(set.intersection(*apps)) == 1, f"not both workers ran an executor: {apps}"
