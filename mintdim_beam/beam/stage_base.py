"""What the build's Beam stages share: the elements that cross stage boundaries, the
storage-aware DoFn base, and tokenizers loaded once per worker process.

Separate from the stages (``encode_stage``, ``write_stage``, ``finalize_stage``) and
from their wiring (``transforms.UnitBuild``) because every stage needs these and none
owns them: a result written by the write stage is read by finalize, the hash-spill row
is written by the encoder and read by the duplicate tasks, and the encoder, the
writers and finalize share one ``Shared`` tokenizer cache per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import apache_beam as beam
import numpy as np

from mintdim_beam.storage import files as storage
from mintdim_beam.storage import access as storage_access
from mintdim_beam.core.config import BuildConfig
from mintdim_beam.tokenization.adapters import open_tokenizer
from mintdim_beam.storage import clients
from mintdim_beam.format import names

NAMESPACE = "mintdim"


# One row of a block's hash spill: sorted by digest, 48 bytes.
HASH_ROW = np.dtype([("digest", "u1", (32,)), ("sample_id", "<i8"), ("line", "<i8")])
DIGEST_VALUE = np.dtype((np.void, 32))   # a digest as one sortable, comparable value


# Elements that cross a Beam boundary are frozen dataclasses, not NamedTuples: some
# runners (Dask) move tuples through coders that drop the NamedTuple class.

# A DoFn with several kinds of output yields (kind, value) pairs rather than tagged
# outputs, which the Dask runner mixes together; Finalize sorts them by kind.
# Kinds of the results collected for Finalize.
PLAN, SHARD, PART, DUPS, DIGEST = "plan", "shard", "part", "dups", "digest"


class Handle:
    """Weak-referenceable holder, so ``Shared`` can cache tokenizers per process."""

    def __init__(self, value):
        self.value = value


def load_tokenizers(config: BuildConfig, word_encoder: bool = True):
    cache = {}
    for spec in {f.tokenizer for f in config.files}:
        # Several encode calls run at once (see encode_threads): one thread each.
        cache[spec] = open_tokenizer(spec.kind, spec.path, storage.read_bytes, threads=1,
                                     accelerators=config.accelerators, word_encoder=word_encoder,
                                     exists=storage.exists)
        cache[spec].prepare()   # here, not in the first encode call
    return Handle(cache)


@dataclass(frozen=True)
class ShardResult:
    output: int
    unit: int
    shard: int
    samples: int
    bytes: int
    sha256: str             # of the shard's bytes, computed as they were written (SHA256SUMS)


@dataclass(frozen=True)
class PartResult:
    output: int
    file: int
    block: int
    samples_with_unk: int
    unk_tokens: int
    sha256: tuple = ()     # (index name, sha256 hex) of each part, with index_layout "parts"
    #: The index files this block wrote a part of: with index_layout "file", a part
    #: with no rows is not written (most blocks have no unk, overflow or bad-record rows).
    written: tuple = (names.SAMPLE_INDEX, names.UNK_INDEX, names.OVERFLOW_INDEX, names.BAD_RECORD_INDEX)
    #: (file, block) of every block whose rows the part holds, in order, when it holds
    #: more than its own (index_layout "file": a run of small blocks, ``index_tasks``).
    blocks: tuple = ()


@dataclass(frozen=True)
class DuplicatePartResult:
    output: int
    task: int
    groups: int
    samples: int


@dataclass(frozen=True)
class FileDigest:
    path: str
    size: int
    sha256: str
    seconds: float


class StorageDoFn(beam.DoFn):
    """A DoFn that touches storage: configures ``FileSystems`` where the runner did not,
    and checks once that this worker reaches the build's buckets, so wrong options fail
    the build in seconds rather than after Beam's retries (``storage_access``)."""

    _config: Optional[BuildConfig] = None   # the build whose stores setup() checks

    def __init__(self, filesystem_options: Optional[dict]):
        self._filesystem_options = filesystem_options

    def setup(self):
        clients.configure(self._filesystem_options)
        if self._config is not None:
            storage_access.check(storage_access.build_paths(self._config), self._filesystem_options)
