"""mintdim_beam: JSONL datasets to low-padding, fixed-width binary token shards, on Beam.

    from mintdim_beam import pipeline
    job = (pipeline("unit-build").source.jsonl(files=[...], fields=[[...]], templates=[...])
           .tokenizer.sentencepiece(files=[...]).units(sizes=[[...]], build_batch=[...])
           .output.dir("out", samples_per_shard=[...]))
    result = job.run(on_overflow="truncate")
"""

__version__ = "0.1.0"

from .api import UnitBuildJob, pipeline  # noqa: E402

# Beam is imported on first use of these names, not at package import: the CLI sets up
# logging first, and pure modules (reader, config) stay importable without Beam's cost.
_LAZY = {"UnitBuild": "transforms", "BuildResult": "launcher", "OutputResult": "launcher"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["pipeline", "UnitBuildJob", "UnitBuild", "BuildResult", "OutputResult", "__version__"]
