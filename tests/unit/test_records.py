"""The block encoder on its own: pipelining across blocks changes no result.

The builds that check the same records end to end are in ``tests/e2e/test_record_builds.py``.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from conftest import input_sizes, TESTDATA, write_jsonl
from mintdim_beam.core import records
from mintdim_beam.core import sample_lines
from mintdim_beam import pipeline
from mintdim_beam.core.block_result import BAD, OK, BlockResult
from mintdim_beam.core.repeat_cache import RepeatCache
from mintdim_beam.core.blocks import plan_blocks
from mintdim_beam.storage.line_blocks import read_block_lines
from mintdim_beam.tokenization.adapters import load_tokenizer

TOKENIZER = str(TESTDATA / "sp_unigram.model")


def _rows(n: int) -> list:
    rows = []
    for i in range(n):
        if i % 23 == 4:
            rows.append("")
        elif i % 31 == 6:
            rows.append('{"q": "broken"')
        else:
            rows.append({"q": f"question {i}", "a": "answer " * (1 + i % 17) + ("漢字 ✓" if i % 7 == 3 else "")})
    return rows


def _encoder(tmp_path, on_bad_record: str, threads: int):
    path = write_jsonl(tmp_path / "data.jsonl", _rows(400))
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[["q", "a"]], templates=["{q}\n{a}"])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[8, 16, 32]], build_batch=[5])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[10])
              .config(on_overflow="extend", on_bad_record=on_bad_record, block_size=1024))
    spec = config.files[0]
    with open(TOKENIZER, "rb") as f:
        tok = load_tokenizer(spec.tokenizer.kind, TOKENIZER, f.read(), threads=1)
    return config, records.BlockEncoder(spec, tok, config.policies, encode_threads=threads)


def fresh_encoders(tmp_path, path: str, fields: list, template: str, on_overflow: str):
    """``(config, encoder)`` for ``path``: 1 KiB blocks, units 8/16/32, ``build_batch``
    4; ``encoder()`` makes a new ``BlockEncoder`` (own tokenizer, two encode threads)."""
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[fields], templates=[template])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[8, 16, 32]], build_batch=[4])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[10])
              .config(on_overflow=on_overflow, block_size=1024))
    spec = config.files[0]
    with open(TOKENIZER, "rb") as f:
        data = f.read()

    def encoder():
        return records.BlockEncoder(spec, load_tokenizer(spec.tokenizer.kind, TOKENIZER, data, threads=1),
                                    config.policies, encode_threads=2)
    return config, encoder


def _same(a: BlockResult, b: BlockResult) -> None:
    for f in dataclasses.fields(BlockResult):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y), f.name
        elif f.name == "records":
            assert sorted(x) == sorted(y) and all(np.array_equal(x[k], y[k]) for k in x), f.name
        elif f.name == "unk":
            assert x.row_parts() == y.row_parts() and x.tokens == y.tokens, f.name
        elif f.name == "first_error":
            assert (x is None) == (y is None) and (x is None or x[:2] == y[:2]), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("on_bad_record", ["skip", "abort"])
@pytest.mark.parametrize("threads", [0, 2])
def test_feed_and_drain_give_each_block_its_own_result(tmp_path, monkeypatch, on_bad_record, threads):
    monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", 4)
    config, encoder = _encoder(tmp_path, on_bad_record, threads)
    refs = plan_blocks(config, input_sizes(config))
    assert len(refs) > 8
    lines = {r: read_block_lines(config.files[0].path, r.start, r.end)[0] for r in refs}
    alone = {r: encoder.encode_block(lines[r], file_start=r.start == 0) for r in refs}

    done = []
    for r in refs:
        found = encoder.feed(r, lines[r], file_start=r.start == 0)
        assert len(done) + len(found) <= refs.index(r) + 1   # never ahead of what was fed
        done.extend(found)
    done.extend(encoder.drain())
    assert [r for r, _ in done] == refs                       # every block once, in order
    for r, result in done:
        _same(result, alone[r])
    assert any(res.bad for res in alone.values())
    assert sum(res.unk.tokens for res in alone.values()) > 20
    if on_bad_record == "abort":
        assert any(res.first_error is not None for res in alone.values())
    assert encoder.drain() == []


@pytest.mark.parametrize("on_overflow, slice_samples", [("truncate", 6), ("extend", 6), ("extend", 18)])
def test_repeated_samples_reuse_results_exactly(tmp_path, monkeypatch, on_overflow, slice_samples):
    """Samples seen a third time reuse the result of the second (no tokenizer call);
    every block's result equals the one a fresh encoder (no history) gives. With 18
    samples a slice keeps several samples with UNK tokens at once."""
    monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", slice_samples)
    base = [
        {"q": "ab", "a": "c"}, {"q": "a", "a": "bc"},            # same rendered text, other split
        {"q": "漢字 question", "a": "answer ✓ 漢"},               # UNK tokens
        {"q": "猫 cat", "a": "dog 犬犬 ✓✓"},                      # other UNK tokens
        {"q": "long", "a": "word " * 40},                         # overflows the largest unit
        {"q": "", "a": "empty question"},
        {"q": "plain", "a": "a plain answer"},
    ]
    rows = [dict(r) for _ in range(24) for r in base]
    path = write_jsonl(tmp_path / "repeats.jsonl", rows)
    config, encoder = fresh_encoders(tmp_path, path, ["q", "a"], "{q}{a}", on_overflow)
    refs = plan_blocks(config, input_sizes(config))
    assert len(refs) > 4
    shared = encoder()
    calls = []
    encode = shared.tok.encode_batch
    monkeypatch.setattr(shared.tok, "encode_batch", lambda texts: calls.append(len(texts)) or encode(texts))
    done = []
    for r in refs:
        done.extend(shared.feed(r, read_block_lines(path, r.start, r.end)[0], file_start=r.start == 0))
    done.extend(shared.drain())
    assert shared._repeats.entries                                # results were kept ...
    # ... and reused: of 24 copies x 7 rows x 2 texts (336 without reuse), the overflowing
    # row and the two rows sharing a digest are encoded every time (144 texts); the other
    # four rows at most in their first three copies (24 texts).
    assert sum(calls) <= 144 + 24
    for r, result in done:
        _same(result, encoder().encode_block(read_block_lines(path, r.start, r.end)[0], file_start=r.start == 0))
    assert sum(res.unk.tokens for _, res in done) >= 6
    # Repeats with UNK tokens carry their kept UNK part, not their tokens again.
    assert sum(len(res.unk.rendered_sample) for _, res in done) >= (20 if slice_samples == 6 else 12)


@pytest.mark.parametrize("on_overflow", ["truncate", "extend"])
def test_empty_values_skip_the_tokenizer_and_change_no_result(tmp_path, monkeypatch, on_overflow):
    """Empty field values are never sent to the tokenizer (which encodes "" as no
    tokens); each block's result equals that of an encoder that sends them."""
    monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", 5)
    rows = [{"q": ["", "漢 q%d" % i, "", "question %d" % i][i % 4],
             "a": ["", "answer ✓ " * (i % 9), "字"][i % 3]} for i in range(90)]
    path = write_jsonl(tmp_path / "empty.jsonl", rows)
    config, encoder = fresh_encoders(tmp_path, path, ["q", "a"], "{q}: {a}", on_overflow)
    skipping, sending = encoder(), encoder()
    assert skipping._empty_has_no_tokens
    sending._empty_has_no_tokens = False
    asked = []
    encode = skipping.tok.encode_batch
    monkeypatch.setattr(skipping.tok, "encode_batch", lambda texts: asked.extend(texts) or encode(texts))
    refs = plan_blocks(config, input_sizes(config))
    assert len(refs) > 2
    for r in refs:
        lines = read_block_lines(path, r.start, r.end)[0]
        got = skipping.encode_block(lines, file_start=r.start == 0)
        _same(got, sending.encode_block(lines, file_start=r.start == 0))
        assert got.empty_fields and got.unk.tokens
    assert asked and "" not in asked


def test_a_full_repeat_cache_keeps_nothing_more_and_changes_no_result(tmp_path, monkeypatch):
    """Once the kept results fill the cache, later second occurrences are encoded as
    usual and nothing more is prepared for keeping; every block's result is unchanged."""
    monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", 6)
    rows = [{"q": f"漢字 {i % 40}", "a": f"answer {i % 40} ✓"} for i in range(240)]
    path = write_jsonl(tmp_path / "many.jsonl", rows)
    config, encoder = fresh_encoders(tmp_path, path, ["q", "a"], "{q}{a}", "extend")
    shared = encoder()
    shared._repeats.MAX_BYTES = 1         # the first kept result fills it
    kept = []
    keep = shared._repeats.keep
    monkeypatch.setattr(shared._repeats, "keep", lambda d, r: kept.append(d) or keep(d, r))
    done = []
    for r in plan_blocks(config, input_sizes(config)):
        done.extend(shared.feed(r, read_block_lines(path, r.start, r.end)[0], file_start=r.start == 0))
    done.extend(shared.drain())
    assert len(kept) == len(shared._repeats.entries) == 1
    for r, result in done:
        _same(result, encoder().encode_block(read_block_lines(path, r.start, r.end)[0], file_start=r.start == 0))
    assert sum(res.unk.tokens for _, res in done) >= 240


def test_repeat_cache_rests_on_data_that_does_not_repeat(monkeypatch):
    cache = RepeatCache()
    cache.rest.window = 100
    digest = lambda i: i.to_bytes(32, "big")                      # noqa: E731
    values = [("x",)] * 50

    def slice_of(ids):
        hashes = [digest(i) for i in ids]
        return cache.split(list(range(len(ids))), values[:len(ids)], hashes)

    slice_of(range(0, 50))
    slice_of(range(50, 100))
    fresh, _, repeats, store = slice_of(range(100, 150))          # window 1: no repeats
    assert cache.rest.left == cache.rest.windows and not store and not cache.seen
    calls = 0
    while True:
        out = slice_of(range(0, 50))
        if not cache.rest.left:
            break                                                 # this slice woke it up
        assert out[2:] == ([], set()) and not cache.seen          # resting: nothing tracked
        calls += 1
    assert calls == 2 * cache.rest.windows - 2                    # that many windows of 100
    assert cache.seen == {digest(i) for i in range(50)}           # awake again: seen ...
    assert slice_of(range(0, 50))[3] == set(range(50))            # ... a second time: store


# Lines where orjson (the fast path's parser) and the standard decoder could part ways:
# each must give what the line-by-line path gives.
_PARSER_EDGES = [
    b'{"q": "lone \\ud800 surrogate", "a": "x"}',          # the standard decoder's string
    b'{"q": "pair \\ud83d\\ude00", "a": "\\u0000 \\/ \\"q\\""}',
    b'{"q": "big", "a": "int", "n": 123456789012345678901234567890}',   # orjson: a float
    b'{"q": "huge", "a": "float", "n": 1e400}',             # orjson refuses it
    b'{"q": "nan", "a": "x", "n": NaN}',                    # not JSON: a bad record
    b'  {"q": "spaced", "a": "line"}\t ',                  # JSON whitespace around the object
    b'{"q": "first", "q": "second", "a": "duplicate key"}',
    b'{"q": "bad \xed\xa0\x80 utf-8", "a": "x"}',           # an encoded surrogate
    b'{"q": "overlong \xc0\xaf", "a": "x"}',
    b'{"q": "deep", "a": "x", "n": ' + b"[" * 150 + b"]" * 150 + b"}",
    b'{"q": "deeper", "a": "x", "n": ' + b"[" * 1000 + b"]" * 1000 + b"}",
    b'{"q": "deepest", "a": "x", "n": ' + b"[" * 1020 + b"]" * 1020 + b"}",
    b'{"q": "obj", "a": "x", "n": ' + b'{"k":' * 200 + b"1" + b"}" * 200 + b"}",
    b'["q", "a"]',
    b'{"q": 1, "a": "x"}',
    '{"q": "漢字 ✓ ọ", "a": "\\t tab"}'.encode(),
    # Where msgspec (the first parser, for lines of exactly the declared fields) could part ways:
    b'{"q": "x", "a": "y", "n": "\xff invalid utf-8 in another key"}',
    b'{"\\u0071": "escaped key", "a": "x"}',
    b'{"q": 1, "q": "the last wins", "a": "x"}',
    b'{"q": "the last wins:", "q": 2, "a": "x"}',
    b'{"q": "two", "a": "objects"} {"q": "z", "a": "w"}',
    b'{"q": "raw \t tab", "a": "x"}',
    b'{"q": "x", "a": null}',
    b'{"q": "only q"}',
    b'{"q": "trailing", "a": "comma",}',
    b'{"q": "del \x7f and \xef\xbf\xbf", "a": "x"}',
    b'{"q": "x", "a": "y", "q": "\\ud800"}',
    b'\xef\xbb\xbf{"q": "a BOM inside the file", "a": "x"}',
]
#: Lines (0-based, edge k at 2k + 1) of the edges that are samples (numbers and null
#: render as text: the line-by-line path's ``render_value``).
_EDGE_SAMPLES = (3, 5, 7, 11, 13, 19, 25, 29, 31, 35, 37, 39, 45, 51)


def _decoded_if_valid(line: bytes):
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line


@pytest.mark.parametrize("on_bad_record", ["skip", "abort"])
@pytest.mark.parametrize("fields_first", ["always", "as it goes"])
def test_fast_parser_gives_what_the_line_by_line_path_gives(tmp_path, monkeypatch, on_bad_record, fields_first):
    rows = []
    for i, edge in enumerate(_PARSER_EDGES):
        rows.append({"q": f"plain {i}", "a": "an answer"})
        rows.append(edge)
    rows.append({"q": "last", "a": "one"})
    path = write_jsonl(tmp_path / "edges.jsonl", rows)
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[["q", "a"]], templates=["{q}\n{a}"])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[8, 16, 32]], build_batch=[5])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[10])
              .config(on_overflow="extend", on_bad_record=on_bad_record, block_size=1 << 20))
    spec = config.files[0]
    with open(TOKENIZER, "rb") as f:
        tok = load_tokenizer(spec.tokenizer.kind, TOKENIZER, f.read(), threads=1)
    lines, _ = read_block_lines(path, 0, 1 << 20, decode=False)
    assert all(type(line) is bytes for line in lines)
    if fields_first == "always":   # msgspec tries every slice, even after one with other keys
        monkeypatch.setattr(sample_lines.LineParser, "_fields_only", property(lambda self: True, lambda self, v: None),
                            raising=False)
    calls = []
    loads = sample_lines._LOADS
    monkeypatch.setattr(sample_lines, "_LOADS", lambda line: calls.append(line) or loads(line))
    for size in (1, 2, 5):     # each edge alone in its slice, and mixed with plain lines
        monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", size)
        encoder = records.BlockEncoder(spec, tok, config.policies, encode_threads=2)
        decode = encoder._lines._decode_fields
        fields = []
        encoder._lines._decode_fields = lambda line: fields.append(line) or decode(line)
        calls.clear()
        fast = encoder.encode_block(lines)
        if size == 1 and on_bad_record == "skip":
            assert set(calls) | set(fields) == set(lines)      # the fast path saw every line
            assert lines[0] in fields and lines[0] not in calls   # plain lines: msgspec's
            if fields_first == "always":
                assert fields == lines
        with monkeypatch.context() as m:
            m.setattr(sample_lines.LineParser, "_clean_chunk", lambda self, chunk: None)
            slow = encoder.encode_block(lines)
            text = encoder.encode_block(list(map(_decoded_if_valid, lines)))   # lines as str where valid
        _same(fast, slow)
        _same(fast, text)
    if on_bad_record == "skip":
        # Samples the standard decoder takes are samples; the rest are bad records.
        status = dict(zip(fast.local_line.tolist(), fast.status.tolist()))
        assert status[1] == BAD                # the lone surrogate: "invalid UTF-8"
        ok = [int(x) for x in fast.local_line[fast.status == OK]]
        assert [line for line in ok if line % 2] == list(_EDGE_SAMPLES)


def test_lines_of_only_the_declared_fields_take_msgspec_until_a_clean_line_has_other_keys(tmp_path):
    rows = [{"q": f"q {i}", "a": f"a {i}"} for i in range(6)] + [{"q": "x", "a": "y", "id": 7}]
    rows += [{"q": f"later {i}", "a": ""} for i in range(3)]
    path = write_jsonl(tmp_path / "keys.jsonl", rows)
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[["q", "a"]], templates=["{q}\n{a}"])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[16, 32]], build_batch=[5])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[10]).config(on_overflow="extend"))
    spec = config.files[0]
    parser = sample_lines.LineParser(spec, config.policies)
    lines, _ = read_block_lines(path, 0, 1 << 20, decode=False)
    first, _ = parser.parse_slice(lines[:6], 0, 0, True)
    assert parser._fields_only and first.values == [(f"q {i}", f"a {i}") for i in range(6)]
    second, _ = parser.parse_slice(lines[6:], 0, 6, False)       # clean, with an "id" as well
    assert not parser._fields_only
    assert second.values == [("x", "y")] + [(f"later {i}", "") for i in range(3)]
    assert second.empty == {7: ["a"], 8: ["a"], 9: ["a"]}
    assert second.hashes[0] == hashlib.sha256(b"x\ny").digest()


# ------------------------------------------------------------------ the JSON nesting limit

LIMIT = sample_lines.MAX_JSON_DEPTH
TOO_DEEP = ("SourceParseError", f"JSON nested deeper than {LIMIT} levels")


def _deep_line(depth: int, name: str) -> str:
    """A line of one sample whose arrays and objects nest ``depth`` levels (the line's
    object is level 1), alternating arrays and objects."""
    inner = "1"
    for k in range(depth - 1):
        inner = f"[{inner}, 2]" if k % 2 else f'{{"k": {inner}}}'
    return f'{{"q": "{name}", "a": "depth {depth}", "n": {inner}}}'


# depth -> a sample (True) or a bad record; brackets inside strings do not count.
_DEPTHS = {LIMIT - 1: True, LIMIT: True, LIMIT + 1: False, 700: False, 980: False, 1024: False, 1030: False}
_BRACKETS_IN_STRINGS = '{"q": "%s", "a": "\\"%s"}' % ("[" * 700, "{" * 700)


def _nesting_rows() -> list:
    rows = [{"q": "first", "a": "plain"}]
    for depth in _DEPTHS:
        rows.append(_deep_line(depth, f"d{depth}"))
        rows.append({"q": f"after {depth}", "a": "plain"})
    rows.append(_BRACKETS_IN_STRINGS)
    return rows


def _in_deeper_stack(frames: int, work):
    """``work()`` called ``frames`` Python frames deeper, as a worker process calls it."""
    return work() if frames == 0 else _in_deeper_stack(frames - 1, work)


def test_json_nesting_limit_is_the_same_in_every_stack(tmp_path):
    """A line nesting deeper than MAX_JSON_DEPTH is a bad record whose reason names the
    limit, and one at the limit a sample, however deep the caller's stack (a worker
    process's is deeper than the launcher's): the standard decoder alone accepts about
    980 levels in a shallow stack and fewer in a deep one."""
    path = write_jsonl(tmp_path / "deep.jsonl", _nesting_rows())
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[["q", "a"]], templates=["{q}\n{a}"])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[8, 16, 32]], build_batch=[4])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[10])
              .config(on_overflow="extend", on_bad_record="skip"))
    with open(TOKENIZER, "rb") as f:
        tok = load_tokenizer("sentencepiece", TOKENIZER, f.read(), threads=1)
    lines = read_block_lines(path, 0, 1 << 30, decode=False)[0]
    results = []
    for frames in (0, 150, 300):
        encoder = records.BlockEncoder(config.files[0], tok, config.policies, encode_threads=frames // 150)
        results.append(_in_deeper_stack(frames, lambda: encoder.encode_block(lines, file_start=True)))
    for res in results[1:]:
        _same(results[0], res)
    res = results[0]
    status = dict(zip(res.local_line.tolist(), res.status.tolist()))
    bad = {int(res.local_line[s]): reason for s, reason in res.bad.items()}
    for k, (depth, ok) in enumerate(_DEPTHS.items()):
        line = 1 + 2 * k
        assert status[line] == (OK if ok else BAD), depth
        assert bad.get(line) == (None if ok else TOO_DEEP), depth
        assert status[line + 1] == OK
    assert status[len(lines) - 1] == OK          # 1,400 brackets, all inside strings
    assert len(bad) == sum(not ok for ok in _DEPTHS.values())


def test_json_depth_counts_brackets_outside_strings_only():
    assert sample_lines.json_depth('"[[["') == 0
    assert sample_lines.json_depth('{"a": "\\"[", "b": [[{"c": "]]"}]]}') == 4
    assert sample_lines.json_depth('{"a": "\\\\", "b": [[]]}') == 3      # an escaped backslash ends there
    assert sample_lines.json_depth(_deep_line(LIMIT + 1, "x")) == LIMIT + 1
    assert sample_lines.json_depth(_BRACKETS_IN_STRINGS) == 1


@pytest.mark.parametrize("fields, template, joined", [
    (["text"], "{text}", True),
    (["q", "a"], "{q}\n\n{a}", True),
    (["q", "i", "a"], "{q}\n{i}\n{a}", True),
    (["q", "a"], "Q: {q}\n\n{a}", False),           # a literal before the first field
    (["q", "a"], "{q}\n{a}\n", False),              # after the last
    (["q", "i", "a"], "{q}\n{i} {a}", False),       # two different literals
    (["q", "a"], "{a}\n{q}", False),                # not in the declared order
    (["q"], "{q}\n{q}", False),                     # a field twice
])
def test_a_template_of_fields_and_one_separator_renders_as_a_join(tmp_path, fields, template, joined):
    """The fast path's render (``LineParser._join``) is the template's own text, and is
    used only for templates it can render; the digest is of that text either way."""
    path = write_jsonl(tmp_path / "t.jsonl", [{f: f"{f} é {k}" for f in fields} for k in range(5)])
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[fields], templates=[template])
              .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[64]], build_batch=[4])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[10]).config(on_overflow="extend"))
    parser = sample_lines.LineParser(config.files[0], config.policies)
    assert (parser._join is not None) == joined
    lines, _ = read_block_lines(path, 0, 1 << 20, decode=False)
    parsed, _ = parser.parse_slice(lines, 0, 0, True)
    for k, (values, digest) in enumerate(zip(parsed.values, parsed.hashes)):
        text = template.format(**{f: f"{f} é {k}" for f in fields})
        assert digest == hashlib.sha256(text.encode()).digest()
        if joined:
            assert parser._join(values) == text
