"""A runner that starts its own job service without it is refused before anything is claimed.

Prism needs its binary, Flink and Spark their job server jar and Java. Beam resolves
them only once the pipeline runs, after the launcher has claimed the outputs: the build
then died with a traceback and left its outputs marked failed, so the same command with
the right flag refused the now non-empty directories. These need no engine (the paths
given do not exist) and run in the default suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_pipeline
from mintdim_beam.errors import PipelineValidationError
from runner_engines import cli
from runner_jobs import job_file, make_job, outputs

MISSING = {
    "prism": ["--runner=PrismRunner", "--prism_location=/nonexistent/prism"],
    "flink": ["--runner=FlinkRunner", "--flink_master=[local]", "--flink_job_server_jar=/nonexistent/flink.jar"],
    "spark": ["--runner=SparkRunner", "--spark_job_server_jar=/nonexistent/spark.jar"],
}


@pytest.mark.parametrize("runner", sorted(MISSING))
def test_a_missing_runner_service_is_refused_before_the_outputs_are_claimed(tmp_path, runner):
    job = make_job(tmp_path)
    outs = outputs(tmp_path, runner)
    with pytest.raises(PipelineValidationError) as err:
        run_pipeline(output_dirs=outs, options=MISSING[runner], **job)
    text = str(err.value)
    assert MISSING[runner][-1].split("=")[0] in text and "/nonexistent/" in text
    for out in outs:
        assert not Path(out).exists() or not any(Path(out).iterdir()), f"{out} was written"
    # Nothing claimed: the same outputs build at once on the local runner.
    run_pipeline(output_dirs=outs, **job)
    assert all((Path(out) / "manifest.json").is_file() for out in outs)


def test_the_cli_refuses_a_missing_prism_binary_with_the_job_error_status(tmp_path):
    job = make_job(tmp_path)
    outs = outputs(tmp_path, "cli")
    done = cli("build", job_file(tmp_path, job, outs), *MISSING["prism"])
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "PipelineValidationError" in done.stderr and "--prism_location" in done.stderr
    assert not Path(outs[0]).exists()
