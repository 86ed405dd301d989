"""Where a published output's files are, how to read their bytes, and what its metadata says.

A reader may be given a versioned root (``ROOT/LATEST`` naming ``ROOT/<build-id>/``)
where a dataset is expected: :func:`dataset_path` finds the build ``LATEST`` names.

Separate from :mod:`mintdim_beam.reader.dataset` because ``verify``, ``report``, ``inspect``,
``plan`` and the unit planner need these and not the sample reader: bytes through the
storage layer (:mod:`mintdim_beam.storage.files`, the build's own, which loads Beam
only for a remote path), the paths of an index file (one file, or its parts when
built with ``index_layout: parts``), and ``manifest.json`` and ``length_field.json``
loaded and cross-checked into :class:`Metadata`. Pure numpy otherwise.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import posixpath
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import read_messages as R
from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format.names import MANIFEST
from mintdim_beam.storage.files import SEQUENTIAL, exists, is_local, join, list_dir, open_local, open_read, read_bytes, size
from mintdim_beam.format.shard_format import record_slots
from mintdim_beam.format import names
from mintdim_beam.format.names import FAILED_MARKER, LENGTH_FIELD, IndexLayout, part_name


_DTYPES = {"uint16": (np.dtype("<u2"), 0xFFFF), "uint32": (np.dtype("<u4"), 0xFFFFFFFF)}


def read_json(path: str):
    try:
        return json.loads(read_bytes(path))
    except FileNotFoundError:
        raise ReaderError("file_not_found", file=path) from None
    except ValueError as exc:
        raise ReaderError("not_json", file=path, why=str(exc)) from None
    except OSError as exc:   # a directory in its place, a link loop, ...
        raise ReaderError("unreadable", file=path, why=exc.strerror or str(exc)) from None


#: What :func:`iter_jsonl` and :func:`iter_index` give for a blank line: not a row, and
#: not one the build writes, so ``verify`` lists it (readers skip it as any non-row).
BLANK_LINE = "<blank line>"


def iter_jsonl(path: str) -> Iterator[tuple[int, object]]:
    """``(line number, parsed row)`` of a JSONL index file; a bad line yields ``(n, None)``,
    a blank one ``(n, BLANK_LINE)``."""
    yield from _jsonl_rows(read_bytes(path), 1)


def _jsonl_rows(data: bytes, first_line: int) -> Iterator[tuple[int, object]]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()         # after the newline that ends the last line: no line
    for n, line in enumerate(lines, start=first_line):
        if not line.strip():
            yield n, BLANK_LINE
            continue
        try:
            yield n, json.loads(line)
        except ValueError:
            yield n, None


def dataset_path(path: str) -> tuple[str, Optional[str]]:
    """``(the dataset directory to read, the build id)`` for ``path``: the directory
    itself (build id None) when it holds ``manifest.json`` or no ``LATEST``; for a
    versioned root, the build its ``LATEST`` names, which must be a published dataset.

    ``LATEST`` is read once, so a reader stays on the build it found even when a
    newer build moves ``LATEST`` meanwhile.
    """
    if exists(join(path, MANIFEST)):
        return path, None
    latest = join(path, names.LATEST)
    try:
        data = read_bytes(latest)
    except FileNotFoundError:
        return path, None
    except OSError as exc:     # a directory where LATEST should be, ...
        raise unreadable(path, latest, exc) from None
    build_id = names.latest_build_id(data)
    if build_id is None or not names.is_build_id(build_id):
        raise ReaderError("latest_not_id", path, file=names.LATEST, got=build_id or "")
    if not exists(join(path, build_id, MANIFEST)):
        raise ReaderError("latest_unpublished", path, file=names.LATEST, build_id=build_id)
    return join(path, build_id), build_id


# --------------------------------------------------------------------------- index files


def index_paths(path: str, name: str, manifest: Optional[dict] = None) -> list:
    """Where the bytes of index ``name`` (``sample_index.jsonl``, ...) of the output
    ``path`` are, in order.

    One file ``DIR/name``; or, when the manifest says ``"indexes": {"layout": "parts"}``
    (built with ``index_layout: parts``), its parts ``DIR/<stem>/part-00000.jsonl``, ...
    in block order, as many as the manifest counts, whose concatenation is byte for byte
    the single file. The reader, ``verify``, ``inspect``, ``plan`` and ``report`` read
    index files through this, :func:`read_index` and :func:`iter_index` only.
    ``manifest``: the parsed ``manifest.json`` when the caller has it.
    """
    if manifest is None:
        try:
            manifest = read_json(join(path, MANIFEST)) if exists(join(path, MANIFEST)) else {}
        except ReaderError:
            manifest = {}
    found = manifest.get("indexes") if isinstance(manifest, dict) else None
    if isinstance(found, dict) and found.get("layout") == IndexLayout.PARTS:
        count = (found.get("parts") or {}).get(name)
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            return [join(path, *part_name(name, k).split("/")) for k in range(count)]
    return [join(path, name)]


def stray_index_files(path: str, name: str, manifest: Optional[dict] = None) -> list:
    """Files of index ``name`` that its layout does not name, relative to ``path``,
    sorted: with parts, a part beyond the manifest's count (a copy such as
    ``part-99999.jsonl``, a leftover) and a single file beside the folder; with one
    file, a parts folder beside it. Nothing reads them, so they would pass unseen.

    Locally one listing and one stat; on an object store one listing of the parts
    folder (what reading the parts costs besides, one request each, is unchanged) and
    nothing for a single-file index, where ``verify`` and ``SHA256SUMS`` are the guard.
    """
    paths = index_paths(path, name, manifest)
    stem = name.rsplit(".", 1)[0]
    single, folder = join(path, name), join(path, stem)
    base = len(join(path, ""))
    if paths == [single]:
        if is_local(path) and os.path.isdir(folder):
            return [f"{stem}/{n}" for n in sorted(os.listdir(folder))] or [stem]
        return []
    named = set(paths)
    if is_local(path):
        stray = [f"{stem}/{n}" for n in list_dir(folder) if join(folder, n) not in named]
        if os.path.lexists(single):
            stray.append(name)
        return sorted(stray)
    from mintdim_beam.storage import files as storage

    listed = storage.files_and_sizes(folder)
    return sorted(p[base:] for p in listed if p not in named)


def index_sizes(path: str, name: str, manifest: Optional[dict] = None) -> dict:
    """``{file: size, or None when it is absent}`` of index ``name``'s files
    (:func:`index_paths`, in order). On an object store the parts come from one
    listing of their folder, not one request a part."""
    paths = index_paths(path, name, manifest)
    if len(paths) == 1 or all(is_local(p) for p in paths):
        found = {}
        for p in paths:
            if is_local(p):
                found[p] = os.path.getsize(p) if os.path.isfile(p) else None
            else:
                found[p] = size(p) if exists(p) else None
        return found
    from mintdim_beam.storage import files as storage

    listed = storage.files_and_sizes(posixpath.dirname(paths[0]))
    return {p: listed.get(p) for p in paths}


#: Parts of an index fetched ahead of the one being read, on an object store: each is
#: one request whose latency, not its bytes, is the cost.
PREFETCH = 8


def read_files(paths: list, dataset: Optional[str] = None) -> Iterator[tuple[str, Optional[bytes]]]:
    """``(path, bytes, or None when it is absent)`` of each file, in order. Remote files
    are fetched ``PREFETCH`` ahead on threads, one request each on ``s3://``
    (``files.read_bytes``); local ones are read as they come. A local file that is
    there but cannot be read is a `ReaderError` naming it (relative to ``dataset``
    when given)."""
    paths = list(paths)
    if len(paths) <= 1 or all(is_local(p) for p in paths):
        for p in paths:
            try:
                data = read_bytes(p)
            except FileNotFoundError:
                data = None
            except OSError as exc:
                raise unreadable(dataset, p, exc) from None
            yield p, data
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    def fetch(p):
        try:
            return read_bytes(p)
        except FileNotFoundError:
            return None

    ahead = iter(paths)
    with ThreadPoolExecutor(max_workers=min(PREFETCH, len(paths)), thread_name_prefix="read-files") as pool:
        pending = deque((p, pool.submit(fetch, p)) for p in itertools.islice(ahead, PREFETCH))
        while pending:
            p, fetched = pending.popleft()
            following = next(ahead, None)
            if following is not None:
                pending.append((following, pool.submit(fetch, following)))
            yield p, fetched.result()


def unreadable(dataset: Optional[str], full: str, exc: OSError) -> ReaderError:
    """A file that is there in some form but cannot be read: its folder is a file, a
    directory stands in its place, a link loops, ... Named relative to ``dataset``
    (when known), with the system's words."""
    base = join(dataset, "") if dataset is not None else None
    if base is not None and full.startswith(base):
        return ReaderError("unreadable", dataset, file=full[len(base):].replace(os.sep, "/"),
                           why=exc.strerror or str(exc))
    return ReaderError("unreadable", file=full, why=exc.strerror or str(exc))


def _index_parts(path: str, name: str, manifest: Optional[dict]) -> Iterator[bytes]:
    """The bytes of each of an index's files in order (FileNotFoundError names a
    missing one, `ReaderError` one that cannot be read)."""
    for part, data in read_files(index_paths(path, name, manifest), path):
        if data is None:
            raise FileNotFoundError(errno.ENOENT, "Not found", part)
        yield data


def read_index(path: str, name: str, manifest: Optional[dict] = None) -> bytes:
    """The bytes of an index file, its parts concatenated (FileNotFoundError names a
    missing file or part)."""
    return b"".join(_index_parts(path, name, manifest))


def index_pieces(path: str, name: str, manifest: Optional[dict] = None) -> Iterator[bytes]:
    """The bytes of an index file (its parts in order) a few MB at a time, so that a
    parser never holds the whole text (FileNotFoundError names a missing file or part,
    `ReaderError` one that cannot be read). Remote parts are fetched ahead, whole (each
    is one block's rows)."""
    paths = index_paths(path, name, manifest)
    if len(paths) > 1 and not all(is_local(p) for p in paths):
        yield from _index_parts(path, name, manifest)
        return
    for part in paths:
        yield from file_pieces(part, dataset=path)


def file_pieces(path: str, size: int = 8 << 20, dataset: Optional[str] = None) -> Iterator[bytes]:
    """A file's bytes, ``size`` at a time (through the storage layer).
    A local file that is there but cannot be read (FileNotFoundError aside) is a
    `ReaderError` naming it, relative to ``dataset`` when given."""
    if is_local(path):
        try:
            f = open_local(path)
        except FileNotFoundError:
            raise
        except OSError as exc:    # its folder is a file, a directory in its place, ...
            raise unreadable(dataset, path, exc) from None
    else:
        f = open_read(path, readahead=SEQUENTIAL)
    with f:
        while True:
            try:
                piece = f.read(size)
            except OSError as exc:
                raise unreadable(dataset, path, exc) from None
            if not piece:
                return
            yield piece


def iter_index(path: str, name: str, manifest: Optional[dict] = None) -> Iterator[tuple[int, object]]:
    """``(line number, parsed row)`` of every line of an index, as :func:`iter_jsonl`;
    across parts, lines are numbered as in their concatenation. An absent index (or
    part) has no rows: ``verify`` reports it as missing on its own."""
    first = 1
    for _, data in read_files(index_paths(path, name, manifest), path):
        if data is None:
            continue
        yield from _jsonl_rows(data, first)
        first += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


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
        return names.shard_path(unit, shard)


def _section(manifest: dict, key: str, problems: list) -> dict:
    """``manifest[key]``, an object (``{}`` when absent); anything else is a problem,
    which used to surface as an AttributeError or TypeError deep in a check."""
    value = manifest.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(R.read_text("section", key=key, got=repr(value)))
        return {}
    return value


#: The marker a failed build leaves (in a unit directory, or beside the outputs).


def read_metadata(path: str) -> Metadata:
    """Load and cross-check ``manifest.json`` and ``length_field.json``.

    The manifest is written last, so its absence means the build never published; a
    ``UNIT_BUILD_FAILED.md`` marker says the build failed.
    """
    manifest_path = join(path, MANIFEST)
    if not exists(manifest_path):
        failed = [u for u in list_dir(path) if exists(join(path, u, FAILED_MARKER))]
        if failed:
            raise ReaderError("no_manifest_failed", path, unit=failed[0])
        raise ReaderError("no_manifest", path)
    if exists(join(path, FAILED_MARKER)):
        # A failure marker is written when a build fails and never published over, so
        # beside a manifest it means this directory is not one finished build.
        raise ReaderError("failure_marker", path)
    manifest = read_json(manifest_path)
    lf = read_json(join(path, LENGTH_FIELD))
    if not isinstance(manifest, dict) or not isinstance(lf, dict):
        raise ReaderError("not_objects", path)
    dtype_name = lf.get("token_dtype")
    if dtype_name not in _DTYPES:
        raise ReaderError("token_dtype", file=join(path, LENGTH_FIELD), got=repr(dtype_name))
    dtype, magic = _DTYPES[dtype_name]
    problems = []
    if lf.get("magic") != magic:
        problems.append(R.read_text("lf_magic", got=repr(lf.get("magic")), dtype=dtype_name, want=magic))
    template = lf.get("sequence_template")
    if not isinstance(template, list) or not template or not all(isinstance(s, str) for s in template):
        problems.append(R.read_text("lf_template"))
    elif manifest.get("sequence_template") != template:
        problems.append(R.read_text("template_differs"))
    storage = _section(manifest, "token_storage", problems)
    if storage.get("dtype") != dtype_name or storage.get("magic") != magic:
        problems.append(R.read_text("storage_differs", storage=storage, dtype=dtype_name, magic=magic))
    tokenizer = _section(manifest, "tokenizer", problems)
    for key, least in (("vocab_size", 1), ("unk_id", 0)):
        value = tokenizer.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
            problems.append(R.read_text("tokenizer_int", key=key, least=least, got=repr(value)))
    if "unk_token_id" in lf and (lf["unk_token_id"] is not None or tokenizer.get("unk_id") is not None):
        # Written (null) only for a tokenizer that cannot emit UNK (DESIGN.md §8).
        problems.append(R.read_text("unk_id", lf=repr(lf["unk_token_id"]), manifest=repr(tokenizer.get("unk_id"))))
    pad_id = lf.get("pad_token_id")
    if not isinstance(pad_id, int) or tokenizer.get("pad_id", pad_id) != pad_id:
        problems.append(R.read_text("pad_id", lf=repr(pad_id), manifest=repr(tokenizer.get("pad_id"))))
    sizes = _section(manifest, "units", problems).get("sizes")
    if not isinstance(sizes, list) or not sizes or not all(isinstance(s, int) and s > 0 for s in sizes) \
            or sizes != sorted(set(sizes)):
        problems.append(R.read_text("sizes", got=repr(sizes)))
    elif max(sizes) > np.iinfo(dtype).max:
        # Header lengths of such a unit do not fit the slots: a dataset written so has
        # wrapped lengths (DESIGN.md §5 widens the slots instead).
        problems.append(R.read_text("sizes_wrap", size=max(sizes), dtype=dtype_name, top=int(np.iinfo(dtype).max)))
    sps = _section(manifest, "output", problems).get("samples_per_shard")
    if not isinstance(sps, int) or sps <= 0:
        problems.append(R.read_text("samples_per_shard", got=repr(sps)))
    if problems:
        raise ReaderError("metadata", path, detail=B.joined(problems))
    return Metadata(
        path=path, manifest=manifest, length_field=lf, sequence_template=tuple(template),
        dtype=dtype, magic=magic, pad_id=pad_id, unk_id=tokenizer.get("unk_id"),
        vocab_size=tokenizer.get("vocab_size"), unit_sizes=tuple(sizes), samples_per_shard=sps,
    )
