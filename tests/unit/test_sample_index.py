"""``sample_index.jsonl`` parsed in chunks: the same rows, problems and errors whatever
the chunk size and however the bytes arrive.

The expected columns are computed here from the rows with ``json``, not with the
module under test; the index mixes rows the fast (Arrow) path takes with lines only
the line-by-line path can word (bad JSON, wrong types, blank and CRLF lines).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mintdim_beam.errors import ReaderError
from mintdim_beam.reader.sample_index import IndexProblem, parse_sample_index, parse_sample_index_pieces

CHUNKS = (1, 64, 700, 5000, 1 << 20)


def index_row(i: int) -> dict:
    unit = (8, 16, 32)[i % 3]
    return {"sample_id": 3 * i + 1, "hash": f"{i * 7919:064x}", "token_count": i % unit, "unit_size": unit,
            "source_file": ("a.jsonl", "dir/é.jsonl", 'q"uote.jsonl')[i % 3 if i < 40 else 0],
            "source_line": i + 2, "shard_path": f"unit_{unit}/shard_{i // 10:06d}.bin",
            "empty_fields": ["answer"] if i % 11 == 4 else [], "shard_record": i % 10}


def dataset() -> tuple[bytes, list, list]:
    """The index bytes, the (line, row) pairs it holds, and the problems it has."""
    lines, good, bad = [], [], []
    for i in range(60):
        row = index_row(i)
        text = json.dumps(row, ensure_ascii=i % 2 == 0, separators=(",", ":"))
        if i == 13:
            text, why = text[:-5], "not valid JSON"
        elif i == 21:
            text, why = text.replace('"sample_id":', '"sample_id":-', 1), "sample_id must be a non-negative integer"
        elif i == 35:
            text, why = text.replace('"unit_size":32', '"unit_size":32.0', 1), "unit_size must be a non-negative"
        elif i == 47:
            text, why = text.replace('"hash":"', '"hash":"X', 1), "hash must be 64 lowercase hex digits"
        else:
            why = None
        if i == 30:
            for blank in ("", "   "):      # the build never writes a blank line: each is a problem
                lines.append(blank)
                bad.append((len(lines), "blank line"))
        if i == 52:
            text += "\r"                   # a CRLF line is a good row
        lines.append(text)
        if why is None:
            good.append((len(lines), row))
        else:
            bad.append((len(lines), why))
    return ("\n".join(lines) + "\n").encode(), good, bad


def assert_columns(ix, good) -> None:
    rows = [row for _, row in good]
    files = list(dict.fromkeys(row["source_file"] for row in rows))
    assert ix.sample_id.tolist() == [r["sample_id"] for r in rows]
    assert ix.unit.tolist() == [r["unit_size"] for r in rows]
    assert ix.shard.tolist() == [int(r["shard_path"][-10:-4]) for r in rows] and ix.shard.dtype == np.int32
    assert ix.record.tolist() == [r["shard_record"] for r in rows]
    assert ix.token_count.tolist() == [r["token_count"] for r in rows]
    assert ix.files == files
    assert ix.file.tolist() == [files.index(r["source_file"]) for r in rows] and ix.file.dtype == np.int32
    assert ix.line.tolist() == [r["source_line"] for r in rows]
    assert [ix.hash(k) for k in range(len(rows))] == [r["hash"] for r in rows]
    assert ix.row_line.tolist() == [n for n, _ in good]
    assert ix.empty_fields == {k: tuple(r["empty_fields"]) for k, r in enumerate(rows) if r["empty_fields"]}


@pytest.mark.parametrize("chunk", CHUNKS)
def test_chunked_parse_gives_every_row_and_problem(chunk):
    data, good, bad = dataset()
    problems = []
    ix = parse_sample_index(data, problems, chunk_bytes=chunk)
    assert_columns(ix, good)
    assert [p.line for p in problems] == [n for n, _ in bad]
    assert all(isinstance(p, IndexProblem) and p.message.startswith(why) for p, (_, why) in zip(problems, bad))
    with pytest.raises(ReaderError) as exc:
        parse_sample_index(data, chunk_bytes=chunk)
    assert str(exc.value) == ("[english] ReaderError: sample_index.jsonl line 14: not valid JSON\n\n"
                              "[vietnam] ReaderError: sample_index.jsonl dòng 14: không phải JSON hợp lệ")
    assert (exc.value.file, exc.value.line) == ("sample_index.jsonl", 14)


@pytest.mark.parametrize("cut", [1, 3, 97, 4096])
def test_pieces_cut_anywhere_parse_as_the_whole(cut):
    """An index read a few bytes at a time, or as parts, is the same index."""
    data, good, bad = dataset()
    pieces = (data[k:k + cut] for k in range(0, len(data), cut))
    problems = []
    ix = parse_sample_index_pieces(pieces, problems, chunk_bytes=300)
    assert_columns(ix, good)
    assert [p.line for p in problems] == [n for n, _ in bad]


def test_clean_index_without_trailing_newline_and_empty_index():
    data, good, _ = dataset()
    clean = "\n".join(json.dumps(index_row(i)) for i in range(25)).encode()
    ix = parse_sample_index(clean, chunk_bytes=200)
    assert ix.sample_id.tolist() == [3 * i + 1 for i in range(25)] and ix.row_line.tolist() == list(range(1, 26))
    empty = parse_sample_index(b"")
    assert len(empty) == 0 and empty.digest.shape == (0, 32) and empty.files == []
