"""Tokenizers a warm worker loads while it waits (``tokenizers.preload``), handed to the
build's first bundle only when made from the same file bytes."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from conftest import TESTDATA
from mintdim_beam import tokenizers, warm_workers

SP_MODEL = TESTDATA / "sp_unigram.model"


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.setattr(tokenizers, "_PRELOADED", {})


@pytest.fixture
def loads(monkeypatch):
    calls = []
    real = tokenizers.load_tokenizer

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)
    monkeypatch.setattr(tokenizers, "load_tokenizer", counting)
    return calls


def test_the_preloaded_adapter_is_handed_out_once(tmp_path, loads):
    path = str(shutil.copy(SP_MODEL, tmp_path / "m.model"))
    data = SP_MODEL.read_bytes()
    tokenizers.preload(tokenizers.SENTENCEPIECE, path)
    assert len(loads) == 1
    first = tokenizers.load_tokenizer_preloaded(tokenizers.SENTENCEPIECE, path, data, threads=1)
    assert len(loads) == 1 and first.encode("hello world") == tokenizers.load_tokenizer(
        tokenizers.SENTENCEPIECE, path, data, threads=1).encode("hello world")
    second = tokenizers.load_tokenizer_preloaded(tokenizers.SENTENCEPIECE, path, data, threads=1)
    assert second is not first                       # handed out once; the caller keeps it


def test_other_bytes_or_settings_get_a_fresh_load(tmp_path, loads):
    path = str(shutil.copy(SP_MODEL, tmp_path / "m.model"))
    tokenizers.preload(tokenizers.SENTENCEPIECE, path)
    other = (TESTDATA / "sp_bpe.model").read_bytes()
    fresh = tokenizers.load_tokenizer_preloaded(tokenizers.SENTENCEPIECE, path, other, threads=1)
    assert loads == [path, path] and fresh.vocab_size == tokenizers.load_tokenizer(
        tokenizers.SENTENCEPIECE, path, other).vocab_size
    tokenizers.preload(tokenizers.SENTENCEPIECE, path)
    tokenizers.load_tokenizer_preloaded(tokenizers.SENTENCEPIECE, path, SP_MODEL.read_bytes(), threads=4)
    assert len(loads) == 5                           # another thread count is another adapter


def test_a_failed_preload_leaves_the_error_to_the_build(tmp_path):
    path = str(tmp_path / "missing.model")
    tokenizers.preload(tokenizers.SENTENCEPIECE, path)          # no error here
    with pytest.raises(tokenizers.TokenizerValidationError, match="Tokenizer file cannot be loaded"):
        tokenizers.load_tokenizer_preloaded(tokenizers.SENTENCEPIECE, path, b"not a model", threads=1)


def test_a_waiting_worker_preloads_what_its_pool_lists(tmp_path):
    path = str(shutil.copy(SP_MODEL, tmp_path / "m.model"))
    (tmp_path / warm_workers.PRELOAD).write_text(json.dumps([[tokenizers.SENTENCEPIECE, path]]))
    warm_workers._preload(str(tmp_path))
    key = (tokenizers.SENTENCEPIECE, path, 1, True, True)
    deadline = time.monotonic() + 30
    while key not in tokenizers._PRELOADED and time.monotonic() < deadline:
        time.sleep(0.01)
    data, adapter = tokenizers._PRELOADED[key].result(timeout=30)
    assert data == SP_MODEL.read_bytes() and adapter.kind == tokenizers.SENTENCEPIECE
