"""The Beam layer: the ``UnitBuild`` composite transform and its DoFns.

Data flow (DESIGN.md §6). Nothing per sample travels through a Beam shuffle: a
worker encodes a block and spills its records to the output's staging area, index
parts and content hashes are spilled the same way, and Beam moves only per-block
summaries, byte ranges and task descriptions. That keeps memory per worker bounded by
block, batch and shard size on every runner, including the in-memory one, which holds
whole PCollections (and shuffles) in memory.

    EncodeGroup ──EncodeBlocks──► spills (records, metadata, hashes sorted by digest)
                               + BlockSummary ──CollectSummaries──► plan
    plan ──► ShardTask | BlockPlan | DuplicateTask ──WriteOutputs──► staged shards,
                 index parts, duplicate parts
    input files ──HashInputs──► sizes and sha256 (the manifest's fingerprint; local
                 builds get them from the launcher instead)
    plan + every result ──CollectResults──► Finalize ──► published output directory

Duplicates: each output's digest space is split into as many ranges as its input size
could need (``DUPLICATE_TASK_BYTES`` each), fixed before encoding. Every encoder
spills its block's content hashes sorted by digest, with the offsets where each range
begins, so a run of ranges is one contiguous slice of each block's spill. The plan,
which knows the sample counts, joins consecutive ranges into duplicate tasks of about
``plan.DUPLICATE_TASK_ROWS`` hashes; they run in the write stage, next to the index
parts, with no shuffle of their own, and the plan only lists the spills (one tuple per
output, shared by its tasks). A task reads its slice of each spill, groups equal
digests and writes its groups sorted by first sample id; finalize merges the tasks'
files into ``duplicate_index.jsonl``.

Portability. The pipeline uses only ParDo, GroupByKey, Flatten, Create and one
singleton side input (the plan's list of hash spills, which every duplicate task
reads); no tagged outputs, no combiners. That is the subset every runner translates
faithfully (``tests/remote/test_scaleout.py`` builds on Dask with the side input).
Beam's DaskRunner, in particular, computes a side input by re-running its upstream
graph inside the consuming task; it drops output tags; it turns ``Reshuffle``
into a no-op; and it computes only the graph behind the last transform. Hence the
shape above: everything flows into one ``Finalize`` through a single-key GroupByKey,
work is spread by GroupByKeys on stable keys (``_Redistribute``), and the plan travels
inside the elements that need it.

Where the work lives. This module wires the stages (``UnitBuild``) and sizes the
duplicate search; each stage's DoFns live in a module of their own: ``encode_stage``
(encode and spill a block), ``write_stage`` (shard, index and duplicate tasks) and
``finalize_stage`` (input hashing and publishing), on what they share in ``stage_base``.
``CountTokenLengths``, the planner's histogram without a build, stays here.

Retries. Every side effect is a whole file with a deterministic name, written
atomically, and every collected result is de-duplicated by its key, so a retried (or
twice-delivered) bundle rewrites the same bytes and never duplicates a record.
"""

from __future__ import annotations

import logging
from typing import Callable, Optional

import apache_beam as beam
import numpy as np
from apache_beam.utils.shared import Shared

from mintdim_beam.core import blocks
from mintdim_beam.format import inputs
from mintdim_beam.format.inputs import COMPRESSION_RATIO
from mintdim_beam.beam import options
from mintdim_beam.storage import files as storage
from mintdim_beam.core.block_result import BAD
from mintdim_beam.core.config import COUNTING_POLICIES, BuildConfig
from mintdim_beam.core.plan import BlockRef, make_plan, merge_counts
from mintdim_beam.core.records import BlockEncoder
from mintdim_beam.tokenization.adapters import open_tokenizer

# The stages' DoFns live in their own modules; this one wires them.
from mintdim_beam.beam.encode_stage import EncodeBlockFn, read_blocks
from mintdim_beam.beam.finalize_stage import FinalizeFn, HashInputFn
from mintdim_beam.beam.stage_base import DIGEST, PLAN, StorageDoFn
from mintdim_beam.beam.write_stage import write_task_key, write_tasks, WriteOutputsFn
from mintdim_beam.storage import clients

#: Input bytes per digest range of the encoders' cut: a range holds the content hashes
#: of about this much input, 2^18 of them (~30 MiB at peak) at 64 bytes a sample, the
#: most a duplicate task groups (``plan.DUPLICATE_TASK_ROWS``). The cut is fixed before
#: encoding, from the input's size, so that each encoder can spill its hashes already
#: cut (a task then needs no shuffle of its own); the plan joins ranges into tasks.
DUPLICATE_TASK_BYTES = 64 << 18
#: Text bytes assumed per byte of a compressed input, to size its output's duplicate
#: tasks before the input is read (a guess changes the work's split, never the output).
MAX_DUPLICATE_TASKS = 4096         # beyond 10^9 samples, tasks grow instead (each reads every block)

log = logging.getLogger(__name__)


def input_sizes(config: BuildConfig, known: Optional[dict] = None) -> dict:
    """``{path: size}`` of every input: ``known`` (as a launcher listed them), the rest
    asked for (a missing input is ``FileNotFoundError``)."""
    paths = [f.path for f in config.files]
    return dict(zip(paths, storage.sizes(paths, known)))


class _Redistribute(beam.PTransform):
    """Spread elements over workers with a GroupByKey on a stable key of each element.

    ``beam.Reshuffle`` does this on most runners, but the Dask runner translates it to
    a no-op, which would leave every shard task in the single partition holding the plan.
    """

    def __init__(self, key: Callable):
        super().__init__()
        self._key = key

    def expand(self, pcoll):
        key = self._key
        return (
            pcoll
            | "Key" >> beam.Map(lambda x: (key(x), x))
            | "Group" >> beam.GroupByKey()
            | "Values" >> beam.Map(_first_value)
        )


def _first_value(kv):
    """One element per key: keys are unique, so a second value is a redelivered copy."""
    return next(iter(kv[1]))


def _plan_from(config: BuildConfig, summaries):
    """The plan from every block's summary (one per block, even if a bundle was retried)."""
    unique = {(s.file, s.block): s for s in summaries}
    return make_plan(config, [unique[k] for k in sorted(unique)])


def duplicate_tasks(input_bytes: int) -> int:
    """How many digest ranges the encoders cut the content hashes of an output of
    ``input_bytes`` into (the plan joins them into duplicate tasks)."""
    return max(1, min(MAX_DUPLICATE_TASKS, -(-input_bytes // DUPLICATE_TASK_BYTES)))


def _hash_spills(plan) -> dict:
    """The plan's hash spills by output: what the duplicate tasks read (DuplicateTask)."""
    return plan.hash_spills


def _tag(kind: str):
    return lambda value: (kind, value)


#: Runners that deliver a DoFn's ``finish_bundle`` outputs (UnitBuild's pipeline_blocks).
FINISH_BUNDLE_RUNNERS = ("fnapi", "direct", "dataflow", "flink", "portable", "spark", "prism")


def delivers_finish_bundle(runner_name) -> bool:
    """Whether a runner (by name, any case, with or without "Runner") is known to."""
    name = str(runner_name or "").lower()
    name = name[:-len("runner")] if name.endswith("runner") else name
    return name in FINISH_BUNDLE_RUNNERS


class UnitBuild(beam.PTransform):
    """Build every output of a validated :class:`BuildConfig`.

    ``p | UnitBuild(config)`` returns a PCollection of one dict per output directory:
    ``output`` (its path) with ``stats`` and ``shards``, or ``output`` with the
    ``error`` (a ``MintDimError.to_dict()``) that stopped the build. Run the launcher-side
    checks (``preflight.check``) before constructing it; ``mintdim_beam.run`` does.

    ``input_digests`` (path -> (size, sha256)) lets a launcher that has already hashed
    the input and tokenizer files skip the ``HashInputs`` step. ``groups``: the block
    plan (``blocks.plan_groups``) the launcher made from the sizes it listed; without
    one, the inputs' sizes are asked for here and the plan made from them.

    ``pipeline_blocks``: let the encoder overlap the blocks of a bundle (a block's
    summary then may leave in ``finish_bundle``). Worth about a tenth of the encoding
    time, but only for runners that deliver ``finish_bundle`` outputs: Beam's
    DaskRunner drops them, so it is off unless the runner is known to
    (:func:`delivers_finish_bundle`, which the launcher checks).

    ``word_encoder``: let a byte-level BPE ``tokenizer.json`` encode word by word
    (``mintdim_beam.tokenization.accel.bpe_words``: same ids, 1.7-4x less CPU, but on one core per
    process). Right wherever each worker process has about a core to itself (Beam's
    multi-process and remote runners); the launcher turns it off for the local
    in-memory runner, where the one process has every core and the tokenizer's own
    threads use them. Output bytes are the same either way.

    Encode threads per worker process come from the pipeline's ``--encode_threads``
    (``options.BuildOptions``), or by default from the process's share of its machine's
    cores: ``encode_sharers`` SDK processes (or task threads) per machine, by default
    what the pipeline's runner and options say (``options.encode_sharers``).
    """

    def __init__(self, config: BuildConfig, build_info: dict | None = None,
                 input_digests: dict | None = None, pipeline_blocks: bool = False,
                 word_encoder: bool = True, encode_sharers: Optional[int] = None,
                 groups: list | None = None):
        super().__init__()
        self._config = config
        self._build_info = build_info or {}
        self._input_digests = input_digests
        self._pipeline_blocks = pipeline_blocks
        self._word_encoder = word_encoder
        self._encode_sharers = encode_sharers
        self._groups = groups

    def _sharers(self, pbegin) -> int:
        if self._encode_sharers is not None:
            return self._encode_sharers
        return options.encode_sharers(type(pbegin.pipeline.runner).__name__, pbegin.pipeline.options)

    def expand(self, pbegin):
        from mintdim_beam.core.digests import fingerprint_paths

        config = self._config
        shared = Shared()
        fs = clients.filesystem_options(pbegin.pipeline.options)
        groups = self._groups if self._groups is not None else blocks.plan_groups(config, input_sizes(config))
        refs = [ref for group in groups for ref in group.blocks]
        listed: dict = {}   # each input's size as its blocks were planned: what the build reads
        for r in refs:
            path = config.files[r.file].path
            listed[path] = max(listed.get(path, 0), r.end)
        input_bytes = {o.index: 0 for o in config.outputs}
        for r in refs:
            path = config.files[r.file].path
            input_bytes[config.files[r.file].output] += (r.end - r.start) * (
                COMPRESSION_RATIO if inputs.is_compressed(path) else 1)
        dup_tasks = {o: duplicate_tasks(n) for o, n in input_bytes.items()}
        summaries = (
            pbegin
            | "ListBlocks" >> beam.Create(groups, reshuffle=False)
            | "SpreadBlocks" >> _Redistribute(lambda g: g.key)
            | "EncodeBlocks" >> beam.ParDo(
                EncodeBlockFn(config, shared, fs, self._pipeline_blocks, self._word_encoder,
                               options.explicit_threads(pbegin.pipeline.options), self._sharers(pbegin),
                               dup_tasks))
        )
        # A single-key GroupByKey rather than CombineGlobally/ToList: every runner gets
        # a GroupByKey right, while Dask's combine emits one partial list per partition.
        plan = (
            summaries
            | "KeySummaries" >> beam.Map(lambda s: (0, s))
            | "CollectSummaries" >> beam.GroupByKey()
            | "MakePlan" >> beam.MapTuple(lambda _, summaries: _plan_from(config, summaries))
        )
        # Shards, index parts and duplicate tasks are independent tasks of the same plan:
        # one stage writes them all, spread over the workers together.
        written = (
            plan
            | "ListWriteTasks" >> beam.FlatMap(write_tasks, config.index_layout)
            | "SpreadWriteTasks" >> _Redistribute(write_task_key)
            | "WriteOutputs" >> beam.ParDo(WriteOutputsFn(config, shared, fs, self._word_encoder),
                                           beam.pvalue.AsSingleton(plan | "HashSpills" >> beam.Map(_hash_spills)))
        )
        results = [plan | "TagPlan" >> beam.Map(_tag(PLAN)), written]
        if self._input_digests is None:
            # Hashing reads every input once more; as its own branch it runs on the
            # workers alongside encoding instead of before the build on the launcher.
            results.append(
                pbegin
                | "ListInputFiles" >> beam.Create(fingerprint_paths(config, storage.exists), reshuffle=False)
                | "SpreadInputFiles" >> _Redistribute(lambda path: path)
                | "HashInputs" >> beam.ParDo(HashInputFn(fs))
                | "TagDigests" >> beam.Map(_tag(DIGEST))
            )
        return (
            results
            | "FlattenResults" >> beam.Flatten()
            | "KeyResults" >> beam.Map(lambda r: (0, r))
            | "CollectResults" >> beam.GroupByKey()
            | "Finalize" >> beam.ParDo(FinalizeFn(config, self._build_info, self._input_digests, fs, shared,
                                                      self._word_encoder, listed))
        )


class CountTokenLengths(beam.PTransform):
    """The token-length histogram of each output of a job, without building it.

    Reads the job's input blocks and encodes them with the build's own
    :class:`~mintdim_beam.core.records.BlockEncoder` against a single unit of size 0 under
    the ``skip`` overflow policy: every sample overflows, so no record is laid out,
    and the encoder still reports each sample's exact token count. Bad records are
    skipped and counted. Emits ``(output index, ({length: count}, bad_records))``,
    one element per output, merged by ``plan.merge_counts``. ``input_sizes``:
    the inputs' sizes as already listed, for the block list (as ``UnitBuild``'s).
    """

    def __init__(self, config: BuildConfig, input_sizes: dict | None = None):
        super().__init__()
        self._config = config
        self._input_sizes = input_sizes

    def expand(self, pbegin):

        fs = clients.filesystem_options(pbegin.pipeline.options)
        return (pbegin
                | "ListBlocks" >> beam.Create(blocks.plan_blocks(self._config, input_sizes(self._config, self._input_sizes)))
                | "CountTokens" >> beam.ParDo(_CountTokensFn(self._config, fs))
                | "MergeHistograms" >> beam.CombinePerKey(merge_counts))


class _CountTokensFn(StorageDoFn):
    """Encode one block; emit ``(output, ({length: count}, bad_records))``."""

    def __init__(self, config: BuildConfig, filesystem_options: Optional[dict]):
        super().__init__(filesystem_options)
        self._config = config
        self._encoders = None

    def setup(self):
        super().setup()
        tokenizers = {}
        self._encoders = {}
        for spec in self._config.files:
            key = (spec.tokenizer.kind, spec.tokenizer.path)
            if key not in tokenizers:
                tokenizers[key] = open_tokenizer(key[0], key[1], storage.read_bytes,
                                                 accelerators=self._config.accelerators, exists=storage.exists)
            self._encoders[spec.index] = BlockEncoder(spec, tokenizers[key], COUNTING_POLICIES, sizes=(0,))

    def process(self, ref: BlockRef):
        # Read as the build reads it; an input the build refuses fails the plan as it
        # fails the build (counting its lines as bad records would plan on part of it).
        spec = self._config.files[ref.file]
        for block, lines, _ in read_blocks(spec.path, ref, self._config.block_size):
            yield self._count(spec, lines, block.start == 0)

    def _count(self, spec, lines: list, file_start: bool):
        result = self._encoders[spec.index].encode_block(lines, file_start=file_start)
        good = result.status != BAD
        values, counts = np.unique(result.orig_count[good], return_counts=True)
        return spec.output, (dict(zip(values.tolist(), counts.tolist())), int((~good).sum()))
