"""The launcher's side of progress: which display a build gets, how a remote runner's
counters are read while it runs and at its end, and the closing summary's figures.

Kept apart from ``progress`` (pure formatting and the local watcher) because it
speaks to Beam: the runner's result, its state and its metrics. On the local
FnApiRunner ``run`` returns only when the build is over, so the display there is fed
by ``progress.SpillWatcher`` (:class:`StoreSpillWatcher` for outputs on an object
store); Dataflow, whose result moves while the job runs, is polled for its state and
``mintdim`` counters instead of waiting blind; portable
runners (Flink, Spark) report their counters at the end. Others (Dask, whose result
neither changes state on its own nor reports metrics) are waited on as before. Whatever
happens here, the build's own outcome is that of ``wait_until_finish``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Callable, Optional

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineState

from mintdim_beam.core.block_result import Figures
from mintdim_beam.beam import layout
from mintdim_beam.launch import progress
from mintdim_beam.storage import files as storage
from mintdim_beam.core.block_result import SPILL_SUFFIX, read_spill_header
from mintdim_beam.core.config import BuildConfig
from mintdim_beam.format import names
from mintdim_beam.format.shard_format import UINT16_MAX
from mintdim_beam.beam.stage_base import NAMESPACE

#: Runners (lower case, without "Runner") whose result's state and metrics move while
#: the job runs, so the launcher can poll them.
LIVE_RUNNERS = ("dataflow", "testdataflow")
#: Runners whose result reports metrics once the job is over. A portable runner's
#: result (Flink, Spark) keeps the first metrics it is asked for, so it is asked only
#: then; Flink's own UI shows the counters while the job runs.
REPORTING_RUNNERS = LIVE_RUNNERS + ("portable", "flink", "spark")
#: Seconds between two looks at a remote job's state and counters.
REMOTE_POLL_INTERVAL = 5.0
#: Seconds between two listings of spills on an object store (each look is a request).
STORE_POLL_INTERVAL = 2.0


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


def for_build(config: BuildConfig, runner_name, quiet: bool, since: float, stream=None,
              groups: Optional[list] = None) -> Progress:
    """The display for a build on ``runner_name`` (none if it cannot be set up).
    ``groups``: the block plan the launcher made (``blocks.plan_groups``), for the total."""
    try:
        return _for_build(config, runner_name, quiet, since, stream, groups or [])
    except Exception:   # progress is advisory
        return Progress(contextlib.nullcontext())


def _for_build(config: BuildConfig, runner_name, quiet: bool, since: float, stream=None,
               groups: list = ()) -> Progress:
    """The display, writing to ``stream`` (stderr).

    Local runner: the watcher of the outputs' spills, on local disk or on an object
    store (:class:`StoreSpillWatcher`). Remote runners that report metrics: their
    counters.
    ``since``: the build's start (``time.time()``), older local spills are not counted.
    """
    key = _runner_key(runner_name)
    if quiet or not (is_local(runner_name) or key in REPORTING_RUNNERS) or not config.outputs:
        return Progress(contextlib.nullcontext())
    stream = sys.stderr if stream is None else stream
    refs = [ref for group in groups for ref in group.blocks]
    display = progress.ProgressDisplay(stream, Figures(sum(r.end - r.start for r in refs), len(refs)))
    def on_counters(counters: dict) -> None:
        display.update(Figures(counters.get("bytes_read", 0), counters.get("blocks_done", 0),
                                        counters.get("samples", 0), counters.get("tokens", 0)))

    if is_local(runner_name):
        # The watcher shows the spills as they appear; the runner's final counters end
        # the display, since a short build may publish (and remove its spills) between
        # two looks of the watcher.
        dirs = [layout.spills_dir(o) for o in config.outputs]
        local = [d for d in dirs if storage.is_local(d)]
        remote = [d for d in dirs if not storage.is_local(d)]
        watcher = _Watchers([progress.SpillWatcher(local, since), StoreSpillWatcher(remote)])
        period = STORE_POLL_INTERVAL if remote else progress.POLL_INTERVAL
        return Progress(progress.watching(watcher, display, period), on_counters)
    return Progress(_closing(display), on_counters)


class StoreSpillWatcher:
    """``progress.SpillWatcher`` for spill directories on an object store (a local
    build writing to a bucket): each directory is listed once a look, and each new
    spill's header fetched once, by a ranged read of its first bytes. The staging
    directory is this build's own (its run id), so there is no older spill to skip."""

    def __init__(self, spill_dirs):
        self._dirs = list(spill_dirs)
        self._seen: set = set()
        self._done = Figures()

    def poll(self) -> Figures:
        for directory in self._dirs:
            for path in storage.list_files(directory):
                if path in self._seen or not path.endswith(SPILL_SUFFIX):
                    continue
                try:
                    figures = Figures.from_dict(_spill_header(path)["progress"])
                except (FileNotFoundError, ValueError, KeyError, TypeError):
                    continue   # gone, or not a spill of this build: next time
                self._seen.add(path)
                self._done = self._done + figures
        return self._done


def _spill_header(path: str) -> dict:
    head = storage.read_range(path, 0, progress.HEADER_READ)   # on s3://, one ranged GET
    if len(head) >= 8 and int.from_bytes(head[:8], "little") + 8 > len(head):
        head = storage.read_range(path, 0, int.from_bytes(head[:8], "little") + 8)
    return read_spill_header(head)


class _Watchers:
    """Several watchers as one: the sum of their figures."""

    def __init__(self, watchers):
        self._watchers = watchers

    def poll(self) -> Figures:
        done = Figures()
        for watcher in self._watchers:
            done = done + watcher.poll()
        return done


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


def closing_lines(result, runner_name, elapsed: float, planned_bytes: Optional[int] = None) -> list:
    """The runner's counters (a remote runner's, when it reports them) and the summary:
    elapsed time, throughput, output size; then a note for each output whose slots
    ``extend`` alone made uint32 (:func:`wide_slots_lines`). [] if the figures cannot be
    had: the build is already published, and a summary never fails it.

    ``planned_bytes``: the input bytes the launcher planned (:func:`planned_bytes`). A
    finished build read each of them once, so they are the bytes read; a runner's
    ``bytes_read`` counter serves only when they are not known, since some runners (Dask)
    report no counters at all and a missing counter is not a zero."""
    try:
        lines = []
        if result.counters and not is_local(runner_name):
            lines.append(progress.counters_line(result.counters))
        tokens = sum(o.stats["total_tokens"] for o in result.outputs)
        on_disk = sum(output_bytes(o.path, sum(s.bytes for s in o.shards)) for o in result.outputs)
        read = planned_bytes if planned_bytes is not None else result.counters.get("bytes_read")
        lines.append(progress.summary_line(elapsed, read, tokens, on_disk))
    except Exception:
        return []
    for o in result.outputs:
        with contextlib.suppress(Exception):   # a note never costs the summary
            lines.extend(wide_slots_lines(o.path, o.stats))
    return lines


def wide_slots_lines(path: str, stats: dict) -> list:
    """A note when ``extend`` alone made an output's slots uint32: a unit it reached is
    above 65,535 while the vocabulary and the declared units fit uint16 (one dtype per
    output, docs/decisions.md *Records*), so every shard holds twice the bytes it would
    and is widened as it is written. Not an error: a user sees it only as disk and time."""
    if stats.get("token_dtype") != "uint32":
        return []
    manifest = json.loads(storage.read_bytes(storage.join(path, names.MANIFEST)))
    declared = manifest["units"]["declared_sizes"]
    wide = [int(u) for u in stats.get("unit_distribution", {}) if int(u) > UINT16_MAX]
    if manifest["tokenizer"]["vocab_size"] > UINT16_MAX or max(declared) > UINT16_MAX or not wide:
        return []
    note = (f"[unit-build] note: {path}: on_overflow=extend reached unit {max(wide):,}, above 65,535 tokens, "
            "so every slot of this output is uint32, twice the bytes of uint16; "
            "on_overflow=truncate (or a shorter longest sample) keeps uint16")
    return [note]


def planned_bytes(config: BuildConfig, sizes: Optional[dict]) -> Optional[int]:
    """The input bytes of the build's block plan (a compressed file's compressed size),
    from the sizes the launcher listed; None when one of them is not known."""
    try:
        known = [sizes[f.path] for f in config.files] if sizes is not None else [None]
    except KeyError:
        return None
    return None if any(n is None for n in known) else sum(known)


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
