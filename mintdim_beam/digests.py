"""Sizes and sha256 of a build's input and tokenizer files (the manifest's fingerprint).

This module imports no Beam on purpose: ``run()`` starts hashing local inputs on a
thread *before* it imports Beam, so that reading and hashing the files (which release
the GIL) overlap the import and the pipeline construction, about a second of work that
keeps one core busy. Remote paths are hashed through ``FileSystems`` by the launcher or
by a pipeline step instead.
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

from .config import BuildConfig

_CHUNK = 1 << 20


@dataclass(frozen=True)
class InputDigests:
    """Sizes and sha256 of the build's input and tokenizer files, hashed by the launcher."""

    files: dict                # path -> (size, sha256)
    seconds: float


def fingerprint_paths(config: BuildConfig) -> list[str]:
    """Every input and tokenizer file of the build, each once, sorted."""
    return sorted({f.path for f in config.files} | {f.tokenizer.path for f in config.files})


def local_file_digest(path: str) -> tuple[int, str]:
    """``(size, sha256 hex)`` of a local file."""
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                return size, sha.hexdigest()
            sha.update(chunk)
            size += len(chunk)


def _hash_local(paths: list[str]) -> InputDigests:
    started = time.monotonic()
    files = {p: local_file_digest(p) for p in paths}
    return InputDigests(files, round(time.monotonic() - started, 3))


def start_local(config: BuildConfig) -> Optional[Future]:
    """Hash every file on a background thread when all are local; else None."""
    paths = fingerprint_paths(config)
    if any("://" in p for p in paths):
        return None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hash-inputs")
    future = pool.submit(_hash_local, paths)
    pool.shutdown(wait=False)
    return future
