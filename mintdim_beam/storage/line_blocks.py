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

    One read takes the byte before the block, the block and ``_READ_AHEAD`` bytes
    after it, where the last line nearly always ends; the owned lines are then split
    out of that buffer in place. Cutting the buffer to the owned bytes first, and
    appending the last line's end to it, were two more copies of every block.
    """
    if end <= start and start > 0:
        return [], 0
    with open_read(path) as f:
        head = 1 if start > 0 else 0
        if head:
            f.seek(start - 1)
        limit = end - start + head          # ``end``, as an offset into data
        data = f.read(limit + _READ_AHEAD)
        lo = 0
        if head:
            cut = data.find(b"\n", 0, limit)
            if cut < 0 or cut + 1 >= limit:  # the next line starts at or after end
                return [], min(len(data), limit)
            lo = cut + 1
        if len(data) < limit:                # the file ends inside the block
            hi = len(data)
        else:
            newline = data.find(b"\n", limit - 1)
            if newline >= 0:
                hi = newline + 1
            else:                           # a last line longer than the read-ahead
                data, hi = _finish_line(f, data, lo)
    return _lines_between(data, lo, hi, decode), hi - lo


def _finish_line(f, data: bytes, lo: int) -> tuple:
    """``data`` with the rest of its last line read on (up to its newline, or the end of
    the file), and where that line ends."""
    tail = []
    last_start = max(lo, data.rfind(b"\n") + 1)
    held = len(data) - last_start          # bytes of the last line so far
    while True:
        more = f.read(_READ_AHEAD)
        if not more:
            break
        held += len(more)
        if held > MAX_LINE_BYTES + 1 and b"\n" not in more:
            raise LineTooLongError(data.count(b"\n", lo, last_start))
        cut = more.find(b"\n")
        if cut >= 0:
            tail.append(more[:cut + 1])
            break
        tail.append(more)
    data = data + b"".join(tail)
    return data, len(data)


def _lines_between(data: bytes, lo: int, hi: int, decode: bool) -> list:
    """:func:`_lines` of ``data[lo:hi]``, where ``lo`` follows a newline (or is 0) and
    ``hi`` follows one (or is the end of ``data``), split without copying the range."""
    if lo == 0 and hi == len(data):
        return _lines(data, decode)
    if b"\r" in data or hi == lo:
        return _lines(data[lo:hi], decode)
    parts = data.split(b"\n")
    # parts[0] is what comes before lo; after hi come the parts of data[hi:] (one more
    # than its newlines), of which the empty part after a final newline is one.
    after = data.count(b"\n", hi) + 1 if hi < len(data) else int(data.endswith(b"\n"))
    return _decoded(parts[1 if lo else 0:len(parts) - after], decode)


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
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts.pop()          # the empty part after the last newline (not a copy of data less it)
    return _decoded(parts, decode)


def _decoded(parts: list, decode: bool) -> list:
    if not decode:
        return parts
    # Split first, then decode line by line: three times faster than decoding the block
    # and splitting the text (no block-wide string of the widest character kind).
    try:
        return list(map(_decode_utf8, parts))
    except UnicodeDecodeError:
        return parts
