"""The Beam layer: the ``UnitBuild`` composite transform and its DoFns.

Data flow (DESIGN.md §6). Nothing per sample travels through a Beam shuffle: a
worker encodes a block and spills its records to the output's staging area, index
parts and content hashes are spilled the same way, and Beam moves only per-block
summaries, byte ranges and task descriptions. That keeps memory per worker bounded by
block, batch and shard size on every runner, including the in-memory one, which holds
whole PCollections (and shuffles) in memory.

    BlockRef ──EncodeBlocks──► spills (records, metadata, hashes sorted by digest)
                               + BlockSummary ──CollectSummaries──► plan
    plan ──► ShardTask | BlockPlan | DuplicateTask ──WriteOutputs──► staged shards,
                 index parts, duplicate parts
    input files ──HashInputs──► sizes and sha256 (the manifest's fingerprint; local
                 builds get them from the launcher instead)
    plan + every result ──CollectResults──► Finalize ──► published output directory

Duplicates: each output's digest space is split into as many ranges as its input size
asks for (``DUPLICATE_TASK_BYTES`` per task), fixed before encoding. Every encoder
spills its block's content hashes sorted by digest, with a small file saying where
each range begins, so a range is one contiguous slice of each block's spill: duplicate
tasks run in the write stage, next to the index parts, with no shuffle of their own,
and the plan only lists the spills (one tuple per output, shared by its tasks). A task
reads its slice of each spill, groups equal digests and writes its groups sorted by
first sample id; finalize merges the tasks' files into ``duplicate_index.jsonl``.

Portability. The pipeline uses only ParDo, GroupByKey, Flatten and Create, and every
dependency is a main input: no side inputs, no tagged outputs, no combiners. That is
the subset every runner translates faithfully. Beam's DaskRunner, in particular,
computes a side input by re-running its whole upstream graph inside the consuming task
with DoFn receivers that are never cleared, so a singleton view can see its element
twice; it drops output tags; it turns ``Reshuffle`` into a no-op; and it computes only
the graph behind the last transform. Hence the shape above: everything flows into one
``Finalize`` through a single-key GroupByKey, work is spread by GroupByKeys on stable
keys (``_Redistribute``), and the plan travels inside the elements that need it.

Retries. Every side effect is a whole file with a deterministic name, written
atomically, and every collected result is de-duplicated by its key, so a retried (or
twice-delivered) bundle rewrites the same bytes and never duplicates a record.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import time
from dataclasses import dataclass
from typing import Callable, Optional

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue
from apache_beam.utils.shared import Shared

from . import blocks, errors, indexes, layout, options, progress, storage, storage_access
from .block_result import BAD, OK, OVF_TRUNCATE, BlockResult, spill_header
from .config import BuildConfig, OutputSpec
from .plan import BlockPlan, BlockRef, BlockSummary, DuplicateTask, OverflowSample, ShardTask, make_plan
from .records import BlockEncoder
from .shard_format import TokenStorage, check_fits, record_slots, slot_storage, widen_records
from .tokenizers import SENTENCEPIECE, load_tokenizer

NAMESPACE = "mintdim"
#: Input bytes per duplicate task: its digest range holds the content hashes of about
#: this much input, 2^18 of them (~30 MiB at peak) at 64 bytes a sample. The split is
#: fixed before encoding, from the input's size, so that each encoder can spill its
#: hashes already cut into the tasks' ranges (a task then needs no shuffle of its own).
DUPLICATE_TASK_BYTES = 64 << 18
#: Text bytes assumed per byte of a compressed input, to size its output's duplicate
#: tasks before the input is read (a guess changes the work's split, never the output).
COMPRESSION_RATIO = 4
#: Duplicate group members rendered per write chunk of a duplicate task's file.
DUPLICATE_MEMBERS_PER_CHUNK = 1 << 14
MAX_DUPLICATE_TASKS = 4096         # beyond 10^9 samples, tasks grow instead (each reads every block)
#: An extended unit's shard is written in chunks of about this many bytes.
EXTENDED_CHUNK_BYTES = 8 << 20
#: With index_layout "file", consecutive blocks of an output up to this many samples in
#: all write their index rows as one part (a block above it is a part alone). A corpus
#: of many small files is as many small blocks, and a part per block and index was a
#: file created per block and index, and a write task per block, for a few KB of rows.
INDEX_GROUP_SAMPLES = 16384

# One row of a block's hash spill: sorted by digest, 48 bytes.
HASH_ROW = np.dtype([("digest", "u1", (32,)), ("sample_id", "<i8"), ("line", "<i8")])
_DIGEST = np.dtype((np.void, 32))   # a digest as one sortable, comparable value

log = logging.getLogger(__name__)

# Elements that cross a Beam boundary are frozen dataclasses, not NamedTuples: some
# runners (Dask) move tuples through coders that drop the NamedTuple class.

# A DoFn with several kinds of output yields (kind, value) pairs rather than tagged
# outputs, which the Dask runner mixes together; Finalize sorts them by kind.
# Kinds of the results collected for Finalize.
PLAN, SHARD, PART, DUPS, DIGEST = "plan", "shard", "part", "dups", "digest"


class _Handle:
    """Weak-referenceable holder, so ``Shared`` can cache tokenizers per process."""

    def __init__(self, value):
        self.value = value


def encode_pool(kind: str, threads: int) -> int:
    """The encoder's pool size for a tokenizer kind, given the process's encode threads
    (``options.encode_threads``: ``--encode_threads`` or the process's share of cores).

    SentencePiece releases the GIL but parallelises a batch poorly by itself, so each
    thread is a single-threaded encode call of its own, overlapped with the parsing on
    the main thread; with one thread there is nothing to overlap with, and the process
    encodes on its own thread (no pool): a pool thread on one core only took turns with
    the parsing (docs/decisions.md). HF tokenizers spread one batch over their own
    thread pool, so one pool thread (overlap only) is enough; more only fight over the
    same cores.
    """
    if kind != SENTENCEPIECE:
        return 1
    return 0 if threads <= 1 else threads


def encoder_key(spec) -> tuple:
    """What a block encoder depends on in a file's settings (not its path or output)."""
    return (spec.tokenizer, spec.fields, spec.segments, spec.sizes, spec.build_batch)


def _load_tokenizers(config: BuildConfig, word_encoder: bool = True):
    cache = {}
    for spec in {f.tokenizer for f in config.files}:
        # Several encode calls run at once (see encode_threads): one thread each.
        cache[spec] = load_tokenizer(spec.kind, spec.path, storage.read_bytes(spec.path), threads=1,
                                     accelerators=config.accelerators, word_encoder=word_encoder)
        cache[spec].prepare()   # here, not in the first encode call
    return _Handle(cache)


@dataclass(frozen=True)
class ShardResult:
    output: int
    unit: int
    shard: int
    samples: int
    bytes: int
    sha256: str             # of the shard's bytes, computed as they were written (SHA256SUMS)


@dataclass(frozen=True)
class PartResult:
    output: int
    file: int
    block: int
    samples_with_unk: int
    unk_tokens: int
    sha256: tuple = ()     # (index name, sha256 hex) of each part, with index_layout "parts"
    #: The index files this block wrote a part of: with index_layout "file", a part
    #: with no rows is not written (most blocks have no unk, overflow or bad-record rows).
    written: tuple = ("sample_index.jsonl", "unk_index.jsonl", "overflow_index.jsonl", "bad_record_index.jsonl")
    #: (file, block) of every block whose rows the part holds, in order, when it holds
    #: more than its own (index_layout "file": a run of small blocks, ``_index_tasks``).
    blocks: tuple = ()


@dataclass(frozen=True)
class DuplicatePartResult:
    output: int
    task: int
    groups: int
    samples: int


@dataclass(frozen=True)
class FileDigest:
    path: str
    size: int
    sha256: str
    seconds: float


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


class _StorageDoFn(beam.DoFn):
    """A DoFn that touches storage: configures ``FileSystems`` where the runner did not,
    and checks once that this worker reaches the build's buckets, so wrong options fail
    the build in seconds rather than after Beam's retries (``storage_access``)."""

    _config: Optional[BuildConfig] = None   # the build whose stores setup() checks

    def __init__(self, filesystem_options: Optional[dict]):
        self._filesystem_options = filesystem_options

    def setup(self):
        storage.configure(self._filesystem_options)
        if self._config is not None:
            storage_access.check(storage_access.build_paths(self._config), self._filesystem_options)


class _EncodeBlockFn(_StorageDoFn):
    """Read one block, encode it, spill its records, metadata and content hashes; emit
    its summary."""

    def __init__(self, config: BuildConfig, shared: Shared, filesystem_options: Optional[dict],
                 pipelined: bool = False, word_encoder: bool = True, encode_threads: Optional[int] = None,
                 encode_sharers: int = options.PER_CORE, duplicate_tasks: Optional[dict] = None):
        super().__init__(filesystem_options)
        self._config = config
        self._shared = shared
        self._duplicate_tasks = duplicate_tasks or {}
        self._pipelined = pipelined
        self._word_encoder = word_encoder
        self._explicit_threads = encode_threads
        self._encode_sharers = encode_sharers
        self.encode_threads = None   # resolved in setup(), on the worker
        self._samples = Metrics.counter(NAMESPACE, "samples")
        self._bad = Metrics.counter(NAMESPACE, "bad_records")
        # Input bytes and planned blocks done (a compressed file's when its last streamed
        # block is spilled): at the end, the input's size and the plan's block count.
        self._bytes = Metrics.counter(NAMESPACE, "bytes_read")
        self._blocks_done = Metrics.counter(NAMESPACE, "blocks_done")
        self._tokens = Metrics.counter(NAMESPACE, "tokens")
        # (file, spilled block) -> input bytes of the planned block its spill completes
        self._completes = {}

    def setup(self):
        super().setup()
        config, words = self._config, self._word_encoder
        self._tokenizers = self._shared.acquire(lambda: _load_tokenizers(config, words)).value
        self._encoders = {}
        self.encode_threads = options.encode_threads(self._explicit_threads, self._encode_sharers)

    def _encoder(self, file: int) -> BlockEncoder:
        """The encoder of a file's settings, shared by every file with the same ones.

        A corpus is often thousands of files with one set of settings: one encoder
        each would cost its construction (literal tokens, layout tables), its caches
        and its encode threads per file (5,000 files held 10,000 threads). An
        encoder's errors name the first file it was built for; the plan names the
        file of the block that reported the error (``plan._first_error``), and
        bad-record rows take their file from the plan, so nothing reads that name.
        """
        spec = self._config.files[file]
        key = encoder_key(spec)
        if key not in self._encoders:
            self._encoders[key] = BlockEncoder(spec, self._tokenizers[spec.tokenizer], self._config.policies,
                                               encode_threads=encode_pool(spec.tokenizer.kind,
                                                                          self.encode_threads))
        return self._encoders[key]

    def start_bundle(self):
        for encoder in self._encoders.values():
            encoder.reset()   # nothing left over from a failed bundle
        self._completes.clear()

    def process(self, ref: BlockRef):
        spec = self._config.files[ref.file]
        if storage.is_compressed(spec.path):
            # One planned block: read from the start, in blocks cut as it goes.
            stream = blocks.read_stream_blocks(spec.path, self._config.block_size, decode=False)
            b, held, broken = 0, None, None
            while True:   # one block ahead, to know the last one
                try:
                    following = next(stream, None)
                except storage.CompressedDataError as exc:
                    following, broken = None, exc
                if held is not None:
                    start, end, lines = held
                    if following is None and broken is None:   # the file is done when its last block is spilled
                        self._completes[(ref.file, b)] = ref.end - ref.start
                    yield from self._encode(BlockRef(ref.file, b, start, end), lines)
                    b += 1
                if following is None:
                    break
                held = following
            if broken is not None:
                # Corrupt or truncated: one more block, of no line, holds the error, so
                # the plan numbers it after every whole line before it. Fatal whatever
                # the bad-record policy (the rest of the file cannot be read).
                err = errors.SourceParseError.bad_compressed(spec.path, 1, storage.compression(spec.path),
                                                             broken.truncated, broken.detail)
                yield BlockSummary(ref.file, b, 0, 0, {}, {}, (), 0, 0, (0, 0, err.to_dict()))
            return
        self._completes[(ref.file, ref.block)] = ref.end - ref.start
        lines, _ = blocks.read_block_lines(spec.path, ref.start, ref.end, decode=False)
        found = blocks.looks_compressed(lines[0]) if ref.start == 0 and lines else None
        if found is not None:
            err = errors.SourceParseError.looks_compressed(spec.path, 1, *found)
            yield BlockSummary(ref.file, ref.block, 0, 0, {}, {}, (), 0, 0, (0, 0, err.to_dict()))
            return
        yield from self._encode(ref, lines)

    def _encode(self, ref: BlockRef, lines: list):
        # Blocks are pipelined (BlockEncoder.feed): a block's summary may leave while a
        # later block of the bundle is processed, or in finish_bundle.
        encoder = self._encoder(ref.file)
        if not self._pipelined:
            yield self._spill(ref, encoder.encode_block(lines, file_start=ref.start == 0))
            return
        for done, result in encoder.feed(ref, lines, file_start=ref.start == 0):
            yield self._spill(done, result)

    def finish_bundle(self):
        for encoder in self._encoders.values():
            for done, result in encoder.drain():
                yield WindowedValue(self._spill(done, result), MIN_TIMESTAMP, [GlobalWindow()])

    def teardown(self):
        for encoder in getattr(self, "_encoders", {}).values():
            encoder.close()

    def _spill(self, ref: BlockRef, result: BlockResult) -> BlockSummary:
        self._samples.inc(result.n_samples)
        self._bad.inc(len(result.bad))
        out = self._config.outputs[self._config.files[ref.file].output]
        dtype = self._tokenizers[out.tokenizer].storage.numpy_dtype
        completed = self._completes.pop((ref.file, ref.block), None)
        written = (result.status == OK) | (result.status == OVF_TRUNCATE)
        unit_tokens = {unit: int(result.token_count[written & (result.unit == unit)].sum()) for unit in result.records}
        figures = progress.Figures(completed or 0, int(completed is not None), result.n_samples,
                                   sum(unit_tokens.values()))
        self._bytes.inc(figures.bytes)
        self._blocks_done.inc(figures.blocks)
        self._tokens.inc(figures.tokens)
        # The figures go in the spill's header for the launcher's progress display
        # (progress.SpillWatcher, local runs): the spill appears whole or not at all.
        return _spill(out, ref, result, self._duplicate_tasks.get(out.index, 1), dtype, unit_tokens, figures)


def _spill(out: OutputSpec, ref: BlockRef, result: BlockResult, duplicate_tasks: int,
           token_dtype: np.dtype, unit_tokens: dict, figures: progress.Figures) -> BlockSummary:
    """Write a block's records, metadata and content hashes to staging, as one file
    (``layout.block_spill``); return its summary, which says where each section lies.

    The hashes are sorted by digest, so each of the output's ``duplicate_tasks`` digest
    ranges is one slice of the spill; the bounds, first in the section, say where each
    begins. Overflow tokens are spilled in the shards' ``token_dtype``, the type they
    are written in (a quarter of int64's bytes for a vocabulary of up to 65,535 ids).
    """
    sections = {}   # name -> chunks, in file order
    unit_counts = {}
    for unit, records in result.records.items():
        sections[f"unit_{unit}"] = [storage.byte_view(records)]
        unit_counts[unit] = int(records.shape[0])
    overflow = ()
    if len(result.overflow_samples):
        sizes = result.overflow_lengths.sum(axis=1)
        offsets = np.cumsum(sizes) - sizes
        overflow = tuple(
            OverflowSample(int(s), int(c), int(o), tuple(int(x) for x in lens))
            for s, c, o, lens in zip(result.overflow_samples, sizes, offsets, result.overflow_lengths)
        )
        sections["overflow"] = [storage.byte_view(result.overflow_tokens.astype(token_dtype))]
    meta = BlockResult(
        n_lines=result.n_lines, local_line=result.local_line, status=result.status,
        token_count=result.token_count, orig_count=result.orig_count, unit=result.unit,
        digests=result.digests, empty_fields=result.empty_fields, unk=result.unk, bad=result.bad,
    )
    sections["meta"] = [pickle.dumps(meta, protocol=5)]
    first_error = None
    if result.first_error is not None:
        sample, line, err = result.first_error
        first_error = (sample, line, err.to_dict())
    over = int(np.isin(result.status, (2, 3, 4)).sum())
    hashes = _sorted_hashes(result)
    if len(hashes):
        bounds = _range_bounds(hashes, duplicate_tasks).astype("<i8")
        sections["hashes"] = [np.int64(len(bounds)).astype("<i8").tobytes(), bounds.tobytes(),
                              storage.byte_view(hashes)]
    header, places = spill_header({name: sum(len(c) for c in chunks) for name, chunks in sections.items()},
                                         figures.to_dict())
    storage.write_bytes(layout.block_spill(out, ref.file, ref.block),
                        [header] + [c for chunks in sections.values() for c in chunks])
    return BlockSummary(ref.file, ref.block, result.n_lines, result.n_samples, unit_counts, unit_tokens,
                        overflow, len(result.bad), over, first_error, duplicate_tasks if len(hashes) else 0,
                        {name: tuple(place) for name, place in places.items()})


def _plan_from(config: BuildConfig, summaries):
    """The plan from every block's summary (one per block, even if a bundle was retried)."""
    unique = {(s.file, s.block): s for s in summaries}
    return make_plan(config, [unique[k] for k in sorted(unique)])


def _write_index_part(config: BuildConfig, plans: tuple) -> PartResult:
    """The rows of the four per-sample index files of consecutive blocks (``plans``,
    one block with index_layout "parts"), as one part each, named by the first block."""
    first = plans[0]
    out = config.outputs[first.output]
    rows = {name: [] for name in PartResult.written}
    with_unk = unk_tokens = 0
    for bp in plans:
        meta = pickle.loads(storage.read_range(layout.block_spill(out, bp.file, bp.block), *bp.meta))
        block_rows = indexes.block_index_rows(meta, bp, config.files[bp.file].path, max(out.sizes),
                                              out.samples_per_shard)
        for name in PartResult.written:
            rows[name].append(block_rows[name])
        with_unk += block_rows["stats"]["samples_with_unk"]
        unk_tokens += block_rows["stats"]["unk_tokens"]
    rows = {name: b"".join(chunks) for name, chunks in rows.items()}
    sums = []
    written = PartResult.written
    if config.index_layout != "parts":   # concatenated by finalize, which skips the parts not written
        written = tuple(name for name in written if len(rows[name]))
    for name in written:
        storage.write_bytes(layout.part_path(out, name, first.file, first.block), rows[name])
        if config.index_layout == "parts":   # published as they are: SHA256SUMS lists each part
            sums.append((name, hashlib.sha256(rows[name]).hexdigest()))
    covered = tuple((bp.file, bp.block) for bp in plans) if len(plans) > 1 else ()
    return PartResult(first.output, first.file, first.block, with_unk, unk_tokens, tuple(sums), written, covered)


def _sorted_hashes(result: BlockResult) -> np.ndarray:
    """The block's rendered samples as HASH_ROW rows (block-local sample id, 1-based
    local line), sorted by digest then sample id."""
    rendered = np.nonzero(result.status != BAD)[0]
    rows = np.zeros(len(rendered), HASH_ROW)
    if not len(rendered):
        return rows
    rows["digest"] = result.digests[rendered]
    rows["sample_id"] = rendered
    rows["line"] = result.local_line[rendered].astype(np.int64) + 1
    keys = np.ascontiguousarray(rows["digest"]).view(_DIGEST).reshape(-1)
    return rows[np.argsort(keys, kind="stable")]


def _range_bounds(rows: np.ndarray, tasks: int) -> np.ndarray:
    """Row offsets where each of ``tasks`` equal ranges of the digest space begins."""
    prefix = np.ascontiguousarray(rows["digest"][:, :8]).view(">u8").reshape(-1)
    edges = [(t << 64) // tasks for t in range(1, tasks)]
    inner = np.searchsorted(prefix, np.array(edges, dtype=np.uint64), side="left") if edges else []
    return np.concatenate([[0], inner, [len(rows)]]).astype(np.int64)


def duplicate_tasks(input_bytes: int) -> int:
    """How many digest ranges the duplicate search of an output of ``input_bytes`` is split into."""
    return max(1, min(MAX_DUPLICATE_TASKS, -(-input_bytes // DUPLICATE_TASK_BYTES)))


def _write_tasks(plan, index_layout: str = "file") -> list:
    """The plan's shard tasks, index tasks (a tuple of consecutive ``BlockPlan``) and
    duplicate tasks."""
    if plan.error is not None:
        return list(plan.shard_tasks)
    return list(plan.shard_tasks) + _index_tasks(plan, index_layout) + list(plan.duplicate_tasks)


def _index_tasks(plan, index_layout: str) -> list:
    """Blocks in order, one task each with index_layout "parts" (each block's part is
    published as it is); otherwise runs of consecutive blocks of an output, up to
    ``INDEX_GROUP_SAMPLES`` samples a run (finalize concatenates the parts in order, so
    the index bytes are the same however the blocks are grouped)."""
    tasks, run, samples = [], [], 0
    for key in sorted(plan.blocks):
        bp = plan.blocks[key]
        if run and (index_layout == "parts" or bp.output != run[0].output
                    or samples + bp.samples > INDEX_GROUP_SAMPLES):
            tasks.append(tuple(run))
            run, samples = [], 0
        run.append(bp)
        samples += bp.samples
    if run:
        tasks.append(tuple(run))
    return tasks


def _write_task_key(task):
    if isinstance(task, ShardTask):
        return ("shard", task.output, task.unit, task.shard)
    if isinstance(task, DuplicateTask):
        return ("dups", task.output, task.task)
    return ("block", task[0].file, task[0].block)


def _find_duplicates(config: BuildConfig, task: DuplicateTask) -> DuplicatePartResult:
    """Group one digest range of an output; write its groups sorted by first sample id."""
    out = config.outputs[task.output]
    slices = []     # (spill, directory, first row, rows) of this task's digest range
    for s in task.spills:
        # The hashes section: the number of bounds, the bounds, then the rows (see _spill).
        with storage.open_read(layout.block_spill(out, s.file, s.block)) as f:
            f.seek(s.offset)
            n = int(np.frombuffer(f.read(8), "<i8")[0])
            f.seek(s.offset + 8 + task.task * 8)
            start, end = np.frombuffer(f.read(16), "<i8").tolist()
            if end > start:
                f.seek(s.offset + 8 + n * 8 + start * HASH_ROW.itemsize)
                slices.append((s, np.frombuffer(f.read((end - start) * HASH_ROW.itemsize), HASH_ROW)))
    rows = np.zeros(sum(len(data) for _, data in slices), HASH_ROW)
    file_of = np.zeros(len(rows), np.int32)
    at = 0
    for s, data in slices:
        count = len(data)
        mine = rows[at:at + count]
        mine[:] = data
        mine["sample_id"] += s.sample_offset
        mine["line"] += s.line_offset
        file_of[at:at + count] = s.file
        at += count
    members, starts = _duplicate_groups(rows)
    file_json = [indexes.json_string(f.path) for f in config.files]

    def rendered():
        """The rows, whole groups of about DUPLICATE_MEMBERS_PER_CHUNK members at a
        time (a task can have 262,144 members, a group thousands)."""
        total = int(starts[-1])
        cuts = np.searchsorted(starts, np.arange(DUPLICATE_MEMBERS_PER_CHUNK, total, DUPLICATE_MEMBERS_PER_CHUNK))
        edges = np.unique(np.r_[0, cuts, len(starts) - 1])
        for g, h in zip(edges[:-1].tolist(), edges[1:].tolist()):
            bounds = starts[g:h + 1]
            mine = members[bounds[0]:bounds[-1]]
            yield indexes.duplicate_rows(
                rows["digest"][members[bounds[:-1]]], rows["sample_id"][mine], file_json, file_of[mine],
                rows["line"][mine], bounds - bounds[0])

    storage.write_bytes(layout.duplicate_part_path(out, task.task), rendered())
    return DuplicatePartResult(task.output, task.task, len(starts) - 1, len(members))


def _duplicate_groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of every digest held by >= 2 rows, grouped: ``(members, starts)``.

    ``members[starts[g]:starts[g + 1]]`` are the rows of group ``g`` in sample-id
    order, and groups are in the order of their first sample id. Sorting by the
    digest's first 8 bytes (a uint64) keeps memory near the rows' own 48 bytes; only
    rows whose prefix repeats are sorted by their full digest.
    """
    empty = (np.zeros(0, np.int64), np.zeros(1, np.int64))
    if len(rows) < 2:
        return empty
    prefix = np.ascontiguousarray(rows["digest"][:, :8]).view(">u8").reshape(-1)
    order = np.argsort(prefix, kind="stable")
    repeat = prefix[order[1:]] == prefix[order[:-1]]
    candidate = np.zeros(len(order), bool)
    candidate[1:] |= repeat
    candidate[:-1] |= repeat
    cand = order[candidate]
    if not len(cand):
        return empty
    cand = cand[np.argsort(rows["sample_id"][cand], kind="stable")]
    keys = np.ascontiguousarray(rows["digest"][cand]).view(_DIGEST).reshape(-1)
    by_digest = np.argsort(keys, kind="stable")          # stable: sample-id order within a digest
    cand, keys = cand[by_digest], keys[by_digest]
    group = np.cumsum(np.r_[True, keys[1:] != keys[:-1]]) - 1
    keep = np.bincount(group)[group] >= 2                 # a shared prefix, not a shared digest
    cand, group = cand[keep], group[keep]
    if not len(cand):
        return empty
    begins = np.nonzero(np.r_[True, group[1:] != group[:-1]])[0]
    ends = np.r_[begins[1:], len(cand)]
    ranked = np.argsort(rows["sample_id"][cand[begins]], kind="stable")
    members = np.concatenate([cand[begins[g]:ends[g]] for g in ranked.tolist()])
    sizes = (ends - begins)[ranked]
    return members, np.r_[0, np.cumsum(sizes)].astype(np.int64)


class _WriteOutputsFn(_StorageDoFn):
    """A shard task (assemble one shard from block spills), a block's index part, or a
    duplicate task (one digest range of the content hashes)."""

    def __init__(self, config: BuildConfig, shared: Shared, filesystem_options: Optional[dict],
                 word_encoder: bool = True):
        super().__init__(filesystem_options)
        self._config = config
        self._shared = shared
        self._word_encoder = word_encoder   # the same tokenizers as the encoder's (one Shared)
        self._shards = Metrics.counter(NAMESPACE, "shards")

    def setup(self):
        super().setup()
        config, words = self._config, self._word_encoder
        self._tokenizers = self._shared.acquire(lambda: _load_tokenizers(config, words)).value

    def process(self, task):
        if isinstance(task, ShardTask):
            yield SHARD, self._write_shard(task)
        elif isinstance(task, DuplicateTask):
            yield DUPS, _find_duplicates(self._config, task)
        else:
            yield PART, _write_index_part(self._config, task)

    def _write_shard(self, task: ShardTask) -> ShardResult:
        out = self._config.outputs[task.output]
        tok = self._tokenizers[out.tokenizer]
        n = len(out.sequence_template)
        # The plan decided the output's slots before any shard was written; the
        # encoders laid out declared units for the largest declared unit.
        slots = slot_storage(tok.storage, task.largest_unit)
        staged = layout.staged_shard(out, task.unit, task.shard)
        # The checksum is taken here, on the worker that writes the shard, so that
        # publishing never reads every shard again on one machine.
        sha = hashlib.sha256()
        if task.pieces:
            spilled = slot_storage(tok.storage, max(out.sizes))
            record_bytes = record_slots(n, task.unit) * spilled.bytes_per_token
            ranges = [
                (layout.block_spill(out, p.file, p.block), p.offset + p.start * record_bytes, p.count * record_bytes)
                for p in task.pieces]
            if spilled == slots:
                size = storage.write_ranges(staged, ranges, sha=sha)   # a byte copy: every common build
            else:
                size = storage.write_bytes(staged, _widened(ranges, spilled, slots, record_slots(n, task.unit)),
                                           sha=sha)
        else:
            size = storage.write_bytes(staged, self._extended_records(out, tok, slots, task, n), sha=sha)
        self._shards.inc()
        return ShardResult(task.output, task.unit, task.shard, task.n_records, size, sha.hexdigest())

    def _extended_records(self, out, tok, slots: TokenStorage, task: ShardTask, n: int):
        """Records of an extended unit, as chunks of at most ``EXTENDED_CHUNK_BYTES``
        (or one record): few, long samples, each one contiguous run of tokens in its
        block's overflow spill, so each is one slice copy.

        Chunked because an extended unit can be wide (a 1 MB line is a unit of 800k
        tokens) and a shard holds every sample that needs it: built whole, a shard of a
        4x larger corpus held 4x the memory (two copies) at once. The spill holds ids
        in the vocabulary's dtype; the records are in the output's ``slots``.
        """
        lengths = np.array([m[2].lengths for m in task.overflow], dtype=np.int64).reshape(-1, n)
        width = record_slots(n, task.unit)
        per_chunk = max(1, EXTENDED_CHUNK_BYTES // (width * slots.bytes_per_token))
        spilled = tok.storage.numpy_dtype
        for first in range(0, len(lengths), per_chunk):
            rows = lengths[first:first + per_chunk]
            check_fits(rows, np.iinfo(slots.numpy_dtype).max, "segment length")
            records = np.full((len(rows), width), tok.pad_id, slots.numpy_dtype)
            records[:, 0] = slots.magic
            records[:, 1:1 + n] = rows
            for r, (file, block, ovf, base) in enumerate(task.overflow[first:first + per_chunk]):
                path = layout.block_spill(out, file, block)
                data = np.frombuffer(storage.read_range(path, base + ovf.token_offset * spilled.itemsize,
                                                        ovf.token_count * spilled.itemsize), spilled)
                records[r, 1 + n:1 + n + len(data)] = data
            yield storage.byte_view(records)


def _widened(ranges: list, spilled: TokenStorage, slots: TokenStorage, width: int):
    """The records of ``ranges`` (laid out in ``spilled``'s slots) in the wider
    ``slots``, in chunks of about ``EXTENDED_CHUNK_BYTES`` (at least one record).

    Only when ``extend`` reached a unit above 65,535 and the declared units did not:
    their spills were written before the plan knew, in the vocabulary's narrow slots.
    """
    record_bytes = width * spilled.bytes_per_token
    per_chunk = max(1, EXTENDED_CHUNK_BYTES // (width * slots.bytes_per_token)) * record_bytes
    for path, start, length in ranges:
        for at in range(start, start + length, per_chunk):
            take = min(per_chunk, start + length - at)
            data = storage.read_range(path, at, take)
            if len(data) != take:
                raise IOError(f"{path}: spill ends at byte {at + len(data)}, the plan expects {at + take}")
            records = np.frombuffer(data, spilled.numpy_dtype).reshape(-1, width)
            yield storage.byte_view(widen_records(records, slots))


class _HashInputFn(_StorageDoFn):
    """Size and sha256 of one input or tokenizer file, streamed through FileSystems."""

    def process(self, path: str):
        started = time.monotonic()
        size, sha = storage.file_digest(path)
        yield FileDigest(path, size, sha, round(time.monotonic() - started, 3))


class _FinalizeFn(_StorageDoFn):
    """Publish every output (or mark the build failed) from the plan and all results."""

    def __init__(self, config: BuildConfig, build_info: dict, input_digests: Optional[dict],
                 filesystem_options: Optional[dict], shared: Shared, word_encoder: bool = True):
        super().__init__(filesystem_options)
        self._config = config
        self._build_info = build_info
        self._input_digests = input_digests
        self._shared = shared
        self._word_encoder = word_encoder
        # Publishing runs on one worker: its time is what does not shrink with workers.
        self._finalize_ms = Metrics.counter(NAMESPACE, "finalize_ms")

    def process(self, element):
        from .publish import finalize

        _, items = element
        plan = None
        found: dict = {SHARD: {}, PART: {}, DUPS: {}, DIGEST: {}}
        for kind, value in items:
            if kind == PLAN:
                plan = value
            elif kind == DIGEST:
                found[DIGEST][value.path] = value
            else:
                found[kind][(value.output, *_result_key(value))] = value
        build_info = dict(self._build_info)
        if self._input_digests is not None:
            digests = dict(self._input_digests)
        else:
            digests = {p: (d.size, d.sha256) for p, d in found[DIGEST].items()}
            build_info["fingerprint"] = {
                "computed_by": "pipeline",
                "files": len(digests),
                "bytes": sum(d.size for d in found[DIGEST].values()),
                "seconds_max": max((d.seconds for d in found[DIGEST].values()), default=0.0),
            }
        # The adapters the write stage loaded in this process, if it ran here (the
        # manifest needs a tokenizer's facts, not a fresh copy of it).
        config, words = self._config, self._word_encoder
        tokenizers = self._shared.acquire(lambda: _load_tokenizers(config, words)).value
        started = time.monotonic()
        published = list(finalize(
            self._config, plan,
            [found[SHARD][k] for k in sorted(found[SHARD])],
            [found[PART][k] for k in sorted(found[PART])],
            [found[DUPS][k] for k in sorted(found[DUPS])],
            build_info, digests, tokenizers=tokenizers,
        ))
        self._finalize_ms.inc(int((time.monotonic() - started) * 1000))
        yield from published


def _result_key(result) -> tuple:
    if isinstance(result, ShardResult):
        return (result.unit, result.shard)
    if isinstance(result, DuplicatePartResult):
        return (result.task,)
    return (result.file, result.block)


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
    its path and stats, or the error that stopped the build. Run the launcher-side
    checks (``preflight.check``) before constructing it; ``mintdim_beam.run`` does.

    ``input_digests`` (path -> (size, sha256)) lets a launcher that has already hashed
    the input and tokenizer files skip the ``HashInputs`` step.

    ``pipeline_blocks``: let the encoder overlap the blocks of a bundle (a block's
    summary then may leave in ``finish_bundle``). Worth about a tenth of the encoding
    time, but only for runners that deliver ``finish_bundle`` outputs: Beam's
    DaskRunner drops them, so it is off unless the runner is known to
    (:func:`delivers_finish_bundle`, which the launcher checks).

    ``word_encoder``: let a byte-level BPE ``tokenizer.json`` encode word by word
    (``mintdim_beam.accel.bpe_words``: same ids, 1.7-4x less CPU, but on one core per
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
                 word_encoder: bool = True, encode_sharers: Optional[int] = None):
        super().__init__()
        self._config = config
        self._build_info = build_info or {}
        self._input_digests = input_digests
        self._pipeline_blocks = pipeline_blocks
        self._word_encoder = word_encoder
        self._encode_sharers = encode_sharers

    def _sharers(self, pbegin) -> int:
        if self._encode_sharers is not None:
            return self._encode_sharers
        return options.encode_sharers(type(pbegin.pipeline.runner).__name__, pbegin.pipeline.options)

    def expand(self, pbegin):
        from .digests import fingerprint_paths

        config = self._config
        shared = Shared()
        fs = storage.filesystem_options(pbegin.pipeline.options)
        refs = blocks.plan_blocks(config)
        input_bytes = {o.index: 0 for o in config.outputs}
        for r in refs:
            path = config.files[r.file].path
            input_bytes[config.files[r.file].output] += (r.end - r.start) * (
                COMPRESSION_RATIO if storage.is_compressed(path) else 1)
        dup_tasks = {o: duplicate_tasks(n) for o, n in input_bytes.items()}
        summaries = (
            pbegin
            | "ListBlocks" >> beam.Create(refs, reshuffle=False)
            | "SpreadBlocks" >> _Redistribute(lambda r: (r.file, r.block))
            | "EncodeBlocks" >> beam.ParDo(
                _EncodeBlockFn(config, shared, fs, self._pipeline_blocks, self._word_encoder,
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
            | "ListWriteTasks" >> beam.FlatMap(_write_tasks, config.index_layout)
            | "SpreadWriteTasks" >> _Redistribute(_write_task_key)
            | "WriteOutputs" >> beam.ParDo(_WriteOutputsFn(config, shared, fs, self._word_encoder))
        )
        results = [plan | "TagPlan" >> beam.Map(_tag(PLAN)), written]
        if self._input_digests is None:
            # Hashing reads every input once more; as its own branch it runs on the
            # workers alongside encoding instead of before the build on the launcher.
            results.append(
                pbegin
                | "ListInputFiles" >> beam.Create(fingerprint_paths(config), reshuffle=False)
                | "SpreadInputFiles" >> _Redistribute(lambda path: path)
                | "HashInputs" >> beam.ParDo(_HashInputFn(fs))
                | "TagDigests" >> beam.Map(_tag(DIGEST))
            )
        return (
            results
            | "FlattenResults" >> beam.Flatten()
            | "KeyResults" >> beam.Map(lambda r: (0, r))
            | "CollectResults" >> beam.GroupByKey()
            | "Finalize" >> beam.ParDo(_FinalizeFn(config, self._build_info, self._input_digests, fs, shared,
                                                      self._word_encoder))
        )


class CountTokenLengths(beam.PTransform):
    """The token-length histogram of each output of a job, without building it.

    Reads the job's input blocks and encodes them with the build's own
    :class:`~mintdim_beam.records.BlockEncoder` against a single unit of size 0 under
    the ``skip`` overflow policy: every sample overflows, so no record is laid out,
    and the encoder still reports each sample's exact token count. Bad records are
    skipped and counted. Emits ``(output index, ({length: count}, bad_records))``,
    one element per output, merged by ``unit_planner.merge_counts``.
    """

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, pbegin):
        from .unit_planner import merge_counts

        fs = storage.filesystem_options(pbegin.pipeline.options)
        return (pbegin
                | "ListBlocks" >> beam.Create(blocks.plan_blocks(self._config))
                | "CountTokens" >> beam.ParDo(_CountTokensFn(self._config, fs))
                | "MergeHistograms" >> beam.CombinePerKey(merge_counts))


class _CountTokensFn(_StorageDoFn):
    """Encode one block; emit ``(output, ({length: count}, bad_records))``."""

    def __init__(self, config: BuildConfig, filesystem_options: Optional[dict]):
        super().__init__(filesystem_options)
        self._config = config
        self._encoders = None

    def setup(self):
        from .config import Policies

        super().setup()
        tokenizers = {}
        self._encoders = {}
        policies = Policies(on_overflow="skip", on_template_unk="continue", on_bad_record="skip")
        for spec in self._config.files:
            key = (spec.tokenizer.kind, spec.tokenizer.path)
            if key not in tokenizers:
                tokenizers[key] = load_tokenizer(key[0], key[1], storage.read_bytes(key[1]),
                                                 accelerators=self._config.accelerators)
            self._encoders[spec.index] = BlockEncoder(spec, tokenizers[key], policies, sizes=(0,))

    def process(self, ref: BlockRef):
        spec = self._config.files[ref.file]
        if storage.is_compressed(spec.path):
            # Decompressed as the build reads it; a damaged file fails the plan as it
            # fails the build (counting its lines as bad records would plan on part of it).
            done = 0
            stream = blocks.read_stream_blocks(spec.path, self._config.block_size, decode=False)
            try:
                for start, _, lines in stream:
                    yield self._count(spec, lines, start == 0)
                    done += len(lines)
            except storage.CompressedDataError as exc:
                raise errors.SourceParseError.bad_compressed(spec.path, done + 1, storage.compression(spec.path),
                                                             exc.truncated, exc.detail) from None
            return
        lines, _ = blocks.read_block_lines(spec.path, ref.start, ref.end, decode=False)
        found = blocks.looks_compressed(lines[0]) if ref.start == 0 and lines else None
        if found is not None:
            raise errors.SourceParseError.looks_compressed(spec.path, 1, *found)
        yield self._count(spec, lines, ref.start == 0)

    def _count(self, spec, lines: list, file_start: bool):
        result = self._encoders[spec.index].encode_block(lines, file_start=file_start)
        good = result.status != BAD
        values, counts = np.unique(result.orig_count[good], return_counts=True)
        return spec.output, (dict(zip(values.tolist(), counts.tolist())), int((~good).sum()))

