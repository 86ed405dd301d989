"""Reading a published dataset: :func:`open_output`, samples and units, the sample
index, the training view, ``verify``, exports, the report and unit-size planning.

Never imports the build (``core``, ``beam``, ``launch``, ``cli``): a training job that
reads a dataset loads neither Beam nor the build's modules. The public names below are
imported on first use, so importing one module of this layer loads only what it needs.
"""

_PUBLIC = {
    "open_output": "mintdim_beam.reader.dataset", "OutputReader": "mintdim_beam.reader.dataset",
    "Sample": "mintdim_beam.reader.samples", "MessageTokens": "mintdim_beam.reader.samples",
    "CausalLMDataset": "mintdim_beam.reader.training", "UnitBatchSampler": "mintdim_beam.reader.training",
    "causal_lm_arrays": "mintdim_beam.reader.training", "segment_mask": "mintdim_beam.reader.training",
    "IGNORE_INDEX": "mintdim_beam.reader.training",
    "ReaderError": "mintdim_beam.errors.read_errors",
}


def __getattr__(name):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_PUBLIC)
