"""The cache of recurring field values (``mintdim_beam.core.text_cache``): exact ids, fewer
tokenizer calls, bounded memory, and rest on data whose values do not recur."""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import input_sizes, TESTDATA, run_in_threads, write_jsonl
from mintdim_beam.core import sample_lines
from mintdim_beam.core.blocks import plan_blocks
from mintdim_beam.storage.line_blocks import read_block_lines
from mintdim_beam.core.text_cache import TextCache
from mintdim_beam.tokenization.adapters import load_tokenizer
from test_records import _same, fresh_encoders

TOKENIZER = str(TESTDATA / "sp_unigram.model")

POOL = ["", "a", "question", "Summarize the text below.", "漢字 ✓ unknown", "word " * 60,
        "You are a helpful assistant.", "the same answer again", "x y z"]


@pytest.fixture(scope="module")
def tok():
    with open(TOKENIZER, "rb") as f:
        return load_tokenizer("sentencepiece", TOKENIZER, f.read(), threads=1)


def _counting(tok):
    asked = []

    def encode(texts):
        asked.extend(texts)
        return tok.encode_batch(texts)
    return encode, asked


def _calls(rng, n_calls, fresh_every=3):
    """Lists of texts: values of ``POOL`` recurring, mixed with values seen once."""
    calls, k = [], 0
    for _ in range(n_calls):
        texts = []
        for _ in range(rng.randrange(1, 12)):
            k += 1
            texts.append(f"fresh value {k}" if k % fresh_every == 0 else rng.choice(POOL))
        calls.append(texts)
    return calls


def test_recurring_values_are_spliced_in_exactly(tok):
    rng = random.Random(7)
    cache = TextCache()
    encode, asked = _counting(tok)
    calls = _calls(rng, 300)
    for texts in calls:
        flat, lengths = cache.encode(texts, encode)
        want_flat, want_lengths = tok.encode_batch(texts)
        assert flat.dtype == want_flat.dtype and np.array_equal(flat, want_flat)
        assert np.array_equal(lengths, want_lengths)
    total = sum(map(len, calls))
    fresh = sum(t.startswith("fresh") for texts in calls for t in texts)
    # Each pool value reaches the tokenizer in its first two calls at most (and again
    # only when it occurs twice in one call); every fresh value once.
    assert len(asked) - fresh <= 4 * len(POOL)
    assert cache.hits == total - len(asked) > total // 2


def test_kept_ids_start_over_when_full(tok, monkeypatch):
    monkeypatch.setattr(TextCache, "MAX_TOKENS", 40)     # pool values: 0 to 20 tokens, and 240
    monkeypatch.setattr(TextCache, "MAX_TEXT_TOKENS", 30)
    rng = random.Random(3)
    cache = TextCache()
    encode, asked = _counting(tok)
    restarts = 0
    for texts in _calls(rng, 400):
        used = cache._used
        flat, lengths = cache.encode(texts, encode)
        restarts += cache._used < used
        want_flat, want_lengths = tok.encode_batch(texts)
        assert np.array_equal(flat, want_flat) and np.array_equal(lengths, want_lengths)
        assert cache._used <= 40 and len(cache._ids) <= 40
    assert restarts > 0 and cache.hits > 0
    assert "word " * 60 not in cache._entries          # over MAX_TEXT_TOKENS: never kept


def test_cache_rests_on_values_that_do_not_recur(tok):
    cache = TextCache()
    cache._rest.window = 50
    encode, asked = _counting(tok)
    unique = [[f"value {i} {j}" for j in range(10)] for i in range(10)]
    for texts in unique:
        cache.encode(texts, encode)
    assert cache._rest.left and not cache._seen                     # no value recurred: rest
    asked.clear()
    texts = ["again"] * 10
    for _ in range(3):
        flat, _ = cache.encode(texts, encode)
        assert np.array_equal(flat, tok.encode_batch(texts)[0])
    assert len(asked) == 30 and not cache._entries               # resting: nothing kept


def test_threads_share_the_cache_exactly(tok):
    cache = TextCache()
    failures = []

    def work(seed):
        rng = random.Random(seed)
        for texts in _calls(rng, 150, fresh_every=4):
            flat, lengths = cache.encode(texts, tok.encode_batch)
            want_flat, want_lengths = tok.encode_batch(texts)
            if not (np.array_equal(flat, want_flat) and np.array_equal(lengths, want_lengths)):
                failures.append(texts)

    run_in_threads(work, 4)
    assert not failures and cache.hits > 0


@pytest.mark.parametrize("on_overflow", ["truncate", "extend"])
def test_block_results_with_recurring_values_equal_a_fresh_encoders(tmp_path, monkeypatch, on_overflow):
    """Samples that differ but share field values (an instruction, an answer with UNK
    tokens, one that overflows): every block equals the block a fresh encoder gives,
    while the tokenizer sees far fewer texts."""
    monkeypatch.setattr(sample_lines, "SLICE_SAMPLES", 5)
    questions = ["Summarize the text below.", "漢字 question ✓", "plain"]
    answers = ["answer ✓ 漢", "word " * 40, "", "short"]
    # No sample repeats whole (n), so the sample cache leaves them all to this one.
    rows = [{"q": questions[i % 3], "a": answers[(i // 3) % 4] + ("" if i % 5 else f" {i}"), "n": str(i)}
            for i in range(240)]
    path = write_jsonl(tmp_path / "values.jsonl", rows)
    config, encoder = fresh_encoders(tmp_path, path, ["q", "a", "n"], "{q}\n{a}\n{n}", on_overflow)
    shared = encoder()
    asked = []
    encode = shared.tok.encode_batch
    monkeypatch.setattr(shared.tok, "encode_batch", lambda texts: asked.extend(texts) or encode(texts))
    refs = plan_blocks(config, input_sizes(config))
    assert len(refs) > 4
    done = []
    for r in refs:
        done.extend(shared.feed(r, read_block_lines(path, r.start, r.end)[0], file_start=r.start == 0))
    done.extend(shared.drain())
    assert len(asked) < 2 * len(rows)                              # 720 texts without the cache
    assert shared._texts.hits > 300 and not shared._repeats.entries
    for r, result in done:
        _same(result, encoder().encode_block(read_block_lines(path, r.start, r.end)[0], file_start=r.start == 0))
    assert sum(res.unk.tokens for _, res in done) > 100
