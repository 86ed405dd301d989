"""The Beam layer's transforms on Beam's own test harness: ``TestPipeline`` and
``assert_that`` on the in-memory FnApiRunner.

The runner is named as an object, as the launcher does: a pipeline left to
``DirectRunner`` by name first tries the Prism runner, which downloads a binary when
the network allows. Expected values come straight from the tokenizer library
(``conftest.DirectTokenizer``), segment by segment, never from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from conftest import TESTDATA, DirectTokenizer, expected_segments, input_sizes, write_jsonl
from mintdim_beam.beam import claims
from mintdim_beam.beam.transforms import CountTokenLengths, UnitBuild
from mintdim_beam.core.blocks import plan_blocks
from mintdim_beam.core.config import JobSpec, Policies, resolve
from mintdim_beam.errors import ReaderError
from mintdim_beam.reader import open_output

MODEL = str(TESTDATA / "sp_unigram.model")
QA = "Question: {q}\nAnswer: {a}"
CHAT = "{prompt} => {response}"
_WORDS = ("the bees make honey in the hive and the queen lays eggs while workers gather "
          "nectar from flowers near the river in the morning").split()
BAD_LINE = '{"q": "broken json",'


def in_memory() -> BeamTestPipeline:
    return BeamTestPipeline(runner=FnApiRunner())


def _text(i: int, n: int) -> str:
    return " ".join(_WORDS[(i * 7 + k) % len(_WORDS)] for k in range(n))


def qa_rows() -> list:
    """Sixty questions over several 1 KiB blocks: a duplicate, an empty field, non-ASCII
    text and one bad line."""
    rows = [{"q": _text(i, 2 + i % 5), "a": _text(i + 3, 1 + (i * 5) % 13)} for i in range(60)]
    rows[7] = dict(rows[2])                                      # an exact duplicate
    rows[11] = {"q": "an empty answer", "a": None}
    rows[17] = {"q": "Tiếng Việt có dấu", "a": "naïve café, 漢字"}
    rows.insert(30, BAD_LINE)
    return rows


def chat_rows() -> list:
    return [{"prompt": _text(i, 3), "response": _text(i * 2, 2 + i % 7)} for i in range(25)]


def _config(tmp_path, files, fields, templates, sizes, on_overflow="abort"):
    job = JobSpec(files=files, fields=fields, templates=templates, tokenizer_kind="sentencepiece",
                  tokenizer_files=[MODEL], sizes=sizes, build_batch=[4],
                  output_dirs=[str(tmp_path / f"out{k}") for k in range(len(files))], samples_per_shard=[4])
    return resolve(job, Policies(on_overflow=on_overflow, on_template_unk="continue", on_bad_record="skip"),
                   block_size=1024)


def _lengths(tok: DirectTokenizer, template: str, rows: list) -> list:
    """The token count of each good row, encoded directly."""
    return [sum(map(len, expected_segments(tok, template, row))) for row in rows if isinstance(row, dict)]


def _histogram(lengths: list) -> dict:
    found: dict = {}
    for n in lengths:
        found[n] = found.get(n, 0) + 1
    return found


def test_count_token_lengths_gives_each_output_the_tokenizers_histogram(tmp_path):
    """``CountTokenLengths`` encodes every block of every input and merges the blocks'
    counts per output: each output's histogram is the one the tokenizer gives row by
    row, and the bad line is counted, not measured."""
    qa, chat = qa_rows(), chat_rows()
    files = [write_jsonl(tmp_path / "qa.jsonl", qa), write_jsonl(tmp_path / "chat.jsonl", chat)]
    config = _config(tmp_path, files, [["q", "a"], ["prompt", "response"]], [QA, CHAT], [[16, 64]])
    blocks = plan_blocks(config, input_sizes(config))
    assert len([b for b in blocks if b.file == 0]) > 2            # the merge has blocks to merge
    tok = DirectTokenizer("sentencepiece", MODEL)
    expected = [(0, (_histogram(_lengths(tok, QA, qa)), 1)), (1, (_histogram(_lengths(tok, CHAT, chat)), 0))]
    assert sum(expected[0][1][0].values()) == 60 and sum(expected[1][1][0].values()) == 25

    with in_memory() as p:
        counted = p | CountTokenLengths(config)
        assert_that(counted, equal_to(expected))


def test_count_token_lengths_with_the_listed_sizes_counts_the_same(tmp_path):
    """The sizes a launcher already listed give the same block list, hence the same counts."""
    qa = qa_rows()
    files = [write_jsonl(tmp_path / "qa.jsonl", qa)]
    config = _config(tmp_path, files, [["q", "a"]], [QA], [[16, 64]])
    tok = DirectTokenizer("sentencepiece", MODEL)

    with in_memory() as p:
        counted = p | CountTokenLengths(config, input_sizes(config))
        assert_that(counted | beam.MapTuple(lambda output, counts: (output, sorted(counts[0].items()), counts[1])),
                    equal_to([(0, sorted(_histogram(_lengths(tok, QA, qa)).items()), 1)]))


SIZES = [24, 40, 72]


def _unit_of(n: int) -> int:
    return next(u for u in SIZES if u >= n)


def test_unit_build_publishes_the_tokenizers_ids(tmp_path):
    """``UnitBuild`` on its own (no launcher): the pipeline's one result per output
    names the directory, its stats and the shards it wrote, and the shards hold, sample
    by sample and segment by segment, the ids the tokenizer gives the rows."""
    rows = qa_rows()
    files = [write_jsonl(tmp_path / "qa.jsonl", rows)]
    config = _config(tmp_path, files, [["q", "a"]], [QA], [SIZES])
    out = config.outputs[0]
    tok = DirectTokenizer("sentencepiece", MODEL)
    lengths = _lengths(tok, QA, rows)
    assert max(lengths) <= max(SIZES)                            # nothing overflows: every id is kept
    per_unit = {u: sum(_unit_of(n) == u for n in lengths) for u in SIZES}
    assert all(per_unit.values())                                # every unit gets samples
    record_bytes = {u: (1 + len(out.sequence_template) + u) * 2 for u in SIZES}     # uint16 slots
    shards = [(u, k, min(4, per_unit[u] - 4 * k), min(4, per_unit[u] - 4 * k) * record_bytes[u])
              for u in SIZES for k in range(-(-per_unit[u] // 4))]
    for spec in config.outputs:
        claims.claim(spec.path, spec.run_id)                      # as the launcher's preflight does

    with in_memory() as p:
        results = p | UnitBuild(config)
        assert_that(
            results | beam.Map(lambda r: (r["output"], r.get("error"), r["stats"]["total_samples"],
                                          r["stats"]["total_tokens"], r["stats"]["bad_records"],
                                          r["stats"]["duplicate_groups"], r["stats"]["unit_distribution"],
                                          [tuple(s) for s in r["shards"]])),
            equal_to([(out.path, None, len(lengths), sum(lengths), 1, 1,
                       {str(u): n for u, n in per_unit.items()}, shards)]))

    reader = open_output(out.path)
    assert len(reader) == len(lengths)
    seen = []
    for sample in reader:
        row = rows[sample.source_line - 1]
        assert isinstance(row, dict), sample.source_line
        assert [s.ids.tolist() for s in sample.segments] == expected_segments(tok, QA, row), sample.source_line
        assert sample.unit_size == _unit_of(sample.token_count)
        seen.append(sample.source_line)
    assert seen == [k + 1 for k, row in enumerate(rows) if isinstance(row, dict)]


def test_unit_build_reports_a_failed_build_as_its_result(tmp_path):
    """The transform reports a failed build as its result, the error as its class name
    and facts (the launcher raises it): a sample longer than every unit under ``abort``
    names its file, line and token count, and nothing is published."""
    rows = [{"q": "short", "a": "fine"}, {"q": "long", "a": " ".join(_WORDS * 4)}]
    files = [write_jsonl(tmp_path / "qa.jsonl", rows)]
    config = _config(tmp_path, files, [["q", "a"]], [QA], [[16, 32]])
    out = config.outputs[0]
    long_count = _lengths(DirectTokenizer("sentencepiece", MODEL), QA, rows)[1]
    assert long_count > 32
    claims.claim(out.path, out.run_id)

    with in_memory() as p:
        results = p | UnitBuild(config)
        assert_that(results, equal_to([{"output": out.path, "error": {"error": "UnitOverflowError", "fields": {
            "file": files[0], "line": 2, "token_count": long_count, "max_unit_size": 32}}}]))
    assert not list(Path(out.path).glob("unit_*/shard_*.bin"))
    assert (Path(out.path) / "unit_16" / "UNIT_BUILD_FAILED.md").is_file()
    with pytest.raises(ReaderError, match="no manifest.json"):
        open_output(out.path)
