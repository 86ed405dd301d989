"""``mintdim-beam tokenizer add-padding``: a copy of a tokenizer.json that pads with one of
its own tokens, so a build can read the pad id from the file (DESIGN.md §8)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import refused_by_cli, run_pipeline, write_jsonl
from mintdim_beam.cli.commands import main
from mintdim_beam.storage import files as storage
from mintdim_beam.tokenization.adapters import open_tokenizer


def test_the_copy_pads_with_the_token_and_changes_nothing_else(tmp_path, tok, capsys):
    out = tmp_path / "padded" / "tokenizer.json"
    before = open(tok("hf_nopad.json"), "rb").read()
    assert main(["tokenizer", "add-padding", tok("hf_nopad.json"), "--pad-token", "[PAD]", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert open(tok("hf_nopad.json"), "rb").read() == before          # the original is never written
    original, copy = json.loads(before), json.loads(out.read_bytes())
    assert copy["padding"] == {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
                               "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"}
    assert list(copy) == list(original) and {k: v for k, v in copy.items() if k != "padding"} == \
        {k: v for k, v in original.items() if k != "padding"}
    loaded = open_tokenizer("hf_json", str(out), storage.read_bytes, exists=storage.exists)
    assert (loaded.pad_id, loaded.unk_id) == (0, 1)


def test_a_padded_copy_builds(tmp_path, tok):
    padded = tmp_path / "tok.padded.json"
    assert main(["tokenizer", "add-padding", tok("hf_nopad.json"), "--pad-token", "[PAD]", str(padded)]) == 0
    src = write_jsonl(tmp_path / "in.jsonl", [{"t": "xin chào"}])
    result = run_pipeline(files=[src], fields=[["t"]], templates=["{t}"], tokenizer_kind="hf_json",
                          tokenizer_files=[str(padded)], sizes=[[8]], samples_per_shard=[4],
                          output_dirs=str(tmp_path / "out"))
    assert result.outputs[0].stats["total_samples"] == 1


def test_a_model_folder_is_read_through_its_tokenizer_json(tmp_path, tok):
    shutil.copytree(tok("hf_chat"), tmp_path / "chat")
    out = tmp_path / "chat-padded.json"
    assert main(["tokenizer", "add-padding", str(tmp_path / "chat"), "--pad-token", "<|endoftext|>", str(out)]) == 0
    assert json.loads(out.read_bytes())["padding"]["pad_id"] == 0


def test_a_token_the_tokenizer_lacks_is_refused_with_the_ones_it_has(tmp_path, tok, capsys):
    out = tmp_path / "p.json"
    english, vietnamese = refused_by_cli(capsys, ["tokenizer", "add-padding", tok("hf_nopad.json"), "--pad-token",
                                                  "<pad>", str(out)], "TokenizerValidationError",
                                         "'<pad>' is not a token of this tokenizer", "Tokens that could pad: '[PAD]'")
    assert "The padded copy of the tokenizer was not written." in english and "'<pad>'" in vietnamese
    assert not out.exists()


def test_a_file_that_already_pads_and_an_existing_out_are_refused(tmp_path, tok, capsys):
    refused_by_cli(capsys, ["tokenizer", "add-padding", tok("hf_wordpiece.json"), "--pad-token", "[PAD]",
                            str(tmp_path / "p.json")], "TokenizerValidationError",
                   "it already configures padding with pad_token '[PAD]' (id 0)")
    (tmp_path / "taken.json").write_text("keep")
    refused_by_cli(capsys, ["tokenizer", "add-padding", tok("hf_nopad.json"), "--pad-token", "[PAD]",
                            str(tmp_path / "taken.json")], "TokenizerValidationError", "already exists")
    assert (tmp_path / "taken.json").read_text() == "keep"


def test_a_file_that_is_not_a_tokenizer_json_is_refused(tmp_path, tok, capsys):
    refused_by_cli(capsys, ["tokenizer", "add-padding", tok("sp_bpe.model"), "--pad-token", "<pad>",
                            str(tmp_path / "p.json")], "TokenizerValidationError",
                   "it is not a Hugging Face tokenizer.json")


def test_the_pad_token_is_required(tmp_path, tok):
    assert main(["tokenizer", "add-padding", tok("hf_nopad.json"), str(tmp_path / "p.json")]) == 64


def test_olmo_padded_builds_without_unk(tmp_path, realdata):
    """OLMo's GPT-NeoX tokenizer.json: no unk (it covers every byte UTF-8 can hold) and no
    padding; with the padding add-padding writes, a build takes it as it is."""
    source = realdata / "tokenizers" / "olmo_gpt-neox-20b-pii-special.tokenizer.json"
    padded = tmp_path / "olmo.padded.json"
    assert main(["tokenizer", "add-padding", str(source), "--pad-token", "<|padding|>", str(padded)]) == 0
    src = write_jsonl(tmp_path / "in.jsonl", [{"q": "Xin chào 漢字 🙂", "a": "hello"}])
    result = run_pipeline(files=[src], fields=[["q", "a"]], templates=["{q}\n{a}{@<|endoftext|>}"],
                          tokenizer_kind="hf_json", tokenizer_files=[str(padded)], sizes=[[32]],
                          samples_per_shard=[4], output_dirs=str(tmp_path / "out"))
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_bytes())
    assert (manifest["tokenizer"]["unk_id"], manifest["tokenizer"]["pad_id"]) == (None, 1)
    assert (out / "unk_index.jsonl").read_bytes() == b"" and result.outputs[0].stats["samples_with_unk"] == 0


@pytest.mark.parametrize("argv", [["tokenizer", "--help"], ["tokenizer", "add-padding", "--help"]])
def test_help(argv, capsys):
    assert main(argv) == 0
    assert "add-padding" in capsys.readouterr().out
