"""Compressed inputs (``.gz``, ``.bz2``, ``.zst``/``.zstd``, ``.xz``/``.lzma``, ``.deflate``).

A compressed file is read from its start by one worker, in blocks cut at line ends as
it goes; its build must be byte for byte the build of the same data uncompressed,
``source_file`` aside (it names the compressed file as declared). The reference
(``tests/reference.py``) decompresses with the standard library and ``zstandard``, on
its own. A compressed file named as plain JSONL is reported as such, never as
"invalid UTF-8" on line 1.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import random
import zlib
from pathlib import Path

import pytest

from conftest import (TESTDATA, OutputDir, assert_nothing_published, build_and_compare, list_output_files,
                      read_jsonl, run_pipeline, write_jsonl)
from mintdim_beam import errors
from mintdim_beam.format.inputs import compression
from mintdim_beam.storage.compressed import open_decompressed

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


COMPRESSORS = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".zst": _zstd,
    ".zstd": _zstd,
    ".xz": lambda d: lzma.compress(d, format=lzma.FORMAT_XZ),
    ".lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE),
    ".deflate": zlib.compress,
}

FIELDS = [["instruction", "input", "output"]]
TEMPLATES = ["{instruction}\n{input}\n{output}"]


def _raw_corpus() -> bytes:
    """About 30 KB of JSONL with a BOM, CRLF endings, blank lines, non-ASCII text,
    a duplicate and no final newline: what plain files are tested with."""
    rng = random.Random(23)
    rows = textgen.instruction_records(rng, 150)
    rows.insert(40, dict(rows[5]))
    rows.insert(70, {"instruction": "漢字 và tiếng Việt", "input": "🙂", "output": "ok"})
    lines = [textgen_json(r) for r in rows]
    lines[10:10] = [b"", b"   "]
    data = b"\r\n".join(lines[:60]) + b"\r\n" + b"\n".join(lines[60:])
    return b"\xef\xbb\xbf" + data


def textgen_json(row: dict) -> bytes:
    import json

    return json.dumps(row, ensure_ascii=False).encode("utf-8")


def _job(files: list, tmp_path: Path, name: str, **extra) -> dict:
    job = dict(files=files, fields=FIELDS, templates=TEMPLATES, tokenizer_kind="sentencepiece",
               tokenizer_files=[str(TESTDATA / "sp_unigram.model")], sizes=[[24, 48, 96]],
               samples_per_shard=[16], output_dirs=str(tmp_path / name), on_overflow="truncate",
               on_template_unk="continue", build_batch=[5], block_size=1024)
    job.update(extra)
    return job


def _without_source_file(out_dir: str, replace: dict) -> dict:
    """Every output file, with the declared source paths swapped back to the plain ones."""
    found = {}
    files = list_output_files(out_dir)
    # SHA256SUMS covers the files as written (their source paths included): check it
    # here, then leave it out of the comparison
    for line in files["SHA256SUMS"].decode().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256(files[name]).hexdigest() == digest, name
    for name, data in files.items():
        if name in ("build_info.json", "SHA256SUMS"):
            continue
        for compressed, plain in replace.items():
            data = data.replace(compressed.encode(), plain.encode())
        found[name] = data
    return found


@pytest.fixture(scope="module")
def plain_build(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plain")
    path = tmp / "corpus.jsonl"
    path.write_bytes(_raw_corpus())
    build_and_compare(tmp, **_job([str(path)], tmp, "out"))
    return str(path), str(tmp / "out")


@pytest.mark.parametrize("extension", sorted(COMPRESSORS))
def test_compressed_build_equals_the_uncompressed_one(tmp_path, plain_build, extension):
    plain_path, plain_out = plain_build
    path = tmp_path / f"corpus.jsonl{extension}"
    path.write_bytes(COMPRESSORS[extension](_raw_corpus()))
    # Matches the reference, which decompresses on its own; block_size 1024 cuts the
    # decompressed stream into about 30 blocks.
    build_and_compare(tmp_path, **_job([str(path)], tmp_path, "out"))
    rows = read_jsonl(tmp_path / "out" / "sample_index.jsonl")
    assert {r["source_file"] for r in rows} == {str(path)}
    assert max(r["source_line"] for r in rows) == _raw_corpus().count(b"\n") + 1
    # ... and is the uncompressed build's bytes, source_file aside (the manifest's
    # fingerprint records the compressed file's own size and sha256).
    got = _without_source_file(str(tmp_path / "out"), {str(path): plain_path})
    want = _without_source_file(plain_out, {})
    got_manifest, want_manifest = got.pop("manifest.json"), want.pop("manifest.json")
    assert sorted(got) == sorted(want)
    assert [name for name in got if got[name] != want[name]] == []
    assert got_manifest.count(b'"sha256"') == want_manifest.count(b'"sha256"')


def test_plain_and_compressed_files_share_an_output(tmp_path):
    """Sample ids and lines run on across a mix of plain, gzip and zstd files, and a
    concatenated (multi-member) gzip file is read whole."""
    raw = _raw_corpus()
    half = len(raw) // 2
    cut = raw.index(b"\n", half) + 1
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(raw)
    members = tmp_path / "b.jsonl.gz"
    members.write_bytes(gzip.compress(raw[:cut]) + gzip.compress(raw[cut:]))
    zst = tmp_path / "c.jsonl.zst"
    zst.write_bytes(_zstd(raw.replace(b"\r\n", b"\n")))
    result = build_and_compare(tmp_path, **_job([str(plain), str(members), str(zst)], tmp_path, "out"))
    out = OutputDir(result.outputs[0].path)
    files = [r["source_file"] for r in sorted(out.samples, key=lambda r: r["sample_id"])]
    assert files == sorted(files) and set(files) == {str(plain), str(members), str(zst)}


def test_bad_line_in_a_compressed_file_names_the_file_and_line(tmp_path):
    raw = _raw_corpus().split(b"\n")
    raw.insert(120, b'{"instruction": "x", "input": ')
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join(raw)))
    with pytest.raises(errors.SourceParseError) as info:
        build_and_compare(tmp_path, **_job([str(path)], tmp_path, "out"))
    assert (info.value.file, info.value.line, info.value.reason) == (str(path), 121, "invalid JSON syntax")
    assert_nothing_published(tmp_path / "out")


def test_empty_compressed_file(tmp_path):
    empty = tmp_path / "empty.jsonl.gz"
    empty.write_bytes(gzip.compress(b""))
    other = tmp_path / "other.jsonl.bz2"
    other.write_bytes(bz2.compress(_raw_corpus()))
    build_and_compare(tmp_path, **_job([str(empty), str(other)], tmp_path, "out"))


@pytest.mark.parametrize("extension,kind", [(".gz", "gzip"), (".bz2", "bzip2"), (".xz", "xz"),
                                            (".zst", "zstd")])
@pytest.mark.parametrize("policy", ["abort", "skip"])
def test_compressed_file_named_as_plain_jsonl(tmp_path, extension, kind, policy):
    """Whatever the bad-record policy: the whole file would be lost, not one line."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(COMPRESSORS[extension](_raw_corpus()))
    good = write_jsonl(tmp_path / "good.jsonl", [{"instruction": "a", "input": "b", "output": "c"}])
    with pytest.raises(errors.SourceParseError) as info:
        run_pipeline(**_job([good, str(path)], tmp_path, "out", on_bad_record=policy))
    err = info.value
    assert (err.file, err.line, err.kind, err.compression) == (str(path), 1, "looks_compressed", kind)
    assert f"the file looks {kind}-compressed" in err.english
    assert f"rename the file to end in {extension}" in err.english
    assert f"file trông như đã nén {kind}" in err.vietnamese
    assert "invalid UTF-8" not in str(err)
    assert_nothing_published(tmp_path / "out")


def test_compressed_file_named_as_plain_jsonl_on_the_command_line(tmp_path, monkeypatch, capsys):
    from mintdim_beam.cli.commands import main

    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_bytes(gzip.compress(_raw_corpus()))
    Path("job.yaml").write_text(
        'source:\n  files: ["data.jsonl"]\n  fields: [["instruction", "input", "output"]]\n'
        '  templates: ["{instruction}\\n{input}\\n{output}"]\n'
        f'tokenizer:\n  sentencepiece: ["{TESTDATA / "sp_unigram.model"}"]\n'
        'units:\n  sizes: [[64]]\n  build_batch: [4]\n'
        'output:\n  dir: ["out"]\n  samples_per_shard: [8]\n'
        'run:\n  on_overflow: truncate\n  on_template_unk: continue\n  on_bad_record: skip\n',
        encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    assert "[english] SourceParseError" in captured.err and "[vietnam] SourceParseError" in captured.err
    assert "looks gzip-compressed" in captured.err and "end in .gz" in captured.err
    assert_nothing_published(tmp_path / "out")


def test_compressed_inputs_on_s3(s3_remote, tmp_path, plain_build):
    """The same bytes from s3:// as from a local plain file."""
    plain_path, plain_out = plain_build
    raw = _raw_corpus()
    path = f"{s3_remote.root}/compressed/corpus.jsonl.gz"
    bucket, key = path[len("s3://"):].split("/", 1)
    s3_remote.s3_client.put_object(Bucket=bucket, Key=key, Body=gzip.compress(raw))
    out = f"{s3_remote.root}/compressed/out"
    run_pipeline(**_job([path], tmp_path, "unused", output_dirs=out, options=s3_remote.options))
    got = s3_remote.download_tree(out)
    want = _without_source_file(plain_out, {})
    got = {k: v.replace(path.encode(), plain_path.encode()) for k, v in got.items()
           if k not in ("build_info.json", "manifest.json", "SHA256SUMS")}
    want.pop("manifest.json")
    assert sorted(got) == sorted(want)
    assert [name for name in got if got[name] != want[name]] == []


@pytest.mark.parametrize("policy", ["abort", "skip"])
def test_truncated_compressed_file_is_an_error(tmp_path, policy):
    """A partly copied .gz: never a build that quietly lost the file's tail."""
    raw = _raw_corpus()
    data = gzip.compress(raw)
    cut = data[:len(data) * 2 // 3]
    path = tmp_path / "part.jsonl.gz"
    path.write_bytes(cut)
    readable = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
    with pytest.raises(errors.SourceParseError) as info:
        run_pipeline(**_job([str(path)], tmp_path, "out", on_bad_record=policy))
    err = info.value
    assert (err.file, err.kind, err.compression) == (str(path), "bad_compressed", "gzip")
    assert err.line == readable.count(b"\n") + 1
    assert err.truncated and "the gzip data ends before its compressed stream does" in err.english
    assert "gzip -t" in err.english and "dữ liệu gzip kết thúc trước" in err.vietnamese
    assert_nothing_published(tmp_path / "out")


def test_nul_padded_gzip_reads_as_the_reference_reads_it(tmp_path, plain_build):
    """A tape-padded .gz (members followed by NUL bytes, here more than a read chunk of
    them, and NULs between members too) is read as Python's gzip reads it."""

    raw = _raw_corpus()
    cut = raw.index(b"\n", len(raw) // 2) + 1
    data = gzip.compress(raw[:cut]) + bytes(3) + gzip.compress(raw[cut:]) + bytes(3 << 20)
    path = tmp_path / "padded.jsonl.gz"
    path.write_bytes(data)
    with open_decompressed(str(path), compression(str(path))) as f:
        assert f.read() == gzip.decompress(data) == raw
    build_and_compare(tmp_path, **_job([str(path)], tmp_path, "out"))
    got = _without_source_file(str(tmp_path / "out"), {str(path): plain_build[0]})
    want = _without_source_file(plain_build[1], {})
    got.pop("manifest.json"), want.pop("manifest.json")
    assert sorted(got) == sorted(want) and [name for name in got if got[name] != want[name]] == []


@pytest.mark.parametrize("tail", [bytes(10) + b"garbage", b"\x00\x00\x1f\x8bnot a member"],
                         ids=["garbage", "bad_member"])
def test_gzip_with_other_trailing_bytes_stays_an_error(tmp_path, tail):
    path = tmp_path / "tail.jsonl.gz"
    path.write_bytes(gzip.compress(_raw_corpus()) + tail)
    with pytest.raises(gzip.BadGzipFile):
        gzip.decompress(path.read_bytes())
    with pytest.raises(errors.SourceParseError) as info:
        run_pipeline(**_job([str(path)], tmp_path, "out", on_bad_record="skip"))
    assert (info.value.file, info.value.kind, info.value.truncated) == (str(path), "bad_compressed", False)
    assert "data is corrupt" in info.value.english and "bị hỏng" in info.value.vietnamese
    assert str(path) in info.value.english
    assert_nothing_published(tmp_path / "out")


@pytest.mark.parametrize("extension", [".bz2", ".zst", ".xz"])
def test_corrupt_compressed_file_is_an_error(tmp_path, extension):
    data = bytearray(COMPRESSORS[extension](_raw_corpus()))
    middle = len(data) // 2
    data[middle:middle + 16] = bytes(16)
    path = tmp_path / f"bad.jsonl{extension}"
    path.write_bytes(bytes(data))
    with pytest.raises(errors.SourceParseError) as info:
        run_pipeline(**_job([str(path)], tmp_path, "out", on_bad_record="skip"))
    assert (info.value.file, info.value.kind, info.value.truncated) == (str(path), "bad_compressed", False)
    assert "data is corrupt" in info.value.english and "bị hỏng" in info.value.vietnamese
    assert 1 <= info.value.line <= _raw_corpus().count(b"\n") + 1
    assert_nothing_published(tmp_path / "out")


def test_every_kind_in_several_folders_through_one_pattern_on_every_runner(tmp_path, dask_cluster):
    """Files of every kind under several folders, named by one pattern: the build in
    worker processes and on Dask is the reference-checked in-memory build of the same
    files listed by hand."""
    from apache_beam.runners.dask.dask_runner import DaskRunner

    from conftest import assert_same_outputs

    rng = random.Random(3)
    rows = textgen.instruction_records(rng, 420)
    rows[300] = dict(rows[2])                               # a duplicate across files
    kinds = sorted(COMPRESSORS)
    listed = []
    for k in range(2 * len(kinds)):
        folder = tmp_path / "corpus" / ("p" if k % 3 else "q") / ("deep" if k % 2 else "")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{k:02d}.jsonl{kinds[k % len(kinds)]}"
        chunk = rows[30 * k:30 * k + 30]
        raw = b"".join(textgen_json(r) + (b"\r\n" if k % 4 == 1 else b"\n") for r in chunk)
        path.write_bytes(COMPRESSORS[kinds[k % len(kinds)]](raw))
        listed.append(str(path))
    listed.sort()
    base = _job(listed, tmp_path, "base", block_size=2048)
    build_and_compare(tmp_path, **base)
    pattern = str(tmp_path / "corpus" / "**" / "*.jsonl.*")
    for name, extra in (("multi2", dict(options=["--direct_running_mode=multi_processing",
                                                 "--direct_num_workers=2"])),
                        ("dask", dict(runner=DaskRunner(),
                                      options=["--dask_client_address", dask_cluster.scheduler_address]))):
        run_pipeline(**_job([pattern], tmp_path, name, block_size=1024, build_batch=[7], **extra))
        assert_same_outputs(tmp_path / "base", tmp_path / name)
