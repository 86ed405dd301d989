"""Which inputs are compressed, by name and by their first bytes (pure).

A file's compression is declared by its extension, exactly as Beam's
``CompressionTypes.detect_compression_type`` reads it (``tests`` compare the two), so
the plan, the encoder, ``verify --tokenizer`` and the storage layer agree on it without
importing Beam. A compressed file named as plain JSONL is recognised by its magic bytes
(no valid JSONL line starts with any of them) and refused with the spec's error.
"""

from __future__ import annotations

from typing import Optional

UNCOMPRESSED = "uncompressed"

#: Extension (lower case) to compression kind, in the order Beam tries them.
_BY_SUFFIX = ((".bz2", "bzip2"), (".deflate", "deflate"), (".gz", "gzip"), (".zst", "zstd"),
              (".zstd", "zstd"), (".xz", "lzma"), (".lzma", "lzma"))

#: Leading bytes of the compressed formats, for a compressed file named as plain JSONL.
MAGIC = (
    (b"\x1f\x8b", "gzip", ".gz"),
    (b"BZh", "bzip2", ".bz2"),
    (b"\xfd7zXZ\x00", "xz", ".xz"),
    (b"\x28\xb5\x2f\xfd", "zstd", ".zst"),
)

#: Text bytes assumed per byte of a compressed input, to size the work on it before it
#: is read (a guess changes the work's split, never the output).
COMPRESSION_RATIO = 4


def compression(path: str) -> str:
    """The compression a file's name declares: ``gzip``, ``bzip2``, ``zstd``, ``lzma``
    (``.xz`` and ``.lzma``), ``deflate``; otherwise ``uncompressed``."""
    lowered = path.lower()
    for suffix, kind in _BY_SUFFIX:
        if lowered.endswith(suffix):
            return kind
    return UNCOMPRESSED


def is_compressed(path: str) -> bool:
    return compression(path) != UNCOMPRESSED


def looks_compressed(head: bytes) -> Optional[tuple[str, str]]:
    """``(format, extension)`` when ``head`` (a file's first bytes) starts like a
    compressed file, else None."""
    for magic, kind, extension in MAGIC:
        if head.startswith(magic):
            return kind, extension
    return None
