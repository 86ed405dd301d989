"""Which files make a build's input fingerprint, and their sizes and sha256 once hashed.

Pure on purpose: the launcher (a thread, while it builds the pipeline) or a pipeline step
(``transforms.HashInputs`` on remote runners) does the hashing through
``storage.file_digest``; this module only names the files and carries the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from mintdim_beam.core.config import BuildConfig
from mintdim_beam.tokenization.special_tokens import locate


@dataclass(frozen=True)
class InputDigests:
    """Sizes and sha256 of the build's input and tokenizer files, hashed by the launcher."""

    files: dict                # path -> (size, sha256)
    seconds: float


def fingerprint_paths(config: BuildConfig, exists: Optional[Callable[[str], bool]] = None) -> list[str]:
    """Every input and tokenizer file of the build, each once, sorted: a tokenizer entry
    stands for its file (a folder's ``tokenizer.json``) and the companion files that
    ``exists`` (the storage layer's) finds beside it (``special_tokens.locate``)."""
    tokenizers = set()
    for spec in {f.tokenizer for f in config.files}:
        tokenizers.update(locate(spec.kind, spec.path, exists).paths)
    return sorted({f.path for f in config.files} | tokenizers)
