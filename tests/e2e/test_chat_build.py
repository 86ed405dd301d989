"""Chat sources (DESIGN.md §9): conversations built and compared byte for byte with the
reference (tests/reference.py), their errors, the job file and the contract files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import OutputDir, build_and_compare, run_pipeline, write_jsonl
from mintdim_beam import errors
from mintdim_beam.cli.commands import main
from mintdim_beam.format.chat import chat_sequence_template, is_chat_template, parse_role_template, RoleTemplateError

HF, SP = "hf_json", "sentencepiece"

CHATML = {
    "system": "<|im_start|>system\n{content}{@eos}\n",
    "user": "<|im_start|>user\n{content}{@eos}\n",
    "assistant": "<|im_start|>assistant\n{content}{@eos}\n",
    "tool": "<|im_start|>tool\n{content}{@eos}\n",
}

OPENAI = [
    {"messages": [{"role": "system", "content": "You are a helpful assistant."},
                  {"role": "user", "content": "Why do bees matter?"},
                  {"role": "assistant", "content": "They pollinate crops and wild plants."}]},
    {"messages": [{"role": "user", "content": "Xin ch\u00e0o, b\u1ea1n kh\u1ecfe kh\u00f4ng?"},
                  {"role": "assistant", "content": "T\u00f4i kh\u1ecfe, c\u1ea3m \u01a1n b\u1ea1n!"}]},
    # a tool-call turn: the assistant's content is null (rendered empty), the tool answers
    {"messages": [{"role": "user", "content": "Weather in Hanoi?"},
                  {"role": "assistant", "content": None, "tool_calls": [{"name": "weather"}]},
                  {"role": "tool", "content": "{\"temp\": 31}"},
                  {"role": "assistant", "content": "It is 31 degrees."}]},
    {"messages": [{"role": "user", "content": "Why do bees matter?"}]},
    {"messages": []},
]


@pytest.fixture
def hf_chat(tok):
    return tok("hf_chat")


def build_chat(tmp_path, tokenizer, rows, kind=HF, templates=CHATML, max_messages=4, sizes=(16, 32, 64, 128),
               **kw):
    src = write_jsonl(tmp_path / "chat.jsonl", rows)
    chat = {"field": kw.pop("field", "messages"), "templates": [templates], "max_messages": [max_messages]}
    for key in ("role_key", "content_key"):
        if key in kw:
            chat[key] = kw.pop(key)
    kw.setdefault("output_dirs", "out")
    kw.setdefault("on_template_unk", "continue")
    return build_and_compare(tmp_path, files=[src], chat=chat, tokenizer_kind=kind, tokenizer_files=[tokenizer],
                             sizes=[list(sizes)], samples_per_shard=[2], **kw)


def test_the_layout_names_three_segments_per_message():
    assert chat_sequence_template(2) == ("message0.prefix", "message0.content", "message0.suffix",
                                         "message1.prefix", "message1.content", "message1.suffix")
    assert is_chat_template(chat_sequence_template(3))
    assert not is_chat_template(["token_template", "q"])
    role = parse_role_template("user", "<u>{content}{@eos}\n")
    assert [s.name for s in role.prefix] == ["token_template"] and [s.name for s in role.suffix] == [
        "@eos", "token_template"]
    for bad in ("no content", "{content}{content}", "{content}{other}", "{content"):
        with pytest.raises(RoleTemplateError):
            parse_role_template("user", bad)


def test_openai_conversations_match_the_reference(tmp_path, hf_chat):
    build_chat(tmp_path, hf_chat, OPENAI)
    out = OutputDir(tmp_path / "out")
    rows = out.samples
    assert [r["roles"] for r in rows] == [["system", "user", "assistant"], ["user", "assistant"],
                                          ["user", "assistant", "tool", "assistant"], ["user"], []]
    assert rows[2]["empty_fields"] == ["message1.content"]
    assert out.manifest["sequence_template"] == list(chat_sequence_template(4))
    assert out.manifest["chat"] == {"max_messages": 4, "message_parts": ["prefix", "content", "suffix"],
                                    "roles": ["system", "user", "assistant", "tool"], "roles_key": "roles"}
    assert out.manifest["source"]["chat"][0]["templates"] == CHATML
    # the hash covers the rendered conversation, {@eos} as its token's text
    first = "".join(CHATML[m["role"]].replace("{@eos}", "<|im_end|>").replace("{content}", m["content"])
                    for m in OPENAI[0]["messages"])
    assert rows[0]["hash"] == hashlib.sha256(first.encode("utf-8")).hexdigest()


def test_the_record_holds_each_message_in_its_slot(tmp_path, hf_chat):
    """Decoded independently: the prefix, content and suffix of every message slot."""
    from tokenizers import Tokenizer

    build_chat(tmp_path, hf_chat, OPENAI[:1])
    lib = Tokenizer.from_file(str(Path(hf_chat) / "tokenizer.json"))
    segments = OutputDir(tmp_path / "out").decoded()[0]
    eos = lib.token_to_id("<|im_end|>")
    newline = lib.encode("\n", add_special_tokens=False).ids
    for i, message in enumerate(OPENAI[0]["messages"]):
        prefix, content, suffix = segments[3 * i:3 * i + 3]
        assert prefix == lib.encode(f"<|im_start|>{message['role']}\n", add_special_tokens=False).ids
        assert content == lib.encode(message["content"], add_special_tokens=False).ids
        assert suffix == [eos] + newline
    assert segments[9:] == [[], [], []]


def test_sharegpt_keys(tmp_path, hf_chat):
    rows = [{"conversations": [{"from": "human", "value": "Tides?"}, {"from": "gpt", "value": "The Moon."}]}]
    build_chat(tmp_path, hf_chat, rows, field="conversations", role_key="from", content_key="value",
               templates={"human": "<|im_start|>user\n{content}{@eos}\n",
                          "gpt": "<|im_start|>assistant\n{content}{@eos}\n"}, max_messages=2)
    assert OutputDir(tmp_path / "out").samples[0]["roles"] == ["human", "gpt"]


def test_unk_rows_name_the_message_and_its_role(tmp_path, tok):
    """sp_unigram maps CJK, emoji and braces to UNK, in contents and in a role's literal."""
    rows = [{"messages": [{"role": "user", "content": "Hello {there} \U0001f600"},
                          {"role": "assistant", "content": "Hi \u6f22\u5b57"}]}]
    build_chat(tmp_path, tok("sp_unigram.model"), rows, kind=SP, max_messages=2,
               templates={"user": "User: {content}\n", "assistant": "Bot {{x}}: {content}\n"})
    (row,) = OutputDir(tmp_path / "out").jsonl("unk_index.jsonl")
    assert row["unk_messages"] == [0, 0, 0, 1, 1, 1]
    assert row["unk_roles"] == ["user"] * 3 + ["assistant"] * 3
    assert row["unk_field_indices"] == [1, 1, 1, 3, 3, 4]     # the assistant's "{x}" is in its prefix
    assert row["unk_chars"] == ["{", "}", "\U0001f600", "{", "}", "\u6f22\u5b57"]


def test_truncation_records_the_messages_it_cut(tmp_path, hf_chat):
    long = {"messages": [{"role": "user", "content": "Why do bees matter?"},
                         {"role": "assistant", "content": "They pollinate crops " * 6},
                         {"role": "user", "content": "Thanks"}]}
    build_chat(tmp_path, hf_chat, [long, OPENAI[3]], sizes=(16, 32), on_overflow="truncate")
    out = OutputDir(tmp_path / "out")
    (row,) = out.jsonl("overflow_index.jsonl")
    assert row["action"] == "truncate" and row["cut_messages"] == [1, 2]
    assert out.samples[0]["token_count"] == 32 and out.samples[0]["roles"] == ["user", "assistant", "user"]


def test_extend_and_skip_apply_to_conversations(tmp_path, hf_chat):
    long = {"messages": [{"role": "user", "content": "bees " * 30}]}
    build_chat(tmp_path / "e", hf_chat, [long, OPENAI[3]], sizes=(16, 32), on_overflow="extend")
    build_chat(tmp_path / "s", hf_chat, [long, OPENAI[3]], sizes=(16, 32), on_overflow="skip")
    assert [r["sample_id"] for r in OutputDir(tmp_path / "s" / "out").samples] == [1]


BAD = [
    ({"messages": "hi"}, "field 'messages' must be a list of messages, got string"),
    ({"messages": [{"role": "user", "content": "a"}] * 5}, "conversation has 5 messages, more than max_messages 4"),
    ({"messages": ["hi"]}, "message 0 must be an object, got string"),
    ({"messages": [{"content": "a"}]}, "message 0 has no 'role' key (keys: ['content'])"),
    ({"messages": [{"role": "user"}]}, "message 0 has no 'content' key (keys: ['role'])"),
    ({"messages": [{"role": 3, "content": "a"}]}, "message 0: role must be a string, got number"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]},
     "message 1: role 'robot' has no template (roles: ['system', 'user', 'assistant', 'tool'])"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]},
     "message 0: content must be a string, got array"),
    ({"prompt": "a"}, "missing fields: messages"),
]


def test_bad_conversations_are_bad_records_under_skip(tmp_path, hf_chat):
    rows = [OPENAI[0]] + [row for row, _ in BAD] + [OPENAI[1]]
    build_chat(tmp_path, hf_chat, rows, on_bad_record="skip")
    out = OutputDir(tmp_path / "out")
    bad = out.jsonl("bad_record_index.jsonl")
    assert [(r["source_line"], r["error"], r["reason"]) for r in bad] == [
        (k + 2, "SampleSchemaError", reason) for k, (_, reason) in enumerate(BAD)]
    assert [r["sample_id"] for r in out.samples] == [0, len(BAD) + 1]


@pytest.mark.parametrize("row, reason", BAD[:8])
def test_a_bad_conversation_aborts_naming_file_line_and_message(tmp_path, hf_chat, row, reason):
    with pytest.raises(errors.SampleSchemaError) as info:
        build_chat(tmp_path, hf_chat, [OPENAI[0], row], on_bad_record="abort")
    err = info.value
    assert (err.file, err.line) == (str(tmp_path / "chat.jsonl"), 2)
    text = str(err)
    assert "[english] SampleSchemaError: JSONL conversation cannot be rendered." in text
    assert "[vietnam] SampleSchemaError:" in text and "messages" in text
    assert reason in err.english and err.reason == reason
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("chat, expected", [
    ({"field": "messages", "templates": {"user": "{content}"}}, "source.chat.max_messages"),
    ({"field": "messages", "templates": {"user": "no placeholder"}, "max_messages": 2},
     "{content} must appear exactly once"),
    ({"field": "messages", "templates": {"user": "{content} {name}"}, "max_messages": 2},
     "{name} is not a chat placeholder"),
    ({"field": "messages", "templates": {"user": "{content}"}, "max_messages": 0}, "max_messages must be an integer"),
    ({"field": "messages", "templates": {"user": "{content}"}, "max_messages": [2, 3]}, "2 values for 1 files"),
    ({"field": "messages", "templates": {"user": "{content}"}, "max_messages": 2, "role_key": "x",
      "content_key": "x"}, "role_key and content_key are both 'x'"),
])
def test_chat_declarations_are_checked_at_launch(tmp_path, hf_chat, chat, expected):
    src = write_jsonl(tmp_path / "chat.jsonl", OPENAI[:1])
    with pytest.raises(errors.PipelineValidationError) as info:
        run_pipeline(files=[src], chat=chat, tokenizer_kind=HF, tokenizer_files=[hf_chat], sizes=[[64]],
                     samples_per_shard=[2], output_dirs=str(tmp_path / "out"))
    assert expected in info.value.english and "[vietnam]" in str(info.value)


def test_a_role_template_naming_a_missing_special_token_is_refused(tmp_path, tok):
    src = write_jsonl(tmp_path / "chat.jsonl", OPENAI[:1])
    with pytest.raises(errors.TemplateTokenizerError) as info:
        run_pipeline(files=[src], chat={"field": "messages", "templates": [CHATML], "max_messages": [4]},
                     tokenizer_kind=SP, tokenizer_files=[tok("sp_unigram.model")], sizes=[[64]],
                     samples_per_shard=[2], output_dirs=str(tmp_path / "out"))
    assert "{@eos}" in info.value.english


def test_a_chat_job_file_builds_from_the_command_line(tmp_path, monkeypatch, hf_chat, capsys):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "data" / "chat.jsonl", OPENAI)
    (tmp_path / "job.yaml").write_text(
        "source:\n  files: [data/chat.jsonl]\n  chat:\n    field: messages\n    max_messages: 4\n    templates:\n"
        + "".join(f"      {role}: {json.dumps(t)}\n" for role, t in CHATML.items())
        + f"tokenizer:\n  hf_json: [{json.dumps(hf_chat)}]\n"
        "units:\n  sizes: [[32, 64, 128]]\n  build_batch: [4]\noutput:\n  dir: out\n  samples_per_shard: [8]\n",
        encoding="utf-8")
    assert main(["build", "job.yaml"]) == 0, capsys.readouterr().err
    out = OutputDir(tmp_path / "out")
    assert [r["roles"] for r in out.samples][:2] == [["system", "user", "assistant"], ["user", "assistant"]]
    lf = json.loads((tmp_path / "out" / "length_field.json").read_text())
    assert lf["chat"]["roles"] == ["system", "user", "assistant", "tool"]


def test_chat_and_fields_together_are_refused(tmp_path, hf_chat):
    from mintdim_beam.core.config import JobSpec, resolve

    spec = JobSpec(files=["a.jsonl"], fields=[["q"]], templates=["{q}"], tokenizer_kind=HF, tokenizer_files=[hf_chat],
                   sizes=[[8]], build_batch=[2], output_dirs=["o"], samples_per_shard=[2],
                   chat={"field": "m", "templates": {"user": "{content}"}, "max_messages": 2})
    with pytest.raises(errors.PipelineValidationError) as info:
        resolve(spec)
    assert "both chat and fields/templates" in info.value.english


def test_chat_builds_are_byte_identical_across_workers_and_blocks(tmp_path, hf_chat):
    rows = OPENAI * 40
    src = write_jsonl(tmp_path / "chat.jsonl", rows)
    chat = {"field": "messages", "templates": [CHATML], "max_messages": [4]}
    common = dict(files=[src], chat=chat, tokenizer_kind=HF, tokenizer_files=[hf_chat], sizes=[[32, 64, 128]],
                  samples_per_shard=[16])
    run_pipeline(output_dirs=str(tmp_path / "a"), **common)
    run_pipeline(output_dirs=str(tmp_path / "b"), block_size=1024, build_batch=(7,),
                 options=["--direct_num_workers=2", "--direct_running_mode=multi_processing"], **common)
    from conftest import assert_same_outputs

    assert_same_outputs(tmp_path / "a", tmp_path / "b")


# --------------------------------------------------------------------------- preference pairs

PAIR_TEMPLATE = "<|im_start|>user\n{prompt}{@eos}\n<|im_start|>assistant\n{completion}{@eos}"
PAIRS = [
    {"prompt": "Why do bees matter?", "chosen": "They pollinate crops.", "rejected": "No idea."},
    {"prompt": "Same?", "chosen": "Yes.", "rejected": "Yes."},                 # collapsed as it is
    {"prompt": "A long prompt that goes on and on about bees and flowers and more of them",
     "chosen": "a", "rejected": "b"},                                          # collapses when truncated
    {"prompt": "Hi", "chosen": "Hello there, friend", "rejected": None},       # null: empty completion
    {"prompt": "Hi", "chosen": ["x"], "rejected": "y"},                        # a bad line: two bad records
]


def build_pairs(tmp_path, tokenizer, rows, kind=HF, sizes=(16, 32), chat=None, **kw):
    src = write_jsonl(tmp_path / "pairs.jsonl", rows)
    kw.setdefault("output_dirs", "out")
    return build_and_compare(tmp_path, files=[src], templates=None if chat else [PAIR_TEMPLATE],
                             pairs={"prompt": "prompt", "chosen": "chosen", "rejected": "rejected"}, chat=chat,
                             tokenizer_kind=kind, tokenizer_files=[tokenizer], sizes=[list(sizes)],
                             samples_per_shard=[3], **kw)


def test_string_pairs_match_the_reference(tmp_path, hf_chat):
    build_pairs(tmp_path, hf_chat, PAIRS, on_overflow="truncate", on_pair_collapse="skip", on_bad_record="skip")
    out = OutputDir(tmp_path / "out")
    rows = out.samples
    assert [(r["sample_id"], r["pair_id"], r["pair_role"]) for r in rows] == [
        (0, 0, "chosen"), (1, 0, "rejected"), (6, 3, "chosen"), (7, 3, "rejected")]
    assert rows[0]["unit_size"] == rows[1]["unit_size"]          # one unit for the pair
    assert rows[3]["empty_fields"] == ["rejected"]
    assert [(r["sample_id"], r["action"]) for r in out.jsonl("overflow_index.jsonl")] == [
        (0, "truncate"), (1, "truncate"), (2, "collapsed"), (3, "collapsed"), (4, "collapsed"), (5, "collapsed")]
    assert [r["sample_id"] for r in out.jsonl("bad_record_index.jsonl")] == [8, 9]
    assert out.manifest["policies"]["on_pair_collapse"] == "skip"
    assert out.manifest["source"]["pairs"] == [{"prompt": "prompt", "chosen": "chosen", "rejected": "rejected"}]


def test_a_pair_fits_the_unit_of_its_longer_record(tmp_path, hf_chat):
    rows = [{"prompt": "Hi", "chosen": "Yes", "rejected": "No, because bees are a long story"}]
    build_pairs(tmp_path, hf_chat, rows, sizes=(24, 48))
    out = OutputDir(tmp_path / "out")
    assert [r["unit_size"] for r in out.samples] == [48, 48] and out.samples[0]["token_count"] <= 24


def test_a_collapsed_pair_aborts_by_default(tmp_path, hf_chat):
    with pytest.raises(errors.PairCollapseError) as info:
        build_pairs(tmp_path, hf_chat, PAIRS[:2], sizes=(32, 64))
    assert (info.value.file, info.value.line) == (str(tmp_path / "pairs.jsonl"), 2)
    assert "identical chosen and rejected" in info.value.english and "[vietnam] PairCollapseError" in str(info.value)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_skipped_pairs_go_together(tmp_path, hf_chat):
    rows = [PAIRS[0], {"prompt": "Hi", "chosen": "Yes", "rejected": "No, " * 20}]
    build_pairs(tmp_path, hf_chat, rows, sizes=(32, 48), on_overflow="skip")
    out = OutputDir(tmp_path / "out")
    assert [(r["pair_id"], r["pair_role"]) for r in out.samples] == [(0, "chosen"), (0, "rejected")]
    assert [(r["sample_id"], r["action"]) for r in out.jsonl("overflow_index.jsonl")] == [(2, "skip"), (3, "skip")]


def test_extend_is_refused_for_pairs(tmp_path, hf_chat):
    with pytest.raises(errors.PipelineValidationError) as info:
        build_pairs(tmp_path, hf_chat, PAIRS[:1], on_overflow="extend")
    assert "cannot keep a pair's two records in one unit" in info.value.english


def test_chat_pairs_match_the_reference(tmp_path, hf_chat):
    rows = [
        {"prompt": [{"role": "user", "content": "Why do bees matter?"}],
         "chosen": [{"role": "assistant", "content": "They pollinate crops."}],
         "rejected": {"role": "assistant", "content": "No idea."}},
        {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
         "chosen": [{"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}],
         "rejected": [{"role": "assistant", "content": "Go away."}]},
    ]
    build_pairs(tmp_path, hf_chat, rows, sizes=(32, 64), chat={"templates": [CHATML], "max_messages": [4]})
    out = OutputDir(tmp_path / "out")
    got = [(r["pair_id"], r["pair_role"], r["roles"], r["prompt_messages"]) for r in out.samples]
    assert got == [(0, "chosen", ["user", "assistant"], 1), (0, "rejected", ["user", "assistant"], 1),
                   (1, "chosen", ["system", "user", "assistant", "user"], 2),
                   (1, "rejected", ["system", "user", "assistant"], 2)]
