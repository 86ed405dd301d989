"""Reading chat outputs back: roles, loss masks by role, verify's warnings and its
re-rendering, the report's per-role counts, the exports.

Datasets are built with the fluent API from small conversations and real tokenizers
(the ``hf_chat`` folder, ``sp_bytefallback.model``); every expectation is computed
independently with the ``tokenizers`` and ``sentencepiece`` libraries, message part by
message part, never through the package's own encoding.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm
from tokenizers import Tokenizer

from conftest import TESTDATA, write_jsonl
from mintdim_beam import pipeline
from mintdim_beam.cli.commands import main
from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.reader import open_output
from mintdim_beam.reader.export import export_megatron, export_parquet
from mintdim_beam.reader.report import gather, render_html
from mintdim_beam.reader.verify import verify_output

HF_TEMPLATES = {"system": "<|im_start|>system\n{content}<|im_end|>\n",
                "user": "<|im_start|>user\n{content}{@eos}\n",
                "assistant": "<|im_start|>assistant\n{content}{@eos}\n"}
CONVERSATIONS = [
    [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello there"},
     {"role": "assistant", "content": "Hi! How can I help?"}],
    [{"role": "user", "content": "What is two plus two?"}, {"role": "assistant", "content": "Four."},
     {"role": "user", "content": "Thanks"}, {"role": "assistant", "content": None}],
    [{"role": "user", "content": "Only a question, never answered"}],
    # the user's turn fills the largest unit: truncation leaves nothing of the answer
    [{"role": "user", "content": "a long question " * 12}, {"role": "assistant", "content": "cut away"}],
    [],
    [{"role": "user", "content": "Short"}, {"role": "assistant", "content": "A longer answer, kept in full."}],
]
LINES = [{"messages": c} for c in CONVERSATIONS[:4]] + [""] + [{"messages": c} for c in CONVERSATIONS[4:]]
SIZES = [16, 32, 64]


def _build(tmp, out, templates, tokenizer_kind, tokenizer, lines=LINES):
    src = write_jsonl(tmp / "chat.jsonl", lines)
    job = pipeline("unit-build").source.chat(files=[src], field="messages", templates=[templates],
                                             max_messages=[4])
    job = getattr(job.tokenizer, tokenizer_kind)(files=[tokenizer]).units(sizes=[SIZES], build_batch=[4])
    job.output.dir(str(out), samples_per_shard=[2]).run(on_overflow="truncate", quiet=True)
    return src


@pytest.fixture(scope="module")
def hf_chat(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hf_chat")
    out = tmp / "out"
    src = _build(tmp, out, HF_TEMPLATES, "hf_json", str(TESTDATA / "hf_chat"))
    return out, src


@pytest.fixture(scope="module")
def hf():
    return Tokenizer.from_file(str(TESTDATA / "hf_chat" / "tokenizer.json"))


def _hf_parts(hf, message):
    """(prefix, content, suffix) ids of one message, from the tokenizers library."""
    enc = lambda text: hf.encode(text, add_special_tokens=False).ids if text else []  # noqa: E731
    eos, role = hf.token_to_id("<|im_end|>"), message["role"]
    content = enc(message["content"] or "")
    if role == "system":
        return enc("<|im_start|>system\n"), content, enc("<|im_end|>\n")
    return enc(f"<|im_start|>{role}\n"), content, [eos] + enc("\n")


def _expected(conversation, parts_of, keep, roles, parts=("prefix", "content", "suffix")):
    """(payload ids, loss mask) of a conversation: messages in order, each part's ids,
    the first ``keep`` tokens kept (the build's truncation); the mask marks the parts
    named of the messages whose role is in ``roles``."""
    ids, mask = [], []
    for message in conversation:
        for name, part in zip(("prefix", "content", "suffix"), parts_of(message)):
            ids += part
            mask += [message["role"] in roles and name in parts] * len(part)
    return np.asarray(ids[:keep], np.int64), np.asarray(mask[:keep], bool)


def test_samples_carry_roles_and_messages(hf_chat, hf):
    out, _ = hf_chat
    reader = open_output(str(out))
    assert reader.chat == {"max_messages": 4, "message_parts": ["prefix", "content", "suffix"],
                           "roles": ["system", "user", "assistant"], "roles_key": "roles"}
    assert len(reader) == len(CONVERSATIONS)
    for sample, conversation in zip(reader, CONVERSATIONS):
        assert sample.roles == tuple(m["role"] for m in conversation)
        if sample.token_count < max(SIZES):         # not truncated: every part as written
            got = [(m.role, m.prefix.tolist(), m.content.tolist(), m.suffix.tolist()) for m in sample.messages]
            assert got == [(m["role"], *_hf_parts(hf, m)) for m in conversation]
    # codes of each row's slots, into chat["roles"], -1 past the last message
    codes = reader.role_codes(reader.rows_by_id[:3])
    assert codes.tolist() == [[0, 1, 2, -1], [1, 2, 1, 2], [1, -1, -1, -1]]


@pytest.mark.parametrize("parts", [("prefix", "content", "suffix"), ("content", "suffix"), ("content",)])
def test_loss_roles_label_exactly_the_assistant_tokens(hf_chat, hf, parts):
    out, _ = hf_chat
    reader = open_output(str(out))
    kwargs = {} if parts == ("prefix", "content", "suffix") else {"loss_parts": list(parts)}
    unshifted = reader.causal_lm(loss_roles=["assistant"], shift=False, **kwargs)
    shifted = reader.causal_lm(loss_roles=["assistant"], **kwargs)
    for i, conversation in enumerate(CONVERSATIONS):
        item = unshifted[i]
        unit = len(item["input_ids"])
        keep = int(item["attention_mask"].sum())
        ids, mask = _expected(conversation, lambda m: _hf_parts(hf, m), keep, {"assistant"}, parts)
        assert np.array_equal(item["input_ids"][:keep], ids)
        want = np.full(unit, -100)
        want[:keep][mask] = ids[mask]
        assert np.array_equal(item["labels"], want), (i, item["labels"], want)
        # shifted: labels[t] is the token at t + 1 when t + 1 is in the loss
        want_shifted = np.full(unit, -100)
        want_shifted[:max(keep - 1, 0)] = np.where(mask[1:], ids[1:], -100)
        assert np.array_equal(shifted[i]["labels"], want_shifted)
    eos = hf.token_to_id("<|im_end|>")
    # the {@eos} closing an answer is learnt unless the suffix is left out
    assert (eos in unshifted[0]["labels"].tolist()) == ("suffix" in parts)


def test_loss_roles_narrow_loss_segments(hf_chat, hf):
    out, _ = hf_chat
    reader = open_output(str(out))
    both = reader.causal_lm(loss_roles=["assistant"], loss_segments=["message1.content", "message0.content"],
                            shift=False)
    item = both[1]          # user, assistant, user, assistant(null): only message1's content is both
    keep = int(item["attention_mask"].sum())
    conversation = CONVERSATIONS[1]
    ids, _ = _expected(conversation, lambda m: _hf_parts(hf, m), keep, set())
    lens = [len(p) for m in conversation for p in _hf_parts(hf, m)]
    start = sum(lens[:4])
    want = np.full(len(item["labels"]), -100)
    want[start:start + lens[4]] = ids[start:start + lens[4]]
    assert lens[4] > 0 and np.array_equal(item["labels"], want)


def test_loss_roles_refused_where_they_mean_nothing(hf_chat, tmp_path):
    out, _ = hf_chat
    reader = open_output(str(out))
    with pytest.raises(KeyError, match=r"no role named \['bot'\] in this dataset; its roles: "
                                       r"\['system', 'user', 'assistant'\]"):
        reader.causal_lm(loss_roles=["assistant", "bot"])
    with pytest.raises(KeyError, match=r"no message part named \['header'\]"):
        reader.causal_lm(loss_roles=["assistant"], loss_parts=["header"])
    with pytest.raises(ValueError, match="give loss_roles too"):
        reader.causal_lm(loss_parts=["content"])
    with pytest.raises(ValueError, match="loss_roles is empty"):
        reader.causal_lm(loss_roles=[])
    # a jsonl output has segments, not roles
    src = write_jsonl(tmp_path / "plain.jsonl", [{"q": "hi", "a": "there"}])
    plain = tmp_path / "plain"
    pipeline("unit-build").source.jsonl(files=[src], fields=[["q", "a"]], templates=["Q: {q} A: {a}"]) \
        .tokenizer.hf_json(files=[str(TESTDATA / "hf_chat")]).units(sizes=[[32]], build_batch=[4]) \
        .output.dir(str(plain), samples_per_shard=[4]).run(quiet=True)
    flat = open_output(str(plain))
    assert flat.chat is None and flat[0].roles is None
    with pytest.raises(ReaderError) as err:
        flat.causal_lm(loss_roles=["assistant"])
    assert "loss_roles needs a chat output" in err.value.english and "use loss_segments" in err.value.english
    assert "loss_roles c\u1ea7n m\u1ed9t output chat" in err.value.vietnamese


def test_verify_warns_about_samples_without_a_loss_position(hf_chat, capsys):
    out, src = hf_chat
    report = verify_output(str(out))
    assert report.ok, report.problems
    assert report.no_loss_samples == 3
    texts = [w.text.en for w in report.warnings]
    assert texts == [
        f"{src}:3 (sample 2): no message of role assistant, so no loss position with loss_roles=assistant",
        f"{src}:4 (sample 3): truncation left no token of its assistant messages (parts "
        f"prefix,content,suffix), so no loss position",
        f"{src}:6 (sample 4): no message of role assistant, so no loss position with loss_roles=assistant",
    ]
    assert [w.line for w in report.warnings] == [3, 4, 5]
    assert "kh\u00f4ng c\u00f3 message n\u00e0o c\u00f3 role assistant" in report.warnings[0].text.vi
    # the truncated sample really has no assistant token left: what a training loss sees
    item = open_output(str(out)).causal_lm(loss_roles=["assistant"])[3]
    assert item["attention_mask"].all() and (item["labels"] == -100).all()
    # with the user role as the loss role only the empty conversation has none
    report = verify_output(str(out), loss_roles=["user"])
    assert [w.text.en for w in report.warnings] == [
        f"{src}:6 (sample 4): no message of role user, so no loss position with loss_roles=user"]
    # a role the dataset lacks is said, and checks nothing
    report = verify_output(str(out), loss_roles=["tool"])
    assert report.ok and [w.text.en for w in report.warnings] == [
        "loss role 'tool' is not a role of this dataset (its roles: ['system', 'user', 'assistant']); left out"]
    # the command lists them in both languages and still exits 0
    assert main(["verify", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"sample_index.jsonl line 4: warning: {src}:4 (sample 3): truncation left no token" in printed
    assert "3 samples without a loss position (warnings)" in printed and "verify OK" in printed
    assert main(["verify", str(out), "--loss-roles", "user,system", "--loss-parts", "content"]) == 0
    printed = capsys.readouterr().out
    assert "no message of role user,system" in printed and "(sample 4)" in printed
    assert "(sample 2)" not in printed
    assert main(["verify", str(out), "--loss-parts", "header"]) == 64
    assert "--loss-parts: header is not a message part" in capsys.readouterr().err


def test_verify_tokenizer_re_renders_chat_lines(hf_chat, tmp_path):
    out, src = hf_chat
    report = verify_output(str(out), tokenizer="manifest", sample_rows=0)
    assert report.ok, report.problems
    assert report.retokenized == len(CONVERSATIONS)
    # a copy whose source answer changed after the build: its hash and tokens disagree
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    changed = tmp_path / "chat.jsonl"
    lines = open(src, encoding="utf-8").read().split("\n")
    lines[0] = lines[0].replace("Hi! How can I help?", "Hi! How may I help?")
    changed.write_text("\n".join(lines), encoding="utf-8")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["source"]["files"] = [str(changed)]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    index = (copy / "sample_index.jsonl").read_text().replace(src, str(changed))
    # and a row whose roles were edited: the re-rendered line says otherwise
    index = index.replace('"roles":["user","assistant"]}', '"roles":["user","user"]}', 1)
    (copy / "sample_index.jsonl").write_text(index)
    report = verify_output(str(copy), tokenizer="manifest", sample_rows=0, checksums=False)
    messages = [str(p) for p in report.problems]
    assert any(f"{changed}:1 (sample 0): hash of the re-rendered text is" in m for m in messages), messages
    assert any("segment 7 (message2.content) holds 15 tokens that differ" in m for m in messages), messages
    assert any(f"{changed}:4 (sample 3): roles is ['user', 'user'], the source's messages have roles "
               f"['user', 'assistant']" in m for m in messages), messages


def test_index_roles_that_do_not_fit_the_layout(hf_chat, tmp_path):
    out, _ = hf_chat
    for edit, english in (
        (('"roles":["user"]}', '"roles":"user"}'), "roles must be a list of at most 4096 role names"),
        (('"roles":["user"]}', '"roles":["user","bot"]}'), "role 'bot' is not among the roles manifest.json "
                                                           "declares (['system', 'user', 'assistant'])"),
        (('"roles":["user"]}', '}'), "no roles: every row of a chat output lists the roles"),
        (('"roles":["user"]}', '"roles":["user","user","user","user","user"]}'),
         "roles lists 5 messages, more than the 4 message slots of a record"),
    ):
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(out, copy)
        index = copy / "sample_index.jsonl"
        text = index.read_text()
        assert text.count(edit[0]) == 1
        index.write_text(text.replace(edit[0].replace("}", ""), edit[1].replace("}", ""), 1)
                         if edit[1] == "}" else text.replace(edit[0], edit[1]))
        if edit[1] == "}":
            index.write_text(text.replace(',"roles":["user"]', ""))
        with pytest.raises(ReaderError) as err:
            open_output(str(copy)).index
        assert "sample_index.jsonl line 3" in err.value.english and english in err.value.english
        report = verify_output(str(copy), checksums=False)
        assert any(p.line == 3 and english in p.message for p in report.problems), report.problems


def test_roles_that_leave_out_a_written_message_are_refused(hf_chat, tmp_path):
    out, _ = hf_chat
    copy = tmp_path / "short_roles"
    shutil.copytree(out, copy)
    index = copy / "sample_index.jsonl"
    four = '"roles":["user","assistant","user","assistant"]'
    assert index.read_text().count(four) == 1
    index.write_text(index.read_text().replace(four, '"roles":["user","assistant"]'))
    reader = open_output(str(copy))
    english = ("unit_64/shard_000000.bin record 1 (sample 1, sample_index.jsonl line 2): message slot 2 holds "
               "11 tokens, but the sample's roles in sample_index.jsonl list 2 messages")
    for read in (lambda: reader[1], lambda: reader.causal_lm(loss_roles=["assistant"])[1],
                 lambda: gather(str(copy))):
        with pytest.raises(ReaderError) as err:
            read()
        assert english in err.value.english
        assert "slot message 2 chứa 11 token" in err.value.vietnamese
    report = verify_output(str(copy), checksums=False)
    assert [str(p) for p in report.problems] == [
        "unit_64/shard_000000.bin record 1: sample 1: message slot 2 holds 11 tokens, but the sample's roles in "
        "sample_index.jsonl list 2 messages: the header and the roles disagree"]


def test_parquet_and_megatron_exports_of_a_chat_output(hf_chat, tmp_path):
    out, _ = hf_chat
    reader = open_output(str(out))
    export_parquet(str(out), str(tmp_path / "chat.parquet"))
    table = pq.read_table(str(tmp_path / "chat.parquet"))
    assert "pair_id" not in table.schema.names
    assert table.column("roles").to_pylist() == [[m["role"] for m in c] for c in CONVERSATIONS]
    assert json.loads(table.schema.metadata[b"mintdim"])["chat"] == reader.chat
    summary = export_megatron(str(out), str(tmp_path / "meg"))
    assert summary.samples == len(CONVERSATIONS)
    tokens = np.fromfile(str(tmp_path / "meg.bin"), np.uint16)
    assert np.array_equal(tokens, np.concatenate([s.payload for s in reader]).astype(np.uint16))


def test_report_counts_messages_and_tokens_per_role(hf_chat, hf):
    out, _ = hf_chat
    data = gather(str(out))
    want = {role: {"messages": 0, "prefix": 0, "content": 0, "suffix": 0} for role in ("system", "user", "assistant")}
    for sample, conversation in zip(open_output(str(out)), CONVERSATIONS):
        _, mask = _expected(conversation, lambda m: _hf_parts(hf, m), sample.token_count, set())
        left = sample.token_count
        for message in conversation:
            want[message["role"]]["messages"] += 1
            for name, part in zip(("prefix", "content", "suffix"), _hf_parts(hf, message)):
                kept = min(len(part), max(left, 0))
                want[message["role"]][name] += kept
                left -= len(part)
    for role in want:
        want[role]["tokens"] = want[role]["prefix"] + want[role]["content"] + want[role]["suffix"]
    assert data.roles == want
    assert sum(r["tokens"] for r in data.roles.values()) == int(data.lengths.sum())
    page = render_html(data)
    a = want["assistant"]
    assert (f"<tr><td><code>assistant</code></td><td>{a['messages']}</td><td>{a['prefix']}</td>"
            f"<td>{a['content']}</td><td>{a['suffix']}</td><td>{a['tokens']}</td>") in page


def _rewrite_index(copy, text: str) -> None:
    """Write ``sample_index.jsonl`` of a copied dataset, and its sha256 where
    ``SHA256SUMS`` and the manifest record them (an export compares every file)."""
    index = copy / "sample_index.jsonl"
    index.write_text(text)
    sums = copy / "SHA256SUMS"
    lines = [f"{hashlib.sha256(index.read_bytes()).hexdigest()}  sample_index.jsonl" if
             line.endswith("  sample_index.jsonl") else line for line in sums.read_text().splitlines()]
    sums.write_text("\n".join(lines) + "\n")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["checksums"]["sha256"] = hashlib.sha256(sums.read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))


def test_pair_columns_are_read_and_exported(tmp_path, hf):
    rows = [{"prompt": [{"role": "user", "content": "Why do bees matter?"}],
             "chosen": [{"role": "assistant", "content": "They pollinate crops."}],
             "rejected": [{"role": "assistant", "content": "No idea."}]},
            {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
             "chosen": [{"role": "assistant", "content": "Hello!"}],
             "rejected": [{"role": "assistant", "content": "Go away, I am busy."}]}]
    src = write_jsonl(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "pairs"
    pipeline("unit-build").source.pairs(files=[src], prompt="prompt", chosen="chosen", rejected="rejected",
                                        chat={"templates": [HF_TEMPLATES], "max_messages": [4]}) \
        .tokenizer.hf_json(files=[str(TESTDATA / "hf_chat")]).units(sizes=[SIZES], build_batch=[4]) \
        .output.dir(str(out), samples_per_shard=[2]).run(quiet=True)
    reader = open_output(str(out))
    assert [(s.pair_id, s.pair_role, s.roles) for s in reader] == [
        (0, "chosen", ("user", "assistant")), (0, "rejected", ("user", "assistant")),
        (1, "chosen", ("system", "user", "assistant")), (1, "rejected", ("system", "user", "assistant"))]
    # the loss on each completion's assistant turn, from the header and the roles
    train = reader.causal_lm(loss_roles=["assistant"], loss_parts=["content"], shift=False)
    completions = [r[k][0]["content"] for r in rows for k in ("chosen", "rejected")]
    for i, text in enumerate(completions):
        labels = train[i]["labels"]
        assert labels[labels != -100].tolist() == hf.encode(text, add_special_tokens=False).ids
    export_parquet(str(out), str(tmp_path / "pairs.parquet"))
    table = pq.read_table(str(tmp_path / "pairs.parquet"))
    assert table.column("pair_id").to_pylist() == [0, 0, 1, 1]
    assert table.column("pair_role").to_pylist() == ["chosen", "rejected", "chosen", "rejected"]
    assert table.column("roles").to_pylist()[2] == ["system", "user", "assistant"]
    report = verify_output(str(out))
    assert report.ok and not report.warnings, (report.problems, report.warnings)
    report = verify_output(str(out), tokenizer="manifest")      # both sides of each line re-rendered
    assert report.ok and not report.warnings and report.retokenized == 4, report.problems
    # a row edited to an unknown pair_role is refused, worded as the index problem it is
    index = out / "sample_index.jsonl"
    _rewrite_index(out, index.read_text().replace('"pair_role":"chosen"', '"pair_role":"best"', 1))
    with pytest.raises(ReaderError, match=r"sample_index.jsonl line 1: pair_role must be one of "
                                          r"\['chosen', 'rejected'\], got 'best'"):
        open_output(str(out)).index


def test_a_plain_index_has_no_pair_columns(hf_chat, tmp_path):
    out, _ = hf_chat
    export_parquet(str(out), str(tmp_path / "chat.parquet"))
    assert "pair_id" not in pq.read_table(str(tmp_path / "chat.parquet")).schema.names
    assert all(s.pair_id is None and s.pair_role is None for s in open_output(str(out)))


def test_sentencepiece_specials_in_role_templates(tmp_path):
    model = str(TESTDATA / "sp_bytefallback.model")
    templates = {"user": "{@bos}User: {content}\n", "assistant": "Bot: {content}{@eos}"}
    conversations = [[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}],
                     [{"role": "user", "content": "two"}, {"role": "assistant", "content": ""},
                      {"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"}]]
    out = tmp_path / "sp"
    _build(tmp_path, out, templates, "sentencepiece", model, [{"messages": c} for c in conversations])
    sp = spm.SentencePieceProcessor(model_file=model)

    def parts(message):
        enc = lambda text: sp.encode(text) if text else []  # noqa: E731
        if message["role"] == "user":
            return [sp.bos_id()] + enc("User: "), enc(message["content"]), enc("\n")
        return enc("Bot: "), enc(message["content"]), [sp.eos_id()]

    reader = open_output(str(out))
    ds = reader.causal_lm(loss_roles=["assistant"], loss_parts=["content", "suffix"], shift=False)
    for i, conversation in enumerate(conversations):
        item = ds[i]
        keep = int(item["attention_mask"].sum())
        ids, mask = _expected(conversation, parts, keep, {"assistant"}, ("content", "suffix"))
        assert keep == len(ids) and np.array_equal(item["input_ids"][:keep], ids)
        assert np.array_equal(item["labels"][:keep], np.where(mask, ids, -100))
        assert (item["labels"][keep:] == -100).all()
        assert np.array_equal(reader[i].role_mask(["assistant"], ["content", "suffix"])[:keep], mask)
    assert verify_output(str(out), tokenizer="manifest", sample_rows=0).ok


def test_inspect_names_the_roles_and_shows_only_the_messages(hf_chat, capsys):
    out, _ = hf_chat
    assert main(["inspect", str(out), "--sample-id", "2"]) == 0
    printed = capsys.readouterr().out
    assert "roles     user\n" in printed
    assert "slots     3 message slots past the last message, empty, not shown\n" in printed
    assert '[1] message0.content (' in printed and "message1.prefix" not in printed
    assert main(["inspect", str(out), "--sample-id", "0", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["roles"] == ["system", "user", "assistant"] and len(info["segments"]) == 12
    assert info["segments"][7]["text"] == "Hi! How can I help?"
