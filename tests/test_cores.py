"""Usable cores: the affinity mask, capped by a cgroup CPU quota (v1 or v2)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from mintdim_beam import cores


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
    from mintdim_beam.launcher import default_processes

    assert default_processes(1 << 40, cores=2) == 2
    assert default_processes(1000, cores=2) == 0
    assert default_processes(1 << 40, cores=1) == 0


def test_encode_threads_follow_the_cores_a_worker_may_count_on(monkeypatch):
    """SentencePiece: one encode thread per core of the worker's share (at most 4), none
    (the process's own thread) on one core; Hugging Face tokenizers thread themselves:
    one pool thread."""
    from mintdim_beam import transforms

    monkeypatch.setattr(transforms, "usable_cores", lambda: 8)
    assert transforms.encode_threads("sentencepiece") == 4
    assert transforms.encode_threads("sentencepiece", 1) == 0
    assert transforms.encode_threads("sentencepiece", 3) == 3
    assert transforms.encode_threads("hf_json") == transforms.encode_threads("hf_json", 8) == 1
    monkeypatch.setattr(transforms, "usable_cores", lambda: 1)
    assert transforms.encode_threads("sentencepiece") == 0 and transforms.encode_threads("hf_json") == 1


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="affinity masks are Linux's")
def test_this_machine():
    """On the real files: the affinity mask, or less under a quota, never more."""
    n = cores.usable_cores()
    mask = len(os.sched_getaffinity(0))
    limit = cores.cgroup_cpu_limit()
    assert n == (mask if limit is None else max(1, min(mask, math.ceil(limit))))
