"""Same bytes on every runner: in-memory, multi-process DirectRunner and Dask.

One corpus (two files, two outputs, about a hundred 1 KiB blocks, with duplicates,
bad records, UNK characters and overflow samples) is built once and checked against
the reference implementation; then the same job runs on every runner with other
``build_batch`` and block sizes, and every output file but ``build_info.json`` must be
byte-identical. The Dask runs use a local ``dask.distributed`` cluster of worker
processes started by a fixture.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from conftest import TESTDATA, assert_same_outputs, build_and_compare, run_pipeline, write_jsonl
from mintdim_beam.cores import usable_cores

sys.path.insert(0, str(TESTDATA))
import textgen  # noqa: E402

SP = "sentencepiece"
N_WORKERS = 3


def _corpus(directory: Path) -> dict:
    """The job's files and settings; the instructions file alone spans ~60 blocks."""
    rng = random.Random(20240611)
    instructions = textgen.instruction_records(rng, 250)
    for i in range(0, 250, 41):                 # exact duplicates, across blocks
        instructions.insert(i + 7, dict(instructions[i]))
    rows = [*instructions[:100], '{"instruction": "broken"', "   ", *instructions[100:],
            textgen.EMOJI_CJK_RECORD,
            [1, 2, 3]]
    chat = textgen.chat_records(rng, 150)
    chat.insert(60, {"prompt": "漢字 ✨", "response": "🙂"})
    chat.insert(90, dict(chat[10]))
    return dict(
        files=[write_jsonl(directory / "instructions.jsonl", rows), write_jsonl(directory / "chat.jsonl", chat)],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
                   "Người dùng: {prompt}\n\nTrợ lý: {response}"],
        tokenizer_kind=SP,
        tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
        sizes=[[32, 64, 96], [32, 64]],
        samples_per_shard=[9, 5],
        on_overflow="extend",
        on_bad_record="skip",
        on_template_unk="continue",
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus and its reference-checked build (in memory, 1 KiB blocks, batch 3)."""
    root = tmp_path_factory.mktemp("scaleout")
    job = _corpus(root)
    outputs = [str(root / "base" / "instructions"), str(root / "base" / "chat")]
    result = build_and_compare(root, output_dirs=outputs, block_size=1024, build_batch=[3], **job)
    stats = [o.stats for o in result.outputs]
    assert stats[0]["duplicate_groups"] >= 5 and stats[0]["bad_records"] == 2
    assert stats[0]["overflow_samples"] > 0 and stats[1]["samples_with_unk"] >= 1
    assert sum(s["shards"] for s in stats) > 20
    return root, job, outputs


@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    yield cluster
    cluster.close()


def _build_elsewhere(root: Path, job: dict, name: str, **kwargs) -> list:
    outputs = [str(root / name / "instructions"), str(root / name / "chat")]
    run_pipeline(output_dirs=outputs, **job, **kwargs)
    return outputs


def _assert_same(base: list, other: list) -> None:
    for a, b in zip(base, other):
        assert_same_outputs(a, b)


@pytest.mark.parametrize("name, build_batch, block_size, options", [
    ("memory", [64, 5], 4096, None),
    ("multi2", [5], 1024, ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
    ("multi4", [1000, 2], 2048, ["--direct_running_mode=multi_processing", "--direct_num_workers=4"]),
])
def test_direct_runner_modes_give_identical_bytes(corpus, name, build_batch, block_size, options):
    root, job, base = corpus
    other = _build_elsewhere(root, job, name, build_batch=build_batch, block_size=block_size, options=options)
    _assert_same(base, other)
    if options:
        info = json.loads(Path(other[0], "build_info.json").read_text())
        assert info["direct_running_mode"] == "multi_processing"
        assert info["direct_num_workers"] == int(options[1].split("=")[1])


@pytest.mark.parametrize("name, options, words", [
    ("bpe_memory", None, False),
    ("bpe_multi2", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"], True),
])
def test_byte_level_bpe_word_encoder_gives_reference_bytes(tmp_path, name, options, words, monkeypatch):
    """In memory the tokenizer encodes; in worker processes the word-by-word encoder
    does (``accel.bpe_words``). Both match the reference, which only calls ``encode``."""
    job = _corpus(tmp_path)
    job.update(tokenizer_kind="hf_json", tokenizer_files=[str(TESTDATA / "hf_bytelevel_bpe.json")])
    outputs = [str(tmp_path / name / "instructions"), str(tmp_path / name / "chat")]
    result = build_and_compare(tmp_path, output_dirs=outputs, block_size=1024, build_batch=[4], options=options,
                               **job)
    assert result.build_info["bpe_word_encoder"] is (words or usable_cores() == 1)
    assert result.outputs[0].stats["duplicate_groups"] >= 5


@pytest.mark.parametrize("name, build_batch, block_size, extra", [
    ("dask", [7], 1024, []),
    ("dask_parts", [2, 50], 1500, ["--dask_npartitions=9"]),
])
def test_dask_runner_gives_identical_bytes(corpus, dask_cluster, name, build_batch, block_size, extra):
    from apache_beam.runners.dask.dask_runner import DaskRunner
    from distributed import Client, get_task_stream

    root, job, base = corpus
    address = dask_cluster.scheduler_address
    with Client(address) as client, get_task_stream(client) as stream:
        other = _build_elsewhere(root, job, name, build_batch=build_batch, block_size=block_size,
                                 runner=DaskRunner(), options=["--dask_client_address", address, *extra])
    _assert_same(base, other)
    info = json.loads(Path(other[0], "build_info.json").read_text())
    assert info["runner"] == "DaskRunner"
    # The DoFns ran as many tasks on several worker processes, not as one chain.
    dofn_workers = {t["worker"] for t in stream.data if "apply_dofn_to_bundle" in str(t["key"])}
    assert len(dofn_workers) >= 2


def test_dask_runner_by_name_from_the_cli(corpus, dask_cluster, tmp_path):
    """``mintdim-beam build job.yaml --runner DaskRunner --dask_client_address ...``."""
    from mintdim_beam.cli import main

    root, job, base = corpus
    outputs = [str(tmp_path / "instructions"), str(tmp_path / "chat")]
    spec = {
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"type": SP, "files": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [11]},
        "output": {"dir": outputs, "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": "extend", "on_bad_record": "skip", "on_template_unk": "continue",
                "block_size": 2048},
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    assert main(["build", str(path), "--runner", "DaskRunner",
                 "--dask_client_address", dask_cluster.scheduler_address]) == 0
    _assert_same(base, outputs)


def test_dask_partitions_follow_the_cluster(tmp_path, dask_cluster):
    """Without --dask_npartitions the launcher asks the cluster for its thread count."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.dask.dask_runner import DaskOptions

    from mintdim_beam import launcher, pipeline

    f = write_jsonl(tmp_path / "a.jsonl", [{"t": "x" * 100}] * 200)
    config = (pipeline("unit-build").source.jsonl(files=[f], fields=[["t"]], templates=["{t}"])
              .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
              .units(sizes=[[256]], build_batch=[8]).output.dir(str(tmp_path / "o"), samples_per_shard=[10])
              .config(block_size=1024))
    opts = PipelineOptions(["--dask_client_address", dask_cluster.scheduler_address])
    launcher._tune_for_runner(config, "DaskRunner", opts)
    assert opts.view_as(DaskOptions).npartitions == 2 * N_WORKERS
    opts = PipelineOptions(["--dask_client_address", dask_cluster.scheduler_address, "--dask_npartitions=3"])
    launcher._tune_for_runner(config, "DaskRunner", opts)
    assert opts.view_as(DaskOptions).npartitions == 3


def test_duplicate_search_split_into_digest_ranges_gives_identical_bytes(corpus, monkeypatch):
    """Many duplicate tasks (a few hashes each, rows written a few members at a time),
    merged at finalize: same bytes."""
    from mintdim_beam import transforms

    root, job, base = corpus
    monkeypatch.setattr(transforms, "DUPLICATE_TASK_BYTES", 37 * 64)
    monkeypatch.setattr(transforms, "DUPLICATE_MEMBERS_PER_CHUNK", 3)
    other = _build_elsewhere(root, job, "digest_ranges", build_batch=[16], block_size=1024)
    _assert_same(base, other)
    staged = json.loads(Path(other[0], "stats.json").read_text())
    assert staged["duplicate_groups"] >= 5


# --- Warm worker pool: the default multi-process configuration's workers, started early.

def _wait_gone(procs, seconds: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.05)
    assert all(p.poll() is not None for p in procs), "warm worker processes left running"


@pytest.mark.skipif(usable_cores() < 2, reason="the default uses processes on 2+ cores")
def test_default_build_on_warm_workers_gives_identical_bytes(corpus, monkeypatch):
    """run() with no runner on inputs above the threshold: warm workers, same bytes."""
    import os

    from mintdim_beam import warm_workers

    root, job, base = corpus
    monkeypatch.setattr(warm_workers, "MULTI_PROCESS_MIN_BYTES", 1)
    pools, preloads = [], []
    real_start = warm_workers.start
    monkeypatch.setattr(warm_workers, "start",
                        lambda n, preload=(): preloads.append(preload) or pools.append(real_start(n, preload))
                        or pools[-1])
    other = _build_elsewhere(root, job, "warm_default", build_batch=[4], block_size=1024)
    _assert_same(base, other)
    info = json.loads(Path(other[0], "build_info.json").read_text())
    assert info["direct_running_mode"] == "multi_processing"
    assert info["direct_num_workers"] == usable_cores() == info["warm_workers"]
    assert info["worker_cores"] == 1      # one encode thread per worker process
    (pool,) = pools
    # The workers loaded the build's tokenizer while they waited (tokenizers.preload).
    assert [list(p) for p in preloads] == [[(SP, job["tokenizer_files"][0])]]
    _wait_gone(pool.processes)
    assert all(p.returncode == 0 for p in pool.processes)   # each ran one harness, none was stopped
    assert not os.path.exists(pool.directory)


def test_workers_beyond_the_warm_pool_start_as_beam_starts_them(corpus):
    """A pool of one for two workers: one worker is warm, the other Beam's own."""
    from mintdim_beam import launcher, warm_workers

    from conftest import quiet

    root, job, base = corpus
    outputs = [str(root / "warm_one" / "instructions"), str(root / "warm_one" / "chat")]
    config = (_declared(job, outputs).config(on_overflow="extend", on_template_unk="continue",
                                             on_bad_record="skip", block_size=2048))
    pool = warm_workers.start(1)
    launcher.launch(config, options=["--direct_running_mode=multi_processing", "--direct_num_workers=2"],
                    echo=quiet, warm_pool=pool)
    _assert_same(base, outputs)
    assert json.loads(Path(outputs[0], "build_info.json").read_text())["warm_workers"] == 1
    _wait_gone(pool.processes)
    assert pool.processes[0].returncode == 0


def _declared(job: dict, outputs: list):
    from mintdim_beam import pipeline

    return (pipeline("unit-build").source.jsonl(files=job["files"], fields=job["fields"], templates=job["templates"])
            .tokenizer.sentencepiece(files=job["tokenizer_files"])
            .units(sizes=job["sizes"], build_batch=[6])
            .output.dir(outputs, samples_per_shard=job["samples_per_shard"]))


def test_unused_warm_workers_are_stopped(corpus, tmp_path):
    """A pool the build does not use (in memory here) is closed by the launcher."""
    from mintdim_beam import launcher, warm_workers

    from conftest import quiet

    root, job, base = corpus
    outputs = [str(tmp_path / "instructions"), str(tmp_path / "chat")]
    config = _declared(job, outputs).config(on_overflow="extend", on_template_unk="continue",
                                            on_bad_record="skip", block_size=4096)
    pool = warm_workers.start(2)
    launcher.launch(config, options=["--direct_running_mode=in_memory"], echo=quiet, warm_pool=pool)
    _assert_same(base, outputs)
    info = json.loads(Path(outputs[0], "build_info.json").read_text())
    assert info["warm_workers"] == 0 and info["worker_cores"] is None   # the one process has every core
    _wait_gone(pool.processes)


def test_warm_workers_leave_with_their_launcher(tmp_path):
    """A launcher killed before its build starts leaves no warm worker behind: neither
    worker 0 (its child) nor the worker it forked (its grandchild)."""
    import os
    import subprocess
    import time

    script = ("import os, sys, time\n"
              "from mintdim_beam import warm_workers\n"
              "pool = warm_workers.start(2)\n"
              "pid_files = lambda: [n for n in os.listdir(pool.directory) if n.endswith('.pid')]\n"
              "while len(pid_files()) < 2: time.sleep(0.05)\n"
              "time.sleep(0.1)   # the files are written, not only created\n"
              "pids = [open(os.path.join(pool.directory, n)).read() for n in sorted(pid_files())]\n"
              "print(pool.directory, ' '.join(pids), flush=True)\n"
              "os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    directory, *pids = out.stdout.split()
    pids = [int(p) for p in pids]
    assert len(pids) == 2

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        # Reparented orphans that exited but were not reaped yet show as zombies.
        if not os.path.isdir("/proc"):
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (any(alive(p) for p in pids) or os.path.exists(directory)):
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)
    assert not os.path.exists(directory)   # the waiting processes removed their sockets


def test_warm_pool_is_wanted_only_for_the_default_local_configuration():
    from mintdim_beam.warm_workers import wanted

    big = 1 << 40
    cores = usable_cores()
    expected = cores if cores > 1 else 0
    assert wanted(big, None, None) == expected
    assert wanted(big, None, ["--temp_location=/tmp/x"]) == expected
    assert wanted(1000, None, None) == 0
    assert wanted(big, "DaskRunner", None) == 0
    assert wanted(big, "DirectRunner", None) == expected
    assert wanted(big, None, ["--runner=DirectRunner"]) == expected
    assert wanted(big, None, ["--runner", "FnApiRunner"]) == expected
    assert wanted(big, None, ["--runner", "DataflowRunner"]) == 0
    for flag in ("--runner=DataflowRunner", "--direct_running_mode=in_memory", "--direct_num_workers=2",
                 "--environment_type=DOCKER"):
        assert wanted(big, None, [flag]) == 0
    assert wanted(big, None, object()) == 0   # a PipelineOptions: the launcher decides


def test_no_warm_pool_where_interpreters_cannot_be_started(monkeypatch):
    """No pool (and no directory left behind) when a warm worker cannot be started."""
    import os
    import tempfile

    from mintdim_beam import warm_workers

    monkeypatch.setattr(warm_workers.sys, "executable", "")
    assert warm_workers.start(2) is None
    monkeypatch.undo()

    def popen(*args, **kwargs):
        raise OSError("no more processes")

    monkeypatch.setattr(warm_workers.subprocess, "Popen", popen)
    directories = set(os.listdir(tempfile.gettempdir()))
    assert warm_workers.start(2) is None
    assert set(os.listdir(tempfile.gettempdir())) == directories   # its socket directory is gone too



@pytest.mark.skipif(usable_cores() < 2, reason="the default uses processes on 2+ cores")
def test_failed_build_on_warm_workers_reports_the_spec_error(tmp_path, monkeypatch):
    """A bad record aborts a warm-worker build with the spec's error, publishes nothing
    and leaves no worker process behind."""
    from mintdim_beam import errors, warm_workers

    from conftest import TESTDATA, assert_nothing_published

    monkeypatch.setattr(warm_workers, "MULTI_PROCESS_MIN_BYTES", 1)
    pools = []
    real_start = warm_workers.start
    monkeypatch.setattr(warm_workers, "start", lambda *a: pools.append(real_start(*a)) or pools[-1])
    rows = [{"t": f"sample {i} " * (i % 7 + 1)} for i in range(300)]
    rows.insert(217, '{"t": "unterminated')
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    out = str(tmp_path / "out")
    with pytest.raises(errors.SourceParseError) as raised:
        run_pipeline(files=[f], fields=[["t"]], templates=["{t}"], tokenizer_kind=SP,
                     tokenizer_files=[str(TESTDATA / "sp_unigram.model")], sizes=[[64]],
                     samples_per_shard=[50], output_dirs=out, build_batch=[8], block_size=1024)
    assert raised.value.line == 218 and "in.jsonl" in str(raised.value)
    assert_nothing_published(out)
    (pool,) = pools
    _wait_gone(pool.processes)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_warm_workers_start_with_the_launchers_malloc_settings(monkeypatch):
    """glibc reads its tuning (``MALLOC_ARENA_MAX`` ...) when a process starts: both
    workers, the one started here and the one it forks, have the launcher's."""
    import time

    from mintdim_beam import warm_workers

    monkeypatch.setenv("MALLOC_ARENA_MAX", "7")
    pool = warm_workers.start(2)
    if pool is None:
        pytest.skip("warm workers not supported here")
    try:
        deadline = time.monotonic() + 30
        pid_file = Path(pool.directory, "w1.pid")
        while time.monotonic() < deadline and not (pid_file.exists() and pid_file.read_text()):
            time.sleep(0.05)
        for pid in (pool.processes[0].pid, int(pid_file.read_text())):
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert [v for v in environ.split(b"\0") if v.startswith(b"MALLOC_ARENA_MAX=")] == [b"MALLOC_ARENA_MAX=7"]
    finally:
        pool.close(wait=True)


def test_waiting_for_the_pool_to_listen(tmp_path):
    """The runner's start waits for worker 0's sockets, but not for a pool that died
    or never binds them."""
    import time

    from mintdim_beam import warm_workers

    pool = warm_workers.start(2)
    if pool is None:
        pytest.skip("warm workers not supported here")
    try:
        assert pool.wait_listening()
        assert {"w0.sock", "w1.sock"} <= set(os.listdir(pool.directory))
    finally:
        pool.close(wait=True)

    class Process:
        def __init__(self, code):
            self.code = code

        def poll(self):
            return self.code

    fake = warm_workers.WarmPool.__new__(warm_workers.WarmPool)
    fake.size, fake.directory = 2, str(tmp_path)
    (tmp_path / "w0.sock.claimed").touch()
    fake.process = Process(1)                        # exited before binding w1
    started = time.monotonic()
    assert not fake.wait_listening(timeout=30)
    assert time.monotonic() - started < 5
    fake.process = Process(None)                     # alive, but w1 never appears
    assert not fake.wait_listening(timeout=0.05)
    (tmp_path / "w1.sock").touch()
    assert fake.wait_listening(timeout=0.05)


def _report_collector(directory: str):
    """A step that writes, per element, its process's id and collector settings."""
    def report(x):
        import gc
        import os

        from apache_beam.runners.worker import statesampler

        path = os.path.join(directory, f"{os.getpid()}-{x}")
        with open(path, "w") as f:
            f.write(f"{gc.get_threshold()[0]} {gc.get_freeze_count()} "
                    f"{statesampler.get_current_tracker().sampling_period_ms}")
        return x
    return report


@pytest.mark.skipif(usable_cores() < 2, reason="the default uses processes on 2+ cores")
def test_warm_workers_collect_young_objects_less_often_and_leave_the_caller_alone(tmp_path):
    """Warm workers (our processes) run with a higher first-generation threshold,
    Beam's modules frozen and a 10 ms state sampler; the launcher's process keeps its
    own collector settings and Beam's sampler default."""
    import gc
    import os

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.worker import statesampler

    from mintdim_beam import launcher, warm_workers

    before = gc.get_threshold()
    pool = warm_workers.start(2)
    if pool is None:
        pytest.skip("warm workers not supported here")
    try:
        flags = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
        with beam.Pipeline(runner=launcher._WarmFnApiRunner(pool), options=PipelineOptions(flags)) as p:
            _ = p | beam.Create(list(range(8)), reshuffle=False) | beam.Reshuffle() | beam.Map(
                _report_collector(str(tmp_path)))
    finally:
        pool.close(wait=True)
    reports = {path.name.split("-")[0]: path.read_text().split() for path in tmp_path.iterdir()}
    assert reports and str(os.getpid()) not in reports
    for threshold, frozen, period in reports.values():
        assert int(threshold) == warm_workers.GC_THRESHOLD0 and int(frozen) > 10_000
        assert int(period) == warm_workers.SAMPLER_PERIOD_MS == 10
    assert gc.get_threshold() == before
    assert statesampler.StateSampler.__init__.__defaults__ == (statesampler.DEFAULT_SAMPLING_PERIOD_MS,) == (200,)


def _sampler_periods(tmp_path, **flags) -> set:
    """The state sampler periods that a small local pipeline's bundles ran with."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from mintdim_beam import launcher

    with beam.Pipeline(runner=launcher.resolve_runner(None, PipelineOptions())[0],
                       options=PipelineOptions(**flags)) as p:
        _ = p | beam.Create(list(range(4))) | beam.Map(_report_collector(str(tmp_path)))
    periods = {int(path.read_text().split()[2]) for path in tmp_path.iterdir()}
    for path in tmp_path.iterdir():
        path.unlink()
    return periods


def test_in_memory_bundles_use_the_short_sampler_period_only_inside_a_build(tmp_path):
    """The in-memory runner's bundles run in the caller's process: the short period
    applies for the build's time, and Beam's own default is back afterwards (also
    after a failure)."""
    from apache_beam.runners.worker import statesampler

    from mintdim_beam import warm_workers

    init = statesampler.StateSampler.__init__
    assert _sampler_periods(tmp_path) == {200}
    with warm_workers.prompt_bundle_ends():
        assert init.__defaults__ == (10,)
        assert _sampler_periods(tmp_path) == {10}
        with warm_workers.prompt_bundle_ends():     # a second build at the same time
            assert init.__defaults__ == (10,)
        assert init.__defaults__ == (10,)           # the first one's build still runs
    assert init.__defaults__ == (200,)
    with pytest.raises(KeyError):
        with warm_workers.prompt_bundle_ends():
            raise KeyError("x")
    assert init.__defaults__ == (200,) and _sampler_periods(tmp_path) == {200}


def test_an_in_memory_build_runs_its_bundles_with_the_short_sampler_period(corpus, monkeypatch, tmp_path):
    """run() in memory: the plan step (a bundle in this process) sees the 10 ms period,
    and the caller's default is back once run() returns."""
    from apache_beam.runners.worker import statesampler

    from mintdim_beam import transforms

    root, job, base = corpus
    record = tmp_path / "periods"
    real_plan = transforms._plan_from

    def plan_from(config, summaries):   # pickled with the step: it reports through a file
        with open(record, "a") as f:
            f.write(f"{statesampler.get_current_tracker().sampling_period_ms}\n")
        return real_plan(config, summaries)

    monkeypatch.setattr(transforms, "_plan_from", plan_from)
    other = _build_elsewhere(root, job, "sampler_memory", build_batch=[3], block_size=1024)
    _assert_same(base, other)
    assert json.loads(Path(other[0], "build_info.json").read_text())["direct_running_mode"] == "in_memory"
    assert record.read_text().split() == ["10"]
    assert statesampler.StateSampler.__init__.__defaults__ == (200,)


def test_a_changed_sampler_default_is_left_alone(monkeypatch):
    """If Beam's sampler default is not the one this was measured against (a newer
    Beam, or a user's own setting), neither the workers nor a build change it."""
    from apache_beam.runners.worker import statesampler

    from mintdim_beam import warm_workers

    init = statesampler.StateSampler.__init__
    monkeypatch.setattr(init, "__defaults__", (50,))
    warm_workers._prompt_bundle_ends()
    with warm_workers.prompt_bundle_ends():
        assert init.__defaults__ == (50,)
    assert init.__defaults__ == (50,)


def test_a_warm_worker_that_never_starts_its_harness_is_replaced_by_beams(corpus, tmp_path):
    """The runner waits for its worker to connect. A claimed warm process that dies or
    gives up before its harness starts (it never says ``STARTED``) must not stall the
    build: the shim then runs Beam's own worker, and the bytes are the same."""
    import socket
    import threading

    from mintdim_beam import launcher, warm_workers

    from conftest import quiet

    root, job, base = corpus
    directory = tmp_path / "pool"
    directory.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(directory / "w0.sock"))
    server.listen(1)
    received = []

    def give_up():   # a warm process that takes the claim, reads the environment, leaves
        conn, _ = server.accept()
        received.append(warm_workers._read_env(conn))
        conn.close()

    threading.Thread(target=give_up, daemon=True).start()

    class OnePool:
        size = 1

        def command(self):
            return warm_workers.WarmPool.command(self)

        def wait_listening(self, timeout=None):
            return True   # bound above

        def close(self, wait=False):
            server.close()

    pool = OnePool()
    pool.directory = str(directory)
    outputs = [str(root / "gave_up" / "instructions"), str(root / "gave_up" / "chat")]
    config = _declared(job, outputs).config(on_overflow="extend", on_template_unk="continue",
                                            on_bad_record="skip", block_size=2048)
    done = []
    build = threading.Thread(target=lambda: done.append(launcher.launch(
        config, options=["--direct_running_mode=multi_processing", "--direct_num_workers=1"],
        echo=quiet, warm_pool=pool)), daemon=True)
    build.start()
    build.join(timeout=300)
    assert done, "the build stalled waiting for a worker"
    assert ["CONTROL_API_SERVICE_DESCRIPTOR" in env for env in received] == [True]   # it was claimed
    assert (directory / "w0.sock.claimed").exists()
    _assert_same(base, outputs)
    assert json.loads(Path(outputs[0], "build_info.json").read_text())["warm_workers"] == 1
