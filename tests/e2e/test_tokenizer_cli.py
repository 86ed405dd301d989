"""Tokenizer files that cannot be loaded, through the command line: exit 2, no
traceback, nothing written to the output (the adapter's errors are
``tests/unit/test_tokenizer_load.py``)."""

from __future__ import annotations

import json

import pytest

from conftest import write_jsonl
from mintdim_beam.cli import commands as cli
from test_tokenizer_load import HF_JSON_TEXT, SP_MODEL, TITLE_EN, TITLE_VI


def _job(tmp_path, section: str, tokenizer: str) -> str:
    data = write_jsonl(tmp_path / "in.jsonl", [{"t": "hello world"}] * 3)
    job = {"source": {"files": [data], "fields": [["t"]], "templates": ["{t}"]},
           "tokenizer": {section: [tokenizer]},
           "units": {"sizes": [[16]], "build_batch": [4]},
           "output": {"dir": str(tmp_path / "out"), "samples_per_shard": [4]}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return str(path)


@pytest.mark.parametrize("section,name,data,problem", [
    ("sentencepiece", "empty.model", b"", "Problem: the file is empty (0 bytes)"),
    ("sentencepiece", "truncated.model", SP_MODEL[:2000], "SentencePiece cannot read it as a model"),
    ("hf_json", "tokenizer.json", b"{not json", "Problem: it is not valid JSON ("),
    ("hf_json", "real.model", SP_MODEL,
     "Problem: its name ends in .model, the other format's extension: declare it under the tokenizer type "
     "that reads .model files, or rename it"),
    ("sentencepiece", "real.json", HF_JSON_TEXT, "Problem: its name ends in .json, the other format's extension"),
], ids=["empty.model", "truncated.model", "not-json", "model-as-hf_json", "json-as-sentencepiece"])
def test_cli_exits_2_and_publishes_nothing(tmp_path, capsys, section, name, data, problem):
    tokenizer = tmp_path / name
    tokenizer.write_bytes(data)
    assert cli.main(["build", _job(tmp_path, section, str(tokenizer))]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert TITLE_EN in err and TITLE_VI in err and f"File: {tokenizer}" in err and problem in err
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())
