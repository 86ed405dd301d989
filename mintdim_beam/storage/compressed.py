"""Compressed inputs, decompressed as a stream that must reach its end mark.

Which files are compressed is decided by name (``format.inputs.compression``); this
module only reads them. A compressed stream can only be read from its start, so this
is for sequential reads; :func:`mintdim_beam.storage.files.open_read` gives the stored
bytes (for hashing and byte ranges).
"""

from __future__ import annotations

from mintdim_beam.storage.files import SEQUENTIAL, open_read

#: Compressed bytes given to a zstd decoder at once: zstd can expand a byte to about
#: 32 KiB, so 4 KiB bound one call's output to about 128 MiB.
_ZSTD_INPUT = 4096

class CompressedDataError(ValueError):
    """A compressed input is corrupt, or (``truncated``) ends before its compressed
    stream does; ``detail``: the decompressor's own words, if any."""

    def __init__(self, truncated: bool, detail: str = ""):
        super().__init__("truncated" if truncated else f"corrupt ({detail})")
        self.truncated, self.detail = truncated, detail


def open_decompressed(path: str, kind: str):
    """A file's content, decompressed as ``kind`` says (``format.inputs.compression``
    of its name; ``"uncompressed"``: the file as it is)."""
    if kind == "uncompressed":
        return open_read(path, readahead=SEQUENTIAL)
    return _Decompressed(open_read(path, readahead=SEQUENTIAL), kind)


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
        if kind == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if kind == "deflate":
            return zlib.decompressobj()
        if kind == "bzip2":
            return bz2.BZ2Decompressor()
        if kind == "lzma":
            return lzma.LZMADecompressor()     # .xz and the older .lzma format alike
        if kind == "zstd":
            import zstandard

            # The window Beam allows too: frames written with --long need more than the default.
            return zstandard.ZstdDecompressor(max_window_size=1 << 31).decompressobj()
        raise ValueError(f"unsupported compression {kind!r}")

    def _fill(self) -> None:
        """Decompress about one chunk more. The output of one call is bounded
        (``max_length``; zstd, which has none, is fed a little input at a time), so a
        small file that expands to gigabytes is read as it is asked for, never held."""
        decoder = self._decoder
        try:
            if decoder is not None and self._kind in ("bzip2", "lzma") and not decoder.needs_input:
                self._out += decoder.decompress(b"", self._chunk)     # output held back by the bound
                self._end_member()
                return
            if self._pending:
                data, self._pending = self._pending, b""
            else:
                data = self._raw.read(self._chunk)
            if not data:
                if decoder is not None:
                    raise CompressedDataError(truncated=True)
                self._done = True
                return
            if decoder is None and self._members and self._kind == "gzip":
                data = data.lstrip(b"\x00")   # padding after a member, as Python's gzip reads it
                if not data:
                    return
            if decoder is None:
                decoder = self._decoder = self._new_decoder()
            if self._kind == "zstd":
                self._out += decoder.decompress(data[:_ZSTD_INPUT])
                self._pending = data[_ZSTD_INPUT:]
            else:
                self._out += decoder.decompress(data, self._chunk)
                self._pending = getattr(decoder, "unconsumed_tail", b"")   # zlib: input not taken yet
        except CompressedDataError:
            raise
        except Exception as exc:   # zlib.error, OSError (bz2), LZMAError, ZstdError: all say "corrupt"
            raise CompressedDataError(truncated=False, detail=str(exc)) from None
        self._end_member()

    def _end_member(self) -> None:
        """After a stream's end mark: what follows it is the next stream (or padding)."""
        if self._decoder.eof:
            self._pending = self._decoder.unused_data + self._pending
            self._decoder = None
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
