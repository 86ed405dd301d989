"""``s3://`` one level below Beam's ``FileSystems``, through this thread's client.

``FileSystems`` builds a new ``S3FileSystem`` (a new boto3 session and client, about
0.15 s of CPU) for every call, which costs more than the tokenization for a build of
many blocks. Here a read is one ranged GET (:class:`S3Reader`), a small file one PUT
(:func:`s3_write`), and a run of ranges a few GETs in flight (:func:`s3_read_ranges`).

Every request goes through :func:`clients.s3_client` (a bounded retry budget,
``clients.S3_ATTEMPTS``) and every failure it gives up on is the store's own answer,
``errors.StoreRequestError`` naming the request and the path (:func:`translated`).
Beam's S3 client is not used for these requests: it retries a 500 for minutes with
its own backoff on top of boto3's, and it turns a dropped connection or a timeout into
``AttributeError: 'NoneType' object has no attribute 'get'`` (its status lookup,
``get_http_error_code``, reads ``exc.response``, which botocore's connection errors
set to None), which its retry filter then retries as well.
"""

from __future__ import annotations

import contextlib
import itertools
import os

from mintdim_beam.errors import StoreRequestError
from mintdim_beam.storage.clients import s3_client

MIME = "application/octet-stream"

#: The HTTP request each S3 operation is, for the error's text.
_METHODS = {"PutObject": "PUT", "CopyObject": "PUT", "UploadPart": "PUT", "UploadPartCopy": "PUT",
            "CreateMultipartUpload": "POST", "CompleteMultipartUpload": "POST", "DeleteObjects": "POST",
            "AbortMultipartUpload": "DELETE", "DeleteObject": "DELETE", "GetObject": "GET",
            "HeadObject": "HEAD", "ListObjectsV2": "GET"}
_MISSING = ("NoSuchKey", "404", "NotFound")


def split(path: str) -> tuple:
    """``(bucket, key)`` of an ``s3://`` path."""
    bucket, _, key = path[len("s3://"):].partition("/")
    return bucket, key


def store_error(exc: BaseException, path: str, api: str = "") -> StoreRequestError:
    """The job error for a failed request: the store's status, code and message (or
    the connection's failure, status 0), the request and the path."""
    response = getattr(exc, "response", None) or {}
    api = getattr(exc, "operation_name", None) or api or "request"
    meta = response.get("ResponseMetadata", {})
    error = response.get("Error", {})
    status = int(meta.get("HTTPStatusCode") or 0)
    code = str(error.get("Code") or (status and "") or type(exc).__name__)
    reason = str(error.get("Message") or (exc if not status else "") or "")
    attempts = int(meta.get("RetryAttempts", 0)) + 1 if meta else _attempts(exc)
    return StoreRequestError(_METHODS.get(api, api), path, api, status, code, reason, attempts)


def _attempts(exc: BaseException) -> int:
    """A connection failure carries no count of attempts: it is raised once the budget
    is spent (any other error of botocore is not retried)."""
    from botocore import exceptions as bx
    from mintdim_beam.storage.clients import S3_ATTEMPTS

    retried = (bx.ConnectionError, bx.HTTPClientError, bx.ConnectionClosedError, bx.ReadTimeoutError)
    return S3_ATTEMPTS if isinstance(exc, retried) else 1


@contextlib.contextmanager
def translated(path: str, api: str = ""):
    """Run requests for ``path``; a failure botocore gives up on leaves as
    :class:`StoreRequestError` (``api``: the request, where the failure does not name it)."""
    from botocore import exceptions as bx

    try:
        yield
    except (bx.ClientError, bx.BotoCoreError) as exc:
        raise store_error(exc, path, api) from None


def is_missing(exc: StoreRequestError) -> bool:
    return exc.status == 404 or exc.code in _MISSING


def request(api: str, path: str, **params):
    """One request of this thread's client by its operation name (``PutObject``), for
    ``path``: its answer, or the :class:`StoreRequestError` that says why not."""
    name = "".join("_" + c.lower() if c.isupper() else c for c in api).lstrip("_")
    with translated(path, api):
        return getattr(s3_client(), name)(**params)


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
        self._path = path
        self._bucket, self._key = split(path)
        self._client = client if client is not None else s3_client()
        self._readahead = readahead
        self._pos = 0
        self._size = None                   # known from the first answer's Content-Range
        self._buffer, self._buffer_at = b"", 0

    def _get(self, start: int, length) -> bytes:
        if length == 0 or (self._size is not None and start >= self._size):
            return b""
        span = f"bytes={start}-" if length is None else f"bytes={start}-{start + length - 1}"
        try:
            with translated(self._path, "GetObject"):
                answer = self._client.get_object(Bucket=self._bucket, Key=self._key, Range=span)
        except StoreRequestError as exc:
            if exc.code == "InvalidRange":      # at or past the end (or an empty object)
                self._size = start if self._size is None else self._size
                return b""
            if is_missing(exc):
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
                self._size = s3_size_or_none(self._path)
                if self._size is None:
                    raise FileNotFoundError(f"{self._path}: no such object")
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
    bucket, key = split(path)
    try:
        return request("HeadObject", path, Bucket=bucket, Key=key)["ContentLength"]
    except StoreRequestError as exc:
        if is_missing(exc):
            return None
        raise


def s3_list(prefix: str) -> list:
    """``[(path, size)]`` of every object whose path starts with ``prefix`` (1,000 a request)."""
    bucket, key = split(prefix)
    found = []
    with translated(prefix, "ListObjectsV2"):
        for page in s3_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            found += [(f"s3://{bucket}/{item['Key']}", item["Size"]) for item in page.get("Contents", [])]
    return found


def s3_delete(path: str) -> None:
    """Remove one object (S3 answers a missing one as deleted)."""
    bucket, key = split(path)
    request("DeleteObject", path, Bucket=bucket, Key=key)


def s3_delete_many(paths: list) -> None:
    """Remove objects, 1,000 a request; an object the store refused to delete is a
    :class:`StoreRequestError` naming it, with the store's answer for it."""
    for first in range(0, len(paths), 1000):
        batch = paths[first:first + 1000]
        bucket = split(batch[0])[0]
        answer = request("DeleteObjects", batch[0], Bucket=bucket,
                         Delete={"Objects": [{"Key": split(p)[1]} for p in batch], "Quiet": True})
        for failed in answer.get("Errors", []):
            raise StoreRequestError("DELETE", f"s3://{bucket}/{failed.get('Key', '')}", "DeleteObjects", 200,
                                    str(failed.get("Code", "")), str(failed.get("Message", "")), 1)


def s3_rename(src: str, dst: str) -> None:
    """A server-side copy, then the source removed. boto3's managed copy: one
    ``CopyObject`` up to its multipart threshold, ``UploadPartCopy`` parts above (an
    object over 5 GiB cannot be one copy)."""
    (src_bucket, src_key), (bucket, key) = split(src), split(dst)
    with translated(dst, "CopyObject"):
        s3_client().copy({"Bucket": src_bucket, "Key": src_key}, bucket, key)
    s3_delete(src)


#: An ``s3://`` file of at most this many bytes is one PUT; a larger one is a multipart
#: upload of parts of at least this many bytes (S3's least is 5 MiB).
SINGLE_PUT = 8 << 20


def s3_write(path: str, chunks, sha) -> int:
    """``write_bytes`` on ``s3://``: a small file (spills, index parts and summaries of
    a build of many small blocks) in one request instead of a multipart upload's three;
    a larger one as a multipart upload of parts of at least ``SINGLE_PUT`` bytes, aborted
    if it fails (the object then never appears)."""
    bucket, key = split(path)
    held = bytearray()      # copied: a chunk may be a view of a buffer its maker reuses
    for chunk in chunks:
        held += chunk
        if len(held) > SINGLE_PUT:
            break
    else:
        request("PutObject", path, Bucket=bucket, Key=key, Body=bytes(held), ContentType=MIME)
        if sha is not None:
            sha.update(held)
        return len(held)
    upload = request("CreateMultipartUpload", path, Bucket=bucket, Key=key, ContentType=MIME)["UploadId"]
    parts, written = [], 0
    try:
        def send(data) -> None:
            answer = request("UploadPart", path, Bucket=bucket, Key=key, UploadId=upload,
                             PartNumber=len(parts) + 1, Body=bytes(data))
            parts.append({"PartNumber": len(parts) + 1, "ETag": answer["ETag"]})

        for chunk in itertools.chain([b""], chunks):
            held += chunk
            if len(held) >= SINGLE_PUT:     # a part: at least 5 MiB, any size above
                send(held)
                written += len(held)
                if sha is not None:
                    sha.update(held)
                held = bytearray()
        if held:
            send(held)
            written += len(held)
            if sha is not None:
                sha.update(held)
        request("CompleteMultipartUpload", path, Bucket=bucket, Key=key, UploadId=upload,
                MultipartUpload={"Parts": parts})
    except BaseException:
        with contextlib.suppress(StoreRequestError):
            request("AbortMultipartUpload", path, Bucket=bucket, Key=key, UploadId=upload)
        raise
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
