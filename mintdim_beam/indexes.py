"""Index rows and summary files of an output directory (pure).

Row formats and key order follow the spec; ``docs/decisions.md`` lists the extra keys.
JSONL rows are compact UTF-8 (``ensure_ascii=False``); JSON files use two-space
indentation and a trailing newline, so the same build always gives the same bytes.
"""

from __future__ import annotations

import json

from .plan import BlockPlan, OutputPlan, shard_position
from .records import BAD, OK, OVF_EXTEND, OVF_SKIP, OVF_TRUNCATE, BlockResult

INDEX_FILES = (
    "sample_index.jsonl",
    "duplicate_index.jsonl",
    "unk_index.jsonl",
    "overflow_index.jsonl",
    "bad_record_index.jsonl",
)


def dumps_row(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def dumps_file(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


def shard_path(unit: int, shard: int) -> str:
    return f"unit_{unit}/shard_{shard:06d}.bin"


def block_index_rows(meta: BlockResult, plan: BlockPlan, source_file: str, max_unit_size: int,
                     samples_per_shard: int) -> dict:
    """The sample, unk, overflow and bad-record rows of one block, as JSONL text.

    Global ids are the block's offsets from the plan plus local positions; a record's
    shard comes from its rank in its unit.
    """
    src = json.dumps(source_file, ensure_ascii=False)
    sample_rows: list = []
    unk_rows: list = []
    overflow_rows: list = []
    bad_rows: list = []
    unit_seen: dict = {}
    unk_tokens = 0
    status = meta.status.tolist()
    counts = meta.token_count.tolist()
    orig = meta.orig_count.tolist()
    units = meta.unit.tolist()
    lines = (meta.local_line + plan.line_offset + 1).tolist()
    hexes = [bytes(d).hex() for d in meta.digests] if len(meta.digests) else []
    base = plan.sample_offset
    for i, st in enumerate(status):
        sid = base + i
        line = lines[i]
        if st == BAD:
            error, reason = meta.bad[i]
            bad_rows.append(dumps_row({
                "sample_id": sid, "source_file": source_file, "source_line": line,
                "error": error, "reason": reason,
            }))
            continue
        if st != OK:
            row = {
                "sample_id": sid, "source_file": source_file, "source_line": line,
                "token_count": orig[i], "max_unit_size": max_unit_size,
                "action": {OVF_SKIP: "skip", OVF_TRUNCATE: "truncate", OVF_EXTEND: "extend"}[st],
            }
            if st == OVF_EXTEND:
                row["new_unit_size"] = plan.extend[i][0]
            overflow_rows.append(dumps_row(row))
            if st == OVF_SKIP:
                continue
        if st == OVF_EXTEND:
            unit, rank = plan.extend[i]
        else:
            unit = units[i]
            rank = plan.unit_rank[unit] + unit_seen.get(unit, 0)
            unit_seen[unit] = unit_seen.get(unit, 0) + 1
        shard, record = shard_position(rank, samples_per_shard)
        empty = json.dumps(meta.empty_fields.get(i, []), ensure_ascii=False, separators=(",", ":"))
        sample_rows.append(
            f'{{"sample_id":{sid},"hash":"{hexes[i]}","token_count":{counts[i]},"unit_size":{unit},'
            f'"source_file":{src},"source_line":{line},"shard_path":"{shard_path(unit, shard)}",'
            f'"empty_fields":{empty},"shard_record":{record}}}\n'
        )
        if i in meta.unk:
            positions, fields, chars = meta.unk[i]
            unk_tokens += len(positions)
            unk_rows.append(dumps_row({
                "sample_id": sid, "hash": hexes[i], "source_file": source_file, "source_line": line,
                "unk_count": len(positions), "unk_positions": positions,
                "unk_field_indices": fields, "unk_chars": chars,
            }))
    return {
        "sample_index.jsonl": "".join(sample_rows),
        "unk_index.jsonl": "".join(unk_rows),
        "overflow_index.jsonl": "".join(overflow_rows),
        "bad_record_index.jsonl": "".join(bad_rows),
        "stats": {"samples_with_unk": len(unk_rows), "unk_tokens": unk_tokens},
    }


def duplicate_row(digest: bytes, members: list) -> str:
    """One duplicate group: ``members`` are (sample_id, source_file, source_line), sorted."""
    return dumps_row({
        "hash": digest.hex(),
        "count": len(members),
        "samples": [{"sample_id": s, "source_file": f, "source_line": l} for s, f, l in members],
    })


def histogram(plan: OutputPlan) -> dict:
    return {str(u): plan.samples.get(u, 0) for u in plan.sizes}


def stats(plan: OutputPlan, storage, dup_groups: int, dup_samples: int, samples_with_unk: int,
          unk_tokens: int) -> dict:
    total_samples = sum(plan.samples.get(u, 0) for u in plan.sizes)
    total_tokens = sum(plan.tokens.get(u, 0) for u in plan.sizes)
    slots = sum(plan.samples.get(u, 0) * u for u in plan.sizes)
    units = {}
    for u in plan.sizes:
        n, t = plan.samples.get(u, 0), plan.tokens.get(u, 0)
        units[str(u)] = {
            "samples": n, "tokens": t, "pad_tokens": n * u - t,
            "padding_ratio": (n * u - t) / (n * u) if n else 0.0,
            "shards": plan.shards.get(u, 0),
        }
    return {
        "total_samples": total_samples,
        "total_tokens": total_tokens,
        "token_dtype": storage.dtype,
        "bytes_per_token": storage.bytes_per_token,
        "duplicate_groups": dup_groups,
        "duplicate_samples": dup_samples,
        "samples_with_unk": samples_with_unk,
        "unk_tokens": unk_tokens,
        "unit_distribution": histogram(plan),
        "pad_tokens": slots - total_tokens,
        "padding_ratio": (slots - total_tokens) / slots if slots else 0.0,
        "bad_records": plan.bad_records,
        "overflow_samples": plan.overflow_samples,
        "shards": sum(plan.shards.get(u, 0) for u in plan.sizes),
        "units": units,
    }


def length_field(storage, sequence_template, pad_id: int) -> dict:
    return {
        "magic": storage.magic,
        "sequence_template": list(sequence_template),
        "token_dtype": storage.dtype,
        "pad_token_id": pad_id,
    }

