"""Byte-range blocks of JSONL files, so that one large file is read by many workers.

A block owns every line that *starts* inside ``[start, end)``. Reading a block seeks to
``start - 1`` and skips to the first line start, then reads on past ``end`` to finish
its last line. Every line is therefore read by exactly one block whatever the block
size, and per-block line counts turned into prefix sums give exact line numbers.

A compressed file (``.gz``, ``.bz2``, ``.zst``, ``.xz``, ``.deflate``: see
``storage.compression``) cannot be entered at a byte offset, so it is planned as one
block that one worker reads from the start (:func:`read_stream_blocks`), cutting the
decompressed bytes into blocks of about the block size at line ends as it goes: the
same lines, numbered the same, as the file uncompressed, and memory bounded by the
block size rather than by the file. Output bytes never depend on where blocks end.
"""

from __future__ import annotations

from typing import Optional

from mintdim_beam.storage import files as storage
from mintdim_beam.core.config import BuildConfig
from mintdim_beam.core.plan import BlockRef, EncodeGroup

_READ_AHEAD = 1 << 16
#: Text bytes assumed per byte of a compressed input, to size the work on it before it
#: is read (a guess changes the work's split, never the output).
COMPRESSION_RATIO = 4


#: Leading bytes of the compressed formats, for a compressed file named as plain JSONL
#: (no valid JSONL line starts with any of them).
MAGIC = (
    (b"\x1f\x8b", "gzip", ".gz"),
    (b"BZh", "bzip2", ".bz2"),
    (b"\xfd7zXZ\x00", "xz", ".xz"),
    (b"\x28\xb5\x2f\xfd", "zstd", ".zst"),
)


def plan_blocks(config: BuildConfig, sizes: Optional[dict] = None) -> list[BlockRef]:
    """Split every plain input file into blocks of ``config.block_size`` bytes (at least
    one); a compressed file is one block ``[0, compressed size)``. ``sizes``: the
    inputs' sizes as the launcher listed them (``patterns.expand_sizes``); the others
    are asked for."""
    refs = []
    for spec, total in zip(config.files, storage.sizes([f.path for f in config.files], sizes)):
        n = 1 if storage.is_compressed(spec.path) else max(1, -(-total // config.block_size))
        for b in range(n):   # the last block ends at the file's end (a compressed one's only block too)
            refs.append(BlockRef(spec.index, b, b * config.block_size,
                                 total if b == n - 1 else (b + 1) * config.block_size))
    return refs


def busy_blocks(config: BuildConfig, sizes: Optional[dict] = None, enough: int = 2) -> int:
    """How many blocks own a line (:func:`plan_blocks`), counted up to ``enough``.

    A file's first block owns its first line when the file is not empty, and a
    compressed file's one block counts once. A later block owns a line when a line
    starts inside it: from the end of a block that owns one, the file is read up to the
    next newline, so a normal file is decided by reading one line, and a file of one
    huge line by reading it (as the build does anyway). Used to run the local default
    on worker processes only when at least two blocks have work (one huge line is one
    busy block: a second process would only add its fixed cost).
    """
    count = 0
    for spec, total in zip(config.files, storage.sizes([f.path for f in config.files], sizes)):
        if total <= 0:
            continue
        count += 1
        if count >= enough:
            return count
        if storage.is_compressed(spec.path):
            continue
        with storage.open_read(spec.path) as f:
            at = config.block_size - 1      # the last byte of block 0
            while at < total - 1:
                f.seek(at)
                newline = _next_newline(f, at)
                if newline < 0 or newline >= total - 1:
                    break   # no line starts after it
                count += 1   # the line starting at newline + 1 belongs to that byte's block
                if count >= enough:
                    return count
                at = ((newline + 1) // config.block_size + 1) * config.block_size - 1
    return count


def _next_newline(f, at: int) -> int:
    """The offset of the first newline at or after ``at`` (``f`` positioned there), or -1."""
    while True:
        more = f.read(_READ_AHEAD)
        if not more:
            return -1
        cut = more.find(b"\n")
        if cut >= 0:
            return at + cut
        at += len(more)


def group_blocks(config: BuildConfig, refs: list) -> list:
    """``refs`` (``plan_blocks``' order) as encode groups, in the same order.

    Consecutive files of one output that are one block each join one group while its
    input (a compressed file's bytes counted ``COMPRESSION_RATIO`` times) stays within
    ``config.block_size``; every other block is a group alone.
    """
    per_file: dict = {}
    for ref in refs:
        per_file[ref.file] = per_file.get(ref.file, 0) + 1
    groups, run, size = [], [], 0
    for ref in refs:
        path = config.files[ref.file].path
        weight = (ref.end - ref.start) * (COMPRESSION_RATIO if storage.is_compressed(path) else 1)
        small = per_file[ref.file] == 1 and weight <= config.block_size
        if run and not (small and size + weight <= config.block_size
                        and config.files[ref.file].output == config.files[run[0].file].output):
            groups.append(EncodeGroup(tuple(run)))
            run, size = [], 0
        run.append(ref)
        size += weight
        if not small:   # alone
            groups.append(EncodeGroup(tuple(run)))
            run, size = [], 0
    if run:
        groups.append(EncodeGroup(tuple(run)))
    return groups


def plan_groups(config: BuildConfig, sizes: Optional[dict] = None) -> list:
    """The build's encode groups: :func:`group_blocks` of :func:`plan_blocks`."""
    return group_blocks(config, plan_blocks(config, sizes))


_decode_utf8 = bytes.decode   # UTF-8 is the default, and strict


def read_block_lines(path: str, start: int, end: int, decode: bool = True) -> tuple[list, int]:
    """The lines owned by ``[start, end)`` (without ``\\n``) and the bytes read.

    Lines are ``str`` when the block is valid UTF-8, ``bytes`` otherwise so that the
    encoder can name the bad line. ``decode=False``: always ``bytes``, for the
    encoder, whose JSON parser reads UTF-8 itself (``sample_lines.LineParser``).
    """
    if end <= start and start > 0:
        return [], 0
    with storage.open_read(path) as f:
        if start > 0:
            f.seek(start - 1)
            data = f.read(end - start + 1)
            cut = data.find(b"\n")
            if cut < 0 or start + cut >= end:  # the next line starts at or after end
                return [], len(data)
            data = data[cut + 1:]
        else:
            data = f.read(end)
        nbytes = len(data)
        if data and not data.endswith(b"\n"):
            tail = []
            while True:
                more = f.read(_READ_AHEAD)
                if not more:
                    break
                cut = more.find(b"\n")
                if cut >= 0:
                    tail.append(more[:cut + 1])
                    break
                tail.append(more)
            if tail:
                data += b"".join(tail)
                nbytes += sum(len(t) for t in tail)
    return _lines(data, decode), nbytes


def read_stream_blocks(path: str, block_size: int, decode: bool = True):
    """``(start, end, lines)`` of consecutive blocks of a file read from its start
    (decompressed as its name says), each about ``block_size`` bytes and ending at a
    line end; offsets are in the decompressed bytes. An empty file is one empty block.
    """
    with storage.open_decompressed(path) as f:
        start, pending = 0, []
        while True:
            try:
                chunk = f.read(block_size)
            except storage.CompressedDataError:
                # The whole lines read before the damage are the file's, numbered as such.
                block = b"".join(pending)
                cut = block.rfind(b"\n") + 1
                if cut or start == 0:
                    yield start, start + cut, _lines(block[:cut], decode)
                raise
            if not chunk:
                block = b"".join(pending)
                if block or start == 0:
                    yield start, start + len(block), _lines(block, decode)
                return
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:              # a line longer than a block: read on
                pending.append(chunk)
                continue
            block = b"".join(pending + [chunk[:cut]]) if pending else chunk[:cut]
            pending = [chunk[cut:]] if cut < len(chunk) else []
            yield start, start + len(block), _lines(block, decode)
            start += len(block)


def looks_compressed(head: bytes) -> Optional[tuple[str, str]]:
    """``(format, extension)`` when ``head`` (a file's first bytes) starts like a
    compressed file, else None."""
    for magic, kind, extension in MAGIC:
        if head.startswith(magic):
            return kind, extension
    return None


def _lines(data: bytes, decode: bool) -> list:
    """The lines of ``data`` (whole lines, the last one with or without its ``\n``)."""
    if not data:
        return []
    # A CRLF ending is JSON whitespace after the value (or part of a blank line) and can
    # never be inside a valid value, so dropping the "\r" changes no sample and no error;
    # it lets CRLF files take the encoder's fast path for clean lines.
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    parts = (data[:-1] if data.endswith(b"\n") else data).split(b"\n")
    if not decode:
        return parts
    # Split first, then decode line by line: three times faster than decoding the block
    # and splitting the text (no block-wide string of the widest character kind).
    try:
        return list(map(_decode_utf8, parts))
    except UnicodeDecodeError:
        return parts
