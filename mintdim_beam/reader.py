"""Read a published output directory: samples by id, units in order, training items.

Pure numpy, so a training job can read shards without Beam installed in its image:
metadata of a local directory is read with plain ``open`` and shards are memory-mapped;
only a remote path (``gs://``, ``s3://``) imports ``apache_beam.io.filesystems``, lazily,
inside the one function that reads bytes.

Random access needs to know where each sample lives. ``sample_index.jsonl`` says it
(``unit_size``, ``shard_path``, ``shard_record``); the reader parses it once into numpy
columns (:class:`SampleIndex`) rather than a dict per row, so an index of millions of
samples costs tens of bytes per sample, and a lookup is one ``searchsorted``.

Records are decoded with :mod:`mintdim_beam.shard_format`, the codec the writer uses,
so the reader can never disagree with the build on the layout.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

import numpy as np

from .shard_format import record_slots

MANIFEST = "manifest.json"
LENGTH_FIELD = "length_field.json"
SAMPLE_INDEX = "sample_index.jsonl"
IGNORE_INDEX = -100  # the label value PyTorch's cross-entropy ignores

_DTYPES = {"uint16": (np.dtype("<u2"), 0xFFFF), "uint32": (np.dtype("<u4"), 0xFFFFFFFF)}
_SHARD_PATH = re.compile(r"^unit_(\d+)/shard_(\d+)\.bin$")
_REMOTE_SHARDS_CACHED = 4


class ReaderError(Exception):
    """The directory is not a readable, consistent mintdim output."""


# --------------------------------------------------------------------------- storage


def is_local(path: str) -> bool:
    return "://" not in path


def join(base: str, *parts: str) -> str:
    if is_local(base):
        return os.path.join(base, *parts)
    return posixpath.join(base.rstrip("/"), *parts)


def read_bytes(path: str) -> bytes:
    """Whole file; remote paths go through Beam's ``FileSystems`` (imported here only)."""
    if is_local(path):
        with open(path, "rb") as f:
            return f.read()
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(path)
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.exists(path)


def file_size(path: str) -> int:
    if is_local(path):
        return os.path.getsize(path)
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes


def list_dir(path: str) -> list[str]:
    """Names (not paths) of the entries directly inside ``path``; [] when absent."""
    if is_local(path):
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    from apache_beam.io.filesystems import FileSystems

    prefix = path.rstrip("/") + "/"
    try:
        found = FileSystems.match([prefix + "**"])[0].metadata_list
    except Exception:
        return []
    names = {m.path[len(prefix):].split("/", 1)[0] for m in found if m.path.startswith(prefix)}
    return sorted(n for n in names if n)


def read_json(path: str):
    try:
        return json.loads(read_bytes(path))
    except FileNotFoundError:
        raise ReaderError(f"{path}: file not found") from None
    except ValueError as exc:
        raise ReaderError(f"{path}: not valid JSON ({exc})") from None


def iter_jsonl(path: str) -> Iterator[tuple[int, object]]:
    """``(line number, parsed row)`` of a JSONL index file; a bad line yields ``(n, None)``."""
    data = read_bytes(path)
    for n, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError:
            yield n, None


# --------------------------------------------------------------------------- metadata


@dataclass(frozen=True)
class Metadata:
    """What ``manifest.json`` and ``length_field.json`` say about the shards."""

    path: str
    manifest: dict
    length_field: dict
    sequence_template: tuple
    dtype: np.dtype
    magic: int
    pad_id: int
    unk_id: Optional[int]
    vocab_size: Optional[int]
    unit_sizes: tuple
    samples_per_shard: int

    @property
    def n_segments(self) -> int:
        return len(self.sequence_template)

    @property
    def bytes_per_token(self) -> int:
        return self.dtype.itemsize

    def slots(self, unit: int) -> int:
        return record_slots(self.n_segments, unit)

    def record_bytes(self, unit: int) -> int:
        return self.slots(unit) * self.bytes_per_token

    def shard_path(self, unit: int, shard: int) -> str:
        """Path of a shard relative to the output directory (as in sample_index.jsonl)."""
        return f"unit_{unit}/shard_{shard:06d}.bin"


def read_metadata(path: str) -> Metadata:
    """Load and cross-check ``manifest.json`` and ``length_field.json``.

    The manifest is written last, so its absence means the build never published; a
    ``UNIT_BUILD_FAILED.md`` marker says the build failed.
    """
    manifest_path = join(path, MANIFEST)
    if not exists(manifest_path):
        failed = [u for u in list_dir(path) if exists(join(path, u, "UNIT_BUILD_FAILED.md"))]
        why = f" (the build failed: see {failed[0]}/UNIT_BUILD_FAILED.md)" if failed else ""
        raise ReaderError(f"{path}: no {MANIFEST}; not a published mintdim output{why}")
    manifest = read_json(manifest_path)
    lf = read_json(join(path, LENGTH_FIELD))
    if not isinstance(manifest, dict) or not isinstance(lf, dict):
        raise ReaderError(f"{path}: {MANIFEST} and {LENGTH_FIELD} must hold JSON objects")
    dtype_name = lf.get("token_dtype")
    if dtype_name not in _DTYPES:
        raise ReaderError(f"{join(path, LENGTH_FIELD)}: token_dtype must be uint16 or uint32, got {dtype_name!r}")
    dtype, magic = _DTYPES[dtype_name]
    problems = []
    if lf.get("magic") != magic:
        problems.append(f"{LENGTH_FIELD} magic is {lf.get('magic')!r}, {dtype_name} needs {magic}")
    template = lf.get("sequence_template")
    if not isinstance(template, list) or not template or not all(isinstance(s, str) for s in template):
        problems.append(f"{LENGTH_FIELD} sequence_template must be a non-empty list of names")
    elif manifest.get("sequence_template") != template:
        problems.append(f"{MANIFEST} sequence_template differs from {LENGTH_FIELD}")
    storage = manifest.get("token_storage") or {}
    if storage.get("dtype") != dtype_name or storage.get("magic") != magic:
        problems.append(f"{MANIFEST} token_storage {storage} differs from {LENGTH_FIELD} ({dtype_name}, {magic})")
    tokenizer = manifest.get("tokenizer") or {}
    pad_id = lf.get("pad_token_id")
    if not isinstance(pad_id, int) or tokenizer.get("pad_id", pad_id) != pad_id:
        problems.append(f"pad id: {LENGTH_FIELD} says {pad_id!r}, {MANIFEST} says {tokenizer.get('pad_id')!r}")
    sizes = (manifest.get("units") or {}).get("sizes")
    if not isinstance(sizes, list) or not sizes or not all(isinstance(s, int) and s > 0 for s in sizes) \
            or sizes != sorted(set(sizes)):
        problems.append(f"{MANIFEST} units.sizes must be ascending positive integers, got {sizes!r}")
    sps = (manifest.get("output") or {}).get("samples_per_shard")
    if not isinstance(sps, int) or sps <= 0:
        problems.append(f"{MANIFEST} output.samples_per_shard must be a positive integer, got {sps!r}")
    if problems:
        raise ReaderError(f"{path}: " + "; ".join(problems))
    return Metadata(
        path=path, manifest=manifest, length_field=lf, sequence_template=tuple(template),
        dtype=dtype, magic=magic, pad_id=pad_id, unk_id=tokenizer.get("unk_id"),
        vocab_size=tokenizer.get("vocab_size"), unit_sizes=tuple(sizes), samples_per_shard=sps,
    )


# --------------------------------------------------------------------------- sample index


class IndexProblem(NamedTuple):
    """A ``sample_index.jsonl`` row that could not be used (1-based line number)."""

    line: int
    message: str


_ROW_INTS = ("sample_id", "token_count", "unit_size", "source_line", "shard_record")


@dataclass
class SampleIndex:
    """``sample_index.jsonl`` as numpy columns, one entry per row, in file order.

    ``files`` holds each distinct ``source_file`` once; ``file`` indexes it. Rows with an
    empty ``empty_fields`` list (nearly all) cost nothing in ``empty_fields``.
    """

    sample_id: np.ndarray
    unit: np.ndarray
    shard: np.ndarray
    record: np.ndarray
    token_count: np.ndarray
    file: np.ndarray
    line: np.ndarray
    digest: np.ndarray              # (rows, 32) uint8, the sha256 of the rendered text
    files: list
    empty_fields: dict = field(default_factory=dict)   # row -> tuple of field names
    row_line: np.ndarray = None     # 1-based line of each row in sample_index.jsonl

    def __len__(self) -> int:
        return int(self.sample_id.shape[0])

    @property
    def sorted(self) -> bool:
        s = self.sample_id
        return bool(len(s) < 2 or (s[1:] > s[:-1]).all())

    def hash(self, row: int) -> str:
        return bytes(self.digest[row]).hex()

    def positions(self, samples_per_shard: int) -> np.ndarray:
        """Rank of each row's record inside its unit (shard * samples_per_shard + record)."""
        return self.shard.astype(np.int64) * samples_per_shard + self.record


def parse_sample_index(data: bytes, problems: Optional[list] = None) -> SampleIndex:
    """Parse ``sample_index.jsonl`` bytes into a :class:`SampleIndex`.

    A malformed row raises :class:`ReaderError`, or, when ``problems`` is a list, is
    reported there as an :class:`IndexProblem` and left out (what ``verify`` wants).
    """
    cols = {k: [] for k in ("sample_id", "unit", "shard", "record", "token_count", "file", "line", "row_line")}
    digests: list = []
    files: dict = {}
    empty: dict = {}
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        message = None
        try:
            row = json.loads(raw)
        except ValueError:
            row, message = None, "not valid JSON"
        if row is not None:
            message = _row_problem(row)
        if message is not None:
            if problems is None:
                raise ReaderError(f"{SAMPLE_INDEX} line {n}: {message}")
            problems.append(IndexProblem(n, message))
            continue
        m = _SHARD_PATH.match(row["shard_path"])
        k = len(cols["sample_id"])
        cols["sample_id"].append(row["sample_id"])
        cols["unit"].append(row["unit_size"])
        cols["shard"].append(int(m.group(2)))
        cols["record"].append(row["shard_record"])
        cols["token_count"].append(row["token_count"])
        cols["file"].append(files.setdefault(row["source_file"], len(files)))
        cols["line"].append(row["source_line"])
        cols["row_line"].append(n)
        digests.append(bytes.fromhex(row["hash"]))
        if row.get("empty_fields"):
            empty[k] = tuple(row["empty_fields"])
    i64 = lambda name: np.asarray(cols[name], dtype=np.int64)  # noqa: E731
    return SampleIndex(
        sample_id=i64("sample_id"), unit=i64("unit"), shard=np.asarray(cols["shard"], np.int32),
        record=i64("record"), token_count=i64("token_count"), file=np.asarray(cols["file"], np.int32),
        line=i64("line"),
        digest=np.frombuffer(b"".join(digests), np.uint8).reshape(-1, 32).copy(),
        files=list(files), empty_fields=empty, row_line=i64("row_line"),
    )


def _row_problem(row) -> Optional[str]:
    if not isinstance(row, dict):
        return "row is not a JSON object"
    for key in _ROW_INTS:
        value = row.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"{key} must be a non-negative integer, got {value!r}"
    if not isinstance(row.get("source_file"), str):
        return "source_file must be a string"
    digest = row.get("hash")
    if not isinstance(digest, str) or len(digest) != 64 or not re.fullmatch(r"[0-9a-f]{64}", digest):
        return f"hash must be 64 lowercase hex digits, got {digest!r}"
    path = row.get("shard_path")
    m = _SHARD_PATH.match(path) if isinstance(path, str) else None
    if m is None:
        return f"shard_path must look like unit_<size>/shard_NNNNNN.bin, got {path!r}"
    if int(m.group(1)) != row["unit_size"]:
        return f"shard_path {path} is not in unit_{row['unit_size']}"
    if not isinstance(row.get("empty_fields", []), list):
        return "empty_fields must be a list"
    return None


# --------------------------------------------------------------------------- samples


class SegmentTokens(NamedTuple):
    """One template segment of a record: its position, name and token ids."""

    index: int
    name: str
    ids: np.ndarray


@dataclass(frozen=True)
class Sample:
    """One written sample: where it came from, where it lives, and its segments."""

    sample_id: Optional[int]        # None for a record that no index row points to
    unit_size: int
    shard_path: str
    shard_record: int
    source_file: Optional[str]
    source_line: Optional[int]
    hash: Optional[str]
    empty_fields: tuple
    record: np.ndarray              # the raw record slots (magic, lengths, payload)
    sequence_template: tuple

    @property
    def lengths(self) -> np.ndarray:
        return self.record[1:1 + len(self.sequence_template)].astype(np.int64)

    @property
    def token_count(self) -> int:
        return int(self.lengths.sum())

    @property
    def payload(self) -> np.ndarray:
        """The written tokens, without padding."""
        start = 1 + len(self.sequence_template)
        return self.record[start:start + self.token_count]

    @property
    def padded_payload(self) -> np.ndarray:
        return self.record[1 + len(self.sequence_template):]

    @property
    def segments(self) -> tuple:
        """Every segment in ``sequence_template`` order (literals named token_template)."""
        out, start = [], 0
        payload = self.padded_payload
        for j, (name, n) in enumerate(zip(self.sequence_template, self.lengths.tolist())):
            out.append(SegmentTokens(j, name, payload[start:start + n]))
            start += n
        return tuple(out)

    def segment(self, name: str) -> np.ndarray:
        """Tokens of the segments called ``name``, concatenated in order.

        For a field used once this is just that field's tokens; ``"token_template"``
        gives every literal's tokens.
        """
        return self.select([name])

    def select(self, names: Iterable[str]) -> np.ndarray:
        """Tokens of every segment whose name is in ``names``, in payload order."""
        names = set(names)
        unknown = names - set(self.sequence_template)
        if unknown:
            raise KeyError(f"no segment named {sorted(unknown)}; segments: {list(self.sequence_template)}")
        parts = [s.ids for s in self.segments if s.name in names]
        return np.concatenate(parts) if parts else self.record[:0]


# --------------------------------------------------------------------------- the reader


class OutputReader:
    """An opened output directory.

    ``reader.sample(sample_id)`` returns a :class:`Sample`; ``reader.iter_unit(size)``
    walks a unit's records in shard order (ascending sample_id); iterating the reader
    walks every sample in sample_id order; ``reader.causal_lm()`` is a map-style
    dataset for a training loop.
    """

    def __init__(self, path: str, mmap: bool = True, index: Optional[SampleIndex] = None):
        self.path = path
        self.meta = read_metadata(path)
        self._mmap = mmap and is_local(path)
        self._index: Optional[SampleIndex] = None
        self._order: Optional[np.ndarray] = None
        if index is not None:  # an index the caller already parsed (verify does)
            self._set_index(index)
        self._shards: "OrderedDict[str, np.ndarray]" = OrderedDict()

    # metadata shortcuts
    @property
    def manifest(self) -> dict:
        return self.meta.manifest

    @property
    def sequence_template(self) -> tuple:
        return self.meta.sequence_template

    @property
    def unit_sizes(self) -> tuple:
        return self.meta.unit_sizes

    def json(self, name: str):
        """A summary file of the directory (``stats.json``, ``histogram.json``, ...)."""
        return read_json(join(self.path, name))

    @property
    def index(self) -> SampleIndex:
        if self._index is None:
            try:
                data = read_bytes(join(self.path, SAMPLE_INDEX))
            except FileNotFoundError:
                raise ReaderError(f"{self.path}: no {SAMPLE_INDEX}") from None
            self._set_index(parse_sample_index(data))
        return self._index

    def _set_index(self, index: SampleIndex) -> None:
        self._order = None if index.sorted else np.argsort(index.sample_id, kind="stable")
        self._index = index

    def __len__(self) -> int:
        return len(self.index)

    @property
    def sample_ids(self) -> np.ndarray:
        """Every written sample id, ascending."""
        ids = self.index.sample_id
        return ids if self._order is None else ids[self._order]

    def row_of(self, sample_id: int) -> int:
        """Row of ``sample_id`` in the index; KeyError for a sample with no shard record."""
        ids = self.sample_ids      # loads the index (and its sort order) on first use
        k = int(np.searchsorted(ids, sample_id))
        if k >= len(ids) or ids[k] != sample_id:
            raise KeyError(f"sample {sample_id} has no record in {self.path} (skipped, bad, or out of range)")
        return k if self._order is None else int(self._order[k])

    # shards
    def shard_records(self, unit: int, shard: int) -> np.ndarray:
        """All records of one shard as an ``(records, slots)`` array (memory-mapped locally)."""
        rel = self.meta.shard_path(unit, shard)
        cached = self._shards.get(rel)
        if cached is not None:
            self._shards.move_to_end(rel)
            return cached
        full = join(self.path, *rel.split("/"))
        slots = self.meta.slots(unit)
        record_bytes = self.meta.record_bytes(unit)
        try:
            size = file_size(full)
        except (FileNotFoundError, IndexError):
            raise ReaderError(f"{rel}: shard file not found in {self.path}") from None
        if size % record_bytes:
            raise ReaderError(f"{rel}: {size} bytes is not a whole number of {record_bytes}-byte records "
                              f"(truncated or corrupt shard)")
        if size == 0:
            arr = np.zeros((0, slots), self.meta.dtype)
        elif self._mmap:
            arr = np.memmap(full, dtype=self.meta.dtype, mode="r").reshape(-1, slots)
        else:
            arr = np.frombuffer(read_bytes(full), dtype=self.meta.dtype).reshape(-1, slots)
        self._shards[rel] = arr
        if not self._mmap and len(self._shards) > _REMOTE_SHARDS_CACHED:
            self._shards.popitem(last=False)
        return arr

    def shard_count(self, unit: int) -> int:
        """Shards of ``unit`` that exist on disk (consecutive from shard_000000)."""
        names = set(list_dir(join(self.path, f"unit_{unit}")))
        k = 0
        while f"shard_{k:06d}.bin" in names:
            k += 1
        return k

    def record(self, unit: int, shard: int, record: int) -> np.ndarray:
        """One record's slots, after checking its magic and header."""
        recs = self.shard_records(unit, shard)
        rel = self.meta.shard_path(unit, shard)
        if not 0 <= record < recs.shape[0]:
            raise ReaderError(f"{rel}: record {record} out of range (shard holds {recs.shape[0]} records)")
        rec = recs[record]
        if int(rec[0]) != self.meta.magic:
            raise ReaderError(f"{rel} record {record}: magic is {int(rec[0]):#x}, expected {self.meta.magic:#x}")
        total = int(rec[1:1 + self.meta.n_segments].astype(np.int64).sum())
        if total > unit:
            raise ReaderError(f"{rel} record {record}: header lengths sum to {total} > unit size {unit}")
        return rec

    # samples
    def sample_at_row(self, row: int) -> Sample:
        """The sample of one index row (rows are in sample_index.jsonl order)."""
        ix = self.index
        unit, shard, rec_no = int(ix.unit[row]), int(ix.shard[row]), int(ix.record[row])
        rec = self.record(unit, shard, rec_no)
        return Sample(
            sample_id=int(ix.sample_id[row]), unit_size=unit, shard_path=self.meta.shard_path(unit, shard),
            shard_record=rec_no, source_file=ix.files[int(ix.file[row])], source_line=int(ix.line[row]),
            hash=ix.hash(row), empty_fields=ix.empty_fields.get(row, ()), record=rec,
            sequence_template=self.sequence_template,
        )

    def sample(self, sample_id: int) -> Sample:
        """The sample written for ``sample_id``."""
        return self.sample_at_row(self.row_of(int(sample_id)))

    def sample_at(self, shard_path: str, record: int) -> Sample:
        """The sample stored at ``record`` of ``shard_path`` (relative to the directory).

        A record that no index row points to still decodes, with ``sample_id`` None.
        """
        m = _SHARD_PATH.match(shard_path.replace(os.sep, "/"))
        if m is None:
            raise ReaderError(f"{shard_path}: not a shard path (unit_<size>/shard_NNNNNN.bin)")
        unit, shard = int(m.group(1)), int(m.group(2))
        ix = self.index
        hits = np.nonzero((ix.unit == unit) & (ix.shard == shard) & (ix.record == record))[0]
        if len(hits):
            return self.sample_at_row(int(hits[0]))
        rec = self.record(unit, shard, record)
        return Sample(None, unit, self.meta.shard_path(unit, shard), record, None, None, None, (), rec,
                      self.sequence_template)

    def unit_rows(self, unit: int) -> np.ndarray:
        """Index rows of ``unit`` in record order (which is ascending sample_id)."""
        ix = self.index
        rows = np.nonzero(ix.unit == unit)[0]
        pos = ix.positions(self.meta.samples_per_shard)[rows]
        return rows[np.argsort(pos, kind="stable")]

    def iter_unit(self, unit: int) -> Iterator[Sample]:
        """Every sample of ``unit`` in shard and record order."""
        if unit not in self.unit_sizes:
            raise ReaderError(f"no unit {unit} in {self.path}; units: {list(self.unit_sizes)}")
        for row in self.unit_rows(unit).tolist():
            yield self.sample_at_row(row)

    def unit_arrays(self, unit: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(sample_ids, records)`` per shard of ``unit``: the fast path for bulk readers."""
        rows = self.unit_rows(unit)
        ix = self.index
        for k in range(self.shard_count(unit)):
            recs = self.shard_records(unit, k)
            mine = rows[ix.shard[rows] == k]
            yield ix.sample_id[mine][np.argsort(ix.record[mine])], recs

    def __iter__(self) -> Iterator[Sample]:
        """Every written sample in ascending sample_id."""
        order = range(len(self.index)) if self._order is None else self._order.tolist()
        for row in order:
            yield self.sample_at_row(row)

    def causal_lm(self, units: Optional[Sequence[int]] = None, loss_segments: Optional[Sequence[str]] = None,
                  shift: bool = True, return_tensors: Optional[str] = None) -> "CausalLMDataset":
        return CausalLMDataset(self, units=units, loss_segments=loss_segments, shift=shift,
                               return_tensors=return_tensors)


def open_output(path: str, mmap: bool = True) -> OutputReader:
    """Open an output directory (local or any Beam filesystem path)."""
    return OutputReader(path, mmap=mmap)


# --------------------------------------------------------------------------- training view


def segment_mask(lengths: np.ndarray, sequence_template: Sequence[str], names: Iterable[str],
                 width: int) -> np.ndarray:
    """Boolean ``(..., width)`` mask of payload positions inside the named segments.

    ``lengths`` are the header lengths, ``(n_segments,)`` for one record or
    ``(records, n_segments)`` for many: e.g. ``names=["output"]`` puts the loss on the
    answer only.
    """
    names = set(names)
    unknown = names - set(sequence_template)
    if unknown:
        raise KeyError(f"no segment named {sorted(unknown)}; segments: {list(sequence_template)}")
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths, axis=-1)
    starts = ends - lengths
    pos = np.arange(width)
    mask = np.zeros(lengths.shape[:-1] + (width,), dtype=bool)
    for j, name in enumerate(sequence_template):
        if name in names:
            mask |= (pos >= starts[..., j, None]) & (pos < ends[..., j, None])
    return mask


def causal_lm_arrays(record: np.ndarray, n_segments: int, unit: int, pad_id: int,
                     loss_mask: Optional[np.ndarray] = None, shift: bool = True) -> dict:
    """``input_ids``, ``labels`` and ``attention_mask`` of one record, in numpy.

    With ``shift`` (the default) ``labels[i]`` is the token at ``i + 1`` (the target of
    position ``i``), so the labels feed a loss directly; pass ``shift=False`` for models
    that shift internally (Hugging Face), which get ``labels == input_ids``. Padding, and
    tokens outside ``loss_mask``, are ``-100`` in the labels; padding is False in the mask.
    """
    lengths = record[1:1 + n_segments].astype(np.int64)
    count = int(lengths.sum())
    input_ids = record[1 + n_segments:1 + n_segments + unit].astype(np.int64)
    attention = np.arange(unit) < count
    target_ok = attention if loss_mask is None else attention & loss_mask
    labels = np.full(unit, IGNORE_INDEX, dtype=np.int64)
    if shift:
        labels[:-1] = np.where(target_ok[1:], input_ids[1:], IGNORE_INDEX)
    else:
        labels = np.where(target_ok, input_ids, IGNORE_INDEX)
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention}


class CausalLMDataset:
    """Map-style dataset of training items, in ascending sample_id.

    ``dataset[i]`` is ``{"input_ids", "labels", "attention_mask"}``, each of the
    sample's unit width, so items of one unit stack without collation work. Give
    ``units=[size]`` for a plain ``DataLoader(dataset, batch_size=...)``, or keep every
    unit and pass ``batch_sampler=dataset.batch_sampler(batch_size)`` so that each batch
    holds one unit. ``return_tensors="pt"`` imports torch (only then) and returns tensors.
    """

    def __init__(self, reader: OutputReader, units: Optional[Sequence[int]] = None,
                 loss_segments: Optional[Sequence[str]] = None, shift: bool = True,
                 return_tensors: Optional[str] = None):
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        self._torch = None
        if return_tensors == "pt":
            try:
                import torch
            except ImportError:
                raise ImportError("return_tensors='pt' needs PyTorch: pip install torch") from None
            self._torch = torch
        self.reader = reader
        self.loss_segments = tuple(loss_segments) if loss_segments is not None else None
        if self.loss_segments is not None:
            unknown = set(self.loss_segments) - set(reader.sequence_template)
            if unknown:
                raise KeyError(f"no segment named {sorted(unknown)}; segments: {list(reader.sequence_template)}")
        self.shift = shift
        ix = reader.index
        rows = np.arange(len(ix)) if reader._order is None else reader._order
        if units is not None:
            missing = set(units) - set(reader.unit_sizes)
            if missing:
                raise ReaderError(f"no unit {sorted(missing)} in {reader.path}; units: {list(reader.unit_sizes)}")
            rows = rows[np.isin(ix.unit[rows], np.asarray(list(units), np.int64))]
        self._rows = np.asarray(rows, np.int64)

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    def unit_of(self, i: int) -> int:
        return int(self.reader.index.unit[self._rows[i]])

    @property
    def units(self) -> np.ndarray:
        """Unit size of every item, in dataset order."""
        return self.reader.index.unit[self._rows]

    @property
    def sample_ids(self) -> np.ndarray:
        return self.reader.index.sample_id[self._rows]

    def __getitem__(self, i: int) -> dict:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        row = int(self._rows[i])
        ix = self.reader.index
        unit = int(ix.unit[row])
        rec = self.reader.record(unit, int(ix.shard[row]), int(ix.record[row]))
        n = self.reader.meta.n_segments
        mask = None
        if self.loss_segments is not None:
            mask = segment_mask(rec[1:1 + n], self.reader.sequence_template, self.loss_segments, unit)
        item = causal_lm_arrays(rec, n, unit, self.reader.meta.pad_id, mask, self.shift)
        if self._torch is not None:
            item = {k: self._torch.from_numpy(v) for k, v in item.items()}
        return item

    def batch_sampler(self, batch_size: int, shuffle: bool = False, seed: int = 0,
                      drop_last: bool = False) -> "UnitBatchSampler":
        return UnitBatchSampler(self.units, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)


class UnitBatchSampler:
    """Batches of dataset indices, each from a single unit (so items stack).

    Re-iterable and sized, as ``DataLoader(batch_sampler=...)`` expects. With
    ``shuffle`` the order of items within a unit and of the batches changes per
    epoch (``set_epoch``), reproducibly from ``seed``.
    """

    def __init__(self, units: np.ndarray, batch_size: int, shuffle: bool = False, seed: int = 0,
                 drop_last: bool = False):
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.units = np.asarray(units)
        self.batch_size, self.shuffle, self.seed, self.drop_last = batch_size, shuffle, seed, drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list:
        rng = np.random.default_rng([self.seed, self.epoch]) if self.shuffle else None
        batches = []
        for unit in np.unique(self.units).tolist():
            idx = np.nonzero(self.units == unit)[0]
            if rng is not None:
                idx = rng.permutation(idx)
            for start in range(0, len(idx), self.batch_size):
                chunk = idx[start:start + self.batch_size]
                if len(chunk) < self.batch_size and self.drop_last:
                    continue
                batches.append(chunk.tolist())
        if rng is not None:
            batches = [batches[k] for k in rng.permutation(len(batches)).tolist()]
        return batches

    def __iter__(self):
        return iter(self._batches())

    def __len__(self) -> int:
        total = 0
        for unit in np.unique(self.units).tolist():
            n = int((self.units == unit).sum())
            total += n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return total
