"""The launcher's side of progress: which display a build gets, how a remote runner's
counters are read while it runs and at its end, and the closing summary's figures.

Kept apart from ``progress`` (pure formatting and the local watcher) because it
speaks to Beam: the runner's result, its state and its metrics. On the local
FnApiRunner ``run`` returns only when the build is over, so the display there is fed
by ``progress.SpillWatcher``; Dataflow, whose result moves while the job runs, is
polled for its state and ``mintdim`` counters instead of waiting blind; portable
runners (Flink, Spark) report their counters at the end. Others (Dask, whose result
neither changes state on its own nor reports metrics) are waited on as before. Whatever
happens here, the build's own outcome is that of ``wait_until_finish``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Callable, Optional

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineState

from . import blocks, layout, progress, storage
from .config import BuildConfig
from .transforms import NAMESPACE

#: Runners (lower case, without "Runner") whose result's state and metrics move while
#: the job runs, so the launcher can poll them.
LIVE_RUNNERS = ("dataflow", "testdataflow")
#: Runners whose result reports metrics once the job is over. A portable runner's
#: result (Flink, Spark) keeps the first metrics it is asked for, so it is asked only
#: then; Flink's own UI shows the counters while the job runs.
REPORTING_RUNNERS = LIVE_RUNNERS + ("portable", "flink", "spark")
#: Seconds between two looks at a remote job's state and counters.
REMOTE_POLL_INTERVAL = 5.0


def _runner_key(runner_name) -> str:
    name = str(runner_name or "").lower()
    return name[:-len("runner")] if name.endswith("runner") else name


def is_local(runner_name) -> bool:
    return runner_name == "FnApiRunner"


class Progress:
    """A build's progress display: ``context`` wraps the run; ``on_counters`` (or
    None) takes a remote runner's counters while it runs."""

    def __init__(self, context, on_counters: Optional[Callable[[dict], None]] = None):
        self.context = context
        self.on_counters = on_counters


def for_build(config: BuildConfig, runner_name, quiet: bool, since: float, stream=None) -> Progress:
    """The display for a build on ``runner_name`` (none if it cannot be set up)."""
    try:
        return _for_build(config, runner_name, quiet, since, stream)
    except Exception:   # progress is advisory
        return Progress(contextlib.nullcontext())


def _for_build(config: BuildConfig, runner_name, quiet: bool, since: float, stream=None) -> Progress:
    """The display, writing to ``stream`` (stderr).

    Local runner: the watcher of the local outputs' spills (object-store outputs leave
    no progress files, so they are not shown). Remote runners that report metrics:
    their counters.
    ``since``: the build's start (``time.time()``), older spills are not counted.
    """
    key = _runner_key(runner_name)
    if quiet or not (is_local(runner_name) or key in REPORTING_RUNNERS):
        return Progress(contextlib.nullcontext())
    stream = sys.stderr if stream is None else stream
    outputs = {o.index for o in config.outputs if storage.is_local(o.path)} if is_local(runner_name) \
        else {o.index for o in config.outputs}
    if not outputs:
        return Progress(contextlib.nullcontext())
    refs = [r for r in blocks.plan_blocks(config) if config.files[r.file].output in outputs]
    display = progress.ProgressDisplay(stream, progress.Figures(sum(r.end - r.start for r in refs), len(refs)))
    def on_counters(counters: dict) -> None:
        display.update(progress.Figures(counters.get("bytes_read", 0), counters.get("blocks_done", 0),
                                        counters.get("samples", 0), counters.get("tokens", 0)))

    if is_local(runner_name):
        # The watcher shows the spills as they appear; the runner's final counters end
        # the display, since a short build may publish (and remove its spills) between
        # two looks of the watcher.
        dirs = [layout.spills_dir(o) for o in config.outputs if o.index in outputs]
        return Progress(progress.watching(progress.SpillWatcher(dirs, since), display), on_counters)
    return Progress(_closing(display), on_counters)


@contextlib.contextmanager
def _closing(display: progress.ProgressDisplay):
    try:
        yield display
    finally:
        display.close()


def counters(result) -> dict:
    """The ``mintdim`` counters a runner's result reports (summed over steps), or {}
    when it reports none (the Dask runner) or not yet."""
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    except Exception:   # NotImplementedError, a service not ready: no figures, no failure
        return {}
    out: dict = {}
    for c in found:
        value = c.committed if c.committed is not None else c.attempted
        out[c.key.metric.name] = out.get(c.key.metric.name, 0) + int(value or 0)
    return out


def wait(result, runner_name, on_counters: Optional[Callable[[dict], None]] = None,
         period: float = REMOTE_POLL_INTERVAL):
    """``result.wait_until_finish()``, after polling a live runner's state and counters
    every ``period`` seconds when someone is shown them, who is shown the final
    counters too (those of any runner that reports them)."""
    if on_counters is not None and _runner_key(runner_name) in LIVE_RUNNERS:
        try:
            while not PipelineState.is_terminal(result.state):
                time.sleep(period)
                found = counters(result)
                if found:
                    on_counters(found)
        except Exception:   # a state or metrics call that failed: wait as before
            pass
    state = result.wait_until_finish()
    if on_counters is not None:
        with contextlib.suppress(Exception):
            found = counters(result)
            if found:
                on_counters(found)
    return state


def closing_lines(result, runner_name, elapsed: float) -> list:
    """The runner's counters (a remote runner's, when it reports them) and the summary:
    elapsed time, throughput, output size. [] if the figures cannot be had: the build
    is already published, and a summary never fails it."""
    try:
        lines = []
        if result.counters and not is_local(runner_name):
            lines.append(progress.counters_line(result.counters))
        tokens = sum(o.stats["total_tokens"] for o in result.outputs)
        on_disk = sum(output_bytes(o.path, sum(s.bytes for s in o.shards)) for o in result.outputs)
        lines.append(progress.summary_line(elapsed, result.counters.get("bytes_read", 0), tokens, on_disk))
        return lines
    except Exception:
        return []


def output_bytes(path: str, shard_bytes: int = 0) -> int:
    """Bytes an output directory holds. A local one is walked; on an object store the
    shards' sizes (already known) plus the other files', listed once."""
    if storage.is_local(path):
        total = 0
        for directory, _, names in os.walk(path):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.path.getsize(os.path.join(directory, name))
        return total
    others = [p for p in storage.list_files(path) if "/unit_" not in p[len(path):]]
    return shard_bytes + sum(storage.size(p) for p in others)
