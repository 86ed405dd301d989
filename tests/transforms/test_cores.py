"""Usable cores: the affinity mask, capped by a cgroup CPU quota (v1 or v2)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from mintdim_beam.beam import cores


def _tree(root: Path, files: dict) -> str:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


@pytest.fixture
def eight_cpus(monkeypatch):
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)


def test_without_cgroup_files_the_affinity_mask_counts(tmp_path, eight_cpus):
    assert cores.cgroup_cpu_limit(str(tmp_path)) is None
    assert cores.usable_cores(str(tmp_path)) == 8


@pytest.mark.parametrize("cpu_max, expected", [
    ("max 100000\n", 8),          # no limit
    ("200000 100000\n", 2),       # docker --cpus=2
    ("150000 100000\n", 2),       # 1.5 CPUs of time: two workers' work
    ("50000 100000\n", 1),
    ("1600000 100000\n", 8),      # a quota above the mask: the mask
])
def test_cgroup_v2_quota_caps_the_affinity_mask(tmp_path, eight_cpus, cpu_max, expected):
    root = _tree(tmp_path, {"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max": cpu_max})
    assert cores.usable_cores(root) == expected


def test_cgroup_v2_limit_of_an_ancestor_applies(tmp_path, eight_cpus):
    root = _tree(tmp_path, {
        "proc/self/cgroup": "0::/kubepods/pod1/box\n",
        "sys/fs/cgroup/kubepods/cpu.max": "max 100000\n",
        "sys/fs/cgroup/kubepods/pod1/cpu.max": "300000 100000\n",
        "sys/fs/cgroup/kubepods/pod1/box/cpu.max": "max 100000\n",
    })
    assert cores.cgroup_cpu_limit(root) == 3.0
    assert cores.usable_cores(root) == 3


def test_cgroup_v1_quota(tmp_path, eight_cpus):
    files = {
        "proc/self/cgroup": "12:memory:/job\n4:cpu,cpuacct:/job\n0::/\n",
        "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us": "250000\n",
        "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    root = _tree(tmp_path, files)
    assert cores.cgroup_cpu_limit(root) == 2.5
    assert cores.usable_cores(root) == 3
    (tmp_path / "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us").write_text("-1\n")
    assert cores.usable_cores(root) == 8


def test_unreadable_or_odd_files_mean_no_limit(tmp_path, eight_cpus):
    root = _tree(tmp_path, {"proc/self/cgroup": "garbage\n0::/\n", "sys/fs/cgroup/cpu.max": "lots\n"})
    assert cores.usable_cores(root) == 8


def test_the_local_default_starts_one_worker_per_usable_core():
    """A two-core quota on a large host gives two worker processes, not one per CPU."""
    from mintdim_beam.launch.launcher import default_processes

    assert default_processes(1 << 40, cores=2) == 2
    assert default_processes(1000, cores=2) == 0
    assert default_processes(1 << 40, cores=1) == 0


def test_encode_pool_per_tokenizer_kind():
    """SentencePiece: a pool of one single-threaded call per encode thread, none (the
    process's own thread) for one; Hugging Face tokenizers thread themselves: one pool
    thread."""
    from mintdim_beam.beam.encode_stage import encode_pool

    assert [encode_pool("sentencepiece", n) for n in (1, 2, 3, 8)] == [0, 2, 3, 8]
    assert [encode_pool("hf_json", n) for n in (1, 4)] == [1, 1]


@pytest.mark.parametrize("runner, flags, sharers", [
    ("FnApiRunner", [], 1),                                                           # in memory: one process
    ("FnApiRunner", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"], 2),
    ("FnApiRunner", ["--direct_running_mode=multi_processing", "--direct_num_workers=0"], 0),
    ("DataflowRunner", ["--project=p"], 0),                                           # one SDK process per vCPU
    ("FlinkRunner", [], 1),                                                           # Beam's default parallelism
    ("FlinkRunner", ["--sdk_worker_parallelism=4"], 4),
    ("FlinkRunner", ["--sdk_worker_parallelism=0"], 0),
    ("PortableRunner", ["--sdk_worker_parallelism=2"], 2),
    ("DaskRunner", [], 0),                                                            # no scheduler asked
    ("SomeOtherRunner", [], 0),
])
def test_encode_sharers_follow_the_runner(runner, flags, sharers):
    from apache_beam.options.pipeline_options import PipelineOptions

    from mintdim_beam.beam import options

    assert options.encode_sharers(runner, PipelineOptions(flags)) == sharers


def test_encode_threads_are_the_process_share_of_its_cores():
    """Dataflow's 4-vCPU worker runs 4 SDK processes: one thread each, not 4 (16 on 4
    cores). Locally in memory: every core, at most 4. An explicit value is used as is."""
    from mintdim_beam.beam.options import PER_CORE, encode_threads

    assert encode_threads(None, PER_CORE, cores=4) == 1
    assert encode_threads(None, 1, cores=2) == 2
    assert encode_threads(None, 1, cores=16) == 4
    assert encode_threads(None, 2, cores=2) == 1
    assert encode_threads(None, 2, cores=8) == 4
    assert encode_threads(None, 3, cores=2) == 1
    assert encode_threads(6, PER_CORE, cores=2) == 6


def test_dask_sharers_are_the_threads_of_the_busiest_host():
    from mintdim_beam.beam.options import dask_sharers

    four_by_one = {f"tcp://10.0.0.1:{4000 + i}": 1 for i in range(4)}
    assert dask_sharers(four_by_one) == 4
    assert dask_sharers({"tcp://10.0.0.1:4000": 8, "tcp://10.0.0.2:4000": 2, "tcp://10.0.0.2:4001": 2}) == 8
    assert dask_sharers({}) == 0


def test_encode_threads_option_is_a_pipeline_option():
    from apache_beam.options.pipeline_options import PipelineOptions

    from mintdim_beam.beam.options import BuildOptions, explicit_threads

    assert PipelineOptions(["--encode_threads=3"]).view_as(BuildOptions).encode_threads == 3
    assert explicit_threads(PipelineOptions([])) is None
    with pytest.raises(ValueError, match="--encode_threads must be a positive integer, got 0"):
        explicit_threads(PipelineOptions(["--encode_threads=0"]))


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="affinity masks are Linux's")
def test_this_machine():
    """On the real files: the affinity mask, or less under a quota, never more."""
    n = cores.usable_cores()
    mask = len(os.sched_getaffinity(0))
    limit = cores.cgroup_cpu_limit()
    assert n == (mask if limit is None else max(1, min(mask, math.ceil(limit))))


@pytest.mark.slow     # two reference-checked builds
@pytest.mark.parametrize("threads", [1, 3])
def test_an_explicit_encode_thread_count_reaches_the_encoder_and_keeps_the_bytes(tmp_path, tok, threads):
    """``--encode_threads`` is recorded, sizes each worker's encoder, and the output is
    the reference's byte for byte."""
    import json

    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.utils.shared import Shared

    from conftest import build_and_compare, write_jsonl
    from mintdim_beam.beam import options
    from mintdim_beam.core.config import JobSpec, Policies, resolve
    from mintdim_beam.beam.encode_stage import EncodeBlockFn

    rows = [{"q": f"question {i}", "a": "an answer, " * (i % 7)} for i in range(40)]
    f = write_jsonl(tmp_path / "d.jsonl", rows)
    model = tok("sp_unigram.model")
    result = build_and_compare(tmp_path, files=[f], fields=[["q", "a"]], templates=["{q}\n{a}"],
                               tokenizer_kind="sentencepiece", tokenizer_files=[model], sizes=[[16, 64]],
                               samples_per_shard=[7], output_dirs="out", build_batch=[4],
                               options=[f"--encode_threads={threads}"])
    info = json.loads((tmp_path / "out" / "build_info.json").read_text())
    assert info["encode_threads"] == result.build_info["encode_threads"] == threads

    spec = JobSpec(files=[f], fields=[["q", "a"]], templates=["{q}\n{a}"], tokenizer_kind="sentencepiece",
                   tokenizer_files=[model], sizes=[[16, 64]], build_batch=[4], output_dirs=[str(tmp_path / "o")],
                   samples_per_shard=[7])
    config = resolve(spec, Policies(on_overflow="abort", on_template_unk="abort", on_bad_record="abort"))
    opts = PipelineOptions([f"--encode_threads={threads}"])
    fn = EncodeBlockFn(config, Shared(), None, encode_threads=options.explicit_threads(opts),
                        encode_sharers=options.PER_CORE)
    fn.setup()
    assert fn.encode_threads == threads


def test_a_bad_encode_thread_count_is_a_validation_error(tmp_path, tok):
    from conftest import run_pipeline, write_jsonl
    from mintdim_beam.errors import PipelineValidationError

    f = write_jsonl(tmp_path / "d.jsonl", [{"q": "x", "a": "y"}])
    with pytest.raises(PipelineValidationError) as info:
        run_pipeline(files=[f], fields=[["q", "a"]], templates=["{q} {a}"], tokenizer_kind="sentencepiece",
                     tokenizer_files=[tok("sp_unigram.model")], sizes=[[16]], samples_per_shard=[4],
                     output_dirs=str(tmp_path / "out"), options=["--encode_threads=0"])
    assert "--encode_threads must be a positive integer, got 0" in str(info.value)
    assert "[vietnam]" in str(info.value)
    assert not (tmp_path / "out").exists()
