"""Read a published output directory: samples by id, units in order, training items.

Pure numpy, so a training job can read shards without Beam installed in its image:
metadata of a local directory is read with plain ``open`` and shards are memory-mapped;
only a remote path (``gs://``, ``s3://``) imports ``apache_beam.io.filesystems``, lazily,
inside the one function that reads bytes.

Random access needs to know where each sample lives: ``sample_index.jsonl`` says it,
parsed once into numpy columns (:mod:`mintdim_beam.reader.sample_index`), so a lookup is one
``searchsorted``.

Records are decoded with :mod:`mintdim_beam.format.shard_format`, the codec the writer uses,
so the reader can never disagree with the build on the layout.

The reader must never hand out tokens that are not what the build wrote. A record has
no checksum of its own, but the directory already says a lot about it: the magic and
pad id (``length_field.json``), the vocabulary size (``manifest.json``), its sample's
token count and empty fields (``sample_index.jsonl``), and its place (records of a
unit are in ascending sample_id, so a row's rank among its unit's ids fixes its shard
and record). Every read checks all of them, with numpy over whole batches when reading
in bulk, and raises :class:`ReaderError` naming the shard, record and sample that
disagree. A token changed to another valid id keeps all of that consistent: it is
found by the sha256 of its shard in ``SHA256SUMS``, which ``verify`` compares for every
file and ``open_output(..., checksums=True)`` for every shard it reads.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
from collections import OrderedDict
from typing import Iterator, Optional, Sequence

import numpy as np

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import read_messages as R

# Storage, index paths and metadata live in `output_files`; their names stay importable
# from here, where callers have always found them.
from mintdim_beam.reader.output_files import Metadata, dataset_path, file_pieces, index_paths, index_pieces, read_files, read_json, read_metadata, stray_index_files
from mintdim_beam.storage.files import is_local, join, list_dir, read_bytes
from mintdim_beam.storage.files import size as file_size
from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format.names import CHECKSUMS, MANIFEST, SAMPLE_INDEX
from mintdim_beam.format.record_checks import RecordBatch, checksum_problem, parse_checksums, record_problem
from mintdim_beam.format.names import SHARD_PATH as _SHARD_PATH
from mintdim_beam.reader.sample_index import PAIR_ROLES, SampleIndex, as_int, parse_sample_index_pieces
from mintdim_beam.reader.samples import Sample, SegmentTokens  # noqa: F401  (importable from here)
from mintdim_beam.reader import chat_view
from mintdim_beam.reader.training import CausalLMDataset
from mintdim_beam.format import names


_log = logging.getLogger(__name__)
_REMOTE_SHARDS_CACHED = 4
_SHARD_FILE = re.compile(r"shard_\d{6}\.bin")
_CHECK_SLOTS = 1 << 22         # slots checked at once when reading in bulk (8-16 MiB)


# --------------------------------------------------------------------------- the reader


class OutputReader:
    """An opened output directory: a map-style dataset of its written samples.

    ``len(reader)`` is the number of written samples and ``reader[i]`` the ``i``-th of
    them in ascending sample_id (``reader[-1]`` the last; a slice gives a list): sample
    ids have gaps where lines were bad or skipped, so ``i`` is a position, and
    ``reader.sample_ids[i]`` the id at that position. ``reader.sample(sample_id)``
    looks a sample up by id. ``reader.iter_unit(size)`` walks a unit's records in shard
    order, ``reader.batches(size)`` gives them as checked arrays, and
    ``reader.causal_lm()`` is the training view.

    Every record is checked as it is read (:func:`record_problem`, plus its place:
    records of a unit are in ascending sample_id), and a disagreement raises
    :class:`ReaderError` naming the shard, the record and the sample. The reader
    pickles without its memory maps, which each process opens on first use, so it can
    be handed to ``DataLoader`` worker processes.

    ``path`` may be a versioned root: the reader then reads the build its ``LATEST``
    names when it opens (``path`` is that build's directory, ``root`` the root and
    ``build_id`` the build; both None for a dataset directory given as such).
    """

    def __init__(self, path: str, mmap: bool = True, index: Optional[SampleIndex] = None,
                 checksums: bool = False, options=None):
        if not is_local(path):   # a wrong endpoint or key: said in seconds, not after retries
            from mintdim_beam.storage.access import check_dataset

            check_dataset(path, options)
        self.path, self.build_id = dataset_path(path)
        self.root = path if self.build_id is not None else None
        if self.build_id is not None:
            _log.info("reading %s (LATEST of %s)", self.path, path)
        self.meta = read_metadata(self.path)
        self._mmap = mmap and is_local(path)
        self._sums = _read_sums(self.meta) if checksums else None
        self._verified: set = set()     # shards whose sha256 was found as SHA256SUMS says
        self._index: Optional[SampleIndex] = None
        self._order: Optional[np.ndarray] = None
        # verify hands in its index and reports these disagreements itself, one by one
        self._unit_counts = _check_shard_counts(self.meta) if index is None else None
        if index is not None:  # an index the caller already parsed (verify does)
            self._set_index(index)
        self._shards: "OrderedDict[str, np.ndarray]" = OrderedDict()
        self._pid = os.getpid()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_shards"] = OrderedDict()     # memory maps are per process, opened again on use
        if "_empty_segments" in state:
            state["_empty_segments"] = {}    # a cache
        return state

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

    @property
    def chat_layout(self) -> Optional["chat_view.ChatLayout"]:
        """A chat output's layout (``chat_view.ChatLayout``); None for any other output."""
        if "_chat" not in self.__dict__:
            self._chat = chat_view.layout_of(self.meta)
        return self._chat

    @property
    def chat(self) -> Optional[dict]:
        """A chat output's ``chat`` entry (max_messages, message_parts, roles, roles_key); None otherwise."""
        layout = self.chat_layout
        return None if layout is None else layout.as_dict()

    def role_codes(self, rows) -> Optional[np.ndarray]:
        """``(len(rows), max_messages)`` role codes (into ``chat["roles"]``, -1 for an
        absent slot) of index rows, from their ``roles``; None for a non-chat output."""
        layout = self.chat_layout
        if layout is None:
            return None
        return chat_view.slot_codes(self.index, self.role_map, rows, layout.max_messages)

    @property
    def role_map(self) -> Optional[np.ndarray]:
        """The ``chat["roles"]`` code of each of ``index.role_names`` (every row checked
        against the layout once); None for a non-chat output."""
        layout = self.chat_layout
        if layout is not None and self._role_map is None:
            self._role_map = chat_view.index_codes(layout, self._index if self._index is not None else self.index,
                                                   self.path)
        return self._role_map

    def json(self, name: str):
        """A summary file of the directory (``stats.json``, ``histogram.json``, ...)."""
        return read_json(join(self.path, name))

    # the index
    @property
    def index(self) -> SampleIndex:
        if self._index is None:
            try:
                self._check_index_files()
                if self._sums is not None:
                    self._check_index_sums()
                index = parse_sample_index_pieces(index_pieces(self.path, SAMPLE_INDEX, self.manifest),
                                                  size_hint=self._index_bytes())
            except FileNotFoundError as exc:
                raise ReaderError("no_index", self.path, why=exc.filename or str(exc)) from None
            except ReaderError as exc:
                if exc.path is not None:
                    raise
                # a bad row: the parser knows its line, not the dataset's path
                raise ReaderError(**dict(exc.fields, path=self.path)) from None
            self._set_index(index)
            try:
                self._check_index_order()
                self._check_index_counts()
                self._check_index_places()
                self.role_codes(np.zeros(0, np.int64))      # a chat output: every row's roles
            except ReaderError:
                self._index = None      # every later read is refused the same way
                raise
        return self._index

    def _check_index_files(self) -> None:
        """No index file beside the ones the layout names (a part copied to another
        number, a single file beside its parts): the reader would not read it, so the
        dataset is not the one its manifest describes."""
        stray = stray_index_files(self.path, SAMPLE_INDEX, self.manifest)
        if stray:
            named = index_paths("", SAMPLE_INDEX, self.manifest)
            named = [p.replace(os.sep, "/") for p in named]
            listed = named[0] if len(named) == 1 else f"{named[0]} .. {named[-1]}"
            raise ReaderError("index_stray", self.path, file=stray[0], index=SAMPLE_INDEX, named=listed)

    def _check_index_order(self) -> None:
        """Rows in ascending sample_id, as the build writes them (DESIGN.md §4): two
        lines swapped or moved are refused at load, not read in the order they claim."""
        if self._order is None:
            return
        ids, lines = self._index.sample_id, self._index.row_line
        k = int(np.argmax(ids[1:] <= ids[:-1]))
        raise ReaderError("index_order", self.path, file=SAMPLE_INDEX, line=int(lines[k + 1]),
                          sample_id=int(ids[k + 1]), previous=int(ids[k]))

    def _check_index_places(self) -> None:
        """Each row's ``shard_path`` and ``shard_record`` are the place its rank among its
        unit's sample ids gives (records of a unit are in ascending sample_id): checked
        for every row at load, with numpy, so a row pointing at another shard of its
        unit is refused before any read, not only when that row is read."""
        wrong = np.flatnonzero(self._index.positions(self.meta.samples_per_shard) != self._rank)
        if len(wrong):
            self._check_place(wrong[:1])

    def _check_index_counts(self) -> None:
        """The index's rows per unit against the samples ``stats.json`` counts: rows
        emptied or deleted would otherwise leave their records unreachable, silently."""
        if self._unit_counts is None:
            return
        for unit, want in self._unit_counts.items():
            got = self._unit_samples.get(unit, 0)
            if got != want:
                raise ReaderError("index_rows", self.path, got=got, unit=unit, want=want)
        extra = sorted(set(self._unit_samples) - set(self._unit_counts))
        if extra:
            raise ReaderError("index_extra_unit", self.path, unit=extra[0], sizes=list(self.unit_sizes))

    def _check_index_sums(self) -> None:
        """Opened with checksums: the index says which record is which sample and where
        it came from, so its files are compared too (a few MB at a time; names as
        SHA256SUMS writes them: relative, with "/")."""
        fulls = index_paths(self.path, SAMPLE_INDEX, self.manifest)
        fetched = read_files(fulls) if len(fulls) > 1 and not is_local(self.path) else None
        for full, rel in zip(fulls, index_paths("", SAMPLE_INDEX, self.manifest)):
            rel = rel.replace(os.sep, "/")
            digest = hashlib.sha256()
            if fetched is not None:   # remote parts: fetched ahead, one request each
                data = next(fetched)[1]
                if data is None:
                    raise FileNotFoundError(errno.ENOENT, "Not found", full)
                digest.update(data)
            else:
                for piece in file_pieces(full, dataset=self.path):
                    digest.update(piece)
            if self._sums.get(rel) != digest.hexdigest():
                problem = checksum_problem(rel, read_bytes(full), self._sums)   # words it
                if problem is not None:
                    raise ReaderError(problem[0], self.path, file=rel, **problem[1])

    def _index_bytes(self) -> Optional[int]:
        """Size of the local index files (sizes the parsed columns up front)."""
        paths = index_paths(self.path, SAMPLE_INDEX, self.manifest)
        try:
            return sum(os.path.getsize(p) for p in paths) if all(is_local(p) for p in paths) else None
        except OSError:
            return None

    def _set_index(self, index: SampleIndex) -> None:
        """Keep ``index`` with what checking its rows needs: the ascending-id order, and
        each row's rank among its unit's samples (where its record must be)."""
        order = None if index.sorted else np.argsort(index.sample_id, kind="stable")
        ids = index.sample_id if order is None else index.sample_id[order]
        same = np.nonzero(ids[1:] == ids[:-1])[0] if len(ids) > 1 else np.zeros(0, np.int64)
        if len(same):
            rows = (order[same[0]], order[same[0] + 1]) if order is not None else (same[0], same[0] + 1)
            raise ReaderError("index_duplicate", self.path, first=int(index.row_line[rows[0]]),
                              second=int(index.row_line[rows[1]]), sample_id=int(ids[same[0]]))
        by_unit = np.lexsort((index.sample_id, index.unit))
        sizes, first, counts = np.unique(index.unit[by_unit], return_index=True, return_counts=True)
        rank = np.empty(len(index), np.int64)
        rank[by_unit] = np.arange(len(index), dtype=np.int64) - np.repeat(first, counts)
        self._order, self._rank = order, rank
        self._rows_by_id = np.arange(len(index), dtype=np.int64) if order is None else order
        self._ids = ids
        self._unit_samples = dict(zip(sizes.tolist(), counts.tolist()))
        self._empty_segments = {}
        self._role_map = None
        self._index = index

    def __len__(self) -> int:
        return len(self.index)

    @property
    def sample_ids(self) -> np.ndarray:
        """Every written sample id, ascending (``sample_ids[i]`` is the id of ``reader[i]``)."""
        self.index     # loads it on first use
        return self._ids

    @property
    def rows_by_id(self) -> np.ndarray:
        """Index rows in ascending sample_id (``reader[i]`` is row ``rows_by_id[i]``)."""
        self.index     # loads it on first use
        return self._rows_by_id

    def row_of(self, sample_id: int) -> int:
        """Row of ``sample_id`` in the index; KeyError for a sample with no shard record."""
        sample_id = as_int(sample_id, "sample_id")
        ids = self.sample_ids      # loads the index (and its sort order) on first use
        k = int(np.searchsorted(ids, sample_id))
        if k >= len(ids) or ids[k] != sample_id:
            raise KeyError(f"sample {sample_id} has no record in {self.path} (skipped, bad, or out of range)")
        return k if self._order is None else int(self._order[k])

    # shards
    def shard_records(self, unit: int, shard: int) -> np.ndarray:
        """All records of one shard as an ``(records, slots)`` array (memory-mapped locally),
        unchecked: :meth:`batches` gives them checked."""
        if self._pid != os.getpid():     # a forked worker: its parent's maps stay with the parent
            self._shards, self._pid = OrderedDict(), os.getpid()
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
            raise ReaderError("shard_missing", self.path, shard=rel) from None
        except OSError as exc:   # a link loop, a unit directory replaced by a file, ...
            raise ReaderError("unreadable", self.path, shard=rel, why=exc.strerror or str(exc)) from None
        if is_local(full) and not os.path.isfile(full):   # a directory in its place: no size to trust
            raise ReaderError("shard_not_file", self.path, shard=rel)
        if size % record_bytes:
            raise ReaderError("shard_truncated", self.path, shard=rel, size=size, record_bytes=record_bytes)
        if size == 0:
            arr = np.zeros((0, slots), self.meta.dtype)
        elif self._mmap:
            # a plain ndarray view of the map: the memmap subclass's hooks would run on
            # every slice of every record read
            arr = np.memmap(full, dtype=self.meta.dtype, mode="r").reshape(-1, slots).view(np.ndarray)
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

    def _indexed_shard(self, unit: int, shard: int) -> np.ndarray:
        """A shard's records, after checking it holds as many as the index places there
        (and, opened with ``checksums``, its sha256, once per shard)."""
        recs = self.shard_records(unit, shard)
        rel = self.meta.shard_path(unit, shard)
        if self._sums is not None and rel not in self._verified:
            problem = checksum_problem(rel, np.ascontiguousarray(recs), self._sums)
            if problem is not None:
                raise ReaderError(problem[0], self.path, shard=rel, **problem[1])
            self._verified.add(rel)
        sps = self.meta.samples_per_shard
        want = min(sps, self._unit_samples.get(unit, 0) - shard * sps)
        if recs.shape[0] != want:
            raise ReaderError("shard_records", self.path, shard=rel, got=recs.shape[0], want=max(want, 0),
                              samples=self._unit_samples.get(unit, 0), unit=unit, sps=sps)
        return recs

    def record(self, unit: int, shard: int, record: int) -> np.ndarray:
        """One record's slots, after the checks that need no index row (magic, lengths
        within the unit, token ids, pad tail)."""
        recs = self.shard_records(unit, shard)
        rel = self.meta.shard_path(unit, shard)
        if not 0 <= record < recs.shape[0]:
            raise ReaderError("record_range", self.path, shard=rel, record=record, count=recs.shape[0])
        rec = recs[record]
        found = record_problem(self.meta, unit, rec[None, :])
        if found is not None:
            raise ReaderError("record", self.path, shard=rel, record=record, detail=found[1])
        return rec

    def _empty(self, rows: np.ndarray) -> Optional[np.ndarray]:
        """``(len(rows), n_segments)``: the segments of each row's ``empty_fields``."""
        ix = self.index
        if not ix.empty_fields or (len(rows) == 1 and int(rows[0]) not in ix.empty_fields):
            return None
        out = np.zeros((len(rows), self.meta.n_segments), bool)
        for j, row in enumerate(rows.tolist()):
            names = ix.empty_fields.get(row)
            if names:
                key = tuple(names)
                mask = self._empty_segments.get(key)
                if mask is None:
                    mask = self._empty_segments[key] = np.isin(np.asarray(self.sequence_template), list(names))
                out[j] = mask
        return out

    def _raise_record(self, row: int, problem: B.Text) -> None:
        ix = self.index
        raise ReaderError("record", self.path, shard=self.meta.shard_path(int(ix.unit[row]), int(ix.shard[row])),
                          record=int(ix.record[row]), sample_id=int(ix.sample_id[row]), line=int(ix.row_line[row]),
                          detail=problem)

    def _check_place(self, rows: np.ndarray) -> None:
        """Each row's record is where its rank among its unit's sample ids puts it."""
        ix = self.index
        sps = self.meta.samples_per_shard
        place = ix.shard[rows].astype(np.int64) * sps + ix.record[rows]
        wrong = np.nonzero(place != self._rank[rows])[0]
        if len(wrong):
            row = int(rows[wrong[0]])
            unit, rank = int(ix.unit[row]), int(self._rank[row])
            shard, record = divmod(rank, sps)
            self._raise_record(row, R.read_text("misplaced", unit=unit, sample=int(ix.sample_id[row]), rank=rank,
                                                at=self.meta.shard_path(unit, shard), at_record=record))

    def record_at_row(self, row: int) -> np.ndarray:
        """The record of index row ``row``, checked against the row (token count, empty
        fields, place in the unit) and the manifest (magic, vocabulary, pad id)."""
        ix = self.index
        rows = np.asarray([row], np.int64)
        unit, shard, rec_no = int(ix.unit[row]), int(ix.shard[row]), int(ix.record[row])
        if shard * self.meta.samples_per_shard + rec_no != int(self._rank[row]):
            self._check_place(rows)
        recs = self._indexed_shard(unit, shard)
        rec = recs[rec_no]
        found = record_problem(self.meta, unit, rec[None, :], ix.token_count[rows], self._empty(rows))
        if found is not None:
            self._raise_record(row, found[1])
        return rec

    # samples
    def _sample(self, row: int, rec: np.ndarray) -> Sample:
        ix = self.index
        if self.chat_layout is not None:     # the roles must cover every message the header holds
            rows = np.asarray([row], np.int64)
            chat_view.raise_unlisted(self, rows, rec[None, :], self.role_codes(rows))
        unit, shard = int(ix.unit[row]), int(ix.shard[row])
        return Sample(
            sample_id=int(ix.sample_id[row]), unit_size=unit, shard_path=self.meta.shard_path(unit, shard),
            shard_record=int(ix.record[row]), source_file=ix.files[int(ix.file[row])],
            source_line=int(ix.line[row]), hash=ix.hash(row), empty_fields=ix.empty_fields.get(row, ()),
            record=rec, sequence_template=self.sequence_template,
            roles=ix.roles(row) if self.chat_layout is not None else None,
            pair_id=None if ix.pair_id is None or ix.pair_id[row] < 0 else int(ix.pair_id[row]),
            pair_role=None if ix.pair_role is None or ix.pair_role[row] < 0 else PAIR_ROLES[int(ix.pair_role[row])],
        )

    def sample_at_row(self, row: int) -> Sample:
        """The sample of one index row (rows are in sample_index.jsonl order), checked."""
        return self._sample(row, self.record_at_row(row))

    def sample(self, sample_id: int) -> Sample:
        """The sample written for ``sample_id`` (an integer: TypeError otherwise)."""
        return self.sample_at_row(self.row_of(sample_id))

    def __getitem__(self, i):
        """``reader[i]``: the ``i``-th written sample in ascending sample_id; a slice
        gives a list of them."""
        if isinstance(i, slice):
            return [self.sample_at_row(int(r)) for r in self.rows_by_id[i].tolist()]
        i = as_int(i, "index")
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample position {i} out of range: {self.path} holds {n} samples "
                             f"(use .sample(sample_id) to look a sample up by id)")
        return self.sample_at_row(int(self.rows_by_id[i]))

    def sample_at(self, shard_path: str, record: int) -> Sample:
        """The sample stored at ``record`` of ``shard_path`` (relative to the directory).

        A record that no index row points to still decodes (after the checks that need
        no row), with ``sample_id`` None.
        """
        m = _SHARD_PATH.match(shard_path.replace(os.sep, "/"))
        if m is None:
            raise ReaderError("not_shard_path", file=shard_path)
        unit, shard = int(m.group(1)), int(m.group(2))
        record = as_int(record, "record")
        ix = self.index
        hits = np.nonzero((ix.unit == unit) & (ix.shard == shard) & (ix.record == record))[0]
        if len(hits):
            return self.sample_at_row(int(hits[0]))
        rec = self.record(unit, shard, record)
        return Sample(None, unit, self.meta.shard_path(unit, shard), record, None, None, None, (), rec,
                      self.sequence_template)

    def unit_rows(self, unit: int) -> np.ndarray:
        """Index rows of ``unit`` in ascending sample_id (which is record order)."""
        ix = self.index
        rows = np.nonzero(ix.unit == unit)[0]
        return rows[np.argsort(self._rank[rows], kind="stable")]

    def batches(self, unit: int, max_records: Optional[int] = None) -> Iterator[RecordBatch]:
        """Every record of ``unit`` in shard order, as checked :class:`RecordBatch` es of
        at most ``max_records`` records (default: about 4M slots) from one shard each.

        The fast path for bulk readers (exports): each batch is checked with numpy in
        one go, against the index rows of its samples and the manifest.
        """
        if unit not in self.unit_sizes:
            raise ReaderError("no_unit", self.path, unit=unit, units=list(self.unit_sizes))
        rows = self.unit_rows(unit)
        self._check_place(rows)
        ix = self.index
        sps = self.meta.samples_per_shard
        step = max_records or max(1, _CHECK_SLOTS // self.meta.slots(unit))
        for shard in range(-(-len(rows) // sps)):
            recs = self._indexed_shard(unit, shard)
            for start in range(0, recs.shape[0], step):
                mine = rows[shard * sps + start:shard * sps + start + min(step, recs.shape[0] - start)]
                chunk = recs[start:start + len(mine)]
                found = record_problem(self.meta, unit, chunk, ix.token_count[mine], self._empty(mine))
                if found is not None:
                    self._raise_record(int(mine[found[0]]), found[1])
                yield RecordBatch(unit, self.meta.shard_path(unit, shard), start, ix.sample_id[mine], chunk,
                                  self.meta.n_segments)
        if self.shard_count(unit) > -(-len(rows) // sps):
            extra = self.meta.shard_path(unit, -(-len(rows) // sps))
            raise ReaderError("extra_shard", self.path, shard=extra, unit=unit, count=len(rows))

    def iter_unit(self, unit: int) -> Iterator[Sample]:
        """Every sample of ``unit`` in shard and record order (checked a batch at a time)."""
        rows = self.unit_rows(unit) if unit in self.unit_sizes else None
        done = 0
        for batch in self.batches(unit):
            for j in range(len(batch.sample_ids)):
                yield self._sample(int(rows[done + j]), batch.records[j])
            done += len(batch.sample_ids)

    def unit_arrays(self, unit: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(sample_ids, records)`` of each :meth:`batches` batch of ``unit``."""
        for batch in self.batches(unit):
            yield batch.sample_ids, batch.records

    def __iter__(self) -> Iterator[Sample]:
        """Every written sample in ascending sample_id."""
        for row in self.rows_by_id.tolist():
            yield self.sample_at_row(row)

    def causal_lm(self, units: Optional[Sequence[int]] = None, loss_segments: Optional[Sequence[str]] = None,
                  shift: bool = True, return_tensors: Optional[str] = None,
                  loss_roles: Optional[Sequence[str]] = None,
                  loss_parts: Optional[Sequence[str]] = None) -> "CausalLMDataset":
        """The training view (:class:`~mintdim_beam.reader.training.CausalLMDataset`)."""
        return CausalLMDataset(self, units=units, loss_segments=loss_segments, shift=shift,
                               return_tensors=return_tensors, loss_roles=loss_roles, loss_parts=loss_parts)

    def preference_pairs(self, units: Optional[Sequence[int]] = None, shift: bool = False,
                         return_tensors: Optional[str] = None):
        """A pair output's DPO view (:class:`~mintdim_beam.reader.preference.PreferencePairs`)."""
        from mintdim_beam.reader.preference import PreferencePairs

        return PreferencePairs(self, units=units, shift=shift, return_tensors=return_tensors)


def open_output(path: str, mmap: bool = True, checksums: bool = False, options=None) -> OutputReader:
    """Open an output directory (local or any Beam filesystem path), or the build that a
    versioned root's ``LATEST`` names (then ``reader.build_id`` says which).

    ``checksums=True`` also compares each shard, in full, with the sha256 that
    ``SHA256SUMS`` records before handing out any of its records (one extra read of
    every shard used): what an export or a copy between stores wants, where the record
    checks alone would take an in-vocabulary token changed on disk for a real one.

    ``options``: Beam's file-system options for a remote path (flags such as
    ``["--s3_endpoint_url=http://127.0.0.1:9000"]``, a ``PipelineOptions`` or a dict),
    given to ``FileSystems`` before anything is read. A store that cannot be reached
    with them raises ``StorageAccessError`` in seconds (``storage_access``).
    """
    return OutputReader(path, mmap=mmap, checksums=checksums, options=options)


STATS = names.STATS


def _check_shard_counts(meta: Metadata) -> dict:
    """``{unit: samples}`` as ``stats.json`` counts them, after checking, with one listing
    per unit, that each unit holds exactly the ceil(samples / samples_per_shard) shards
    those samples fill (a shard deleted, added or duplicated is found at open, not when
    a read reaches it) and no failure marker."""
    try:
        stats = read_json(join(meta.path, STATS))
    except FileNotFoundError:
        raise ReaderError("no_stats", meta.path) from None
    units = stats.get("units") if isinstance(stats, dict) else None
    if not isinstance(units, dict):
        raise ReaderError("stats_units", meta.path)
    sps = meta.samples_per_shard
    counts = {}
    files: dict = {}    # (st_dev, st_ino) -> shard path, on a local disk
    for unit in meta.unit_sizes:
        info = units.get(str(unit))
        samples = info.get("samples") if isinstance(info, dict) else None
        if not isinstance(samples, int) or isinstance(samples, bool) or samples < 0:
            raise ReaderError("stats_samples", meta.path, unit=unit, got=repr(samples))
        want = -(-samples // sps)
        udir = join(meta.path, f"unit_{unit}")
        if is_local(udir) and os.path.lexists(udir) and not os.path.isdir(udir):
            raise ReaderError("unit_not_directory", meta.path, file=f"unit_{unit}")
        entries = list_dir(udir)
        if names.FAILED_MARKER in entries:
            raise ReaderError("unit_failed", meta.path, file=f"unit_{unit}/UNIT_BUILD_FAILED.md")
        shards = sorted(n for n in entries if _SHARD_FILE.fullmatch(n))
        expected = [f"shard_{k:06d}.bin" for k in range(want)]
        if shards != expected or info.get("shards", want) != want:
            raise ReaderError("shard_files" if want else "shard_files_none", meta.path, file=f"unit_{unit}",
                              count=len(shards), samples=samples, sps=sps, want=want, last=f"shard_{want - 1:06d}.bin")
        if is_local(udir):
            for rel, other in same_files(meta.path, unit, shards, files):
                raise ReaderError("shard_same_file", meta.path, shard=rel, other=other)
        counts[unit] = samples
    return counts


def same_files(path: str, unit: int, shards: list, files: dict) -> Iterator[tuple[str, str]]:
    """``(shard, other shard)`` for each shard of a local dataset that is the same file
    as one seen before (``files``: ``(st_dev, st_ino) -> shard path``, kept across
    units). A shard replaced by a link to another (or a hard link) would hand out the
    other's records, which the record checks cannot tell apart when their lengths
    happen to agree. One ``stat`` a shard; on an object store there are no links, and
    a shard copied over another is found by its sha256 (``SHA256SUMS``)."""
    for name in shards:
        rel = f"unit_{unit}/{name}"
        try:
            st = os.stat(join(path, f"unit_{unit}", name))
        except OSError:
            continue            # a dangling link, a loop: refused when the shard is read
        other = files.setdefault((st.st_dev, st.st_ino), rel)
        if other != rel:
            if os.path.islink(join(path, *other.split("/"))):
                rel, other = other, rel         # name the link, not the file it points to
            yield rel, other


def _read_sums(meta: Metadata) -> dict:
    """``SHA256SUMS`` as ``{path: sha256}``, after checking it against the manifest."""
    info = meta.manifest.get("checksums")
    if not isinstance(info, dict) or info.get("file") != CHECKSUMS:
        raise ReaderError("no_checksums", meta.path)
    try:
        data = read_bytes(join(meta.path, CHECKSUMS))
    except FileNotFoundError:
        raise ReaderError("sums_missing", meta.path) from None
    problem = checksum_problem(CHECKSUMS, data, {CHECKSUMS: info.get("sha256")}, recorder=MANIFEST)
    if problem is not None:
        raise ReaderError(problem[0], meta.path, file=CHECKSUMS, **problem[1])
    return parse_checksums(data)[0]
