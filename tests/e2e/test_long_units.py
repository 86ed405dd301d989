"""Units longer than 65,535 tokens: the slots widen, nothing wraps (DESIGN.md §5).

With a vocabulary of at most 65,535 ids the slots are uint16, but a record's length
header holds up to its unit size: a dataset whose largest unit (declared, or reached by
``extend``) exceeds 65,535 is written in uint32 slots. Each build below is compared
byte for byte with the reference implementation, then read back and decoded token for
token against the tokenizer's own ids.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import DirectTokenizer, OutputDir, build_and_compare, expected_segments, write_jsonl

from mintdim_beam.cli.consumer_commands import main as consumer_main
from mintdim_beam.reader import ReaderError, open_output

SP = "sentencepiece"
TEMPLATE = "Q: {q} A: {a}"          # literals of 3 and 2 tokens
# Words that ``sp_bpe.model`` encodes as one token each, alone or after a space, so a
# text of N of them is exactly N tokens (checked below against the tokenizer).
WORDS = ("the", "a", "of", "và", "một")


def words(n: int, shift: int = 0) -> str:
    return " ".join(WORDS[(k + shift) % len(WORDS)] for k in range(n))


@pytest.fixture(scope="module")
def sp_bpe(testdata) -> str:
    return str(testdata / "sp_bpe.model")


def build(tmp_path, rows, sp_bpe, sizes, on_overflow="abort", samples_per_shard=2, block_size=None):
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    build_and_compare(tmp_path, files=[src], fields=[["q", "a"]], templates=[TEMPLATE], tokenizer_kind=SP,
                      tokenizer_files=[sp_bpe], sizes=[sizes], samples_per_shard=[samples_per_shard],
                      output_dirs="out", on_overflow=on_overflow, build_batch=(2,), block_size=block_size)
    return str(tmp_path / "out")


def check_read_back(out: str, rows: list, sp_bpe: str) -> OutputDir:
    """Every sample decodes (independently, and through the reader) to the tokenizer's ids."""
    tokenizer = DirectTokenizer(SP, sp_bpe)
    want = {i: expected_segments(tokenizer, TEMPLATE, row) for i, row in enumerate(rows)}
    d = OutputDir(out)
    d.check_layout()
    assert d.decoded() == want
    reader = open_output(out)
    for i, segments in want.items():
        sample = reader.sample(i)
        assert [s.ids.tolist() for s in sample.segments] == segments
        assert sample.token_count == sum(map(len, segments))
    return d


def storage_of(d: OutputDir) -> tuple:
    return (d.manifest["token_storage"], d.length_field["token_dtype"], d.length_field["magic"],
            d.stats["token_dtype"], d.stats["bytes_per_token"])


WIDE = ({"dtype": "uint32", "bytes_per_token": 4, "magic": 0xFFFFFFFF}, "uint32", 0xFFFFFFFF, "uint32", 4)
NARROW = ({"dtype": "uint16", "bytes_per_token": 2, "magic": 0xFFFF}, "uint16", 0xFFFF, "uint16", 2)


def test_the_long_texts_are_exactly_their_word_counts(sp_bpe):
    tokenizer = DirectTokenizer(SP, sp_bpe)
    assert len(tokenizer.encode(words(65535))) == 65535
    assert len(tokenizer.encode(words(112370, 3))) == 112370


@pytest.fixture(scope="module")
def declared_wide(tmp_path_factory, sp_bpe):
    """Declared unit 131072: a 112,370-token segment, its neighbours short."""
    tmp = tmp_path_factory.mktemp("declared")
    rows = [{"q": "the cat", "a": "một"}, {"q": words(112370, 3), "a": "of a"},
            {"q": "hello", "a": words(70000)}, {"q": "", "a": None}, {"q": "và", "a": "the"}]
    return build(tmp, rows, sp_bpe, [64, 131072]), rows


def test_a_declared_unit_above_65535_is_written_in_uint32_slots(declared_wide, sp_bpe):
    out, rows = declared_wide
    d = check_read_back(out, rows, sp_bpe)
    assert storage_of(d) == WIDE
    assert d.histogram == {"64": 3, "131072": 2}
    long = d.samples[1]
    assert (long["unit_size"], long["token_count"]) == (131072, 3 + 112370 + 2 + 2)
    rec = d.records(long["shard_path"], 131072)[long["shard_record"]]
    assert rec[1:5].tolist() == [3, 112370, 2, 2]   # "Q: ", q, " A: ", a: no header wrapped
    # Declared units below 65,536 share the output's slots: 4 bytes each.
    assert (Path(out) / "unit_64" / "shard_000000.bin").stat().st_size == 2 * (1 + 4 + 64) * 4


def test_verify_inspect_plan_and_report_read_uint32_slots(declared_wide, tmp_path, capsys):
    out, rows = declared_wide
    assert consumer_main(["verify", out]) == 0
    assert "verify OK" in capsys.readouterr().out
    assert consumer_main(["inspect", out, "--sample-id", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["unit_size"] == 131072 and shown["token_count"] == 112377
    assert consumer_main(["plan", out, "--json"]) == 0
    planned = json.loads(capsys.readouterr().out.splitlines()[0])
    assert json.dumps(planned).count("131072") >= 1
    pytest.importorskip("matplotlib")
    assert consumer_main(["report", out, "-o", str(tmp_path / "r.html")]) == 0
    assert "uint32" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_the_reader_refuses_uint16_slots_for_a_unit_above_65535(declared_wide, tmp_path):
    # What a dataset written before the rule says of itself: its headers wrapped.
    out = tmp_path / "old"
    shutil.copytree(declared_wide[0], out)
    for name, key in (("length_field.json", None), ("manifest.json", "token_storage")):
        meta = json.loads((out / name).read_text())
        target = meta[key] if key else meta
        target["magic"] = 0xFFFF
        target["token_dtype" if key is None else "dtype"] = "uint16"
        (out / name).write_text(json.dumps(meta))
    with pytest.raises(ReaderError, match="unit size 131072 does not fit uint16 header slots"):
        open_output(str(out))
    assert consumer_main(["verify", str(out)]) != 0


def test_extend_above_65535_widens_every_unit(tmp_path, sp_bpe):
    """``extend`` reaches 65,536 (the first size that needs uint32): the declared units'
    records, spilled in uint16 before the plan knew, are widened when the shards are
    written, over several blocks and shards."""
    rows = [{"q": words(5 + k), "a": words(k % 3)} for k in range(7)]
    rows[2] = {"q": words(30000), "a": "the"}                        # extends to 30,006
    rows[4] = {"q": words(65531, 1), "a": ""}                        # extends to exactly 65,536
    rows[5] = {"q": words(40000, 2), "a": words(10)}                 # goes to 65,536
    rows[6] = {"q": words(20), "a": ""}                              # unit 32
    out = build(tmp_path, rows, sp_bpe, [16, 32], on_overflow="extend", block_size=1 << 16)
    d = check_read_back(out, rows, sp_bpe)
    assert storage_of(d) == WIDE
    assert d.histogram == {"16": 3, "32": 1, "30006": 1, "65536": 2}
    assert [r["new_unit_size"] for r in d.jsonl("overflow_index.jsonl")] == [30006, 65536, 65536]
    shard = np.fromfile(Path(out) / "unit_16" / "shard_000000.bin", dtype="<u4").reshape(-1, 1 + 4 + 16)
    assert (shard[:, 0] == 0xFFFFFFFF).all()


def test_units_up_to_65535_keep_uint16_slots(tmp_path, sp_bpe):
    """The common case is unchanged: a 65,535-token sample fits uint16 slots (its
    header is 0xFFFF, the magic's value, in a length slot), and every shard keeps its
    two bytes a slot."""
    rows = [{"q": "the", "a": "a"}, {"q": words(65530), "a": ""}, {"q": words(9), "a": "một"}]
    out = build(tmp_path, rows, sp_bpe, [16], on_overflow="extend")
    d = check_read_back(out, rows, sp_bpe)
    assert storage_of(d) == NARROW
    assert d.histogram == {"16": 2, "65535": 1}
    rec = d.records(d.samples[1]["shard_path"], 65535)[0]
    assert rec[:5].tolist() == [0xFFFF, 3, 65530, 2, 0]
    assert (Path(out) / "unit_65535" / "shard_000000.bin").stat().st_size == (1 + 4 + 65535) * 2
    assert consumer_main(["verify", out]) == 0


def test_each_output_gets_the_slots_its_own_units_need(tmp_path, sp_bpe):
    """The rule follows the largest unit, not the longest sample: a declared unit of
    65,536 that no sample reaches still means uint32 slots, for that output only."""
    rows = [{"q": words(3 + k), "a": "the"} for k in range(5)]
    src_a = write_jsonl(tmp_path / "a.jsonl", rows)
    src_b = write_jsonl(tmp_path / "b.jsonl", rows)
    build_and_compare(tmp_path, files=[src_a, src_b], fields=[["q", "a"]], templates=[TEMPLATE],
                      tokenizer_kind=SP, tokenizer_files=[sp_bpe], sizes=[[16, 65536], [16]],
                      samples_per_shard=[2], output_dirs=["wide", "narrow"])
    wide, narrow = OutputDir(tmp_path / "wide"), OutputDir(tmp_path / "narrow")
    assert storage_of(wide) == WIDE and storage_of(narrow) == NARROW
    assert (tmp_path / "wide" / "unit_65536" / "EMPTY_UNIT.md").exists()
    assert wide.decoded() == narrow.decoded()
    assert (tmp_path / "wide" / "unit_16" / "shard_000000.bin").stat().st_size == \
        2 * (tmp_path / "narrow" / "unit_16" / "shard_000000.bin").stat().st_size


def test_extend_refuses_a_sample_longer_than_the_maximum_unit(tmp_path, sp_bpe):
    """``extend`` gave any sample a unit of its own length, past the documented maximum
    unit size (2^24). A longer sample is now the block's first error, a bilingual
    UnitOverflowError the plan raises before any shard is written. The limit is the
    real one in a build (17M tokens are too many for a test); here the encoder is given
    a small one, through the same code path."""
    from mintdim_beam import errors
    from mintdim_beam.core import records
    from mintdim_beam import pipeline
    from mintdim_beam.tokenization.adapters import load_tokenizer

    path = write_jsonl(tmp_path / "long.jsonl", [{"q": words(4), "a": words(30)},     # 39 tokens: extended
                                                 {"q": words(3), "a": words(60)},     # 68 tokens: beyond 50
                                                 {"q": words(2), "a": words(3)}])
    config = (pipeline("unit-build").source.jsonl(files=[path], fields=[["q", "a"]], templates=[TEMPLATE])
              .tokenizer.sentencepiece(files=[sp_bpe]).units(sizes=[[16, 32]], build_batch=[4])
              .output.dir(str(tmp_path / "out"), samples_per_shard=[2]).config(on_overflow="extend"))
    spec = config.files[0]
    tok = load_tokenizer(SP, sp_bpe, Path(sp_bpe).read_bytes(), threads=1)
    assert len(tok.encode(words(60))) == 60
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)

    result = records.BlockEncoder(spec, tok, config.policies, max_extended=50).encode_block(lines, True)
    sample, line, err = result.first_error
    assert (sample, line) == (1, 1)          # block-local, from 0
    # The error crosses to the launcher as a dict; the plan makes its line global (from
    # 1) and the publisher raises the error rebuilt from it.
    data = err.to_dict()
    data["fields"]["line"] = line + 1
    err = errors.error_from_dict(data)
    assert type(err) is errors.UnitOverflowError
    assert err.english == (f"UnitOverflowError: Sample token length exceeds max unit size.\n\nSample: {path}:2\n\n"
                           "token_count: 68\n\nmax_unit_size: 50\n\n"
                           "Problem: on_overflow extend adds a unit as long as the sample, and no unit may exceed "
                           "max_unit_size tokens (the maximum unit size, 2^24)\n\nFix:\n\n"
                           "• cut or drop such samples: --on-overflow truncate or --on-overflow skip\n"
                           "• or split the document into shorter samples")
    assert err.vietnamese == (f"UnitOverflowError: Độ dài token của sample vượt quá unit size lớn nhất.\n\n"
                              f"Sample: {path}:2\n\ntoken_count: 68\n\nmax_unit_size: 50\n\n"
                              "Vấn đề: on_overflow extend thêm một unit dài bằng sample, nhưng không unit nào được "
                              "vượt quá max_unit_size token (unit size tối đa, 2^24)\n\nCách sửa:\n\n"
                              "• cắt hoặc bỏ các sample như vậy: --on-overflow truncate hoặc --on-overflow skip\n"
                              "• hoặc chia tài liệu thành các sample ngắn hơn")
    assert str(err) == f"[english] {err.english}\n\n[vietnam] {err.vietnamese}"

    # Under the limit, the same sample is extended (no error): the check is the limit.
    fine = records.BlockEncoder(spec, tok, config.policies, max_extended=68).encode_block(lines, True)
    assert fine.first_error is None
    from mintdim_beam.core.config import MAX_UNIT_SIZE
    assert records.BlockEncoder(spec, tok, config.policies)._layout.max_extended == MAX_UNIT_SIZE


def _echoed_build(tmp_path, rows, sp_bpe, sizes) -> tuple[str, list]:
    """A build through the fluent API with ``extend``, and the lines it echoed."""
    from mintdim_beam import pipeline

    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = str(tmp_path / "out")
    lines: list = []
    (pipeline("unit-build").source.jsonl(files=[src], fields=[["q", "a"]], templates=[TEMPLATE])
     .tokenizer.sentencepiece(files=[sp_bpe]).units(sizes=[sizes], build_batch=[2])
     .output.dir([out], samples_per_shard=[2])
     .run(on_overflow="extend", on_template_unk="abort", on_bad_record="abort", echo=lines.append))
    return out, lines


def test_a_build_that_extend_made_uint32_says_so_at_the_end(tmp_path, sp_bpe):
    """One sample past 65,535 tokens makes every shard of the output twice its size: the
    closing lines say which unit did it and how to keep uint16, after the summary."""
    rows = [{"q": "the", "a": "a"}, {"q": words(65536), "a": ""}]
    out, lines = _echoed_build(tmp_path, rows, sp_bpe, [16])
    assert json.loads((Path(out) / "stats.json").read_text())["token_dtype"] == "uint32"
    finished = next(i for i, line in enumerate(lines) if line.startswith("[unit-build] finished in"))
    note = (f"[unit-build] note: {out}: on_overflow=extend reached unit 65,541, above 65,535 tokens, so every "
            "slot of this output is uint32, twice the bytes of uint16; on_overflow=truncate (or a shorter "
            "longest sample) keeps uint16")
    assert lines[finished + 1:] == [note]


def test_no_note_when_the_slots_are_uint16_or_a_declared_unit_needs_uint32(tmp_path, sp_bpe):
    rows = [{"q": "the", "a": "a"}, {"q": words(65530), "a": ""}]
    _, lines = _echoed_build(tmp_path / "narrow", rows, sp_bpe, [16])
    assert lines[-1].startswith("[unit-build] finished in")
    _, lines = _echoed_build(tmp_path / "declared", rows, sp_bpe, [16, 65536])
    assert lines[-1].startswith("[unit-build] finished in")
