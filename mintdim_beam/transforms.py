"""The Beam layer: the ``UnitBuild`` composite transform and its DoFns.

Data flow (DESIGN.md §6). Tokens never travel through a Beam shuffle: a worker encodes
a block and spills its records to the output's staging area, and Beam moves only small
summaries, content hashes and task descriptions. That keeps memory per worker bounded
by block, batch and shard size on every runner, including the in-memory one, which
holds whole PCollections in memory.

    BlockRef ──EncodeBlocks──► spills + BlockSummary ──► plan (singleton side input)
        │                                                  │
        └── (output, bucket) → hashes ──GroupByKey──► duplicate groups ──► parts
    plan ──► ShardTask ──WriteShards──► staged shards
    plan ──► BlockPlan ──WriteIndexParts──► index parts
    everything ──Finalize──► published output directory
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from . import blocks, indexes, layout, storage
from .config import BuildConfig
from .plan import BlockRef, BlockSummary, OverflowSample, ShardTask, make_plan
from .records import BAD, OK, OVF_TRUNCATE, BlockEncoder, BlockResult
from .shard_format import encode_records
from .tokenizers import load_tokenizer

NAMESPACE = "mintdim"
HASH_BUCKETS = 64

log = logging.getLogger(__name__)


# Elements that cross a Beam boundary are frozen dataclasses, not NamedTuples: some
# runners (Dask) move tuples through coders that drop the NamedTuple class.


# EncodeBlocks has two kinds of output. They travel as (kind, value) pairs split by two
# FlatMaps rather than as tagged outputs, which not every runner supports (Dask mixes them).
SUMMARY, HASHES = "summary", "hashes"


def _take(element, kind):
    if element[0] == kind:
        yield element[1]


class _Handle:
    """Weak-referenceable holder, so ``Shared`` can cache tokenizers per process."""

    def __init__(self, value):
        self.value = value


def _load_tokenizers(config: BuildConfig):
    cache = {}
    for spec in {f.tokenizer for f in config.files}:
        cache[spec] = load_tokenizer(spec.kind, spec.path, storage.read_bytes(spec.path))
    return _Handle(cache)


@dataclass(frozen=True)
class ShardResult:
    output: int
    unit: int
    shard: int
    samples: int
    bytes: int


@dataclass(frozen=True)
class PartResult:
    output: int
    file: int
    block: int
    samples_with_unk: int
    unk_tokens: int


@dataclass(frozen=True)
class DuplicatePartResult:
    output: int
    file: int
    block: int
    groups: int
    samples: int


class _EncodeBlockFn(beam.DoFn):
    """Read one block, encode it, spill its records; emit a summary and its hashes."""

    def __init__(self, config: BuildConfig, shared: Shared):
        self._config = config
        self._shared = shared
        self._samples = Metrics.counter(NAMESPACE, "samples")
        self._bad = Metrics.counter(NAMESPACE, "bad_records")
        self._bytes = Metrics.counter(NAMESPACE, "input_bytes")

    def setup(self):
        config = self._config
        self._tokenizers = self._shared.acquire(lambda: _load_tokenizers(config)).value
        self._encoders = {}

    def _encoder(self, file: int) -> BlockEncoder:
        if file not in self._encoders:
            spec = self._config.files[file]
            self._encoders[file] = BlockEncoder(spec, self._tokenizers[spec.tokenizer], self._config.policies)
        return self._encoders[file]

    def process(self, ref: BlockRef):
        config = self._config
        spec = config.files[ref.file]
        out = config.outputs[spec.output]
        lines, nbytes = blocks.read_block_lines(spec.path, ref.start, ref.end)
        self._bytes.inc(nbytes)
        result = self._encoder(ref.file).encode_block(lines, file_start=ref.start == 0)
        self._samples.inc(result.n_samples)
        self._bad.inc(len(result.bad))
        yield SUMMARY, _spill(out.path, ref, result)
        for key, value in _hash_batches(spec.output, ref, result):
            yield HASHES, (key, value)


def _spill(out_path: str, ref: BlockRef, result: BlockResult) -> BlockSummary:
    """Write a block's records and metadata to staging; return its summary."""
    directory = layout.block_dir(out_path, ref.file, ref.block)
    unit_counts, unit_tokens = {}, {}
    written = (result.status == OK) | (result.status == OVF_TRUNCATE)
    for unit, records in result.records.items():
        storage.write_bytes(storage.join(directory, f"unit_{unit}.bin"), records.tobytes())
        unit_counts[unit] = int(records.shape[0])
        unit_tokens[unit] = int(result.token_count[written & (result.unit == unit)].sum())
    overflow = ()
    if len(result.overflow_samples):
        sizes = result.overflow_lengths.sum(axis=1)
        offsets = np.cumsum(sizes) - sizes
        overflow = tuple(
            OverflowSample(int(s), int(c), int(o), tuple(int(x) for x in lens))
            for s, c, o, lens in zip(result.overflow_samples, sizes, offsets, result.overflow_lengths)
        )
        storage.write_bytes(storage.join(directory, "overflow.bin"),
                            result.overflow_tokens.astype(np.int64).tobytes())
    meta = BlockResult(
        n_lines=result.n_lines, local_line=result.local_line, status=result.status,
        token_count=result.token_count, orig_count=result.orig_count, unit=result.unit,
        digests=result.digests, empty_fields=result.empty_fields, unk=result.unk, bad=result.bad,
    )
    storage.write_bytes(storage.join(directory, "meta.pkl"), pickle.dumps(meta, protocol=5))
    first_error = None
    if result.first_error is not None:
        sample, line, err = result.first_error
        first_error = (sample, line, err.to_dict())
    over = int(np.isin(result.status, (2, 3, 4)).sum())
    return BlockSummary(ref.file, ref.block, result.n_lines, result.n_samples, unit_counts, unit_tokens,
                        overflow, len(result.bad), over, first_error)


def _hash_batches(output: int, ref: BlockRef, result: BlockResult):
    """Content hashes of the block's rendered samples, split into buckets."""
    rendered = np.nonzero(result.status != BAD)[0]
    if not len(rendered):
        return
    digests = result.digests[rendered]
    bucket = digests[:, 0].astype(np.int64) % HASH_BUCKETS
    lines = result.local_line[rendered]
    for b in np.unique(bucket).tolist():
        sel = bucket == b
        yield (output, b), (ref.file, ref.block, rendered[sel], lines[sel], digests[sel])


class _FindDuplicatesFn(beam.DoFn):
    """Group one bucket's hashes; emit each duplicate group keyed by its first block."""

    def process(self, element):
        (output, _), batches = element
        batches = sorted(batches, key=lambda b: (b[0], b[1]))
        if not batches:
            return
        files = np.concatenate([np.full(len(b[2]), b[0], np.int64) for b in batches])
        blks = np.concatenate([np.full(len(b[2]), b[1], np.int64) for b in batches])
        samples = np.concatenate([b[2] for b in batches])
        lines = np.concatenate([b[3] for b in batches])
        digests = np.ascontiguousarray(np.concatenate([b[4] for b in batches]))
        keys = digests.view(np.dtype((np.void, 32))).reshape(-1)
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        groups: dict = {}
        for i in np.nonzero(counts[inverse] >= 2)[0].tolist():
            entry = groups.setdefault(int(inverse[i]), (digests[i].tobytes(), []))
            entry[1].append((int(files[i]), int(blks[i]), int(samples[i]), int(lines[i])))
        for digest, members in groups.values():
            members.sort()
            file, block, sample, _ = members[0]
            yield (output, file, block), (sample, digest, members)


class _WriteDuplicatePartFn(beam.DoFn):
    """Write the duplicate rows whose first member lies in one block."""

    def __init__(self, config: BuildConfig):
        self._config = config

    def process(self, element, plan):
        (output, file, block), groups = element
        if plan.error is not None:
            return
        config = self._config
        out = config.outputs[output]
        rows = []
        n_samples = 0
        for _, digest, members in sorted(groups, key=lambda g: g[0]):
            resolved = []
            for f, b, sample, line in members:
                bp = plan.blocks[(f, b)]
                resolved.append((bp.sample_offset + sample, config.files[f].path, bp.line_offset + line + 1))
            rows.append(indexes.duplicate_row(digest, resolved))
            n_samples += len(resolved)
        storage.write_text(layout.part_path(out.path, "duplicate_index.jsonl", file, block), "".join(rows))
        yield DuplicatePartResult(output, file, block, len(rows), n_samples)


class _WriteIndexPartsFn(beam.DoFn):
    """Turn one block's metadata into its rows of the four per-sample index files."""

    def __init__(self, config: BuildConfig):
        self._config = config

    def process(self, key, plan):
        bp = plan.blocks[key]
        config = self._config
        spec = config.files[bp.file]
        out = config.outputs[bp.output]
        meta = pickle.loads(storage.read_bytes(storage.join(layout.block_dir(out.path, bp.file, bp.block), "meta.pkl")))
        rows = indexes.block_index_rows(meta, bp, spec.path, max(out.sizes), out.samples_per_shard)
        for name in ("sample_index.jsonl", "unk_index.jsonl", "overflow_index.jsonl", "bad_record_index.jsonl"):
            storage.write_text(layout.part_path(out.path, name, bp.file, bp.block), rows[name])
        yield PartResult(bp.output, bp.file, bp.block, rows["stats"]["samples_with_unk"], rows["stats"]["unk_tokens"])


class _WriteShardFn(beam.DoFn):
    """Assemble one shard from block spills and write it to staging."""

    def __init__(self, config: BuildConfig, shared: Shared):
        self._config = config
        self._shared = shared
        self._shards = Metrics.counter(NAMESPACE, "shards")

    def setup(self):
        config = self._config
        self._tokenizers = self._shared.acquire(lambda: _load_tokenizers(config)).value

    def process(self, task: ShardTask):
        out = self._config.outputs[task.output]
        tok = self._tokenizers[out.tokenizer]
        n = len(out.sequence_template)
        record_bytes = (1 + n + task.unit) * tok.storage.bytes_per_token
        if task.pieces:
            chunks = (
                storage.read_range(
                    storage.join(layout.block_dir(out.path, p.file, p.block), f"unit_{task.unit}.bin"),
                    p.start * record_bytes, p.count * record_bytes)
                for p in task.pieces
            )
        else:
            chunks = [self._extended_records(out, tok, task, n)]
        size = storage.write_bytes(layout.staged_shard(out.path, task.unit, task.shard), chunks)
        self._shards.inc()
        yield ShardResult(task.output, task.unit, task.shard, task.n_records, size)

    def _extended_records(self, out, tok, task: ShardTask, n: int) -> bytes:
        lengths = np.array([m[2].lengths for m in task.overflow], dtype=np.int64).reshape(-1, n)
        tokens, seg_offsets = [], []
        cursor = 0
        flat_parts = []
        starts = np.zeros((len(task.overflow), n), np.int64)
        for r, (file, block, ovf) in enumerate(task.overflow):
            path = storage.join(layout.block_dir(out.path, file, block), "overflow.bin")
            data = np.frombuffer(storage.read_range(path, ovf.token_offset * 8, ovf.token_count * 8), "<i8")
            flat_parts.append(data)
            starts[r] = cursor + np.cumsum(lengths[r]) - lengths[r]
            cursor += len(data)
        flat = np.concatenate(flat_parts) if flat_parts else np.zeros(0, np.int64)
        tokens = [flat] * n
        seg_offsets = [starts[:, j] for j in range(n)]
        records = encode_records(task.unit, lengths, tokens, seg_offsets, tok.storage.magic, tok.pad_id,
                                 tok.storage.numpy_dtype)
        return records.tobytes()


class _FinalizeFn(beam.DoFn):
    def __init__(self, config: BuildConfig, build_info: dict):
        self._config = config
        self._build_info = build_info

    def process(self, _, plan, shard_results, part_results, dup_results):
        from .publish import finalize

        yield from finalize(self._config, plan, shard_results, part_results, dup_results, self._build_info)


class UnitBuild(beam.PTransform):
    """Build every output of a validated :class:`BuildConfig`.

    ``p | UnitBuild(config)`` returns a PCollection of one dict per output directory:
    its path and stats, or the error that stopped the build. Run the launcher-side
    checks (``preflight.check``) before constructing it; ``mintdim_beam.run`` does.
    """

    def __init__(self, config: BuildConfig, build_info: dict | None = None):
        super().__init__()
        self._config = config
        self._build_info = build_info or {}

    def expand(self, pbegin):
        config = self._config
        shared = Shared()
        refs = blocks.plan_blocks(config)
        encoded = (
            pbegin
            | "ListBlocks" >> beam.Create(refs, reshuffle=False)
            | "SpreadBlocks" >> beam.Reshuffle()
            | "EncodeBlocks" >> beam.ParDo(_EncodeBlockFn(config, shared))
        )
        summaries = encoded | "TakeSummaries" >> beam.FlatMap(_take, SUMMARY)
        hashes = encoded | "TakeHashes" >> beam.FlatMap(_take, HASHES)
        # A single-key GroupByKey rather than CombineGlobally/ToList: every runner gets
        # a GroupByKey right, while Dask's combine emits one partial list per partition.
        plan = (
            summaries
            | "KeySummaries" >> beam.Map(lambda s: (0, s))
            | "CollectSummaries" >> beam.GroupByKey()
            | "MakePlan" >> beam.MapTuple(lambda _, summaries: make_plan(config, summaries))
        )
        plan_view = beam.pvalue.AsSingleton(plan)
        shard_results = (
            plan
            | "ListShardTasks" >> beam.FlatMap(lambda p: p.shard_tasks)
            | "SpreadShardTasks" >> beam.Reshuffle()
            | "WriteShards" >> beam.ParDo(_WriteShardFn(config, shared))
        )
        part_results = (
            plan
            | "ListBlockPlans" >> beam.FlatMap(lambda p: [] if p.error else sorted(p.blocks))
            | "SpreadBlockPlans" >> beam.Reshuffle()
            | "WriteIndexParts" >> beam.ParDo(_WriteIndexPartsFn(config), plan_view)
        )
        dup_results = (
            hashes
            | "GroupHashes" >> beam.GroupByKey()
            | "FindDuplicates" >> beam.ParDo(_FindDuplicatesFn())
            | "GroupByFirstBlock" >> beam.GroupByKey()
            | "WriteDuplicateParts" >> beam.ParDo(_WriteDuplicatePartFn(config), plan_view)
        )
        return (
            pbegin
            | "FinalizeTrigger" >> beam.Create([None])
            | "Finalize" >> beam.ParDo(
                _FinalizeFn(config, self._build_info),
                plan_view,
                beam.pvalue.AsList(shard_results),
                beam.pvalue.AsList(part_results),
                beam.pvalue.AsList(dup_results),
            )
        )
