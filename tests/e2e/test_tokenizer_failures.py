"""A tokenizer library that fails on a sample (a Rust panic) is the spec's error naming
the tokenizer and the sample's file and line, never a traceback."""

from __future__ import annotations

import json

import pytest

from conftest import TESTDATA, write_jsonl

from mintdim_beam import errors, pipeline
from mintdim_beam.cli.commands import main


def _backtracking_tokenizer(tmp_path) -> str:
    """The test byte-level BPE with a pre-tokenizer regex that backtracks without end on
    a long run of ``a`` (Oniguruma gives up: the library panics)."""
    d = json.loads((TESTDATA / "hf_bytelevel_bpe.json").read_text())
    d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(a|aa)+$"}, "behavior": "Isolated", "invert": False},
        d["pre_tokenizer"]]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(d))
    return str(path)


def test_a_library_panic_names_the_tokenizer_and_the_sample(tmp_path):
    tok = _backtracking_tokenizer(tmp_path)
    rows = [{"a": "hello world"}, {"a": "fine text"}, {"a": "a" * 30000 + "b"}, {"a": "after"}]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    job = (pipeline("unit-build").source.jsonl(files=[src], fields=[["a"]], templates=["{a}"])
           .tokenizer.hf_json(files=[tok]).units(sizes=[[64]], build_batch=[8])
           .output.dir(str(tmp_path / "out"), samples_per_shard=[16]))
    with pytest.raises(errors.TokenizerFailedError) as caught:
        job.run(on_overflow="truncate", on_template_unk="continue", quiet=True, echo=lambda *a: None)
    err = caught.value
    assert (err.fields["tokenizer"], err.fields["file"], err.fields["line"]) == (tok, src, 3)
    assert "retry-limit-in-match" in err.fields["detail"]
    assert "[english]" in str(err) and "Thư viện tokenizer bị lỗi" in str(err)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_the_cli_reports_it_with_exit_2(tmp_path, capsys):
    tok = _backtracking_tokenizer(tmp_path)
    src = write_jsonl(tmp_path / "in.jsonl", [{"a": "ok"}, {"a": "a" * 30000 + "b"}])
    job = {"source": {"files": [src], "fields": [["a"]], "templates": ["{a}"]},
           "tokenizer": {"type": "hf_json", "files": [tok]},
           "units": {"sizes": [[64]], "build_batch": [8]},
           "output": {"dir": str(tmp_path / "out"), "samples_per_shard": [16]},
           "run": {"on_overflow": "truncate", "on_template_unk": "continue", "on_bad_record": "skip"}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    assert main(["build", str(tmp_path / "job.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "TokenizerFailedError" in err and f"{src}" in err and "Traceback" not in err
