"""Resources bounded by design: a small compressed file that expands to gigabytes, and
a line without end, stop the build with the spec's error instead of filling memory."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tracemalloc

import pytest
import zstandard

from conftest import TESTDATA

from mintdim_beam import errors, pipeline
from mintdim_beam.format.inputs import compression
from mintdim_beam.storage import line_blocks
from mintdim_beam.storage.compressed import open_decompressed

MiB = 1 << 20
COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
            ".zst": lambda data: zstandard.ZstdCompressor().compress(data)}


def _bomb(path, suffix: str, head: bytes, mebibytes: int) -> str:
    """``head`` then ``mebibytes`` MiB of ``a`` without a newline: one member of ``head``,
    then one compressed MiB repeated (concatenated streams are one file's content)."""
    member = COMPRESS[suffix](b"a" * MiB)
    path.write_bytes(COMPRESS[suffix](head) + member * mebibytes)
    return str(path)


@pytest.mark.parametrize("suffix", sorted(COMPRESS))
def test_a_decompression_bomb_is_read_in_bounded_steps(tmp_path, suffix):
    path = _bomb(tmp_path / f"bomb{suffix}", suffix, b"", 48)
    assert (tmp_path / f"bomb{suffix}").stat().st_size < MiB
    tracemalloc.start()
    total = 0
    with open_decompressed(path, compression(path)) as f:
        while True:
            piece = f.read(MiB)
            if not piece:
                break
            total += len(piece)
            del piece
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert total == 48 * MiB
    assert peak < 16 * MiB, peak          # about a chunk at a time, never the expansion


def _job(files, out):
    return (pipeline("unit-build").source.jsonl(files=files, fields=[["a"]], templates=["{a}"])
            .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
            .units(sizes=[[64]], build_batch=[8]).output.dir(str(out), samples_per_shard=[10]))


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
@pytest.mark.parametrize("on_bad_record", ["abort", "skip"])
def test_a_compressed_line_without_end_stops_the_build_naming_file_and_line(tmp_path, monkeypatch, suffix,
                                                                           on_bad_record):
    monkeypatch.setattr(line_blocks, "MAX_LINE_BYTES", 4 * MiB)
    path = _bomb(tmp_path / f"in.jsonl{suffix}", suffix, b'{"a": "one"}\n{"a": "two"}\n', 24)
    with pytest.raises(errors.SourceParseError) as caught:
        _job([path], tmp_path / "out").run(on_overflow="truncate", on_template_unk="continue",
                                           on_bad_record=on_bad_record, quiet=True, echo=lambda *a: None,
                                           block_size=MiB)
    err = caught.value
    assert (err.fields["file"], err.fields["line"]) == (path, 3)
    assert err.fields["reason"] == f"line longer than {4 * MiB} bytes"
    assert "[english]" in str(err) and "[vietnam]" in str(err)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_a_plain_line_longer_than_the_limit_stops_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(line_blocks, "MAX_LINE_BYTES", 2 * MiB)
    path = tmp_path / "in.jsonl"
    with open(path, "wb") as f:
        for i in range(5):
            f.write(b'{"a": "line %d"}\n' % i)
        f.write(b'{"a": "' + b"x" * (3 * MiB))                 # no end: runs past every block
    with pytest.raises(errors.SourceParseError) as caught:
        _job([str(path)], tmp_path / "out").run(on_overflow="truncate", on_template_unk="continue",
                                                quiet=True, echo=lambda *a: None, block_size=64 * 1024)
    assert (caught.value.fields["file"], caught.value.fields["line"]) == (str(path), 6)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_a_line_at_the_limit_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(line_blocks, "MAX_LINE_BYTES", 64 * 1024)
    path = tmp_path / "in.jsonl"
    line = b'{"a": "' + b"y " * ((64 * 1024 - 10) // 2) + b'"}'
    assert len(line) <= 64 * 1024
    path.write_bytes(line + b"\n" + b'{"a": "z"}\n')
    lines, _ = line_blocks.read_block_lines(str(path), 0, 1024)
    assert lines == [line.decode()]
