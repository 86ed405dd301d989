"""Every byte the build reads or writes goes through Beam's ``FileSystems``.

That is what makes local paths, ``gs://`` and ``s3://`` interchangeable for inputs,
tokenizer files and outputs. The helpers here add the few things the build needs on top:
ranged reads, whole-file writes that never expose a half-written file under its final
name, and listing a directory.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterable

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_RAW = CompressionTypes.UNCOMPRESSED


def is_local(path: str) -> bool:
    return "://" not in path


def join(base: str, *parts: str) -> str:
    return FileSystems.join(base, *parts)


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def size(path: str) -> int:
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes


def read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=_RAW) as f:
        return f.read()


def read_range(path: str, start: int, length: int) -> bytes:
    with FileSystems.open(path, compression_type=_RAW) as f:
        f.seek(start)
        return f.read(length)


def open_read(path: str):
    return FileSystems.open(path, compression_type=_RAW)


def write_bytes(path: str, chunks: Iterable[bytes] | bytes) -> int:
    """Write a whole file; a reader never sees it half-written under ``path``.

    Locally the bytes go to a unique temporary name first and are renamed over
    ``path``; object stores publish an object only when its upload completes.
    Rewriting the same path with the same bytes (a retried bundle) is harmless.
    """
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        chunks = [chunks]
    target = path
    if is_local(path):
        target = f"{path}.tmp-{uuid.uuid4().hex}"
    written = 0
    with FileSystems.create(target, mime_type="application/octet-stream", compression_type=_RAW) as f:
        for chunk in chunks:
            f.write(chunk)
            written += len(chunk)
    if target != path:
        os.replace(target, path)
    return written


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def list_files(directory: str) -> list[str]:
    """Paths of every file under ``directory`` (recursively); [] when it is absent."""
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
    else:
        FileSystems.rename([src], [dst])


def delete_tree(directory: str) -> None:
    """Remove ``directory`` and everything below it (no error when absent)."""
    if is_local(directory):
        import shutil
        shutil.rmtree(directory, ignore_errors=True)
        return
    paths = list_files(directory)
    if paths:
        FileSystems.delete(paths)
