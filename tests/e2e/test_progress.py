"""Progress of a build: the pure formatting and display (fake clock and stream), the
local watcher of spills, the remote runners' polling (a stand-in result), and real
builds: progress lines on a non-terminal stderr, none with ``--quiet``, the same
output bytes either way, and the ``mintdim`` counters of an in-memory build."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import sys
import time

import pytest
from apache_beam.metrics.execution import MetricKey, MetricResult
from apache_beam.metrics.metricbase import MetricName
from apache_beam.runners.runner import PipelineState

from conftest import input_sizes, TESTDATA, OutputDir, assert_same_outputs, run_pipeline, write_jsonl
from mintdim_beam.core.blocks import plan_groups
from mintdim_beam.launch import build_progress
from mintdim_beam.launch import progress
from mintdim_beam.core.block_result import read_spill_header, spill_header
from mintdim_beam.cli.commands import main
from mintdim_beam.core.block_result import Figures
from mintdim_beam.launch.progress import ProgressDisplay

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

TOTAL = Figures(bytes=200_000_000, blocks=50)


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


# --------------------------------------------------------------------------- formatting


def test_sizes_counts_and_durations_read_as_a_person_reads_them():
    assert [progress.format_size(n) for n in (0, 999, 1000, 12_345_678, 1_070_000_000, 456_000_000)] == [
        "0 B", "999 B", "1 kB", "12.3 MB", "1.07 GB", "456 MB"]
    assert [progress.format_count(n) for n in (7, 12_300, 4_560_000, 123_456)] == ["7", "12.3k", "4.56M", "123k"]
    assert [progress.format_duration(s) for s in (0, 7.4, 65, 3599, 7380)] == ["0s", "7s", "1m05s", "59m59s",
                                                                               "2h03m"]
    assert [progress.format_rate_mb(b) for b in (250_000, 12_340_000, 456_000_000)] == [
        "0.25 MB/s", "12.3 MB/s", "456 MB/s"]


def test_eta_is_the_average_rate_so_far_and_unknown_before_anything_is_done():
    assert progress.eta_seconds(25, 100, 10.0) == 30.0
    assert progress.eta_seconds(100, 100, 10.0) == 0.0
    assert progress.eta_seconds(0, 100, 10.0) is None
    assert progress.eta_seconds(10, 100, 0.0) is None


def test_progress_line_has_bytes_blocks_percent_rates_and_eta():
    line = progress.progress_line(Figures(50_000_000, 12, 40_000, 9_000_000), TOTAL, 10.0)
    assert line == ("[unit-build] 50 MB / 200 MB (25.0%), blocks 12/50, 5.0 MB/s, 4k samples/s, ETA 30s")
    done = progress.progress_line(Figures(200_000_000, 50, 160_000, 1), TOTAL, 40.0)
    assert done.endswith("(100.0%), blocks 50/50, 5.0 MB/s, 4k samples/s, encoded, writing outputs")
    assert progress.progress_line(Figures(), TOTAL, 0.0).endswith("0 samples/s, ETA -")


def test_summary_and_counters_lines():
    assert progress.summary_line(125.0, 1_000_000_000, 250_000_000, 2_100_000_000) == (
        "[unit-build] finished in 2m05s: 1 GB read at 8.0 MB/s, 2M tokens/s, 2.1 GB on disk")
    assert progress.counters_line({"tokens": 5, "samples": 3, "blocks_done": 2, "bytes_read": 9, "x": 1}) == (
        "[unit-build] counters: bytes_read=9 blocks_done=2 samples=3 tokens=5 x=1")


def test_summary_of_a_runner_without_counters_shows_the_planned_bytes_not_a_false_zero(tmp_path):
    """The Dask runner reports no counters: the summary takes the bytes the launcher
    planned (every one was read by a finished build), or says the size is unknown."""
    from mintdim_beam.launch.launcher import BuildResult, OutputResult

    out = tmp_path / "out"
    out.mkdir()
    (out / "stats.json").write_bytes(b"x" * 2_100)
    result = BuildResult(outputs=(OutputResult(str(out), {"total_tokens": 250_000}),), counters={})
    lines = build_progress.closing_lines(result, "DaskRunner", 125.0, planned_bytes=1_000_000_000)
    assert lines == ["[unit-build] finished in 2m05s: 1 GB read at 8.0 MB/s, 2k tokens/s, 2.1 kB on disk"]
    unknown = build_progress.closing_lines(result, "DaskRunner", 125.0)
    assert unknown == ["[unit-build] finished in 2m05s: input size unknown, 2k tokens/s, 2.1 kB on disk"]
    assert progress.summary_line(125.0, None, 250_000, 2_100) == unknown[0]


def test_figures_round_trip_through_the_spill_file_format():
    f = Figures(4_194_304, 1, 1234, 56789)
    assert Figures.from_json(f.to_json()) == f
    assert f + Figures(1, 0, 1, 1) == Figures(4_194_305, 1, 1235, 56790)


# --------------------------------------------------------------------------- display


def test_plain_display_writes_a_line_at_most_every_interval_and_one_when_every_block_is_done():
    clock, out = FakeClock(), io.StringIO()
    display = ProgressDisplay(out, TOTAL, interactive=False, interval=10.0, clock=clock)
    for t, blocks in ((0.5, 1), (5.0, 2), (10.5, 3), (12.0, 4), (19.0, 5), (21.0, 6)):
        clock.now = 100.0 + t
        display.update(Figures(blocks * 4_000_000, blocks, blocks * 100, 0))
    lines = out.getvalue().splitlines()
    assert [line.split("blocks ")[1].split(",")[0] for line in lines] == ["3/50", "6/50"]
    clock.now = 122.0
    display.update(Figures(200_000_000, 50, 5000, 0))     # every block done: at once
    clock.now = 123.0
    display.update(Figures(200_000_000, 50, 5000, 0))     # and only once
    clock.now = 140.0
    display.update(Figures(8_000_000, 2, 200, 0))          # spills already removed: never less
    display.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "(100.0%), blocks 50/50" in lines[2]
    assert "\r" not in out.getvalue()


def test_terminal_display_redraws_one_line_and_ends_it_on_close():
    clock, out = FakeClock(), io.StringIO()
    display = ProgressDisplay(out, TOTAL, interactive=True, clock=clock)
    clock.now += 1
    display.update(Figures(100_000_000, 25, 0, 0))
    clock.now += 0.2
    display.update(Figures(110_000_000, 26, 0, 0))        # sooner than the redraw interval
    clock.now += 1
    display.update(Figures(120_000_000, 30, 0, 0))
    display.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    first, second = text.split("\r")[1:]
    assert "blocks 25/50" in first and "blocks 30/50" in second
    assert len(second.rstrip("\n")) >= len(first)         # the longer old line is blanked out


def test_display_of_a_stream_that_is_not_a_terminal_is_plain():
    assert ProgressDisplay(io.StringIO(), TOTAL)._interactive is False


# --------------------------------------------------------------------------- watching


def _spill(spills, name: str, figures: Figures, mtime=None) -> None:
    """A block's spill as the encoder writes it: the header, then its sections."""
    sections = {"unit_8": b"\x01" * 48, "meta": b"pickled", "hashes": b"\x02" * 24}
    header, places = spill_header({k: len(v) for k, v in sections.items()}, figures.to_dict())
    data = header + b"".join(sections.values())
    for key, value in sections.items():
        assert data[places[key][0]:places[key][0] + places[key][1]] == value
    os.makedirs(spills, exist_ok=True)
    path = spills / f"{name}.spill"
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_spill_header_places_sections_after_itself_and_reads_back():
    sections = {"unit_64": 10 ** 7, "overflow": 3, "meta": 0, "hashes": 99}
    header, places = spill_header(sections, Figures(1, 2, 3, 4).to_dict())
    assert places == {"unit_64": (len(header), 10 ** 7), "overflow": (len(header) + 10 ** 7, 3),
                      "meta": (len(header) + 10 ** 7 + 3, 0), "hashes": (len(header) + 10 ** 7 + 3, 99)}
    read = read_spill_header(header + b"rest")
    assert Figures.from_dict(read["progress"]) == Figures(1, 2, 3, 4)
    assert {k: tuple(v) for k, v in read["sections"].items()} == places
    with pytest.raises(ValueError):
        read_spill_header(header[:-1])


def test_watcher_sums_each_finished_spill_once_and_skips_old_and_unfinished_ones(tmp_path):
    spills = tmp_path / "blocks"
    since = time.time() - 60
    watcher = progress.SpillWatcher([str(spills), str(tmp_path / "absent")], since)
    assert watcher.poll() == Figures()
    _spill(spills, "f00000-b000000", Figures(10, 1, 3, 30))
    _spill(spills, "f00000-b000001", Figures(10, 1, 4, 40), mtime=since - 3600)   # a previous build's
    (spills / "f00001-b000000.spill.tmp-0123").write_bytes(b"\x40")                # still being written
    (spills / "f00002-b000000.spill").write_bytes(b"\x40\0\0\0\0\0\0\0{")          # cut short
    assert watcher.poll() == Figures(10, 1, 3, 30)
    _spill(spills, "f00001-b000000", Figures(5, 1, 1, 10))
    _spill(spills, "f00002-b000000", Figures(0, 0, 2, 20))
    assert watcher.poll() == Figures(15, 2, 6, 60)
    assert watcher.poll() == Figures(15, 2, 6, 60)


class _BrokenWatcher:
    def poll(self):
        raise OSError("the staging area went away")


def test_an_error_while_watching_stops_the_display_and_nothing_else():
    out = io.StringIO()
    display = ProgressDisplay(out, TOTAL, interactive=True)
    with progress.watching(_BrokenWatcher(), display, period=0.01):
        time.sleep(0.2)
        assert display.closed
    assert out.getvalue() == ""


# --------------------------------------------------------------------------- remote runners


class _LiveResult:
    """A runner result whose state moves on its own (as Dataflow's and Flink's do)."""

    def __init__(self, states, samples):
        self._states = list(states)
        self._samples = list(samples)
        self.waited = False

    @property
    def state(self):
        return self._states.pop(0) if len(self._states) > 1 else self._states[0]

    def metrics(self):
        return self

    def query(self, _filter):
        key = MetricKey("EncodeBlocks", MetricName("mintdim", "samples"))
        value = self._samples.pop(0) if len(self._samples) > 1 else self._samples[0]
        return {"counters": [MetricResult(key, value, value)], "distributions": [], "gauges": []}

    def wait_until_finish(self):
        self.waited = True
        return PipelineState.DONE


def test_a_live_runner_is_polled_for_its_counters_then_waited_on():
    shown = []
    result = _LiveResult([PipelineState.RUNNING, PipelineState.RUNNING, PipelineState.DONE], [10, 25])
    state = build_progress.wait(result, "DataflowRunner", shown.append, period=0.01)
    assert state == PipelineState.DONE and result.waited
    assert shown == [{"samples": 10}, {"samples": 25}, {"samples": 25}]   # and once more at the end
    assert build_progress.counters(result) == {"samples": 25}


def test_a_portable_runners_metrics_are_asked_for_once_the_job_is_over():
    """Its result keeps the first metrics it is asked for: polled while running, the
    final counters would be stale."""
    shown = []
    result = _LiveResult([PipelineState.RUNNING, PipelineState.DONE], [25, 99])
    assert build_progress.wait(result, "FlinkRunner", shown.append, period=0.01) == PipelineState.DONE
    assert shown == [{"samples": 25}] and result.waited


def test_a_runner_whose_state_does_not_move_is_only_waited_on():
    shown = []
    result = _LiveResult([PipelineState.RUNNING], [10])   # Dask's result: RUNNING until waited on
    assert build_progress.wait(result, "DaskRunner", shown.append, period=0.01) == PipelineState.DONE
    assert shown == [{"samples": 10}] and result.waited   # the counters it reports at the end


# --------------------------------------------------------------------------- real builds


def _corpus(tmp_path, rows: int = 400) -> tuple[str, str]:
    """A plain JSONL file of several 1 KiB blocks and a gzip file of several streamed ones."""
    rng = random.Random(5)
    records = textgen.instruction_records(rng, rows)
    plain = write_jsonl(tmp_path / "data" / "plain.jsonl", records[: rows // 2])
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records[rows // 2:])
    packed = tmp_path / "data" / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return plain, str(packed)


def _job_file(tmp_path, files, out: str) -> str:
    job = {"source": {"files": files, "fields": [["instruction", "input", "output"]],
                      "templates": ["{instruction}\n{input}\n{output}"]},
           "tokenizer": {"sentencepiece": [str(TESTDATA / "sp_unigram.model")]},
           "units": {"sizes": [[32, 64, 128]], "build_batch": [8]},
           "output": {"dir": str(tmp_path / out), "samples_per_shard": [64]},
           "run": {"on_overflow": "truncate", "on_template_unk": "continue", "block_size": 1024}}
    path = tmp_path / f"{out}.json"
    path.write_text(json.dumps(job))
    return str(path)


@pytest.mark.parametrize("mode", [[], ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]],
                         ids=["in_memory", "multi_processing"])
def test_a_build_shows_progress_on_a_plain_stderr_and_none_when_quiet(tmp_path, capsys, mode):
    plain, packed = _corpus(tmp_path)
    planned = -(-os.path.getsize(plain) // 1024) + 1
    total = os.path.getsize(plain) + os.path.getsize(packed)
    assert main(["build", _job_file(tmp_path, [plain, packed], "shown"), *mode]) == 0
    shown = capsys.readouterr()
    lines = [line for line in shown.err.splitlines() if line.startswith("[unit-build] ")]
    assert lines, shown.err
    assert lines[-1].startswith(f"[unit-build] {progress.format_size(total)} / {progress.format_size(total)} "
                                f"(100.0%), blocks {planned}/{planned}, ")
    assert "\r" not in shown.err
    summary = [line for line in shown.out.splitlines() if line.startswith("[unit-build] finished in ")]
    assert len(summary) == 1 and f"{progress.format_size(total)} read at" in summary[0]
    on_disk = sum(p.stat().st_size for p in (tmp_path / "shown").rglob("*") if p.is_file())
    assert summary[0].endswith(f"tokens/s, {progress.format_size(on_disk)} on disk")

    assert main(["build", _job_file(tmp_path, [plain, packed], "quiet"), "--quiet", *mode]) == 0
    quiet = capsys.readouterr()
    assert not [line for line in quiet.err.splitlines() if line.startswith("[unit-build]")]
    assert [line for line in quiet.out.splitlines() if "shard=" in line] == [
        line for line in shown.out.splitlines() if "shard=" in line]
    assert_same_outputs(tmp_path / "shown", tmp_path / "quiet")


def test_an_in_memory_build_counts_bytes_blocks_samples_and_tokens(tmp_path):
    plain, packed = _corpus(tmp_path)
    result = run_pipeline(files=[plain, packed], fields=[["instruction", "input", "output"]],
                          templates=["{instruction}\n{input}\n{output}"], tokenizer_kind="sentencepiece",
                          tokenizer_files=[str(TESTDATA / "sp_unigram.model")], sizes=[[32, 64, 128]],
                          samples_per_shard=[64], output_dirs=str(tmp_path / "out"), on_overflow="truncate",
                          on_template_unk="continue", build_batch=[8], block_size=1024)
    stats = OutputDir(tmp_path / "out").stats
    counters = result.counters
    assert counters["bytes_read"] == os.path.getsize(plain) + os.path.getsize(packed)
    assert counters["blocks_done"] == -(-os.path.getsize(plain) // 1024) + 1   # the .gz is one planned block
    assert counters["samples"] == stats["total_samples"] == 400
    assert counters["tokens"] == stats["total_tokens"]
    assert counters["shards"] == stats["shards"]


def _config(tmp_path, files):
    from mintdim_beam import pipeline

    return (pipeline("unit-build").source.jsonl(files=files, fields=[["instruction", "input", "output"]],
                                                templates=["{instruction}\n{input}\n{output}"])
            .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
            .units(sizes=[[32, 64, 128]], build_batch=[8])
            .output.dir(str(tmp_path / "out"), samples_per_shard=[64])
            .config(on_overflow="truncate", on_template_unk="continue", block_size=1024))


def test_a_live_remote_runners_counters_are_shown_against_the_plans_totals(tmp_path):
    plain, packed = _corpus(tmp_path)
    config = _config(tmp_path, [plain, packed])
    planned = -(-os.path.getsize(plain) // 1024) + 1
    total = os.path.getsize(plain) + os.path.getsize(packed)
    out = io.StringIO()
    groups = plan_groups(config, input_sizes(config))
    shown = build_progress.for_build(config, "FlinkRunner", False, time.time(), stream=out, groups=groups)
    with shown.context:
        shown.on_counters({"bytes_read": total, "blocks_done": planned, "samples": 400, "tokens": 9})
    assert out.getvalue().startswith(f"[unit-build] {progress.format_size(total)} / {progress.format_size(total)} "
                                     f"(100.0%), blocks {planned}/{planned}, ")
    for runner, quiet in (("FlinkRunner", True), ("DaskRunner", False)):
        shown = build_progress.for_build(config, runner, quiet, time.time(), stream=out, groups=groups)
        assert shown.on_counters is None


@pytest.mark.remote   # the portable runner and a worker pool, as in tests/remote/test_portable.py
def test_a_portable_runner_build_is_polled_and_its_counters_are_printed(tmp_path, capsys):
    """The Flink/Spark path: PortableRunner and an external worker pool (as in
    test_portable.py); its result's state and metrics move while the job runs."""
    import subprocess

    from remote_fixtures import worker_pool_env
    from test_portable import _free_port, _stop, _wait_for_port

    plain, packed = _corpus(tmp_path, rows=200)
    config = _config(tmp_path, [plain, packed])
    planned = -(-os.path.getsize(plain) // 1024) + 1
    total = os.path.getsize(plain) + os.path.getsize(packed)
    port = _free_port()
    pool = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=worker_pool_env())
    echoed = []
    try:
        _wait_for_port(port, pool, "the worker pool")
        from mintdim_beam.launch.launcher import launch

        result = launch(config, runner="PortableRunner", echo=echoed.append,
                        options=["--job_endpoint=embed", "--environment_type=EXTERNAL",
                                 f"--environment_config=localhost:{port}"])
    finally:
        _stop(pool)
    stats = result.outputs[0].stats
    assert {k: result.counters.get(k) for k in ("bytes_read", "blocks_done", "samples", "tokens")} == {
        "bytes_read": total, "blocks_done": planned, "samples": stats["total_samples"],
        "tokens": stats["total_tokens"]}
    assert progress.counters_line(result.counters) in echoed
    assert any(line.startswith("[unit-build] finished in ") for line in echoed)
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[unit-build] ")]
    assert err and err[-1].startswith(f"[unit-build] {progress.format_size(total)} / "
                                      f"{progress.format_size(total)} (100.0%), blocks {planned}/{planned}, ")
