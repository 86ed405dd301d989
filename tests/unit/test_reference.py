"""Tests of the reference oracle (tests/reference.py) on tiny hand-checked cases."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest

from reference import ReferenceBuildError, build_reference, parse_template

# ----------------------------------------------------------------------------- fixtures

HF_VOCAB = {
    "[PAD]": 0, "[UNK]": 1, "|": 2, "hello": 3, "world": 4, "foo": 5, "bar": 6,
    "a": 7, "b": 8, "c": 9, "d": 10, "e": 11, "f": 12, "g": 13, "h": 14, "true": 15,
}

SP_WORDS = ("hello world the quick brown fox jumps over lazy dog foo bar baz answer "
            "question alpha beta gamma delta epsilon river mountain ocean forest data "
            "token unit shard sample pipeline build output input value field").split()


@pytest.fixture(scope="module")
def hf_tokenizer_path(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab=HF_VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def sp_model_path(tmp_path_factory):
    import sentencepiece as spm

    sentences = []
    for i in range(400):
        words = [SP_WORDS[(i * 7 + k * 3) % len(SP_WORDS)] for k in range(1 + i % 9)]
        sentences.append(" ".join(words))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, vocab_size=100,
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, num_threads=1,
        hard_vocab_limit=False, minloglevel=2)
    path = tmp_path_factory.mktemp("sp") / "tokenizer.model"
    path.write_bytes(model.getvalue())
    return str(path)


@pytest.fixture(scope="module")
def sp(sp_model_path):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=sp_model_path)


# ----------------------------------------------------------------------------- helpers


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return str(path)


def jl(*objs):
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs)


def rows(blob):
    return [json.loads(line) for line in blob.decode("utf-8").splitlines()]


def records(blob, n_segments, unit, dtype="<u2"):
    arr = np.frombuffer(blob, dtype=dtype)
    width = 1 + n_segments + unit
    assert arr.size % width == 0
    return arr.reshape(-1, width).tolist()


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hf_build(tmp_path, hf_path, files, **kw):
    kw.setdefault("fields", [["q", "a"]])
    kw.setdefault("templates", ["{q} | {a}"])
    kw.setdefault("sizes", [[2, 4]])
    kw.setdefault("samples_per_shard", [10])
    kw.setdefault("output_dirs", ["out"])
    return build_reference(files=files, tokenizer_kind="hf_json", tokenizer_files=[hf_path], **kw)


# ----------------------------------------------------------------------------- template parser


def test_parse_template():
    assert parse_template("{q} | {a}") == [("field", "q"), ("literal", " | "), ("field", "a")]
    assert parse_template("{{x}}{a}{a}") == [("literal", "{x}"), ("field", "a"), ("field", "a")]
    assert parse_template("{a}") == [("field", "a")]
    assert parse_template("{a}}}") == [("field", "a"), ("literal", "}")]
    assert parse_template("") == []
    for bad in ("{}", "{a", "a}", "{a}}", "x}y", "{a{b}"):
        with pytest.raises(ReferenceBuildError) as exc:
            parse_template(bad)
        assert exc.value.error_class_name == "TemplateFieldMismatchError"


# ----------------------------------------------------------------------------- layout


def test_hf_layout_blank_lines_bom_crlf(tmp_path, hf_tokenizer_path):
    text = (
        "\ufeff" + json.dumps({"q": "hello", "a": "world"}) + "\r\n"   # line 1 -> id 0
        "\r\n"                                                           # line 2 blank
        "   \t\n"                                                        # line 3 blank
        + json.dumps({"q": "a b c", "a": "d"}) + "\n"                   # line 4 -> id 1
        + json.dumps({"q": "", "a": None, "x": [1]}) + "\n"             # line 5 -> id 2
        + json.dumps({"q": True, "a": "hello"}) + "\n"                  # line 6 -> id 3
        + json.dumps({"q": "foo", "a": "bar"})                          # line 7 -> id 4
    )
    f = write(tmp_path, "data.jsonl", text)
    out = hf_build(tmp_path, hf_tokenizer_path, [f], sizes=[[2, 4, 8, 16]],
                   samples_per_shard=[2])["out"]

    assert sorted(out) == sorted([
        "unit_2/shard_000000.bin", "unit_4/shard_000000.bin", "unit_4/shard_000001.bin",
        "unit_8/shard_000000.bin", "unit_16/EMPTY_UNIT.md", "histogram.json", "stats.json",
        "length_field.json", "sample_index.jsonl", "duplicate_index.jsonl",
        "unk_index.jsonl", "overflow_index.jsonl", "bad_record_index.jsonl", "SHA256SUMS"])
    sums = [line.split("  ") for line in out["SHA256SUMS"].decode().splitlines()]
    assert [name for _, name in sums] == sorted(k for k in out if k not in ("SHA256SUMS", "unit_16/EMPTY_UNIT.md"))
    assert all(hashlib.sha256(out[name]).hexdigest() == digest for digest, name in sums)
    M = 0xFFFF
    assert records(out["unit_4/shard_000000.bin"], 3, 4) == [
        [M, 1, 1, 1, 3, 2, 4, 0], [M, 1, 1, 1, 15, 2, 3, 0]]
    assert records(out["unit_4/shard_000001.bin"], 3, 4) == [[M, 1, 1, 1, 5, 2, 6, 0]]
    assert records(out["unit_8/shard_000000.bin"], 3, 8) == [
        [M, 3, 1, 1, 7, 8, 9, 2, 10, 0, 0, 0]]
    assert records(out["unit_2/shard_000000.bin"], 3, 2) == [[M, 0, 1, 0, 2, 0]]
    assert out["unit_4/shard_000000.bin"][:2] == b"\xff\xff"  # little endian, uint16

    idx = rows(out["sample_index.jsonl"])
    assert [(r["sample_id"], r["source_line"], r["unit_size"], r["token_count"],
             r["shard_path"], r["shard_record"], r["empty_fields"]) for r in idx] == [
        (0, 1, 4, 3, "unit_4/shard_000000.bin", 0, []),
        (1, 4, 8, 5, "unit_8/shard_000000.bin", 0, []),
        (2, 5, 2, 1, "unit_2/shard_000000.bin", 0, ["q", "a"]),
        (3, 6, 4, 3, "unit_4/shard_000000.bin", 1, []),
        (4, 7, 4, 3, "unit_4/shard_000001.bin", 0, []),
    ]
    assert out["sample_index.jsonl"].decode().splitlines()[0] == (
        '{"sample_id":0,"hash":"%s","token_count":3,"unit_size":4,"source_file":"%s",'
        '"source_line":1,"shard_path":"unit_4/shard_000000.bin","empty_fields":[],'
        '"shard_record":0}' % (sha("hello | world"), f))
    assert idx[3]["hash"] == sha("true | hello")
    assert idx[2]["hash"] == sha(" | ")

    for name in ("duplicate_index.jsonl", "unk_index.jsonl", "overflow_index.jsonl",
                 "bad_record_index.jsonl"):
        assert out[name] == b""
    assert out["histogram.json"] == b'{\n  "2": 1,\n  "4": 3,\n  "8": 1,\n  "16": 0\n}\n'
    assert out["length_field.json"] == (
        b'{\n  "magic": 65535,\n  "sequence_template": [\n    "q",\n    "token_template",\n'
        b'    "a"\n  ],\n  "token_dtype": "uint16",\n  "pad_token_id": 0\n}\n')
    stats = json.loads(out["stats.json"])
    assert list(stats) == [
        "total_samples", "total_tokens", "token_dtype", "bytes_per_token", "duplicate_groups",
        "duplicate_samples", "samples_with_unk", "unk_tokens", "unit_distribution",
        "pad_tokens", "padding_ratio", "bad_records", "overflow_samples", "shards", "units"]
    assert stats["total_samples"] == 5 and stats["total_tokens"] == 15
    assert stats["pad_tokens"] == 7 and stats["padding_ratio"] == 7 / 22
    assert stats["shards"] == 4 and stats["bytes_per_token"] == 2
    assert stats["unit_distribution"] == {"2": 1, "4": 3, "8": 1, "16": 0}
    assert stats["units"]["4"] == {"samples": 3, "tokens": 9, "pad_tokens": 3,
                                   "padding_ratio": 0.25, "shards": 2}
    assert stats["units"]["16"] == {"samples": 0, "tokens": 0, "pad_tokens": 0,
                                    "padding_ratio": 0.0, "shards": 0}
    assert out["stats.json"].endswith(b"}\n") and b'\n  "units": {\n' in out["stats.json"]


def test_uint32_dtype(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[PAD]": 0, "[UNK]": 1, "hello": 70000}
    vocab.update({f"w{i}": i for i in range(2, 70000)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok_path = str(tmp_path / "big.json")
    tok.save(tok_path)
    f = write(tmp_path, "d.jsonl", jl({"t": "hello w5"}))
    out = build_reference(files=[f], fields=[["t"]], templates=["<{t}>"],
                          tokenizer_kind="hf_json", tokenizer_files=[tok_path],
                          sizes=[[4]], samples_per_shard=[1], output_dirs=["o"])["o"]
    assert json.loads(out["length_field.json"])["magic"] == 0xFFFFFFFF
    assert json.loads(out["length_field.json"])["token_dtype"] == "uint32"
    # "<" and ">" are unknown to the vocabulary: literal UNK, recorded per sample
    assert records(out["unit_4/shard_000000.bin"], 3, 4, "<u4") == [
        [0xFFFFFFFF, 1, 2, 1, 1, 70000, 5, 1]]
    assert rows(out["unk_index.jsonl"])[0]["unk_chars"] == ["<", ">"]
    assert rows(out["unk_index.jsonl"])[0]["unk_field_indices"] == [0, 2]
    assert json.loads(out["stats.json"])["bytes_per_token"] == 4


def test_sentencepiece_layout(tmp_path, sp_model_path, sp):
    f = write(tmp_path, "d.jsonl", jl({"a": "hello world", "b": 7}, {"a": "fox", "b": None}))
    out = build_reference(files=[f], fields=[["a", "b"]], templates=["{a}\n{b}"],
                          tokenizer_kind="sentencepiece", tokenizer_files=[sp_model_path],
                          sizes=[[64]], samples_per_shard=[5], output_dirs=["o"])["o"]
    recs = records(out["unit_64/shard_000000.bin"], 3, 64)
    for rec, (a, b) in zip(recs, [("hello world", "7"), ("fox", "")]):
        segs = [sp.encode(a, out_type=int), sp.encode("\n", out_type=int),
                sp.encode(b, out_type=int)]
        payload = segs[0] + segs[1] + segs[2]
        assert rec == [0xFFFF] + [len(s) for s in segs] + payload + [0] * (64 - len(payload))
    assert rows(out["sample_index.jsonl"])[1]["empty_fields"] == ["b"]
    assert rows(out["sample_index.jsonl"])[0]["hash"] == sha("hello world\n7")
    assert json.loads(out["length_field.json"])["pad_token_id"] == sp.pad_id() == 0


# ----------------------------------------------------------------------------- duplicates / outputs


def test_duplicates_and_shared_outputs(tmp_path, hf_tokenizer_path):
    f1 = write(tmp_path, "f1.jsonl", jl({"q": "hello", "a": "world"}) + "\n"
               + jl({"q": "foo", "a": "bar"}))
    f2 = write(tmp_path, "f2.jsonl", jl({"q": "a", "a": "b"}, {"q": "hello", "a": "world"}))
    f3 = write(tmp_path, "f3.jsonl", jl({"q": "hello", "a": "world"}))
    res = hf_build(tmp_path, hf_tokenizer_path, [f1, f2, f3],
                   output_dirs=["out", "out", "out2"], samples_per_shard=[3])
    assert set(res) == {"out", "out2"}
    out = res["out"]
    assert [(r["sample_id"], r["source_file"], r["source_line"], r["shard_record"])
            for r in rows(out["sample_index.jsonl"])] == [
        (0, f1, 1, 0), (1, f1, 3, 1), (2, f2, 1, 2), (3, f2, 2, 0)]
    assert rows(out["duplicate_index.jsonl"]) == [{
        "hash": sha("hello | world"), "count": 2,
        "samples": [{"sample_id": 0, "source_file": f1, "source_line": 1},
                    {"sample_id": 3, "source_file": f2, "source_line": 2}]}]
    stats = json.loads(out["stats.json"])
    assert (stats["duplicate_groups"], stats["duplicate_samples"]) == (1, 2)
    assert sorted(k for k in out if k.endswith(".bin")) == [
        "unit_4/shard_000000.bin", "unit_4/shard_000001.bin"]
    out2 = res["out2"]
    assert [(r["sample_id"], r["source_file"]) for r in rows(out2["sample_index.jsonl"])] == [
        (0, f3)]
    assert out2["duplicate_index.jsonl"] == b""
    assert "unit_2/EMPTY_UNIT.md" in out2


# ----------------------------------------------------------------------------- overflow


@pytest.fixture
def overflow_file(tmp_path):
    return write(tmp_path, "o.jsonl", jl(
        {"q": "a", "a": "b"},                 # id 0: 3 tokens
        {"q": "a b c d", "a": "e f"},         # id 1: 7 tokens
        {"q": "a b c", "a": "d e"},           # id 2: 6 tokens
        {"q": "a b c d", "a": "e f"},         # id 3: 7 tokens (duplicate of id 1)
        {"q": "a b c d e f g", "a": "h"},     # id 4: 9 tokens
    ))


def test_overflow_truncate(tmp_path, hf_tokenizer_path, overflow_file):
    out = hf_build(tmp_path, hf_tokenizer_path, [overflow_file], on_overflow="truncate")["out"]
    M = 0xFFFF
    assert records(out["unit_4/shard_000000.bin"], 3, 4) == [
        [M, 1, 1, 1, 7, 2, 8, 0],
        [M, 4, 0, 0, 7, 8, 9, 10],
        [M, 3, 1, 0, 7, 8, 9, 2],
        [M, 4, 0, 0, 7, 8, 9, 10],
        [M, 4, 0, 0, 7, 8, 9, 10],
    ]
    assert [r["token_count"] for r in rows(out["sample_index.jsonl"])] == [3, 4, 4, 4, 4]
    assert rows(out["overflow_index.jsonl"]) == [
        {"sample_id": i, "source_file": overflow_file, "source_line": i + 1,
         "token_count": n, "max_unit_size": 4, "action": "truncate"}
        for i, n in [(1, 7), (2, 6), (3, 7), (4, 9)]]
    assert "unit_2/EMPTY_UNIT.md" in out
    stats = json.loads(out["stats.json"])
    assert (stats["total_tokens"], stats["overflow_samples"], stats["pad_tokens"]) == (19, 4, 1)


def test_overflow_skip(tmp_path, hf_tokenizer_path, overflow_file):
    out = hf_build(tmp_path, hf_tokenizer_path, [overflow_file], on_overflow="skip")["out"]
    assert [r["sample_id"] for r in rows(out["sample_index.jsonl"])] == [0]
    assert [(r["sample_id"], r["action"], "new_unit_size" in r)
            for r in rows(out["overflow_index.jsonl"])] == [
        (1, "skip", False), (2, "skip", False), (3, "skip", False), (4, "skip", False)]
    # skipped samples still count for duplicates
    dup = rows(out["duplicate_index.jsonl"])
    assert [[s["sample_id"] for s in r["samples"]] for r in dup] == [[1, 3]]
    stats = json.loads(out["stats.json"])
    assert (stats["total_samples"], stats["overflow_samples"], stats["shards"]) == (1, 4, 1)
    assert json.loads(out["histogram.json"]) == {"2": 0, "4": 1}


def test_overflow_extend(tmp_path, hf_tokenizer_path, overflow_file):
    out = hf_build(tmp_path, hf_tokenizer_path, [overflow_file], on_overflow="extend",
                   samples_per_shard=[2])["out"]
    assert [(r["sample_id"], r["new_unit_size"]) for r in rows(out["overflow_index.jsonl"])] == [
        (1, 7), (2, 7), (3, 7), (4, 9)]
    assert out["histogram.json"] == b'{\n  "2": 0,\n  "4": 1,\n  "7": 3,\n  "9": 1\n}\n'
    assert [(r["unit_size"], r["shard_path"], r["shard_record"])
            for r in rows(out["sample_index.jsonl"])] == [
        (4, "unit_4/shard_000000.bin", 0), (7, "unit_7/shard_000000.bin", 0),
        (7, "unit_7/shard_000000.bin", 1), (7, "unit_7/shard_000001.bin", 0),
        (9, "unit_9/shard_000000.bin", 0)]
    assert records(out["unit_7/shard_000000.bin"], 3, 7)[1] == [
        0xFFFF, 3, 1, 2, 7, 8, 9, 2, 10, 11, 0]
    assert records(out["unit_9/shard_000000.bin"], 3, 9) == [
        [0xFFFF, 7, 1, 1, 7, 8, 9, 10, 11, 12, 13, 2, 14]]
    assert "unit_2/EMPTY_UNIT.md" in out and "unit_7/EMPTY_UNIT.md" not in out


def test_overflow_abort(tmp_path, hf_tokenizer_path, overflow_file):
    with pytest.raises(ReferenceBuildError) as exc:
        hf_build(tmp_path, hf_tokenizer_path, [overflow_file], on_overflow="abort")
    assert exc.value.args == ("UnitOverflowError", overflow_file, 2)


# ----------------------------------------------------------------------------- bad records


BAD_LINES = [
    json.dumps({"q": "a", "a": "b"}).encode(),        # 1 -> id 0 ok
    b'{"q": "a", "a": ',                              # 2 -> id 1
    b"  ",                                            # 3 blank
    b"[1, 2]",                                        # 4 -> id 2
    b'{"q": "\xff", "a": "b"}',                       # 5 -> id 3
    b'{"x": 1}',                                      # 6 -> id 4
    b'{"q": ["a"], "a": {"k": 1}}',                   # 7 -> id 5
    b'{"q": NaN, "a": "b"}',                          # 8 -> id 6
    json.dumps({"q": "c", "a": "d"}).encode(),        # 9 -> id 7 ok
]


def test_bad_records_skip(tmp_path, hf_tokenizer_path):
    f = write(tmp_path, "bad.jsonl", b"\n".join(BAD_LINES) + b"\n")
    out = hf_build(tmp_path, hf_tokenizer_path, [f], on_bad_record="skip")["out"]
    assert [(r["sample_id"], r["source_line"]) for r in rows(out["sample_index.jsonl"])] == [
        (0, 1), (7, 9)]
    assert rows(out["bad_record_index.jsonl"]) == [
        {"sample_id": sid, "source_file": f, "source_line": line, "error": err, "reason": why}
        for sid, line, err, why in [
            (1, 2, "SourceParseError", "invalid JSON syntax"),
            (2, 4, "SourceParseError", "JSON value is not an object"),
            (3, 5, "SourceParseError", "invalid UTF-8"),
            (4, 6, "SampleSchemaError", "missing fields: q a"),
            (5, 7, "SampleSchemaError", "field value must be a string: q"),
            (6, 8, "SourceParseError", "invalid JSON syntax"),
        ]]
    assert json.loads(out["stats.json"])["bad_records"] == 6


def test_bad_record_abort_first_in_order(tmp_path, hf_tokenizer_path):
    f = write(tmp_path, "bad.jsonl", b"\n".join(BAD_LINES))
    with pytest.raises(ReferenceBuildError) as exc:
        hf_build(tmp_path, hf_tokenizer_path, [f])
    assert exc.value.args == ("SourceParseError", f, 2)

    # file order decides across outputs: file 0's bad record beats file 1's overflow
    late = write(tmp_path, "late.jsonl", jl({"q": "a", "a": "b"}) * 5 + '{"q": 1}\n')
    early = write(tmp_path, "early.jsonl", jl({"q": "a b c d", "a": "e"}))
    with pytest.raises(ReferenceBuildError) as exc:
        hf_build(tmp_path, hf_tokenizer_path, [late, early], output_dirs=["x", "y"])
    assert exc.value.args == ("SampleSchemaError", late, 6)


# ----------------------------------------------------------------------------- UNK


def test_unk_hf_char_offsets_and_truncation(tmp_path, hf_tokenizer_path):
    f = write(tmp_path, "u.jsonl", jl(
        {"q": "hello", "a": "zz\U00013000 hello"},   # id 0: unk in field a
        {"q": "a b c d", "a": "zz"},                 # id 1: unk truncated away
        {"q": "é", "a": "world"},                    # id 2: unk in field q
    ))
    out = hf_build(tmp_path, hf_tokenizer_path, [f], on_overflow="truncate")["out"]
    h = sha("hello | zz\U00013000 hello")
    assert out["unk_index.jsonl"].decode().splitlines() == [
        '{"sample_id":0,"hash":"%s","source_file":"%s","source_line":1,"unk_count":1,'
        '"unk_positions":[2],"unk_field_indices":[2],"unk_chars":["zz\U00013000"]}' % (h, f),
        '{"sample_id":2,"hash":"%s","source_file":"%s","source_line":3,"unk_count":1,'
        '"unk_positions":[0],"unk_field_indices":[0],"unk_chars":["é"]}' % (sha("é | world"), f),
    ]
    stats = json.loads(out["stats.json"])
    assert (stats["samples_with_unk"], stats["unk_tokens"]) == (2, 2)


def test_unk_sentencepiece_byte_offsets(tmp_path, sp_model_path, sp):
    text = "hello \U00013000 world"
    f = write(tmp_path, "u.jsonl", jl({"t": text}))
    out = build_reference(files=[f], fields=[["t"]], templates=["{t}"],
                          tokenizer_kind="sentencepiece", tokenizer_files=[sp_model_path],
                          sizes=[[64]], samples_per_shard=[5], output_dirs=["o"])["o"]
    ids = sp.encode(text, out_type=int)
    assert ids.count(sp.unk_id()) == 1
    (row,) = rows(out["unk_index.jsonl"])
    assert row["unk_positions"] == [ids.index(sp.unk_id())]
    assert row["unk_field_indices"] == [0]
    assert row["unk_chars"] == ["\U00013000"]


def test_template_unk_policies(tmp_path, sp_model_path, sp):
    f = write(tmp_path, "t.jsonl", jl({"t": "hello"}))
    kw = dict(files=[f], fields=[["t"]], templates=["Q: {t}"], tokenizer_kind="sentencepiece",
              tokenizer_files=[sp_model_path], sizes=[[64]], samples_per_shard=[5],
              output_dirs=["o"])
    literal_ids = sp.encode("Q: ", out_type=int)
    assert sp.unk_id() in literal_ids  # "Q" and ":" never occur in the training text
    with pytest.raises(ReferenceBuildError) as exc:
        build_reference(on_template_unk="abort", **kw)
    assert exc.value.args == ("TemplateTokenizerError", None, None)
    out = build_reference(on_template_unk="continue", **kw)["o"]
    (row,) = rows(out["unk_index.jsonl"])
    assert row["unk_positions"] == [literal_ids.index(sp.unk_id())]
    assert row["unk_field_indices"] == [0]
    assert row["unk_chars"] == ["Q:"]
    assert json.loads(out["length_field.json"])["sequence_template"] == ["token_template", "t"]
