"""Many small input files: encode groups (``blocks.group_blocks``) and shared spills.

Consecutive whole small files of an output are read and encoded by one task and spill
into one file (``encode_stage.SpillBuffer``). The build must be the same bytes as the
reference's, on every runner, and as the same data in one file, the source columns
aside.
"""

from __future__ import annotations

import gzip
import json
import random

from conftest import (input_sizes, TESTDATA, assert_same_outputs, build_and_compare, list_output_files, read_jsonl,
                      run_pipeline)
from mintdim_beam.core import blocks
from mintdim_beam.core.block_result import Figures
from mintdim_beam.core.config import JobSpec, Policies, resolve
from mintdim_beam.beam.encode_stage import BlockSpill, SpillBuffer
from mintdim_beam.core.plan import BlockRef, BlockSummary
from mintdim_beam.format import inputs

import textgen  # tests/testdata/textgen.py (conftest puts tests/testdata on the import path)

FIELDS = [["instruction", "input", "output"]]
TEMPLATES = ["{instruction}\n{input}\n{output}"]


def _planned(config):
    """``(config, its inputs' sizes)``: the arguments of ``plan_groups``."""
    return config, input_sizes(config)


def _sized(path, size: int) -> str:
    """A file of ``size`` bytes (blank lines: only its size is planned on)."""
    path.write_bytes(b"\n" * size)
    return str(path)


def _config(files: list, block_size: int, output_dirs=None):
    spec = JobSpec(files=files, fields=FIELDS * len(files), templates=TEMPLATES * len(files),
                   tokenizer_kind="sentencepiece", tokenizer_files=[str(TESTDATA / "sp_unigram.model")],
                   sizes=[[64]], build_batch=[4], output_dirs=output_dirs or ["out"], samples_per_shard=[8])
    return resolve(spec, Policies(), block_size)


def test_whole_small_files_of_an_output_are_grouped_up_to_a_block(tmp_path):
    gz = tmp_path / "e.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"instruction": "a", "input": "", "output": "b"}\n' * 40, mtime=0))
    weight = gz.stat().st_size * inputs.COMPRESSION_RATIO
    assert 250 <= weight <= 370
    files = [_sized(tmp_path / "a.jsonl", 300), _sized(tmp_path / "b.jsonl", 300),
             _sized(tmp_path / "c.jsonl", 300),
             _sized(tmp_path / "big.jsonl", 2500),            # three blocks: each a group alone
             _sized(tmp_path / "d.jsonl", 300), str(gz),
             _sized(tmp_path / "empty.jsonl", 0),
             _sized(tmp_path / "f.jsonl", 350),               # 300 + weight + 0 + 350 <= 1024
             _sized(tmp_path / "g.jsonl", 200),               # ... + 200 > 1024: a new group
             _sized(tmp_path / "whole.jsonl", 1024),          # a block's worth: alone
             _sized(tmp_path / "h.jsonl", 10)]
    config = _config(files, 1024)
    refs = blocks.plan_blocks(config, input_sizes(config))
    groups = blocks.group_blocks(config, refs)
    assert [ref for g in groups for ref in g.blocks] == refs
    assert [[(r.file, r.block) for r in g.blocks] for g in groups] == [
        [(0, 0), (1, 0), (2, 0)],
        [(3, 0)], [(3, 1)], [(3, 2)],
        [(4, 0), (5, 0), (6, 0), (7, 0)],
        [(8, 0)],
        [(9, 0)],
        [(10, 0)],
    ]
    assert [g.key for g in groups][:2] == [(0, 0), (3, 0)]
    # A group never spans two outputs.
    two = _config(files[:3], 1024, output_dirs=["o1", "o1", "o2"])
    assert [[r.file for r in g.blocks] for g in blocks.plan_groups(two, input_sizes(two))] == [[0, 1], [2]]
    wide = [_sized(tmp_path / f"w{k}.jsonl", size) for k, size in enumerate((600, 600, 400))]
    assert [[r.file for r in g.blocks] for g in blocks.plan_groups(*_planned(_config(wide, 1024)))] == [[0], [1, 2]]


def _spill(file: int, size: int) -> BlockSpill:
    summary = BlockSummary(file, 0, 1, 1, {}, {}, (), 0, 0, None)
    return BlockSpill(BlockRef(file, 0, 0, 1), {"meta": [b"x" * size]}, summary, Figures(), size)


def test_spill_files_are_cut_in_feed_order_whatever_order_blocks_finish_in():
    sizes = [300, 500, 100, 900, 50, 60, 70]

    def cuts(finish_order):
        buffer = SpillBuffer(800)
        for f in range(len(sizes)):
            buffer.expect(BlockRef(f, 0, 0, 1))
        written = []
        for k, f in enumerate(finish_order):
            buffer.add(BlockRef(f, 0, 0, 1), _spill(f, sizes[f]))
            if k == len(finish_order) - 1:
                buffer.fed = True
            written += [[s.ref.file for s in run] for run in buffer.ready()]
        return written

    want = [[0, 1], [2, 3], [4, 5, 6]]     # 800 bytes or more a file, then the group's tail
    assert cuts(range(len(sizes))) == want
    assert cuts([6, 5, 4, 3, 2, 1, 0]) == want
    assert cuts([1, 3, 0, 2, 5, 6, 4]) == want


def _corpus(tmp_path) -> tuple[list, bytes]:
    """Small files with what plain files are tested with (a BOM, CRLF, blank lines, an
    empty file, a file of blank lines, no final newline, duplicates across files, long
    samples), a larger file of several blocks among them, and gzip files."""
    rng = random.Random(7)
    rows = textgen.instruction_records(rng, 240)
    rows[200] = dict(rows[3])                               # duplicates across files
    rows[201] = dict(rows[3])
    rows[50]["output"] = "long " * 80                      # overflows every unit
    rows[120]["input"] = "tiếng Việt 漢字 🙂"
    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8") for r in rows]
    lines[60] = b'{"instruction": 5}'                        # a bad record
    cuts = [0, 3, 3, 9, 20, 21, 40, 110, 112, 130, 150, 170, 199, 205, 240]
    files, whole = [], []
    for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
        chunk = lines[a:b]
        if k == 1:
            data = b"\n\n  \n"                              # no sample
        elif k == 2:
            data = b"\xef\xbb\xbf" + b"\r\n".join(chunk) + b"\r\n\r\n"
        elif k == 4:
            data = b"\n".join(chunk)                          # no final newline
        else:
            data = b"\n".join(chunk) + b"\n"
        whole.append(data if data.endswith(b"\n") or not data else data + b"\n")
        name = tmp_path / "parts" / f"p{k:02d}.jsonl"
        name.parent.mkdir(exist_ok=True)
        if k in (8, 9):
            name = name.with_suffix(".jsonl.gz")
            data = gzip.compress(data, mtime=0)
        name.write_bytes(data)
        files.append(str(name))
    files.insert(3, str(tmp_path / "parts" / "p02b.jsonl"))
    (tmp_path / "parts" / "p02b.jsonl").write_bytes(b"")
    return files, b"".join(whole).replace(b"\xef\xbb\xbf", b"").replace(b"\r\n", b"\n")


def _job(files, out: str, **extra) -> dict:
    job = dict(files=files, fields=FIELDS, templates=TEMPLATES, tokenizer_kind="sentencepiece",
               tokenizer_files=[str(TESTDATA / "sp_unigram.model")], sizes=[[24, 48, 96]],
               samples_per_shard=[16], output_dirs=out, on_overflow="extend", on_bad_record="skip",
               on_template_unk="continue", build_batch=[5], block_size=4096)
    job.update(extra)
    return job


def test_a_build_of_many_small_files_is_the_reference_build_on_every_local_runner(tmp_path):
    files, _ = _corpus(tmp_path)
    config = _config(files, 4096)
    groups = blocks.plan_groups(config, input_sizes(config))
    assert max(len(g.blocks) for g in groups) >= 4 and len(groups) < len(blocks.plan_blocks(config, input_sizes(config)))
    build_and_compare(tmp_path, **_job(files, "mem"))
    rows = read_jsonl(tmp_path / "mem" / "sample_index.jsonl")
    assert len({r["source_file"] for r in rows}) == len(files) - 2          # two files without samples
    bad = read_jsonl(tmp_path / "mem" / "bad_record_index.jsonl")
    assert [r["sample_id"] for r in bad] == [60]
    assert [r["sample_id"] for r in rows] == [i for i in range(len(rows) + 1) if i != 60]
    dups = read_jsonl(tmp_path / "mem" / "duplicate_index.jsonl")
    assert {len({s["source_file"] for s in d["samples"]}) for d in dups} == {2}
    assert read_jsonl(tmp_path / "mem" / "overflow_index.jsonl")[0]["action"] == "extend"
    for name, extra in (("multi", dict(options=["--direct_running_mode=multi_processing",
                                                "--direct_num_workers=2"])),
                        ("by_parts", dict(index_layout="parts", block_size=1024))):
        run_pipeline(**_job(files, str(tmp_path / name), **extra))
        if name == "multi":
            assert_same_outputs(tmp_path / "mem", tmp_path / name)
    got = list_output_files(tmp_path / "by_parts")
    joined = b"".join(got[k] for k in sorted(got) if k.startswith("sample_index/"))
    assert joined == list_output_files(tmp_path / "mem")["sample_index.jsonl"]


def test_many_small_files_build_the_same_as_their_data_in_one_file(tmp_path):
    files, whole = _corpus(tmp_path)
    one = tmp_path / "one.jsonl"
    one.write_bytes(whole)
    run_pipeline(**_job(files, str(tmp_path / "many")))
    run_pipeline(**_job([str(one)], str(tmp_path / "one")))
    many, single = list_output_files(tmp_path / "many"), list_output_files(tmp_path / "one")
    shards = sorted(k for k in single if k.endswith(".bin"))
    assert shards and shards == sorted(k for k in many if k.endswith(".bin"))
    assert [k for k in shards if many[k] != single[k]] == []

    def without_source(name):
        return [{k: v for k, v in row.items() if k not in ("source_file", "source_line")}
                for row in read_jsonl(tmp_path / name / "sample_index.jsonl")]

    assert without_source("many") == without_source("one")
    for name in ("stats.json", "histogram.json"):
        assert many[name] == single[name]


def test_an_error_in_a_file_encoded_with_others_names_that_file_and_its_line(tmp_path):
    """Files of one group are encoded as one block: the first error is still reported
    with its own file and line (and a BOM still opens only a file's first line)."""
    import pytest

    from mintdim_beam import errors

    rows = textgen.instruction_records(random.Random(3), 12)
    text = [json.dumps(r, ensure_ascii=False) for r in rows]
    parts = [
        "\n".join(text[:3]) + "\n",
        "\ufeff" + "\n".join(text[3:6]) + "\n",
        "\n".join(text[6:8]) + "\n\n" + '{"instruction": "x" "input"}\n' + text[8] + "\n",
        '{"instruction": \n' + "\n".join(text[9:]) + "\n",
    ]
    files = []
    for k, part in enumerate(parts):
        (tmp_path / f"p{k}.jsonl").write_text(part, encoding="utf-8")
        files.append(str(tmp_path / f"p{k}.jsonl"))
    assert len(blocks.plan_groups(*_planned(_config(files, 4096)))) == 1
    with pytest.raises(errors.SourceParseError) as info:
        build_and_compare(tmp_path, **_job(files, "out", on_bad_record="abort"))
    assert (info.value.file, info.value.line) == (files[2], 4)
    assert "[english]" in str(info.value) and "[vietnam]" in str(info.value)


def test_a_damaged_compressed_file_among_small_files_is_its_own_error(tmp_path):
    """A small .gz is encoded with its neighbours when it decompresses whole; a
    truncated one is read alone, and its error names it and its first unread line."""
    import zlib

    import pytest

    from conftest import assert_nothing_published
    from mintdim_beam import errors

    rows = textgen.instruction_records(random.Random(5), 30)
    text = [json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in rows]
    files = []
    for k, (a, b) in enumerate(((0, 5), (5, 12), (12, 20), (20, 30))):
        data = b"".join(text[a:b])
        path = tmp_path / (f"p{k}.jsonl.gz" if k in (1, 2) else f"p{k}.jsonl")
        if k == 2:
            whole = gzip.compress(data, mtime=0)
            data = whole[:len(whole) * 2 // 3]
            readable = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
        elif k == 1:
            data = gzip.compress(data, mtime=0)
        path.write_bytes(data)
        files.append(str(path))
    assert len(blocks.plan_groups(*_planned(_config(files, 16384)))) == 1
    with pytest.raises(errors.SourceParseError) as info:
        run_pipeline(**_job(files, str(tmp_path / "out"), block_size=16384))
    err = info.value
    assert (err.file, err.kind, err.compression, err.truncated) == (files[2], "bad_compressed", "gzip", True)
    assert err.line == readable.count(b"\n") + 1
    assert_nothing_published(tmp_path / "out")
    build_and_compare(tmp_path, **_job(files[:2] + files[3:], "good", block_size=16384))
