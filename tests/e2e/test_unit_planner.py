"""The unit planner: an exact padding optimum, and the histograms it is computed from.

The dynamic programme is checked against brute force over every size list on small
histograms; the histograms against what the real build wrote.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from test_reader import DEMO_MODEL, TEMPLATE, dataset_rows, make_dataset

from conftest import read_jsonl, write_jsonl
from mintdim_beam.cli.consumer_commands import main as consumer_main
from mintdim_beam.reader.unit_planner import LengthHistogram, candidate_sizes, dataset_length_histogram, fit, optimal_sizes
from mintdim_beam.core.plan import merge_counts


def brute_force(hist: LengthHistogram, k: int, multiple: int) -> int:
    """Least padding over every list of at most k multiples of ``multiple`` covering the max."""
    top = -(-max(hist.max_length, 1) // multiple) * multiple
    sizes = list(range(multiple, top, multiple))
    best = None
    for r in range(k):
        for combo in itertools.combinations(sizes, r):
            pad = fit(hist, combo + (top,)).pad_tokens
            best = pad if best is None else min(best, pad)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_dp_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        lengths = rng.integers(0, 28, size=int(rng.integers(1, 30)))
        hist = LengthHistogram.from_lengths(lengths)
        k = int(rng.integers(1, 5))
        multiple = int(rng.choice([1, 1, 2, 3, 8]))
        sizes = optimal_sizes(hist, k, multiple)
        got = fit(hist, sizes)
        assert got.overflow_samples == 0
        assert len(sizes) <= k and list(sizes) == sorted(set(sizes))
        assert all(s % multiple == 0 for s in sizes)
        assert got.pad_tokens == brute_force(hist, k, multiple), (lengths.tolist(), k, multiple, sizes)


def test_known_optima():
    hist = LengthHistogram.from_lengths([1, 2, 3, 10])
    assert optimal_sizes(hist, 1) == (10,)
    assert optimal_sizes(hist, 2) == (3, 10)               # 2 + 1 padding
    assert fit(hist, (3, 10)).pad_tokens == 3
    assert optimal_sizes(hist, 4) == (1, 2, 3, 10)         # no padding at all
    assert optimal_sizes(hist, 9) == (1, 2, 3, 10)         # fewer candidates than K
    # many short samples and a few long ones: the split follows the mass
    hist = LengthHistogram.from_counts({10: 100, 11: 1, 50: 5, 100: 1})
    assert optimal_sizes(hist, 2) == (10, 100)             # 89 + 5 * 50 = 339 < 350 for (11, 100)
    assert fit(hist, (10, 100)).pad_tokens == 339
    assert optimal_sizes(hist, 3) == (10, 50, 100)         # the lone 11 pads to 50: 39
    assert fit(hist, (10, 50, 100)).pad_tokens == 39
    assert optimal_sizes(LengthHistogram.from_lengths([5, 13, 17]), 2, multiple=8) == (8, 24)
    assert candidate_sizes(LengthHistogram.from_lengths([0, 5, 13]), 8).tolist() == [8, 16]


def test_fit_matches_build_stats(tmp_path):
    out = make_dataset(tmp_path)
    rows = read_jsonl(Path(out) / "sample_index.jsonl")
    stats = json.loads((Path(out) / "stats.json").read_text())
    manifest = json.loads((Path(out) / "manifest.json").read_text())
    hist = LengthHistogram.from_lengths([r["token_count"] for r in rows])
    f = fit(hist, manifest["units"]["sizes"])
    assert f.pad_tokens == stats["pad_tokens"]
    assert f.padding_ratio == pytest.approx(stats["padding_ratio"])
    assert [u["samples"] for u in f.per_unit()] == list(stats["unit_distribution"].values())
    # the truncated sample is counted at its original length
    restored, info = dataset_length_histogram(out)
    overflow = read_jsonl(Path(out) / "overflow_index.jsonl")
    assert info["truncated_restored"] == 1 and restored.samples == hist.samples
    assert restored.max_length == overflow[0]["token_count"] > max(manifest["units"]["sizes"])


def test_job_histogram_runs_the_real_tokenization(tmp_path):
    """The Beam histogram of a job equals the lengths a build (extend, nothing cut) writes."""
    out = make_dataset(tmp_path, on_overflow="extend")
    built = sorted(r["token_count"] for r in read_jsonl(Path(out) / "sample_index.jsonl"))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({
        "source": {"files": [str(tmp_path / "out.jsonl")], "fields": [["q", "a"]], "templates": [TEMPLATE]},
        "tokenizer": {"type": "sentencepiece", "files": [DEMO_MODEL]},
        "units": {"sizes": [[24, 48, 96]], "build_batch": [5]},
        "output": {"dir": str(tmp_path / "never_built"), "samples_per_shard": [4]},
        "run": {"block_size": 1024},
    }))
    from mintdim_beam.launch.api import load_job_file
    from mintdim_beam.core.config import resolve
    from mintdim_beam.launch.launcher import length_histograms

    spec, _ = load_job_file(str(job))
    config = resolve(spec, block_size=1024)
    (counts, bad), = length_histograms(config).values()
    hist = LengthHistogram.from_counts(counts)
    assert bad == 1
    assert sorted(np.repeat(hist.lengths, hist.counts).tolist()) == built
    assert not (tmp_path / "never_built").exists()


def test_merge_counts_is_a_combiner():
    parts = [({3: 1, 5: 2}, 0), ({5: 1}, 1), ({}, 0)]
    assert merge_counts(parts) == ({3: 1, 5: 3}, 1)
    assert merge_counts([merge_counts(parts[:2]), parts[2]]) == merge_counts(parts)


def test_plan_cli_from_dataset_and_job(tmp_path, capsys):
    out = make_dataset(tmp_path)
    assert consumer_main(["plan", out, "-k", "3", "--multiple", "8"]) == 0
    text = capsys.readouterr().out
    assert "[plan] current   sizes=24,48,96 padding_ratio=" in text
    assert "[plan] suggested sizes=" in text and "multiple of 8" in text
    assert consumer_main(["plan", str(Path(out) / "sample_index.jsonl"), "--json", "--sizes", "32,64,128"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["current"]["sizes"] == [32, 64, 128] and data["k"] == 3
    assert data["suggested"]["pad_tokens"] <= data["current"]["pad_tokens"]
    assert data["samples"] == 26

    src = write_jsonl(tmp_path / "plan.jsonl", [r for r in dataset_rows() if isinstance(r, dict)])
    job = tmp_path / "job.yaml"
    job.write_text(
        f"source: {{files: [{src}], fields: [[q, a]], templates: [{json.dumps(TEMPLATE)}]}}\n"
        f"tokenizer: {{type: sentencepiece, files: [{DEMO_MODEL}]}}\n"
        "units: {sizes: [[24, 48, 96]], build_batch: [8]}\n"
        f"output: {{dir: {tmp_path / 'not_built'}, samples_per_shard: [4]}}\n")
    assert consumer_main(["plan", str(job), "-k", "2"]) == 0
    text = capsys.readouterr().out
    assert f"[plan] output={tmp_path / 'not_built'} samples=26" in text
    assert "[plan] overflow: 1 of 26 samples are longer than 96, the largest current size" in text


def test_plan_compares_current_and_suggested_sizes_on_the_same_samples(tmp_path, capsys):
    """With overflow, the current sizes pad only the samples that fit: so does one suggestion."""
    out = make_dataset(tmp_path)          # one sample above 96, truncated
    rows = read_jsonl(Path(out) / "sample_index.jsonl")
    over = read_jsonl(Path(out) / "overflow_index.jsonl")
    lengths = {r["sample_id"]: r["token_count"] for r in rows}
    lengths.update({r["sample_id"]: r["token_count"] for r in over})
    fitting = [n for n in lengths.values() if n <= 96]
    assert len(lengths) == 26 and len(fitting) == 25
    current_pad = sum(min(s for s in (24, 48, 96) if s >= n) - n for n in fitting)
    same_pad = brute_force(LengthHistogram.from_lengths(fitting), 3, 1)
    all_pad = brute_force(LengthHistogram.from_lengths(list(lengths.values())), 3, 1)
    assert same_pad < current_pad

    assert consumer_main(["plan", out]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == ("[plan] overflow: 1 of 26 samples are longer than 96, the largest current size; "
                        "the current sizes are measured on the 25 samples that fit")
    assert lines[3].startswith("[plan] current   sizes=24,48,96 padding_ratio=")
    assert lines[3].endswith(f" pad_tokens={current_pad} on the 25 samples that fit")
    assert lines[4].startswith("[plan] suggested sizes=")
    assert lines[4].endswith(f" pad_tokens={same_pad} on the same 25 samples (K=3)")
    assert lines[5].startswith("[plan] padding ") and f": {current_pad - same_pad} fewer pad tokens" in lines[5]
    last = [l for l in lines if l.startswith("[plan] suggested")][-1]
    assert last.endswith(f" pad_tokens={all_pad} on all 26 samples, none overflow (K=3)")

    assert consumer_main(["plan", out, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["overflow_samples"] == 1
    assert data["current"]["pad_tokens"] == current_pad
    assert data["suggested_same_samples"]["pad_tokens"] == same_pad
    assert max(data["suggested_same_samples"]["sizes"]) <= 96
    assert sum(u["samples"] for u in data["suggested_same_samples"]["units"]) == 25
    assert data["suggested"]["pad_tokens"] == all_pad and data["suggested"]["overflow_samples"] == 0


def test_plan_cli_errors(tmp_path, capsys):
    assert consumer_main(["plan", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    out = make_dataset(tmp_path)
    assert consumer_main(["plan", out, "--sizes", "9,3"]) == 2
    assert "ascending" in capsys.readouterr().err


def _plan_job(tmp_path, files) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(
        f"source: {{files: {json.dumps(files)}, fields: [[q, a]], templates: [{json.dumps(TEMPLATE)}]}}\n"
        f"tokenizer: {{type: sentencepiece, files: [{DEMO_MODEL}]}}\n"
        "units: {sizes: [[24, 48, 96]], build_batch: [8]}\n"
        f"output: {{dir: {tmp_path / 'not_built'}, samples_per_shard: [4]}}\n")
    return job


def test_plan_of_compressed_files_and_patterns_is_the_plan_of_the_plain_file(tmp_path, capsys):
    """plan read a .gz file's stored bytes as lines (every one a bad record: "no samples
    to plan for", exit 0) and did not expand patterns (a missing-file error)."""
    import gzip

    rows = [r for r in dataset_rows() if isinstance(r, dict)]
    src = write_jsonl(tmp_path / "plain" / "all.jsonl", rows)
    assert consumer_main(["plan", str(_plan_job(tmp_path, [src])), "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    (tmp_path / "parts").mkdir()
    raw = Path(src).read_bytes().split(b"\n")
    (tmp_path / "parts" / "p0.jsonl.gz").write_bytes(gzip.compress(b"\n".join(raw[:10]) + b"\n"))
    (tmp_path / "parts" / "p1.jsonl").write_bytes(b"\n".join(raw[10:]))
    assert consumer_main(["plan", str(_plan_job(tmp_path, [str(tmp_path / "parts" / "p*")])), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == want and got["samples"] == 26


@pytest.mark.parametrize("damage", ["truncated", "fifo"])
def test_plan_of_a_damaged_or_odd_input_fails(tmp_path, capsys, damage):
    import gzip
    import os

    if damage == "truncated":
        rows = [r for r in dataset_rows() if isinstance(r, dict)] * 20
        whole = gzip.compress(Path(write_jsonl(tmp_path / "all.jsonl", rows)).read_bytes())
        src = tmp_path / "cut.jsonl.gz"
        src.write_bytes(whole[:len(whole) // 2])
        expect = ["[english] SourceParseError", f"File: {src}", "truncated", "[vietnam] SourceParseError"]
    else:
        src = tmp_path / "pipe.jsonl"
        os.mkfifo(src)
        expect = ["[english] MintDimFileNotFoundError", "named pipe (FIFO)", "[vietnam] MintDimFileNotFoundError"]
    assert consumer_main(["plan", str(_plan_job(tmp_path, [str(src)]))]) == 2
    captured = capsys.readouterr()
    assert all(text in captured.err for text in expect), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
