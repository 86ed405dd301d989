"""mintdim_beam: JSONL datasets to low-padding, fixed-width binary token shards, on Beam.

    from mintdim_beam import pipeline
    job = (pipeline("unit-build").source.jsonl(files=[...], fields=[[...]], templates=[...])
           .tokenizer.sentencepiece(files=[...]).units(sizes=[[...]], build_batch=[...])
           .output.dir("out", samples_per_shard=[...]))
    result = job.run(on_overflow="truncate")
"""

from mintdim_beam.version import __version__

# Every public name is imported on first use, not at package import: a consumer that
# imports ``mintdim_beam.reader.dataset`` loads neither the build side (config, tokenizers) nor
# Beam, and the CLI sets up logging before Beam is imported.
_LAZY = {"pipeline": "launch.api", "UnitBuildJob": "launch.api", "UnitBuild": "beam.transforms",
         "BuildResult": "launch.launcher", "OutputResult": "launch.launcher"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["pipeline", "UnitBuildJob", "UnitBuild", "BuildResult", "OutputResult", "__version__"]
