"""The last stage: hash the inputs for the fingerprint, then publish from every result.

``Finalize`` receives the plan and every shard, index-part, duplicate-part and digest
result through one GroupByKey and hands them, de-duplicated and in a fixed order, to
:func:`mintdim_beam.beam.publish.finalize`. Separate from ``publish`` because that module is
plain Python (tested by running it twice, without a pipeline) and this is its Beam
adapter; separate from the other stages because it runs once, on one worker.
"""

from __future__ import annotations

import time
from typing import Optional

from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from mintdim_beam.storage import files as storage
from mintdim_beam.core.config import BuildConfig
from mintdim_beam.beam.stage_base import DIGEST, DUPS, NAMESPACE, PART, PLAN, SHARD, DuplicatePartResult, FileDigest, ShardResult, load_tokenizers, StorageDoFn

class HashInputFn(StorageDoFn):
    """Size and sha256 of one input or tokenizer file, streamed through FileSystems."""

    def process(self, path: str):
        started = time.monotonic()
        size, sha = storage.file_digest(path)
        yield FileDigest(path, size, sha, round(time.monotonic() - started, 3))


class FinalizeFn(StorageDoFn):
    """Publish every output (or mark the build failed) from the plan and all results."""

    def __init__(self, config: BuildConfig, build_info: dict, input_digests: Optional[dict],
                 filesystem_options: Optional[dict], shared: Shared, word_encoder: bool = True,
                 listed_sizes: Optional[dict] = None):
        super().__init__(filesystem_options)
        self._listed_sizes = listed_sizes
        self._config = config
        self._build_info = build_info
        self._input_digests = input_digests
        self._shared = shared
        self._word_encoder = word_encoder
        # Publishing runs on one worker: its time is what does not shrink with workers.
        self._finalize_ms = Metrics.counter(NAMESPACE, "finalize_ms")

    def process(self, element):
        from mintdim_beam.beam.publish import finalize

        _, items = element
        plan = None
        found: dict = {SHARD: {}, PART: {}, DUPS: {}, DIGEST: {}}
        for kind, value in items:
            if kind == PLAN:
                plan = value
            elif kind == DIGEST:
                found[DIGEST][value.path] = value
            else:
                found[kind][(value.output, *result_key(value))] = value
        build_info = dict(self._build_info)
        if self._input_digests is not None:
            digests = dict(self._input_digests)
        else:
            digests = {p: (d.size, d.sha256) for p, d in found[DIGEST].items()}
            build_info["fingerprint"] = {
                "computed_by": "pipeline",
                "files": len(digests),
                "bytes": sum(d.size for d in found[DIGEST].values()),
                "seconds_max": max((d.seconds for d in found[DIGEST].values()), default=0.0),
            }
        # The adapters the write stage loaded in this process, if it ran here (the
        # manifest needs a tokenizer's facts, not a fresh copy of it).
        config, words = self._config, self._word_encoder
        tokenizers = self._shared.acquire(lambda: load_tokenizers(config, words)).value
        started = time.monotonic()
        published = list(finalize(
            self._config, plan,
            [found[SHARD][k] for k in sorted(found[SHARD])],
            [found[PART][k] for k in sorted(found[PART])],
            [found[DUPS][k] for k in sorted(found[DUPS])],
            build_info, digests, tokenizers=tokenizers, listed_sizes=self._listed_sizes,
        ))
        self._finalize_ms.inc(int((time.monotonic() - started) * 1000))
        yield from published


def result_key(result) -> tuple:
    if isinstance(result, ShardResult):
        return (result.unit, result.shard)
    if isinstance(result, DuplicatePartResult):
        return (result.task,)
    return (result.file, result.block)
