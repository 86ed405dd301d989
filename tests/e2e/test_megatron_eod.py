"""``export --format megatron --append-eod [--eod-token NAME]``: each document that has
tokens ends with the tokenizer's end token, as Megatron-LM's ``preprocess_data.py
--append-eod`` writes it (an empty document stays empty).

The ``.bin``/``.idx`` pair is read back with :func:`read_mmidx`, a parse of the
``MMIDIDX`` layout written here from Megatron-LM's ``_IndexReader`` (no code of the
package), and compared with the dataset decoded by ``conftest.OutputDir``.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import TESTDATA, OutputDir, quiet, refused_by_cli, write_jsonl
from mintdim_beam.cli.commands import main
from mintdim_beam.errors import DatasetAccessError

_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
           8: np.uint16}


def read_mmidx(prefix) -> dict:
    """Header, sequence lengths, byte pointers, document boundaries and the sequences."""
    idx = Path(f"{prefix}.idx").read_bytes()
    assert idx[:9] == b"MMIDIDX\x00\x00" and struct.unpack_from("<Q", idx, 9) == (1,)
    (code,) = struct.unpack_from("<B", idx, 17)
    sequences, documents = struct.unpack_from("<QQ", idx, 18)
    dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
    lengths = np.frombuffer(idx, "<i4", sequences, 34)
    pointers = np.frombuffer(idx, "<i8", sequences, 34 + lengths.nbytes)
    docs = np.frombuffer(idx, "<i8", documents, 34 + lengths.nbytes + pointers.nbytes)
    assert 34 + lengths.nbytes + pointers.nbytes + docs.nbytes == len(idx)
    data = Path(f"{prefix}.bin").read_bytes()
    assert len(data) == int(lengths.sum()) * dtype.itemsize
    seqs = [np.frombuffer(data, dtype, int(n), int(p)).tolist() for n, p in zip(lengths, pointers)]
    return {"code": code, "lengths": lengths.tolist(), "pointers": pointers.tolist(), "documents": docs.tolist(),
            "sequences": seqs, "itemsize": dtype.itemsize}


def _build(tmp_path, name: str, kind: str, tokenizer: str) -> str:
    from mintdim_beam import pipeline

    rows = [{"t": f"hello world number {k}"} for k in range(9)]
    rows[4] = {"t": ""}                      # a sample with no token: its document stays empty
    src = write_jsonl(tmp_path / f"{name}.jsonl", rows)
    out = str(tmp_path / name)
    job = pipeline("unit-build").source.jsonl(files=[src], fields=[["t"]], templates=["{t}"])
    job = job.tokenizer.sentencepiece(files=[tokenizer]) if kind == "sp" else job.tokenizer.hf_json(files=[tokenizer])
    (job.units(sizes=[[8, 32]], build_batch=[4]).output.dir(out, samples_per_shard=[4])
     .run(on_overflow="truncate", on_template_unk="continue", echo=quiet, quiet=True))
    return out


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("eod")
    return {"sp": _build(tmp, "sp", "sp", str(TESTDATA / "sp_bpe.model")),              # eos id 2
            "hf": _build(tmp, "hf", "hf", str(TESTDATA / "hf_wordpiece.json")),         # no eos; [SEP] is 3
            "no_eos": _build(tmp, "no_eos", "sp", str(TESTDATA / "sp_unigram.model"))}


def _expected(src) -> list:
    out = OutputDir(src)
    return [sum(out.decode(row), []) for row in sorted(out.samples, key=lambda r: r["sample_id"])]


def _export(capsys, argv) -> tuple:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_append_eod_ends_every_document_with_the_eos_id(datasets, tmp_path, capsys):
    code, out, err = _export(capsys, ["export", datasets["sp"], "--format", "megatron", str(tmp_path / "mg"),
                                      "--append-eod"])
    assert (code, err) == (0, "")
    got = read_mmidx(tmp_path / "mg")
    plain = _expected(datasets["sp"])
    assert plain[4] == [] and all(plain[k] for k in range(9) if k != 4)
    assert got["sequences"] == [tokens + [2] if tokens else [] for tokens in plain]
    assert got["lengths"] == [len(t) + 1 if t else 0 for t in plain]
    assert got["pointers"] == [sum(got["lengths"][:k]) * got["itemsize"] for k in range(9)]
    assert got["documents"] == list(range(10)) and got["code"] == 8
    assert f"samples=9 tokens={sum(got['lengths'])}" in out


def test_the_export_does_not_depend_on_its_chunks(datasets, tmp_path):
    from mintdim_beam.reader.export import export_megatron

    export_megatron(datasets["sp"], str(tmp_path / "whole"), append_eod=True)
    export_megatron(datasets["sp"], str(tmp_path / "chunked"), append_eod=True, chunk_rows=2, chunk_tokens=3)
    for ext in (".bin", ".idx"):
        assert (tmp_path / f"whole{ext}").read_bytes() == (tmp_path / f"chunked{ext}").read_bytes()


def test_eod_token_names_another_special_token_by_content(datasets, tmp_path, capsys):
    code, _, err = _export(capsys, ["export", datasets["hf"], "--format", "megatron", str(tmp_path / "hf"),
                                    "--append-eod", "--eod-token", "[SEP]"])
    assert (code, err) == (0, "")
    plain = _expected(datasets["hf"])
    assert read_mmidx(tmp_path / "hf")["sequences"] == [tokens + [3] if tokens else [] for tokens in plain]
    code, _, err = _export(capsys, ["export", datasets["sp"], "--format", "megatron", str(tmp_path / "pad"),
                                    "--append-eod", "--eod-token", "<pad>"])
    assert code == 0 and read_mmidx(tmp_path / "pad")["sequences"][0][-1] == 3    # sp_bpe's <pad> is 3


def test_without_an_end_token_the_export_says_how_to_name_one(datasets, tmp_path, capsys):
    dest = tmp_path / "dest"
    dest.mkdir()
    english, vietnamese = refused_by_cli(
        capsys, ["export", datasets["no_eos"], "--format", "megatron", str(dest / "a"), "--append-eod"],
        "DatasetAccessError", "names no end-of-sequence token", "--eod-token NAME")
    assert "--eod-token NAME" in vietnamese
    refused_by_cli(capsys, ["export", datasets["no_eos"], "--format", "megatron", str(dest / "b"), "--append-eod",
                            "--eod-token", "</nope>"], "DatasetAccessError", "'</nope>' is not one token of")
    assert list(dest.iterdir()) == []


def test_the_tokenizer_is_the_manifests_or_one_given_in_its_place(datasets, tmp_path, capsys):
    moved = tmp_path / "moved"
    shutil.copytree(datasets["sp"], moved)
    manifest = (moved / "manifest.json").read_text()
    (moved / "manifest.json").write_text(manifest.replace(str(TESTDATA / "sp_bpe.model"), "/gone/sp_bpe.model"))
    refused_by_cli(capsys, ["export", str(moved), "--format", "megatron", str(tmp_path / "a"), "--append-eod"],
                   "DatasetAccessError", "/gone/sp_bpe.model cannot be loaded", "--tokenizer PATH")
    code, _, err = _export(capsys, ["export", datasets["sp"], "--format", "megatron", str(tmp_path / "b"),
                                    "--append-eod", "--tokenizer", str(TESTDATA / "sp_bpe.model")])
    assert (code, err) == (0, "")
    refused_by_cli(capsys, ["export", datasets["sp"], "--format", "megatron", str(tmp_path / "c"), "--append-eod",
                            "--tokenizer", str(TESTDATA / "sp_unigram.model")],
                   "DatasetAccessError", "is not the tokenizer the dataset was built with")


def test_usage_errors_and_an_existing_output(datasets, tmp_path, capsys):
    for argv in (["--eod-token", "</s>"], ["--tokenizer", "x.model"]):
        assert main(["export", datasets["sp"], "--format", "megatron", str(tmp_path / "u"), *argv]) == 64
    assert main(["export", datasets["sp"], "--format", "parquet", str(tmp_path / "p.parquet"), "--append-eod"]) == 64
    assert "--append-eod is for --format megatron" in capsys.readouterr().err
    (tmp_path / "x.idx").write_bytes(b"old")
    refused_by_cli(capsys, ["export", datasets["sp"], "--format", "megatron", str(tmp_path / "x")],
                   "DatasetAccessError", f"mintdim-beam export: {tmp_path / 'x.idx'} already exists; remove it or "
                                         "pass --overwrite (overwrite=True in Python)")
    with pytest.raises(DatasetAccessError):
        from mintdim_beam.reader.export import export_megatron

        export_megatron(datasets["sp"], str(tmp_path / "x"))
