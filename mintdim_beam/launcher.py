"""Run a validated build on a Beam runner and report the result.

The default runner is Beam's FnApiRunner, picked explicitly: naming ``DirectRunner``
first tries the Prism runner, which downloads a binary when the network allows, so the
same command would behave differently on different machines. ``runner`` and
``options`` accept anything Beam accepts (Dataflow, Flink, Spark, Dask, ...).
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import time
from dataclasses import dataclass, field
from typing import Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from . import __version__, errors, layout, preflight, storage
from .config import BuildConfig
from .publish import mark_failed
from .transforms import UnitBuild

RECOMMENDED_SHARD_BYTES = 512 * 1024 * 1024
LOCAL_RUNNERS = (None, "DirectRunner", "FnApiRunner", "direct")


@dataclass(frozen=True)
class ShardInfo:
    unit: int
    shard: int
    path: str
    samples: int
    bytes: int


@dataclass(frozen=True)
class OutputResult:
    """One published output directory and its ``stats.json``."""

    path: str
    stats: dict
    shards: tuple = ()


@dataclass(frozen=True)
class BuildResult:
    """What ``run()`` returns: every output directory with its stats."""

    outputs: tuple
    build_info: dict = field(default_factory=dict)

    @property
    def output_dirs(self) -> list[str]:
        return [o.path for o in self.outputs]

    @property
    def stats(self) -> dict:
        return {o.path: o.stats for o in self.outputs}


def make_options(options=None) -> PipelineOptions:
    if options is None:
        return PipelineOptions([])
    if isinstance(options, PipelineOptions):
        return options
    if isinstance(options, (list, tuple)):
        return PipelineOptions(list(options))
    raise errors.PipelineValidationError.invalid(
        problem=f"options must be a list of Beam flags or a PipelineOptions, got {type(options).__name__}",
        rules=["options: list of Beam flags such as ['--direct_num_workers=2'], or PipelineOptions"],
    )


def resolve_runner(runner, options: PipelineOptions):
    """A runner object or name; local names become the FnApiRunner."""
    if runner is None:
        runner = options.view_as(StandardOptions).runner
    if isinstance(runner, str) or runner is None:
        if runner in LOCAL_RUNNERS:
            from apache_beam.runners.portability.fn_api_runner import FnApiRunner

            return FnApiRunner(), "FnApiRunner"
        return runner, runner
    return runner, type(runner).__name__


def _versions() -> dict:
    import numpy
    import sentencepiece
    import tokenizers

    return {
        "mintdim_beam": __version__,
        "apache_beam": beam.__version__,
        "sentencepiece": sentencepiece.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{n} B"
        value /= 1024
    return f"{n} B"


def launch(config: BuildConfig, runner=None, options=None, ask=None, interactive=None,
           echo=print) -> BuildResult:
    """Check, build and publish; raise the spec's error when the build cannot finish."""
    pre = preflight.check(config, ask=ask, interactive=interactive)
    opts = make_options(options)
    runner_obj, runner_name = resolve_runner(runner, opts)
    direct = opts.view_as(DirectOptions)
    started = time.time()
    build_info = {
        "started_at": _dt.datetime.fromtimestamp(started, _dt.timezone.utc).isoformat(),
        "runner": runner_name,
        "direct_running_mode": direct.direct_running_mode,
        "direct_num_workers": direct.direct_num_workers,
        "block_size": config.block_size,
        "build_batch": [f.build_batch for f in config.files],
        "tokenizer_sha256": {s.path: d for s, d in pre.tokenizer_sha256.items()},
        "versions": _versions(),
    }
    for out in config.outputs:
        storage.mkdirs(out.path)
    try:
        with beam.Pipeline(runner=runner_obj, options=opts) as p:
            _ = p | "UnitBuild" >> UnitBuild(config, build_info)
    except Exception as exc:
        raise _build_error(config, exc) from None
    recorded = _recorded_error(config)
    if recorded is not None:
        raise recorded
    result = collect(config, build_info)
    for line in shard_lines(result):
        echo(line)
    return result


def _recorded_error(config: BuildConfig) -> Optional[errors.MintDimError]:
    """The spec error that finalize recorded for a policy abort, if any."""
    for out in config.outputs:
        record = storage.join(layout.staging_dir(out.path), layout.ERROR_RECORD)
        if storage.exists(record):
            return errors.error_from_dict(json.loads(storage.read_bytes(record)))
    return None


def _build_error(config: BuildConfig, exc: BaseException) -> BaseException:
    """A crashed build: mark every output failed and hand back the cause."""
    recorded = _recorded_error(config)
    if recorded is not None:
        return recorded
    mark_failed(config, f"{type(exc).__name__}: {exc}")
    return exc


def collect(config: BuildConfig, build_info: dict) -> BuildResult:
    """Read back each published output's stats and shard list."""
    outputs = []
    for out in config.outputs:
        stats = json.loads(storage.read_bytes(storage.join(out.path, "stats.json")))
        n_seg = len(out.sequence_template)
        shards = []
        for unit, info in stats["units"].items():
            record_bytes = (1 + n_seg + int(unit)) * stats["bytes_per_token"]
            for k in range(info["shards"]):
                path = layout.final_shard(out.path, int(unit), k)
                nbytes = storage.size(path)
                shards.append(ShardInfo(int(unit), k, path, nbytes // record_bytes, nbytes))
        outputs.append(OutputResult(out.path, stats, tuple(shards)))
    return BuildResult(tuple(outputs), build_info)


def shard_lines(result: BuildResult) -> list[str]:
    """The spec's line per closed shard, and its warning above 512 MiB."""
    lines = []
    many = len(result.outputs) > 1
    for out in result.outputs:
        suffix = f" dir={out.path}" if many else ""
        for s in out.shards:
            lines.append(f"[unit-build] shard={s.shard:06d} samples={s.samples} bytes={human_bytes(s.bytes)} "
                         f"unit={s.unit}{suffix}")
            if s.bytes > RECOMMENDED_SHARD_BYTES:
                lines.append(
                    f"[unit-build:warning] shard={s.shard:06d} size={s.bytes / 2**20:.1f} MiB exceeds "
                    "recommended 512 MiB.\nBuild continues because sharding is controlled by samples_per_shard."
                )
    return lines
