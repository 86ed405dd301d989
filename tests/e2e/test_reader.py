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
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO_DIR, quiet, read_jsonl, write_jsonl

DEMO_MODEL = str(DEMO_DIR / "demo.model")
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


def test_torch_tensors_only_when_asked(opened):
    assert isinstance(opened.causal_lm()[0]["input_ids"], np.ndarray)
    try:
        import torch
    except ImportError:
        with pytest.raises(ImportError, match="PyTorch"):
            opened.causal_lm(return_tensors="pt")
        return
    item = opened.causal_lm(return_tensors="pt")[0]
    assert all(isinstance(v, torch.Tensor) for v in item.values())
    assert item["input_ids"].dtype == torch.int64 and item["attention_mask"].dtype == torch.bool


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
    from mintdim_beam.cli.consumer_commands import main

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
    from mintdim_beam.cli.consumer_commands import main

    assert main(["inspect", built, "--sample-id", "12"]) == 2
    err = capsys.readouterr().err
    assert "bad record" in err and "SourceParseError" in err and "Traceback" not in err
    assert main(["inspect", built, "--sample-id", "999"]) == 2
    assert "written sample ids: 0..26" in capsys.readouterr().err
    assert main(["inspect", built, "--sample-id", "0", "--tokenizer", "/nonexistent.model"]) == 0
    out = capsys.readouterr().out
    assert "text not decoded" in out and "ids [" in out


# --------------------------------------------------------------------------- indexing like a list


def test_len_and_positions_in_ascending_sample_id(built, opened):
    index = read_jsonl(Path(built) / "sample_index.jsonl")
    ids = [r["sample_id"] for r in index]
    assert len(opened) == len(ids) == 26
    assert [opened[i].sample_id for i in range(len(opened))] == ids      # 12 (bad record) is not a position
    assert opened[12].sample_id == 13 and opened[-1].sample_id == 26 and opened[-26].sample_id == 0
    assert opened[np.int64(3)].sample_id == 3
    assert [s.sample_id for s in opened[10:14]] == [10, 11, 13, 14]
    assert [s.sample_id for s in opened[::-10]] == [26, 16, 5]
    assert opened[5].payload.tolist() == opened.sample(5).payload.tolist()
    for bad in (26, -27):
        with pytest.raises(IndexError, match="out of range: .* holds 26 samples"):
            opened[bad]


@pytest.mark.parametrize("key", [1.5, "3", True, None])
def test_non_integer_keys_raise_type_error(opened, key):
    with pytest.raises(TypeError, match="must be an integer"):
        opened.sample(key)
    with pytest.raises(TypeError, match="must be an integer"):
        opened[key]
    with pytest.raises(TypeError):
        opened.causal_lm()[key]


def test_reader_and_training_view_pickle_without_their_memory_maps(built):
    import pickle

    from mintdim_beam.reader import open_output

    r = open_output(built)
    before = len(pickle.dumps(r.index)) and len(pickle.dumps(r))
    want = [s.payload.tolist() for s in r]               # every shard is mapped now
    data = pickle.dumps(r)
    assert len(data) == before                           # the maps stay behind
    again = pickle.loads(data)
    assert [s.payload.tolist() for s in again] == want
    train = pickle.loads(pickle.dumps(r.causal_lm(loss_segments=["a"])))
    assert train[3]["labels"].tolist() == r.causal_lm(loss_segments=["a"])[3]["labels"].tolist()


def test_dataloader_with_worker_processes(built):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from mintdim_beam.reader import open_output

    ds = open_output(built)
    train = ds.causal_lm(loss_segments=["a"], return_tensors="pt")
    loader = DataLoader(train, batch_sampler=train.batch_sampler(4, shuffle=True, seed=1), num_workers=2)
    seen = []
    for batch in loader:
        assert batch["input_ids"].shape == batch["labels"].shape == batch["attention_mask"].shape
        seen += batch["input_ids"].tolist()
    direct = [train[i]["input_ids"].tolist() for b in train.batch_sampler(4, shuffle=True, seed=1) for i in b]
    assert seen == direct and len(seen) == len(ds)
    payloads = DataLoader(ds, batch_size=None, num_workers=2, collate_fn=_payload)
    assert [p.tolist() for p in payloads] == [s.payload.tolist() for s in ds]
    assert isinstance(torch.as_tensor(ds[0].payload.astype(np.int64)), torch.Tensor)


def _payload(sample):
    return sample.payload


# --------------------------------------------------------------------------- reading corrupted copies

N_SEG, U = 4, 48
SLOTS = 1 + N_SEG + U


@pytest.fixture
def corrupt(built, tmp_path):
    """A copy of the dataset to damage, and a helper to rewrite one slot of a shard."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)

    def patch(shard: int, record: int, slot: int, delta=None, value=None) -> None:
        path = copy / f"unit_{U}" / f"shard_{shard:06d}.bin"
        data = bytearray(path.read_bytes())
        at = (record * SLOTS + slot) * 2
        old = int.from_bytes(data[at:at + 2], "little")
        data[at:at + 2] = (old + delta if value is None else value).to_bytes(2, "little")
        path.write_bytes(bytes(data))

    return copy, patch


def _every_read_raises(path, sample_id, match):
    """sample(), [i], iteration, the unit walk and the training view all refuse."""
    from mintdim_beam.reader import ReaderError, open_output

    r = open_output(str(path))
    try:
        pos = int(np.searchsorted(r.sample_ids, sample_id))
    except ReaderError:
        pos = sample_id     # an index refused as it loads: every read is refused, wherever
    for read in (lambda: r.sample(sample_id), lambda: r[pos], lambda: list(r), lambda: list(r.iter_unit(U)),
                 lambda: list(r.unit_arrays(U)), lambda: r.causal_lm()[pos]):
        with pytest.raises(ReaderError, match=match) as info:
            read()
    return info.value


def test_flipped_header_length_is_refused(corrupt):
    copy, patch = corrupt
    patch(0, 1, 4, delta=-1)                      # sample 3: answer one token short
    err = _every_read_raises(copy, 3, "token_count")
    lengths = err.reason.split('segment lengths ')[1].split(' sum')[0]
    held = err.reason.split('slot 28 holds ')[1].split(' ')[0]
    assert err.english == (f"ReaderError: {copy}: unit_48/shard_000000.bin record 1 (sample 3, sample_index.jsonl "
                           f"line 4): segment lengths {lengths} sum to 28, sample_index.jsonl says token_count 29; "
                           f"payload slot 28 holds {held} after the 28 written tokens, expected the pad id 0")
    assert err.vietnamese == (f"ReaderError: {copy}: unit_48/shard_000000.bin bản ghi 1 (sample 3, "
                              f"sample_index.jsonl dòng 4): tổng độ dài các segment {lengths} là 28, nhưng "
                              f"sample_index.jsonl ghi token_count 29; slot payload 28 chứa {held} sau 28 token đã "
                              f"ghi, đúng ra phải là pad id 0")
    assert (err.shard, err.record, err.sample_id) == ("unit_48/shard_000000.bin", 1, 3)
    from mintdim_beam.reader import open_output

    assert open_output(str(copy)).sample(1).token_count == 39     # other records still read


def test_token_id_beyond_the_vocabulary_is_refused(corrupt):
    copy, patch = corrupt
    patch(0, 3, 1 + N_SEG + 2, value=900)         # sample 5, vocab is 800
    err = _every_read_raises(copy, 5, "vocabulary")
    assert err.english.endswith("unit_48/shard_000000.bin record 3 (sample 5, sample_index.jsonl line 6): "
                                "token id 900 at payload position 2 is >= the vocabulary size 800 (manifest.json)")
    assert err.vietnamese.endswith("unit_48/shard_000000.bin bản ghi 3 (sample 5, sample_index.jsonl dòng 6): "
                                   "token id 900 ở vị trí payload 2 >= kích thước vocabulary 800 (manifest.json)")


def test_swapped_index_rows_are_refused(corrupt):
    copy, _ = corrupt
    index = copy / "sample_index.jsonl"
    rows = read_jsonl(index)
    a, b = rows[3], rows[9]                       # samples 3 and 9: unit 48, both 29 tokens
    assert (a["sample_id"], b["sample_id"], a["token_count"]) == (3, 9, b["token_count"])
    for key in ("shard_path", "shard_record"):
        a[key], b[key] = b[key], a[key]
    index.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows),
                     encoding="utf-8")
    err = _every_read_raises(copy, 3, "ascending sample_id")
    assert "sample 3 (number 1 of the unit) belongs at unit_48/shard_000000.bin record 1" in str(err)
    from mintdim_beam.reader import ReaderError, open_output

    # refused as the index loads: even a read of sample 9 names the first row out of place
    with pytest.raises(ReaderError, match=r"shard_000001.bin record 1 \(sample 3, sample_index.jsonl line 4\)"):
        open_output(str(copy)).sample(9)


def test_dirty_pad_tail_and_filled_empty_field_are_refused(corrupt, built):
    copy, patch = corrupt
    patch(2, 2, SLOTS - 1, value=7)               # sample 20: last pad slot
    _every_read_raises(copy, 20, "payload slot 47 holds 7 after the 26 written tokens, expected the pad id 0")

    from mintdim_beam.reader import ReaderError, open_output

    # sample 15 (unit 24, record 1) has an empty answer: move one question token into it
    path = copy / "unit_24" / "shard_000000.bin"
    data = bytearray(path.read_bytes())
    at = (1 * (1 + N_SEG + 24) + 2) * 2
    q = int.from_bytes(data[at:at + 2], "little")
    data[at:at + 2] = (q - 1).to_bytes(2, "little")
    data[at + 4:at + 6] = (1).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(ReaderError, match=r"segment 3 \(a\) holds 1 tokens, but sample_index.jsonl lists it "
                                          r"in empty_fields"):
        open_output(str(copy)).sample(15)


def test_shard_with_more_records_than_the_index_places_is_refused(corrupt):
    copy, _ = corrupt
    path = copy / f"unit_{U}" / "shard_000000.bin"
    data = path.read_bytes()
    path.write_bytes(data + data[:SLOTS * 2])
    _every_read_raises(copy, 3, "holds 5 records, but sample_index.jsonl places 4 there")


def test_checksums_on_open_catch_an_in_vocabulary_change(corrupt):
    from mintdim_beam.reader import ReaderError, open_output

    copy, patch = corrupt
    patch(0, 1, 1 + N_SEG + 1, delta=1)           # sample 3: a token changed to the next (valid) id
    assert open_output(str(copy)).sample(3).token_count == 29     # every record check passes
    checked = open_output(str(copy), checksums=True)
    assert checked.sample(0).sample_id == 0        # unit_24's shard is intact
    for read in (lambda: checked.sample(1), lambda: list(checked.batches(U)), lambda: checked.causal_lm()[1]):
        with pytest.raises(ReaderError, match=r"unit_48/shard_000000.bin: sha256 is [0-9a-f]{64}, SHA256SUMS "
                                              r"records [0-9a-f]{64} \(the file changed after the build\)"):
            read()
    (copy / "SHA256SUMS").write_text("")
    with pytest.raises(ReaderError, match="SHA256SUMS: sha256 is .*, manifest.json records"):
        open_output(str(copy), checksums=True)


def test_index_rows_out_of_order_are_refused(built, tmp_path):
    """The build writes sample_index.jsonl in ascending sample_id (DESIGN.md §4): rows in
    another order are an edited index, refused as it loads, even when each row still
    describes its record truly."""
    import shutil

    from mintdim_beam.reader import ReaderError, open_output

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    lines = (copy / "sample_index.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (copy / "sample_index.jsonl").write_text("".join(lines[::-1]), encoding="utf-8")
    ids = [json.loads(line)["sample_id"] for line in lines[::-1][:2]]
    shuffled = open_output(str(copy))
    with pytest.raises(ReaderError, match=f"sample_index.jsonl line 2: sample_id {ids[1]} follows sample_id "
                                          f"{ids[0]}: rows are written in ascending sample_id") as info:
        shuffled.sample(13)
    assert "sample_index.jsonl dòng 2" in info.value.vietnamese


@pytest.mark.parametrize("key, value", [("shard_record", 10 ** 30), ("sample_id", 2 ** 63), ("token_count", 2 ** 64),
                                        ("shard_path", "unit_48/shard_99999999999.bin")])
def test_index_numbers_beyond_the_columns_are_refused(corrupt, capsys, key, value):
    """An index row's number too large for its int64 (or int32) column used to end the
    reader, verify and export with an OverflowError traceback."""
    from mintdim_beam.cli.commands import main
    from mintdim_beam.reader import ReaderError, open_output

    copy, _ = corrupt
    index = copy / "sample_index.jsonl"
    rows = read_jsonl(index)
    rows[3][key] = value
    index.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows),
                     encoding="utf-8")
    with pytest.raises(ReaderError, match=f"sample_index.jsonl line 4: {key} "):
        len(open_output(str(copy)))
    assert main(["verify", str(copy)]) == 1
    out = capsys.readouterr()
    assert f"sample_index.jsonl line 4: {key} " in out.out + out.err and "Traceback" not in out.out + out.err
    assert main(["export", str(copy), str(copy.parent / "exported"), "--format", "megatron"]) == 2
    out = capsys.readouterr()       # an export compares the index with SHA256SUMS first
    assert "sample_index.jsonl: sha256 is " in out.err and "Traceback" not in out.err
    assert not list(copy.parent.glob("exported*"))


def _damaged(tmp_path, built, damage) -> str:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    damage(copy)
    return str(copy)


def _drop_index_row(d: Path) -> None:
    index = d / "sample_index.jsonl"
    lines = index.read_text(encoding="utf-8").splitlines(keepends=True)
    index.write_text("".join(l for l in lines if json.loads(l)["sample_id"] != 5), encoding="utf-8")


def test_an_index_missing_rows_is_refused_when_the_index_loads(tmp_path, built):
    """Rows emptied or deleted leave records nothing reaches: the rows per unit are
    compared with the samples stats.json counts, without checksums."""
    from mintdim_beam.reader import ReaderError, open_output

    counts = {int(u): v["samples"] for u, v in json.loads((Path(built) / "stats.json").read_text())["units"].items()}
    row = next(r for r in read_jsonl(Path(built) / "sample_index.jsonl") if r["sample_id"] == 5)
    unit = row["unit_size"]
    for damage, got, at in ((lambda d: (d / "sample_index.jsonl").write_bytes(b""), 0, SIZES[0]),
                            (_drop_index_row, counts[unit] - 1, unit)):
        path = _damaged(tmp_path / str(got), built, damage)
        reader = open_output(path)
        with pytest.raises(ReaderError) as exc:
            len(reader)
        assert exc.value.reason == (f"{path}: sample_index.jsonl has {got} rows for unit {at}, stats.json counts "
                                  f"{counts[at] if got == 0 else counts[unit]} samples there (rows deleted or the "
                                  f"index replaced)")


@pytest.mark.parametrize("damage, held", [
    (lambda u: (u / "shard_000001.bin").unlink(), "{n_1}"),
    (lambda u: (u / "shard_000099.bin").write_bytes((u / "shard_000000.bin").read_bytes()), "{n_plus}"),
])
def test_a_unit_whose_shard_files_disagree_with_its_samples_is_refused_at_open(tmp_path, built, damage, held):
    from mintdim_beam.reader import ReaderError, open_output

    unit = SIZES[1]
    info = json.loads((Path(built) / "stats.json").read_text())["units"][str(unit)]
    want = -(-info["samples"] // SAMPLES_PER_SHARD)
    assert want >= 2
    path = _damaged(tmp_path, built, lambda d: damage(d / f"unit_{unit}"))
    with pytest.raises(ReaderError) as exc:
        open_output(path)
    n = held.format(n_1=want - 1, n_plus=want + 1)
    assert exc.value.reason == (f"{path}: unit_{unit} holds {n} shard files, but its {info['samples']} samples "
                              f"(stats.json) at samples_per_shard={SAMPLES_PER_SHARD} fill {want} (shard_000000.bin "
                              f"to shard_{want - 1:06d}.bin): shards were deleted, added or renamed")
