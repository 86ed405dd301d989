"""Concatenate staged files into one without passing their bytes through the worker.

Publishing writes each index file as the concatenation of its blocks' parts, in block
order. Finalize runs on one worker, so at a terabyte of input, streaming hundreds of GB
of parts through Python there would dominate the build. Where the store can copy on
its own side, the worker only asks it to:

* local files: the kernel copies (``os.copy_file_range``, in ``storage.write_ranges``);
* ``s3://``: one multipart upload whose parts are server-side copies of the sources
  (``upload_part_copy``), through this thread's boto3 client and its bounded retries
  (:func:`clients.s3_client`; a failure is the store's answer, ``StoreRequestError``);
* ``gs://``: ``compose`` requests (google-cloud-storage's ``Blob.compose``), through a
  client made as Beam's GCS file system makes its own (:func:`storage.gcs_client`);
* anything else, or sources in another bucket: the bytes are read and written
  (``storage.write_ranges``).

S3 takes at most 10,000 parts of 5 MiB to 5 GiB each, the last one excepted. A source
of at least 5 MiB is one copied part (or several of at most 5 GiB); consecutive
smaller sources are read and uploaded together as one part once they reach 5 MiB, and
a run of them still under 5 MiB when a large source follows is completed from the
head of that source (its remainder copied when that is still 5 MiB or more, else the
whole source read). So the worker moves, besides the requests, the bytes of the
sources under 5 MiB plus at most 10 MiB per run of them: nothing at all when every
part is 5 MiB or more. A list that would need more than 10,000 parts is composed in
a tree: groups into intermediate objects (next to the sources, removed after), then
those.

GCS composes at most 32 sources a request, of any size: more are composed in a tree
(:func:`plan_compose`), groups of 32 into intermediate objects next to the sources,
then those, each level's requests in parallel and every intermediate deleted once the
next level is made. About n/31 requests for n parts, and no index byte goes through
the worker but the read below. Where Beam's GCS support (``apache-beam[gcp]``) is
not installed, ``gs://`` parts are streamed.

``SHA256SUMS`` needs each index file's sha256, which cannot be composed from its
parts': after a server-side composition the published object is read once (a
download, no upload). On S3, when no source reaches 5 MiB (the default 4 MiB blocks
give index parts well under that) there is nothing for the store to copy, and the
parts are streamed as before, hashed on their one way through. At scale,
``index_layout: parts`` moves no index byte at all.
"""

from __future__ import annotations

import posixpath
import uuid
from concurrent.futures import ThreadPoolExecutor

from mintdim_beam.storage import files as storage
from mintdim_beam.storage import clients
from mintdim_beam.storage.s3 import s3_delete_many, translated

MIN_PART = 5 << 20            # S3: every part but the last is at least 5 MiB
MAX_PART = 5 << 30            # ... and at most 5 GiB
MAX_PARTS = 10_000
THREADS = 8                   # copy requests in flight (boto3 keeps 10 connections a client)
MAX_COMPOSE = 32              # GCS: sources of one compose request
MIME = "application/octet-stream"
READ_CHUNK = 8 << 20          # bytes a ranged read of a composed object, for its sha256


def concatenate(path: str, sources: list, sha=None, max_parts: int = MAX_PARTS, gcs=None,
                max_compose: int = MAX_COMPOSE) -> int:
    """Write ``path`` as the concatenation of the files ``sources``, in order; return
    its size. ``sha`` (a ``hashlib`` object) is fed the result's bytes: on S3 and GCS
    that is a read of the published object, since sha256 cannot be composed from the
    parts'. ``max_parts`` bounds the parts of one multipart upload and ``max_compose``
    the sources of one GCS compose request (the stores' limits unless a test asks for
    a tree with fewer). ``gcs``: the ``google.cloud.storage`` client for ``gs://``
    (default: :func:`storage.gcs_client`, from the job's options).
    """
    if path.startswith("gs://") and all(s.startswith(f"gs://{_split(path)[0]}/") for s in sources):
        client = gcs if gcs is not None else clients.gcs_client()
        if client is not None:   # else Beam's GCS support is not installed: stream
            return _gcs_concatenate(client, path, list(sources), sha, max_compose)
    if path.startswith("s3://") and sources and all(s.startswith("s3://") for s in sources):
        sizes = _sizes(clients.s3_client(), list(sources))
        if any(part[0] == "copy" for part in plan_parts([sizes[s] for s in sources])):
            with translated(path):
                written = _s3_concatenate(path, list(sources), max_parts)
            if sha is not None:
                for chunk in storage.iter_chunks(path):
                    sha.update(chunk)
            return written
        # Every part under 5 MiB: nothing for the store to copy, and streaming hashes
        # the bytes on their one way through, where a multipart upload would need
        # them read again for the hash.
    return storage.write_ranges(path, [(src, 0, None) for src in sources], sha=sha)


def move(pairs: list) -> None:
    """Rename each ``(source, target)`` pair; a source that is gone was moved by an
    earlier attempt and is skipped.

    On ``s3://`` a rename is a server-side copy and a delete: one listing finds the
    sources, ``copy_object`` calls go out a few at a time through one client, and the
    sources are deleted 1,000 a request (an object over 5 GiB goes through boto3's
    managed, multipart copy: ``storage.rename``). Elsewhere each is ``storage.rename`` (a local ``os.replace``).
    """
    if not pairs:
        return
    if not all(src.startswith("s3://") and dst.startswith("s3://") for src, dst in pairs):
        for src, dst in pairs:
            if storage.exists(src):
                storage.rename(src, dst)
        return
    client = clients.s3_client()
    found = _listing(client, [src for src, _ in pairs])
    here = [(src, dst) for src, dst in pairs if src in found]

    def copy(pair):
        src, dst = pair
        if found[src] > MAX_PART:
            storage.rename(src, dst)
            return None
        (src_bucket, src_key), (bucket, key) = _split(src), _split(dst)
        with translated(dst, "CopyObject"):
            client.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": src_bucket, "Key": src_key})
        return src

    with ThreadPoolExecutor(max_workers=min(THREADS, len(here) or 1)) as pool:
        copied = [src for src in pool.map(copy, here) if src is not None]
    if copied:
        s3_delete_many(copied)


# --------------------------------------------------------------------------- S3


def _split(path: str) -> tuple:
    """``(bucket, key)`` of an ``s3://`` or ``gs://`` path."""
    bucket, _, key = path.split("://", 1)[1].partition("/")
    return bucket, key


def _listing(client, sources: list) -> dict:
    """``{path: size}`` of the objects in the sources' directories (1,000 a request)."""
    found: dict = {}
    for prefix in dict.fromkeys(posixpath.dirname(s) + "/" for s in sources):
        bucket, key = _split(prefix)
        with translated(prefix, "ListObjectsV2"):
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
                for item in page.get("Contents", []):
                    found[f"s3://{bucket}/{item['Key']}"] = item["Size"]
    return found


def _sizes(client, sources: list) -> dict:
    """Size of every source; a missing one is an error."""
    found = _listing(client, sources)
    missing = [s for s in sources if s not in found]
    if missing:
        raise FileNotFoundError(f"{missing[0]}: no such object to concatenate")
    return found


def plan_parts(sizes: list) -> list:
    """The parts of a multipart upload that concatenates sources of these ``sizes``.

    Each part is ``("copy", i, start, end)`` (a server-side copy of source ``i``'s
    bytes ``start:end``) or ``("upload", [(i, start, end), ...])`` (ranges read and
    uploaded as one part). Every part but the last is MIN_PART to MAX_PART bytes.
    """
    parts: list = []
    pending: list = []
    held = 0

    def flush():
        nonlocal pending, held
        if pending:
            parts.append(("upload", pending))
        pending, held = [], 0

    for i, size in enumerate(sizes):
        if size == 0:
            continue
        start = 0
        if size < MIN_PART:
            pending.append((i, 0, size))
            held += size
            if held >= MIN_PART:
                flush()
            continue
        if pending:
            need = MIN_PART - held
            if size - need >= MIN_PART:
                pending.append((i, 0, need))
                start = need
                flush()
            else:                                     # under 10 MiB: read it whole
                pending.append((i, 0, size))
                flush()
                continue
        count = -(-(size - start) // MAX_PART)
        step = -(-(size - start) // count)
        for a in range(start, size, step):
            parts.append(("copy", i, a, min(size, a + step)))
    flush()
    return parts


def _s3_concatenate(path: str, sources: list, max_parts: int) -> int:
    client = clients.s3_client()
    found = _sizes(client, sources)
    sizes = [found[s] for s in sources]
    parts = plan_parts(sizes)
    if len(parts) > max_parts:
        return _s3_tree(client, path, sources, sizes, max_parts)
    bucket, key = _split(path)
    if not parts:
        client.put_object(Bucket=bucket, Key=key, Body=b"")
        return 0
    upload = client.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/octet-stream")
    upload_id = upload["UploadId"]

    def send(numbered):
        number, part = numbered
        if part[0] == "copy":
            _, i, start, end = part
            src_bucket, src_key = _split(sources[i])
            answer = client.upload_part_copy(
                Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                CopySource={"Bucket": src_bucket, "Key": src_key}, CopySourceRange=f"bytes={start}-{end - 1}")
            return {"PartNumber": number, "ETag": answer["CopyPartResult"]["ETag"]}
        body = b"".join(_read(client, sources[i], start, end) for i, start, end in part[1])
        answer = client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body)
        return {"PartNumber": number, "ETag": answer["ETag"]}

    try:
        with ThreadPoolExecutor(max_workers=min(THREADS, len(parts))) as pool:
            done = list(pool.map(send, enumerate(parts, start=1)))
        client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                         MultipartUpload={"Parts": done})
    except BaseException:
        client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        raise
    return sum(sizes)


def _read(client, path: str, start: int, end: int) -> bytes:
    bucket, key = _split(path)
    body = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}")["Body"].read()
    if len(body) != end - start:
        raise EOFError(f"{path}: {end} bytes expected, {start + len(body)} found")
    return body


def _s3_tree(client, path: str, sources: list, sizes: list, max_parts: int) -> int:
    """Too many parts for one upload: compose groups into intermediate objects, then those."""
    group = max(2, max_parts // 2)     # a group of sources needs at most about as many parts
    scratch = f"{posixpath.dirname(sources[0])}/.compose-{uuid.uuid4().hex}"
    middle = []
    try:
        for g, first in enumerate(range(0, len(sources), group)):
            middle.append(f"{scratch}-{g:05d}")
            _s3_concatenate(middle[-1], sources[first:first + group], max_parts)
        return _s3_concatenate(path, middle, max_parts)
    finally:
        for m in middle:
            storage.delete(m)


# --------------------------------------------------------------------------- GCS


def plan_compose(count: int, fan_in: int = MAX_COMPOSE) -> list:
    """The levels of compose requests that join ``count`` objects into one.

    Each level is a list of ``(start, end)`` ranges over the previous level's objects
    (the sources, for the first level), in order; a range of two or more objects is
    one compose request making one new object, a range of one is that object carried
    to the next level as it is. The last level is a single range: the result (composed
    even when it is one object, which then is copied). Requests: about
    ``count / (fan_in - 1)``; levels: ``ceil(log(count, fan_in))``.
    """
    if fan_in < 2:
        raise ValueError(f"a compose request joins at least 2 objects, not {fan_in}")
    levels: list = []
    n = count
    while n > 0:
        groups = [(a, min(n, a + fan_in)) for a in range(0, n, fan_in)]
        levels.append(groups)
        if len(groups) == 1:
            break
        n = len(groups)
    return levels


def _gcs_concatenate(client, path: str, sources: list, sha, max_compose: int) -> int:
    from google.api_core.exceptions import NotFound
    from google.cloud.storage.retry import DEFAULT_RETRY

    bucket_name, key = _split(path)
    bucket = client.bucket(bucket_name)
    found = _gcs_listing(client, sources)
    missing = [s for s in sources if s not in found]
    if missing:
        raise FileNotFoundError(f"{missing[0]}: no such object to concatenate")
    total = sum(found[s] for s in sources)
    if not sources:
        target = bucket.blob(key)
        target.upload_from_string(b"", content_type=MIME)
        return 0
    folder = posixpath.dirname(_split(sources[0])[1])
    scratch = f"{folder}/.compose-{uuid.uuid4().hex}" if folder else f".compose-{uuid.uuid4().hex}"
    current = [_split(s)[1] for s in sources]        # object names of the level's inputs
    made: set = set()                                  # intermediates not deleted yet

    def compose(job):
        name, names = job
        blob = bucket.blob(name)
        blob.content_type = MIME
        # Composing the same unchanged sources again makes the same object: safe to retry.
        blob.compose([bucket.blob(n) for n in names], retry=DEFAULT_RETRY)
        return blob

    def remove(name):
        try:
            bucket.blob(name).delete(retry=DEFAULT_RETRY)
        except NotFound:
            pass

    levels = plan_compose(len(current), max_compose)
    try:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            for depth, groups in enumerate(levels):
                last = depth == len(levels) - 1
                jobs, following = [], []
                for g, (a, b) in enumerate(groups):
                    if b - a == 1 and not last:
                        following.append(current[a])
                        continue
                    name = key if last else f"{scratch}-{depth}-{g:05d}"
                    jobs.append((name, current[a:b]))
                    following.append(name)
                results = list(pool.map(compose, jobs))
                made.update(name for name, _ in jobs if not last)
                kept = set(following)        # an object carried to the next level as it is
                spent = [n for n in current if n in made and n not in kept]
                list(pool.map(remove, spent))
                made.difference_update(spent)
                current = following
    finally:
        for name in made:
            remove(name)
    target = results[-1]
    if target.size is not None and target.size != total:
        raise OSError(f"{path}: composed {target.size} bytes, its sources hold {total}")
    if sha is not None:
        for start in range(0, total, READ_CHUNK):
            end = min(total, start + READ_CHUNK)
            chunk = target.download_as_bytes(start=start, end=end - 1)
            if len(chunk) != end - start:
                raise EOFError(f"{path}: {end} bytes expected, {start + len(chunk)} found")
            sha.update(chunk)
    return total


def _gcs_listing(client, sources: list) -> dict:
    """``{path: size}`` of the objects in the sources' directories (one listing each)."""
    found: dict = {}
    for prefix in dict.fromkeys(posixpath.dirname(s) + "/" for s in sources):
        bucket, key = _split(prefix)
        for blob in client.list_blobs(bucket, prefix=key):
            found[f"gs://{bucket}/{blob.name}"] = blob.size
    return found
