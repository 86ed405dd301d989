"""Index rows and summary files of an output directory (pure).

Row formats and key order follow the spec; ``docs/decisions.md`` lists the extra keys.
JSONL rows are compact UTF-8 (``ensure_ascii=False``); JSON files use two-space
indentation and a trailing newline, so the same build always gives the same bytes.
"""

from __future__ import annotations

import json

from typing import Optional

import numpy as np
import pyarrow as pa

from mintdim_beam.core.block_result import BAD, OK, OVF_EXTEND, OVF_SKIP, OVF_TRUNCATE, PAIR_COLLAPSED, BlockResult
from mintdim_beam.core.plan import BlockPlan, OutputPlan
from mintdim_beam.tokenization.unk_rows import json_string
from mintdim_beam.format import names
from mintdim_beam.format.chat import COLLAPSED, PAIR_ID_KEY, PAIR_ROLE_KEY, PARTS_PER_MESSAGE, ROLES_KEY



def dumps_row(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def dumps_file(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


_OVERFLOW_ACTION = {OVF_SKIP: "skip", OVF_TRUNCATE: "truncate", OVF_EXTEND: "extend", PAIR_COLLAPSED: COLLAPSED}

#: Where the rows' Arrow buffers come from: the system allocator, not Arrow's default
#: pool (mimalloc), which keeps freed buffers for reuse. Generated corpus, T5, two
#: default builds each: peak RSS of the process tree 728-729 MiB -> 622-631 MiB, at the
#: same speed. Passed to every call rather than set as Arrow's default, which would
#: change it for everything else in the process.
_POOL = pa.system_memory_pool()


def block_index_rows(meta: BlockResult, plan: BlockPlan, source_file: str, max_unit_size: int,
                     samples_per_shard: int) -> dict:
    """The sample, unk, overflow and bad-record rows of one block (:func:`run_index_rows`)."""
    return run_index_rows([(meta, plan, source_file)], max_unit_size, samples_per_shard)


def run_index_rows(blocks: list, max_unit_size: int, samples_per_shard: int) -> dict:
    """The sample, unk, overflow and bad-record rows of consecutive blocks, each a
    ``(BlockResult, BlockPlan, source file)``, as UTF-8 JSONL bytes: each index's rows
    block after block.

    Global ids are each block's offsets from the plan plus local positions; a record's
    shard comes from its rank in its unit. Sample and UNK rows (one per written sample,
    the bulk of the work) are computed column-wise with numpy and put together by
    Arrow (:func:`_join_rows`), so their text never exists as a Python string per row;
    the rare rows of the other indexes are built one by one. The sample rows of every
    block are made together: a corpus of many small files is as many blocks of a few
    dozen samples, and a block's own Arrow calls cost more than its rows.
    """
    columns = [_sample_columns(meta, plan, samples_per_shard) for meta, plan, _ in blocks]
    sources = [json.dumps(source, ensure_ascii=False) for _, _, source in blocks]
    sizes = [len(c["indexed"]) for c in columns]
    n = sum(sizes)

    def cat(name):
        return np.concatenate([c[name] for c in columns]) if len(columns) > 1 else columns[0][name]

    if len(set(sources)) == 1:
        source_piece = ',"source_file":' + sources[0] + ',"source_line":'
    else:
        owner = np.repeat(np.arange(len(blocks)), sizes)
        source_piece = (',"source_file":', _take(_strings(sources), owner), ',"source_line":')
    empty = None
    if any(c["empty"] is not None for c in columns):
        empty = _joined_texts([c["empty"] or (np.zeros(len(c["indexed"]), np.int32), ["[]"]) for c in columns])
    extra = None
    if any(c["extra"] is not None for c in columns):
        extra = [text for c in columns for text in (c["extra"] or [""] * len(c["indexed"]))]
    units = cat("units")
    shards, records = np.divmod(cat("ranks"), samples_per_shard)
    unit_text = _ints_text(units)
    pieces = ('{"sample_id":', _ints_text(cat("ids")), ',"hash":"', _hex_digests(cat("digests")),
              '","token_count":', _ints_text(cat("token_count")), ',"unit_size":', unit_text)
    pieces += (source_piece,) if isinstance(source_piece, str) else source_piece
    pieces += (_ints_text(cat("lines")), ',"shard_path":"unit_', unit_text, "/shard_",
               _pc().utf8_lpad(_ints_text(shards), 6, "0", memory_pool=_POOL), '.bin","empty_fields":',
               "[]" if empty is None else empty, ',"shard_record":', _ints_text(records))
    pieces += ("}\n",) if extra is None else (_strings(extra), "}\n")
    sample_rows = _join_rows(n, pieces)

    found = {names.UNK_INDEX: [], names.OVERFLOW_INDEX: [], names.BAD_RECORD_INDEX: []}
    with_unk = unk_tokens = 0
    for (meta, plan, source), c, src in zip(blocks, columns, sources):
        rows = _other_rows(meta, plan, source, src, c, max_unit_size)
        for name in found:
            found[name].append(rows[name])
        with_unk += rows["samples_with_unk"]
        unk_tokens += rows["unk_tokens"]
    return {
        names.SAMPLE_INDEX: sample_rows,
        **{name: b"".join(parts) if len(parts) != 1 else parts[0] for name, parts in found.items()},
        "stats": {"samples_with_unk": with_unk, "unk_tokens": unk_tokens},
    }


def _sample_columns(meta: BlockResult, plan: BlockPlan, samples_per_shard: int) -> dict:
    """One block's columns of its ``sample_index`` rows (``indexed``: the block's
    samples that have one), and its global lines."""
    status = meta.status
    base = plan.sample_offset
    lines = meta.local_line.astype(np.int64) + (plan.line_offset + 1)
    indexed = np.nonzero((status != BAD) & (status != OVF_SKIP) & (status != PAIR_COLLAPSED))[0]   # sample_index rows

    # Unit and rank of every indexed sample: declared units count records in sample
    # order from the block's first rank; extended samples have theirs in the plan.
    units = meta.unit[indexed].astype(np.int64)
    ranks = np.zeros(len(indexed), np.int64)
    extended = status[indexed] == OVF_EXTEND
    for k in np.nonzero(extended)[0].tolist():
        units[k], ranks[k] = plan.extend[int(indexed[k])]
    declared = np.nonzero(~extended)[0]
    if len(declared):
        du = units[declared]
        order = np.argsort(du, kind="stable")
        sizes, first, counts = np.unique(du[order], return_index=True, return_counts=True)
        within = np.arange(len(order), dtype=np.int64) - np.repeat(first, counts)
        start = np.array([plan.unit_rank[int(u)] for u in sizes], np.int64)
        ranks[declared[order]] = np.repeat(start, counts) + within

    empty = _empty_texts(meta.empty_fields, indexed) if meta.empty_fields else None
    extra = None
    if meta.extra:
        # Extra keys after the spec's (DESIGN.md §4): a conversation's roles, a pair's id.
        extra = [""] * len(indexed)
        at = {int(s): k for k, s in enumerate(indexed.tolist())}
        for s, row in meta.extra.items():
            if s in at:
                extra[at[s]] = _extra_keys(row, base + s)
    return {"indexed": indexed, "ids": indexed + base, "digests": meta.digests[indexed],
            "token_count": meta.token_count[indexed], "units": units, "ranks": ranks, "lines": lines[indexed],
            "all_lines": lines, "extended": extended, "empty": empty, "extra": extra}


def _empty_texts(empty_fields: dict, indexed: np.ndarray) -> tuple:
    """``(codes, texts)``: each indexed sample's ``empty_fields`` JSON text is
    ``texts[codes[k]]``, ``texts[0]`` being ``[]``.

    Samples with empty fields are common (most of Alpaca's have no ``input``): they
    are placed among the indexed samples by one search, not a dict of every sample,
    and each distinct list is made JSON once (lists are mostly one shared object a
    name set: they are told apart by identity before their names are compared).
    """
    texts = ["[]"]
    by_names: dict = {}
    by_id: dict = {}

    def code(names) -> int:
        found = by_id.get(id(names))
        if found is None:
            key = tuple(names)
            found = by_names.get(key)
            if found is None:
                found = by_names[key] = len(texts)
                texts.append(json.dumps(names, ensure_ascii=False, separators=(",", ":")))
            by_id[id(names)] = found
        return found

    n = len(empty_fields)
    samples = np.fromiter(empty_fields.keys(), np.int64, n)
    found = np.fromiter(map(code, empty_fields.values()), np.int32, n)
    at = np.searchsorted(indexed, samples)                  # indexed: ascending sample ids
    hit = at < len(indexed)
    hit[hit] = indexed[at[hit]] == samples[hit]             # a bad or skipped sample has no row
    codes = np.zeros(len(indexed), np.int32)
    codes[at[hit]] = found[hit]
    return codes, texts


def _extra_keys(row: dict, sample_id: int) -> str:
    """A row's extra keys as JSON text after the spec's. A pair record's ``pair_id``,
    before its ``pair_role``, is its chosen record's sample id halved (``pair_lines``:
    each line of a pair source is two consecutive samples)."""
    text = []
    for key, value in row.items():
        if key == PAIR_ROLE_KEY:
            text.append(f',"{PAIR_ID_KEY}":{sample_id // 2}')
        text.append("," + json.dumps(key) + ":" + json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return "".join(text)


def _other_rows(meta: BlockResult, plan: BlockPlan, source_file: str, src: str, columns: dict,
                max_unit_size: int) -> dict:
    """One block's rows of the UNK, overflow and bad-record indexes."""
    status = meta.status
    n = len(status)
    base = plan.sample_offset
    lines = columns["all_lines"]
    indexed, units, extended = columns["indexed"], columns["units"], columns["extended"]
    bad_rows = []
    overflow_rows = []
    unk_rows = b""
    samples_with_unk = unk_tokens = 0
    for i in sorted(meta.bad):
        error, reason = meta.bad[i]
        bad_rows.append(dumps_row({
            "sample_id": base + i, "source_file": source_file, "source_line": int(lines[i]),
            "error": error, "reason": reason,
        }))
    if n:
        extend_at = {int(indexed[k]): int(units[k]) for k in np.nonzero(extended)[0].tolist()}
        for i in np.nonzero((status != OK) & (status != BAD))[0].tolist():
            st = int(status[i])
            row = {
                "sample_id": base + i, "source_file": source_file, "source_line": int(lines[i]),
                "token_count": int(meta.orig_count[i]), "max_unit_size": max_unit_size,
                "action": _OVERFLOW_ACTION[st],
            }
            if st == OVF_EXTEND:
                row["new_unit_size"] = extend_at[i]
            row.update(meta.overflow_extra.get(i, {}))
            overflow_rows.append(dumps_row(row))
    unk = meta.unk
    if unk.tokens:
        # One row per sample with UNK (BlockEncoder keeps only written samples' tokens):
        # its head, then its UNK part. Column entries can be millions of UNK tokens:
        # their parts are built by Arrow from the columns (:func:`_unk_parts`), so no
        # Python object is made per token. Rendered entries bring their UNK part.
        owner = np.zeros(0, np.int64)
        parts = _strings([])
        if len(unk):
            starts = np.flatnonzero(np.r_[True, unk.sample[1:] != unk.sample[:-1]])
            owner = unk.sample[starts]
            chat = any(ROLES_KEY in row for row in meta.extra.values())
            parts = _unk_parts(unk, starts, _chat_unk_tails(unk, starts, meta.extra) if chat else None)
        if len(unk.rendered_sample):
            owner = np.concatenate([owner, unk.rendered_sample])
            order = np.argsort(owner, kind="stable")
            owner = owner[order]
            parts = _take(pa.concat_arrays([parts, _strings(unk.rendered_text)], memory_pool=_POOL), order)
        unk_rows = _join_rows(len(owner), (
            '{"sample_id":', _ints_text(owner + base), ',"hash":"', _hex_digests(meta.digests[owner]),
            '","source_file":' + src + ',"source_line":', _ints_text(lines[owner]), ",", parts))
        samples_with_unk = len(owner)
        unk_tokens = unk.tokens
    return {
        names.UNK_INDEX: unk_rows,
        names.OVERFLOW_INDEX: "".join(overflow_rows).encode("utf-8"),
        names.BAD_RECORD_INDEX: "".join(bad_rows).encode("utf-8"),
        "samples_with_unk": samples_with_unk,
        "unk_tokens": unk_tokens,
    }


def _joined_texts(coded: list) -> pa.Array:
    """Blocks' ``(codes, texts)`` columns (:func:`_empty_texts`) as one Arrow column of
    their texts, in order: each block's codes renumbered into one table, then taken."""
    table: dict = {}
    renumbered = []
    for codes, texts in coded:
        mine = np.array([table.setdefault(t, len(table)) for t in texts], np.int32)
        renumbered.append(mine[codes])
    return _take(_strings(list(table)), np.concatenate(renumbered) if len(renumbered) > 1 else renumbered[0])


def _pc():
    """``pyarrow.compute``, imported on first use: 26 ms of start-up that the launcher,
    which imports this module but writes no rows, never needs (Beam imports pyarrow)."""
    import pyarrow.compute

    return pyarrow.compute


#: Integers below this take their text from a table made once per process.
_SMALL_INTS = 1 << 16
_small_ints: list = []


def _ints_text(values) -> pa.Array:
    """Integers as their decimal text (as ``str`` writes them), computed by Arrow.

    Small ones (UNK positions and field indices, millions of them in the rows of a text
    the model cannot spell; unit sizes, record numbers) are looked up in a table of the
    texts of 0 .. 65,535: Arrow's take is two to three times faster than its cast.
    """
    values = np.asarray(values, np.int64)
    array = pa.array(values, memory_pool=_POOL)
    if len(values) and values.min() >= 0 and values.max() < _SMALL_INTS:
        if not _small_ints:
            _small_ints.append(_pc().cast(pa.array(np.arange(_SMALL_INTS)), pa.large_string()))
        return _pc().take(_small_ints[0], array, memory_pool=_POOL)
    return _pc().cast(array, pa.large_string(), memory_pool=_POOL)


def _strings(values: list) -> pa.Array:
    return pa.array(values, pa.large_string(), memory_pool=_POOL)


def _take(array: pa.Array, index) -> pa.Array:
    return _pc().take(array, pa.array(np.asarray(index, np.int64), memory_pool=_POOL), memory_pool=_POOL)


def _hex_digests(digests: np.ndarray) -> pa.Array:
    """Each 32-byte digest as its 64 lowercase hex digits (one ``bytes.hex`` call)."""
    n = len(digests)
    data = pa.py_buffer(digests.tobytes().hex().encode("ascii"))
    offsets = pa.py_buffer(np.arange(0, 64 * (n + 1), 64, dtype=np.int64).tobytes())
    return pa.Array.from_buffers(pa.large_string(), n, [None, offsets, data])


def _join(pieces) -> pa.Array:
    """Row ``i`` is the concatenation of each piece's ``i``-th value; a piece is an
    Arrow array of strings, or a ``str`` every row holds."""
    args = [pa.scalar(p, pa.large_string()) if isinstance(p, str) else p for p in pieces]
    return _pc().binary_join_element_wise(*args, pa.scalar("", pa.large_string()), memory_pool=_POOL)


def _join_rows(n: int, pieces: tuple):
    """``n`` rows (:func:`_join`) as UTF-8 bytes: a ``memoryview`` of Arrow's buffer.

    Arrow's element-wise join writes all rows into one buffer, in C++; that buffer is
    the file's text, so no Python string is made per row and none is encoded again
    (about 3x faster than ``%``-formatting each row and joining), and it is written as
    it is, not copied to a ``bytes`` first.
    """
    if not n:
        return b""
    rows = _join(pieces)
    offsets = np.frombuffer(rows.buffers()[1], np.int64)[rows.offset:rows.offset + n + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    return memoryview(rows.buffers()[2].slice(start, end - start)).cast("B")   # Arrow's is "b"


def _unk_parts(unk, starts: np.ndarray, tails: Optional[list] = None) -> pa.Array:
    """The UNK part (``unk_rows.UNK_PART``) of each column-entry sample, whose tokens are
    the entries ``starts[k]`` up to the next start: every item's text (decimal digits,
    JSON string) is made by Arrow over a whole column and joined per sample in C++.
    ``tails``: extra keys after the spec's, a text per sample (a conversation's)."""
    offsets = pa.array(np.r_[starts, len(unk)].astype(np.int64), memory_pool=_POOL)

    def runs(items: pa.Array, sep: str) -> pa.Array:
        return _join_lists(offsets, items, sep)

    end = ('"]}\n',) if tails is None else ('"]', _strings(tails), "}\n")
    return _join(('"unk_count":', _ints_text(np.diff(np.r_[starts, len(unk)])), ',"unk_positions":[',
                  runs(_ints_text(unk.position), ","), '],"unk_field_indices":[', runs(_ints_text(unk.segment), ","),
                  '],"unk_chars":["', runs(_json_items(unk.chars), '","'), *end))


def _chat_unk_tails(unk, starts: np.ndarray, extra: dict) -> list:
    """A conversation's UNK row names each UNK token's message and its role (the
    message slot of its segment, ``format.chat``), after the spec's keys."""
    tails = []
    bounds = np.r_[starts, len(unk)].tolist()
    for k in range(len(starts)):
        a, b = bounds[k], bounds[k + 1]
        messages = (unk.segment[a:b] // PARTS_PER_MESSAGE).tolist()
        roles = extra.get(int(unk.sample[a]), {}).get(ROLES_KEY, [])
        tails.append(',"unk_messages":' + json.dumps(messages, separators=(",", ":")) + ',"unk_roles":'
                     + json.dumps([roles[m] if m < len(roles) else None for m in messages], ensure_ascii=False,
                                  separators=(",", ":")))
    return tails


def _json_items(chars) -> pa.Array:
    """Each string of a ``CharColumn`` as ``json.dumps(..., ensure_ascii=False)`` writes
    it, without its quotes.

    The strings are joined with a separator none of them holds (``CharColumn.joined``),
    which is not ASCII, so the JSON encoder leaves it as it is and no escape can produce
    it: the escaped text splits back into the items at the separators.
    """
    found = chars.joined()
    if found is None:   # every separator occurs in the strings: item by item
        return _strings([json_string(c)[1:-1] for c in chars.tolist()])
    sep, joined = found
    return _pc().split_pattern(_strings([json_string(joined)[1:-1]]), sep, memory_pool=_POOL).flatten()


def _join_lists(offsets: pa.Array, items: pa.Array, sep: str) -> pa.Array:
    """Item ``offsets[k]`` up to ``offsets[k + 1]`` of ``items``, joined by ``sep``, for each ``k``."""
    lists = pa.LargeListArray.from_arrays(offsets, items, pool=_POOL)
    return _pc().binary_join(lists, pa.scalar(sep, pa.large_string()), memory_pool=_POOL)


def duplicate_rows(digests: np.ndarray, sample_ids: np.ndarray, file_json: list, file_of: np.ndarray,
                   lines: np.ndarray, starts: np.ndarray):
    """``duplicate_index.jsonl`` rows of some groups, as ``dumps_row`` would write them
    (UTF-8 bytes, as :func:`_join_rows` gives them).

    Group ``g`` has digest ``digests[g]`` (32 bytes) and the members
    ``starts[g]:starts[g + 1]`` of the member columns (sorted by sample id; ``starts[0]``
    is 0); member ``i`` comes from file ``file_of[i]``, whose path is ``file_json[file_of[i]]``
    as JSON text. Members' texts and
    the groups' rows are put together by Arrow (a build of repeated data has about as
    many members as samples).
    """
    members = _join(('{"sample_id":', _ints_text(sample_ids), ',"source_file":', _take(_strings(file_json), file_of),
                     ',"source_line":', _ints_text(lines), "}"))
    samples = _join_lists(pa.array(np.asarray(starts, np.int64), memory_pool=_POOL), members, ",")
    return _join_rows(len(digests), ('{"hash":"', _hex_digests(digests), '","count":', _ints_text(np.diff(starts)),
                                     ',"samples":[', samples, "]}\n"))


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


def length_field(storage, sequence_template, pad_id: int, unk_id: Optional[int] = 0,
                 chat: Optional[dict] = None) -> dict:
    """``length_field.json``. A tokenizer that cannot emit UNK (``unk_id`` None) adds
    ``"unk_token_id": null`` after the spec's keys (DESIGN.md §8); any other keeps the
    spec's four keys exactly. A chat output adds its layout (``format.chat.chat_layout``)."""
    found = {
        "magic": storage.magic,
        "sequence_template": list(sequence_template),
        "token_dtype": storage.dtype,
        "pad_token_id": pad_id,
    }
    if unk_id is None:
        found["unk_token_id"] = None
    if chat is not None:
        found["chat"] = chat
    return found



def checksums_file(sums: dict) -> bytes:
    """``SHA256SUMS``: one ``<sha256 hex>  <path>`` line per file, by path, as
    ``sha256sum`` writes and ``sha256sum -c`` reads them (paths relative to the output
    directory, ``/``-separated)."""
    return "".join(f"{sums[name]}  {name}\n" for name in sorted(sums)).encode("utf-8")
