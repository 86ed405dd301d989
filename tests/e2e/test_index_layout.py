"""``index_layout: parts``: the per-block indexes published as their blocks' parts.

A parts build holds the same shards and summaries as the single-file build of the same
job, and each per-block index's parts, concatenated in order, are byte for byte the
single file. Every consumer (the reader, ``verify``, ``inspect``, ``plan``, ``report``)
reads either layout alike.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from conftest import TESTDATA, build_and_compare, list_output_files, run_pipeline, write_jsonl

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

PER_BLOCK = ("sample_index.jsonl", "unk_index.jsonl", "overflow_index.jsonl", "bad_record_index.jsonl")


def _job(directory: Path) -> dict:
    rng = random.Random(11)
    rows = textgen.instruction_records(rng, 150)
    rows.insert(40, dict(rows[2]))                                     # a duplicate
    rows.insert(60, {"instruction": "漢字 🙂", "input": "", "output": "ok"})  # UNK tokens
    rows.insert(90, {"instruction": "long " * 120, "input": "", "output": "x"})   # overflow
    rows.append('{"broken": ')                                          # a bad record
    return dict(
        files=[write_jsonl(directory / "in.jsonl", rows)],
        fields=[["instruction", "input", "output"]],
        templates=["{instruction}\n{input}\n{output}"],
        tokenizer_kind="sentencepiece",
        tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
        sizes=[[48, 96]],
        samples_per_shard=[16],
        on_overflow="truncate",
        on_bad_record="skip",
        on_template_unk="continue",
        block_size=2048,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The same job built with one file per index and with parts."""
    tmp = tmp_path_factory.mktemp("layout")
    job = _job(tmp)
    single, parts = str(tmp / "single"), str(tmp / "parts")
    build_and_compare(tmp, output_dirs=single, **job)
    run_pipeline(output_dirs=parts, index_layout="parts", **job)
    return Path(single), Path(parts)


def test_parts_concatenate_to_the_single_files(built):
    single, parts = built
    a, b = list_output_files(single), list_output_files(parts)
    manifest = json.loads(b["manifest.json"])
    blocks = manifest["indexes"]["parts"]["sample_index.jsonl"]
    assert blocks > 5                                             # several blocks, so several parts
    assert manifest["indexes"] == {"layout": "parts", "parts": {name: blocks for name in PER_BLOCK}}
    for name in PER_BLOCK:
        stem = name[:-len(".jsonl")]
        names = [f"{stem}/part-{k:05d}.jsonl" for k in range(blocks)]
        assert sorted(n for n in b if n.startswith(stem + "/")) == names
        assert name not in b
        assert b"".join(b[n] for n in names) == a[name], name
        assert a[name]                                            # each index has rows here
    same = {n for n in a if not n.endswith(".jsonl") and n not in ("manifest.json", "build_info.json", "SHA256SUMS")}
    assert {n for n in same if a[n] != b[n]} == set()
    assert b["duplicate_index.jsonl"] == a["duplicate_index.jsonl"]   # stays one file
    sums = dict(reversed(line.split("  ", 1)) for line in b["SHA256SUMS"].decode().splitlines())
    data_files = {n for n in b if n not in ("manifest.json", "build_info.json", "SHA256SUMS") and not n.endswith(".md")}
    assert set(sums) == data_files
    assert all(sums[n] == hashlib.sha256(b[n]).hexdigest() for n in data_files)
    manifest_a = json.loads(a["manifest.json"])
    assert "indexes" not in manifest_a
    assert manifest["fingerprint"]["id"] != manifest_a["fingerprint"]["id"]   # another set of files
    assert {k: v for k, v in manifest.items() if k not in ("indexes", "fingerprint", "checksums")} == \
        {k: v for k, v in manifest_a.items() if k not in ("fingerprint", "checksums")}


def test_reader_and_verify_read_parts(built):
    from mintdim_beam.reader import dataset as reader
    from mintdim_beam.reader import verify

    single, parts = built
    a, b = reader.open_output(str(single)), reader.open_output(str(parts))
    assert len(b) == len(a) and b.sample_ids.tolist() == a.sample_ids.tolist()
    assert [s.payload.tolist() for s in b] == [s.payload.tolist() for s in a]
    assert b.sample(int(a.sample_ids[-1])).source_line == a.sample(int(a.sample_ids[-1])).source_line
    report = verify.verify_output(str(parts), tokenizer="manifest", sample_rows=0)
    listed = (parts / "SHA256SUMS").read_text().splitlines()
    assert report.problems == [] and report.checksummed == len(listed)
    assert sum("/part-" in line for line in listed) == 4 * b.manifest["indexes"]["parts"]["sample_index.jsonl"]


def test_cli_consumers_read_parts(built, tmp_path, capsys):
    from mintdim_beam.cli.commands import main

    single, parts = built
    outputs = {}
    for name, d in (("single", single), ("parts", parts)):
        got = []
        for args in (["inspect", str(d), "--sample-id", "60", "--json"],     # a sample with UNK rows
                     ["inspect", str(d), "--sample-id", "90", "--json"],     # a truncated sample
                     ["inspect", str(d), "--sample-id", "153"],               # the bad record's id
                     ["plan", str(d), "-k", "2", "--json"],
                     ["verify", str(d)]):
            code = main(args)
            captured = capsys.readouterr()
            got.append((code, (captured.out + captured.err).replace(str(d), "DIR")))
        assert main(["report", str(d), "-o", str(tmp_path / f"{name}.html")]) == 0
        capsys.readouterr()
        got.append((tmp_path / f"{name}.html").read_text(encoding="utf-8").replace(str(d), "DIR"))
        outputs[name] = got
    unk, truncated, bad, plan, checked, report = outputs["parts"]
    assert unk[0] == 0 and json.loads(unk[1])["unk"]["sample_id"] == 60            # from unk_index's parts
    assert truncated[0] == 0 and json.loads(truncated[1])["overflow"]["action"] == "truncate"
    assert "is a bad record" in bad[1] and "SourceParseError" in bad[1]             # bad_record_index's parts
    assert json.loads(plan[1])["notes"] == ["62 truncated samples counted at their original length, "
                                            "0 skipped samples added from overflow_index.jsonl"]
    assert checked[0] == 0
    assert outputs["parts"][:4] == outputs["single"][:4]                             # the same answers
    assert report == outputs["single"][5]


def test_verify_names_a_changed_or_missing_part(built, tmp_path):
    import shutil

    from mintdim_beam.reader import verify

    _, parts = built
    copy = tmp_path / "copy"
    shutil.copytree(parts, copy)
    victim = copy / "sample_index" / "part-00002.jsonl"
    data = bytearray(victim.read_bytes())
    data[data.index(b'"token_count":') + 14] ^= 1
    victim.write_bytes(bytes(data))
    (copy / "unk_index" / "part-00001.jsonl").unlink()
    found = verify.verify_output(str(copy))
    files = {p.file for p in found.problems}
    assert "sample_index/part-00002.jsonl" in files and "unk_index/part-00001.jsonl" in files
    messages = [p.message for p in found.problems if p.file == "unk_index/part-00001.jsonl"]
    assert "index file is missing" in messages


def test_index_layout_is_checked():
    from mintdim_beam import errors
    from mintdim_beam.core.config import run_settings

    with pytest.raises(errors.PipelineValidationError) as caught:
        run_settings({"index_layout": "part"})
    text = str(caught.value)
    assert "index_layout must be one of file, parts, got 'part'" in text
    assert "index_layout phải là một trong file, parts" in text


def test_job_file_and_flag_choose_the_layout(tmp_path, capsys):
    from mintdim_beam.cli.commands import main

    job = _job(tmp_path)
    spec = {
        "source": {"files": job["files"], "fields": job["fields"], "templates": job["templates"]},
        "tokenizer": {"sentencepiece": job["tokenizer_files"]},
        "units": {"sizes": job["sizes"], "build_batch": [8]},
        "output": {"dir": [str(tmp_path / "out")], "samples_per_shard": job["samples_per_shard"]},
        "run": {"on_overflow": "truncate", "on_bad_record": "skip", "on_template_unk": "continue",
                "block_size": 4096, "index_layout": "parts"},
    }
    (tmp_path / "job.json").write_text(json.dumps(spec), encoding="utf-8")
    assert main(["build", str(tmp_path / "job.json")]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["indexes"]["layout"] == "parts" and (tmp_path / "out" / "sample_index" / "part-00000.jsonl").exists()
    spec["output"]["dir"] = [str(tmp_path / "flag")]
    (tmp_path / "job.json").write_text(json.dumps(spec), encoding="utf-8")
    assert main(["build", str(tmp_path / "job.json"), "--index-layout", "file"]) == 0   # the flag wins
    assert (tmp_path / "flag" / "sample_index.jsonl").read_bytes() == b"".join(
        (tmp_path / "out" / "sample_index" / f"part-{k:05d}.jsonl").read_bytes()
        for k in range(manifest["indexes"]["parts"]["sample_index.jsonl"]))
    capsys.readouterr()


def test_index_files_the_layout_does_not_name_are_problems(built, tmp_path):
    """A part beyond the manifest's count and a single-file index beside the parts folder
    are read by nothing, so verify must list them rather than pass them unseen."""
    import shutil

    from mintdim_beam.reader import verify

    d = tmp_path / "parts"
    shutil.copytree(built[1], d)
    count = json.loads((d / "manifest.json").read_text())["indexes"]["parts"]["sample_index.jsonl"]
    shutil.copy(d / "sample_index" / "part-00000.jsonl", d / "sample_index" / f"part-{count:05d}.jsonl")
    shutil.copy(built[0] / "sample_index.jsonl", d / "sample_index.jsonl")
    assert [str(p) for p in verify.verify_output(str(d)).problems] == [
        f"sample_index/part-{count:05d}.jsonl: not one of the sample_index.jsonl parts manifest.json counts",
        "sample_index.jsonl: stray file: the manifest publishes this index as parts in sample_index/"]
