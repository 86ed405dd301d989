"""The reader: samples by id, units in order, and the causal-LM training view.

Datasets are built with the real pipeline (the bundled demo SentencePiece model) and
read back; expected tokens come straight from the tokenizer library, segment by segment.
``make_dataset`` is shared with the verify, planner and report tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from conftest import quiet, read_jsonl, write_jsonl

DEMO_MODEL = str(Path(__file__).resolve().parents[1] / "mintdim_beam" / "demo" / "demo.model")
TEMPLATE = "Question: {q}\nAnswer: {a}"
SIZES = [24, 48, 96]
SAMPLES_PER_SHARD = 4

_WORDS = ("the bees make honey in the hive and the queen lays eggs while workers gather "
          "nectar from flowers near the river in the morning").split()


def dataset_rows() -> list:
    """Rows (dicts, and one raw bad line) that exercise every index file."""
    rows = []
    for i in range(26):
        q = " ".join(_WORDS[i % 5:i % 5 + 3 + i % 4])
        a = " ".join(_WORDS[(i * 3) % 9:(i * 3) % 9 + 2 + (i * 7) % 19])
        rows.append({"q": q, "a": a})
    rows[5] = {"q": "what is 漢字", "a": "a smile 🙂 and more 漢字"}       # UNK
    rows[9] = dict(rows[3])                                                 # duplicate
    rows[14] = {"q": "empty answer", "a": None}                            # empty field
    rows[20] = {"q": "long", "a": " ".join(_WORDS * 6)}                    # overflow
    rows.insert(12, '{"q": "broken json",')                                 # bad record
    return rows


def make_dataset(root, name="out", on_overflow="truncate", rows=None, sizes=SIZES) -> str:
    """Build a small dataset with the real pipeline; returns the output directory."""
    from mintdim_beam import pipeline

    root = Path(root)
    src = write_jsonl(root / f"{name}.jsonl", rows if rows is not None else dataset_rows())
    out = str(root / name)
    job = (pipeline("unit-build")
           .source.jsonl(files=[src], fields=[["q", "a"]], templates=[TEMPLATE])
           .tokenizer.sentencepiece(files=[DEMO_MODEL])
           .units(sizes=[list(sizes)], build_batch=[7])
           .output.dir(out, samples_per_shard=[SAMPLES_PER_SHARD]))
    job.run(on_overflow=on_overflow, on_template_unk="continue", on_bad_record="skip", echo=quiet)
    return out


def sp():
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=DEMO_MODEL)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> str:
    return make_dataset(tmp_path_factory.mktemp("reader"))


@pytest.fixture(scope="module")
def opened(built):
    from mintdim_beam.reader import open_output

    return open_output(built)


def expected_segments(row: dict) -> list:
    """Token ids of each template segment, encoded directly by SentencePiece."""
    tok = sp()
    texts = ["Question: ", row["q"], "\nAnswer: ", row["a"] or ""]
    return [list(tok.encode(t, out_type=int)) for t in texts]


# --------------------------------------------------------------------------- access


def test_sample_by_id_matches_direct_encoding(built, opened):
    rows = [r for r in dataset_rows() if isinstance(r, dict)]
    index = read_jsonl(Path(built) / "sample_index.jsonl")
    assert len(opened) == len(index)
    by_id = {r["sample_id"]: r for r in index}
    for sid, row in enumerate(dataset_rows()):
        if not isinstance(row, dict) or sid not in by_id:
            continue
        sample = opened.sample(sid)
        meta = by_id[sid]
        assert (sample.unit_size, sample.shard_path, sample.shard_record) == (
            meta["unit_size"], meta["shard_path"], meta["shard_record"])
        assert (sample.source_file, sample.source_line, sample.hash) == (
            meta["source_file"], meta["source_line"], meta["hash"])
        assert sample.token_count == meta["token_count"]
        got = [s.ids.tolist() for s in sample.segments]
        want = expected_segments(row)
        if sid == 21:   # the overflow row is truncated to max(sizes): last segments shrink
            assert sum(map(len, got)) == max(SIZES)
            assert got[:3] == want[:3] and got[3] == want[3][:len(got[3])]
        else:
            assert got == want, sid
        assert [s.name for s in sample.segments] == ["token_template", "q", "token_template", "a"]
        assert sample.segment("a").tolist() == got[3]
        assert sample.select(["q", "a"]).tolist() == got[1] + got[3]
        assert sample.payload.tolist() == sum(got, [])
    assert len(rows) == 26
    assert opened.sample(15).empty_fields == ("a",)


def test_missing_ids_raise_key_error(opened):
    with pytest.raises(KeyError, match="sample 12 has no record"):
        opened.sample(12)                 # the bad record keeps its id but has no record
    with pytest.raises(KeyError):
        opened.sample(10_000)
    with pytest.raises(KeyError, match="no segment named"):
        opened.sample(0).segment("nope")


def test_iteration_orders(built, opened):
    index = read_jsonl(Path(built) / "sample_index.jsonl")
    assert [s.sample_id for s in opened] == [r["sample_id"] for r in index]
    histogram = json.loads((Path(built) / "histogram.json").read_text())
    for unit in opened.unit_sizes:
        samples = list(opened.iter_unit(unit))
        assert len(samples) == histogram[str(unit)]
        ids = [s.sample_id for s in samples]
        assert ids == sorted(ids)
        assert [(s.shard_path, s.shard_record) for s in samples] == [
            (f"unit_{unit}/shard_{k // SAMPLES_PER_SHARD:06d}.bin", k % SAMPLES_PER_SHARD)
            for k in range(len(samples))]
        flat = [sid for sids, recs in opened.unit_arrays(unit) for sid in sids.tolist()]
        assert flat == ids


def test_sample_at_shard_record(opened):
    s = opened.sample(3)
    again = opened.sample_at(s.shard_path, s.shard_record)
    assert again.sample_id == 3 and np.array_equal(again.record, s.record)


def test_reader_does_not_import_beam(built):
    code = ("import sys; from mintdim_beam.reader import open_output; r = open_output(sys.argv[1]); "
            "r.sample(0); list(r.iter_unit(r.unit_sizes[0])); r.causal_lm()[0]; "
            "assert 'apache_beam' not in sys.modules, 'reader imported Beam'")
    subprocess.run([sys.executable, "-c", code, built], check=True)


def test_local_shards_are_memory_mapped(opened):
    recs = opened.shard_records(opened.unit_sizes[0], 0)
    assert isinstance(recs, np.memmap) or isinstance(recs.base, np.memmap)


# --------------------------------------------------------------------------- training view


def test_causal_lm_items_shift_and_mask(opened):
    ds = opened.causal_lm()
    assert len(ds) == len(opened)
    for i in (0, 3, len(ds) - 1):
        item = ds[i]
        sample = opened.sample(int(ds.sample_ids[i]))
        n, unit = sample.token_count, sample.unit_size
        assert item["input_ids"].dtype == np.int64 and item["input_ids"].shape == (unit,)
        assert item["input_ids"][:n].tolist() == sample.payload.tolist()
        assert (item["input_ids"][n:] == opened.meta.pad_id).all()
        assert item["attention_mask"].dtype == bool
        assert item["attention_mask"].tolist() == [True] * n + [False] * (unit - n)
        assert item["labels"][:n - 1].tolist() == sample.payload[1:].tolist()
        assert (item["labels"][n - 1:] == -100).all()
    plain = opened.causal_lm(shift=False)[0]
    n = int(plain["attention_mask"].sum())
    assert plain["labels"][:n].tolist() == plain["input_ids"][:n].tolist()
    assert (plain["labels"][n:] == -100).all()


def test_loss_on_selected_segments_only(opened):
    ds = opened.causal_lm(loss_segments=["a"])
    i = 0
    item = ds[i]
    sample = opened.sample(int(ds.sample_ids[i]))
    lengths = sample.lengths.tolist()
    a_start = sum(lengths[:3])
    a_end = a_start + lengths[3]
    labels = item["labels"]
    # position p predicts token p + 1: only targets inside the answer count
    assert (labels[:a_start - 1] == -100).all()
    assert labels[a_start - 1:a_end - 1].tolist() == sample.segment("a").tolist()
    assert (labels[a_end - 1:] == -100).all()
    with pytest.raises(KeyError):
        opened.causal_lm(loss_segments=["missing"])


def test_segment_mask_vectorized():
    from mintdim_beam.reader import segment_mask

    lengths = np.array([[2, 1, 3], [0, 2, 1]])
    mask = segment_mask(lengths, ["token_template", "q", "a"], ["a"], 8)
    assert mask.astype(int).tolist() == [[0, 0, 0, 1, 1, 1, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0]]
    both = segment_mask(lengths[0], ["token_template", "q", "a"], ["token_template", "q"], 8)
    assert both.astype(int).tolist() == [1, 1, 1, 0, 0, 0, 0, 0]


def test_batch_sampler_keeps_units_apart(opened):
    ds = opened.causal_lm()
    sampler = ds.batch_sampler(3, shuffle=True, seed=7)
    batches = list(sampler)
    assert len(batches) == len(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(ds)))
    for b in batches:
        assert len({ds.unit_of(i) for i in b}) == 1
        stacked = np.stack([ds[i]["input_ids"] for i in b])   # what a default collate does
        assert stacked.shape[0] == len(b)
    assert list(ds.batch_sampler(3, shuffle=True, seed=7)) == batches
    sampler.set_epoch(1)
    assert list(sampler) != batches
    dropped = ds.batch_sampler(3, drop_last=True)
    assert all(len(b) == 3 for b in dropped) and len(list(dropped)) == len(dropped)
    one_unit = opened.causal_lm(units=[opened.unit_sizes[0]])
    assert set(one_unit.units.tolist()) == {opened.unit_sizes[0]}


def test_torch_tensors_only_when_asked(opened, monkeypatch):
    fake = types.ModuleType("torch")
    fake.from_numpy = lambda a: ("tensor", a)
    monkeypatch.setitem(sys.modules, "torch", fake)
    item = opened.causal_lm(return_tensors="pt")[0]
    assert all(v[0] == "tensor" for v in item.values())
    monkeypatch.setitem(sys.modules, "torch", None)      # import torch now fails
    with pytest.raises(ImportError, match="PyTorch"):
        opened.causal_lm(return_tensors="pt")
    assert isinstance(opened.causal_lm()[0]["input_ids"], np.ndarray)


# --------------------------------------------------------------------------- opening


def test_open_refuses_unpublished_and_inconsistent(tmp_path, built):
    import shutil

    from mintdim_beam.reader import ReaderError, open_output

    (tmp_path / "failed" / "unit_8").mkdir(parents=True)
    (tmp_path / "failed" / "unit_8" / "UNIT_BUILD_FAILED.md").write_text("boom")
    with pytest.raises(ReaderError, match="build failed"):
        open_output(str(tmp_path / "failed"))
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    lf = json.loads((copy / "length_field.json").read_text())
    lf["token_dtype"] = "uint32"
    (copy / "length_field.json").write_text(json.dumps(lf))
    with pytest.raises(ReaderError, match="magic"):
        open_output(str(copy))
    lf.update(token_dtype="uint16", sequence_template=["q"])
    (copy / "length_field.json").write_text(json.dumps(lf))
    with pytest.raises(ReaderError, match="sequence_template"):
        open_output(str(copy))


def test_corrupt_record_raises_on_access(tmp_path, built):
    import shutil

    from mintdim_beam.reader import ReaderError, open_output

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    shard = copy / "unit_24" / "shard_000000.bin"
    data = bytearray(shard.read_bytes())
    data[0] ^= 0xFF
    shard.write_bytes(bytes(data))
    r = open_output(str(copy))
    rows = r.unit_rows(24)
    with pytest.raises(ReaderError, match="magic"):
        r.sample_at_row(int(rows[0]))
    os.truncate(copy / "unit_48" / "shard_000000.bin", 10)
    with pytest.raises(ReaderError, match="not a whole number"):
        r.shard_records(48, 0)


# --------------------------------------------------------------------------- inspect


def test_inspect_prints_decoded_segments(built, capsys):
    from mintdim_beam.consumer_cli import main

    assert main(["inspect", built, "--sample-id", "5"]) == 0
    out = capsys.readouterr().out
    assert "sample    5" in out and f"{built}.jsonl:6" in out
    assert "[1] q (" in out and "[3] a (" in out
    assert "unk       3 at payload positions" in out and "漢字" in out
    s = sp()
    assert json.dumps(s.decode(s.encode("a smile 🙂 and more 漢字")), ensure_ascii=False) in out

    sample = json.loads((Path(built) / "sample_index.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert main(["inspect", built, "--shard", sample["shard_path"], "--record", str(sample["shard_record"]),
                 "--json", "--ids"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sample_id"] == sample["sample_id"] and info["token_count"] == sample["token_count"]
    assert [seg["ids"] for seg in info["segments"]] == expected_segments(dataset_rows()[0])
    assert info["segments"][1]["text"] == dataset_rows()[0]["q"]


def test_inspect_explains_missing_samples(built, capsys):
    from mintdim_beam.consumer_cli import main

    assert main(["inspect", built, "--sample-id", "12"]) == 2
    err = capsys.readouterr().err
    assert "bad record" in err and "SourceParseError" in err and "Traceback" not in err
    assert main(["inspect", built, "--sample-id", "999"]) == 2
    assert "written sample ids: 0..26" in capsys.readouterr().err
    assert main(["inspect", built, "--sample-id", "0", "--tokenizer", "/nonexistent.model"]) == 0
    out = capsys.readouterr().out
    assert "text not decoded" in out and "ids [" in out
