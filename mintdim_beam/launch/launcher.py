"""Run a validated build on a Beam runner and report the result.

The default runner is Beam's FnApiRunner, picked explicitly: naming ``DirectRunner``
first tries the Prism runner, which downloads a binary when the network allows, so the
same command would behave differently on different machines. ``runner`` and
``options`` accept anything Beam accepts (Dataflow, Flink, Spark, Dask, ...); the name
``DaskRunner`` is resolved here, and a Dask build gets twice as many bag partitions as the
cluster has threads unless ``--dask_npartitions`` says otherwise. Locally, a large input
runs on one worker process per usable core (:func:`choose_local_mode`). Everything goes
through Beam's public options; the build's own are in ``options.BuildOptions``.

Before the pipeline starts, the launcher hands the file-system options to
``FileSystems`` (so ``s3://`` endpoints and keys apply to its own checks) and marks
every declared unit "not finalized". ``versioned.launch_versioned`` builds into versioned
roots (``ROOT/<build-id>/`` and ``ROOT/LATEST``) and can skip a build whose input
fingerprint equals the latest one.
"""

from __future__ import annotations

import dataclasses
import errno
import datetime as _dt
import json
import re
import os
import platform
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from mintdim_beam.version import __version__
from mintdim_beam.core import blocks
from mintdim_beam.format import inputs
from mintdim_beam.storage import line_blocks
from mintdim_beam.launch import build_progress
from mintdim_beam import errors
from mintdim_beam.errors import job_messages as J
from mintdim_beam.beam import claims, layout, local_workers
from mintdim_beam.launch import patterns
from mintdim_beam.launch import preflight
from mintdim_beam.launch.quiet_logs import quiet_when_asked
from mintdim_beam.storage import files as storage
from mintdim_beam.storage import access as storage_access
from mintdim_beam.core.config import BuildConfig
from mintdim_beam.beam.cores import usable_cores
from mintdim_beam.core.digests import InputDigests, fingerprint_paths
from mintdim_beam.beam.options import BuildOptions, dask_sharers, encode_sharers, explicit_threads
from mintdim_beam.beam.publish import mark_failed, mark_started
from mintdim_beam.beam.transforms import UnitBuild, delivers_finish_bundle
from mintdim_beam.format import names
from mintdim_beam.storage import clients

RECOMMENDED_SHARD_BYTES = 512 * 1024 * 1024
DASK_MAX_PARTITIONS = 256
HASH_THREADS = 8
#: Inputs at least this large run on one worker process per core by default
#: (:func:`choose_local_mode`). Measured on two cores (``benchmarks/local_mode.py``):
#: in memory is faster up to about this size, worker processes from 256 MB.
MULTI_PROCESS_MIN_BYTES = 128 * 1024 * 1024
#: Runner names the launcher maps to the local FnApiRunner.
LOCAL_RUNNERS = (None, "DirectRunner", "FnApiRunner", "direct")
#: The local runner's flags that, when given, leave its mode to the user.
LOCAL_MODE_FLAGS = ("direct_running_mode", "direct_num_workers")


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
    #: The runner's ``mintdim`` counters (bytes_read, blocks_done, samples, tokens,
    #: ...), when it reports metrics.
    counters: dict = field(default_factory=dict)

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
    problem = J.OPTIONS_TYPE.format(type_name=type(options).__name__)
    raise errors.PipelineValidationError.invalid(
        problem=problem.en, rules=[J.OPTIONS_RULE.en], problem_vi=problem.vi, rules_vi=[J.OPTIONS_RULE.vi])


def resolve_runner(runner, options: PipelineOptions):
    """A runner object or name; local names become the FnApiRunner (its worker
    processes, in multi-process mode, start as ``local_workers.pipeline_runner`` says)."""
    if runner is None:
        runner = options.view_as(StandardOptions).runner
    if isinstance(runner, str) or runner is None:
        if runner in LOCAL_RUNNERS:
            from apache_beam.runners.portability.fn_api_runner import FnApiRunner

            return FnApiRunner(), "FnApiRunner"
        return _named_runner(runner), runner
    return runner, type(runner).__name__


def _named_runner(name: str):
    """The runner Beam knows by ``name``, made before anything is claimed or written: an
    unknown name used to fail inside ``beam.Pipeline`` with a ValueError traceback."""
    from apache_beam.runners.runner import create_runner

    try:
        return create_runner(name)
    except ValueError:
        problem = J.UNKNOWN_RUNNER.format(name=name)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.RUNNER_RULE.en], problem_vi=problem.vi,
            rules_vi=[J.RUNNER_RULE.vi]) from None


def check_runner_service(runner_obj, opts: PipelineOptions) -> None:
    """A runner that starts its own job service gets it now, before anything is claimed.

    Prism runs a binary (``--prism_location``, else a download for this Beam version),
    Flink and Spark a job server jar (``--flink_job_server_jar`` /
    ``--spark_job_server_jar``, else a download from Maven Central) under ``java``. Beam
    resolves them only in ``Pipeline.run``, after the outputs are claimed, so a missing
    binary, an unreachable download or no Java failed the build with a traceback and left
    the outputs marked failed (the local runner never can). Resolved here the same way
    (a download is cached, and ``run`` then finds it), or a ``PipelineValidationError``.
    Nothing to do with ``--job_endpoint`` (a job service already running).
    """
    from apache_beam.options.pipeline_options import (FlinkRunnerOptions, JobServerOptions, PortableOptions,
                                                      PrismRunnerOptions, SparkRunnerOptions)

    if opts.view_as(PortableOptions).job_endpoint:
        return
    name = type(runner_obj).__name__
    what = {"PrismRunner": "the Prism runner's binary", "FlinkRunner": "the Flink job server jar",
            "SparkRunner": "the Spark job server jar"}.get(name)
    if what is None:
        return
    flag = {"PrismRunner": "--prism_location", "FlinkRunner": "--flink_job_server_jar",
            "SparkRunner": "--spark_job_server_jar"}[name]
    try:
        if name == "PrismRunner":
            # A local --prism_location must be there; anything else (a URL, a release
            # Beam downloads itself) is resolved by the runner.
            location = opts.view_as(PrismRunnerOptions).prism_location
            if location and "://" not in location and not os.path.isfile(location):
                raise FileNotFoundError(f"{location} (--prism_location) is not a file")
            return
        if name == "FlinkRunner":
            if opts.view_as(FlinkRunnerOptions).flink_submit_uber_jar:
                return
            from apache_beam.runners.portability.flink_runner import FlinkJarJobServer as server
        else:
            if opts.view_as(SparkRunnerOptions).spark_submit_uber_jar:
                return
            from apache_beam.runners.portability.spark_runner import SparkJarJobServer as server
        job_server = server(opts)
        server.local_jar(job_server.path_to_jar(), opts.view_as(JobServerOptions).jar_cache_dir)
        java = opts.view_as(JobServerOptions).job_server_java_launcher or "java"
        if shutil.which(java) is None:
            raise RuntimeError(f"{java} (--job_server_java_launcher) is not on PATH: the job server is a Java program")
    except AttributeError:
        return      # another Beam's internals: its run() will say what is missing
    except (ValueError, RuntimeError, OSError) as exc:
        reason = " ".join(str(exc).split())
        problem = J.RUNNER_SERVICE_UNAVAILABLE.format(name=name, what=what, reason=reason)
        rule = J.RUNNER_SERVICE_RULE.format(flag=flag)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi]) from None


def flag_names(flags) -> set:
    """The option names a list of Beam flags mentions (``--name``, ``--name=value``)."""
    return {str(f).lstrip("-").partition("=")[0].replace("-", "_")
            for f in flags or () if str(f).startswith("--")}


def default_processes(total_input_bytes: int, cores: Optional[int] = None) -> int:
    """Worker processes of the default local configuration: one per usable core
    (``cores.usable_cores``: affinity and CPU quota) from ``MULTI_PROCESS_MIN_BYTES`` of
    input when there are several, else 0 (in memory)."""
    cores = usable_cores() if cores is None else cores
    return cores if cores > 1 and total_input_bytes >= MULTI_PROCESS_MIN_BYTES else 0


def choose_local_mode(config: BuildConfig, runner, opts: PipelineOptions, flags=None,
                      sizes: Optional[dict] = None) -> None:
    """Pick the local runner's mode when the user left it open (measured choice).

    In memory, the encode pool keeps every core busy while one thread parses, but the
    rest of the Python work (parsing, UNK audit, index rows, HF ids) shares one GIL.
    Worker processes share nothing but cost Beam's start-up and shut-down of each
    (Beam's trivial pipeline on two cores: about 1 s in memory, 4 s with two worker
    processes), which a large input repays, when at least two blocks own a line: one
    huge line is one block's work, which a second process cannot share.
    Output bytes are the same either way. The choice is made through Beam's own
    ``DirectOptions``. ``flags``: the list of flags the user gave, where the mode is
    left open unless it names ``--direct_running_mode`` or ``--direct_num_workers``
    (even at their defaults); a ``PipelineOptions`` object (``flags`` None) leaves it
    open unless it holds a value other than Beam's default. ``sizes``: the inputs'
    sizes as the launcher listed them (``patterns.expand_sizes``).
    """
    if runner is None:
        runner = opts.view_as(StandardOptions).runner
    if runner not in LOCAL_RUNNERS:
        return
    named = flag_names(flags) if flags is not None else set(opts.get_all_options(drop_default=True))
    if any(name in named for name in LOCAL_MODE_FLAGS):
        return
    listed = dict(zip([f.path for f in config.files], storage.sizes([f.path for f in config.files], sizes)))
    processes = default_processes(sum(listed[f.path] for f in config.files))
    files = [(f.path, listed[f.path], inputs.is_compressed(f.path)) for f in config.files]
    if processes and line_blocks.busy_blocks(files, config.block_size) < 2:
        processes = 0   # one block owns every line (one huge line): one process does all the work
    if processes:
        direct = opts.view_as(DirectOptions)
        direct.direct_running_mode = "multi_processing"
        direct.direct_num_workers = processes


def _encode_threads_option(opts: PipelineOptions):
    """``--encode_threads`` as given (None: the default), or the spec's validation error."""
    try:
        return explicit_threads(opts)
    except ValueError:
        problem = J.ENCODE_THREADS.format(value=opts.view_as(BuildOptions).encode_threads)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.ENCODE_THREADS_RULE.en], problem_vi=problem.vi,
            rules_vi=[J.ENCODE_THREADS_RULE.vi]) from None


def _check_local_workers(opts: PipelineOptions) -> None:
    """A negative ``--direct_num_workers`` reaches Beam, which fails with an IndexError
    once the pipeline runs (0 is Beam's "one per core")."""
    workers = opts.view_as(DirectOptions).direct_num_workers
    if workers is not None and workers < 0:
        problem = J.LOCAL_WORKERS.format(workers=workers)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.LOCAL_WORKERS_RULE.en], problem_vi=problem.vi,
            rules_vi=[J.LOCAL_WORKERS_RULE.vi])


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


def hash_inputs(config: BuildConfig, threads: int = HASH_THREADS) -> InputDigests:
    """Stream every input and tokenizer file through sha256 (FileSystems), a few at a time."""
    started = time.monotonic()
    paths = fingerprint_paths(config, storage.exists)
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(paths)))) as pool:
        files = dict(zip(paths, pool.map(storage.file_digest, paths)))
    return InputDigests(files, round(time.monotonic() - started, 3))


@quiet_when_asked
def launch(config: BuildConfig, runner=None, options=None, ask=None, interactive=None,
           echo=print, input_digests=None, quiet: bool = False, input_sizes=None) -> BuildResult:
    """Check, build and publish; raise the spec's error when the build cannot finish.

    ``options``: a list of Beam flags or a ``PipelineOptions``. ``input_digests``: the
    input files already hashed (a versioned build that checked for changes). Otherwise
    a local build hashes them on a thread while the pipeline is prepared, and other
    runners hash them in a pipeline step alongside the build. ``quiet``: no progress
    display on stderr (``progress``) and, where logging is unconfigured, no log record
    either (``quiet_logs``); the result lines still go to ``echo``.
    ``input_sizes``: ``{path: size}`` of the inputs already listed
    (``patterns.expand_sizes``, as ``versioned.launch_versioned`` does).

    The inputs are listed once (with the pattern expansion), and that listing serves
    the checks, the choice of local mode, the progress total and the block list: on
    a bucket each round of asking is a listing, or requests per file.
    """
    flags = list(options) if isinstance(options, (list, tuple)) else None
    opts = make_options(options)
    threads = _encode_threads_option(opts)
    _check_local_workers(opts)
    clients.configure(opts)  # s3:// endpoints and keys, before preflight reads
    preflight.check_schemes(config)
    storage_access.check(storage_access.build_paths(config), opts)   # in seconds, not after retries
    if input_sizes is None:
        config, input_sizes = patterns.expand_sizes(config)     # glob entries, through FileSystems
    else:
        config = patterns.expand(config)
    pre = preflight.check(config, ask=ask, interactive=interactive, claim=False, sizes=input_sizes)
    # Only the digests are kept: the tokenizers the checks loaded (tens of MiB each) are
    # the workers' to load, not the launcher's to hold for the whole build.
    tokenizer_sha256 = {s.path: d for s, d in pre.tokenizer_sha256.items()}
    del pre
    # The block plan, made once from the listed sizes: the runner's tuning, the progress
    # total and the pipeline's encode groups all read this one list.
    groups = blocks.plan_groups(config, input_sizes)
    runner, opts = _runner_alias(runner, opts)
    choose_local_mode(config, runner, opts, flags if options is not None else [], input_sizes)
    runner_obj, runner_name = resolve_runner(runner, opts)
    check_runner_service(runner_obj, opts)
    direct = opts.view_as(DirectOptions)
    hashing = None
    if input_digests is None and runner_name == "FnApiRunner":
        # Local build: the launcher hashes the inputs on a thread (sha256 and file reads
        # release the GIL) while it builds the pipeline, instead of a pipeline step.
        hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hash-inputs")
        input_digests = hashing.submit(hash_inputs, config)
    sharers = _tune_for_runner(config, runner_name, opts, groups)
    if sharers is None:
        sharers = encode_sharers(runner_name, opts)
    started = time.time()
    build_info = {
        "started_at": _dt.datetime.fromtimestamp(started, _dt.timezone.utc).isoformat(),
        "runner": runner_name,
        "direct_running_mode": direct.direct_running_mode,
        "direct_num_workers": direct.direct_num_workers,
        # Resolved on each worker from these two (see options.py).
        "encode_threads": threads if threads is not None else "auto",
        "encode_sharers": sharers,
        "block_size": config.block_size,
        "build_batch": [f.build_batch for f in config.files],
        # The guard rails the published outputs passed (None: no limit); never in the manifest,
        # since they change no byte of an output.
        "limits": dataclasses.asdict(config.limits),
        "tokenizer_sha256": tokenizer_sha256,
        "versions": _versions(),
    }
    # Claimed last, when nothing before the pipeline can fail and leave a claim behind;
    # the workers then never claim (a claim gone is one the launcher released).
    build_info["claimed"] = True
    preflight.claim_outputs(config)
    shown = build_progress.for_build(config, runner_name, quiet, started, groups=groups)
    try:
        mark_started(config, build_info)     # a store failing here too ends as _build_error says
        with shown.context:
            counters = _run_pipeline(config, runner_obj, opts, build_info, input_digests, shown.on_counters,
                                     groups, given=runner)
    except BaseException as exc:  # KeyboardInterrupt/SIGTERM too: say what happened
        if not (isinstance(exc, KeyboardInterrupt) and published_all(config)):
            raise _build_error(config, exc) from None
        counters = {}   # stopped once every output was published: the build is done
        echo("[unit-build] interrupted after every output was published; the datasets are complete")
    finally:
        if hashing is not None:
            hashing.shutdown(wait=False)
    recorded = _recorded_error(config)
    if recorded is not None:
        raise recorded
    for line in _claims_left(config):
        echo(line)
    try:
        result = dataclasses.replace(collect(config, build_info), counters=counters)
        for line in shard_lines(result):
            echo(line)
        planned = build_progress.planned_bytes(config, input_sizes)
        for line in build_progress.closing_lines(result, runner_name, time.time() - started, planned):
            echo(line)
    except KeyboardInterrupt:
        # Published before the interruption: the exit code must say the build is done.
        echo("[unit-build] interrupted while reporting; every output is published and complete")
        return dataclasses.replace(collect(config, build_info), counters=counters)
    return result


def published_all(config: BuildConfig) -> bool:
    """Every output has this build's manifest (its ``build_info.json`` names this run)."""
    for out in config.outputs:
        info = storage.join(out.path, names.BUILD_INFO)
        if not storage.exists(storage.join(out.path, names.MANIFEST)) or not storage.exists(info):
            return False
        if json.loads(storage.read_bytes(info)).get("run_id") != out.run_id:
            return False
    return True


def _run_pipeline(config: BuildConfig, runner_obj, opts: PipelineOptions, build_info: dict,
                  input_digests, on_counters=None, groups=None, given=None) -> dict:
    """Run the build to completion; close what the runner opened; return the runner's
    ``mintdim`` counters ({} when it reports none). ``on_counters``: shown a live
    runner's counters while it runs (``build_progress.wait``). ``groups``: the block
    plan (``blocks.plan_groups``) the launcher made. ``given``: the runner the caller
    named (``local_workers.pipeline_runner``).

    ``input_digests``: None (the pipeline hashes the inputs), an ``InputDigests``, or a
    future of one still being computed. It is awaited before the transforms are built:
    Beam copies (pickles) every DoFn, with its arguments, when it is applied.
    """
    digests = None
    if input_digests is not None:
        if not isinstance(input_digests, InputDigests):
            input_digests = input_digests.result()
        digests = input_digests.files
        build_info["fingerprint"] = {
            "computed_by": "launcher",
            "files": len(input_digests.files),
            "bytes": sum(size for size, _ in input_digests.files.values()),
            "seconds": input_digests.seconds,
        }
    pipelined = delivers_finish_bundle(build_info.get("runner"))
    # One process with several cores (the local in-memory runner): the tokenizer's
    # own threads beat a word-by-word encoder on one core.
    words = not (build_info.get("runner") == "FnApiRunner"
                 and build_info.get("direct_running_mode") != "multi_processing"
                 and usable_cores() > 1)
    build_info["accelerators"] = config.accelerators
    build_info["bpe_word_encoder"] = words and config.accelerators
    with local_workers.pipeline_runner(runner_obj, given, opts) as runner_obj:
        p = beam.Pipeline(runner=runner_obj, options=opts)
        _ = p | "UnitBuild" >> UnitBuild(config, build_info, digests, pipeline_blocks=pipelined,
                                         word_encoder=words, encode_sharers=build_info["encode_sharers"],
                                         groups=groups)
        result = p.run()
    try:
        state = build_progress.wait(result, build_info.get("runner"), on_counters)
    finally:
        client = getattr(result, "client", None)   # the DaskRunner opens a Client per run
        if client is not None and hasattr(client, "close"):
            client.close()
    if state is not None and str(state) not in ("DONE", "PipelineState.DONE"):
        raise RuntimeError(f"the pipeline ended in state {state}")
    return build_progress.counters(result)


def _runner_alias(runner, opts: PipelineOptions):
    """``DaskRunner`` by name: Beam resolves only its built-in runner names."""
    name = runner if runner is not None else opts.view_as(StandardOptions).runner
    if isinstance(name, str) and name.lower() in ("daskrunner", "dask"):
        from apache_beam.runners.dask.dask_runner import DaskRunner

        return DaskRunner(), opts
    return runner, opts


def _tune_for_runner(config: BuildConfig, runner_name: str, opts: PipelineOptions,
                     groups: list) -> Optional[int]:
    """Dask: size the bag partitions, and return the encode sharers per machine.

    Partitions: as many as the cluster has threads, twice, unless the user chose. The
    Dask runner keeps the partitioning of the first ``Create`` through the whole graph,
    128 elements per partition by default: a build of fewer than 128 blocks would run
    as a single chain of tasks on one worker. Each GroupByKey becomes a task-based
    shuffle whose task count grows with the square of the partitions, so more
    partitions than threads only costs scheduler time.

    Encode sharers: the threads of the workers on the busiest host
    (``options.dask_sharers``), known only by asking the scheduler; None elsewhere (or
    without a scheduler address), where ``options.encode_sharers`` decides.
    """
    if "DaskRunner" not in str(runner_name):
        return None
    from apache_beam.runners.dask.dask_runner import DaskOptions

    dask = opts.view_as(DaskOptions)
    nthreads = _dask_nthreads(dask.address)
    if not (dask.npartitions or dask.partition_size):
        wanted = 2 * (sum(nthreads.values()) or usable_cores())
        dask.npartitions = max(1, min(len(groups), wanted, DASK_MAX_PARTITIONS))
    return dask_sharers(nthreads) if nthreads else None


def _dask_nthreads(address: Optional[str]) -> dict:
    """``{worker address: threads}`` of the Dask cluster at ``address`` ({} without one)."""
    if address:
        try:
            from distributed import Client

            with Client(address, timeout=10) as client:
                return dict(client.nthreads())
        except Exception:  # the runner will report an unreachable scheduler itself
            pass
    return {}


def _recorded_error(config: BuildConfig) -> Optional[errors.MintDimError]:
    """The spec error that finalize recorded for a policy abort, if any."""
    for out in config.outputs:
        record = storage.join(layout.staging_dir(out), names.ERROR_RECORD)
        if storage.exists(record):
            return errors.error_from_dict(json.loads(storage.read_bytes(record)))
    return None


def _build_error(config: BuildConfig, exc: BaseException) -> BaseException:
    """A crashed build: mark every output failed and hand back the cause."""
    recorded = _recorded_error(config)
    if recorded is not None:
        return recorded
    store = _store_error(exc)
    if store is not None:
        return _store_failed(config, store)
    if isinstance(exc, KeyboardInterrupt):
        message = f"the build was interrupted ({exc or 'KeyboardInterrupt'})"
    else:
        full = _disk_full(exc)
        if full is not None:
            try:
                mark_failed(config, str(full), full.to_dict())
            except OSError:
                pass        # the markers already say "not finalized"; the claim is released below
            for out in config.outputs:
                claims.release(out.path, out.run_id)
            return full
        message = f"{type(exc).__name__}: {exc}"
    mark_failed(config, message)
    return exc


def _store_error(exc: BaseException) -> Optional[errors.StoreRequestError]:
    """The store's error that stopped the build (a worker's, as the runner re-raised
    it, or the launcher's own), or None."""
    seen = exc
    while seen is not None:
        if isinstance(seen, errors.StoreRequestError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _store_failed(config: BuildConfig, store: errors.StoreRequestError) -> errors.StoreRequestError:
    """A store that kept failing: each output's markers say so where the store still
    takes them, its claim is released where it can be, and the error says which claims
    could not be (each a path to delete before that directory is built into again)."""
    left = []
    for out in config.outputs:
        try:
            mark_failed(dataclasses.replace(config, outputs=(out,)), str(store))
        except errors.StoreRequestError:
            pass        # the markers still say "not finalized", or the failure of an earlier attempt
        try:
            claims.release(out.path, out.run_id)
            if claims.owns(out.path, out.run_id):
                left.append(layout.claim_path(out.path))
        except errors.StoreRequestError:
            left.append(layout.claim_path(out.path))
    return store.with_claim("left", ", ".join(left)) if left else store.with_claim("released")


def _claims_left(config: BuildConfig) -> list:
    """Warning lines for the claims a published build could not remove (the store
    failed the DELETE: publish.finalize leaves them rather than fail a complete dataset)."""
    lines = []
    for out in config.outputs:
        try:
            if not claims.owns(out.path, out.run_id):
                continue
            claims.release(out.path, out.run_id)
        except errors.StoreRequestError as exc:
            lines.append(f"[unit-build:warning] {out.path} is published and complete, but its claim "
                         f"{layout.claim_path(out.path)} could not be removed ({exc.status} {exc.code}): "
                         "delete it before building into this directory again")
    return lines


def _disk_full(exc: BaseException) -> Optional[errors.DiskFullError]:
    """The spec's style of error for a full disk met anywhere in the build (the worker's
    OSError reaches the launcher as its text inside the runner's error), or None."""
    seen = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            needed = seen.needed_bytes if isinstance(seen, storage.NoSpaceError) else -1
            return errors.DiskFullError.at(seen.filename or "", needed)
        seen = seen.__cause__ or seen.__context__
    found = re.search(r"\[Errno 28\][^']*'([^']+)'", str(exc))
    if found is not None or "No space left on device" in str(exc):
        return errors.DiskFullError.at(found.group(1) if found else "")
    return None


def collect(config: BuildConfig, build_info: dict) -> BuildResult:
    """Read back each published output's stats and shard list."""
    outputs = []
    for out in config.outputs:
        stats = json.loads(storage.read_bytes(storage.join(out.path, names.STATS)))
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


# --------------------------------------------------------------------------- plan


def length_histograms(config: BuildConfig, runner=None, options=None, workdir: Optional[str] = None,
                      sizes: Optional[dict] = None) -> dict:
    """``{output index: (LengthHistogram, bad_records)}`` of a job, by running its
    tokenization (``transforms.CountTokenLengths``) without building it.

    The merged counts are written as small JSON files under ``workdir`` (a temporary
    directory by default; give a shared path on a distributed runner), then read back.
    ``sizes``: the inputs' sizes already listed (``patterns.expand_sizes``), for the
    block list.
    """
    import shutil
    import tempfile

    from mintdim_beam.beam.transforms import CountTokenLengths

    opts = make_options(options)
    clients.configure(opts)
    runner, opts = _runner_alias(runner, opts)
    runner_obj, _ = resolve_runner(runner, opts)
    own_dir = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="mintdim-plan-")
    try:
        with local_workers.pipeline_runner(runner_obj, runner, opts) as runner_obj, \
                beam.Pipeline(runner=runner_obj, options=opts) as p:
            _ = (p
                 | "CountTokenLengths" >> CountTokenLengths(config, sizes)
                 | "WriteHistograms" >> beam.Map(_write_histogram, workdir))
        out = {}
        for o in config.outputs:
            path = storage.join(workdir, f"histogram-{o.index}.json")
            if storage.exists(path):
                data = json.loads(storage.read_bytes(path))
                out[o.index] = ({int(k): int(v) for k, v in data["lengths"].items()}, data["bad_records"])
            else:
                out[o.index] = ({}, 0)
        return out
    finally:
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)


def _write_histogram(element, workdir: str) -> None:
    output, (hist, bad) = element
    body = {"lengths": {str(k): v for k, v in sorted(hist.items())}, "bad_records": bad}
    storage.write_text(storage.join(workdir, f"histogram-{output}.json"), json.dumps(body) + "\n")
