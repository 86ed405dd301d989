"""A spilled block's result as data: a JSON header and raw little-endian arrays.

The encode stage spills each block's :class:`~mintdim_beam.core.block_result.BlockResult`
(sample status, token counts, units, digests, empty fields, bad records, the UNK
audit's columns) to the staging area, and the write stage reads it back to write the
index rows. Staging is storage that someone else may be able to write (a shared
scratch folder, a bucket prefix), so what is read back must never be able to run
code: no pickle. The format is

    b"MDMETA2\\n" | u64 header length | header (UTF-8 JSON) | arrays

where the header holds the plain values (line count, the distinct lists of empty
fields, bad records, the rendered UNK parts) and, for each array, its name, dtype (one of a fixed few), shape
and byte offset. :func:`decode` accepts nothing else: an unknown dtype, an array that
runs past the end, a shape that disagrees with its bytes, or a column of the wrong
length is a ``ValueError``. The write stage also compares the section's sha256 with
the one the encoder reported through the pipeline (``BlockSummary.meta_sha256``), so
a swapped file is refused rather than read.
"""

from __future__ import annotations

import numpy as np
import orjson

from mintdim_beam.core.block_result import BlockResult
from mintdim_beam.tokenization.unk_rows import CharColumn, UnkTable

MAGIC = b"MDMETA2\n"
_ALIGN = 8
#: The only dtypes a spilled array may have.
_DTYPES = {np.dtype(t).str: np.dtype(t) for t in ("<i1", "<i2", "<i4", "<i8", "|u1", "<u4")}
_RESULT_ARRAYS = ("local_line", "status", "token_count", "orig_count", "unit", "digests")
_UNK_INTS = ("sample", "position", "segment", "rendered_sample", "rendered_count")
_EMPTY_INTS = np.zeros(0, np.int64)
_EMPTY_CODES = np.zeros(0, np.uint32)


def _narrow(values: np.ndarray) -> np.ndarray:
    """Integers in the smallest of int8 ... int64 that holds them (UNK columns are most
    of a block's metadata on a script the tokenizer cannot spell; small ones stay)."""
    values = np.asarray(values)
    if len(values) < 64:
        return values.astype("<i8", copy=False)
    lo, hi = int(values.min()), int(values.max())
    for dtype in ("<i1", "<i2", "<i4"):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return values.astype(dtype)
    return values.astype("<i8")


def encode(meta: BlockResult) -> bytes:
    """The bytes of a block's result (the fields a spill holds; records and overflow
    tokens travel in their own sections)."""
    unk = meta.unk
    arrays = {name: np.ascontiguousarray(getattr(meta, name)) for name in _RESULT_ARRAYS}
    arrays.update({f"unk.{name}": _narrow(getattr(unk, name)) for name in _UNK_INTS})
    arrays["unk.char_codes"] = np.ascontiguousarray(unk.chars.codes, "<u4")
    arrays["unk.char_ends"] = _narrow(unk.chars.ends)
    # A repeat's UNK part is one string shared by every occurrence: written once.
    strings, index = {}, []
    for text in unk.rendered_text:
        index.append(strings.setdefault(text, len(strings)))
    arrays["unk.rendered_index"] = _narrow(np.asarray(index, np.int64))
    # Empty fields: most samples of a corpus with optional fields have some, and their
    # lists are a few distinct ones, so two columns (the sample, its list's index in
    # the header's table) rather than a JSON pair a sample.
    empty = meta.empty_fields
    lists: dict = {}
    codes = [lists.setdefault(t, len(lists)) for t in map(tuple, empty.values())]
    arrays["empty.sample"] = _narrow(np.fromiter(empty.keys(), np.int64, len(empty)))
    arrays["empty.list"] = _narrow(np.asarray(codes, np.int64))
    listing, chunks, at = [], [], 0
    for name, array in arrays.items():
        if not array.size and name.startswith(("unk.", "empty.")):
            continue            # an absent column reads back empty: most blocks have no UNK
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        data = array.tobytes()
        listing.append([name, array.dtype.str, list(array.shape), at])
        pad = -len(data) % _ALIGN
        chunks.append(data + b"\0" * pad)
        at += len(data) + pad
    header = orjson.dumps({
        "n_lines": int(meta.n_lines),
        "arrays": listing,
        "empty_lists": [list(names) for names in lists],
        "bad": [[int(s), str(kind), str(reason)] for s, (kind, reason) in meta.bad.items()],
        "rendered_strings": list(strings),
        "extra": [[int(s), row] for s, row in meta.extra.items()],
        "overflow_extra": [[int(s), row] for s, row in meta.overflow_extra.items()],
    })
    return b"".join([MAGIC, len(header).to_bytes(8, "little"), header] + chunks)


def _rows(pairs) -> dict:
    """Sample -> extra row keys, as spilled: JSON objects only (data, never code)."""
    found = {}
    for s, row in pairs:
        if not isinstance(row, dict):
            raise ValueError("spilled block result: an extra row is not an object")
        found[int(s)] = row
    return found


def _shared_strings(strings: list, index: np.ndarray) -> list:
    strings = [str(t) for t in strings]
    if len(index) and (int(index.min()) < 0 or int(index.max()) >= len(strings)):
        raise ValueError("spilled block result: a rendered UNK part out of range")
    return [strings[i] for i in index.tolist()]


def _empty_fields(lists, samples: np.ndarray, codes: np.ndarray) -> dict:
    """Sample -> its empty fields' names, from the two spilled columns and the table;
    samples with the same list share one list object."""
    if not isinstance(lists, list) or not all(isinstance(names, list) for names in lists):
        raise ValueError("spilled block result: the empty fields' table is not a list of lists")
    table = [[str(n) for n in names] for names in lists]
    if len(samples) != len(codes):
        raise ValueError("spilled block result: empty-field columns of different lengths")
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(table)):
        raise ValueError("spilled block result: an empty-field list out of range")
    return dict(zip(samples.tolist(), map(table.__getitem__, codes.tolist())))


def decode(data: bytes) -> BlockResult:
    """A block's result from :func:`encode`'s bytes; ``ValueError`` for anything else."""
    data = memoryview(data)
    if bytes(data[:len(MAGIC)]) != MAGIC or len(data) < len(MAGIC) + 8:
        raise ValueError("not a spilled block result")
    start = len(MAGIC) + 8
    size = int.from_bytes(data[len(MAGIC):start], "little")
    if size > len(data) - start:
        raise ValueError("spilled block result: header cut short")
    try:
        header = orjson.loads(data[start:start + size])
    except orjson.JSONDecodeError:
        raise ValueError("spilled block result: header is not JSON") from None
    if not isinstance(header, dict):
        raise ValueError("spilled block result: header is not a JSON object")
    body = data[start + size:]
    arrays = {}
    try:
        for name, dtype, shape, offset in header["arrays"]:
            kind = _DTYPES.get(dtype)
            if kind is None or not all(isinstance(n, int) and n >= 0 for n in shape) or not isinstance(offset, int):
                raise ValueError(f"spilled block result: array {name!r} of type {dtype!r}")
            count = int(np.prod(shape, dtype=np.int64)) if shape else 1
            end = offset + count * kind.itemsize
            if offset < 0 or end > len(body):
                raise ValueError(f"spilled block result: array {name!r} runs past the end")
            arrays[name] = np.frombuffer(body, kind, count, offset).reshape(shape).astype(kind.newbyteorder("="))
        for name in [f"unk.{n}" for n in _UNK_INTS + ("char_ends", "rendered_index")] + ["empty.sample", "empty.list"]:
            arrays.setdefault(name, _EMPTY_INTS)
        arrays.setdefault("unk.char_codes", _EMPTY_CODES)
        n_samples = len(arrays["status"])
        if any(len(arrays[name]) != n_samples for name in _RESULT_ARRAYS):
            raise ValueError("spilled block result: columns of different lengths")
        unk = UnkTable(*(arrays[f"unk.{name}"].astype(np.int64) for name in _UNK_INTS[:3]),
                       CharColumn(arrays["unk.char_codes"].astype(np.uint32), arrays["unk.char_ends"].astype(np.int64)),
                       arrays["unk.rendered_sample"].astype(np.int64), arrays["unk.rendered_count"].astype(np.int64),
                       _shared_strings(header["rendered_strings"], arrays["unk.rendered_index"]))
        return BlockResult(
            n_lines=int(header["n_lines"]),
            local_line=arrays["local_line"], status=arrays["status"], token_count=arrays["token_count"],
            orig_count=arrays["orig_count"], unit=arrays["unit"], digests=arrays["digests"],
            empty_fields=_empty_fields(header["empty_lists"], arrays["empty.sample"], arrays["empty.list"]),
            unk=unk,
            bad={int(s): (str(kind), str(reason)) for s, kind, reason in header["bad"]},
            extra=_rows(header.get("extra", [])),
            overflow_extra=_rows(header.get("overflow_extra", [])),
        )
    except (KeyError, TypeError):
        raise ValueError("spilled block result: header lacks a field") from None
