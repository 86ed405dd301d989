"""A damaged dataset is refused in both languages by every command that reads it.

Each corruption below is made on a copy of a small dataset built with the real
pipeline, then run through ``inspect``, ``export --format megatron``, ``report`` and
the Python reader: exit 2 (or a ``ReaderError``), an ``[english]`` and a ``[vietnam]``
block that both name the damaged file, no traceback, and nothing left under the
export's output prefix. ``verify`` lists such problems as a report (exit 1) instead.
"""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO_DIR, quiet, write_jsonl

from mintdim_beam.cli.commands import main
from mintdim_beam.errors import DatasetAccessError, MintDimError, ReaderError, error_from_dict

DEMO_MODEL = str(DEMO_DIR / "demo.model")
UNIT = 64
N_SEG = 4                     # "Q: ", q, "\nA: ", a
SLOTS = 1 + N_SEG + UNIT
SHARD = f"unit_{UNIT}/shard_000000.bin"
_WORDS = "the bees make honey in the hive and the queen lays eggs while workers gather nectar".split()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from mintdim_beam import pipeline

    root = tmp_path_factory.mktemp("read_errors")
    rows = [{"q": " ".join(_WORDS[:2 + i % 5]), "a": " ".join(_WORDS[i % 7:i % 7 + 3 + (i * 5) % 9])}
            for i in range(14)]
    src = write_jsonl(root / "src.jsonl", rows)
    out = root / "out"
    (pipeline("unit-build")
     .source.jsonl(files=[src], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"])
     .tokenizer.sentencepiece(files=[DEMO_MODEL])
     .units(sizes=[[UNIT]], build_batch=[7])
     .output.dir(str(out), samples_per_shard=[4])
     .run(echo=quiet))
    return out


def _patch(d: Path, record: int, slot: int, value=None, delta: int = 0) -> None:
    """Rewrite one uint16 slot of a record of the first shard."""
    path = d / SHARD
    records = np.fromfile(path, "<u2").reshape(-1, SLOTS)
    records[record, slot] = value if value is not None else int(records[record, slot]) + delta
    records.tofile(path)


def _swap_records(d: Path) -> None:
    """The first two rows (of different lengths) point at each other's record."""
    path = d / "sample_index.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["token_count"] != rows[1]["token_count"]
    rows[0]["shard_record"], rows[1]["shard_record"] = rows[1]["shard_record"], rows[0]["shard_record"]
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), encoding="utf-8")


def _truncate(d: Path) -> None:
    path = d / SHARD
    path.write_bytes(path.read_bytes()[:-3])


# An export compares each file with SHA256SUMS before reading its records, so it names
# the file whose sha256 changed.
CHECKSUM = ("SHA256SUMS records", "SHA256SUMS ghi")

# corruption -> (damage, the file both blocks must name, an English and a Vietnamese
# fragment[, what an export names instead: file, English, Vietnamese])
CORRUPTIONS = {
    "bad magic": (lambda d: _patch(d, 0, 0, value=0x1234), SHARD,
                  "magic is 0x1234, expected 0xffff", "magic là 0x1234, đúng ra phải là 0xffff", (SHARD, *CHECKSUM)),
    "truncated shard": (_truncate, SHARD, "is not a whole number of 138-byte records (truncated or corrupt shard)",
                        "không phải là một số nguyên lần bản ghi 138 byte (shard bị cắt cụt hoặc bị hỏng)"),
    "id >= vocab": (lambda d: _patch(d, 0, 1 + N_SEG, value=800), SHARD,
                    "token id 800 at payload position 0 is >= the vocabulary size 800",
                    "token id 800 ở vị trí payload 0 >= kích thước vocabulary 800", (SHARD, *CHECKSUM)),
    "flipped header length": (lambda d: _patch(d, 0, 1, delta=-1), SHARD,
                              "sample_index.jsonl says token_count 12",
                              "nhưng sample_index.jsonl ghi token_count 12", (SHARD, *CHECKSUM)),
    "swapped index rows": (_swap_records, SHARD, "the index row points elsewhere (rows swapped or edited)",
                           "dòng index lại trỏ tới chỗ khác (các dòng bị đổi chỗ hoặc bị sửa)",
                           ("sample_index.jsonl", *CHECKSUM)),
    "missing shard": (lambda d: (d / f"unit_{UNIT}" / "shard_000001.bin").unlink(), f"unit_{UNIT}",
                      "shards were deleted, added or renamed", "shard đã bị xoá, thêm hoặc đổi tên"),
    "manifest not JSON": (lambda d: (d / "manifest.json").write_text("{not json", encoding="utf-8"),
                          "manifest.json", "not valid JSON (", "không phải JSON hợp lệ ("),
    "missing directory": (shutil.rmtree, None, "no manifest.json; not a published mintdim output",
                          "không có manifest.json; đây không phải output mintdim đã publish"),
}


RECORD_DAMAGE = ("bad magic", "id >= vocab", "flipped header length", "swapped index rows")


class Damaged:
    def __init__(self, name: str, d: Path):
        damage, named, self.english, self.vietnamese, *export = CORRUPTIONS[name]
        self.name, self.d, self.named = name, d, named or str(d)
        self.export = export[0] if export else (self.named, self.english, self.vietnamese)


def _damage(built: Path, tmp_path: Path, name: str) -> Damaged:
    d = tmp_path / "ds"
    shutil.copytree(built, d)
    CORRUPTIONS[name][0](d)
    return Damaged(name, d)


@pytest.fixture(params=sorted(CORRUPTIONS))
def damaged(request, built, tmp_path) -> Damaged:
    return _damage(built, tmp_path, request.param)


def _both_blocks(text: str, d: Path, named: str, english: str, vietnamese: str, cls: str = "ReaderError") -> None:
    assert "Traceback" not in text
    en, vi = text.strip().split("\n\n[vietnam] ")
    assert en.startswith(f"[english] {cls}: {d}") and vi.startswith(f"{cls}: {d}")
    assert named in en and named in vi
    assert english in en and vietnamese in vi


def test_the_reader_raises_a_bilingual_reader_error_where_verify_lists_problems(damaged, capsys):
    from mintdim_beam.reader import open_output

    d, named, english, vietnamese = damaged.d, damaged.named, damaged.english, damaged.vietnamese
    with pytest.raises(ReaderError, match=re.escape(english)) as exc:
        list(open_output(str(d)))
    err = exc.value
    assert isinstance(err, MintDimError)
    _both_blocks(str(err), d, named, english, vietnamese)
    assert err.path == str(d) or err.file == str(d / "manifest.json")
    if named == SHARD:
        assert err.shard == SHARD and SHARD in err.vietnamese
    # the same error, facts and text, after a trip to another process or through JSON
    for rebuilt in (pickle.loads(pickle.dumps(err)), error_from_dict(json.loads(json.dumps(err.to_dict())))):
        assert type(rebuilt) is ReaderError and str(rebuilt) == str(err)
        assert (rebuilt.shard, rebuilt.record, rebuilt.sample_id) == (err.shard, err.record, err.sample_id)
    if d.exists():   # verify reports what it finds: exit 1, nothing on stderr
        capsys.readouterr()
        assert main(["verify", str(d)]) == 1
        out, err = capsys.readouterr()
        assert "verify FAILED" in out and not err


@pytest.mark.parametrize("name", RECORD_DAMAGE)
def test_a_record_error_names_the_shard_record_and_sample(built, tmp_path, name):
    from mintdim_beam.reader import open_output

    damaged = _damage(built, tmp_path, name)
    with pytest.raises(ReaderError) as exc:
        open_output(str(damaged.d)).sample(0)
    err = exc.value
    assert (err.shard, err.sample_id) == (SHARD, 0) and err.record in (0, 1)
    assert f"{SHARD} record {err.record} (sample 0, sample_index.jsonl line 1)" in err.english
    assert f"{SHARD} bản ghi {err.record} (sample 0, sample_index.jsonl dòng 1)" in err.vietnamese


@pytest.mark.parametrize("command", ["inspect", "export", "report"])
def test_every_command_refuses_in_both_languages(damaged, tmp_path, capsys, command):
    d, named, english, vietnamese = damaged.d, damaged.named, damaged.english, damaged.vietnamese
    out = tmp_path / "exported"
    argv = {"inspect": ["inspect", str(d), "--sample-id", "0"],
            "export": ["export", str(d), str(out), "--format", "megatron"],
            "report": ["report", str(d), "-o", str(tmp_path / "report.html")]}[command]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    if command == "export":
        named, english, vietnamese = damaged.export
    _both_blocks(err, d, named, english, vietnamese)
    assert sorted(p.name for p in tmp_path.iterdir()) == (["ds"] if d.exists() else [])   # no export, no page


def test_verify_of_a_missing_directory_is_a_bilingual_error(built, tmp_path, capsys):
    """verify is a report (exit 1, problems listed in English) of a dataset it can look
    at; with no directory there is nothing to report on: exit 2, in both languages."""
    d = tmp_path / "gone"
    capsys.readouterr()
    assert main(["verify", str(d)]) == 2
    out, err = capsys.readouterr()
    assert not out
    assert err.strip() == (f"[english] DatasetAccessError: mintdim-beam verify: no such directory: {d}\n\n"
                           f"[vietnam] DatasetAccessError: mintdim-beam verify: không có thư mục này: {d}")


def test_a_command_that_fails_outside_the_dataset_says_so_in_both_languages(built, tmp_path, capsys):
    """The report's page cannot be written: the system's words, in a bilingual error."""
    target = tmp_path / "no_such_folder" / "report.html"
    capsys.readouterr()
    assert main(["report", str(built), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    en, vi = err.strip().split("\n\n[vietnam] ")
    assert en.startswith("[english] DatasetAccessError: mintdim-beam report: [Errno 2] No such file or directory")
    assert vi.startswith("DatasetAccessError: mintdim-beam report thất bại: [Errno 2] No such file or directory")
    assert str(target) in en and str(target) in vi
    assert issubclass(DatasetAccessError, MintDimError)


def test_a_data_loader_worker_re_raises_a_reader_error(built, tmp_path):
    """A PyTorch DataLoader re-raises a worker's error as ``type(err)(text)``: the class
    survives, the text holds the worker's two blocks, and the Vietnamese block says so."""
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from mintdim_beam.reader import open_output

    damaged = _damage(built, tmp_path, "bad magic")
    train = open_output(str(damaged.d)).causal_lm(return_tensors="pt")
    with pytest.raises(ReaderError) as exc:
        list(DataLoader(train, batch_size=2, num_workers=1))
    err = exc.value
    assert err.kind == "relayed"
    assert "DataLoader worker" in err.english and "magic is 0x1234, expected 0xffff" in err.english
    assert "magic là 0x1234, đúng ra phải là 0xffff" in err.english      # the worker's [vietnam] block
    assert err.vietnamese == ("ReaderError: lỗi được chuyển tiếp từ một tiến trình khác; nội dung gốc, bằng cả "
                              "hai ngôn ngữ, nằm trong khối [english]")


@pytest.mark.parametrize("argv, english, vietnamese", [
    (["inspect", "{d}", "--sample-id", "99"],
     "mintdim-beam inspect: sample 99 has no record in {d} (written sample ids: 0..13)",
     "mintdim-beam inspect: sample 99 không có bản ghi nào trong {d} (các sample id đã ghi: 0..13)"),
    (["inspect", "{d}", "--shard", SHARD],
     "mintdim-beam inspect: --shard needs --record K", "mintdim-beam inspect: --shard cần đi kèm --record K"),
    (["plan", "{d}", "--sizes", "32,16"],
     "mintdim-beam plan: --sizes must be ascending positive integers, got '32,16'",
     "mintdim-beam plan: --sizes phải là các số nguyên dương tăng dần, hiện tại là '32,16'"),
    (["plan", "{d}/gone"],
     "mintdim-beam plan: no such directory: {d}/gone", "mintdim-beam plan: không có thư mục này: {d}/gone"),
])
def test_a_command_s_own_refusal_is_bilingual(built, capsys, argv, english, vietnamese):
    capsys.readouterr()
    assert main([a.format(d=built) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert not out
    assert err.strip() == (f"[english] DatasetAccessError: {english.format(d=built)}\n\n"
                           f"[vietnam] DatasetAccessError: {vietnamese.format(d=built)}")
