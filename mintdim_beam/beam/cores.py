"""How many cores this process may use, for the local runner's defaults.

``os.cpu_count()`` counts the machine's CPUs. A build in a container or a batch job
often may use fewer: its affinity mask (``taskset``, ``docker --cpuset-cpus``) names
the CPUs it may run on, and a cgroup CPU quota (``docker --cpus``, a Kubernetes CPU
limit) caps how much time it gets on them. The local runner starts one worker process
per core, each a Beam harness with its own tokenizer and buffers: counted from the
machine's CPUs, a two-core quota on a 64-CPU host would start 64 of them.

The quota is read the way the kernel exposes it: cgroup v2 ``cpu.max`` (``"max"`` or
``"<quota> <period>"``), or cgroup v1 ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``
(``-1``: none), in the process's own cgroup and every ancestor up to the mount root; the
smallest limit wins, rounded up (1.5 CPUs' worth of time is two workers' work).
"""

from __future__ import annotations

import math
import os
from typing import Optional


def usable_cores(root: str = "/") -> int:
    """Cores this process may use: its affinity mask, capped by a cgroup CPU quota
    (at least 1). ``root``: where ``proc`` and ``sys`` are found (tests)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_limit(root)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def cgroup_cpu_limit(root: str = "/") -> Optional[float]:
    """The CPU time this process's cgroups allow, in CPUs, or None when unlimited
    or unknown."""
    try:
        with open(os.path.join(root, "proc/self/cgroup"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":   # cgroup v2 (unified)
            for directory in _ancestors(os.path.join(root, "sys/fs/cgroup"), path):
                limits.append(_v2_limit(directory))
        elif "cpu" in controllers.split(","):
            for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                base = os.path.join(root, "sys/fs/cgroup", mount)
                if os.path.isdir(base):
                    for directory in _ancestors(base, path):
                        limits.append(_v1_limit(directory))
                    break
    found = [limit for limit in limits if limit is not None]
    return min(found) if found else None


def _ancestors(mount: str, path: str) -> list:
    """``mount/path`` and each of its parents up to ``mount`` (those that exist). In a
    container the cgroup namespace makes the process's own cgroup the mount's root."""
    parts = [p for p in path.strip("/").split("/") if p]
    found = []
    for k in range(len(parts), -1, -1):
        directory = os.path.join(mount, *parts[:k])
        if os.path.isdir(directory):
            found.append(directory)
    return found


def _v2_limit(directory: str) -> Optional[float]:
    try:
        with open(os.path.join(directory, "cpu.max"), encoding="utf-8") as f:
            quota, _, period = f.read().strip().partition(" ")
        if quota == "max":
            return None
        return int(quota) / int(period or 100000)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _v1_limit(directory: str) -> Optional[float]:
    try:
        with open(os.path.join(directory, "cpu.cfs_quota_us"), encoding="utf-8") as f:
            quota = int(f.read().strip())
        with open(os.path.join(directory, "cpu.cfs_period_us"), encoding="utf-8") as f:
            period = int(f.read().strip())
        if quota <= 0 or period <= 0:
            return None
        return quota / period
    except (OSError, ValueError):
        return None
