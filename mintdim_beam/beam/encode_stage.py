"""The encode stage: read a group of blocks, encode them, spill them to staging, emit
their summaries.

Separate from the write stage and from the wiring (``transforms``) because it is the
one stage that tokenizes: it owns the block encoders (one per set of file settings,
with their encode threads), the reading of plain and compressed inputs block by
block, and the layout of a block's spill (records, overflow tokens, metadata and
content hashes cut into the output's digest ranges), which the write stage reads back.
An element is an encode group (``blocks.group_blocks``): one large block, or many
small files, whose blocks spill into one file or a few (:class:`SpillBuffer`).
"""

from __future__ import annotations

import contextlib
import hashlib
import dataclasses
from collections import deque
from dataclasses import dataclass
from typing import Optional

import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.shared import Shared
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from mintdim_beam.format import inputs
from mintdim_beam.storage import line_blocks
from mintdim_beam.storage.compressed import CompressedDataError
from mintdim_beam import errors
from mintdim_beam.beam import layout
from mintdim_beam.beam import options
from mintdim_beam.storage import files as storage
from mintdim_beam.core import spill_meta
from mintdim_beam.core.block_result import BAD, OK, OVF_TRUNCATE, BlockResult, Figures, spill_header, split_result
from mintdim_beam.core.config import BuildConfig, OutputSpec
from mintdim_beam.core.plan import BlockRef, BlockSummary, EncodeGroup, OverflowSample
from mintdim_beam.core.records import BlockEncoder
from mintdim_beam.beam.stage_base import DIGEST_VALUE, HASH_ROW, NAMESPACE, load_tokenizers, StorageDoFn
from mintdim_beam.tokenization.adapters import SENTENCEPIECE


def _line_too_long(path: str) -> errors.SourceParseError:
    """The spec's error for a line above ``line_blocks.MAX_LINE_BYTES`` (its number is
    set by the plan, from the lines before it)."""
    return errors.SourceParseError(path, 1, f"line longer than {line_blocks.MAX_LINE_BYTES} bytes")


def read_blocks(path: str, ref: BlockRef, block_size: int):
    """The lines (bytes) of the planned block ``ref`` of input ``path``, as the build
    reads them: ``(block, lines, last)`` for each block read; the encoder and the
    plan's token count read their inputs through this only.

    A plain file's block is read as planned (``block`` is ``ref``, the only one). A
    compressed file is one planned block, read from its start and cut at line ends into
    blocks of about ``block_size`` decompressed bytes, numbered from ``ref.block``; one
    is read ahead, so that ``last`` says which one ends the file. Raises
    ``errors.SourceParseError``, fatal whatever the bad-record policy:
    ``looks_compressed`` when a plain file starts with a compressed format's magic
    bytes (nothing is yielded); ``bad_compressed`` when a compressed file is truncated
    or corrupt, after the block of every whole line before the damage (``last``
    false), at the first line not read.
    """
    if not inputs.is_compressed(path):
        try:
            lines, _ = line_blocks.read_block_lines(path, ref.start, ref.end, decode=False)
        except line_blocks.LineTooLongError as exc:
            err = _line_too_long(path)
            err.local_line = exc.lines_before      # the lines of the block before it
            raise err from None
        found = inputs.looks_compressed(lines[0]) if ref.start == 0 and lines else None
        if found is not None:
            raise errors.SourceParseError.looks_compressed(path, 1, *found)
        yield ref, lines, True
        return
    compression = inputs.compression(path)
    stream = line_blocks.read_stream_blocks(path, compression, block_size, decode=False)
    with contextlib.closing(stream):
        held, k, done = None, 0, 0
        while True:   # one block ahead, to know the last one
            try:
                following, broken = next(stream, None), None
            except (CompressedDataError, line_blocks.LineTooLongError) as exc:
                following, broken = None, exc
            if held is not None:
                start, end, lines = held
                yield BlockRef(ref.file, ref.block + k, start, end), lines, following is None and broken is None
                k, done = k + 1, done + len(lines)
            if isinstance(broken, line_blocks.LineTooLongError):
                raise _line_too_long(path) from None
            if broken is not None:
                raise errors.SourceParseError.bad_compressed(path, done + 1, compression, broken.truncated,
                                                             broken.detail) from None
            if following is None:
                return
            held = following


def _refused(file: int, block: int, err: errors.SourceParseError) -> BlockSummary:
    """The summary of a block that holds an input's fatal error: the plan numbers it
    after every whole line before it (``err.local_line`` of them in the block itself,
    for a line too long to read), and stops the build there."""
    before = getattr(err, "local_line", 0)
    return BlockSummary(file, block, before, 0, {}, {}, (), 0, 0, (0, before, err.to_dict()))


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
    return (spec.tokenizer, spec.fields, spec.segments, spec.sizes, spec.build_batch, spec.chat)


class EncodeBlockFn(StorageDoFn):
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
        self._tokenizers = self._shared.acquire(lambda: load_tokenizers(config, words)).value
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
        # (file, block) fed -> its group's SpillBuffer, one per time it was fed (a
        # redelivered element feeds a block again before the first one finishes).
        self._spills = {}

    def process(self, group: EncodeGroup):
        buffer = SpillBuffer(self._config.block_size)
        self._group = buffer
        files = self._config.files
        together: list = []   # (ref, lines) of consecutive whole files with one encoder
        for ref in group.blocks:
            spec = files[ref.file]
            lines, refused = self._whole_file(ref) if len(group.blocks) > 1 else (None, None)
            if refused is not None:
                yield refused
                continue
            if lines is None:
                yield from self._encode_together(together)
                together = []
                yield from self._process_block(ref)
                continue
            if together and encoder_key(files[together[0][0].file]) != encoder_key(spec):
                yield from self._encode_together(together)
                together = []
            self._completes[(ref.file, ref.block)] = ref.end - ref.start
            together.append((ref, lines))
        yield from self._encode_together(together)
        buffer.fed = True
        yield from self._write(buffer)

    def _whole_file(self, ref: BlockRef) -> tuple:
        """``(lines, None)`` of a whole file to encode with others; ``(None, summary)``
        of a plain file that looks compressed; ``(None, None)`` for a compressed file
        that decompresses to more than a block, or is damaged: it is read alone, as it
        streams, and its damage is reported there."""
        path = self._config.files[ref.file].path
        blocks = read_blocks(path, ref, self._config.block_size)
        try:
            _, lines, last = next(blocks)
        except errors.SourceParseError as err:
            return None, (None if inputs.is_compressed(path) else _refused(ref.file, ref.block, err))
        finally:
            blocks.close()
        return (lines if last else None), None

    def _encode_together(self, together: list):
        """Encode whole files (``(ref, lines)``, one encoder's) as one block: a file's
        fixed costs (a tokenizer call, a layout, their hand-over) are then a group's.
        A BOM opens a file's first line only, so it is dropped here, before the files'
        lines are put one after another (the encoder drops it the same way)."""
        if len(together) == 1:
            yield from self._encode(*together[0])
            return
        if not together:
            return
        joined, counts = [], []
        for ref, lines in together:
            if lines and lines[0][:3] == _BOM_BYTES:
                lines = [lines[0][3:]] + lines[1:]
            joined += lines
            counts.append(len(lines))
        yield from self._encode(_Joined(tuple(ref for ref, _ in together), tuple(counts)), joined)

    def _process_block(self, ref: BlockRef):
        """One planned block (a compressed file: read from its start, in blocks cut as
        it goes); an input the build refuses (looks compressed; corrupt or truncated,
        whose rest cannot be read) ends in one more block that holds the error."""
        blocks = read_blocks(self._config.files[ref.file].path, ref, self._config.block_size)
        following = ref.block
        while True:
            try:
                block, lines, last = next(blocks)
            except StopIteration:
                return
            except errors.SourceParseError as err:
                yield _refused(ref.file, following, err)
                return
            if last:   # the planned block is done when its last block is spilled
                self._completes[(ref.file, block.block)] = ref.end - ref.start
            yield from self._encode(block, lines)
            following = block.block + 1

    def _encode(self, ref: BlockRef, lines: list):
        # Blocks are pipelined (BlockEncoder.feed): a block's summary may leave while a
        # later block of the bundle is processed, or in finish_bundle.
        encoder = self._encoder(ref.file)
        for one in (ref.refs if isinstance(ref, _Joined) else (ref,)):
            self._group.expect(one)
        self._spills.setdefault((ref.file, ref.block), deque()).append(self._group)
        file_start = not isinstance(ref, _Joined) and ref.start == 0   # joined: BOMs already dropped
        if not self._pipelined:
            yield from self._done(ref, encoder.encode_block(lines, file_start=file_start))
            return
        for done, result in encoder.feed(ref, lines, file_start=file_start):
            yield from self._done(done, result)

    def finish_bundle(self):
        for encoder in self._encoders.values():
            for done, result in encoder.drain():
                for summary in self._done(done, result):
                    yield WindowedValue(summary, MIN_TIMESTAMP, [GlobalWindow()])

    def teardown(self):
        for encoder in getattr(self, "_encoders", {}).values():
            encoder.close()

    def _done(self, ref: BlockRef, result: BlockResult):
        """A block's result is in: hand it to its group's buffer, write what is ready."""
        buffer = self._spills[(ref.file, ref.block)].popleft()   # an encoder finishes blocks in feed order
        if isinstance(ref, _Joined):
            for one, part in zip(ref.refs, split_result(result, ref.line_counts)):
                buffer.add(one, self._sections(one, part))
        else:
            buffer.add(ref, self._sections(ref, result))
        yield from self._write(buffer)

    def _write(self, buffer: "SpillBuffer"):
        out = None
        for spilled in buffer.ready():
            out = out or self._config.outputs[self._config.files[spilled[0].ref.file].output]
            yield from write_spill(out, spilled)

    def _sections(self, ref: BlockRef, result: BlockResult) -> "BlockSpill":
        self._samples.inc(result.n_samples)
        self._bad.inc(len(result.bad))
        out = self._config.outputs[self._config.files[ref.file].output]
        dtype = self._tokenizers[out.tokenizer].storage.numpy_dtype
        completed = self._completes.pop((ref.file, ref.block), None)
        written = (result.status == OK) | (result.status == OVF_TRUNCATE)
        unit_tokens = {unit: int(result.token_count[written & (result.unit == unit)].sum()) for unit in result.records}
        figures = Figures(completed or 0, int(completed is not None), result.n_samples,
                                   sum(unit_tokens.values()))
        self._bytes.inc(figures.bytes)
        self._blocks_done.inc(figures.blocks)
        self._tokens.inc(figures.tokens)
        # The figures go in the spill's header for the launcher's progress display
        # (progress.SpillWatcher, local runs): the spill appears whole or not at all.
        return _block_spill(ref, result, self._duplicate_tasks.get(out.index, 1), dtype, unit_tokens, figures)


_BOM_BYTES = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class _Joined:
    """Whole files encoded as one block (``EncodeBlockFn._encode_together``), named
    by the first."""

    refs: tuple                # BlockRef of each file, in order
    line_counts: tuple         # lines of each

    @property
    def file(self) -> int:
        return self.refs[0].file

    @property
    def block(self) -> int:
        return self.refs[0].block


@dataclass
class BlockSpill:
    """A block's spill sections (name -> byte chunks, in file order) and its summary
    without their places."""

    ref: BlockRef
    sections: dict
    summary: BlockSummary
    figures: Figures
    size: int = 0              # bytes of the sections


class SpillBuffer:
    """The spills of one encode group's blocks, written as few files as memory allows.

    Blocks are written in the order they were fed (not the order they finish in: two
    encoders of a group may finish out of order), cut into files of at least
    ``cut_bytes`` each (the last one of a group smaller): a group of small files is a
    file or a few, and a large streamed file still spills as it is read. Where the cuts
    fall depends on the blocks' spills only, so a retried group writes the same files.
    """

    def __init__(self, cut_bytes: int):
        self.cut_bytes = cut_bytes
        self.fed = False            # every block of the group has been fed
        self._order: list = []      # (file, block), in feed order
        self._next = 0              # _order[:_next] are in a file or in _run
        self._spills: dict = {}     # (file, block) -> BlockSpill, finished, not yet in _run
        self._run: list = []        # consecutive finished blocks, not yet written
        self._run_bytes = 0

    def expect(self, ref: BlockRef) -> None:
        self._order.append((ref.file, ref.block))

    def add(self, ref: BlockRef, spill: BlockSpill) -> None:
        self._spills[(ref.file, ref.block)] = spill

    def ready(self) -> list:
        """Lists of consecutive finished blocks to write as one file each, now."""
        files = []
        while self._next < len(self._order) and self._order[self._next] in self._spills:
            spill = self._spills.pop(self._order[self._next])
            self._next += 1
            self._run.append(spill)
            self._run_bytes += spill.size
            if self._run_bytes >= self.cut_bytes:
                files.append(self._run)
                self._run, self._run_bytes = [], 0
        if self._run and self.fed and self._next == len(self._order):   # the group's tail
            files.append(self._run)
            self._run, self._run_bytes = [], 0
        return files


def _block_spill(ref: BlockRef, result: BlockResult, duplicate_tasks: int, token_dtype: np.dtype,
                 unit_tokens: dict, figures: Figures) -> BlockSpill:
    """A block's records, metadata and content hashes as spill sections, and its summary.

    The hashes are sorted by digest, so each of the output's ``duplicate_tasks`` digest
    ranges is one slice of the section; the bounds, first in the section, say where each
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
        sections["overflow"] = [storage.byte_view(result.overflow_tokens.astype(token_dtype, copy=False))]
    meta = BlockResult(
        n_lines=result.n_lines, local_line=result.local_line, status=result.status,
        token_count=result.token_count, orig_count=result.orig_count, unit=result.unit,
        digests=result.digests, empty_fields=result.empty_fields, unk=result.unk, bad=result.bad,
        extra=result.extra, overflow_extra=result.overflow_extra,
    )
    meta_bytes = spill_meta.encode(meta)
    sections["meta"] = [meta_bytes]
    first_error = None
    if result.first_error is not None:
        sample, line, err = result.first_error
        first_error = (sample, line, err.to_dict())
    over = int(np.isin(result.status, (2, 3, 4, 5)).sum())   # overflow_index rows: overflow, collapsed pairs
    hashes = sorted_hashes(result)
    if len(hashes):
        bounds = range_bounds(hashes, duplicate_tasks).astype("<i8")
        sections["hashes"] = [np.int64(len(bounds)).astype("<i8").tobytes(), bounds.tobytes(),
                              storage.byte_view(hashes)]
    summary = BlockSummary(ref.file, ref.block, result.n_lines, result.n_samples, unit_counts, unit_tokens,
                           overflow, len(result.bad), over, first_error, duplicate_tasks if len(hashes) else 0,
                           meta_sha256=hashlib.sha256(meta_bytes).hexdigest())
    return BlockSpill(ref, sections, summary, figures, sum(len(c) for chunks in sections.values() for c in chunks))


def write_spill(out: OutputSpec, spills: list) -> list:
    """Write consecutive blocks' spills as one file (``layout.block_spill`` of the first
    block); return their summaries, which say where each section lies.

    Sections go kind by kind (each unit's records, overflow tokens, metadata, hashes),
    block after block within a kind: the records of a unit in consecutive blocks are
    then one byte range, and a shard of many small blocks is a few copies. A file of
    one block names its sections as they are; several blocks' names are prefixed with
    ``f<file>-b<block>/``.
    """
    def kind(name):
        if name.startswith("unit_"):
            return (0, int(name[5:]))
        return ({"overflow": 1, "meta": 2, "hashes": 3}[name], 0)

    one = len(spills) == 1
    entries = sorted(((kind(name), k, name) for k, spill in enumerate(spills) for name in spill.sections))
    named = {}
    for _, k, name in entries:
        ref = spills[k].ref
        named[name if one else f"f{ref.file:05d}-b{ref.block:06d}/{name}"] = (k, name)
    lengths = {full: sum(len(c) for c in spills[k].sections[name]) for full, (k, name) in named.items()}
    figures = sum((spill.figures for spill in spills), Figures())
    header, places = spill_header(lengths, figures.to_dict())
    first = spills[0].ref
    storage.write_bytes(layout.block_spill(out, first.file, first.block),
                        [header] + [c for k, name in named.values() for c in spills[k].sections[name]])
    found: list = [{} for _ in spills]
    for full, (k, name) in named.items():
        found[k][name] = tuple(places[full])
    spill = None if one else (first.file, first.block)
    return [dataclasses.replace(s.summary, sections=found[k], spill=spill if k else None)
            for k, s in enumerate(spills)]


def sorted_hashes(result: BlockResult) -> np.ndarray:
    """The block's rendered samples as HASH_ROW rows (block-local sample id, 1-based
    local line), sorted by digest then sample id."""
    rendered = np.nonzero(result.status != BAD)[0]
    rows = np.zeros(len(rendered), HASH_ROW)
    if not len(rendered):
        return rows
    rows["digest"] = result.digests[rendered]
    rows["sample_id"] = rendered
    rows["line"] = result.local_line[rendered].astype(np.int64) + 1
    # By the first 8 bytes as a number (a fifth of the time of sorting 32-byte keys);
    # only when two samples share them (a repeated sample) does the whole digest decide.
    prefix = np.ascontiguousarray(rows["digest"][:, :8]).view(">u8").reshape(-1)
    order = np.argsort(prefix, kind="stable")
    ranked = prefix[order]
    if (ranked[1:] == ranked[:-1]).any():
        keys = np.ascontiguousarray(rows["digest"]).view(DIGEST_VALUE).reshape(-1)
        order = np.argsort(keys, kind="stable")
    return rows[order]


def range_bounds(rows: np.ndarray, tasks: int) -> np.ndarray:
    """Row offsets where each of ``tasks`` equal ranges of the digest space begins."""
    prefix = np.ascontiguousarray(rows["digest"][:, :8]).view(">u8").reshape(-1)
    edges = [(t << 64) // tasks for t in range(1, tasks)]
    inner = np.searchsorted(prefix, np.array(edges, dtype=np.uint64), side="left") if edges else []
    return np.concatenate([[0], inner, [len(rows)]]).astype(np.int64)
