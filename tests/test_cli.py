"""The ``mintdim-beam`` command line: ``build JOB.yaml`` and ``demo OUT_DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import DirectTokenizer, OutputDir, expected_segments, write_jsonl
from mintdim_beam.cli import main

DEMO_DIR = Path(__file__).resolve().parents[1] / "mintdim_beam" / "demo"


def _job_yaml(tok_path: str, *, sections=("source", "tokenizer", "units", "output", "run"),
              on_overflow="abort") -> str:
    parts = {
        "source": ('source:\n'
                   '  files: ["./data/a.jsonl", "./data/b.jsonl"]\n'
                   '  fields: [["q", "a"]]\n'
                   '  templates: ["{q}\\n{a}"]\n'),
        "tokenizer": f'tokenizer:\n  sentencepiece: ["{tok_path}"]\n',
        "units": 'units:\n  sizes: [[8, 32]]\n  build_batch: [4]\n',
        "output": 'output:\n  dir: ["./out/a", "./out/b"]\n  samples_per_shard: [2]\n',
        "run": f'run:\n  on_overflow: {on_overflow}\n  on_template_unk: abort\n',
    }
    return "".join(parts[s] for s in sections)


@pytest.fixture
def job_dir(tmp_path, monkeypatch, tok):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "data" / "a.jsonl", [
        {"q": "Why do bees matter?", "a": "They pollinate crops."},
        {"q": "Tides?", "a": "The Moon pulls on the oceans, so the water rises and falls twice a "
                             "day along most coasts of the world."},
    ])
    write_jsonl(tmp_path / "data" / "b.jsonl", [{"q": "Bread", "a": "Yeast makes gas."}])
    return tmp_path


def test_build_job_file(job_dir, tok, capsys):
    """A job file builds; a policy flag on the command line overrides the job's run section."""
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model")), encoding="utf-8")
    code = main(["build", "job.yaml", "--on-overflow", "truncate"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    for name, n in (("a", 2), ("b", 1)):
        out = OutputDir(job_dir / "out" / name)
        assert out.stats["total_samples"] == n
        out.check_layout()
        out.decoded()
        assert f"output=./out/{name}" in captured.out
    a = OutputDir(job_dir / "out" / "a")
    assert [r["source_file"] for r in a.samples] == ["./data/a.jsonl"] * 2
    assert a.manifest["policies"]["on_overflow"] == "truncate"
    overflow = a.jsonl("overflow_index.jsonl")
    assert [(o["sample_id"], o["action"]) for o in overflow] == [(1, "truncate")]


def test_bad_job_missing_section(job_dir, tok, capsys):
    sections = ("source", "tokenizer", "output", "run")  # no units
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model"), sections=sections),
                                      encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in captured.err
    assert "[english] PipelineValidationError" in captured.err
    assert "[vietnam] PipelineValidationError" in captured.err
    assert "units.sizes" in captured.err
    assert not (job_dir / "out").exists()


def test_unknown_tokenizer_type_is_named(job_dir, tok, capsys):
    text = _job_yaml(tok("sp_unigram.model")).replace(
        f'tokenizer:\n  sentencepiece: ["{tok("sp_unigram.model")}"]\n',
        f'tokenizer:\n  type: sentencepeice\n  files: ["{tok("sp_unigram.model")}"]\n')
    (job_dir / "job.yaml").write_text(text, encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    english, vietnamese = captured.err.split("[vietnam]")
    assert "[english] TokenizerValidationError: Unsupported tokenizer format." in english
    assert ("tokenizer.type is 'sentencepeice' (did you mean 'sentencepiece'?); "
            "it must be one of: sentencepiece, hf_json") in english
    assert "tokenizer.type là 'sentencepeice' (có phải ý bạn là 'sentencepiece'?)" in vietnamese
    assert not (job_dir / "out").exists()


def test_missing_job_file(tmp_path, capsys):
    code = main(["build", str(tmp_path / "nope.yaml")])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    assert "[english] MintDimFileNotFoundError" in captured.err and "nope.yaml" in captured.err


def test_build_job_with_bad_record_exits_2(job_dir, tok, capsys):
    """An error raised while the Beam pipeline runs is printed like a launch-time one."""
    with open(job_dir / "data" / "b.jsonl", "a", encoding="utf-8") as f:
        f.write('{"q": "broken"\n')
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model"), on_overflow="truncate"),
                                      encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in captured.err
    english, vietnamese = captured.err.split("[vietnam]")
    assert "[english] SourceParseError" in english
    assert "./data/b.jsonl" in english and "./data/b.jsonl" in vietnamese
    assert "invalid JSON syntax" in english
    assert not (job_dir / "out" / "a" / "manifest.json").exists()


def test_demo(tmp_path, capsys):
    if not DEMO_DIR.is_dir() or not list(DEMO_DIR.glob("*.jsonl")):
        pytest.skip("mintdim_beam/demo/ has no data yet")
    out_dir = tmp_path / "demo"
    code = main(["demo", str(out_dir)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    outputs = sorted(p.parent for p in out_dir.rglob("manifest.json"))
    assert len(outputs) >= 1
    total = 0
    for path in outputs:
        out = OutputDir(path)
        out.check_layout()
        decoded = out.decoded()
        total += out.stats["total_samples"]
        assert len(decoded) == out.stats["total_samples"] == len(out.samples)
        assert out.stats["total_tokens"] == sum(r["token_count"] for r in out.samples)
        # a few records are exactly the direct encoding of their segments (the demo uses
        # on_overflow="extend", so no record is truncated)
        tok = out.manifest["tokenizer"]
        direct = DirectTokenizer(tok["type"], tok["path"])
        sources = out.manifest["source"]
        for row in out.samples[::25]:
            index = sources["files"].index(row["source_file"])
            lines = Path(row["source_file"]).read_text(encoding="utf-8").splitlines()
            record = json.loads(lines[row["source_line"] - 1])
            template = sources["templates"][index]
            assert decoded[row["sample_id"]] == expected_segments(direct, template, record)
    assert total > 0
    # the demo data's documented features (mintdim_beam/demo/README.md)
    inst = OutputDir(out_dir / "instructions")
    assert inst.stats["total_samples"] == 300
    assert inst.stats["duplicate_groups"] == 4 and inst.stats["duplicate_samples"] == 9
    assert [[s["source_line"] for s in d["samples"]] for d in inst.jsonl("duplicate_index.jsonl")] == [
        [13, 62], [41, 153, 224], [103, 245], [183, 296]]
    assert [u["source_line"] for u in inst.jsonl("unk_index.jsonl")] == [138]
    assert OutputDir(out_dir / "chat_vi").stats["total_samples"] == 100


def test_the_command_exits_with_mains_status(job_dir, tok):
    """``python -m mintdim_beam.cli`` (the console script's entry): 0 after a build, 2 on
    a bad job, with the build's output complete before the quick exit."""
    import subprocess
    import sys

    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model"), on_overflow="truncate"),
                                      encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mintdim_beam.cli", "build", "job.yaml"],
                          capture_output=True, text=True, cwd=job_dir)
    assert done.returncode == 0, done.stderr
    assert "[unit-build] done output=./out/a" in done.stdout
    out = OutputDir(job_dir / "out" / "a")
    assert out.stats["total_samples"] == 2
    out.check_layout()
    (job_dir / "bad.yaml").write_text(_job_yaml(tok("sp_unigram.model"), sections=("source", "run")),
                                      encoding="utf-8")
    failed = subprocess.run([sys.executable, "-m", "mintdim_beam.cli", "build", "bad.yaml"],
                            capture_output=True, text=True, cwd=job_dir)
    assert failed.returncode == 2
    assert "[english] PipelineValidationError" in failed.stderr and "Traceback" not in failed.stderr
