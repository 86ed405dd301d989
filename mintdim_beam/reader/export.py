"""Export a published dataset to the formats other training stacks read.

A built directory is fixed-width records behind this project's own reader. Two exports
let it leave that reader:

* **Megatron-LM's indexed dataset** (:func:`export_megatron`): ``PREFIX.bin`` holds every
  sample's payload tokens back to back, without padding, in ascending sample_id;
  ``PREFIX.idx`` is the ``MMIDIDX`` index that Megatron's ``IndexedDataset`` memory-maps
  (layout in :func:`megatron_index_header`). Each sample is one sequence and its own
  document, so ``IndexedDataset(PREFIX)[i]`` is the i-th written sample's tokens; with
  ``append_eod`` followed by the end-of-document token (:func:`end_of_document_id`), as
  Megatron's ``preprocess_data.py --append-eod`` writes it.
* **Parquet** (:func:`export_parquet`): one row per sample (``sample_id``, ``unit_size``,
  ``input_ids``, ``segment_lengths``, ``source_file``, ``source_line``, ``hash``; a chat
  output adds ``roles``, its messages' roles, and a preference-pair dataset ``pair_id``
  and ``pair_role``, null for a row without them), which pyarrow, pandas, DuckDB and
  Hugging Face ``datasets`` open directly.

Both stream. Samples are read with :meth:`~mintdim_beam.reader.dataset.OutputReader.batches`,
a unit at a time in shard order, so every record gets the reader's checks (magic,
segment lengths against ``sample_index.jsonl``, empty fields, place in the unit,
token ids against the vocabulary, pad tail) with numpy, a batch at a time; the units'
streams are merged by sample_id in chunks of bounded size (:func:`iter_chunks`), so a
dataset of any size exports in the memory of one chunk plus the reader's index. The
export adds what the conversion itself relies on: every sample the index lists is in
the shards, and every id fits the target type. A failure raises
:class:`~mintdim_beam.reader.dataset.ReaderError` and leaves nothing under the output names:
files are written under temporary names and renamed only once all are complete. An
output name that exists already is refused (``DatasetAccessError``) unless ``overwrite``.

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
from typing import Callable, Iterator, NamedTuple, Optional

import numpy as np

from mintdim_beam.errors.read_errors import DatasetAccessError, ReaderError
from mintdim_beam.reader.dataset import OutputReader
from mintdim_beam.reader.sample_index import PAIR_ROLES
from mintdim_beam.storage.files import is_local

FORMATS = ("megatron", "parquet")

#: Megatron-LM's index magic, version and the dtype codes of its ``DType`` enum.
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_VERSION = 1
MEGATRON_DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}

_CHUNK_TOKENS = 1 << 20            # tokens read, checked and written at a time
_INDEX_CHUNK = 1 << 20             # .idx entries computed at a time
DEFAULT_ROW_GROUP_ROWS = 65_536
DEFAULT_ROW_GROUP_TOKENS = 1 << 20


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


class Chunk(NamedTuple):
    """Consecutive written samples (ascending sample_id), their tokens back to back."""

    rows: np.ndarray            # (k,) rows of sample_index.jsonl
    sample_ids: np.ndarray      # (k,)
    units: np.ndarray           # (k,) unit size of each sample
    lengths: np.ndarray         # (k, n_segments) segment lengths
    token_counts: np.ndarray    # (k,)
    ids: np.ndarray             # every payload token of the k samples, in order, unpadded


class _UnitStream:
    """One unit's checked records in ascending sample_id, taken a few at a time."""

    def __init__(self, reader: OutputReader, unit: int):
        self._batches = reader.batches(unit)
        self._ids = self._records = None
        self._at = 0

    def take(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``k`` records and their sample ids (views when one batch holds them)."""
        ids, recs = [], []
        while k:
            if self._records is None or self._at == len(self._ids):
                batch = next(self._batches, None)
                if batch is None:
                    break
                # A plain view: slicing a memmap subclass costs more than the slice.
                self._ids, self._records, self._at = batch.sample_ids, batch.records.view(np.ndarray), 0
            n = min(k, len(self._ids) - self._at)
            ids.append(self._ids[self._at:self._at + n])
            recs.append(self._records[self._at:self._at + n])
            self._at += n
            k -= n
        if len(recs) == 1:
            return ids[0], recs[0]
        return np.concatenate(ids) if ids else np.zeros(0, np.int64), \
            np.concatenate(recs) if recs else np.zeros((0, 0))


def iter_chunks(reader: OutputReader, max_rows: int, max_tokens: int) -> Iterator[Chunk]:
    """Every written sample in ascending sample_id, checked, in :class:`Chunk` s.

    A chunk closes at ``max_rows`` samples or at the first sample that takes it to
    ``max_tokens`` tokens, so memory is bounded by one chunk whatever the dataset size.
    Each unit's records are in ascending sample_id already (read with
    :meth:`OutputReader.batches`, checked a batch at a time), so a chunk takes from each
    unit as many records as the index puts in it, and interleaves their tokens by id.
    """
    from mintdim_beam.format.shard_format import ragged_gather_index

    ix = reader.index
    order = reader.rows_by_id
    counts_by_id = ix.token_count[order]
    n_seg = reader.meta.n_segments
    streams = {unit: _UnitStream(reader, unit) for unit in reader.unit_sizes}
    p, total = 0, len(order)
    while p < total:
        cum = np.cumsum(counts_by_id[p:p + max_rows])
        q = p + min(len(cum), int(np.searchsorted(cum, max_tokens, side="left")) + 1)
        rows = order[p:q]
        sample_ids, units, counts = ix.sample_id[rows], ix.unit[rows], counts_by_id[p:q]
        lengths = np.zeros((q - p, n_seg), np.int64)
        starts = np.zeros(q - p, np.int64)
        flat, base = [], 0
        for unit in np.unique(units).tolist():
            mine = np.nonzero(units == unit)[0]
            got_ids, recs = streams[unit].take(len(mine))
            if not np.array_equal(got_ids, sample_ids[mine]):
                raise ReaderError("export_order", reader.path, unit=unit, sample_id=int(sample_ids[mine][0]))
            lengths[mine] = recs[:, 1:1 + n_seg]
            used = np.arange(unit)[None, :] < counts[mine][:, None]
            flat.append(recs[:, 1 + n_seg:][used])
            starts[mine] = base + np.cumsum(counts[mine]) - counts[mine]
            base += int(counts[mine].sum())
        tokens = np.concatenate(flat)
        yield Chunk(rows, sample_ids, units, lengths, counts, tokens[ragged_gather_index(starts, counts)])
        p = q
    for unit, stream in streams.items():
        extra, _ = stream.take(1)
        if len(extra):
            raise ReaderError("export_extra", reader.path, unit=unit, sample_id=int(extra[0]))


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


def _check_fits(reader: OutputReader, chunk: Chunk, dtype: np.dtype) -> None:
    """Every id must fit ``dtype`` (the reader has checked them against the vocabulary
    size when the manifest gives one)."""
    top = int(np.iinfo(dtype).max)
    if not chunk.ids.size or int(chunk.ids.max()) <= top:
        return
    at = int(np.argmax(chunk.ids > top))
    j = int(np.searchsorted(np.cumsum(chunk.token_counts), at, side="right"))
    raise ReaderError("export_dtype", reader.path, sample_id=int(chunk.sample_ids[j]), id=int(chunk.ids[at]),
                      dtype=dtype.name)


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
                raise DatasetAccessError("target_exists", command="export", file=target)
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
                from mintdim_beam.storage import files as storage

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
                from mintdim_beam.storage import files as storage

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
    from mintdim_beam.storage import files as storage

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


def _open(source: str | OutputReader) -> OutputReader:
    """The dataset to export, opened with checksums when its manifest records them:
    the record checks alone take an in-vocabulary token changed on disk, two records of
    one length swapped, or an edited ``source_line`` for real data, and an export is
    where such data would leave for good."""
    if isinstance(source, OutputReader):
        return source
    reader = OutputReader(source)
    if isinstance(reader.manifest.get("checksums"), dict):
        reader = OutputReader(source, checksums=True)
    return reader


def megatron_paths(prefix: str) -> tuple[str, str]:
    return prefix + ".bin", prefix + ".idx"


def end_of_document_id(reader: OutputReader, token: Optional[str] = None, tokenizer: Optional[str] = None) -> int:
    """The id a Megatron export appends to each document: the tokenizer's end-of-sequence
    token, or the token whose content is ``token`` (``--eod-token``: ``</s>``,
    ``<|endoftext|>``, ``[SEP]``, ...).

    The tokenizer is the one ``manifest.json`` names (``tokenizer``: another path to
    the same file, e.g. where a moved dataset's tokenizer now is); it must be the one
    the dataset was built with, as far as the manifest records it (vocabulary size,
    unknown and pad ids), since a token's id belongs to its vocabulary."""
    from mintdim_beam.storage.files import exists, read_bytes
    from mintdim_beam.tokenization.adapters import open_tokenizer

    info = reader.manifest.get("tokenizer") or {}
    path = tokenizer or info.get("path")
    try:
        tok = open_tokenizer(info.get("type"), path, read_bytes, exists=exists)
    except Exception as exc:   # missing, unreadable, or not a tokenizer: the loader's own words
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetAccessError("eod_no_tokenizer", command="export", tokenizer=path, why=why) from None
    for key in ("vocab_size", "unk_id", "pad_id"):
        if info.get(key) != getattr(tok, key):
            raise DatasetAccessError("eod_tokenizer_differs", command="export", tokenizer=path, key=key,
                                     got=getattr(tok, key), want=info.get(key))
    found = tok.eos_id if token is None else tok.token_id(token)
    if found is None:
        kind = "eod_no_eos" if token is None else "eod_unknown_token"
        raise DatasetAccessError(kind, command="export", tokenizer=path, token=token)
    return found


def _with_end_tokens(chunk: Chunk, eod: int) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's tokens with ``eod`` after each sample that has any, and the lengths
    of the documents so made: Megatron's ``--append-eod`` leaves an empty document
    empty."""
    counts = chunk.token_counts.astype(np.int64)
    ends = np.cumsum(counts)[counts > 0]
    return np.insert(chunk.ids, ends, eod), counts + (counts > 0)


def export_megatron(source: str | OutputReader, prefix: str, overwrite: bool = False,
                    chunk_rows: int = 1 << 20, chunk_tokens: int = _CHUNK_TOKENS, append_eod: bool = False,
                    eod_token: Optional[str] = None, tokenizer: Optional[str] = None) -> ExportSummary:
    """Write ``PREFIX.bin`` and ``PREFIX.idx`` (Megatron-LM's indexed dataset) from a dataset.

    One sequence per written sample, its payload without padding, in ascending
    sample_id; each sample is its own document. ``append_eod``: each document that has
    tokens ends with the end-of-document token (:func:`end_of_document_id`, from
    ``eod_token`` and ``tokenizer`` when given), which counts in its length, as
    Megatron's ``preprocess_data.py --append-eod`` writes it. Samples are read, checked
    and written ``chunk_rows`` samples or ``chunk_tokens`` tokens at a time
    (:func:`iter_chunks`); the output does not depend on either. The ``.idx`` grows
    with the chunks too: lengths go straight after its header, byte pointers to a side
    file appended at the end, so no array of every sequence is held.
    """
    if chunk_rows <= 0 or chunk_tokens <= 0:
        raise ValueError("chunk_rows and chunk_tokens must be positive")
    if (eod_token is not None or tokenizer is not None) and not append_eod:
        raise ValueError("eod_token and tokenizer choose the end-of-document token of append_eod=True")
    reader = _open(source)
    bin_path, idx_path = megatron_paths(prefix)
    dtype = token_dtype(reader)
    eod = end_of_document_id(reader, eod_token, tokenizer) if append_eod else None

    def write(staged: _Staged) -> ExportSummary:
        done = tokens = 0
        pointers_path = staged.path(idx_path) + ".pointers"
        try:
            with open(staged.path(bin_path), "wb") as out, open(staged.path(idx_path), "w+b") as idx, \
                    open(pointers_path, "w+b") as pointers:
                idx.write(megatron_index_header(dtype, 0, 1))          # counts patched below
                for chunk in iter_chunks(reader, max_rows=chunk_rows, max_tokens=chunk_tokens):
                    _check_fits(reader, chunk, dtype)
                    ids, lengths = (chunk.ids, chunk.token_counts) if eod is None else _with_end_tokens(chunk, eod)
                    out.write(ids.astype(dtype.newbyteorder("<"), copy=False).tobytes())
                    idx.write(lengths.astype("<i4").tobytes())
                    ends = np.cumsum(lengths.astype(np.int64) * dtype.itemsize) + tokens * dtype.itemsize
                    pointers.write((ends - lengths * dtype.itemsize).astype("<i8").tobytes())
                    done += len(chunk.sample_ids)
                    tokens += int(ids.size)
                pointers.seek(0)
                for piece in iter(lambda: pointers.read(8 << 20), b""):
                    idx.write(piece)
                for start in range(0, done + 1, _INDEX_CHUNK):
                    idx.write(np.arange(start, min(done + 1, start + _INDEX_CHUNK), dtype="<i8").tobytes())
                idx.seek(0)
                idx.write(megatron_index_header(dtype, done, done + 1))
        finally:
            if os.path.exists(pointers_path):
                os.remove(pointers_path)
        return ExportSummary("megatron", (bin_path, idx_path), done, tokens, dtype.name)

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
    if reader.chat is not None:
        facts["chat"] = reader.chat
    return pa.schema([
        pa.field("sample_id", pa.int64(), nullable=False),
        pa.field("unit_size", pa.int32(), nullable=False),
        pa.field("input_ids", pa.list_(pa.int32()), nullable=False),
        pa.field("segment_lengths", pa.list_(pa.int32()), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_line", pa.int64(), nullable=False),
        pa.field("hash", pa.string(), nullable=False),
        *([pa.field("roles", pa.list_(pa.string()), nullable=False)] if reader.chat is not None else []),
        *([pa.field("pair_id", pa.int64()), pa.field("pair_role", pa.string())]
          if reader.index.pair_id is not None else []),
    ], metadata={"mintdim": json.dumps(facts, ensure_ascii=False)})


def _parquet_table(schema, reader: OutputReader, chunk: Chunk, files):
    import pyarrow as pa

    k, n_seg = chunk.lengths.shape
    offsets = np.zeros(k + 1, np.int32)
    np.cumsum(chunk.token_counts, out=offsets[1:])
    seg_offsets = np.arange(0, (k + 1) * n_seg, n_seg, dtype=np.int32)
    ix = reader.index
    hexes = ix.digest[chunk.rows].tobytes().hex()
    columns = [
        pa.array(chunk.sample_ids, pa.int64()),
        pa.array(chunk.units.astype(np.int32)),
        pa.ListArray.from_arrays(pa.array(offsets), pa.array(chunk.ids.astype(np.int32))),
        pa.ListArray.from_arrays(pa.array(seg_offsets), pa.array(chunk.lengths.reshape(-1).astype(np.int32))),
        files.take(pa.array(ix.file[chunk.rows])),
        pa.array(ix.line[chunk.rows], pa.int64()),
        pa.array([hexes[64 * j:64 * j + 64] for j in range(k)], pa.string()),
    ]
    if "roles" in schema.names:
        columns.append(_roles_column(reader, chunk.rows))
    if "pair_id" in schema.names:
        pair, said = ix.pair_id[chunk.rows], ix.pair_role[chunk.rows]
        columns.append(pa.array(pair, pa.int64(), mask=pair < 0))
        columns.append(pa.array(np.asarray(PAIR_ROLES, object)[np.maximum(said, 0)], pa.string(), mask=said < 0))
    return pa.Table.from_arrays(columns, schema=schema)


def _roles_column(reader: OutputReader, rows: np.ndarray):
    """``roles`` of each row as a list<string> column, by the manifest's role names."""
    import pyarrow as pa

    from mintdim_beam.format.shard_format import ragged_gather_index

    mapping = reader.role_map       # checks every row against the layout on first use
    ix = reader.index
    counts = ix.role_count[rows].astype(np.int64)
    flat = mapping[ix.role_codes[ragged_gather_index(ix.role_start[rows], counts)]]
    offsets = np.zeros(len(rows) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    names = pa.array(list(reader.chat["roles"]), pa.string())
    return pa.ListArray.from_arrays(pa.array(offsets), names.take(pa.array(flat.astype(np.int32))))


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
    import pyarrow as pa

    reader = _open(source)
    schema = parquet_schema(reader)
    files = pa.array(reader.index.files, pa.string())
    dtype = np.dtype(np.int32)

    def write(staged: _Staged) -> ExportSummary:
        samples = tokens = 0
        with pq.ParquetWriter(staged.path(out), schema) as writer:
            for chunk in iter_chunks(reader, row_group_rows, row_group_tokens):
                _check_fits(reader, chunk, dtype)
                writer.write_table(_parquet_table(schema, reader, chunk, files))
                samples += len(chunk.sample_ids)
                tokens += int(chunk.ids.size)
        return ExportSummary("parquet", (out,), samples, tokens, "int32")

    return _staged([out], overwrite, write)


def export(source: str, fmt: str, out: str, overwrite: bool = False, **options) -> ExportSummary:
    """Export ``source`` (an output directory) as ``fmt`` to ``out`` (a prefix for Megatron)."""
    if fmt == "megatron":
        return export_megatron(source, out, overwrite=overwrite, **options)
    if fmt == "parquet":
        return export_parquet(source, out, overwrite=overwrite, **options)
    raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
