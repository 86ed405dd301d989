"""Finalize: publish staged shards and index parts, or mark the build as failed.

Runs once, after every shard and index part is staged. Publishing moves shards to their
final names, concatenates index parts in sample order, writes the summary files and
``manifest.json`` last, then removes the staging area. Every step is idempotent: a
finalize retried after a crash (or simply run twice) skips what is already published
and rewrites the rest with identical bytes.

On a policy ``abort`` the plan carries the first error; nothing is published, every
declared unit gets ``UNIT_BUILD_FAILED.md`` with the bilingual message, and the error
record is kept in staging. The pipeline itself completes (an abort is an answer, not a
crash) and yields the error per output; the launcher raises the spec's error class.
"""

from __future__ import annotations

import json
import logging
from typing import Iterable

from . import __version__, indexes, layout, storage
from .config import BuildConfig, OutputSpec, describe_sources
from .errors import error_from_dict
from .plan import BuildPlan
from .tokenizers import load_tokenizer

log = logging.getLogger(__name__)

PER_BLOCK_INDEXES = ("sample_index.jsonl", "unk_index.jsonl", "overflow_index.jsonl", "bad_record_index.jsonl")


def _concatenate(paths: Iterable[str]):
    for path in paths:
        yield storage.read_bytes(path)


def _failure_text(message: str) -> str:
    return (
        "# Unit build failed\n\n"
        "This unit was not finalized: the build stopped before publishing.\n\n"
        "```\n" + message + "\n```\n"
    )


def mark_failed(config: BuildConfig, message: str, error: dict | None = None) -> None:
    """Write ``UNIT_BUILD_FAILED.md`` in every declared unit of every output."""
    for out in config.outputs:
        if storage.exists(storage.join(out.path, "manifest.json")):
            continue
        for unit in out.sizes:
            storage.write_text(storage.join(layout.unit_dir(out.path, unit), layout.FAILED_MARKER),
                               _failure_text(message))
        if error is not None:
            storage.write_text(storage.join(layout.staging_dir(out.path), layout.ERROR_RECORD),
                               json.dumps(error, ensure_ascii=False, indent=2) + "\n")


def finalize(config: BuildConfig, plan: BuildPlan, shard_results, part_results, dup_results,
             build_info: dict):
    """Publish every output (yielding one result dict each) or fail the whole build."""
    if plan.error is not None:
        message = str(error_from_dict(plan.error))
        mark_failed(config, message, plan.error)
        for out in config.outputs:
            for sub in ("blocks", "shards", "parts"):
                storage.delete_tree(storage.join(layout.staging_dir(out.path), sub))
            yield {"output": out.path, "error": plan.error}
        return
    for out in config.outputs:
        yield publish_output(config, out, plan, shard_results, part_results, dup_results, build_info)


def publish_output(config: BuildConfig, out: OutputSpec, plan: BuildPlan, shard_results, part_results,
                   dup_results, build_info: dict) -> dict:
    manifest_path = storage.join(out.path, "manifest.json")
    oplan = plan.outputs[out.index]
    shards = sorted((r.unit, r.shard, r.samples, r.bytes) for r in shard_results if r.output == out.index)
    if storage.exists(manifest_path):
        stats = json.loads(storage.read_bytes(storage.join(out.path, "stats.json")))
        return {"output": out.path, "stats": stats, "shards": shards}

    tok = load_tokenizer(out.tokenizer.kind, out.tokenizer.path, storage.read_bytes(out.tokenizer.path))
    blocks = sorted(key for key, bp in plan.blocks.items() if bp.output == out.index)
    for name in PER_BLOCK_INDEXES:
        parts = [layout.part_path(out.path, name, f, b) for f, b in blocks]
        storage.write_bytes(storage.join(out.path, name), _concatenate(parts))
    dups = sorted((r.file, r.block, r.groups, r.samples) for r in dup_results if r.output == out.index)
    storage.write_bytes(
        storage.join(out.path, "duplicate_index.jsonl"),
        _concatenate(layout.part_path(out.path, "duplicate_index.jsonl", f, b) for f, b, _, _ in dups),
    )

    for unit, shard, _, _ in shards:
        staged = layout.staged_shard(out.path, unit, shard)
        if storage.exists(staged):
            storage.rename(staged, layout.final_shard(out.path, unit, shard))
    for unit in oplan.sizes:
        if oplan.samples.get(unit, 0) == 0:
            storage.write_text(
                storage.join(layout.unit_dir(out.path, unit), layout.EMPTY_MARKER),
                f"# Empty unit\n\nNo sample was assigned to unit_size {unit}; this unit has no shards.\n",
            )

    parts = [r for r in part_results if r.output == out.index]
    stats = indexes.stats(
        oplan, tok.storage,
        dup_groups=sum(d[2] for d in dups), dup_samples=sum(d[3] for d in dups),
        samples_with_unk=sum(p.samples_with_unk for p in parts),
        unk_tokens=sum(p.unk_tokens for p in parts),
    )
    storage.write_text(storage.join(out.path, "histogram.json"), indexes.dumps_file(indexes.histogram(oplan)))
    storage.write_text(storage.join(out.path, "stats.json"), indexes.dumps_file(stats))
    storage.write_text(storage.join(out.path, "length_field.json"),
                       indexes.dumps_file(indexes.length_field(tok.storage, out.sequence_template, tok.pad_id)))
    storage.write_text(storage.join(out.path, "build_info.json"),
                       indexes.dumps_file({**build_info, "output": out.path}))
    storage.write_text(manifest_path, indexes.dumps_file(manifest(config, out, oplan, tok)))
    storage.delete_tree(layout.staging_dir(out.path))
    return {"output": out.path, "stats": stats, "shards": shards}


def manifest(config: BuildConfig, out: OutputSpec, oplan, tok) -> dict:
    """manifest.json: what was built and how; nothing that varies between runs."""
    return {
        "pipeline": "unit-build",
        "mintdim_version": __version__,
        "tokenizer": tok.describe(),
        "token_storage": {
            "dtype": tok.storage.dtype,
            "bytes_per_token": tok.storage.bytes_per_token,
            "magic": tok.storage.magic,
        },
        "sequence_template": list(out.sequence_template),
        "length_field_metadata": "length_field.json",
        "units": {"sizes": list(oplan.sizes), "declared_sizes": list(oplan.declared)},
        "source": describe_sources(config, out),
        "output": {"samples_per_shard": out.samples_per_shard},
        "policies": {
            "on_overflow": config.policies.on_overflow,
            "on_template_unk": config.policies.on_template_unk,
            "on_bad_record": config.policies.on_bad_record,
        },
    }
