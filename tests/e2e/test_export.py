"""Exports: Megatron-LM's indexed dataset and Parquet, read back and compared token for token.

The source datasets are built with the real pipeline (``test_reader.make_dataset``: a
truncated overflow, a bad record whose id has no record, an empty field, UNK) and
decoded with ``conftest.OutputDir``, which shares no code with the package. The
Megatron files are read with :func:`read_megatron`, a minimal reader written from the
published ``MMIDIDX`` layout; Parquet with pyarrow (and Hugging Face ``datasets`` when
it is installed).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import OutputDir, quiet, read_jsonl, write_jsonl
from test_reader import make_dataset


# --------------------------------------------------------------------------- helpers


def read_megatron(prefix) -> dict:
    """Parse ``PREFIX.idx`` as Megatron-LM's ``_IndexReader`` does and cut ``PREFIX.bin``."""
    idx = Path(f"{prefix}.idx").read_bytes()
    assert idx[:9] == b"MMIDIDX\x00\x00"
    version, = struct.unpack_from("<Q", idx, 9)
    code, = struct.unpack_from("<B", idx, 17)
    sequences, documents = struct.unpack_from("<QQ", idx, 18)
    dtype = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}[code]
    offset = 34
    lengths = np.frombuffer(idx, "<i4", sequences, offset)
    offset += lengths.nbytes
    pointers = np.frombuffer(idx, "<i8", sequences, offset)
    offset += pointers.nbytes
    docs = np.frombuffer(idx, "<i8", documents, offset)
    offset += docs.nbytes
    assert offset == len(idx), "bytes after the document indices"
    data = Path(f"{prefix}.bin").read_bytes()
    itemsize = np.dtype(dtype).itemsize
    seqs = [np.frombuffer(data, np.dtype(dtype).newbyteorder("<"), int(n), int(p)).tolist()
            for n, p in zip(lengths, pointers)]
    return {"version": version, "code": code, "dtype": np.dtype(dtype), "lengths": lengths.tolist(),
            "pointers": pointers.tolist(), "documents": docs.tolist(), "sequences": seqs,
            "bin_bytes": len(data), "itemsize": itemsize}


def expected_by_sample(src) -> list:
    """``(index row, flat payload)`` of every written sample, ascending sample_id."""
    out = OutputDir(src)
    rows = sorted(out.samples, key=lambda r: r["sample_id"])
    return [(row, sum(out.decode(row), [])) for row in rows]


def run_cli(argv, capsys) -> tuple:
    from mintdim_beam.cli.commands import main

    capsys.readouterr()      # what earlier steps printed (a build's progress) is not the command's
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def no_files_but(directory, allowed) -> list:
    return sorted(p.name for p in Path(directory).iterdir() if p.name not in allowed)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> str:
    return make_dataset(tmp_path_factory.mktemp("export"))


# --------------------------------------------------------------------------- Megatron


def test_megatron_export_holds_every_sample_unpadded_in_id_order(built, tmp_path, capsys):
    prefix = tmp_path / "mg" / "train_text_document"
    code, out, err = run_cli(["export", built, "--format", "megatron", str(prefix)], capsys)
    assert (code, err) == (0, "")
    want = expected_by_sample(built)
    got = read_megatron(prefix)
    n = len(want)
    assert n == 26     # 27 lines, one of them a bad record with no shard record
    assert got["version"] == 1 and got["code"] == 8 and got["dtype"] == np.uint16
    assert got["sequences"] == [tokens for _, tokens in want]
    assert got["lengths"] == [row["token_count"] for row, _ in want]
    # one document per sample: boundaries 0..N, as Megatron's IndexedDataset asserts
    assert got["documents"] == list(range(n + 1))
    ends = np.cumsum([0] + got["lengths"]) * 2
    assert got["pointers"] == ends[:-1].tolist() and got["bin_bytes"] == int(ends[-1])
    total = sum(got["lengths"])
    assert out.strip() == (f"[export] format=megatron samples={n} tokens={total} dtype=uint16 "
                           f"wrote {prefix}.bin, {prefix}.idx")
    # the truncated overflow sample holds max(sizes) tokens, not its original count
    truncated = [r for r in read_jsonl(Path(built) / "overflow_index.jsonl") if r["action"] == "truncate"]
    assert [len(got["sequences"][[r["sample_id"] for r, _ in want].index(t["sample_id"])])
            for t in truncated] == [96]
    assert sorted(os.listdir(prefix.parent)) == ["train_text_document.bin", "train_text_document.idx"]


@pytest.mark.parametrize("policy", ["skip", "extend"])
def test_exports_follow_gaps_added_units_and_empty_units(tmp_path, capsys, policy):
    """Skipped samples leave gaps in the ids, extend adds a unit, unit 2 stays empty."""
    import pyarrow.parquet as pq

    src = make_dataset(tmp_path, on_overflow=policy, sizes=[2, 24, 48, 96])
    assert (Path(src) / "unit_2" / "EMPTY_UNIT.md").exists()
    want = expected_by_sample(src)
    assert len(want) == (25 if policy == "skip" else 26)
    assert max(row["unit_size"] for row, _ in want) == (96 if policy == "skip" else len(want[20][1]))
    assert run_cli(["export", src, "--format", "megatron", str(tmp_path / "mg")], capsys)[0] == 0
    assert read_megatron(tmp_path / "mg")["sequences"] == [tokens for _, tokens in want]
    assert run_cli(["export", src, "--format", "parquet", str(tmp_path / "x.parquet")], capsys)[0] == 0
    table = pq.read_table(tmp_path / "x.parquet")
    assert table.column("sample_id").to_pylist() == [row["sample_id"] for row, _ in want]
    assert table.column("unit_size").to_pylist() == [row["unit_size"] for row, _ in want]
    assert table.column("input_ids").to_pylist() == [tokens for _, tokens in want]


def wide_vocab_tokenizer(path) -> str:
    """A WordLevel tokenizer.json of 70,000 words: ids above 65,535 need 32-bit slots."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<pad>": 1, "\n": 2}
    vocab.update({f"w{i}": i for i in range(3, 70_000)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.enable_padding(pad_id=1, pad_token="<pad>")
    tok.save(str(path))
    return str(path)


def test_megatron_export_of_a_wide_vocabulary_is_int32(tmp_path, capsys):
    from mintdim_beam import pipeline

    tok = wide_vocab_tokenizer(tmp_path / "wide.json")
    rows = [{"a": f"w{65_530 + i} w{i + 3}", "b": f"w{69_999 - i}"} for i in range(9)]
    src = write_jsonl(tmp_path / "wide.jsonl", rows)
    out = str(tmp_path / "wide")
    (pipeline("unit-build").source.jsonl(files=[src], fields=[["a", "b"]], templates=["{a} {b}"])
     .tokenizer.hf_json(files=[tok]).units(sizes=[[4]], build_batch=[4])
     .output.dir(out, samples_per_shard=[4])
     .run(on_overflow="abort", on_template_unk="continue", on_bad_record="abort", echo=quiet))
    assert json.loads((Path(out) / "length_field.json").read_text())["token_dtype"] == "uint32"

    code, _, err = run_cli(["export", out, "--format", "megatron", str(tmp_path / "wide_mg")], capsys)
    assert (code, err) == (0, "")
    got = read_megatron(tmp_path / "wide_mg")
    assert got["code"] == 4 and got["dtype"] == np.int32
    assert got["sequences"] == [tokens for _, tokens in expected_by_sample(out)]
    assert got["sequences"][0] == [65_530, 3, 69_999]   # " " is a literal with no token
    assert got["pointers"][1] == 3 * 4


def test_megatron_header_layout():
    from mintdim_beam.reader.export import megatron_index_header

    head = megatron_index_header(np.dtype(np.uint16), 5, 6)
    assert head == b"MMIDIDX\x00\x00" + (1).to_bytes(8, "little") + bytes([8]) \
        + (5).to_bytes(8, "little") + (6).to_bytes(8, "little")
    assert len(head) == 34


# --------------------------------------------------------------------------- Parquet


def test_parquet_export_rows_match_the_dataset(built, tmp_path, capsys):
    import pyarrow.parquet as pq

    path = tmp_path / "train.parquet"
    code, out, err = run_cli(["export", built, "--format", "parquet", str(path), "--row-group-rows", "5"], capsys)
    assert (code, err) == (0, "")
    want = expected_by_sample(built)
    table = pq.read_table(path)
    assert table.column_names == ["sample_id", "unit_size", "input_ids", "segment_lengths",
                                  "source_file", "source_line", "hash"]
    rows = table.to_pylist()
    assert len(rows) == len(want) == 26
    decoded = OutputDir(built)
    for got, (row, tokens) in zip(rows, want):
        assert got == {
            "sample_id": row["sample_id"], "unit_size": row["unit_size"], "input_ids": tokens,
            "segment_lengths": [len(s) for s in decoded.decode(row)],
            "source_file": row["source_file"], "source_line": row["source_line"], "hash": row["hash"],
        }
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(k).num_rows for k in range(meta.num_row_groups)] == [5, 5, 5, 5, 5, 1]
    facts = json.loads(table.schema.metadata[b"mintdim"])
    assert facts["sequence_template"] == ["token_template", "q", "token_template", "a"]
    assert facts["pad_token_id"] == decoded.pad
    assert out.startswith("[export] format=parquet samples=26 ")


def test_parquet_row_groups_are_bounded_by_tokens(built, tmp_path):
    import pyarrow.parquet as pq

    from mintdim_beam.reader.export import export_parquet

    summary = export_parquet(built, str(tmp_path / "t.parquet"), row_group_tokens=100)
    meta = pq.ParquetFile(tmp_path / "t.parquet").metadata
    groups = [pq.ParquetFile(tmp_path / "t.parquet").read_row_group(k) for k in range(meta.num_row_groups)]
    sizes = [sum(len(x) for x in g.column("input_ids").to_pylist()) for g in groups]
    # a group closes at the first sample that takes it to 100 tokens or more
    lengths = [len(tokens) for _, tokens in expected_by_sample(built)]
    want, acc = [], 0
    for n in lengths:
        acc += n
        if acc >= 100:
            want.append(acc)
            acc = 0
    want += [acc] if acc else []
    assert sizes == want and summary.tokens == sum(lengths) and summary.samples == 26


def test_parquet_loads_with_hugging_face_datasets(built, tmp_path):
    datasets = pytest.importorskip("datasets")

    from mintdim_beam.reader.export import export_parquet

    path = str(tmp_path / "train.parquet")
    export_parquet(built, path)
    ds = datasets.load_dataset("parquet", data_files=path, split="train", cache_dir=str(tmp_path / "hf"))
    want = expected_by_sample(built)
    assert len(ds) == len(want)
    assert [ds[i]["input_ids"] for i in range(len(ds))] == [tokens for _, tokens in want]
    assert ds["sample_id"] == [row["sample_id"] for row, _ in want]


# --------------------------------------------------------------------------- failures


def corrupt_copy(built, tmp_path, how: str) -> str:
    """A copy of the dataset with one shard damaged."""
    broken = tmp_path / "broken"
    shutil.copytree(built, broken)
    row = read_jsonl(broken / "sample_index.jsonl")[7]
    shard = broken / row["shard_path"]
    data = bytearray(shard.read_bytes())
    slot = 2                                   # uint16 slots
    record = (1 + 4 + row["unit_size"]) * slot
    start = row["shard_record"] * record
    if how == "magic":
        data[start:start + 2] = b"\x00\x00"
    elif how == "header":
        first = int.from_bytes(data[start + 2:start + 4], "little")
        data[start + 2:start + 4] = (first + 1).to_bytes(2, "little")
    elif how == "truncated":
        data = data[:-3]
    elif how == "in-vocabulary token":
        at = start + (1 + 4) * slot               # the first payload token
        token = int.from_bytes(data[at:at + 2], "little")
        data[at:at + 2] = (token + 1 if token + 1 < 800 else token - 1).to_bytes(2, "little")
    elif how == "source_line":
        rows = read_jsonl(broken / "sample_index.jsonl")
        rows[7]["source_line"] = rows[8]["source_line"]
        (broken / "sample_index.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows), encoding="utf-8")
        return str(broken), {"shard_path": "sample_index.jsonl"}
    shard.write_bytes(bytes(data))
    return str(broken), row


@pytest.mark.parametrize("fmt", ["megatron", "parquet"])
@pytest.mark.parametrize("how, message", [
    # a shard is compared with SHA256SUMS before its records are read (verify names the record)
    ("magic", "SHA256SUMS records"),
    ("header", "SHA256SUMS records"),
    ("truncated", "is not a whole number of"),
    # every record check passes: exported with exit 0 before exports compared SHA256SUMS
    ("in-vocabulary token", "SHA256SUMS records"),
    ("source_line", "SHA256SUMS records"),
])
def test_export_of_a_corrupted_dataset_fails_and_publishes_nothing(built, tmp_path, capsys, fmt, how, message):
    broken, row = corrupt_copy(built, tmp_path, how)
    dest = tmp_path / "dest"
    dest.mkdir()
    out = dest / ("data" if fmt == "megatron" else "data.parquet")
    code, stdout, err = run_cli(["export", broken, "--format", fmt, str(out)], capsys)
    assert code == 2 and stdout == ""
    assert message in err and row["shard_path"] in err
    assert "Traceback" not in err
    assert os.listdir(dest) == []          # no output, no temporary file left behind


def test_existing_output_is_refused_unless_overwrite(built, tmp_path, capsys):
    prefix = tmp_path / "mg"
    (tmp_path / "mg.idx").write_bytes(b"old")
    code, _, err = run_cli(["export", built, "--format", "megatron", str(prefix)], capsys)
    assert code == 2 and f"{prefix}.idx already exists; remove it or pass --overwrite" in err
    assert (tmp_path / "mg.idx").read_bytes() == b"old" and not (tmp_path / "mg.bin").exists()
    code, _, err = run_cli(["export", built, "--format", "megatron", str(prefix), "--overwrite"], capsys)
    assert (code, err) == (0, "")
    assert read_megatron(prefix)["sequences"] == [tokens for _, tokens in expected_by_sample(built)]


def test_export_of_an_unpublished_directory_fails(tmp_path, capsys):
    code, _, err = run_cli(["export", str(tmp_path), "--format", "parquet", str(tmp_path / "x.parquet")], capsys)
    assert code == 2 and "no manifest.json; not a published mintdim output" in err
    assert not (tmp_path / "x.parquet").exists()


def test_export_does_not_import_beam(built, tmp_path):
    code = ("import sys; from mintdim_beam.reader.export import export; "
            "export(sys.argv[1], 'megatron', sys.argv[2]); export(sys.argv[1], 'parquet', sys.argv[2] + '.parquet'); "
            "assert 'apache_beam' not in sys.modules, 'export imported Beam'")
    subprocess.run([sys.executable, "-c", code, built, str(tmp_path / "x")], check=True)
    assert read_megatron(tmp_path / "x")["lengths"] == [row["token_count"] for row, _ in expected_by_sample(built)]


# --------------------------------------------------------------------------- chunking


def parts_dataset(root) -> str:
    """``make_dataset``'s job published with ``index_layout: parts`` in several blocks."""
    from mintdim_beam import pipeline
    from test_reader import DEMO_MODEL, SAMPLES_PER_SHARD, SIZES, TEMPLATE, dataset_rows

    src = write_jsonl(Path(root) / "parts.jsonl", dataset_rows())
    out = str(Path(root) / "parts")
    (pipeline("unit-build").source.jsonl(files=[src], fields=[["q", "a"]], templates=[TEMPLATE])
     .tokenizer.sentencepiece(files=[DEMO_MODEL]).units(sizes=[list(SIZES)], build_batch=[7])
     .output.dir(out, samples_per_shard=[SAMPLES_PER_SHARD])
     .run(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip", echo=quiet,
          index_layout="parts", block_size=1024))
    manifest = json.loads((Path(out) / "manifest.json").read_text())
    assert manifest["indexes"]["layout"] == "parts" and manifest["indexes"]["parts"]["sample_index.jsonl"] > 2
    return out


@pytest.mark.parametrize("layout", ["file", "parts"])
def test_megatron_export_in_tiny_chunks_is_byte_identical(built, tmp_path, layout):
    """Chunks of one sample (or a few tokens) write the same bytes as one chunk; the
    parts build (the same job) exports what the single-file build does."""
    from mintdim_beam.reader.export import export_megatron

    src = built if layout == "file" else parts_dataset(tmp_path)
    whole = export_megatron(src, str(tmp_path / "whole"))
    want_bin, want_idx = (tmp_path / "whole.bin").read_bytes(), (tmp_path / "whole.idx").read_bytes()
    export_megatron(built, str(tmp_path / "ref" / "single"))
    assert read_megatron(tmp_path / "whole")["sequences"] == [tokens for _, tokens in expected_by_sample(built)]
    assert (tmp_path / "ref" / "single.idx").read_bytes() == want_idx
    for name, rows, tokens in (("one", 1, 1 << 20), ("few", 3, 1 << 20), ("tokens", 1 << 20, 7)):
        summary = export_megatron(src, str(tmp_path / name), chunk_rows=rows, chunk_tokens=tokens)
        assert (tmp_path / f"{name}.bin").read_bytes() == want_bin
        assert (tmp_path / f"{name}.idx").read_bytes() == want_idx
        assert (summary.samples, summary.tokens) == (whole.samples, whole.tokens) == (26, len(want_bin) // 2)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("whole", "one", "few", "tokens"))) == [
        "few.bin", "few.idx", "one.bin", "one.idx", "tokens.bin", "tokens.idx", "whole.bin", "whole.idx"]
