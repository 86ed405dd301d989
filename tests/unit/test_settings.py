"""The build's settings, each stated once: ``index_layout`` as its enum, the defaults of
``config.resolve``, and ``open_tokenizer``, the one way a tokenizer file is loaded."""

from __future__ import annotations

import json

import pytest

from conftest import TESTDATA

from mintdim_beam import errors
from mintdim_beam.core.config import JobSpec, check_index_layout, resolve, run_settings
from mintdim_beam.format.names import IndexLayout


def _job() -> JobSpec:
    return JobSpec(files=["a.jsonl"], fields=[["t"]], templates=["{t}"], tokenizer_kind="sentencepiece",
                   tokenizer_files=["tok.model"], sizes=[[4, 8]], build_batch=[8],
                   output_dirs=["out"], samples_per_shard=[3])


# --------------------------------------------------------------------------- index_layout


def test_index_layout_strings_become_members():
    for text, member in (("file", IndexLayout.FILE), ("parts", IndexLayout.PARTS)):
        assert check_index_layout(text) is member
        assert check_index_layout(member) is member
        assert run_settings({"index_layout": text})["index_layout"] is member
        assert resolve(_job(), index_layout=text).index_layout is member
    assert run_settings({})["index_layout"] is IndexLayout.FILE
    assert resolve(_job()).index_layout is IndexLayout.FILE


def test_index_layout_members_read_as_the_manifest_strings():
    assert IndexLayout.PARTS == "parts" and IndexLayout.FILE == "file"
    assert str(IndexLayout.PARTS) == f"{IndexLayout.PARTS}" == "parts"
    assert json.dumps({"layout": IndexLayout.PARTS}) == '{"layout": "parts"}'


@pytest.mark.parametrize("value", ["part", "PARTS", "", None, 1, True, ["parts"]])
def test_index_layout_refuses_other_values_as_before(value):
    with pytest.raises(errors.PipelineValidationError) as caught:
        check_index_layout(value)
    assert f"index_layout must be one of file, parts, got {value!r}" in str(caught.value)
    with pytest.raises(errors.PipelineValidationError):
        resolve(_job(), index_layout=value) if value is not None else run_settings(
            {"index_layout": None})


# --------------------------------------------------------------------------- defaults


def test_none_is_the_default_of_every_setting():
    from mintdim_beam import pipeline
    from mintdim_beam.core.config import DEFAULT_ACCELERATORS, DEFAULT_BLOCK_SIZE, DEFAULT_INDEX_LAYOUT, Policies

    assert Policies(None, None, None) == Policies() == Policies(on_overflow="abort", on_template_unk="prompt",
                                                                on_bad_record="abort")
    assert Policies(on_overflow="skip", on_bad_record=None) == Policies(on_overflow="skip")
    for config in (resolve(_job()), resolve(_job(), None, None, None, None)):
        assert (config.policies, config.block_size, config.accelerators, config.index_layout) == (
            Policies(), DEFAULT_BLOCK_SIZE, DEFAULT_ACCELERATORS, DEFAULT_INDEX_LAYOUT)
    assert (DEFAULT_BLOCK_SIZE, DEFAULT_ACCELERATORS, DEFAULT_INDEX_LAYOUT) == (4 << 20, True, "file")
    job = (pipeline("unit-build").source.jsonl(files=["a.jsonl"], fields=[["t"]], templates=["{t}"])
           .tokenizer.sentencepiece(files=["tok.model"]).units(sizes=[[4, 8]], build_batch=[8])
           .output.dir("out", samples_per_shard=[3]))
    config = job.config()
    assert (config.policies, config.block_size, config.accelerators, config.index_layout) == (
        Policies(), DEFAULT_BLOCK_SIZE, DEFAULT_ACCELERATORS, DEFAULT_INDEX_LAYOUT)
    assert job.config(block_size=2048, index_layout="parts", accelerators=False).index_layout is IndexLayout.PARTS


@pytest.mark.parametrize("name", ["block_size", "accelerators", "index_layout"])
def test_a_job_files_null_is_still_refused(name):
    """None means "the default" to ``resolve``; a job file's ``null`` is a typing mistake."""
    with pytest.raises(errors.PipelineValidationError):
        run_settings({name: None})


# --------------------------------------------------------------------------- open_tokenizer


@pytest.mark.parametrize("kind,name", [("sentencepiece", "sp_unigram.model"), ("hf_json", "hf_wordpiece.json")])
def test_open_tokenizer_reads_through_the_given_reader_and_loads_as_load_tokenizer(kind, name):
    from mintdim_beam.storage import files as storage
    from mintdim_beam.tokenization.adapters import load_tokenizer, open_tokenizer

    path = str(TESTDATA / name)
    asked = []

    def read(p):
        asked.append(p)
        return storage.read_bytes(p)

    tok = open_tokenizer(kind, path, read, threads=1, accelerators=False)
    want = load_tokenizer(kind, path, (TESTDATA / name).read_bytes(), threads=1, accelerators=False)
    assert asked == [path]
    assert (tok.vocab_size, tok.unk_id, tok.pad_id) == (want.vocab_size, want.unk_id, want.pad_id)
    texts = ["hello world", "Xin chào thế giới", ""]
    assert [tok.encode(t) for t in texts] == [want.encode(t) for t in texts]
    assert tok.encode("hello world")


def test_open_tokenizer_fails_as_load_tokenizer_and_as_the_reader():
    from mintdim_beam.tokenization.adapters import open_tokenizer

    with pytest.raises(errors.TokenizerValidationError):
        open_tokenizer("sentencepiece", "./tok/t.model", lambda _path: b"")
    with pytest.raises(FileNotFoundError):
        open_tokenizer("sentencepiece", "missing.model", lambda p: open(p, "rb").read())
