"""Real conversation data (LLaMA-Factory's SFT and tool-use chats, real-data folder),
built with per-role templates on real tokenizers and compared byte for byte with the
reference (tests/reference.py). Skipped without the real-data folder."""

from __future__ import annotations

import json

import pytest

from conftest import OutputDir, build_and_compare

SP = "sentencepiece"


def _rows(path, limit):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line, _ in zip(f, range(limit))]


@pytest.mark.parametrize("name, roles, max_messages", [
    ("llamafactory_v1_sft_messages.jsonl", ("user", "assistant"), 2),
    ("llamafactory_reason_tool_use_messages.jsonl", ("system", "user", "assistant", "tool"), 13),
])
def test_real_chats_on_t5_match_the_reference(tmp_path, realdata, name, roles, max_messages):
    src = realdata / "data" / name
    templates = {role: f"{role.capitalize()}: {{content}}{{@eos}}\n" for role in roles}
    build_and_compare(tmp_path, files=[str(src)], chat={"field": "messages", "templates": [templates],
                                                        "max_messages": [max_messages]},
                      tokenizer_kind=SP, tokenizer_files=[str(realdata / "tokenizers" / "t5_spiece_32000.model")],
                      sizes=[[256, 1024, 4096]], samples_per_shard=[64], on_overflow="truncate",
                      on_template_unk="continue", build_batch=(64,), output_dirs="out")
    out = OutputDir(tmp_path / "out")
    want = [[m["role"] for m in row["messages"]] for row in _rows(src, 10 ** 6)]
    assert [r["roles"] for r in out.samples] == want
    if "tool" in roles:
        assert any("tool" in r for r in want)
