"""mintdim_beam: JSONL datasets to low-padding, fixed-width binary token shards, on Beam.

    from mintdim_beam import pipeline
    job = (pipeline("unit-build").source.jsonl(files=[...], fields=[[...]], templates=[...])
           .tokenizer.sentencepiece(files=[...]).units(sizes=[[...]], build_batch=[...])
           .output.dir("out", samples_per_shard=[...]))
    result = job.run(on_overflow="truncate")
"""

__version__ = "0.1.0"

from .api import UnitBuildJob, pipeline  # noqa: E402
from .launcher import BuildResult, OutputResult  # noqa: E402
from .transforms import UnitBuild  # noqa: E402

__all__ = ["pipeline", "UnitBuildJob", "UnitBuild", "BuildResult", "OutputResult", "__version__"]
