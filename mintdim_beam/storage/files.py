"""Every byte the build and the reader read or write: one layer over Beam's file systems.

That is what makes local paths, ``gs://`` and ``s3://`` interchangeable for inputs,
tokenizer files, outputs and datasets read back. The helpers add what build and reader
need on top: ranged reads, whole-file writes that never expose a half-written file under
its final name, listing a directory, server-side-friendly range copies.

Local paths go straight to ``os`` (Beam's ``FileSystems`` finds a path's file system by
scanning its plugins on every call, about 60 us, and a build of many small files makes
tens of thousands of calls), so a local read never imports Beam; a local file that is
not a regular file (a FIFO, a device) is an ``OSError`` before it is opened, never a
read that blocks. ``s3://`` takes the fast path of :mod:`.s3`; every other scheme goes
through ``FileSystems``, imported inside the function that needs it.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import uuid
from typing import Iterable

from mintdim_beam.storage.clients import is_s3
from mintdim_beam.storage.s3 import MIME as _MIME
from mintdim_beam.storage.s3 import (S3Reader, s3_delete, s3_delete_many, s3_list, s3_read_ranges, s3_rename,
                                     s3_size_or_none, s3_write)

_CHUNK = 8 << 20
_FADVISE = hasattr(os, "posix_fadvise")


SEQUENTIAL = 16 << 20      # s3:// read-ahead of a reader that goes through a file in order




class NoSpaceError(OSError):
    """ENOSPC on a local write, with what the write was about to put there:
    ``needed_bytes`` (-1 where the writer streamed bytes it had not counted). An
    ``OSError`` with ``errno.ENOSPC`` like any other; the launcher's ``DiskFullError``
    states both the free bytes and these."""

    def __init__(self, path: str, needed_bytes: int = -1):
        super().__init__(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        self.needed_bytes = needed_bytes

    def __reduce__(self):
        return (type(self), (self.filename, self.needed_bytes))


def _no_space(exc: BaseException, path: str, needed) -> BaseException:
    """``exc`` as a :class:`NoSpaceError` for ``path`` when it is ENOSPC; else itself."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC and not isinstance(exc, NoSpaceError):
        try:
            return NoSpaceError(path, needed() if callable(needed) else needed)
        except OSError:
            return NoSpaceError(path)
    return exc


def _fs():
    """Beam's ``FileSystems``, imported on first use: a local-only caller never loads Beam."""
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def is_local(path: str) -> bool:
    return "://" not in path


def join(base: str, *parts: str) -> str:
    if is_local(base):
        return os.path.join(base, *parts)
    return _fs().join(base, *parts)


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(path)
    if is_s3(path):
        return s3_size_or_none(path) is not None
    return _fs().exists(path)


def size(path: str) -> int:
    if is_local(path):
        return os.path.getsize(path)
    if is_s3(path):
        found = s3_size_or_none(path)
        if found is None:
            raise FileNotFoundError(f"{path}: no such object")
        return found
    return _fs().match([path])[0].metadata_list[0].size_in_bytes


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
        if is_s3(p):
            folders.setdefault(p.rsplit("/", 1)[0] + "/", []).append(p)
    listed = set()
    for folder, members in folders.items():
        if len(members) >= LIST_FROM:
            inside = dict(s3_list(folder))
            for p in members:
                found[p] = inside.get(p)
            listed.update(members)
    rest = [p for p in remote if p not in listed]
    if rest:
        from concurrent.futures import ThreadPoolExecutor

        def one(p):
            return s3_size_or_none(p) if is_s3(p) else size(p) if exists(p) else None

        with ThreadPoolExecutor(max_workers=max(1, min(threads, len(rest))), thread_name_prefix="sizes") as pool:
            found.update(zip(rest, pool.map(one, rest)))
    return found


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


def open_local(path: str):
    """``open(path, "rb")`` of a regular file. Anything else in its place is an OSError
    before it is opened: a FIFO or a device would block the read or never end it."""
    mode = os.stat(path).st_mode         # FileNotFoundError, NotADirectoryError, a loop, ...
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file", path)
    return open(path, "rb")


def open_read(path: str, readahead: int = 0):
    """A binary reader of ``path``'s stored bytes (``read``, ``seek``, ``tell``).

    ``readahead``: on ``s3://``, a read of fewer bytes than this fetches this many, for
    readers that go through a file in small steps; 0 (random access): each read is
    one ranged GET of exactly the bytes asked for.
    """
    if is_local(path):
        return open_local(path)
    if is_s3(path):
        return S3Reader(path, readahead)
    return _fs().open(path, compression_type="uncompressed")


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
    if is_s3(directory):
        return dict(s3_list(prefix))
    try:
        result = _fs().match([prefix + "**"])[0]
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
    return _fs().create(path, mime_type=_MIME, compression_type="uncompressed")


def byte_view(array) -> memoryview:
    """The bytes of a numpy array, as ``tobytes()`` gives them, without copying them.

    Spills are hundreds of MB per 100 MB of input; a copy of each is as many MB of fresh
    pages to fault in before they are written (docs/decisions.md, "Spills are kept
    small").
    """
    import numpy as np

    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def sync_tree(directory: str, skip: tuple = ()) -> None:
    """Locally: flush every file under ``directory`` and the directories themselves to
    the disk (``fsync``), so that a manifest written after it never names bytes a power
    loss could take back. Object stores acknowledge a write once it is durable.
    ``skip``: folder names not descended into (the staging area)."""
    if not is_local(directory) or not os.path.isdir(directory):
        return
    for folder, subfolders, files in os.walk(directory):
        subfolders[:] = [d for d in subfolders if d not in skip]
        for name in files:
            _flush_file(os.path.join(folder, name))
        sync_dir(folder)


class Flusher:
    """Files flushed to the disk in the background while the build goes on.

    Publishing flushes every file of an output before its manifest is written
    (:func:`sync_tree`). A shard written earlier is by then still dirty in the page
    cache (the kernel starts writing back only at a tenth of memory), so the flush of a
    whole output waited on the disk at the very end, on the one worker that publishes.
    :meth:`add` starts a staged file's flush as soon as it is written, on one thread of
    the worker that wrote it (``fsync`` releases the GIL): the disk writes while the
    workers go on, and the publish's flush finds the files clean.

    Once a file is on the disk its page-cache memory is handed back
    (``posix_fadvise(DONTNEED)``): files added here are ones the build does not read
    again (shards, index parts published as they are), and on a virtual machine
    whose kernel returns free memory to the host, a page the cache grows by costs a host
    fault where a page freed a moment before does not (docs/decisions.md).

    No error is dropped: Linux reports a failed writeback only to descriptors open when
    it failed, so the publish's later ``fsync`` could miss it; :meth:`wait` raises the
    first one (a full disk as :class:`NoSpaceError`), and the caller's work fails.
    Paths on object stores are durable once written and are skipped.
    """

    def __init__(self):
        self._pool = None
        self._pending: list = []

    def add(self, path: str) -> None:
        if not is_local(path):
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="flush")
        self._pending.append((path, self._pool.submit(_flush_file, path, True)))

    def wait(self) -> None:
        """Block until every file added so far is on the disk; raise the first error
        (a full disk is already :func:`_flush_file`'s ``NoSpaceError``)."""
        pending, self._pending = self._pending, []
        failed = None
        for _, future in pending:
            exc = future.exception()
            if exc is not None and failed is None:
                failed = exc
        if failed is not None:
            raise failed

    def close(self) -> None:
        """Let the thread end; flushes still running finish first."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _flush_file(path: str, drop: bool = False) -> None:
    """``fsync`` of a file or directory, by path (a descriptor of its own); ``drop``:
    then let the kernel reuse the file's page-cache memory (it is on the disk). A full
    disk is a :class:`NoSpaceError` naming the file its writeback failed for."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        if drop and _FADVISE:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        found = _no_space(exc, path, -1)
        if found is exc:
            raise
        raise found from exc
    finally:
        os.close(fd)


def sync_dir(directory: str) -> None:
    """Locally: make the names in ``directory`` (a rename into it) durable."""
    if is_local(directory):
        _flush_file(directory or ".")


def write_bytes(path: str, chunks: Iterable[bytes] | bytes, sha=None, durable: bool = False) -> int:
    """Write a whole file; a reader never sees it half-written under ``path``.

    Locally the bytes go to a unique temporary name first and are renamed over
    ``path``; object stores publish an object only when its upload completes.
    Rewriting the same path with the same bytes (a retried bundle) is harmless.
    ``sha`` (a ``hashlib`` object) is fed the bytes as they are written, so the
    writer gets the file's checksum without reading it again. ``durable``: locally,
    the file and then its directory are flushed to the disk before this returns.
    """
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        chunks = [chunks]
    needed = sum(len(c) for c in chunks) if isinstance(chunks, (list, tuple)) else -1
    chunks = iter(chunks)
    if is_s3(path):
        return s3_write(path, chunks, sha)
    first = next((c for c in chunks if len(c)), None)
    target = path
    if is_local(path):
        target = f"{path}.tmp-{uuid.uuid4().hex}"
    written = 0
    if first is not None:
        chunks = itertools.chain([first], chunks)
    try:
        with _create(target) as f:
            for chunk in chunks:
                f.write(chunk)
                written += len(chunk)
                if sha is not None:
                    sha.update(chunk)
            if durable and is_local(path):
                f.flush()
                os.fsync(f.fileno())
        if target != path:
            os.replace(target, path)
            if durable:
                sync_dir(os.path.dirname(os.path.abspath(path)))
    except BaseException as exc:
        if target != path and os.path.lexists(target):   # a full disk leaves no temporary file behind
            os.remove(target)
        found = _no_space(exc, path, needed)
        if found is exc:
            raise
        raise found from exc
    return written


def write_ranges(path: str, ranges: Iterable[tuple], sha=None) -> int:
    """Write ``path`` (as ``write_bytes`` does) from ``(source, start, length)`` byte
    ranges of other files, in order; ``length`` None means to the end of the source.

    Shards are ranges of the blocks' spilled records, and index files the blocks' parts,
    so publishing a build is mostly copying. Between local files the kernel copies
    (``os.copy_file_range``: the bytes never pass through Python); anywhere else, and
    where the kernel refuses, the ranges are read and written. ``sha`` is fed the
    file's bytes as in :func:`write_bytes`: after a kernel copy, each range is read
    back from the page cache on a thread of its own (:class:`_RangeHasher`) while the
    kernel copies the next, so that publishing's one worker hashes a large index on a
    second core instead of after the copy.
    """
    ranges = list(ranges)
    if not (is_local(path) and all(is_local(src) for src, _, _ in ranges)
            and hasattr(os, "copy_file_range")):
        return write_bytes(path, _read_ranges(ranges), sha)
    target = f"{path}.tmp-{uuid.uuid4().hex}"
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    written = 0
    hasher = _RangeHasher(sha) if sha is not None else None
    try:
        with open(target, "wb") as out:
            for src, start, length in ranges:
                with open(src, "rb") as f:
                    if length is None:
                        length = os.fstat(f.fileno()).st_size - start
                    copied = _copy(f, out, start, length)
                if hasher is not None:
                    out.flush()     # what a fallback copy wrote, for the hasher's own descriptor
                    hasher.add(target, written, copied)
                written += copied
        if hasher is not None:
            hasher.wait()
        os.replace(target, path)
    except BaseException as exc:
        if hasher is not None:
            hasher.close()
        if os.path.exists(target):
            os.remove(target)
        found = _no_space(exc, path, lambda: sum(os.path.getsize(src) - start if length is None else length
                                                 for src, start, length in ranges))
        if found is exc:
            raise
        raise found from exc
    return written


class _RangeHasher:
    """Feeds ``sha`` the byte ranges of files, in the order they were added, on one
    thread: reads and ``hashlib``'s updates of large buffers release the GIL, so the
    hashing runs beside the caller's next kernel copy.

    One buffer, made on the caller's thread: made on the short-lived hashing thread, it
    came from a malloc arena of that thread's own, which kept it after it was freed (a
    worker grew by 8 MiB a shard).
    """

    def __init__(self, sha):
        from concurrent.futures import ThreadPoolExecutor

        self._sha = sha
        self._buffer = bytearray(_CHUNK)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="hash")
        self._pending: list = []

    def add(self, path: str, start: int, length: int) -> None:
        self._pending.append(self._pool.submit(self._hash, path, start, length))

    def _hash(self, path: str, start: int, length: int) -> None:
        view = memoryview(self._buffer)
        with open(path, "rb", buffering=0) as f:
            f.seek(start)
            while length > 0:
                n = f.readinto(view[:min(length, _CHUNK)])
                if not n:
                    raise EOFError(f"{path}: ends before byte {start + length}")
                self._sha.update(view[:n])
                length -= n

    def wait(self) -> None:
        """Every range added is hashed; raises the first error."""
        try:
            for future in self._pending:
                future.result()
        finally:
            self.close()

    def close(self) -> None:
        for future in self._pending:
            future.cancel()
        self._pool.shutdown(wait=True)


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


def _read_ranges(ranges):
    if len(ranges) > 1 and all(is_s3(src) for src, _, _ in ranges):
        yield from s3_read_ranges(ranges)
        return
    for src, start, length in ranges:
        yield read_bytes(src)[start:] if length is None else read_range(src, start, length)


def write_text(path: str, text: str, durable: bool = False) -> None:
    write_bytes(path, text.encode("utf-8"), durable=durable)


def list_dir(path: str) -> list[str]:
    """Names (not paths) of the entries directly inside ``path``; [] when absent."""
    if is_local(path):
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    prefix = path.rstrip("/") + "/"
    try:
        found = _fs().match([prefix + "**"])[0].metadata_list
    except Exception:
        return []
    names = {m.path[len(prefix):].split("/", 1)[0] for m in found if m.path.startswith(prefix)}
    return sorted(n for n in names if n)


def list_files(directory: str) -> list[str]:
    """Paths of every file under ``directory`` (recursively); [] when it is absent."""
    if is_s3(directory):
        return sorted(p for p, _ in s3_list(directory.rstrip("/") + "/"))
    pattern = join(directory, "**") if not is_local(directory) else os.path.join(directory, "**")
    try:
        result = _fs().match([pattern])[0]
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
    elif is_s3(src):
        s3_rename(src, dst)
    else:
        _fs().rename([src], [dst])


def delete(path: str) -> None:
    """Remove one file (no error when absent)."""
    if is_local(path):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    elif is_s3(path):
        s3_delete(path)         # S3 answers a missing object as deleted
    elif exists(path):
        _fs().delete([path])


def delete_tree(directory: str) -> None:
    """Remove ``directory`` and everything below it (no error when absent)."""
    if is_local(directory):
        import shutil
        shutil.rmtree(directory, ignore_errors=True)
        return
    paths = list_files(directory)
    if not paths:
        return
    if is_s3(directory):
        s3_delete_many(paths)
    else:
        _fs().delete(paths)
