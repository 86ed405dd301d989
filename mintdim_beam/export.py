"""Export a published dataset to the formats other training stacks read.

A built directory is fixed-width records behind this project's own reader. Two exports
let it leave that reader:

* **Megatron-LM's indexed dataset** (:func:`export_megatron`): ``PREFIX.bin`` holds every
  sample's payload tokens back to back, without padding, in ascending sample_id;
  ``PREFIX.idx`` is the ``MMIDIDX`` index that Megatron's ``IndexedDataset`` memory-maps
  (layout in :func:`megatron_index_header`). Each sample is one sequence and its own
  document, so ``IndexedDataset(PREFIX)[i]`` is the i-th written sample's tokens.
* **Parquet** (:func:`export_parquet`): one row per sample (``sample_id``, ``unit_size``,
  ``input_ids``, ``segment_lengths``, ``source_file``, ``source_line``, ``hash``), which
  pyarrow, pandas, DuckDB and Hugging Face ``datasets`` open directly.

Both stream: samples are read through :class:`~mintdim_beam.reader.OutputReader` (so
every record gets the reader's checks: magic, header, shard size) and written in chunks
of bounded size, so a dataset of any size exports in the memory of one chunk plus the
reader's index. What the export itself checks on top is what the conversion relies on:
each record's header agrees with ``sample_index.jsonl`` and every token id fits the
target type. A failure raises :class:`~mintdim_beam.reader.ReaderError` and leaves
nothing under the output names: files are written under temporary names and renamed
only once complete.

Like the reader, this module needs numpy (and pyarrow for Parquet) only; a remote
source or destination (``gs://``, ``s3://``) goes through Beam's ``FileSystems``,
imported inside the functions that touch it.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import numpy as np

from .reader import OutputReader, ReaderError, Sample, is_local

FORMATS = ("megatron", "parquet")

#: Megatron-LM's index magic, version and the dtype codes of its ``DType`` enum.
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_VERSION = 1
MEGATRON_DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}

_CHUNK_TOKENS = 1 << 22            # tokens buffered before a .bin write (8-16 MiB)
_INDEX_CHUNK = 1 << 20             # .idx entries computed at a time
DEFAULT_ROW_GROUP_ROWS = 65_536
DEFAULT_ROW_GROUP_TOKENS = 1 << 22


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    format: str
    paths: tuple            # the files written, final names
    samples: int
    tokens: int
    dtype: str              # token type in the export

    def describe(self) -> str:
        return (f"[export] format={self.format} samples={self.samples} tokens={self.tokens} "
                f"dtype={self.dtype} wrote {', '.join(self.paths)}")


# --------------------------------------------------------------------------- reading


def iter_checked_samples(reader: OutputReader) -> Iterator[Sample]:
    """Every written sample in ascending sample_id, each checked against its index row."""
    index = reader.index
    order = reader.sample_ids       # ascending; row_of maps each to its index row
    for sample_id in order.tolist():
        row = reader.row_of(sample_id)
        sample = reader.sample_at_row(row)
        want = int(index.token_count[row])
        if sample.token_count != want:
            raise ReaderError(
                f"{reader.path}: {sample.shard_path} record {sample.shard_record} (sample {sample_id}): "
                f"header lengths sum to {sample.token_count}, sample_index.jsonl says token_count {want}")
        yield sample


def token_dtype(reader: OutputReader) -> np.dtype:
    """The narrowest type Megatron knows that holds every id: uint16, else int32.

    Datasets store uint32 slots when the vocabulary or a unit exceeds 65,535; the ids
    themselves fit uint16 whenever the vocabulary does (Megatron's own preprocessing
    makes the same choice from the vocabulary size).
    """
    vocab = reader.meta.vocab_size
    if reader.meta.dtype == np.dtype("<u2") or (isinstance(vocab, int) and vocab <= 0x10000):
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


def _check_ids(reader: OutputReader, ids: np.ndarray, dtype: np.dtype, samples: list) -> None:
    """Every id must fit ``dtype`` and lie below the vocabulary size."""
    if not ids.size:
        return
    limit = int(np.iinfo(dtype).max) + 1
    vocab = reader.meta.vocab_size
    if isinstance(vocab, int) and vocab > 0:
        limit = min(limit, vocab)
    top = int(ids.max())
    if top < limit:
        return
    for sample in samples:
        payload = sample.payload
        if payload.size and int(payload.max()) >= limit:
            bad = int(payload.max())
            what = f"vocab_size {vocab}" if isinstance(vocab, int) and limit == vocab else f"{dtype.name}"
            raise ReaderError(
                f"{reader.path}: {sample.shard_path} record {sample.shard_record} (sample {sample.sample_id}): "
                f"token id {bad} does not fit {what}")
    raise ReaderError(f"{reader.path}: token id {top} does not fit {dtype.name}")  # pragma: no cover


def _batches(reader: OutputReader, max_rows: int, max_tokens: int) -> Iterator[list]:
    """Checked samples in ascending sample_id, in lists bounded by rows and tokens."""
    batch, tokens = [], 0
    for sample in iter_checked_samples(reader):
        batch.append(sample)
        tokens += sample.token_count
        if len(batch) >= max_rows or tokens >= max_tokens:
            yield batch
            batch, tokens = [], 0
    if batch:
        yield batch


# --------------------------------------------------------------------------- staging


class _Staged:
    """Files written under temporary names, published together or not at all.

    A local target is written beside its final name (``NAME.tmp-<hex>``) and renamed;
    a remote one is written to a local temporary file, uploaded under a temporary
    object name and renamed, since an object store would publish a half-written
    upload that fails midway under whatever name it has.
    """

    def __init__(self, targets: list, overwrite: bool):
        self.targets = list(targets)
        self.tag = uuid.uuid4().hex[:12]
        for target in self.targets:
            if not overwrite and _exists(target):
                raise ReaderError(f"{target} already exists; remove it or pass --overwrite")
        self.local = {}
        for target in self.targets:
            if is_local(target):
                os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
                self.local[target] = f"{target}.tmp-{self.tag}"
            else:
                fd, path = tempfile.mkstemp(prefix="mintdim-export-")
                os.close(fd)
                self.local[target] = path

    def path(self, target: str) -> str:
        """Where to write ``target`` now."""
        return self.local[target]

    def publish(self) -> None:
        remote = [t for t in self.targets if not is_local(t)]
        uploaded = []
        try:
            if remote:
                from . import storage

                for target in remote:
                    tmp = f"{target}.tmp-{self.tag}"
                    storage.write_bytes(tmp, _file_chunks(self.local[target]))
                    uploaded.append(tmp)
                for target in remote:
                    storage.rename(f"{target}.tmp-{self.tag}", target)
            for target in self.targets:
                if is_local(target):
                    os.replace(self.local[target], target)
        except BaseException:
            if uploaded:
                from . import storage

                for tmp in uploaded:
                    storage.delete(tmp)
            raise
        finally:
            self.discard()

    def discard(self) -> None:
        for path in self.local.values():
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def _exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(path)
    from . import storage

    return storage.exists(path)


def _file_chunks(path: str, size: int = 8 << 20) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while True:
            chunk = f.read(size)
            if not chunk:
                return
            yield chunk


def _staged(targets: list, overwrite: bool, write: Callable[[_Staged], ExportSummary]) -> ExportSummary:
    staged = _Staged(targets, overwrite)
    try:
        summary = write(staged)
    except BaseException:
        staged.discard()
        raise
    staged.publish()
    return summary


# --------------------------------------------------------------------------- Megatron


def megatron_index_header(dtype: np.dtype, sequences: int, documents: int) -> bytes:
    """The 34 bytes before an ``MMIDIDX`` index's arrays.

    Layout (all little endian), as Megatron-LM's ``_IndexWriter`` writes and
    ``_IndexReader`` reads it::

        9 bytes  b"MMIDIDX\\x00\\x00"
        <Q       version, 1
        <B       dtype code (uint16 = 8, int32 = 4, ...)
        <Q       sequence count N
        <Q       document count D (document boundaries, N + 1 here)
        int32[N] sequence lengths in tokens
        int64[N] sequence byte offsets into the .bin
        int64[D] document boundaries: sequence indices, starting at 0, ending at N
    """
    code = MEGATRON_DTYPE_CODES[np.dtype(dtype)]
    return (MEGATRON_MAGIC + struct.pack("<Q", MEGATRON_VERSION) + struct.pack("<B", code)
            + struct.pack("<Q", sequences) + struct.pack("<Q", documents))


def megatron_paths(prefix: str) -> tuple[str, str]:
    return prefix + ".bin", prefix + ".idx"


def export_megatron(source: str | OutputReader, prefix: str, overwrite: bool = False) -> ExportSummary:
    """Write ``PREFIX.bin`` and ``PREFIX.idx`` (Megatron-LM's indexed dataset) from a dataset.

    One sequence per written sample, its payload without padding, in ascending
    sample_id; each sample is its own document.
    """
    reader = source if isinstance(source, OutputReader) else OutputReader(source)
    bin_path, idx_path = megatron_paths(prefix)
    dtype = token_dtype(reader)

    def write(staged: _Staged) -> ExportSummary:
        n = len(reader)
        lengths = np.zeros(n, np.int32)
        done = tokens = 0
        with open(staged.path(bin_path), "wb") as out:
            for batch in _batches(reader, max_rows=1 << 16, max_tokens=_CHUNK_TOKENS):
                ids = np.concatenate([s.payload for s in batch]) if batch else np.zeros(0, dtype)
                _check_ids(reader, ids, dtype, batch)
                out.write(ids.astype(dtype.newbyteorder("<"), copy=False).tobytes())
                lengths[done:done + len(batch)] = [s.token_count for s in batch]
                done += len(batch)
                tokens += int(ids.size)
        if done != n:   # pragma: no cover - the reader yields one sample per index row
            raise ReaderError(f"{reader.path}: read {done} samples, sample_index.jsonl lists {n}")
        with open(staged.path(idx_path), "wb") as out:
            out.write(megatron_index_header(dtype, n, n + 1))
            out.write(lengths.astype("<i4").tobytes())
            offset = 0
            for start in range(0, n, _INDEX_CHUNK):
                part = lengths[start:start + _INDEX_CHUNK].astype(np.int64) * dtype.itemsize
                ends = np.cumsum(part) + offset
                out.write((ends - part).astype("<i8").tobytes())
                offset = int(ends[-1])
            for start in range(0, n + 1, _INDEX_CHUNK):
                out.write(np.arange(start, min(n + 1, start + _INDEX_CHUNK), dtype="<i8").tobytes())
        return ExportSummary("megatron", (bin_path, idx_path), n, tokens, dtype.name)

    return _staged([bin_path, idx_path], overwrite, write)


# --------------------------------------------------------------------------- Parquet


PARQUET_COLUMNS = ("sample_id", "unit_size", "input_ids", "segment_lengths", "source_file",
                   "source_line", "hash")


def parquet_schema(reader: OutputReader):
    """The export's Arrow schema; the dataset's metadata rides along under ``mintdim``."""
    import pyarrow as pa

    meta = reader.manifest
    facts = {
        "sequence_template": list(reader.sequence_template),
        "unit_sizes": list(reader.unit_sizes),
        "tokenizer": meta.get("tokenizer"),
        "pad_token_id": reader.meta.pad_id,
        "source_dataset": reader.path,
    }
    return pa.schema([
        pa.field("sample_id", pa.int64(), nullable=False),
        pa.field("unit_size", pa.int32(), nullable=False),
        pa.field("input_ids", pa.list_(pa.int32()), nullable=False),
        pa.field("segment_lengths", pa.list_(pa.int32()), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_line", pa.int64(), nullable=False),
        pa.field("hash", pa.string(), nullable=False),
    ], metadata={"mintdim": json.dumps(facts, ensure_ascii=False)})


def _parquet_table(schema, batch: list, ids: np.ndarray, n_segments: int):
    import pyarrow as pa

    counts = np.fromiter((s.token_count for s in batch), np.int64, len(batch))
    offsets = np.zeros(len(batch) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    lengths = np.concatenate([s.lengths for s in batch]).astype(np.int32)
    seg_offsets = np.arange(0, (len(batch) + 1) * n_segments, n_segments, dtype=np.int32)
    columns = [
        pa.array([s.sample_id for s in batch], pa.int64()),
        pa.array([s.unit_size for s in batch], pa.int32()),
        pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids.astype(np.int32))),
        pa.ListArray.from_arrays(pa.array(seg_offsets), pa.array(lengths)),
        pa.array([s.source_file for s in batch], pa.string()),
        pa.array([s.source_line for s in batch], pa.int64()),
        pa.array([s.hash for s in batch], pa.string()),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def export_parquet(source: str | OutputReader, out: str, overwrite: bool = False,
                   row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
                   row_group_tokens: int = DEFAULT_ROW_GROUP_TOKENS) -> ExportSummary:
    """Write one Parquet file with a row per written sample, in ascending sample_id.

    A row group closes at ``row_group_rows`` samples or ``row_group_tokens`` tokens,
    whichever comes first; only one row group is ever held in memory.
    """
    import pyarrow.parquet as pq

    if row_group_rows <= 0 or row_group_tokens <= 0:
        raise ValueError("row_group_rows and row_group_tokens must be positive")
    reader = source if isinstance(source, OutputReader) else OutputReader(source)
    schema = parquet_schema(reader)
    n_segments = reader.meta.n_segments
    dtype = np.dtype(np.int32)

    def write(staged: _Staged) -> ExportSummary:
        samples = tokens = 0
        with pq.ParquetWriter(staged.path(out), schema) as writer:
            for batch in _batches(reader, row_group_rows, row_group_tokens):
                ids = np.concatenate([s.payload for s in batch])
                _check_ids(reader, ids, dtype, batch)
                writer.write_table(_parquet_table(schema, batch, ids, n_segments))
                samples += len(batch)
                tokens += int(ids.size)
        return ExportSummary("parquet", (out,), samples, tokens, "int32")

    return _staged([out], overwrite, write)


def export(source: str, fmt: str, out: str, overwrite: bool = False, **options) -> ExportSummary:
    """Export ``source`` (an output directory) as ``fmt`` to ``out`` (a prefix for Megatron)."""
    if fmt == "megatron":
        return export_megatron(source, out, overwrite=overwrite)
    if fmt == "parquet":
        return export_parquet(source, out, overwrite=overwrite, **options)
    raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
