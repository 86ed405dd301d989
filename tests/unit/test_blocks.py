"""Byte-range blocks: every line read exactly once, whatever the block size."""

import json

import pytest

from conftest import TESTDATA, input_files, input_sizes

from mintdim_beam.storage.line_blocks import read_block_lines

TOKENIZER = str(TESTDATA / "sp_unigram.model")


def _all_lines(path, size, block):
    lines = []
    for start in range(0, size, block):
        got, _ = read_block_lines(str(path), start, min(size, start + block))
        lines.extend(got)
    return lines


@pytest.mark.parametrize("block", [1, 2, 3, 7, 16, 64, 1000, 10**6])
def test_blocks_partition_lines(tmp_path, block):
    raw = b'{"a": 1}\n\n  \n{"a": "long ' + b"x" * 150 + b'"}\r\n{"a": 3}'
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    lines = _all_lines(path, len(raw), block)
    # CRLF endings come back without the "\r" (JSON whitespace; see read_block_lines).
    assert lines == raw.decode().replace("\r\n", "\n").split("\n")


def test_crlf_is_dropped_but_a_lone_cr_is_kept(tmp_path):
    path = tmp_path / "f.jsonl"
    raw = b'{"a": 1}\r\n\r\n{"a": "x\ry"}\r\n\xff\r\n{"b": 2}\r'
    path.write_bytes(raw)
    lines, _ = read_block_lines(str(path), 0, len(raw))
    assert lines == [b'{"a": 1}', b"", b'{"a": "x\ry"}', b"\xff", b'{"b": 2}\r']
    path.write_bytes(raw.replace(b"\xff", b"z"))
    lines, _ = read_block_lines(str(path), 0, len(raw))
    assert lines == ['{"a": 1}', "", '{"a": "x\ry"}', "z", '{"b": 2}\r']


def test_undecoded_lines_are_the_bytes_of_the_decoded_ones(tmp_path):
    """``decode=False`` (the encoder's reads): the same lines, as bytes, valid or not."""
    path = tmp_path / "f.jsonl"
    raw = '{"a": "漢字"}\r\n\n{"b": 2}\n'.encode()
    path.write_bytes(raw)
    lines, nbytes = read_block_lines(str(path), 0, len(raw), decode=False)
    assert lines == [line.encode() for line in read_block_lines(str(path), 0, len(raw))[0]]
    assert lines == ['{"a": "漢字"}'.encode(), b"", b'{"b": 2}'] and nbytes == len(raw)
    path.write_bytes(raw + b"\xff\n")
    assert read_block_lines(str(path), 0, len(raw) + 2, decode=False)[0][-1] == b"\xff"


def test_trailing_newline_is_not_an_extra_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    assert _all_lines(path, 4, 1) == ["a", "b"]
    assert _all_lines(path, 4, 100) == ["a", "b"]


def test_invalid_utf8_block_falls_back_to_bytes(tmp_path):
    path = tmp_path / "f.jsonl"
    raw = b'{"a": 1}\n\xff\xfe\n'
    path.write_bytes(raw)
    lines, nbytes = read_block_lines(str(path), 0, len(raw))
    assert lines == [b'{"a": 1}', b"\xff\xfe"]
    assert nbytes == len(raw)


def test_many_json_lines_any_block(tmp_path):
    rows = [json.dumps({"i": i, "t": "y" * (i % 37)}) for i in range(300)]
    raw = ("\n".join(rows) + "\n").encode()
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    for block in (5, 97, 1024):
        assert _all_lines(path, len(raw), block) == rows


@pytest.mark.parametrize("read_ahead", [4, 64, 1 << 16])
@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b""])
def test_each_line_once_and_every_byte_counted_whatever_the_read_ahead(tmp_path, monkeypatch, read_ahead, ending):
    """A block's last line ends within the read-ahead after the block or is read on to
    its end; lines are split out of the read in place (line_blocks._lines_between)."""
    from mintdim_beam.storage import line_blocks

    monkeypatch.setattr(line_blocks, "_READ_AHEAD", read_ahead)
    rows = [b"", b"{}", b"x" * 300, b"", b"\xc3\xa9" * 40, b"a\rb", b"z" * 9] * 3
    raw = ending.join(rows) + ending            # no ending: one line, without a newline
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    expected = raw.replace(b"\r\n", b"\n").split(b"\n")
    if raw.endswith(b"\n"):
        expected.pop()
    for block in (1, 3, 8, 50, 301, 1000, 10**6):
        lines, total = [], 0
        for start in range(0, len(raw), block):
            got, nbytes = read_block_lines(str(path), start, min(len(raw), start + block), decode=False)
            lines.extend(got)
            total += nbytes if got else 0
        assert lines == expected, block
        assert total == len(raw), block


def _config(tmp_path, paths):
    from mintdim_beam import pipeline

    return (pipeline("unit-build").source.jsonl(files=[str(p) for p in paths], fields=[["a"]], templates=["{a}"])
            .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[8]], build_batch=[4])
            .output.dir(str(tmp_path / "out"), samples_per_shard=[10]).config(block_size=1024))


@pytest.mark.parametrize("raw", [
    b'{"a": "' + b"x" * 5000 + b'"}\n',                                  # one huge line: one busy block
    b'{"a": "' + b"x" * 5000 + b'"}',                                    # without its newline
    b'{"a": "' + b"x" * 5000 + b'"}\n{"a": "y"}\n',                      # a small line after it
    b'{"a": "' + b"x" * 1017 + b'"}\n{"a": "y"}\n',                      # the next line starts a block
    b"".join(b'{"a": "%d"}\n' % i for i in range(1000)),                 # many lines
    b"",
], ids=["one-huge-line", "no-final-newline", "small-line-after", "next-line-at-block-start", "many-lines", "empty"])
def test_busy_blocks_counts_the_blocks_that_own_a_line(tmp_path, raw):
    from mintdim_beam.core.blocks import plan_blocks
    from mintdim_beam.storage.line_blocks import busy_blocks

    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    config = _config(tmp_path, [path])
    owning = sum(1 for r in plan_blocks(config, input_sizes(config)) if read_block_lines(str(path), r.start, r.end)[0])
    assert busy_blocks(input_files(config), config.block_size, enough=1000) == owning
    assert busy_blocks(input_files(config), config.block_size) == min(owning, 2)


def test_busy_blocks_counts_every_file(tmp_path):
    from mintdim_beam.storage.line_blocks import busy_blocks

    paths = [tmp_path / "empty.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    paths[0].write_bytes(b"")
    paths[1].write_bytes(b'{"a": "' + b"x" * 5000 + b'"}\n')
    assert busy_blocks(input_files(_config(tmp_path, paths[:2])), _config(tmp_path, paths[:2]).block_size) == 1
    paths[2].write_bytes(b'{"a": "y"}\n')
    assert busy_blocks(input_files(_config(tmp_path, paths)), _config(tmp_path, paths).block_size) == 2
