"""Every byte the build reads or writes goes through Beam's file systems.

That is what makes local paths, ``gs://`` and ``s3://`` interchangeable for inputs,
tokenizer files and outputs. The helpers here add the few things the build needs on top:
ranged reads, whole-file writes that never expose a half-written file under its final
name, listing a directory, and configuring ``FileSystems`` on workers whose runner
does not (:func:`configure`).

``s3://`` paths use Beam's AWS file system one level down, through its ``S3IO`` with
one client per thread: ``FileSystems`` builds a new ``S3FileSystem``, hence a new
boto3 session and client, for every call (about 0.15 s of CPU each), which costs more
than the tokenization for a build with many blocks. Reads and small writes go to the
client directly, to save requests that a build of many small files pays per file on a
real store too: a read is one ranged GET (Beam's reader asks for the size first, and
fills 16 MiB whatever was asked: :class:`_S3Reader`), and a file of up to 8 MiB one PUT
(Beam's uploader makes every file a multipart upload of three requests, and cannot
make an empty one). Everything else goes through ``FileSystems`` itself.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import uuid
from typing import Iterable

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_RAW = CompressionTypes.UNCOMPRESSED
_CHUNK = 8 << 20
_SEQUENTIAL = 16 << 20      # s3:// read-ahead of a reader that goes through a file in order
_MIME = "application/octet-stream"

# Option classes that configure file systems (S3 endpoint and keys, GCS project, ...).
FILESYSTEM_OPTION_CLASSES = ("S3Options", "GoogleCloudOptions", "HadoopFileSystemOptions", "AzureOptions")

_thread_clients = threading.local()     # this thread's S3IO and GCS client (each costly to make)
# The file-system options last given to FileSystems by configure() (FileSystems keeps
# its own copy privately): they also build the s3:// clients of _s3().
_options = None


def filesystem_options(options) -> dict:
    """The file-system settings among a pipeline's options, as a plain dict.

    DoFns carry this dict and call :func:`configure` in ``setup()``: runners that start
    workers through Beam's SDK harness configure ``FileSystems`` themselves, the Dask
    runner does not, and ``s3://`` with a custom endpoint would otherwise go to AWS.
    """
    from apache_beam.options import pipeline_options as po

    found = {}
    for name in FILESYSTEM_OPTION_CLASSES:
        cls = getattr(po, name, None)
        if cls is not None:
            found.update(options.view_as(cls).get_all_options(drop_default=True, current_only=True))
    return {k: v for k, v in found.items() if v is not None}


def filesystem_option_names() -> set:
    """The names of every file-system option Beam knows (``s3_endpoint_url``, ...)."""
    from apache_beam.options import pipeline_options as po

    empty = po.PipelineOptions([])
    return {name for cls in FILESYSTEM_OPTION_CLASSES if getattr(po, cls, None) is not None
            for name in empty.view_as(getattr(po, cls)).get_all_options(current_only=True)}


def configure(options) -> None:
    """Give ``FileSystems`` the file-system settings in ``options``.

    ``options``: a ``PipelineOptions``, a list of Beam flags, or a dict from
    :func:`filesystem_options` (None: nothing to do). The launcher calls it before it
    touches any file; DoFns call it in ``setup()`` with the pipeline's settings, since
    the Dask runner does not configure its workers' ``FileSystems`` (and a long-lived
    Dask worker may hold another job's). The settings are applied through Beam's public
    ``FileSystems.set_options``; the same options also make this module's ``s3://``
    clients (:func:`_s3`). Settings already in force are not set again; none given,
    where none were set here, leave what the runner configured alone.
    """
    from apache_beam.options.pipeline_options import PipelineOptions

    global _options
    if options is None:
        return
    if isinstance(options, dict):
        options = PipelineOptions.from_dictionary(options)
    elif isinstance(options, (list, tuple)):
        options = PipelineOptions(list(options))
    settings = filesystem_options(options)
    if settings == (filesystem_options(_options) if _options is not None else {}):
        return   # already in force (or none given and none set here)
    _options = PipelineOptions.from_dictionary(settings)
    FileSystems.set_options(_options)


def configured_options():
    """The file-system options last given to :func:`configure` (None: none yet)."""
    return _options


def _is_s3(path: str) -> bool:
    return path.startswith("s3://")


def _s3():
    """Beam's ``S3IO`` for this thread, built from the options last configured here."""
    from apache_beam.io.aws import s3io
    from apache_beam.io.aws.clients.s3 import boto3_client
    from apache_beam.options.pipeline_options import PipelineOptions

    options = _options
    cached = getattr(_thread_clients, "entry", None)
    if cached is None or cached[0] is not options:
        client = boto3_client.Client(options=options if options is not None else PipelineOptions([]))
        cached = (options, s3io.S3IO(client=client))
        _thread_clients.entry = cached
    return cached[1]


def s3_client():
    """The boto3 client of this thread's ``S3IO`` (for server-side copies: ``compose``)."""
    return _s3().client.client


def gcs_client():
    """A ``google.cloud.storage`` client made as Beam's GCS file system makes its own
    (``gcsio.GcsIO`` from the options last configured here: the job's project and
    credentials), for server-side composition (``compose``); None where Beam's GCS
    support (``apache-beam[gcp]``) is not installed."""
    from apache_beam.options.pipeline_options import PipelineOptions

    try:
        from apache_beam.io.gcp import gcsio
    except ImportError:
        return None
    options = _options
    cached = getattr(_thread_clients, "gcs", None)
    if cached is None or cached[0] is not options:
        cached = (options, gcsio.GcsIO(pipeline_options=options if options is not None else PipelineOptions([])).client)
        _thread_clients.gcs = cached
    return cached[1]


def is_local(path: str) -> bool:
    return "://" not in path


# Local paths go straight to ``os``: Beam's FileSystems finds the file system of a path
# by scanning its plugin classes on every call (about 60 us), and a build of many small
# files makes tens of thousands of such calls.

def join(base: str, *parts: str) -> str:
    if is_local(base):
        return os.path.join(base, *parts)
    return FileSystems.join(base, *parts)


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(path)
    if _is_s3(path):
        return _s3().exists(path)
    return FileSystems.exists(path)


def size(path: str) -> int:
    if is_local(path):
        return os.path.getsize(path)
    if _is_s3(path):
        return _s3().size(path)
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes


#: From this many files of one ``s3://`` folder on, their sizes come from listing the
#: folder (1,000 objects a request) instead of one request a file.
LIST_FROM = 16


def sizes_or_none(paths: list[str], threads: int = 8) -> dict:
    """``{path: size, or None if it does not exist}`` for many files, without one
    round trip after another: local files are asked directly, ``s3://`` folders with
    many of them are listed, and the remaining remote files are asked a few at a time
    (each thread has its own S3 client, about 0.15 s of CPU to make, hence few)."""
    found: dict = {}
    remote = []
    for p in dict.fromkeys(paths):
        if is_local(p):
            found[p] = os.path.getsize(p) if os.path.isfile(p) else None
        else:
            remote.append(p)
    folders: dict = {}
    for p in remote:
        if _is_s3(p):
            folders.setdefault(p.rsplit("/", 1)[0] + "/", []).append(p)
    listed = set()
    for folder, members in folders.items():
        if len(members) >= LIST_FROM:
            inside = dict(_s3().list_files(folder))
            for p in members:
                found[p] = inside.get(p)
            listed.update(members)
    rest = [p for p in remote if p not in listed]
    if rest:
        from concurrent.futures import ThreadPoolExecutor

        def one(p):
            return _s3_size_or_none(p) if _is_s3(p) else size(p) if exists(p) else None

        with ThreadPoolExecutor(max_workers=max(1, min(threads, len(rest))), thread_name_prefix="sizes") as pool:
            found.update(zip(rest, pool.map(one, rest)))
    return found


def _s3_size_or_none(path: str):
    """An ``s3://`` object's size, or None if it does not exist: one HEAD, where
    ``exists`` then ``size`` are two."""
    from apache_beam.io.aws.clients.s3 import messages

    try:
        return _s3().size(path)
    except messages.S3ClientError as exc:
        if exc.code == 404:
            return None
        raise


def sizes(paths: list[str], known: dict | None = None) -> list[int]:
    """The sizes of many files (see :func:`sizes_or_none`); a missing one is an error.

    ``known``: ``{path: size or None}`` already listed (``patterns.expand_sizes``): those
    paths are not asked again, so a build lists its inputs once, not once per step."""
    known = known or {}
    found = {p: known[p] for p in paths if p in known}
    asked = [p for p in paths if p not in found]
    if asked:
        found.update(sizes_or_none(asked))
    missing = [p for p in paths if found[p] is None]
    if missing:
        raise FileNotFoundError(missing[0])
    return [found[p] for p in paths]


def open_read(path: str, readahead: int = 0):
    """A binary reader of ``path``'s stored bytes (``read``, ``seek``, ``tell``).

    ``readahead``: on ``s3://``, a read of fewer bytes than this fetches this many, for
    readers that go through a file in small steps; 0 (random access): each read is
    one ranged GET of exactly the bytes asked for.
    """
    if is_local(path):
        return open(path, "rb")
    if _is_s3(path):
        return _S3Reader(path, readahead)
    return FileSystems.open(path, compression_type=_RAW)


class _S3Reader:
    """An ``s3://`` object read by ranged GETs through this thread's client.

    Beam's S3 reader asks for the object's size (a HEAD) before its first read and
    fills a 16 MiB buffer whatever the read; a build reads every input twice and each
    block's spill several times, by byte range, so that was a HEAD and a GET, and up to
    16 MiB, per small read: about half the requests of a build of many small files.
    Here a read is one GET of the range asked (the object's size comes with the first
    answer, so a read at the end costs nothing); a missing object is
    ``FileNotFoundError``.
    """

    def __init__(self, path: str, readahead: int = 0, client=None):
        from apache_beam.io.aws import s3io

        self._path = path
        self._bucket, self._key = s3io.parse_s3_path(path)
        self._client = client if client is not None else s3_client()
        self._readahead = readahead
        self._pos = 0
        self._size = None                   # known from the first answer's Content-Range
        self._buffer, self._buffer_at = b"", 0

    def _get(self, start: int, length) -> bytes:
        if length == 0 or (self._size is not None and start >= self._size):
            return b""
        from botocore.exceptions import ClientError

        span = f"bytes={start}-" if length is None else f"bytes={start}-{start + length - 1}"
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=self._key, Range=span)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code == "InvalidRange":      # at or past the end (or an empty object)
                self._size = start if self._size is None else self._size
                return b""
            if code in ("NoSuchKey", "404", "NotFound"):
                raise FileNotFoundError(f"{self._path}: no such object") from None
            raise
        total = answer.get("ContentRange", "").rpartition("/")[2]
        if total.isdigit():
            self._size = int(total)
        return answer["Body"].read()

    def read(self, size: int = -1) -> bytes:
        inside = self._pos - self._buffer_at
        if size is not None and 0 <= size and 0 <= inside and inside + size <= len(self._buffer):
            data = self._buffer[inside:inside + size]
        elif size is None or size < 0:
            data = self._get(self._pos, None)
        elif size < self._readahead:
            self._buffer, self._buffer_at = self._get(self._pos, self._readahead), self._pos
            data = self._buffer[:size]
        else:
            data = self._get(self._pos, size)
        self._pos += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self._pos
        elif whence == os.SEEK_END:
            if self._size is None:
                self._size = _s3().size(self._path)
            offset += self._size
        self._pos = offset
        return offset

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._buffer = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def compression(path: str) -> str:
    """The Beam ``CompressionTypes`` value a file's name declares (by its extension):
    ``.gz``, ``.bz2``, ``.zst``/``.zstd``, ``.xz``/``.lzma``, ``.deflate``; otherwise
    ``UNCOMPRESSED``."""
    return CompressionTypes.detect_compression_type(path)


def is_compressed(path: str) -> bool:
    return compression(path) != _RAW


class CompressedDataError(ValueError):
    """A compressed input is corrupt, or (``truncated``) ends before its compressed
    stream does; ``detail``: the decompressor's own words, if any."""

    def __init__(self, truncated: bool, detail: str = ""):
        super().__init__("truncated" if truncated else f"corrupt ({detail})")
        self.truncated, self.detail = truncated, detail


def open_decompressed(path: str):
    """A file's content, decompressed as its extension says (a plain file as it is).

    A compressed stream can only be read from its start, so this is for sequential
    reads; ``open_read`` gives the stored bytes (for hashing and byte ranges).
    """
    kind = compression(path)
    if kind == _RAW:
        return open_read(path, readahead=_SEQUENTIAL)
    return _Decompressed(open_read(path, readahead=_SEQUENTIAL), kind)


class _Decompressed:
    """The decompressed bytes of a stored stream, read in order.

    Beam's ``CompressedFile`` reads these formats too, but stops without a word where a
    truncated file ends: a partly copied ``.gz`` would lose its tail and the build still
    succeed. Here every compressed stream must reach its end mark, corrupt data is an
    error, and concatenated streams (``cat a.gz b.gz``, multi-frame zstd) are read whole.
    NUL bytes after a complete gzip member are padding (a tape-padded ``.gz``), skipped
    as GNU gzip and Python's ``gzip`` skip them; any other trailing byte is corrupt data.
    """

    def __init__(self, raw, kind: str, chunk_size: int = 1 << 20):
        self._raw, self._kind, self._chunk = raw, kind, chunk_size
        self._out = bytearray()
        self._decoder = None
        self._pending = b""      # compressed bytes after a finished stream: the next one
        self._done = False
        self._error = None
        self._members = 0        # complete streams read

    def _new_decoder(self):
        import bz2
        import lzma
        import zlib

        kind = self._kind
        if kind == CompressionTypes.GZIP:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if kind == CompressionTypes.DEFLATE:
            return zlib.decompressobj()
        if kind == CompressionTypes.BZIP2:
            return bz2.BZ2Decompressor()
        if kind == CompressionTypes.LZMA:
            return lzma.LZMADecompressor()     # .xz and the older .lzma format alike
        if kind == CompressionTypes.ZSTD:
            import zstandard

            # The window Beam allows too: frames written with --long need more than the default.
            return zstandard.ZstdDecompressor(max_window_size=1 << 31).decompressobj()
        raise ValueError(f"unsupported compression {kind!r}")

    def _fill(self) -> None:
        if self._pending:
            data, self._pending = self._pending, b""
        else:
            data = self._raw.read(self._chunk)
        if not data:
            if self._decoder is not None:
                raise CompressedDataError(truncated=True)
            self._done = True
            return
        if self._decoder is None and self._members and self._kind == CompressionTypes.GZIP:
            data = data.lstrip(b"\x00")   # padding after a member, as Python's gzip reads it
            if not data:
                return
        if self._decoder is None:
            self._decoder = self._new_decoder()
        try:
            self._out += self._decoder.decompress(data)
        except Exception as exc:   # zlib.error, OSError (bz2), LZMAError, ZstdError: all say "corrupt"
            raise CompressedDataError(truncated=False, detail=str(exc)) from None
        if self._decoder.eof:
            self._pending, self._decoder = self._decoder.unused_data, None
            self._members += 1

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._out) < size):
            if self._error is not None:
                if self._out:
                    break
                raise self._error
            try:
                self._fill()
            except CompressedDataError as exc:
                self._error = exc   # the bytes decompressed before it are read first
        size = len(self._out) if size < 0 else min(size, len(self._out))
        data = bytes(self._out[:size])
        del self._out[:size]
        return data

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_bytes(path: str) -> bytes:
    with open_read(path) as f:
        return f.read()


def files_and_sizes(directory: str) -> dict:
    """``{path: size}`` of every file under ``directory``, from one listing (1,000
    objects a request on an object store); {} when it is absent."""
    if is_local(directory):
        found = {}
        for folder, _, names in os.walk(directory):
            for name in names:
                path = os.path.join(folder, name)
                found[path] = os.path.getsize(path)
        return found
    prefix = directory.rstrip("/") + "/"
    if _is_s3(directory):
        return dict(_s3().list_files(prefix))
    try:
        result = FileSystems.match([prefix + "**"])[0]
    except Exception:
        return {}
    return {m.path: m.size_in_bytes for m in result.metadata_list}


def read_range(path: str, start: int, length: int) -> bytes:
    with open_read(path) as f:
        f.seek(start)
        return f.read(length)


def file_digest(path: str) -> tuple[int, str]:
    """``(size, sha256 hex)`` of a file, streamed: the package's one file hasher."""
    sha = hashlib.sha256()
    size = 0
    for chunk in iter_chunks(path):
        sha.update(chunk)
        size += len(chunk)
    return size, sha.hexdigest()


def iter_chunks(path: str, chunk_size: int = _CHUNK):
    """The bytes of a file in chunks, for streaming readers (hashing)."""
    with open_read(path) as f:
        while True:
            chunk = f.read(chunk_size)
            if not chunk:
                return
            yield chunk


def iter_lines(path: str, chunk_size: int = 1 << 18):
    """The lines of a file (each with its ``\\n``), read in ranged chunks.

    No handle stays open between chunks, so a merge over many files holds one chunk
    per file (not a 16 MiB remote read buffer) and no idle connection.
    """
    offset, tail = 0, b""
    while True:
        chunk = read_range(path, offset, chunk_size)
        if not chunk:
            if tail:
                yield tail
            return
        offset += len(chunk)
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        for line in lines:
            yield line + b"\n"


def _create(path: str):
    if is_local(path):
        try:
            return open(path, "wb")
        except FileNotFoundError:   # the directory's first file (one syscall less for the rest)
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            return open(path, "wb")
    if _is_s3(path):
        return _s3().open(path, "wb", mime_type=_MIME)
    return FileSystems.create(path, mime_type=_MIME, compression_type=_RAW)


def byte_view(array) -> memoryview:
    """The bytes of a numpy array, as ``tobytes()`` gives them, without copying them.

    Spills are hundreds of MB per 100 MB of input; a copy of each is as many MB of fresh
    pages to fault in before they are written (docs/decisions.md, "Spills are kept
    small").
    """
    import numpy as np

    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def write_bytes(path: str, chunks: Iterable[bytes] | bytes, sha=None) -> int:
    """Write a whole file; a reader never sees it half-written under ``path``.

    Locally the bytes go to a unique temporary name first and are renamed over
    ``path``; object stores publish an object only when its upload completes.
    Rewriting the same path with the same bytes (a retried bundle) is harmless.
    ``sha`` (a ``hashlib`` object) is fed the bytes as they are written, so the
    writer gets the file's checksum without reading it again.
    """
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        chunks = [chunks]
    chunks = iter(chunks)
    if _is_s3(path):
        return _s3_write(path, chunks, sha)
    first = next((c for c in chunks if len(c)), None)
    target = path
    if is_local(path):
        target = f"{path}.tmp-{uuid.uuid4().hex}"
    written = 0
    if first is not None:
        chunks = itertools.chain([first], chunks)
    with _create(target) as f:
        for chunk in chunks:
            f.write(chunk)
            written += len(chunk)
            if sha is not None:
                sha.update(chunk)
    if target != path:
        os.replace(target, path)
    return written


#: An ``s3://`` file of at most this many bytes is one PUT; a larger one goes through
#: Beam's multipart upload (which also cannot make an empty object).
SINGLE_PUT = 8 << 20


def _s3_write(path: str, chunks, sha) -> int:
    """``write_bytes`` on ``s3://``: a small file (spills, index parts and summaries of
    a build of many small blocks) in one request instead of a multipart upload's three."""
    from apache_beam.io.aws import s3io

    held = bytearray()      # copied: a chunk may be a view of a buffer its maker reuses
    for chunk in chunks:
        held += chunk
        if len(held) > SINGLE_PUT:
            break
    else:
        bucket, key = s3io.parse_s3_path(path)
        s3_client().put_object(Bucket=bucket, Key=key, Body=bytes(held), ContentType=_MIME)
        if sha is not None:
            sha.update(held)
        return len(held)
    written = len(held)
    if sha is not None:
        sha.update(held)
    with _s3().open(path, "wb", mime_type=_MIME) as f:
        f.write(held)
        del held
        for chunk in chunks:
            f.write(chunk)
            written += len(chunk)
            if sha is not None:
                sha.update(chunk)
    return written


def write_ranges(path: str, ranges: Iterable[tuple], sha=None) -> int:
    """Write ``path`` (as ``write_bytes`` does) from ``(source, start, length)`` byte
    ranges of other files, in order; ``length`` None means to the end of the source.

    Shards are ranges of the blocks' spilled records, and index files the blocks' parts,
    so publishing a build is mostly copying. Between local files the kernel copies
    (``os.copy_file_range``: the bytes never pass through Python); anywhere else, and
    where the kernel refuses, the ranges are read and written. ``sha`` is fed the
    file's bytes as in :func:`write_bytes` (after a kernel copy, read back from the
    page cache the copy just filled).
    """
    ranges = list(ranges)
    if not (is_local(path) and all(is_local(src) for src, _, _ in ranges)
            and hasattr(os, "copy_file_range")):
        return write_bytes(path, _read_ranges(ranges), sha)
    target = f"{path}.tmp-{uuid.uuid4().hex}"
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    written = 0
    try:
        with open(target, "wb") as out:
            for src, start, length in ranges:
                with open(src, "rb") as f:
                    if length is None:
                        length = os.fstat(f.fileno()).st_size - start
                    written += _copy(f, out, start, length)
        if sha is not None:
            with open(target, "rb") as f:
                for chunk in iter(lambda: f.read(_CHUNK), b""):
                    sha.update(chunk)
        os.replace(target, path)
    except BaseException:
        if os.path.exists(target):
            os.remove(target)
        raise
    return written


def _copy(src, out, start: int, length: int) -> int:
    """Copy ``length`` bytes of ``src`` from ``start`` to the end of ``out``."""
    done = 0
    try:
        while done < length:
            n = os.copy_file_range(src.fileno(), out.fileno(), length - done, start + done)
            if n == 0:
                raise EOFError(f"{src.name}: {start + length} bytes expected, {start + done} found")
            done += n
    except OSError:   # a kernel or file system without it (EXDEV, ENOSYS, EINVAL, ...)
        src.seek(start + done)
        out.seek(0, os.SEEK_END)
        data = src.read(length - done)
        if len(data) != length - done:
            raise EOFError(f"{src.name}: {start + length} bytes expected, {start + done + len(data)} found")
        out.write(data)
        out.flush()   # the next range may go through the descriptor again
        done = length
    return done


#: ``s3://`` ranges of one ``write_ranges`` fetched at once, ahead of the writer.
RANGES_IN_FLIGHT = 8


def _read_ranges(ranges):
    if len(ranges) > 1 and all(_is_s3(src) for src, _, _ in ranges):
        yield from _s3_read_ranges(ranges)
        return
    for src, start, length in ranges:
        yield read_bytes(src)[start:] if length is None else read_range(src, start, length)


def _s3_read_ranges(ranges):
    """The ranges' bytes in order, a few GETs in flight: a shard is hundreds of small
    ranges of the blocks' spills, and one GET after another would wait for each
    answer. They share this thread's client (boto3 clients are thread-safe; making one
    a thread costs 0.15 s of CPU). At most RANGES_IN_FLIGHT ranges are held."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    client = s3_client()

    def fetch(item):
        src, start, length = item
        with _S3Reader(src, client=client) as f:
            f.seek(start)
            data = f.read(-1 if length is None else length)
        if length is not None and len(data) != length:
            raise EOFError(f"{src}: {start + length} bytes expected, {start + len(data)} found")
        return data

    with ThreadPoolExecutor(max_workers=RANGES_IN_FLIGHT, thread_name_prefix="s3-ranges") as pool:
        pending: deque = deque()
        for item in ranges:
            if len(pending) >= RANGES_IN_FLIGHT:
                yield pending.popleft().result()
            pending.append(pool.submit(fetch, item))
        while pending:
            yield pending.popleft().result()


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def list_files(directory: str) -> list[str]:
    """Paths of every file under ``directory`` (recursively); [] when it is absent."""
    if _is_s3(directory):
        return sorted(p for p, _ in _s3().list_files(directory.rstrip("/") + "/"))
    pattern = join(directory, "**") if not is_local(directory) else os.path.join(directory, "**")
    try:
        result = FileSystems.match([pattern])[0]
    except Exception:
        return []
    return sorted(m.path for m in result.metadata_list)


def is_missing_or_empty(directory: str) -> bool:
    if is_local(directory):
        return not os.path.exists(directory) or (os.path.isdir(directory) and not os.listdir(directory))
    return not list_files(directory)


def mkdirs(directory: str) -> None:
    if is_local(directory):
        os.makedirs(directory, exist_ok=True)


def rename(src: str, dst: str) -> None:
    if is_local(src):
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        os.replace(src, dst)
    elif _is_s3(src):
        _s3().rename(src, dst)
    else:
        FileSystems.rename([src], [dst])


def delete(path: str) -> None:
    """Remove one file (no error when absent)."""
    if is_local(path):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    elif exists(path):
        if _is_s3(path):
            _s3().delete(path)
        else:
            FileSystems.delete([path])


def delete_tree(directory: str) -> None:
    """Remove ``directory`` and everything below it (no error when absent)."""
    if is_local(directory):
        import shutil
        shutil.rmtree(directory, ignore_errors=True)
        return
    paths = list_files(directory)
    if not paths:
        return
    if _is_s3(directory):
        failed = [(p, err) for p, err in _s3().delete_files(paths) if err is not None]
        if failed:
            raise OSError(f"could not delete {len(failed)} objects under {directory}: {failed[0]}")
    else:
        FileSystems.delete(paths)
