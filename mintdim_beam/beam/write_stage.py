"""The write stage: the plan's independent tasks, spread over the workers together.

A shard task assembles one shard from byte ranges of the block spills; an index task
writes the per-sample index rows of a run of consecutive blocks as one part per index
file; a duplicate task groups one digest range of an output's content hashes. Separate
from the encode stage because it never tokenizes (it copies or widens records and
renders rows), and from the wiring (``transforms``) because each task is plain work on
staging files, sized by the plan.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Optional

import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from mintdim_beam.core import indexes, spill_meta
from mintdim_beam.tokenization.unk_rows import json_string
from mintdim_beam.beam import layout
from mintdim_beam.storage import files as storage
from mintdim_beam.core.config import BuildConfig
from mintdim_beam.core.plan import DuplicateTask, ShardTask, spill_key
from mintdim_beam.format.shard_format import TokenStorage, check_fits, record_slots, slot_storage, widen_records
from mintdim_beam.format.names import IndexLayout
from mintdim_beam.beam.stage_base import DIGEST_VALUE, DUPS, HASH_ROW, NAMESPACE, PART, SHARD, DuplicatePartResult, PartResult, ShardResult, load_tokenizers, StorageDoFn

#: Duplicate group members rendered per write chunk of a duplicate task's file.
DUPLICATE_MEMBERS_PER_CHUNK = 1 << 14
#: An extended unit's shard is written in chunks of about this many bytes.
EXTENDED_CHUNK_BYTES = 8 << 20
#: With index_layout "file", consecutive blocks of an output up to this many samples in
#: all write their index rows as one part (a block above it is a part alone). A corpus
#: of many small files is as many small blocks, and a part per block and index was a
#: file created per block and index, and a write task per block, for a few KB of rows.
INDEX_GROUP_SAMPLES = 16384


def write_tasks(plan, index_layout: IndexLayout = IndexLayout.FILE) -> list:
    """The plan's shard tasks, index tasks (a tuple of consecutive ``BlockPlan``) and
    duplicate tasks."""
    if plan.error is not None:
        return list(plan.shard_tasks)
    return list(plan.shard_tasks) + index_tasks(plan, index_layout) + list(plan.duplicate_tasks)


def index_tasks(plan, index_layout: IndexLayout) -> list:
    """Blocks in order, one task each with index_layout "parts" (each block's part is
    published as it is); otherwise runs of consecutive blocks of an output, up to
    ``INDEX_GROUP_SAMPLES`` samples a run (finalize concatenates the parts in order, so
    the index bytes are the same however the blocks are grouped)."""
    tasks, run, samples = [], [], 0
    for key in sorted(plan.blocks):
        bp = plan.blocks[key]
        if run and (index_layout == IndexLayout.PARTS or bp.output != run[0].output
                    or samples + bp.samples > INDEX_GROUP_SAMPLES):
            tasks.append(tuple(run))
            run, samples = [], 0
        run.append(bp)
        samples += bp.samples
    if run:
        tasks.append(tuple(run))
    return tasks


def write_task_key(task):
    if isinstance(task, ShardTask):
        return ("shard", task.output, task.unit, task.shard)
    if isinstance(task, DuplicateTask):
        return ("dups", task.output, task.task)
    return ("block", task[0].file, task[0].block)


def write_index_part(config: BuildConfig, plans: tuple, flusher: Optional[storage.Flusher] = None) -> PartResult:
    """The rows of the four per-sample index files of consecutive blocks (``plans``,
    one block with index_layout "parts"), as one part each, named by the first block.

    Only a part published as it is (index_layout "parts") goes to ``flusher``. Any
    other is staging, as a spill is: publish copies it into its index file from the
    page cache, deletes it and flushes only the index file. Flushed here (and its pages
    handed back), the copy read every part from the disk again: at 1 GB of generated
    text the sample index's copy took 1.2 s instead of 0.43 s, on the one process that
    publishes (docs/decisions.md)."""
    first = plans[0]
    out = config.outputs[first.output]
    metas = []
    spills = _SpillReader(layout.block_spills(out))
    with spills:
        for bp in plans:
            f = spills.open(*spill_key(bp))
            f.seek(bp.meta[0])
            data = f.read(bp.meta[1])
            if hashlib.sha256(data).hexdigest() != bp.meta_sha256:
                raise ValueError(f"{layout.block_spill(out, *spill_key(bp))}: the block's metadata is not what "
                                 "the encoder wrote; the staging area was changed by something other than this build")
            metas.append((spill_meta.decode(data), bp, config.files[bp.file].path))
    rows = indexes.run_index_rows(metas, max(out.sizes), out.samples_per_shard)
    with_unk, unk_tokens = rows["stats"]["samples_with_unk"], rows["stats"]["unk_tokens"]
    sums = []
    written = PartResult.written
    if config.index_layout != IndexLayout.PARTS:   # concatenated by finalize, which skips the parts not written
        written = tuple(name for name in written if len(rows[name]))
    for name in written:
        path = layout.part_path(out, name, first.file, first.block)
        storage.write_bytes(path, rows[name])
        if config.index_layout == IndexLayout.PARTS:   # published as they are: SHA256SUMS lists each part
            if flusher is not None:
                flusher.add(path)
            sums.append((name, hashlib.sha256(rows[name]).hexdigest()))
    covered = tuple((bp.file, bp.block) for bp in plans) if len(plans) > 1 else ()
    return PartResult(first.output, first.file, first.block, with_unk, unk_tokens, tuple(sums), written, covered)


class _SpillReader:
    """The spill files of consecutive blocks, each opened once while its blocks are
    read (the blocks of an encode group share one)."""

    def __init__(self, path_of, readahead: int = 0):
        self._path_of = path_of
        self._readahead = readahead   # storage.open_read's
        self._stack = contextlib.ExitStack()
        self._path = None
        self._file = None

    def open(self, file: int, block: int):
        path = self._path_of(file, block)
        if path != self._path:
            self._stack.close()
            self._file = self._stack.enter_context(storage.open_read(path, readahead=self._readahead))
            self._path = path
        return self._file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._stack.close()


def find_duplicates(config: BuildConfig, task: DuplicateTask, hash_spills: tuple) -> DuplicatePartResult:
    """Group one task's digest ranges of an output (``hash_spills``: the output's, from
    the plan); write its groups sorted by first sample id."""
    out = config.outputs[task.output]
    slices = []     # (spill, directory, first row, rows) of this task's digest range
    # Read ahead: the count and this task's bounds come in one request on a store.
    spills = _SpillReader(layout.block_spills(out), readahead=1 << 16)
    with spills:
        for s in hash_spills:
            # The hashes section: the number of bounds, the bounds, then the rows (see encode_stage._spill).
            f = spills.open(*spill_key(s))
            f.seek(s.offset)
            n = int(np.frombuffer(f.read(8), "<i8")[0])
            f.seek(s.offset + 8 + task.first * 8)   # the bounds of the task's first range, to its end
            bounds = np.frombuffer(f.read((task.end - task.first + 1) * 8), "<i8")
            start, end = int(bounds[0]), int(bounds[-1])
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
    members, starts = group_duplicates(rows)
    file_json = [json_string(f.path) for f in config.files]

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


def group_duplicates(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    keys = np.ascontiguousarray(rows["digest"][cand]).view(DIGEST_VALUE).reshape(-1)
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


class WriteOutputsFn(StorageDoFn):
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
        self._tokenizers = self._shared.acquire(lambda: load_tokenizers(config, words)).value
        # Each shard's flush to the disk (and a published part's: write_index_part)
        # starts once it is written (storage.Flusher), so that publishing does not
        # wait on the disk for the whole output at the end, and the flushed file's
        # page-cache memory is reused.
        self._flusher = storage.Flusher()

    def finish_bundle(self):
        self._flusher.wait()   # a bundle's shards count once they are on the disk

    def teardown(self):
        flusher = getattr(self, "_flusher", None)
        if flusher is not None:
            flusher.close()

    def process(self, task, hash_spills: dict):
        """``hash_spills``: the plan's (a side input: every duplicate task reads them)."""
        if isinstance(task, ShardTask):
            yield SHARD, self._write_shard(task)
        elif isinstance(task, DuplicateTask):
            yield DUPS, find_duplicates(self._config, task, hash_spills[task.output])
        else:
            yield PART, write_index_part(self._config, task, self._flusher)

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
            spill = layout.block_spills(out)
            ranges = _joined([(spill(p.file, p.block), p.offset + p.start * record_bytes, p.count * record_bytes)
                              for p in task.pieces])
            if spilled == slots:
                size = storage.write_ranges(staged, ranges, sha=sha)   # a byte copy: every common build
            else:
                size = storage.write_bytes(staged, widened(ranges, spilled, slots, record_slots(n, task.unit)),
                                           sha=sha)
        else:
            size = storage.write_bytes(staged, self._extended_records(out, tok, slots, task, n), sha=sha)
        self._flusher.add(staged)
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


def _joined(ranges: list) -> list:
    """``ranges`` with each run of ranges that follow one another in one file as one
    range: the blocks of an encode group lay out each unit's records one after another
    in their shared spill, so a shard of many small blocks is a few copies."""
    joined = []
    for path, start, length in ranges:
        if joined and joined[-1][0] == path and joined[-1][1] + joined[-1][2] == start:
            joined[-1] = (path, joined[-1][1], joined[-1][2] + length)
        else:
            joined.append((path, start, length))
    return joined


def widened(ranges: list, spilled: TokenStorage, slots: TokenStorage, width: int):
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
