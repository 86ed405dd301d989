"""``storage.write_ranges``: files made of byte ranges of other files (shards from
spilled records, index files from their parts), copied by the kernel when it can."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from mintdim_beam.storage import files as storage


@pytest.fixture
def sources(tmp_path):
    paths = []
    for k, size in enumerate([0, 1, 5000, 70000]):
        path = tmp_path / f"src{k}.bin"
        path.write_bytes(bytes((k * 31 + i) % 251 for i in range(size)))
        paths.append(str(path))
    return paths


def _ranges(paths):
    return [(paths[2], 10, 4000), (paths[0], 0, None), (paths[3], 0, None), (paths[1], 0, 1),
            (paths[3], 65000, 5000), (paths[2], 4999, None), (paths[3], 7, 0)]


def _want(ranges):
    out = b""
    for src, start, length in ranges:
        with open(src, "rb") as f:
            data = f.read()
        out += data[start:] if length is None else data[start:start + length]
    return out


@pytest.mark.parametrize("kernel", [True, False])
def test_ranges_are_copied_in_order(tmp_path, sources, monkeypatch, kernel):
    if not kernel:
        def refuse(*args):
            raise OSError(18, "Invalid cross-device link")
        monkeypatch.setattr(os, "copy_file_range", refuse)
    target = tmp_path / "out" / "shard_000000.bin"
    ranges = _ranges(sources)
    sha = hashlib.sha256()
    written = storage.write_ranges(str(target), ranges, sha=sha)
    want = _want(ranges)
    assert target.read_bytes() == want and written == len(want) > 70000
    assert sha.hexdigest() == hashlib.sha256(want).hexdigest()
    assert sorted(os.listdir(target.parent)) == ["shard_000000.bin"]      # no temporary left


def test_kernel_and_fallback_copies_mix_in_order(tmp_path, sources, monkeypatch):
    """A file system may refuse some ranges only: each range lands in its place."""
    real, calls = os.copy_file_range, []

    def every_other(*args):
        calls.append(args)
        if len(calls) % 2 == 1:      # the first range (4,000 bytes) goes through a buffer
            raise OSError(22, "Invalid argument")
        return real(*args)
    monkeypatch.setattr(os, "copy_file_range", every_other)
    monkeypatch.setattr(storage, "_CHUNK", 999)      # the hasher's reads: many a range
    target = tmp_path / "mixed.bin"
    ranges = _ranges(sources)
    sha = hashlib.sha256()
    storage.write_ranges(str(target), ranges, sha=sha)
    assert target.read_bytes() == _want(ranges) and len(calls) >= 4
    assert sha.hexdigest() == hashlib.sha256(_want(ranges)).hexdigest()


def test_a_short_source_fails_and_leaves_nothing(tmp_path, sources):
    target = tmp_path / "index.jsonl"
    with pytest.raises(EOFError, match="src2.bin"):
        storage.write_ranges(str(target), [(sources[3], 0, 100), (sources[2], 4000, 2000)],
                             sha=hashlib.sha256())
    assert not target.exists() and not [n for n in os.listdir(tmp_path) if ".tmp-" in n]
    assert not [t for t in threading.enumerate() if t.name.startswith("hash")]   # the hasher is gone


def test_an_existing_file_is_replaced_whole(tmp_path, sources):
    target = tmp_path / "sample_index.jsonl"
    target.write_bytes(b"x" * 100000)
    storage.write_ranges(str(target), [(sources[1], 0, None)])
    assert target.read_bytes() == _want([(sources[1], 0, None)])


def test_a_full_disk_says_what_the_write_needed_and_stays_an_oserror():
    """``NoSpaceError`` is the ENOSPC every caller already handles (``errno``,
    ``filename``), carrying the bytes the write was about to put there, across a pickle
    (a worker's error reaching the launcher)."""
    import errno
    import pickle

    err = storage.NoSpaceError("out/unit_16/shard_000000.bin", 1 << 20)
    again = pickle.loads(pickle.dumps(err))
    for found in (err, again):
        assert isinstance(found, OSError) and found.errno == errno.ENOSPC
        assert found.filename == "out/unit_16/shard_000000.bin" and found.needed_bytes == 1 << 20


def _recording_fsync(monkeypatch, fail=None):
    """os.fsync replaced by one that records each file's inode (and fails if asked)."""
    seen = []
    real = os.fsync

    def fsync(fd):
        seen.append(os.fstat(fd).st_ino)
        if fail is not None:
            raise fail
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_the_flusher_flushes_each_added_file_before_wait_returns(tmp_path, monkeypatch):
    seen = _recording_fsync(monkeypatch)
    paths = [tmp_path / f"shard_{i}.bin" for i in range(3)]
    flusher = storage.Flusher()
    try:
        for p in paths:
            storage.write_bytes(str(p), b"x" * 1000)
            flusher.add(str(p))
        flusher.wait()
        assert sorted(seen) == sorted(os.stat(p).st_ino for p in paths)
        flusher.wait()                      # nothing pending: nothing flushed again
        assert len(seen) == 3
    finally:
        flusher.close()


def _resident_pages(path) -> int:
    """How many of ``path``'s pages are in the page cache (``mincore`` of a mapping)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), size) as mm:
        start = ctypes.c_char.from_buffer(mm)
        try:
            if libc.mincore(ctypes.c_void_p(ctypes.addressof(start)), ctypes.c_size_t(size), vec) != 0:
                pytest.skip(f"mincore: {os.strerror(ctypes.get_errno())}")
        finally:
            del start
    return sum(v & 1 for v in vec)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise") or not os.path.exists("/proc/self/fd"),
                    reason="posix_fadvise and mincore are Linux's")
def test_the_flusher_hands_back_the_page_cache_of_what_it_flushed(tmp_path):
    """A flushed shard's pages leave the page cache (the build never reads it again);
    a file not added keeps its pages."""
    data = os.urandom(4 << 20)
    added, kept = tmp_path / "shard.bin", tmp_path / "spill.bin"
    for p in (added, kept):
        storage.write_bytes(str(p), data)
    if _resident_pages(added) == 0:
        pytest.skip("this file system does not keep written pages in the page cache")
    probe = tmp_path / "probe.bin"           # does this file system drop clean pages at all?
    storage.write_bytes(str(probe), data)
    fd = os.open(probe, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    if _resident_pages(probe) > 0:
        pytest.skip("this file system keeps clean pages that are advised away (tmpfs)")
    flusher = storage.Flusher()
    try:
        flusher.add(str(added))
        flusher.wait()
    finally:
        flusher.close()
    assert _resident_pages(added) == 0
    assert _resident_pages(kept) == (4 << 20) // os.sysconf("SC_PAGE_SIZE")
    assert added.read_bytes() == data        # on the disk, whole


@pytest.mark.parametrize("code", [5, 28])   # EIO, ENOSPC
def test_a_failed_flush_is_raised_by_wait_not_dropped(tmp_path, monkeypatch, code):
    _recording_fsync(monkeypatch, fail=OSError(code, os.strerror(code)))
    path = tmp_path / "shard.bin"
    storage.write_bytes(str(path), b"x")
    flusher = storage.Flusher()
    try:
        flusher.add(str(path))
        with pytest.raises(OSError) as caught:
            flusher.wait()
        assert caught.value.errno == code
        if code == 28:
            assert isinstance(caught.value, storage.NoSpaceError) and caught.value.filename == str(path)
        flusher.wait()                      # raised once, then forgotten
    finally:
        flusher.close()


def test_the_flusher_leaves_object_store_paths_alone(monkeypatch):
    seen = _recording_fsync(monkeypatch)
    flusher = storage.Flusher()
    flusher.add("s3://bucket/out/shard.bin")
    started = any(t.name.startswith("flush") for t in threading.enumerate())
    flusher.wait()
    flusher.close()
    assert seen == [] and not started
