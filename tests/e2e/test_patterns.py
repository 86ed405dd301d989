"""Entries of ``files`` that are glob patterns, expanded through ``FileSystems.match``.

Each match takes its entry's settings (the 1-or-N mapping counts entries as written),
matches are sorted by path, and the build is the build of the expanded list written out
by hand: the same bytes, manifest included.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import (TESTDATA, assert_nothing_published, assert_same_outputs, build_and_compare, read_jsonl,
                      run_pipeline, write_jsonl)
from mintdim_beam import errors

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

SP = str(TESTDATA / "sp_unigram.model")


def _rows(seed: int, n: int) -> list:
    import random

    return textgen.instruction_records(random.Random(seed), n)


def _corpus(root: Path) -> dict:
    """Files written in an order that is not their sorted order, some compressed."""
    data = root / "data"
    for name, seed in (("c4-002.jsonl.gz", 2), ("c4-000.jsonl.gz", 0), ("c4-001.jsonl.gz", 1)):
        data.mkdir(parents=True, exist_ok=True)
        raw = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _rows(seed, 12)).encode()
        (data / name).write_bytes(gzip.compress(raw))
    (data / "notes.txt").write_text("not an input\n")
    (data / "c4-dir.jsonl.gz").mkdir()          # a directory the pattern also matches
    chat = write_jsonl(root / "chat.jsonl", [{"instruction": "Hi", "input": "", "output": "Hello!"}] * 3)
    return {"pattern": str(data / "c4-*.jsonl.gz"),
            "matches": [str(data / f"c4-00{k}.jsonl.gz") for k in range(3)],
            "chat": chat}


def _job(files, templates, outs, sizes, **extra) -> dict:
    job = dict(files=files, fields=[["instruction", "input", "output"]], templates=templates,
               tokenizer_kind="sentencepiece", tokenizer_files=[SP], sizes=sizes, samples_per_shard=[8],
               output_dirs=outs, on_overflow="truncate", on_template_unk="continue", build_batch=[4])
    job.update(extra)
    return job


def test_pattern_build_is_the_build_of_its_matches(tmp_path):
    found = _corpus(tmp_path)
    templates = ["{instruction}\n{input}\n{output}", "User: {instruction}{input}\nBot: {output}"]
    sizes = [[32, 64], [16, 32]]
    outs = [str(tmp_path / "by_pattern" / "c4"), str(tmp_path / "by_pattern" / "chat")]
    # Two entries as written: two templates, sizes and outputs map onto them.
    run_pipeline(**_job([found["pattern"], found["chat"]], templates, outs, sizes))
    listed = found["matches"] + [found["chat"]]
    by_hand = [str(tmp_path / "by_hand" / "c4"), str(tmp_path / "by_hand" / "chat")]
    run_pipeline(**_job(listed, [templates[0]] * 3 + [templates[1]], [by_hand[0]] * 3 + [by_hand[1]],
                        [sizes[0]] * 3 + [sizes[1]]))
    for a, b in zip(outs, by_hand):
        assert_same_outputs(a, b)
    manifest = json.loads((Path(outs[0]) / "manifest.json").read_bytes())
    assert manifest["source"]["files"] == found["matches"]
    rows = read_jsonl(Path(outs[0]) / "sample_index.jsonl")
    order = [r["source_file"] for r in sorted(rows, key=lambda r: r["sample_id"])]
    assert order == sorted(order) and sorted(set(order)) == found["matches"]


def test_pattern_matching_nothing_is_a_missing_file(tmp_path):
    found = _corpus(tmp_path)
    pattern = str(tmp_path / "data" / "c4-*.json.zst")
    out = tmp_path / "out"
    with pytest.raises(errors.MintDimFileNotFoundError) as info:
        run_pipeline(**_job([found["pattern"], pattern], ["{instruction}{input}{output}"], str(out), [[32]]))
    assert info.value.path == pattern and info.value.context == "source"
    assert pattern in info.value.english and pattern in info.value.vietnamese
    assert_nothing_published(out)


@pytest.mark.parametrize("second", ["overlapping pattern", "same pattern", "named file", "relative name"])
def test_a_file_matched_by_two_entries_is_refused(tmp_path, monkeypatch, second):
    """Two entries that both give one file used to read it twice, doubling its samples
    with exit 0. A file written out twice by name is still read twice, as written."""
    found = _corpus(tmp_path)
    twice = found["matches"][1]
    other = {"overlapping pattern": str(tmp_path / "data" / "c4-00[12].jsonl.gz"), "same pattern": found["pattern"],
             "named file": twice, "relative name": "data/c4-001.jsonl.gz"}[second]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(errors.PipelineValidationError) as info:
        run_pipeline(**_job([found["pattern"], other], ["{instruction}{input}{output}"], str(out), [[32]]))
    english, vietnamese = info.value.english, info.value.vietnamese
    named = {"same pattern": found["matches"][0], "relative name": other}.get(second, twice)   # as the entry gives it
    assert (f"Problem: {named} is matched by two entries of source.files, {found['pattern']!r} and {other!r}, "
            f"so its samples would be read twice") in english
    assert f"Vấn đề: {named} khớp với hai mục của source.files" in vietnamese
    assert_nothing_published(out)
    result = run_pipeline(**_job([twice, twice], ["{instruction}{input}{output}"], str(tmp_path / "named"), [[32]]))
    assert result.outputs[0].stats["total_samples"] == 2 * 12


def test_mapping_counts_the_entries_as_written(tmp_path):
    """Two entries, one a pattern of three files: two templates map, three do not."""
    found = _corpus(tmp_path)
    two = ["{instruction}{input}{output}", "{output}{input}{instruction}"]
    result = run_pipeline(**_job([found["pattern"], found["chat"]], two,
                                 [str(tmp_path / "ok" / "c4"), str(tmp_path / "ok" / "chat")], [[32]]))
    assert [o.stats["total_samples"] for o in result.outputs] == [3 * 12, 3]
    with pytest.raises(errors.TemplateMappingError) as info:
        run_pipeline(**_job([found["pattern"], found["chat"]], ["{instruction}{input}{output}"] * 3,
                            str(tmp_path / "out"), [[32]]))
    assert (info.value.files, info.value.got) == (2, 3)


def test_pattern_on_the_command_line(tmp_path, monkeypatch, capsys):
    from mintdim_beam.cli.commands import main

    monkeypatch.chdir(tmp_path)
    _corpus(tmp_path)
    Path("job.yaml").write_text(
        'source:\n  files: ["data/c4-*.jsonl.gz"]\n  fields: [["instruction", "input", "output"]]\n'
        '  templates: ["{instruction}\n{input}\n{output}"]\n'
        f'tokenizer:\n  sentencepiece: ["{SP}"]\n'
        'units:\n  sizes: [[64]]\n  build_batch: [4]\n'
        'output:\n  dir: ["out"]\n  samples_per_shard: [8]\n'
        'run:\n  on_overflow: truncate\n  on_template_unk: continue\n', encoding="utf-8")
    assert main(["build", "job.yaml"]) == 0, capsys.readouterr().err
    rows = read_jsonl(tmp_path / "out" / "sample_index.jsonl")
    assert sorted({r["source_file"] for r in rows}) == [f"data/c4-00{k}.jsonl.gz" for k in range(3)]
    Path("job.yaml").write_text(Path("job.yaml").read_text().replace("c4-*", "c5-*").replace('"out"', '"out2"'))
    code = main(["build", "job.yaml"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "[english] MintDimFileNotFoundError" in err and "data/c5-*.jsonl.gz" in err
    assert_nothing_published(tmp_path / "out2")


def test_pattern_on_s3(s3_remote, tmp_path):
    found = _corpus(tmp_path)
    prefix = f"{s3_remote.root}/patterns"
    for path in found["matches"][::-1]:
        s3_remote.upload(path, f"patterns/in/{Path(path).name}")
    s3_remote.upload(str(tmp_path / "data" / "notes.txt"), "patterns/in/notes.txt")
    template = ["{instruction}\n{input}\n{output}"]
    out = f"{prefix}/out"
    run_pipeline(**_job([f"{prefix}/in/c4-*.jsonl.gz"], template, out, [[32, 64]], options=s3_remote.options))
    local = tmp_path / "local"
    run_pipeline(**_job(found["matches"], template, str(local), [[32, 64]]))
    got = s3_remote.download_tree(out)
    pairs = [(f"{prefix}/in/{Path(p).name}", p) for p in found["matches"]]

    def local_paths(data: bytes) -> bytes:
        for remote_path, local_path in pairs:
            data = data.replace(remote_path.encode(), local_path.encode())
        return data

    for name in ("sample_index.jsonl", "stats.json", "histogram.json"):
        assert local_paths(got[name]) == (local / name).read_bytes(), name
    manifest = json.loads(got["manifest.json"])
    assert manifest["source"]["files"] == [remote for remote, _ in pairs]



def test_many_files_in_an_s3_folder(s3_remote, tmp_path):
    """20 files of one folder: sizes and existence come from listing the folder; a
    listed file that is missing is the missing-file error naming it."""
    local = []
    for k in range(20):
        path = write_jsonl(tmp_path / "in" / f"part-{k:03d}.jsonl", _rows(100 + k, 2))
        s3_remote.upload(path, f"many/in/part-{k:03d}.jsonl")
        local.append(path)
    prefix = f"{s3_remote.root}/many"
    template = ["{instruction}\n{input}\n{output}"]
    remote = [f"{prefix}/in/part-{k:03d}.jsonl" for k in range(20)]
    missing = f"{prefix}/in/part-007b.jsonl"
    out = tmp_path / "unused"
    with pytest.raises(errors.MintDimFileNotFoundError) as info:
        run_pipeline(**_job(remote[:8] + [missing] + remote[8:], template, f"{prefix}/out-missing", [[64]],
                            options=s3_remote.options))
    assert info.value.path == missing
    run_pipeline(**_job([f"{prefix}/in/part-*.jsonl"], template, f"{prefix}/out", [[64]], options=s3_remote.options))
    run_pipeline(**_job(local, template, str(out), [[64]]))
    got = s3_remote.download_tree(f"{prefix}/out")
    rows = got["sample_index.jsonl"]
    for r, l in zip(remote, local):
        rows = rows.replace(r.encode(), l.encode())
    assert rows == (out / "sample_index.jsonl").read_bytes()


def _drop(row: dict, *names) -> dict:
    return {k: v for k, v in row.items() if k not in names}


def test_many_small_files_keep_threads_bounded(tmp_path):
    """1,200 files of three lines, named by one pattern: the process's thread count
    stays bounded (an encoder, hence its encode threads, per set of settings, not per
    file), and the output is the one-file build's, file names and line numbers aside."""
    import threading

    import psutil

    rows = _rows(5, 3600)
    rows[100] = dict(rows[7])                           # a duplicate across files
    parts = tmp_path / "parts"
    parts.mkdir()
    for k in range(1200):
        write_jsonl(parts / f"part-{k:05d}.jsonl", rows[3 * k:3 * k + 3])
    one = write_jsonl(tmp_path / "one.jsonl", rows)
    template = ["{instruction}\n{input}\n{output}"]
    run_pipeline(**_job([one], template, str(tmp_path / "one"), [[32, 64]], build_batch=[64]))

    peak, done = [0], threading.Event()

    def sample():
        me = psutil.Process()
        while not done.is_set():
            peak[0] = max(peak[0], me.num_threads())
            done.wait(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        run_pipeline(**_job([str(parts / "part-*.jsonl")], template, str(tmp_path / "many"), [[32, 64]],
                            build_batch=[64]))
    finally:
        done.set()
        sampler.join()
    assert peak[0] < 100, f"{peak[0]} threads at peak"

    one_dir, many_dir = tmp_path / "one", tmp_path / "many"
    for name in ("stats.json", "histogram.json", "length_field.json"):
        assert (many_dir / name).read_bytes() == (one_dir / name).read_bytes(), name
    shards = sorted(p.relative_to(one_dir).as_posix() for p in one_dir.glob("unit_*/*.bin"))
    assert shards and shards == sorted(p.relative_to(many_dir).as_posix() for p in many_dir.glob("unit_*/*.bin"))
    for name in shards:
        assert (many_dir / name).read_bytes() == (one_dir / name).read_bytes(), name
    a = read_jsonl(one_dir / "sample_index.jsonl")
    b = read_jsonl(many_dir / "sample_index.jsonl")
    assert [_drop(r, "source_file", "source_line") for r in b] == [_drop(r, "source_file", "source_line") for r in a]
    assert [(r["source_file"], r["source_line"]) for r in b] == [
        (str(parts / f"part-{(r['source_line'] - 1) // 3:05d}.jsonl"),
         (r["source_line"] - 1) % 3 + 1) for r in a]
    groups = read_jsonl(many_dir / "duplicate_index.jsonl")
    assert groups and [[m["sample_id"] for m in g["samples"]] for g in groups] == [
        [m["sample_id"] for m in g["samples"]] for g in read_jsonl(one_dir / "duplicate_index.jsonl")]


def test_a_file_named_with_glob_characters_is_that_file(tmp_path):
    """``part[1].jsonl`` read as a pattern matched ``part1.jsonl`` beside it: exit 0 with
    another file's samples (or, alone, a missing-file error for a file that is there)."""
    named = write_jsonl(tmp_path / "part[1].jsonl", _rows(5, 6))
    write_jsonl(tmp_path / "part1.jsonl", _rows(6, 9))
    build_and_compare(tmp_path, **_job([named], ["{instruction}\n{input}\n{output}"], "named", [[32, 64]]))
    # beside a pattern that matches the other file only
    result = run_pipeline(**_job([named, str(tmp_path / "part?.jsonl")], ["{instruction}\n{input}\n{output}"],
                                 str(tmp_path / "both"), [[32, 64]]))
    rows = read_jsonl(Path(result.outputs[0].path) / "sample_index.jsonl")
    files = [r["source_file"] for r in sorted(rows, key=lambda r: r["sample_id"])]
    assert files == [named] * 6 + [str(tmp_path / "part1.jsonl")] * 9


def test_a_pattern_without_a_folder_matches_in_the_current_directory(tmp_path, monkeypatch):
    """``*.jsonl`` matched nothing (Beam lists the folder before the first glob character)."""
    monkeypatch.chdir(tmp_path)
    write_jsonl("b.jsonl", _rows(1, 5))
    write_jsonl("a.jsonl", _rows(2, 7))
    Path("a.jsonl.d").mkdir()
    build_and_compare(tmp_path, **_job(["a.jsonl", "b.jsonl"], ["{instruction}{output}"], "by_hand", [[32, 64]],
                                       fields=[["instruction", "output"]]))
    run_pipeline(**_job(["*.jsonl"], ["{instruction}{output}"], str(tmp_path / "by_pattern"), [[32, 64]],
                        fields=[["instruction", "output"]]))
    assert_same_outputs(tmp_path / "by_hand", tmp_path / "by_pattern")
    manifest = json.loads((tmp_path / "by_pattern" / "manifest.json").read_bytes())
    assert manifest["source"]["files"] == ["a.jsonl", "b.jsonl"]
