"""Preference pairs read back as DPO items (``ds.preference_pairs()``): the two records of
each pair, the labels on the completion only, checked against the tokenizer itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import run_pipeline, write_jsonl
from mintdim_beam.errors import ReaderError
from mintdim_beam.reader import open_output

HF = "hf_json"
TEMPLATE = "<|im_start|>user\n{prompt}{@eos}\n<|im_start|>assistant\n{completion}{@eos}"
CHATML = {"user": "<|im_start|>user\n{content}{@eos}\n", "assistant": "<|im_start|>assistant\n{content}{@eos}\n",
          "system": "<|im_start|>system\n{content}{@eos}\n"}
ROWS = [
    {"prompt": "Why do bees matter?", "chosen": "They pollinate crops.", "rejected": "No idea."},
    {"prompt": "Tides?", "chosen": "The Moon pulls the oceans.", "rejected": "Wind."},
    {"prompt": "Hi", "chosen": "Hello there, friend", "rejected": "Go away"},
]


@pytest.fixture
def lib(tok):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(Path(tok("hf_chat")) / "tokenizer.json"))


def ids(lib, text):
    return lib.encode(text, add_special_tokens=False).ids


def build(tmp_path, tok, rows, chat=None, sizes=(32, 64)):
    src = write_jsonl(tmp_path / "pairs.jsonl", rows)
    run_pipeline(files=[src], templates=None if chat else [TEMPLATE], chat=chat,
                 pairs={"prompt": "prompt", "chosen": "chosen", "rejected": "rejected"}, tokenizer_kind=HF,
                 tokenizer_files=[tok("hf_chat")], sizes=[list(sizes)], samples_per_shard=[2],
                 output_dirs=str(tmp_path / "out"), on_overflow="truncate")
    return open_output(str(tmp_path / "out"))


def test_string_pairs_give_dpo_items_with_labels_on_the_completion(tmp_path, tok, lib):
    ds = build(tmp_path, tok, ROWS)
    pairs = ds.preference_pairs()
    assert len(pairs) == 3 and pairs.pair_ids.tolist() == [0, 1, 2]
    eos = lib.token_to_id("<|im_end|>")
    for i, row in enumerate(ROWS):
        item = pairs[i]
        prompt = ids(lib, "<|im_start|>user\n") + ids(lib, row["prompt"]) + [eos] + ids(lib, "\n<|im_start|>assistant\n")
        for side in ("chosen", "rejected"):
            completion = ids(lib, row[side]) + [eos]
            want = prompt + completion
            got, labels, mask = item[f"{side}_input_ids"], item[f"{side}_labels"], item[f"{side}_attention_mask"]
            assert len(got) == len(labels) == len(mask) == len(item["chosen_input_ids"])   # one unit
            assert got[:len(want)].tolist() == want
            assert mask.tolist() == [True] * len(want) + [False] * (len(got) - len(want))
            assert labels.tolist() == [-100] * len(prompt) + completion + [-100] * (len(got) - len(want))
    shifted = ds.preference_pairs(shift=True)[0]
    assert shifted["chosen_labels"][:-1].tolist() == np.where(
        pairs[0]["chosen_labels"][1:] >= 0, pairs[0]["chosen_input_ids"][1:], -100).tolist()


def test_chat_pairs_put_the_labels_on_the_completion_messages(tmp_path, tok, lib):
    rows = [{"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
             "chosen": [{"role": "assistant", "content": "Hello!"}],
             "rejected": {"role": "assistant", "content": "Go away."}}]
    ds = build(tmp_path, tok, rows, chat={"templates": [CHATML], "max_messages": [3]}, sizes=(64,))
    item = ds.preference_pairs()[0]
    eos = lib.token_to_id("<|im_end|>")
    newline = ids(lib, "\n")

    def message(role, content):
        return ids(lib, f"<|im_start|>{role}\n") + ids(lib, content) + [eos] + newline

    prompt = message("system", "Be brief.") + message("user", "Hi")
    for side, answer in (("chosen", "Hello!"), ("rejected", "Go away.")):
        completion = message("assistant", answer)
        labels = item[f"{side}_labels"].tolist()
        assert item[f"{side}_input_ids"][:len(prompt + completion)].tolist() == prompt + completion
        assert labels[:len(prompt)] == [-100] * len(prompt)
        assert labels[len(prompt):len(prompt) + len(completion)] == completion
        assert set(labels[len(prompt) + len(completion):]) <= {-100}


def test_a_pair_dataset_batches_by_unit(tmp_path, tok):
    ds = build(tmp_path, tok, ROWS + [{"prompt": "Hi", "chosen": "Yes", "rejected": "No, " * 5}], sizes=(24, 64))
    pairs = ds.preference_pairs()
    batches = list(pairs.batch_sampler(2))
    assert sorted(i for b in batches for i in b) == list(range(len(pairs)))
    for batch in batches:
        assert len({int(pairs.units[i]) for i in batch}) == 1
    assert len(ds.preference_pairs(units=[24])) == sum(1 for u in pairs.units if u == 24)


def test_preference_pairs_refuses_a_dataset_without_pairs(tmp_path, tok):
    src = write_jsonl(tmp_path / "in.jsonl", [{"q": "a"}])
    run_pipeline(files=[src], fields=[["q"]], templates=["{q}"], tokenizer_kind=HF, tokenizer_files=[tok("hf_chat")],
                 sizes=[[16]], samples_per_shard=[2], output_dirs=str(tmp_path / "out"))
    with pytest.raises(ReaderError) as info:
        open_output(str(tmp_path / "out")).preference_pairs()
    assert "needs a preference-pair output" in info.value.english and "[vietnam]" in str(info.value)


def test_verify_re_renders_both_sides_of_each_pair(tmp_path, tok):
    from mintdim_beam.reader.verify import verify_output

    build(tmp_path, tok, ROWS)
    assert verify_output(str(tmp_path / "out"), tokenizer="manifest").retokenized == 6
    edited = dict(ROWS[1], rejected="Wind and rain.")
    write_jsonl(tmp_path / "pairs.jsonl", [ROWS[0], edited, ROWS[2]])
    report = verify_output(str(tmp_path / "out"), tokenizer="manifest")
    assert not report.ok
    assert any("(sample 3)" in p.message for p in report.problems)
    assert not any("(sample 2)" in p.message and "hash" in p.message for p in report.problems)


def test_a_pair_without_its_rejected_record_is_refused(tmp_path, tok):
    build(tmp_path, tok, ROWS)
    index = tmp_path / "out" / "sample_index.jsonl"
    text = index.read_text(encoding="utf-8")
    assert text.count('"pair_id":1,"pair_role":"rejected"') == 1
    index.write_text(text.replace('"pair_id":1,"pair_role":"rejected"', '"pair_id":1,"pair_role":"chosen"'),
                     encoding="utf-8")
    ds = open_output(str(tmp_path / "out"))       # the index itself is well formed
    with pytest.raises(ReaderError) as info:
        ds.preference_pairs()
    assert "pair 1: its records do not pair up" in info.value.english
