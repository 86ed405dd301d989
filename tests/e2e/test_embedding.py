"""The README's embedding example: ``p | UnitBuild(config)`` in a user's own pipeline
yields one dict per output, with ``output`` (its path), ``stats`` and ``shards``."""

from __future__ import annotations

from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that

from conftest import TESTDATA, write_jsonl


def test_unit_build_yields_output_stats_and_shards_per_output(tmp_path):
    from mintdim_beam import UnitBuild, pipeline
    from mintdim_beam.launch.preflight import check

    src = write_jsonl(tmp_path / "a.jsonl", [{"t": f"hello world {k}"} for k in range(5)])
    job = (pipeline("unit-build").source.jsonl(files=[src], fields=[["t"]], templates=["{t}"])
           .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")])
           .units(sizes=[[16]], build_batch=[4]).output.dir(str(tmp_path / "out"), samples_per_shard=[4]))
    config = job.config(on_overflow="skip", on_template_unk="continue")
    check(config)

    def as_documented(results):
        (found,) = results
        assert set(found) == {"output", "stats", "shards"}, found
        assert found["output"] == str(tmp_path / "out") and found["stats"]["total_samples"] == 5
        assert [shard[:3] for shard in found["shards"]] == [(16, 0, 4), (16, 1, 1)]

    with test_pipeline.TestPipeline(runner=FnApiRunner()) as p:     # never Prism, which may download
        assert_that(p | UnitBuild(config), as_documented)
    assert (tmp_path / "out" / "manifest.json").exists()
