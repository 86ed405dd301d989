"""The exact accelerators (``mintdim_beam.tokenization.accel``) against the libraries' public APIs.

Every tokenizer of ``tests/testdata`` and of the real third-party set (skipped when
absent) is loaded twice, with and without accelerators, and must give the same ids and
the same UNK substrings on real and adversarial text; whole builds with and without
them must publish the same bytes. The option itself is checked where users give it.
"""

from __future__ import annotations

import importlib.util

import json
import random

import numpy as np
import pytest
from tokenizers import Tokenizer as HFTokenizer

from conftest import REALDATA, TESTDATA, OutputDir, assert_same_outputs, run_pipeline, write_jsonl
from mintdim_beam.cli import commands as cli
from mintdim_beam import errors
from mintdim_beam.tokenization.accel import bpe_word_encoder
from mintdim_beam.core.config import JobSpec, resolve
from mintdim_beam.tokenization.adapters import HF_JSON, SENTENCEPIECE, load_tokenizer

#: Characters that decide splits, normalization and UNK runs, for random texts.
ALPHABET = (list("abcdefghij xyz XYZ 0123'.,!?") + list("{}[]<>^~|`\\@#$%&*_=+")
            + list("你好世界日本語한국어ภาษาไทย") + list("àáảãạăằđêềếểễệôồốổỗộơờớởưừứửữự")
            + list("ＡＢＣａｂｃ１２ﬁﬂ№™½²") + ["\u00a0", "\u3000", "\u2009", "\u200b", "\ufeff", "\t",
                                              "\n", "\r", "e\u0301", "  ", "\U0001F600", "'s", "'ll"])


def _random_texts(seed: int, count: int) -> list:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60))) for _ in range(count)]


def _real_texts() -> list:
    """Training text of the test tokenizers, and the real datasets' strings when present."""
    texts = (TESTDATA / "corpus.txt").read_text(encoding="utf-8").splitlines()
    data = REALDATA / "data"
    if data.is_dir():
        for path in sorted(data.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                texts.extend(str(v) for v in (record.values() if isinstance(record, dict) else [record]))
    return texts


def _tokenizer_files(suffix: str) -> list:
    found = sorted(TESTDATA.glob("*" + suffix))
    if (REALDATA / "tokenizers").is_dir():
        found += sorted((REALDATA / "tokenizers").glob("*" + suffix))
    return found


def _loadable(kind: str, paths) -> list:
    """``(name, accelerated adapter, plain adapter)`` of each file the adapters accept."""
    pairs = []
    for path in paths:
        data = path.read_bytes()
        try:
            fast = load_tokenizer(kind, str(path), data, threads=1)
        except errors.MintDimError:     # refused on purpose (no pad or unk id): tested elsewhere
            continue
        pairs.append((path.name, fast, load_tokenizer(kind, str(path), data, threads=1, accelerators=False)))
    return pairs


def _assert_same(fast, plain, texts, name) -> None:
    got, want = fast.encode_batch(texts), plain.encode_batch(texts)
    assert np.array_equal(got[1], want[1]), name
    assert np.array_equal(got[0].astype(np.int64), want[0].astype(np.int64)), name
    flat, lengths = want
    starts = np.cumsum(lengths) - lengths
    positions = [np.flatnonzero(flat[a:a + n] == plain.unk_id).tolist() for a, n in zip(starts, lengths)]
    held = [k for k, p in enumerate(positions) if p]     # what the encoder asks about
    texts, positions = [texts[k] for k in held], [positions[k] for k in held]
    assert fast.unk_column_at(texts, positions).tolist() == plain.unk_column_at(texts, positions).tolist(), name


def test_sentencepiece_accelerated_equals_plain():
    pairs = _loadable(SENTENCEPIECE, _tokenizer_files(".model"))
    assert {"sp_unigram.model", "sp_bpe.model"} <= {name for name, _, _ in pairs}
    texts = _real_texts() + _random_texts(0, 3000)
    for name, fast, plain in pairs:
        assert plain._unk_runs is None, name
        _assert_same(fast, plain, texts, name)
    # The Unigram models without byte fallback do take the accelerated audit.
    taken = {name for name, fast, _ in pairs if fast._unk_runs is not None}
    assert "sp_unigram.model" in taken and "sp_bpe.model" not in taken
    if (REALDATA / "tokenizers").is_dir():
        assert "t5_spiece_32000.model" in taken
        assert "kerashub_llama_export_vocab_290.model" not in taken     # byte fallback


def test_hf_accelerated_equals_plain():
    pairs = _loadable(HF_JSON, _tokenizer_files(".json"))
    assert "hf_bytelevel_bpe.json" in {name for name, _, _ in pairs}
    texts = _real_texts() + _random_texts(1, 3000)
    for name, fast, plain in pairs:
        assert plain._words is None, name
        # the byte-level BPEs (hf_nounk.json needs no unk: it covers every byte), and with
        # gigatoken (the "fast" extra) byte fallback as SentencePiece has it
        expected = {"hf_bytelevel_bpe.json", "hf_nounk.json"}
        if importlib.util.find_spec("gigatoken") is not None:
            expected.add("hf_bytefallback.json")
        assert (fast._words is not None) is (name in expected), name
        if fast._words is not None:     # the others encode with the library either way
            _assert_same(fast, plain, texts, name)


def test_byte_level_word_encoder_equals_the_library_on_gpt_neox(realdata):
    """OLMo's GPT-NeoX tokenizer has no unk token, so builds refuse it; its word encoder
    is compared with the library directly."""
    text = (realdata / "tokenizers" / "olmo_gpt-neox-20b-pii-special.tokenizer.json").read_text(encoding="utf-8")
    tok = HFTokenizer.from_str(text)
    words = bpe_word_encoder(tok, text)
    assert words is not None
    texts = _real_texts() + _random_texts(2, 3000)
    flat, lengths = words.encode_batch(texts)
    want = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert lengths.tolist() == [len(ids) for ids in want]
    assert flat.tolist() == [i for ids in want for i in ids]


ROWS = [
    {"q": "Xin chào thế giới {x}", "a": "你好, 世界! \U0001F600 café"},
    {"q": "plain English text", "a": "with numbers 123 and   spaces\n\nand lines"},
    {"q": "", "a": "ｆｕｌｌ ﬁ e\u0301 ~ | <>"},
    {"q": "Xin chào thế giới {x}", "a": "你好, 世界! \U0001F600 café"},
] * 25


#: Worker processes: where the launcher lets byte-level BPE encode word by word.
PROCESSES = ["--direct_running_mode=multi_processing", "--direct_num_workers=1"]


@pytest.mark.parametrize("kind,name,options", [(SENTENCEPIECE, "sp_unigram.model", None),
                                               (HF_JSON, "hf_bytelevel_bpe.json", PROCESSES),
                                               (SENTENCEPIECE, "t5_spiece_32000.model", None)])
def test_builds_with_and_without_accelerators_publish_the_same_bytes(tmp_path, kind, name, options):
    path = TESTDATA / name
    if not path.exists():
        path = REALDATA / "tokenizers" / name
        if not path.exists():
            pytest.skip(f"real third-party tokenizer not available ({path})")
    data = write_jsonl(tmp_path / "in.jsonl", ROWS)
    outs = {}
    for accelerators in (True, False):
        out = str(tmp_path / f"out_{accelerators}")
        run_pipeline(files=[data], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"], tokenizer_kind=kind,
                     tokenizer_files=[str(path)], sizes=[[16, 32, 64]], samples_per_shard=[16],
                     output_dirs=out, on_overflow="truncate", on_template_unk="continue",
                     build_batch=(7,), options=options, accelerators=accelerators)
        outs[accelerators] = out
        info = json.loads((tmp_path / out / "build_info.json").read_text())
        assert info["accelerators"] is accelerators
        assert info["bpe_word_encoder"] is (accelerators and kind == HF_JSON)
    assert_same_outputs(outs[True], outs[False])
    if kind == SENTENCEPIECE:
        assert OutputDir(outs[True]).jsonl("unk_index.jsonl")   # the audit had work to do


def test_accelerators_must_be_a_boolean():
    job = JobSpec(files=["a.jsonl"], fields=[["t"]], templates=["{t}"], tokenizer_kind=SENTENCEPIECE,
                  tokenizer_files=["m.model"], sizes=[[8]], build_batch=[4], output_dirs="out",
                  samples_per_shard=[4])
    with pytest.raises(errors.PipelineValidationError) as caught:
        resolve(job, accelerators="false")
    text = str(caught.value)
    assert "accelerators must be true or false, got 'false'" in text
    assert "accelerators phải là true hoặc false" in text


def test_job_file_and_flag(tmp_path, tok, capsys):
    data = write_jsonl(tmp_path / "in.jsonl", ROWS[:8])
    job = {"source": {"files": [data], "fields": [["q", "a"]], "templates": ["{q} {a}"]},
           "tokenizer": {"sentencepiece": [tok("sp_unigram.model")]},
           "units": {"sizes": [[64]], "build_batch": [4]},
           "output": {"dir": str(tmp_path / "out"), "samples_per_shard": [4]},
           "run": {"accelerators": "no", "on_template_unk": "continue"}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    assert cli.main(["build", str(path)]) == 2
    err = capsys.readouterr().err
    assert "accelerators must be true or false, got 'no'" in err and "[vietnam]" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    job["run"]["accelerators"] = True
    path.write_text(json.dumps(job))
    assert cli.main(["build", str(path), "--no-accelerators"]) == 0
    info = json.loads((tmp_path / "out" / "build_info.json").read_text())
    assert info["accelerators"] is False and info["bpe_word_encoder"] is False
