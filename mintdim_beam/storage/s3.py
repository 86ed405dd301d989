"""``s3://`` one level below Beam's ``FileSystems``, through this thread's client.

``FileSystems`` builds a new ``S3FileSystem`` (a new boto3 session and client, about
0.15 s of CPU) for every call, which costs more than the tokenization for a build of
many blocks. Here a read is one ranged GET (:class:`S3Reader`), a small file one PUT
(:func:`s3_write`), and a run of ranges a few GETs in flight (:func:`s3_read_ranges`).
"""

from __future__ import annotations

import os

from mintdim_beam.storage.clients import s3_client, thread_s3io

MIME = "application/octet-stream"

class S3Reader:
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
                self._size = thread_s3io().size(self._path)
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


def s3_size_or_none(path: str):
    """An ``s3://`` object's size, or None if it does not exist: one HEAD, where
    ``exists`` then ``size`` are two."""
    from apache_beam.io.aws.clients.s3 import messages

    try:
        return thread_s3io().size(path)
    except messages.S3ClientError as exc:
        if exc.code == 404:
            return None
        raise


#: An ``s3://`` file of at most this many bytes is one PUT; a larger one goes through
#: Beam's multipart upload (which also cannot make an empty object).
SINGLE_PUT = 8 << 20


def s3_write(path: str, chunks, sha) -> int:
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
        s3_client().put_object(Bucket=bucket, Key=key, Body=bytes(held), ContentType=MIME)
        if sha is not None:
            sha.update(held)
        return len(held)
    written = len(held)
    if sha is not None:
        sha.update(held)
    with thread_s3io().open(path, "wb", mime_type=MIME) as f:
        f.write(held)
        del held
        for chunk in chunks:
            f.write(chunk)
            written += len(chunk)
            if sha is not None:
                sha.update(chunk)
    return written


#: ``s3://`` ranges of one ``write_ranges`` fetched at once, ahead of the writer.
RANGES_IN_FLIGHT = 8


def s3_read_ranges(ranges):
    """The ranges' bytes in order, a few GETs in flight: a shard is hundreds of small
    ranges of the blocks' spills, and one GET after another would wait for each
    answer. They share this thread's client (boto3 clients are thread-safe; making one
    a thread costs 0.15 s of CPU). At most RANGES_IN_FLIGHT ranges are held."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    client = s3_client()

    def fetch(item):
        src, start, length = item
        with S3Reader(src, client=client) as f:
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
