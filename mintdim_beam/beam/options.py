"""The build's own pipeline options, and how many encode threads each SDK process runs.

Options that change how a build runs, but never its output bytes, are Beam pipeline
options: they travel with the pipeline to every worker, appear in ``--help`` beside
Beam's own, and are read through ``view_as(BuildOptions)``.

``--encode_threads``: how many tokenizer calls run at once in one SDK worker process.
What is right depends on how many such processes share a machine's cores, which only
the runner knows, so the default is worked out in two steps. The launcher (or
``UnitBuild.expand`` for a pipeline of the user's own) counts the *sharers* per machine
from the runner and its options (:func:`encode_sharers`); each worker divides its own
usable cores by that count in ``setup()`` (:func:`encode_threads`):

=====================  ============================================  ===============
runner                 processes (or task threads) per machine        threads each
=====================  ============================================  ===============
in memory (local)      one                                            cores, at most 4
multi-process (local)  ``--direct_num_workers``                       cores / workers
Dataflow               one per vCPU                                   1
Flink, Spark, portable ``--sdk_worker_parallelism`` (0: one per core) cores / that
Dask                   threads of a host's workers (from the          cores / threads
                       scheduler; one per core without an address)
anything else          one per core (never oversubscribe)             1
=====================  ============================================  ===============

The cap of 4 is a measured default (SentencePiece gains little past it on one batch
stream); an explicit ``--encode_threads`` is used as given.
"""

from __future__ import annotations

from typing import Optional

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, PortableOptions

from mintdim_beam.beam.cores import usable_cores

#: Sharers per machine: one SDK process (or task thread) per core.
PER_CORE = 0
#: The default never starts more encode threads than this per process.
MAX_DEFAULT_THREADS = 4

_LOCAL = ("FnApiRunner", "DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner", "PrismRunner")
_PORTABLE = ("FlinkRunner", "SparkRunner", "PortableRunner", "SparkUberJarJobServer", "FlinkUberJarJobServer")


class BuildOptions(PipelineOptions):
    """``--encode_threads``: the build's pipeline option (see the module docstring)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--encode_threads", type=int, default=None,
            help="tokenizer calls that run at once in each SDK worker process (1: encode on the "
                 "process's own thread); default: the process's share of its machine's cores, "
                 "from the runner (1 on Dataflow, cores / --sdk_worker_parallelism on Flink and "
                 "Spark, cores / a Dask worker's threads, cores / --direct_num_workers locally, "
                 f"at most {MAX_DEFAULT_THREADS})")


def explicit_threads(options: PipelineOptions) -> Optional[int]:
    """``--encode_threads`` as given, or None for the default; ValueError below 1."""
    value = options.view_as(BuildOptions).encode_threads
    if value is not None and value < 1:
        raise ValueError(f"--encode_threads must be a positive integer, got {value}")
    return value


def encode_sharers(runner_name: str, options: PipelineOptions) -> int:
    """SDK processes (or task threads) that share one machine's cores under this runner:
    a count, :data:`PER_CORE` or :data:`DASK_WORKER_THREADS`."""
    name = str(runner_name)
    if name in _LOCAL:
        direct = options.view_as(DirectOptions)
        if direct.direct_running_mode in ("multi_processing", "multi_threading"):
            return int(direct.direct_num_workers or 0) or PER_CORE   # 0: Beam starts one per core
        return 1
    # Dask: the launcher asks the scheduler for its hosts' threads (dask_sharers); without
    # it, every thread of a Dask cluster is taken to run a task of its own, one per core.
    if name in _PORTABLE:
        # Beam declares this flag without a type: "4" arrives as text.
        return int(options.view_as(PortableOptions).sdk_worker_parallelism or 0) or PER_CORE
    return PER_CORE   # Dataflow (one SDK process per vCPU) and any runner not known here


def dask_sharers(nthreads: dict) -> int:
    """Encode sharers on a Dask cluster from ``{worker address: threads}``: the most
    threads any one host runs (``dask worker --nworkers 4 --nthreads 1``: 4)."""
    hosts: dict = {}
    for address, threads in nthreads.items():
        host = str(address).split("://")[-1].rsplit(":", 1)[0]
        hosts[host] = hosts.get(host, 0) + int(threads)
    return max(hosts.values(), default=0) or PER_CORE


def encode_threads(explicit: Optional[int], sharers: int, cores: Optional[int] = None) -> int:
    """Encode threads for this process (run on the worker): ``explicit`` when given,
    else its share of ``cores`` (default: this process's usable cores)."""
    if explicit is not None:
        return explicit
    if sharers == PER_CORE:
        return 1
    cores = usable_cores() if cores is None else cores
    return max(1, min(MAX_DEFAULT_THREADS, cores // sharers))
