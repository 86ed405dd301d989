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

from conftest import quiet, write_jsonl

from mintdim_beam.cli import main
from mintdim_beam.errors import MintDimError, ReaderError

DEMO_MODEL = str(Path(__file__).resolve().parents[1] / "mintdim_beam" / "demo" / "demo.model")
_WORDS = "the bees make honey in the hive and the queen lays eggs while workers gather nectar".split()
SIZES = [16, 32, 4096]          # 4096 stays empty: it gets EMPTY_UNIT.md


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
