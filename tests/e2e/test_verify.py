"""``verify`` on a clean build and on copies corrupted in one precise way each.

Every corruption must be reported with the file and, for shards, the record; a clean
build must pass with a one-line summary and exit 0.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import read_jsonl
from test_reader import SAMPLES_PER_SHARD, make_dataset

from mintdim_beam.cli.consumer_commands import main as consumer_main
from mintdim_beam.reader.verify import verify_output

N_SEG = 4          # Question literal, q, Answer literal, a
U = 48             # the unit the corruptions hit
SLOTS = 1 + N_SEG + U
BPT = 2            # uint16


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> str:
    return make_dataset(tmp_path_factory.mktemp("verify"))


@pytest.fixture
def copy(built, tmp_path):
    def make() -> Path:
        dst = tmp_path / "copy"
        shutil.copytree(built, dst)
        return dst

    return make


def messages(report) -> list:
    return [str(p) for p in report.problems]


def changed(d, *names) -> list:
    """Problems of a default ``verify`` of ``d``, after checking that they include one
    checksum mismatch for each of the files ``names`` (the ones a test edited), and no
    other; returns the rest."""
    found = messages(verify_output(str(d)))
    sums = [m for m in found if "SHA256SUMS records" in m]
    assert sorted(m.split(":")[0] for m in sums) == sorted(names), found
    for m in sums:
        assert m.endswith("(the file changed after the build)") and " sha256 is " in m
    return [m for m in found if m not in sums]


def shard(d: Path, k: int = 0) -> Path:
    return d / f"unit_{U}" / f"shard_{k:06d}.bin"


def patch_slot(path: Path, record: int, slot: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    at = (record * SLOTS + slot) * BPT
    data[at:at + BPT] = int(value).to_bytes(BPT, "little")
    path.write_bytes(bytes(data))


def read_slot(path: Path, record: int, slot: int) -> int:
    at = (record * SLOTS + slot) * BPT
    return int.from_bytes(path.read_bytes()[at:at + BPT], "little")


def test_clean_build_passes(built, capsys):
    report = verify_output(built, tokenizer="manifest", sample_rows=0)
    assert report.ok, messages(report)
    assert report.samples == 26 and report.retokenized == 26
    assert consumer_main(["verify", built]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"verify OK {built}: 26 samples")
    assert "; sha256 of 16 files, magic" in out[0]


def test_flipped_magic_byte(copy):
    d = copy()
    data = bytearray(shard(d).read_bytes())
    data[2 * SLOTS * BPT] ^= 0x01            # record 2, slot 0
    shard(d).write_bytes(bytes(data))
    assert changed(d, f"unit_{U}/shard_000000.bin") == [
        f"unit_{U}/shard_000000.bin record 2: magic is 0xfffe, expected 0xffff"]


def test_flipped_header_length(copy):
    d = copy()
    patch_slot(shard(d), 1, 4, read_slot(shard(d), 1, 4) - 1)   # answer length one short
    found = changed(d, f"unit_{U}/shard_000000.bin")
    assert any(m.startswith(f"unit_{U}/shard_000000.bin record 1: header lengths sum to") and
               "sample_index.jsonl line" in m for m in found)
    assert any(m.startswith(f"unit_{U}/shard_000000.bin record 1: pad tail") for m in found)
    assert any(m.startswith("stats.json: total_tokens") for m in found)


def test_token_id_beyond_vocabulary(copy):
    d = copy()
    patch_slot(shard(d), 3, 1 + N_SEG + 2, 900)                  # vocab is 800
    assert changed(d, f"unit_{U}/shard_000000.bin") == [
        f"unit_{U}/shard_000000.bin record 3: token id 900 at payload position 2 is >= vocab size 800"]


def test_dirty_pad_tail(copy):
    d = copy()
    patch_slot(shard(d, 1), 0, SLOTS - 1, 5)
    found = changed(d, f"unit_{U}/shard_000001.bin")
    assert found == [f"unit_{U}/shard_000001.bin record 0: pad tail: payload slot {U - 1} holds 5 after the "
                     f"{found[0].split('after the ')[1].split(' ')[0]} written tokens, expected pad id 0"]


def test_truncated_shard(copy):
    d = copy()
    last = sorted((d / f"unit_{U}").glob("shard_*.bin"))[-1]
    size = last.stat().st_size
    last.write_bytes(last.read_bytes()[:size - 10])
    records = size // (SLOTS * BPT)
    found = messages(verify_output(str(d)))
    rel = f"unit_{U}/{last.name}"
    assert found[0].startswith(f"{rel} record {records - 1}: truncated: {size - 10} bytes")
    assert any(m.startswith("sample_index.jsonl line") and f"record {records - 1} of {rel}, which does not exist" in m
               for m in found)
    assert f"histogram.json: unit {U}: 13 samples, recounted 12 records in unit_{U}/" in found


def test_deleted_sample_index_row(copy):
    d = copy()
    index = d / "sample_index.jsonl"
    lines = index.read_text(encoding="utf-8").splitlines(keepends=True)
    victim = next(json.loads(l) for l in lines if json.loads(l)["unit_size"] == U
                  and json.loads(l)["shard_path"].endswith("000001.bin"))
    index.write_text("".join(l for l in lines if json.loads(l)["sample_id"] != victim["sample_id"]),
                     encoding="utf-8")
    assert changed(d, "sample_index.jsonl") == [
        f"{victim['shard_path']} record {victim['shard_record']}: no sample_index.jsonl row points to this record"]


def test_row_pointing_elsewhere(copy):
    d = copy()
    index = d / "sample_index.jsonl"
    rows = [json.loads(l) for l in index.read_text(encoding="utf-8").splitlines()]
    k = next(i for i, r in enumerate(rows) if r["unit_size"] == U)
    rows[k]["shard_record"] = SAMPLES_PER_SHARD - 1         # claims another record's slot
    index.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows),
                     encoding="utf-8")
    found = messages(verify_output(str(d)))
    assert any("record 0: no sample_index.jsonl row points to this record" in m for m in found)
    assert any(f"record {SAMPLES_PER_SHARD - 1}: 2 sample_index.jsonl rows point to this record" in m for m in found)
    assert any("ascending sample_id" in m and m.startswith("sample_index.jsonl line") for m in found)


def test_changed_stats_and_histogram(copy):
    d = copy()
    stats = json.loads((d / "stats.json").read_text())
    stats["total_tokens"] += 1
    stats["units"][str(U)]["shards"] = 9
    stats["unk_tokens"] = 0
    (d / "stats.json").write_text(json.dumps(stats, indent=2))
    hist = json.loads((d / "histogram.json").read_text())
    hist["24"] = 3
    (d / "histogram.json").write_text(json.dumps(hist, indent=2))
    found = changed(d, "stats.json", "histogram.json")
    assert f"stats.json: total_tokens is {stats['total_tokens']}, recounted from the shards: {stats['total_tokens'] - 1}" in found
    assert f"stats.json: units.{U}.shards is 9, recounted from the shards: 4" in found
    assert "stats.json: unk_tokens is 0, recounted from unk_index.jsonl: 3" in found
    assert "histogram.json: unit 24: 3 samples, recounted 2 records in unit_24/" in found
    assert len(found) == 4


def test_missing_shard_and_index_file(copy):
    d = copy()
    shard(d, 0).unlink()
    (d / "unk_index.jsonl").unlink()
    found = messages(verify_output(str(d)))
    assert f"unit_{U}/shard_000000.bin: shard is missing (later shards of the unit exist)" in found
    assert "unk_index.jsonl: index file is missing" in found


def test_unk_index_checked_against_payload(copy):
    d = copy()
    (d / "unk_index.jsonl").write_text("", encoding="utf-8")
    found = messages(verify_output(str(d)))
    assert any("payload holds UNK tokens but no unk_index.jsonl row lists its sample" in m and " record " in m
               for m in found)


def test_retokenization_catches_changed_source(tmp_path):
    d = make_dataset(tmp_path, name="src")
    src = tmp_path / "src.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[0])
    row["a"] = row["a"] + " honey"
    lines[0] = json.dumps(row) + "\n"
    src.write_text("".join(lines), encoding="utf-8")
    report = verify_output(d, tokenizer="manifest", sample_rows=0)
    found = messages(report)
    assert any(m.startswith("sample_index.jsonl line 1: ") and "src.jsonl:1 (sample 0): hash of the re-rendered" in m
               for m in found)
    assert any("record 0: " in m and "src.jsonl:1 (sample 0): segment 3 (a)" in m for m in found)
    assert found[0].startswith(f"{src}: sha256 is ") and found[0].endswith(
        ": the source changed after the build, so rows that disagree with it may be right")
    # the row's token_count, a column the source decides, disagrees too
    assert any(m.startswith("sample_index.jsonl line 1: ") and "src.jsonl:1 (sample 0): token_count is " in m
               and ", the source gives " in m for m in found)
    assert len(found) == 4


def test_cli_lists_problems_and_exits_non_zero(copy, capsys, tmp_path):
    d = copy()
    data = bytearray(shard(d).read_bytes())
    data[0] ^= 0x10
    shard(d).write_bytes(bytes(data))
    assert consumer_main(["verify", str(d)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{d}: unit_{U}/shard_000000.bin record 0: magic is 0xffef, expected 0xffff"
    assert out[1].startswith(f"{d}: unit_{U}/shard_000000.bin: sha256 is ")
    assert out[-1].startswith(f"verify FAILED {d}: 2 problems (")
    assert consumer_main(["verify", "--no-checksums", str(d)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith(f"verify FAILED {d}: 1 problem (")
    (tmp_path / "not_an_output").mkdir()
    assert consumer_main(["verify", str(tmp_path / "not_an_output")]) == 1
    assert "no manifest.json" in capsys.readouterr().out


# --------------------------------------------------------------------------- checksums


def test_sha256sums_lists_every_data_file_and_the_manifest_vouches_for_it(built):
    import hashlib
    import subprocess

    d = Path(built)
    listing = (d / "SHA256SUMS").read_bytes()
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["checksums"] == {"file": "SHA256SUMS", "sha256": hashlib.sha256(listing).hexdigest()}
    rows = [line.split("  ") for line in listing.decode().splitlines()]
    data = sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()
                  and p.name not in ("manifest.json", "build_info.json", "SHA256SUMS") and p.suffix != ".md")
    assert [name for _, name in rows] == data and len(data) == 16
    assert all(hashlib.sha256((d / name).read_bytes()).hexdigest() == digest for digest, name in rows)
    if shutil.which("sha256sum"):
        subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=d, check=True)


def test_changed_in_vocabulary_token_is_found_by_its_checksum(copy, capsys):
    d = copy()
    before = read_slot(shard(d), 2, 1 + N_SEG + 1)
    patch_slot(shard(d), 2, 1 + N_SEG + 1, before + 1 if before < 700 else before - 1)   # still a valid id
    assert verify_output(str(d), checksums=False).ok                  # every deep check passes
    found = messages(verify_output(str(d)))
    assert len(found) == 1 and found[0].startswith(f"unit_{U}/shard_000000.bin: sha256 is ")
    assert found[0].endswith("(the file changed after the build)")
    assert consumer_main(["verify", str(d)]) == 1
    assert consumer_main(["verify", "--no-checksums", str(d)]) == 0
    assert "checksums not compared" in capsys.readouterr().out


def test_edited_checksum_listing_is_reported(copy):
    d = copy()
    sums = d / "SHA256SUMS"
    lines = sums.read_text().splitlines(keepends=True)
    gone = lines.pop(3).split("  ")[1].strip()
    lines.append("0" * 64 + "  ../../etc/passwd\n")
    lines.append("0" * 64 + "  unit_48/shard_000009.bin\n")
    lines.append("not a checksum line\n")
    sums.write_text("".join(lines))
    found = messages(verify_output(str(d)))
    assert found[0].startswith("SHA256SUMS: sha256 is ") and found[0].endswith(
        "manifest.json records " + json.loads((d / "manifest.json").read_text())["checksums"]["sha256"]
        + " (the file changed after the build)")
    assert found[1:] == [
        f"SHA256SUMS line {len(lines)}: not a '<sha256 hex>  <path>' line",
        "SHA256SUMS: lists ../../etc/passwd, which is not a data file of a mintdim dataset",
        "SHA256SUMS: lists unit_48/shard_000009.bin, which does not exist",
        f"{gone}: SHA256SUMS has no line for this file",
    ]


def test_dataset_without_checksums_is_reported_unless_skipped(copy):
    d = copy()
    manifest = json.loads((d / "manifest.json").read_text())
    del manifest["checksums"]
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
    found = messages(verify_output(str(d)))
    assert len(found) == 1 and found[0].startswith("manifest.json: records no checksums")
    assert "--no-checksums" in found[0]
    assert verify_output(str(d), checksums=False).ok
    (d / "SHA256SUMS").unlink()
    manifest["checksums"] = {"file": "SHA256SUMS", "sha256": "0" * 64}
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
    assert messages(verify_output(str(d))) == ["SHA256SUMS: file is missing (manifest.json records its sha256)"]


# --------------------------------------------------------------------------- sources, keyed by sample id


def _rewrite_rows(path: Path, edit) -> None:
    rows = read_jsonl(path)
    for row in rows:
        edit(row)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows),
                    encoding="utf-8")


def test_row_moved_to_its_neighbours_source_line_is_reported(tmp_path, capsys):
    d = Path(make_dataset(tmp_path, name="src"))
    src = str(tmp_path / "src.jsonl")

    def to_neighbour(row):
        if row["sample_id"] == 7:
            row["source_line"] = 9          # sample 8's line: same file, a real line
    _rewrite_rows(d / "sample_index.jsonl", to_neighbour)
    found = messages(verify_output(str(d), tokenizer="manifest", sample_rows=0, checksums=False))
    assert found == [f"sample_index.jsonl line 8: sample 7 comes from {src}:8 (sample ids number the non-blank "
                     f"lines of the sources), but the row says {src}:9"]
    assert consumer_main(["verify", "--tokenizer", "--sample", "0", "--no-checksums", str(d)]) == 1
    assert "sample 7 comes from" in capsys.readouterr().out


def test_changed_source_file_and_unmatched_ids_are_reported(tmp_path):
    d = Path(make_dataset(tmp_path, name="src"))
    src = str(tmp_path / "src.jsonl")

    def edit(row):
        if row["sample_id"] == 3:
            row["source_file"] = str(tmp_path / "other.jsonl")
    _rewrite_rows(d / "sample_index.jsonl", edit)
    _rewrite_rows(d / "bad_record_index.jsonl", lambda row: row.update(source_line=row["source_line"] + 1))
    _rewrite_rows(d / "overflow_index.jsonl", lambda row: row.update(sample_id=row["sample_id"] + 100))
    found = messages(verify_output(str(d), tokenizer="manifest", sample_rows=0, checksums=False))
    assert (f"sample_index.jsonl line 4: sample 3 comes from {src}:4 (sample ids number the non-blank lines of "
            f"the sources), but the row says {tmp_path / 'other.jsonl'}:4") in found
    assert (f"bad_record_index.jsonl line 1: sample 12 comes from {src}:13 (sample ids number the non-blank "
            f"lines of the sources), but the row says {src}:14") in found
    assert ("overflow_index.jsonl line 1: sample 121 matches no source line: the sources hold 27 non-blank "
            "lines (sample ids 0..26)") in found


def test_sources_with_blank_lines_bom_crlf_and_gzip_match_by_id(tmp_path):
    import gzip

    from conftest import write_jsonl
    from test_reader import dataset_rows

    rows = [r for r in dataset_rows() if isinstance(r, dict)][:12]
    lines = []
    for k, row in enumerate(rows):
        lines.append(row)
        if k % 3 == 0:
            lines.append("   ")                        # blank: no sample id
    plain = make_dataset(tmp_path / "a", name="src", rows=lines)
    report = verify_output(plain, tokenizer="manifest", sample_rows=0)
    assert report.ok and report.retokenized == 12, messages(report)

    raw = Path(write_jsonl(tmp_path / "b" / "src.jsonl", lines, newline="\r\n", bom=True)).read_bytes()
    # an upper-case extension is decompressed by the build (Beam detects any case), so
    # verify must read it decompressed too: it used to read the gzip bytes as lines
    gz = tmp_path / "c" / "src.JSONL.GZ"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(raw))
    from mintdim_beam import pipeline
    from test_reader import DEMO_MODEL, TEMPLATE

    out = str(tmp_path / "c" / "out")
    (pipeline("unit-build").source.jsonl(files=[str(gz)], fields=[["q", "a"]], templates=[TEMPLATE])
     .tokenizer.sentencepiece(files=[DEMO_MODEL]).units(sizes=[[24, 48, 96]], build_batch=[7])
     .output.dir(out, samples_per_shard=[4])
     .run(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip", echo=lambda *a, **k: None))
    report = verify_output(out, tokenizer="manifest", sample_rows=0)
    assert report.ok and report.retokenized == 12, messages(report)


def test_a_directory_in_place_of_a_shard_is_a_problem(tmp_path, capsys):
    """verify ended with "[Errno 21] Is a directory" (exit 2) and the reader with an
    IsADirectoryError; both now report the shard."""
    import shutil

    from mintdim_beam.cli.consumer_commands import main
    from mintdim_beam.reader import ReaderError, open_output

    out = Path(make_dataset(tmp_path))
    shard = next(out.glob("unit_*/shard_000000.bin"))
    rel = f"{shard.parent.name}/{shard.name}"
    shard.unlink()
    shard.mkdir()
    assert main(["verify", str(out)]) == 1
    captured = capsys.readouterr()
    assert f"{out}: {rel}: not a regular file (a shard is a file of records)" in captured.out
    assert "Errno" not in captured.out + captured.err
    unit = int(shard.parent.name.split("_")[1])
    with pytest.raises(ReaderError, match=f"{rel}: not a regular file"):
        list(open_output(str(out)).iter_unit(unit))
    shutil.rmtree(shard)


def test_tokenizer_flag_before_or_after_the_directories(built, tmp_path, capsys):
    """``verify --tokenizer DIR`` took DIR as the tokenizer and exited 64 for a missing
    DIR; a directory after --tokenizer is a dataset, a file is the tokenizer."""
    from mintdim_beam.cli.commands import main
    from test_reader import DEMO_MODEL

    second = shutil.copytree(built, tmp_path / "second")
    for argv in (["verify", "--tokenizer", built, "--sample", "4"],
                 ["verify", built, "--tokenizer", "--sample", "4"],
                 ["verify", "--tokenizer", DEMO_MODEL, built, "--sample", "4"],
                 ["verify", built, "--tokenizer", DEMO_MODEL, "--sample", "4"],
                 ["verify", "--tokenizer", built, str(second), "--sample", "4"],
                 ["verify", built, "--tokenizer", str(second), "--sample", "4"]):
        assert main(argv) == 0, argv
        out = capsys.readouterr().out.splitlines()
        assert sorted(line.split(":")[0] for line in out) == [f"verify OK {d}" for d in sorted(argv)
                                                              if d in (built, str(second))], argv
        assert all("4 samples re-tokenized from their sources" in line for line in out), out

    assert main(["verify", "--tokenizer", DEMO_MODEL, "--sample", "4"]) == 64
    err = capsys.readouterr().err
    assert err.startswith("usage: mintdim-beam verify")
    assert err.endswith(f"mintdim-beam verify: error: no DIR to verify: --tokenizer took {DEMO_MODEL!r} as its "
                        f"PATH, and that is not a directory (give the dataset directory: verify DIR "
                        f"--tokenizer [PATH])\n")
    assert main(["verify", "--tokenizer"]) == 64
    assert capsys.readouterr().err.endswith("error: the following arguments are required: DIR\n")
    assert main(["verify", "--tokenizer", str(tmp_path / "typo")]) == 64
    assert "no DIR to verify: --tokenizer took" in capsys.readouterr().err


@pytest.mark.parametrize("edit, shown", [
    (lambda m: m["tokenizer"].update(vocab_size="x"), "manifest.json tokenizer.vocab_size must be an integer of at least 1, got 'x'"),
    (lambda m: m["tokenizer"].update(vocab_size=0), "manifest.json tokenizer.vocab_size must be an integer of at least 1, got 0"),
    (lambda m: m["tokenizer"].update(unk_id="1"), "manifest.json tokenizer.unk_id must be an integer of at least 0, got '1'"),
    (lambda m: m.update(tokenizer="sp.model"), "manifest.json tokenizer must be a JSON object, got 'sp.model'"),
    (lambda m: m.update(token_storage=["uint16"]), "manifest.json token_storage must be a JSON object, got ['uint16']"),
    (lambda m: m.update(units=[16, 48]), "manifest.json units must be a JSON object, got [16, 48]"),
    (lambda m: m.update(output="out"), "manifest.json output must be a JSON object, got 'out'"),
], ids=["vocab_size-text", "vocab_size-0", "unk_id-text", "tokenizer-text", "token_storage-list", "units-list",
        "output-text"])
def test_a_manifest_of_the_wrong_shape_is_a_problem_not_a_crash(copy, capsys, edit, shown):
    """A vocab_size that is not a number, or a section that is not an object, used to end
    verify, inspect and the reader in a TypeError or AttributeError traceback."""
    from mintdim_beam.reader import ReaderError, open_output

    d = copy()
    manifest = json.loads((d / "manifest.json").read_text())
    edit(manifest)
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
    found = messages(verify_output(str(d)))
    assert len(found) == 1 and shown in found[0], found
    assert consumer_main(["verify", str(d)]) == 1
    assert shown in capsys.readouterr().out
    with pytest.raises(ReaderError, match=shown.replace("[", r"\[").replace("]", r"\]")):
        open_output(str(d))
    assert consumer_main(["inspect", str(d), "--sample-id", "0"]) == 2
    assert shown in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["link loop", "unit is a file"])
def test_a_shard_that_cannot_be_opened_is_a_reader_error(tmp_path, capsys, damage):
    """A shard that is a symbolic link to itself, or a unit directory replaced by a file,
    ended the reader in an OSError traceback and export in "[Errno 40] ..."."""
    from mintdim_beam.cli.consumer_commands import main
    from mintdim_beam.reader import ReaderError, open_output

    out = Path(make_dataset(tmp_path / "ds"))
    shard = next(out.glob("unit_*/shard_000000.bin"))
    rel = f"{shard.parent.name}/{shard.name}"
    unit = int(shard.parent.name.split("_")[1])
    if damage == "link loop":
        shard.unlink()
        shard.symlink_to(shard.name)
        why = "Too many levels of symbolic links"
    else:
        shutil.rmtree(shard.parent)
        shard.parent.write_text("x")
        rel, why = shard.parent.name, "Not a directory; a unit directory holds its shard files"   # found at open
    with pytest.raises(ReaderError) as exc:
        list(open_output(str(out)).iter_unit(unit))
    assert f"{rel}: cannot be read ({why})" in str(exc.value)
    assert main(["export", str(out), "--format", "parquet", str(tmp_path / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert f"{rel}: cannot be read ({why})" in err and "Traceback" not in err
    assert not (tmp_path / "x.parquet").exists()
    assert main(["verify", str(out)]) == 1


def test_a_manifest_that_cannot_be_read_is_a_reader_error(tmp_path, capsys):
    """A directory in place of manifest.json ended the reader in an IsADirectoryError."""
    from mintdim_beam.cli.consumer_commands import main
    from mintdim_beam.reader import ReaderError, open_output

    out = Path(make_dataset(tmp_path / "ds"))
    (out / "manifest.json").unlink()
    (out / "manifest.json").mkdir()
    with pytest.raises(ReaderError, match="manifest.json: cannot be read \\(Is a directory\\)"):
        open_output(str(out))
    assert main(["inspect", str(out), "--sample-id", "0"]) == 2
    err = capsys.readouterr().err
    assert "manifest.json: cannot be read (Is a directory)" in err and "Traceback" not in err


@pytest.mark.parametrize("text", ["[]", "null", '{"units": [16]}'])
def test_plan_of_a_dataset_whose_manifest_is_not_an_object(tmp_path, capsys, text):
    """``plan DIR`` ended in "AttributeError: 'list' object has no attribute 'get'"."""
    from mintdim_beam.cli.commands import main

    out = Path(make_dataset(tmp_path / "ds"))
    (out / "manifest.json").write_text(text)
    assert main(["plan", str(out)]) == 2
    err = capsys.readouterr().err
    assert "manifest.json: must hold a JSON object with a units object" in err and "Traceback" not in err


def test_a_failure_marker_beside_the_manifest_is_refused(copy, capsys):
    from mintdim_beam.reader import ReaderError, open_output

    d = copy()
    (d / "UNIT_BUILD_FAILED.md").write_text("# Unit build failed\n", encoding="utf-8")
    want = (f"{d}: UNIT_BUILD_FAILED.md beside manifest.json: a build failed in this directory, so it is not "
            f"a finished dataset; rebuild it into an empty directory")
    assert messages(verify_output(str(d))) == [f"manifest.json: {want}"]
    with pytest.raises(ReaderError) as exc:
        open_output(str(d))
    assert exc.value.reason == want
    assert exc.value.vietnamese == (f"ReaderError: {d}: có UNIT_BUILD_FAILED.md cạnh manifest.json: một build đã "
                                    f"thất bại trong thư mục này, nên đây không phải dataset hoàn chỉnh; hãy build "
                                    f"lại vào một thư mục rỗng")
    assert consumer_main(["verify", str(d)]) == 1
    assert consumer_main(["export", str(d), str(d.parent / "exported"), "--format", "parquet"]) == 2
    assert "UNIT_BUILD_FAILED.md beside manifest.json" in capsys.readouterr().err
    assert not (d.parent / "exported").exists()


def test_an_empty_unit_marker_in_a_unit_with_shards_is_a_problem(copy):
    d = copy()
    (d / f"unit_{U}" / "EMPTY_UNIT.md").write_text("# Empty unit\n", encoding="utf-8")
    assert messages(verify_output(str(d))) == [
        f"unit_{U}/EMPTY_UNIT.md: empty-unit marker in a unit that has shards"]
