"""A build through gigatoken publishes the bytes of a build without accelerators.

gigatoken (``accel.gigatoken_bpe``) is optional: these tests skip without it. Its ids
are compared with the library's in ``tests/unit/test_gigatoken_accel.py``; here whole
builds are, with the word encoder's mode (worker processes, gigatoken on the calling
thread) and the in-memory mode (gigatoken on its own threads), on text that mixes what
gigatoken encodes with what it leaves to the library (code points after Unicode 14)
and the test tokenizer's added tokens; and a SentencePiece BPE ``.model``
(``accel.gigatoken_sp``), whose control and user-defined pieces' texts are the library's.
"""

from __future__ import annotations

import json

import pytest

from conftest import TESTDATA, assert_same_outputs, run_pipeline, write_jsonl
from mintdim_beam.tokenization.accel import gigatoken_bpe

pytest.importorskip("gigatoken")
if not gigatoken_bpe.available():
    pytest.skip("gigatoken older than the release this accelerator was checked against", allow_module_level=True)

ROWS = [
    {"q": "Xin chào thế giới {x}", "a": "你好, 世界! \U0001F600 café <pad> and <unk>"},
    {"q": "plain English text", "a": "with numbers 123 and   spaces\n\nand lines\t\ttabs    "},
    {"q": "", "a": "ｆｕｌｌ ﬁ e\u0301 ~ | <> it's IT'LL"},
    {"q": "new in Unicode 15: \U0001fae8 \u088f", "a": "a" * 3000 + " " * 40 + "b"},
    {"q": "Xin chào thế giới {x}", "a": "你好, 世界! \U0001F600 café"},
] * 20

#: Worker processes: where the launcher lets each encoder use one core.
PROCESSES = ["--direct_running_mode=multi_processing", "--direct_num_workers=1"]


@pytest.mark.parametrize("tokenizer,options", [("hf_bytelevel_bpe.json", PROCESSES), ("hf_bytelevel_bpe.json", None),
                                               ("llama2", None), ("llama2.model", None), ("llama2.model", PROCESSES)],
                         ids=["processes", "in_memory", "sentencepiece_style", "sentencepiece_bpe",
                              "sentencepiece_bpe_processes"])
def test_builds_with_and_without_accelerators_publish_the_same_bytes(tmp_path, monkeypatch, tokenizer, options):
    calls = []
    real = gigatoken_bpe.GigatokenBPE._gigatoken

    def counted(self, texts):
        calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(gigatoken_bpe.GigatokenBPE, "_gigatoken", counted)
    path = TESTDATA / tokenizer
    if tokenizer == "llama2":       # a SentencePiece BPE with byte fallback, as HF converts one
        from test_gigatoken_accel import _sentencepiece_style

        path = tmp_path / "llama2.json"
        path.write_text(_sentencepiece_style("llama2"), encoding="utf-8")
    kind = "hf_json"
    if tokenizer == "llama2.model":     # a SentencePiece BPE .model in Llama 2's settings (accel.gigatoken_sp)
        from test_gigatoken_sp import LLAMA, train

        path, kind = tmp_path / "llama2.model", "sentencepiece"
        path.write_bytes(train(**LLAMA))
    data = write_jsonl(tmp_path / "in.jsonl", ROWS)
    outs = {}
    for accelerators in (True, False):
        out = str(tmp_path / f"out_{accelerators}")
        run_pipeline(files=[data], fields=[["q", "a"]], templates=["Q: {q}\nA: {a}"], tokenizer_kind=kind,
                     tokenizer_files=[str(path)], sizes=[[16, 64, 256]],
                     samples_per_shard=[16], output_dirs=out, on_overflow="truncate",
                     on_template_unk="continue", build_batch=(7,), options=options, accelerators=accelerators)
        outs[accelerators] = out
        info = json.loads((tmp_path / out / "build_info.json").read_text())
        assert info["accelerators"] is accelerators
    assert_same_outputs(outs[True], outs[False])
    if options is None:       # in this process: gigatoken did encode
        assert calls
