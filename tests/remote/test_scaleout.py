"""Same bytes on every runner: in-memory, multi-process DirectRunner and Dask.

One corpus (two files, two outputs, about a hundred 1 KiB blocks, with duplicates,
bad records, UNK characters and overflow samples) is built once and checked against
the reference implementation; then the same job runs on every runner with other
``build_batch`` and block sizes, and every output file but ``build_info.json`` must be
byte-identical. The Dask runs use a local ``dask.distributed`` cluster of worker
processes started by a fixture.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from conftest import input_sizes, TESTDATA, assert_same_outputs, build_and_compare, run_pipeline, write_jsonl
from remote_fixtures import N_WORKERS
from mintdim_beam.beam.cores import usable_cores

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

SP = "sentencepiece"


def _corpus(directory: Path) -> dict:
    """The job's files and settings; the instructions file alone spans ~60 blocks."""
    rng = random.Random(20240611)
    instructions = textgen.instruction_records(rng, 250)
    for i in range(0, 250, 41):                 # exact duplicates, across blocks
        instructions.insert(i + 7, dict(instructions[i]))
    rows = [*instructions[:100], '{"instruction": "broken"', "   ", *instructions[100:],
            textgen.EMOJI_CJK_RECORD,
            [1, 2, 3]]
    chat = textgen.chat_records(rng, 150)
    chat.insert(60, {"prompt": "漢字 ✨", "response": "🙂"})
    chat.insert(90, dict(chat[10]))
    return dict(
        files=[write_jsonl(directory / "instructions.jsonl", rows), write_jsonl(directory / "chat.jsonl", chat)],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
                   "Người dùng: {prompt}\n\nTrợ lý: {response}"],
        tokenizer_kind=SP,
        tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
        sizes=[[32, 64, 96], [32, 64]],
        samples_per_shard=[9, 5],
        on_overflow="extend",
        on_bad_record="skip",
        on_template_unk="continue",
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus and its reference-checked build (in memory, 1 KiB blocks, batch 3)."""
    root = tmp_path_factory.mktemp("scaleout")
    job = _corpus(root)
    outputs = [str(root / "base" / "instructions"), str(root / "base" / "chat")]
    result = build_and_compare(root, output_dirs=outputs, block_size=1024, build_batch=[3], **job)
    stats = [o.stats for o in result.outputs]
    assert stats[0]["duplicate_groups"] >= 5 and stats[0]["bad_records"] == 2
    assert stats[0]["overflow_samples"] > 0 and stats[1]["samples_with_unk"] >= 1
    assert sum(s["shards"] for s in stats) > 20
    return root, job, outputs


def _build_elsewhere(root: Path, job: dict, name: str, **kwargs) -> list:
    outputs = [str(root / name / "instructions"), str(root / name / "chat")]
    run_pipeline(output_dirs=outputs, **job, **kwargs)
    return outputs


def _assert_same(base: list, other: list) -> None:
    for a, b in zip(base, other):
        assert_same_outputs(a, b)


@pytest.mark.parametrize("name, build_batch, block_size, options", [
    ("memory", [64, 5], 4096, None),
    ("multi2", [5], 1024, ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
    ("multi4", [1000, 2], 2048, ["--direct_running_mode=multi_processing", "--direct_num_workers=4"]),
])
def test_direct_runner_modes_give_identical_bytes(corpus, name, build_batch, block_size, options):
    root, job, base = corpus
    other = _build_elsewhere(root, job, name, build_batch=build_batch, block_size=block_size, options=options)
    _assert_same(base, other)
    if options:
        info = json.loads(Path(other[0], "build_info.json").read_text())
        assert info["direct_running_mode"] == "multi_processing"
        assert info["direct_num_workers"] == int(options[1].split("=")[1])


@pytest.mark.parametrize("name, options, words", [
    ("bpe_memory", None, False),
    ("bpe_multi2", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"], True),
])
def test_byte_level_bpe_word_encoder_gives_reference_bytes(tmp_path, name, options, words, monkeypatch):
    """In memory the tokenizer encodes; in worker processes the word-by-word encoder
    does (``accel.bpe_words``). Both match the reference, which only calls ``encode``."""
    job = _corpus(tmp_path)
    job.update(tokenizer_kind="hf_json", tokenizer_files=[str(TESTDATA / "hf_bytelevel_bpe.json")])
    outputs = [str(tmp_path / name / "instructions"), str(tmp_path / name / "chat")]
    result = build_and_compare(tmp_path, output_dirs=outputs, block_size=1024, build_batch=[4], options=options,
                               **job)
    assert result.build_info["bpe_word_encoder"] is (words or usable_cores() == 1)
    assert result.outputs[0].stats["duplicate_groups"] >= 5


@pytest.mark.parametrize("name, build_batch, block_size, extra", [
    ("dask", [7], 1024, []),
    ("dask_parts", [2, 50], 1500, ["--dask_npartitions=9"]),
])
def test_dask_runner_gives_identical_bytes(corpus, dask_cluster, name, build_batch, block_size, extra):
    from apache_beam.runners.dask.dask_runner import DaskRunner
    from distributed import Client, get_task_stream

    root, job, base = corpus
    address = dask_cluster.scheduler_address
    with Client(address) as client, get_task_stream(client) as stream:
        other = _build_elsewhere(root, job, name, build_batch=build_batch, block_size=block_size,
                                 runner=DaskRunner(), options=["--dask_client_address", address, *extra])
    _assert_same(base, other)
    info = json.loads(Path(other[0], "build_info.json").read_text())
    assert info["runner"] == "DaskRunner"
    # The DoFns ran as many tasks on several worker processes, not as one chain.
    dofn_workers = {t["worker"] for t in stream.data if "apply_dofn_to_bundle" in str(t["key"])}
    assert len(dofn_workers) >= 2


def test_dask_runner_by_name_from_the_cli(corpus, dask_cluster, tmp_path, capsys):
    """``mintdim-beam build job.yaml --runner DaskRunner --dask_client_address ...``."""
    from mintdim_beam.cli.commands import main

    root, job, base = corpus
    outputs = [str(tmp_path / "instructions"), str(tmp_path / "chat")]
    spec = {
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"type": SP, "files": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [11]},
        "output": {"dir": outputs, "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": "extend", "on_bad_record": "skip", "on_template_unk": "continue",
                "block_size": 2048},
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    assert main(["build", str(path), "--runner", "DaskRunner",
                 "--dask_client_address", dask_cluster.scheduler_address]) == 0
    _assert_same(base, outputs)
    # Dask reports no counters: the summary shows the bytes planned, not "0 B read".
    from mintdim_beam.launch import progress

    summary = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[unit-build] finished in ")]
    read = sum(os.path.getsize(f) for f in job["files"])
    assert len(summary) == 1 and f": {progress.format_size(read)} read at " in summary[0], summary


def test_dask_partitions_follow_the_cluster(tmp_path, dask_cluster):
    """Without --dask_npartitions the launcher asks the cluster for its thread count."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.dask.dask_runner import DaskOptions

    from mintdim_beam.launch import launcher
    from mintdim_beam import pipeline

    f = write_jsonl(tmp_path / "a.jsonl", [{"t": "x" * 100}] * 200)
    config = (pipeline("unit-build").source.jsonl(files=[f], fields=[["t"]], templates=["{t}"])
              .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
              .units(sizes=[[256]], build_batch=[8]).output.dir(str(tmp_path / "o"), samples_per_shard=[10])
              .config(block_size=1024))
    from mintdim_beam.core.blocks import plan_groups

    groups = plan_groups(config, input_sizes(config))     # the block plan, as the launcher makes it once
    assert len(groups) > 2 * N_WORKERS
    opts = PipelineOptions(["--dask_client_address", dask_cluster.scheduler_address])
    launcher._tune_for_runner(config, "DaskRunner", opts, groups)
    assert opts.view_as(DaskOptions).npartitions == 2 * N_WORKERS
    opts = PipelineOptions(["--dask_client_address", dask_cluster.scheduler_address, "--dask_npartitions=3"])
    launcher._tune_for_runner(config, "DaskRunner", opts, groups)
    assert opts.view_as(DaskOptions).npartitions == 3


def test_duplicate_search_split_into_digest_ranges_gives_identical_bytes(corpus, monkeypatch):
    """Many duplicate tasks (a few hashes each, rows written a few members at a time),
    merged at finalize: same bytes."""
    from mintdim_beam.beam import transforms
    from mintdim_beam.beam import write_stage
    from mintdim_beam.core import plan

    root, job, base = corpus
    monkeypatch.setattr(transforms, "DUPLICATE_TASK_BYTES", 37 * 64)
    monkeypatch.setattr(plan, "DUPLICATE_TASK_ROWS", 25)                  # a few ranges a task
    monkeypatch.setattr(write_stage, "DUPLICATE_MEMBERS_PER_CHUNK", 3)
    searched = []
    search = write_stage.find_duplicates

    def counted(config, task, hash_spills):
        searched.append((task.output, task.first, task.end))
        return search(config, task, hash_spills)

    monkeypatch.setattr(write_stage, "find_duplicates", counted)
    other = _build_elsewhere(root, job, "digest_ranges", build_batch=[16], block_size=1024)
    _assert_same(base, other)
    first_output = sorted(task[1:] for task in searched if task[0] == 0)
    assert len(first_output) >= 3 and any(end - first > 1 for first, end in first_output), first_output
    staged = json.loads(Path(other[0], "stats.json").read_text())
    assert staged["duplicate_groups"] >= 5
