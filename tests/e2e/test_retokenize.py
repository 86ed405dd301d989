"""``verify --tokenizer`` re-tokenizes the sampled rows in batches: the tokenizer is
called once per ``RETOKENIZE_ROWS`` rows, not once per segment, and its verdicts are
those of a row-at-a-time check (a changed token is found; a record the reader refuses
is skipped, the others still compared).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import TESTDATA, OutputDir, quiet, write_jsonl
from mintdim_beam.reader import source_check
from mintdim_beam.reader.verify import verify_output
from mintdim_beam.tokenization import adapters


def _build(tmp_path, rows: int) -> str:
    from mintdim_beam import pipeline

    src = write_jsonl(tmp_path / "a.jsonl", [{"q": f"hello number {k}", "a": "world " * (k % 5)} for k in range(rows)])
    out = str(tmp_path / "out")
    (pipeline("unit-build").source.jsonl(files=[src], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"])
     .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")]).units(sizes=[[16, 64]], build_batch=[64])
     .output.dir(out, samples_per_shard=[500])
     .run(on_overflow="truncate", on_template_unk="continue", echo=quiet, quiet=True))
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    return _build(tmp_path_factory.mktemp("retok"), 5000)


def test_the_tokenizer_is_called_per_batch_of_rows(dataset, monkeypatch):
    calls = []
    real = adapters.SentencePieceTokenizer.encode_batch

    def counted(self, texts):
        calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(adapters.SentencePieceTokenizer, "encode_batch", counted)
    report = verify_output(dataset, tokenizer="manifest", sample_rows=0)
    assert report.ok and report.retokenized == 5000
    # the template's two literals once (its constants, ``template_tokens``), then one
    # call per batch of rows, of distinct field texts only
    assert calls[:2] == [1, 1]
    assert len(calls) - 2 == -(-5000 // source_check.RETOKENIZE_ROWS)
    assert sum(calls) < 5000 * 2


def _record_slot(out: OutputDir, row: dict, payload_at: int) -> tuple:
    """(shard file, byte offset) of payload slot ``payload_at`` of ``row``'s record."""
    unit = row["unit_size"]
    slots = 1 + out.n + unit
    return out.path / row["shard_path"], (row["shard_record"] * slots + 1 + out.n + payload_at) * out.dtype.itemsize


def test_a_changed_token_is_found_and_a_refused_record_skipped(dataset, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    out = OutputDir(copy)
    rows = sorted(out.samples, key=lambda r: r["sample_id"])
    changed, broken = rows[10], rows[20]
    path, at = _record_slot(out, changed, 0)
    data = bytearray(path.read_bytes())
    old = int(np.frombuffer(bytes(data[at:at + 2]), "<u2")[0])
    data[at:at + 2] = np.array([old + 1 if old + 1 < 400 else old - 1], "<u2").tobytes()   # another valid id
    path.write_bytes(bytes(data))
    path, at = _record_slot(out, broken, -out.n - 1)          # its magic
    data = bytearray(path.read_bytes())
    data[at:at + 2] = b"\x00\x00"
    path.write_bytes(bytes(data))
    report = verify_output(str(copy), tokenizer="manifest", sample_rows=0, checksums=False)
    found = [str(p) for p in report.problems]
    assert any(f"(sample {changed['sample_id']}): segment 0 (token_template) holds" in p for p in found), found
    assert any("magic" in p and f"record {broken['shard_record']}" in p for p in found), found
    assert report.retokenized == 5000 - 1
