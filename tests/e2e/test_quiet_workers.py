"""``--quiet`` (and ``run(quiet=True)``) holds with worker processes: the local runner's
workers start with ``mintdim_beam.beam.local_workers`` as their entry point, so their
log records reach the user only through the launcher's logging (Beam's own worker
command printed every INFO record of each worker on stderr), and a quiet build in a
script that configured no logging prints nothing at all, Beam's import warning included.
The workers' output is the in-memory build's, byte for byte.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

from conftest import DEMO_DIR, assert_same_outputs

DEMO = str(DEMO_DIR)
PROCESSES = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


def _python(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_a_quiet_build_with_worker_processes_prints_no_log_line(tmp_path):
    done = _python(["-m", "mintdim_beam.cli.commands", "demo", str(tmp_path / "multi"), "--quiet", *PROCESSES],
                   tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "[unit-build] done output=" in done.stdout
    shown = _python(["-m", "mintdim_beam.cli.commands", "demo", str(tmp_path / "info"), "--quiet", "--log-level",
                     "INFO", *PROCESSES], tmp_path)
    # the workers ran and their records came through the launcher's logging, at its level
    assert shown.returncode == 0 and "Worker: " in shown.stderr
    assert "INFO:apache_beam.runners.worker" not in shown.stderr
    single = _python(["-m", "mintdim_beam.cli.commands", "demo", str(tmp_path / "one"), "--quiet"], tmp_path)
    assert single.returncode == 0 and single.stderr == ""
    for name in ("instructions", "chat_vi"):
        assert_same_outputs(tmp_path / "multi" / name, tmp_path / "one" / name)


SCRIPT = textwrap.dedent("""
    import sys
    from mintdim_beam import pipeline

    job = (pipeline("unit-build").source.jsonl(files=[sys.argv[1]], fields=[["instruction", "input", "output"]],
                                               templates=["{instruction}\\n{input}\\n{output}"])
           .tokenizer.sentencepiece(files=[sys.argv[2]]).units(sizes=[[64, 128, 256]], build_batch=[64])
           .output.dir(sys.argv[3], samples_per_shard=[64]))
    job.run(on_overflow="truncate", on_template_unk="continue", quiet=True, echo=lambda *a: None,
            options=sys.argv[4:])
    import logging
    assert not logging.getLogger().handlers, logging.getLogger().handlers   # as the script left it
    print("built")
""")


def test_a_quiet_build_from_python_prints_nothing(tmp_path):
    (tmp_path / "job.py").write_text(SCRIPT)
    for name, flags in (("one", []), ("multi", PROCESSES)):
        done = _python(["job.py", os.path.join(DEMO, "instructions.jsonl"), os.path.join(DEMO, "demo.model"),
                        str(tmp_path / name), *flags], tmp_path)
        assert done.returncode == 0, done.stderr
        assert (done.stdout, done.stderr) == ("built\n", "")
    assert_same_outputs(tmp_path / "one", tmp_path / "multi")


def test_silenced_touches_only_an_unconfigured_root_logger_and_only_while_quiet():
    from mintdim_beam.launch.quiet_logs import silenced

    root = logging.getLogger()
    saved = root.handlers[:]
    try:
        root.handlers = []
        with silenced(True):
            assert [type(h) for h in root.handlers] == [logging.NullHandler]
        assert root.handlers == []
        with silenced(False):
            assert root.handlers == []
        mine = logging.StreamHandler()
        root.handlers = [mine]
        with silenced(True):
            assert root.handlers == [mine]
    finally:
        root.handlers = saved


def test_worker_processes_gives_the_runner_its_entry_point_and_restores_the_mode():
    from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions

    from mintdim_beam.beam import local_workers

    opts = PipelineOptions(PROCESSES)
    with local_workers.worker_processes(opts) as runner:
        assert type(runner).__name__ == "FnApiRunner"
        assert opts.view_as(DirectOptions).direct_running_mode == "in_memory"
        assert local_workers.command().endswith("-m mintdim_beam.beam.local_workers")
    assert opts.view_as(DirectOptions).direct_running_mode == "multi_processing"
    assert not logging.getLogger(local_workers._FN_RUNNER_LOG).filters
