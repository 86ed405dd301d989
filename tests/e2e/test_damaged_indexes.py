"""Damage the reader used to take in silence (or crash on) is refused in both languages.

Each case edits a copy of a small dataset built with the real pipeline, in both index
layouts (one file per index, and ``index_layout: parts``), the way an operator's copy
or a hand edit would: an index folder replaced by a file, a part duplicated, a blank
line, a row pointing at another shard, rows out of order, a shard replaced by a link
to its neighbour, an empty unit's marker deleted, a row's ``empty_fields`` edited.
The reader, ``inspect`` and ``export`` refuse it with a ``ReaderError`` (exit 2, an
``[english]`` and a ``[vietnam]`` block naming the file), ``verify`` lists it (exit 1).
The edits are made without checksums' help: the reader opened without ``checksums``
reads neither ``SHA256SUMS`` nor the manifest's record of it, and the dataset's
``SHA256SUMS`` is removed where a case is about what ``verify`` sees besides it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import DEMO_DIR, quiet, write_jsonl

from mintdim_beam.cli.commands import main
from mintdim_beam.errors import MintDimError, ReaderError

DEMO_MODEL = str(DEMO_DIR / "demo.model")
_WORDS = "the bees make honey in the hive and the queen lays eggs while workers gather nectar".split()
SIZES = [16, 32, 4096, 8192]    # 8192 stays empty: it gets EMPTY_UNIT.md


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict:
    """``{"file": DIR, "parts": DIR}``: the same job in both index layouts."""
    from mintdim_beam import pipeline

    root = tmp_path_factory.mktemp("damaged")
    rows = [{"q": " ".join(_WORDS[:2 + i % 5]), "a": "" if i % 4 == 1 else " ".join(_WORDS[i % 7:i % 7 + 2 + (i * 5) % 11])}
            for i in range(80)]
    src = write_jsonl(root / "src.jsonl", rows)
    out = {}
    for layout in ("file", "parts"):
        out[layout] = root / layout
        (pipeline("unit-build")
         .source.jsonl(files=[src], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"])
         .tokenizer.sentencepiece(files=[DEMO_MODEL])
         .units(sizes=[SIZES], build_batch=[7])
         .output.dir(str(out[layout]), samples_per_shard=[4])
         .run(echo=quiet, block_size=1024, index_layout=layout))
    return out


def _copy(builds: dict, layout: str, tmp_path: Path) -> Path:
    d = tmp_path / "ds"
    shutil.copytree(builds[layout], d, symlinks=True)
    return d


def _rows(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_rows(path: Path, rows: list) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def _refused(capsys, argv: list, *english: str, vietnamese: str = "") -> str:
    """``mintdim-beam ARGV`` exits 2 with a ReaderError in both languages, each English
    fragment in the English block; returns the English block."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    en, vi = err.strip().split("\n\n[vietnam] ")
    assert en.startswith("[english] ReaderError: ") and vi.startswith("ReaderError: ")
    for fragment in english:
        assert fragment in en, (fragment, err)
    assert vietnamese in vi, (vietnamese, err)
    return en


def _reader_refuses(d: Path, english: str, vietnamese: str) -> ReaderError:
    from mintdim_beam.reader import open_output

    with pytest.raises(ReaderError, match=re.escape(english)) as caught:
        reader = open_output(str(d))
        list(reader)
        for unit in reader.unit_sizes:
            list(reader.batches(unit))
    err = caught.value
    assert isinstance(err, MintDimError) and vietnamese in err.vietnamese
    return err


def _verify(capsys, d: Path, *args) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verify", str(d), *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


# --------------------------------------------------------------------------- 1. unreadable index files


@pytest.mark.parametrize("folder", ["sample_index", "unk_index", "overflow_index"])
def test_an_index_folder_replaced_by_a_file_is_named(builds, tmp_path, capsys, folder):
    d = _copy(builds, "parts", tmp_path)
    shutil.rmtree(d / folder)
    (d / folder).write_text("not a folder\n", encoding="utf-8")
    part = f"{folder}/part-00000.jsonl"
    english = f"{d}: {part}: cannot be read (Not a directory)"
    vietnamese = f"{d}: {part}: không đọc được (Not a directory)"
    if folder == "sample_index":
        err = _reader_refuses(d, english, vietnamese)
        assert (err.path, err.file) == (str(d), part)
        _refused(capsys, ["export", d, tmp_path / "out", "--format", "megatron"], english, vietnamese=vietnamese)
        assert not list(tmp_path.glob("out*"))
    _refused(capsys, ["inspect", d, "--sample-id", "0"], english, vietnamese=vietnamese)
    code, out = _verify(capsys, d)
    assert code == 1
    assert f"{d}: {folder}: not a directory: manifest.json publishes this index as parts in this folder" in out


def test_an_index_file_replaced_by_a_directory_is_named(builds, tmp_path, capsys):
    d = _copy(builds, "file", tmp_path)
    for name in ("unk_index.jsonl", "duplicate_index.jsonl"):
        (d / name).unlink()
        (d / name).mkdir()
    _refused(capsys, ["inspect", d, "--sample-id", "0"], f"{d}: unk_index.jsonl: cannot be read (Is a directory)",
             vietnamese="unk_index.jsonl: không đọc được (Is a directory)")
    _refused(capsys, ["report", d, "-o", tmp_path / "r.html"], f"{d}: duplicate_index.jsonl: cannot be read")
    code, out = _verify(capsys, d)
    assert code == 1
    for name in ("unk_index.jsonl", "duplicate_index.jsonl"):
        assert f"{d}: {name}: cannot be read (Is a directory; an index file is a file of JSON lines)" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pipe_in_place_of_an_index_file_is_refused_not_waited_on(builds, tmp_path, capsys):
    d = _copy(builds, "file", tmp_path)
    for name in ("sample_index.jsonl", "unk_index.jsonl"):
        (d / name).unlink()
        os.mkfifo(d / name)
    _reader_refuses(d, f"{d}: sample_index.jsonl: cannot be read (not a regular file)",
                    f"{d}: sample_index.jsonl: không đọc được (not a regular file)")
    code, out = _verify(capsys, d)
    assert code == 1
    for name in ("sample_index.jsonl", "unk_index.jsonl"):
        assert f"{d}: {name}: cannot be read (not a regular file; an index file is a file of JSON lines)" in out


# --------------------------------------------------------------------------- 3-5. sample_index.jsonl rows


def test_a_blank_line_in_the_index_is_refused(builds, tmp_path, capsys):
    d = _copy(builds, "file", tmp_path)
    path = d / "sample_index.jsonl"
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:1] + [b""] + lines[1:]))
    english = f"{d}: sample_index.jsonl line 2: blank line: the build never writes one"
    vietnamese = f"{d}: sample_index.jsonl dòng 2: dòng trống: build không bao giờ ghi dòng trống"
    err = _reader_refuses(d, english, vietnamese)
    assert (err.path, err.file, err.line) == (str(d), "sample_index.jsonl", 2)
    _refused(capsys, ["inspect", d, "--sample-id", "5"], english, vietnamese=vietnamese)
    code, out = _verify(capsys, d, "--no-checksums")
    assert code == 1 and f"{d}: sample_index.jsonl line 2: blank line: the build never writes one" in out


def test_a_blank_line_in_a_part_is_refused(builds, tmp_path):
    d = _copy(builds, "parts", tmp_path)
    first = (d / "sample_index" / "part-00000.jsonl").read_bytes().count(b"\n")
    part = d / "sample_index" / "part-00001.jsonl"
    part.write_bytes(b"\n" + part.read_bytes())
    _reader_refuses(d, f"sample_index.jsonl line {first + 1}: blank line", "dòng trống")


def test_verify_lists_a_blank_line_in_the_other_indexes(builds, tmp_path, capsys):
    d = _copy(builds, "file", tmp_path)
    for name in ("unk_index.jsonl", "duplicate_index.jsonl", "overflow_index.jsonl"):
        (d / name).write_bytes(b"\n" + (d / name).read_bytes())
    code, out = _verify(capsys, d, "--no-checksums")
    assert code == 1
    for name in ("unk_index.jsonl", "duplicate_index.jsonl", "overflow_index.jsonl"):
        assert f"{d}: {name} line 1: blank line: the build never writes one" in out, out
    assert main(["inspect", str(d), "--sample-id", "0", "--json"]) == 0     # readers skip it: no row there


def _other_shard(rows: list) -> int:
    """A row of the first unit with a later shard of that unit: its ``shard_path`` is
    set to shard 0 of the unit (same unit, same record number, another shard)."""
    k = next(k for k, r in enumerate(rows) if r["shard_path"].endswith("shard_000001.bin"))
    rows[k]["shard_path"] = rows[k]["shard_path"].replace("shard_000001.bin", "shard_000000.bin")
    return k


def _other_unit(rows: list) -> int:
    """A row's ``shard_path`` set to the same shard of another unit (its unit_size kept)."""
    k = 3
    other = next(s for s in SIZES if s != rows[k]["unit_size"])
    rows[k]["shard_path"] = f"unit_{other}/" + rows[k]["shard_path"].split("/")[1]
    return k


@pytest.mark.parametrize("edit", [_other_shard, _other_unit])
def test_a_row_pointing_at_another_shard_is_refused_when_the_index_loads(builds, tmp_path, capsys, edit):
    from mintdim_beam.reader import open_output

    d = _copy(builds, "file", tmp_path)
    rows = _rows(d / "sample_index.jsonl")
    k = edit(rows)
    _write_rows(d / "sample_index.jsonl", rows)
    elsewhere = next(r["sample_id"] for r in rows if r["unit_size"] != rows[k]["unit_size"])
    reader = open_output(str(d))
    with pytest.raises(ReaderError) as caught:
        reader.sample(elsewhere)          # a sound row: the index is refused as it loads
    err = caught.value
    assert err.path == str(d) and str(err).startswith(f"[english] ReaderError: {d}: ")
    if edit is _other_shard:
        assert (err.sample_id, err.line) == (rows[k]["sample_id"], k + 1)
        assert "the index row points elsewhere (rows swapped or edited)" in err.english
        assert "dòng index lại trỏ tới chỗ khác" in err.vietnamese
    else:
        assert f"sample_index.jsonl line {k + 1}: shard_path {rows[k]['shard_path']} is not in unit_" in err.english
        assert f"sample_index.jsonl dòng {k + 1}: shard_path" in err.vietnamese
    _refused(capsys, ["inspect", d, "--sample-id", elsewhere], str(d), f"line {k + 1}")


def test_rows_out_of_sample_id_order_are_refused(builds, tmp_path, capsys):
    """Two whole lines swapped: each row still describes its record truly, but the
    index is no longer in the ascending order the build writes."""
    d = _copy(builds, "file", tmp_path)
    path = d / "sample_index.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_text("".join(lines), encoding="utf-8")
    ids = [json.loads(line)["sample_id"] for line in lines[1:3]]
    english = f"{d}: sample_index.jsonl line 3: sample_id {ids[1]} follows sample_id {ids[0]}: rows are written " \
              f"in ascending sample_id"
    vietnamese = f"sample_index.jsonl dòng 3: sample_id {ids[1]} đứng sau sample_id {ids[0]}"
    err = _reader_refuses(d, english, vietnamese)
    assert (err.sample_id, err.line) == (ids[1], 3)
    _refused(capsys, ["inspect", d, "--sample-id", ids[0]], english, vietnamese=vietnamese)
    code, out = _verify(capsys, d, "--no-checksums")
    assert code == 1 and "(rows must be in ascending sample_id)" in out


# --------------------------------------------------------------------------- 2. files the layout does not name


def test_a_part_the_manifest_does_not_count_is_refused(builds, tmp_path, capsys):
    d = _copy(builds, "parts", tmp_path)
    count = json.loads((d / "manifest.json").read_text())["indexes"]["parts"]["sample_index.jsonl"]
    shutil.copy(d / "sample_index" / "part-00000.jsonl", d / "sample_index" / "part-99999.jsonl")
    english = (f"{d}: sample_index/part-99999.jsonl: not one of the files manifest.json names for sample_index.jsonl "
               f"(sample_index/part-00000.jsonl .. sample_index/part-{count - 1:05d}.jsonl)")
    vietnamese = f"{d}: sample_index/part-99999.jsonl: không thuộc các file mà manifest.json ghi cho sample_index.jsonl"
    _reader_refuses(d, english, vietnamese)
    _refused(capsys, ["inspect", d, "--sample-id", "0"], english, vietnamese=vietnamese)
    for fmt, out in (("megatron", tmp_path / "out"), ("parquet", tmp_path / "out.parquet")):
        _refused(capsys, ["export", d, out, "--format", fmt], english, vietnamese=vietnamese)
    assert not list(tmp_path.glob("out*"))
    code, out = _verify(capsys, d)
    assert code == 1
    assert f"{d}: sample_index/part-99999.jsonl: not one of the sample_index.jsonl parts manifest.json counts" in out


def test_a_single_file_beside_its_parts_or_parts_beside_a_single_file_are_refused(builds, tmp_path):
    d = _copy(builds, "parts", tmp_path)
    (d / "sample_index.jsonl").write_bytes((d / "sample_index" / "part-00000.jsonl").read_bytes())
    _reader_refuses(d, f"{d}: sample_index.jsonl: not one of the files manifest.json names for sample_index.jsonl",
                    "không thuộc các file")
    single = tmp_path / "single"
    shutil.copytree(builds["file"], single)
    (single / "sample_index").mkdir()
    (single / "sample_index" / "part-00000.jsonl").write_bytes((single / "sample_index.jsonl").read_bytes())
    _reader_refuses(single, f"{single}: sample_index/part-00000.jsonl: not one of the files manifest.json names for "
                            f"sample_index.jsonl (sample_index.jsonl)", "không thuộc các file")


def test_a_part_overwritten_by_another_repeats_sample_ids_and_is_refused(builds, tmp_path, capsys):
    d = _copy(builds, "parts", tmp_path)
    shutil.copy(d / "sample_index" / "part-00000.jsonl", d / "sample_index" / "part-00001.jsonl")
    first = json.loads((d / "sample_index" / "part-00000.jsonl").read_text().splitlines()[0])["sample_id"]
    _reader_refuses(d, f"both describe sample {first}", f"cùng mô tả sample {first}")
    for fmt in ("megatron", "parquet"):
        _refused(capsys, ["export", d, tmp_path / "out", "--format", fmt], str(d))


# --------------------------------------------------------------------------- 6. one file under two shard names


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_a_shard_that_is_another_shard_s_file_is_refused_at_open(builds, tmp_path, capsys, link):
    """The records of shard 1 under shard 0's name: with four records each and
    lengths that may agree, only their being one file tells (without checksums)."""
    from mintdim_beam.reader import open_output

    d = _copy(builds, "file", tmp_path)
    unit = d / f"unit_{SIZES[0]}"
    (unit / "shard_000000.bin").unlink()
    if link == "symlink":
        os.symlink("shard_000001.bin", unit / "shard_000000.bin")
    else:
        os.link(unit / "shard_000001.bin", unit / "shard_000000.bin")
    named, other = f"unit_{SIZES[0]}/shard_000000.bin", f"unit_{SIZES[0]}/shard_000001.bin"
    if link == "hard link":
        named, other = other, named             # two names of one file: the second one listed
    english = f"{d}: {named}: is the same file as {other} (a link to it, or a hard link)"
    vietnamese = f"{d}: {named}: là cùng một file với {other}"
    with pytest.raises(ReaderError, match=re.escape(english)) as caught:
        open_output(str(d))
    assert caught.value.shard == named and vietnamese in caught.value.vietnamese
    _refused(capsys, ["inspect", d, "--sample-id", "0"], english, vietnamese=vietnamese)
    _refused(capsys, ["export", d, tmp_path / "out", "--format", "parquet"], english, vietnamese=vietnamese)
    code, out = _verify(capsys, d, "--no-checksums")
    assert code == 1 and f"{d}: {named}: is the same file as {other} (a link to it, or a hard link)" in out


# --------------------------------------------------------------------------- 7. the empty unit's marker


def test_an_empty_unit_without_its_marker_is_listed_by_verify(builds, tmp_path, capsys):
    """DESIGN.md §4: a declared unit with no samples gets EMPTY_UNIT.md and no shards."""
    d = _copy(builds, "parts", tmp_path)
    (d / f"unit_{SIZES[-1]}" / "EMPTY_UNIT.md").unlink()
    code, out = _verify(capsys, d)
    assert code == 1 and f"{d}: unit_{SIZES[-1]}: unit has no shards and no EMPTY_UNIT.md marker" in out


# --------------------------------------------------------------------------- 8. columns the source decides


@pytest.mark.parametrize("layout", ["file", "parts"])
def test_verify_with_the_tokenizer_finds_the_sound_dataset_sound(builds, capsys, layout):
    code, out = _verify(capsys, builds[layout], "--tokenizer", "--sample", "0")
    assert code == 0 and "80 samples re-tokenized" in out, out


def test_verify_with_the_tokenizer_compares_every_column_the_source_decides(builds, tmp_path, capsys):
    d = _copy(builds, "file", tmp_path)
    rows = _rows(d / "sample_index.jsonl")
    emptied = next(r for r in rows if r["empty_fields"])
    emptied["empty_fields"] = []
    filled = next(r for r in rows if not r["empty_fields"])
    filled["empty_fields"] = ["q"]
    _write_rows(d / "sample_index.jsonl", rows)
    code, out = _verify(capsys, d, "--no-checksums")
    assert code == 0, out                   # nothing else tells
    code, out = _verify(capsys, d, "--no-checksums", "--tokenizer", "--sample", "0")
    assert code == 1
    for row, source in ((emptied, ["a"]), (filled, [])):
        line = rows.index(row) + 1
        assert (f"{d}: sample_index.jsonl line {line}: {row['source_file']}:{row['source_line']} (sample "
                f"{row['sample_id']}): empty_fields is {row['empty_fields']}, the source's empty fields are "
                f"{source}") in out, out
