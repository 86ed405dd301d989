"""Lines of JSONL files read by byte-range blocks, or as a stream from the start.

A block owns every line that *starts* inside ``[start, end)`` (``core.blocks`` plans
them). Reading a block seeks to ``start - 1`` and skips to the first line start, then
reads on past ``end`` to finish its last line, so every line is read by exactly one
block whatever the block size. A compressed file cannot be entered at an offset: it is
read from its start (:func:`read_stream_blocks`) and cut into blocks at line ends as it
goes, memory bounded by the block size rather than by the file.
"""

from __future__ import annotations

from mintdim_beam.storage.compressed import CompressedDataError, open_decompressed
from mintdim_beam.storage.files import open_read

_READ_AHEAD = 1 << 16

#: The longest line a build reads, in bytes (its newline aside), the same on every
#: runner. A longer one stops the build (``LineTooLongError``, reported as the spec's
#: ``SourceParseError`` naming file and line): a line is held whole while it is
#: parsed, and a line without end (a decompression bomb of one character) would
#: otherwise be held until the worker runs out of memory.
MAX_LINE_BYTES = 1 << 30


class LineTooLongError(ValueError):
    """A line longer than ``MAX_LINE_BYTES``; ``lines_before``: the whole lines before
    it in what was being read (the block, or the stream from its start)."""

    def __init__(self, lines_before: int):
        super().__init__(f"a line longer than {MAX_LINE_BYTES} bytes")
        self.lines_before = lines_before


def busy_blocks(files: list, block_size: int, enough: int = 2) -> int:
    """How many blocks of ``files`` (``(path, size, compressed)``, as ``core.blocks``
    plans them) own a line, counted up to ``enough``.

    A file's first block owns its first line when the file is not empty, and a
    compressed file's one block counts once. A later block owns a line when a line
    starts inside it: from the end of a block that owns one, the file is read up to the
    next newline, so a normal file is decided by reading one line, and a file of one
    huge line by reading it (as the build does anyway). Used to run the local default
    on worker processes only when at least two blocks have work (one huge line is one
    busy block: a second process would only add its fixed cost).
    """
    count = 0
    for path, total, compressed in files:
        if total <= 0:
            continue
        count += 1
        if count >= enough:
            return count
        if compressed:
            continue
        with open_read(path) as f:
            at = block_size - 1      # the last byte of block 0
            while at < total - 1:
                f.seek(at)
                newline = _next_newline(f, at)
                if newline < 0 or newline >= total - 1:
                    break   # no line starts after it
                count += 1   # the line starting at newline + 1 belongs to that byte's block
                if count >= enough:
                    return count
                at = ((newline + 1) // block_size + 1) * block_size - 1
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


_decode_utf8 = bytes.decode   # UTF-8 is the default, and strict


def read_block_lines(path: str, start: int, end: int, decode: bool = True) -> tuple[list, int]:
    """The lines owned by ``[start, end)`` (without ``\\n``) and the bytes read.

    Lines are ``str`` when the block is valid UTF-8, ``bytes`` otherwise so that the
    encoder can name the bad line. ``decode=False``: always ``bytes``, for the
    encoder, whose JSON parser reads UTF-8 itself (``sample_lines.LineParser``).
    """
    if end <= start and start > 0:
        return [], 0
    with open_read(path) as f:
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
            last_start = data.rfind(b"\n") + 1
            held = len(data) - last_start          # bytes of the last line so far
            while True:
                more = f.read(_READ_AHEAD)
                if not more:
                    break
                held += len(more)
                if held > MAX_LINE_BYTES + 1 and b"\n" not in more:
                    raise LineTooLongError(data.count(b"\n", 0, last_start))
                cut = more.find(b"\n")
                if cut >= 0:
                    tail.append(more[:cut + 1])
                    break
                tail.append(more)
            if tail:
                data += b"".join(tail)
                nbytes += sum(len(t) for t in tail)
    return _lines(data, decode), nbytes


def read_stream_blocks(path: str, compression: str, block_size: int, decode: bool = True):
    """``(start, end, lines)`` of consecutive blocks of a file read from its start
    (decompressed as ``compression``, ``format.inputs.compression`` of its name), each about ``block_size`` bytes and ending at a
    line end; offsets are in the decompressed bytes. An empty file is one empty block.
    """
    with open_decompressed(path, compression) as f:
        start, pending, held, lines = 0, [], 0, 0
        while True:
            try:
                chunk = f.read(block_size)
            except CompressedDataError:
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
                held += len(chunk)
                if held > MAX_LINE_BYTES + 1:
                    raise LineTooLongError(lines)
                continue
            block = b"".join(pending + [chunk[:cut]]) if pending else chunk[:cut]
            pending = [chunk[cut:]] if cut < len(chunk) else []
            held = len(chunk) - cut
            if held > MAX_LINE_BYTES + 1:
                raise LineTooLongError(lines + block.count(b"\n"))
            lines += block.count(b"\n")
            yield start, start + len(block), _lines(block, decode)
            start += len(block)


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
