"""``encode_stage.read_blocks``: how the encoder and the plan's token count both read a
planned block of an input, and the errors of an input the build refuses."""

from __future__ import annotations

import gzip

import pytest

from mintdim_beam import errors
from mintdim_beam.beam.encode_stage import read_blocks
from mintdim_beam.core.plan import BlockRef

LINES = [b'{"t": "line %d %s"}' % (i, b"x" * (i % 7)) for i in range(400)]
DATA = b"\n".join(LINES) + b"\n"


def test_a_plain_block_is_read_as_planned(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(DATA)
    cut = DATA.index(b"\n", 3000) + 1     # a block starts mid-line: its first line is the next one
    first = list(read_blocks(str(path), BlockRef(0, 0, 0, 3000), 1024))
    second = list(read_blocks(str(path), BlockRef(0, 1, 3000, len(DATA)), 1024))
    assert [(ref, last) for ref, _, last in first] == [(BlockRef(0, 0, 0, 3000), True)]
    assert [(ref, last) for ref, _, last in second] == [(BlockRef(0, 1, 3000, len(DATA)), True)]
    assert first[0][1] + second[0][1] == LINES
    assert b"\n".join(first[0][1]) + b"\n" == DATA[:cut]


def test_a_compressed_file_is_read_in_blocks_the_last_one_marked(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(gzip.compress(DATA))
    found = list(read_blocks(str(path), BlockRef(0, 0, 0, path.stat().st_size), 1024))
    assert len(found) > 3
    assert [ref.block for ref, _, _ in found] == list(range(len(found)))
    assert [last for _, _, last in found] == [False] * (len(found) - 1) + [True]
    assert found[0][0].start == 0 and all(a[0].end == b[0].start for a, b in zip(found, found[1:]))
    assert found[-1][0].end == len(DATA)
    assert [line for _, lines, _ in found for line in lines] == LINES


def test_an_empty_compressed_file_is_one_empty_block(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(gzip.compress(b""))
    assert list(read_blocks(str(path), BlockRef(0, 0, 0, path.stat().st_size), 1024)) == [
        (BlockRef(0, 0, 0, 0), [], True)]


def test_a_plain_file_that_looks_compressed_is_refused_before_any_block(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(gzip.compress(DATA))
    blocks = read_blocks(str(path), BlockRef(0, 0, 0, path.stat().st_size), 1024)
    with pytest.raises(errors.SourceParseError) as caught:
        next(blocks)
    assert (caught.value.kind, caught.value.line, caught.value.compression) == ("looks_compressed", 1, "gzip")
    # Only a file's first block can start with the magic bytes.
    assert list(read_blocks(str(path), BlockRef(0, 1, 10, 20), 1024))[0][2] is True


def test_a_truncated_compressed_file_yields_its_whole_lines_then_fails_after_them(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    whole = gzip.compress(DATA)
    path.write_bytes(whole[:len(whole) * 2 // 3])
    got = []
    with pytest.raises(errors.SourceParseError) as caught:
        for ref, lines, last in read_blocks(str(path), BlockRef(0, 0, 0, path.stat().st_size), 1024):
            got.append((ref.block, lines, last))
    read = [line for _, lines, _ in got for line in lines]
    assert got and not any(last for _, _, last in got)
    assert 0 < len(read) < len(LINES) and read == LINES[:len(read)]
    err = caught.value
    assert (err.kind, err.file, err.line, err.compression, err.truncated) == (
        "bad_compressed", str(path), len(read) + 1, "gzip", True)


def test_a_blocks_hashes_are_sorted_by_digest_then_sample_whatever_their_first_bytes():
    """``sorted_hashes`` sorts by the digests' first 8 bytes unless two share them; then,
    as for repeated samples, by the whole digest. Either way: digest order, then sample."""
    import types

    import numpy as np

    from mintdim_beam.beam.encode_stage import sorted_hashes
    from mintdim_beam.core.block_result import BAD, OK

    rng = np.random.default_rng(3)
    for shared in (False, True):
        digests = rng.integers(0, 256, (400, 32), dtype=np.uint8)
        if shared:
            digests[50:60, :8] = digests[5, :8]        # the same first 8 bytes, other rests
            digests[70:75] = digests[7]                # the same samples
        status = np.where(rng.random(400) < 0.1, BAD, OK).astype(np.int8)
        lines = np.arange(400) * 2
        rows = sorted_hashes(types.SimpleNamespace(status=status, digests=digests, local_line=lines))
        kept = [i for i in range(400) if status[i] != BAD]
        expected = sorted(kept, key=lambda i: (bytes(digests[i]), i))
        assert rows["sample_id"].tolist() == expected
        assert rows["line"].tolist() == [2 * i + 1 for i in expected]
        assert [bytes(d) for d in rows["digest"]] == [bytes(digests[i]) for i in expected]
