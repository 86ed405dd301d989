"""The jobs every real engine builds, and the in-memory builds they must equal byte for byte.

Two inputs into two outputs with a few dozen 1 KiB blocks (many bundles, so the runner's
own splitting and ordering is exercised), a bad record skipped, a duplicate, CJK and
emoji UNKs; once with the SentencePiece fixture and once with the byte-level BPE
``tokenizer.json``, whose word-by-word encoder a non-local runner takes and the local
in-memory runner does not (``launcher._run_pipeline``: ``bpe_word_encoder``). The
in-memory build is checked against ``tests/reference.py`` first.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import yaml

from conftest import TESTDATA, build_and_compare, write_jsonl

sys.path.insert(0, str(TESTDATA))
import textgen  # noqa: E402

TOKENIZERS = {"sentencepiece": ("sentencepiece", "sp_unigram.model"),
              "bytelevel": ("hf_json", "hf_bytelevel_bpe.json")}


def make_job(root: Path, tokenizer: str = "sentencepiece") -> dict:
    kind, name = TOKENIZERS[tokenizer]
    rng = random.Random(11)
    rows = textgen.instruction_records(rng, 150)
    rows.insert(30, dict(rows[3]))
    rows.insert(50, '{"instruction": "broken"')
    chat = textgen.chat_records(rng, 70)
    chat.insert(20, {"prompt": "漢字 ✨", "response": "🙂"})
    return dict(
        files=[write_jsonl(root / "in" / "instructions.jsonl", rows), write_jsonl(root / "in" / "chat.jsonl", chat)],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
                   "Người dùng: {prompt}\n\nTrợ lý: {response}"],
        tokenizer_kind=kind,
        tokenizer_files=[str(TESTDATA / name)],
        sizes=[[32, 64, 96], [32, 64]],
        samples_per_shard=[9, 5],
        on_overflow="extend",
        on_bad_record="skip",
        on_template_unk="continue",
    )


def outputs(root: Path, name: str) -> list:
    return [str(root / name / "instructions"), str(root / name / "chat")]


def in_memory_build(root: Path, job: dict) -> list:
    """The default (in-memory) build, checked against the reference implementation."""
    base = outputs(root, "in_memory")
    build_and_compare(root, output_dirs=base, block_size=1024, build_batch=[3], **job)
    return base


def job_file(root: Path, job: dict, outs: list, block_size: int = 1024) -> str:
    """The job as a YAML file for ``mintdim-beam build``."""
    body = {
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"type": job["tokenizer_kind"], "files": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [4]},
        "output": {"dir": outs, "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": job["on_overflow"], "on_bad_record": job["on_bad_record"],
                "on_template_unk": job["on_template_unk"], "block_size": block_size},
    }
    path = root / f"job_{Path(outs[0]).parent.name}.yaml"
    path.write_text(yaml.safe_dump(body, allow_unicode=True), encoding="utf-8")
    return str(path)
