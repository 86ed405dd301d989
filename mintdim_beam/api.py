"""The spec's fluent API: ``pipeline("unit-build").source...tokenizer...units...output...run()``.

Each step only records what was declared; nothing is read, loaded or validated before
``run()``, which validates everything (``config.resolve`` then ``preflight.check``)
before the Beam pipeline is constructed.
"""

from __future__ import annotations

import copy

from . import digests, errors, patterns, warm_workers
from .imports import collector_paused, freeze_at_exit
from .config import DEFAULT_BLOCK_SIZE, JobSpec, Policies, resolve
from .tokenizers import HF_JSON, SENTENCEPIECE


class _Source:
    def __init__(self, job: "UnitBuildJob"):
        self._job = job

    def jsonl(self, files=None, fields=None, templates=None) -> "UnitBuildJob":
        """Declare JSONL inputs: ``fields[i]`` and ``templates[i]`` apply to ``files[i]``."""
        job = self._job._copy()
        job._spec.files, job._spec.fields, job._spec.templates = files, fields, templates
        return job


class _Tokenizer:
    def __init__(self, job: "UnitBuildJob"):
        self._job = job

    def _set(self, kind: str, files) -> "UnitBuildJob":
        job = self._job._copy()
        job._spec.tokenizer_kind, job._spec.tokenizer_files = kind, files
        return job

    def sentencepiece(self, files=None) -> "UnitBuildJob":
        """SentencePiece ``.model`` files: one shared, or one per input file."""
        return self._set(SENTENCEPIECE, files)

    def hf_json(self, files=None) -> "UnitBuildJob":
        """Hugging Face ``tokenizer.json`` files: one shared, or one per input file."""
        return self._set(HF_JSON, files)


class _Output:
    def __init__(self, job: "UnitBuildJob"):
        self._job = job

    def dir(self, path_or_paths=None, samples_per_shard=None) -> "UnitBuildJob":
        """Output directory (shared) or directories (one per input file)."""
        job = self._job._copy()
        job._spec.output_dirs, job._spec.samples_per_shard = path_or_paths, samples_per_shard
        return job


class UnitBuildJob:
    """A declared unit build. Steps return a new job; ``run()`` executes it."""

    def __init__(self):
        self._spec = JobSpec()

    def _copy(self) -> "UnitBuildJob":
        job = UnitBuildJob()
        job._spec = copy.copy(self._spec)
        return job

    @property
    def source(self) -> _Source:
        return _Source(self)

    @property
    def tokenizer(self) -> _Tokenizer:
        return _Tokenizer(self)

    @property
    def output(self) -> _Output:
        return _Output(self)

    def units(self, sizes=None, build_batch=None) -> "UnitBuildJob":
        """Unit sizes (ascending payload widths) and samples per tokenizer batch."""
        job = self._copy()
        job._spec.sizes, job._spec.build_batch = sizes, build_batch
        return job

    @property
    def spec(self) -> JobSpec:
        return copy.copy(self._spec)

    def config(self, on_overflow="abort", on_template_unk="prompt", on_bad_record="abort",
               block_size=DEFAULT_BLOCK_SIZE, accelerators=True):
        """Validate the declaration and return the resolved ``BuildConfig``."""
        policies = Policies(on_overflow=on_overflow, on_template_unk=on_template_unk,
                            on_bad_record=on_bad_record)
        return resolve(self._spec, policies, block_size, accelerators)

    def run(self, on_overflow="abort", on_template_unk="prompt", on_bad_record="abort",
            runner=None, options=None, block_size=DEFAULT_BLOCK_SIZE, echo=print, accelerators=True):
        """Validate, build on ``runner`` (default: local FnApiRunner) and publish.

        ``options`` is a list of Beam flags or a ``PipelineOptions``. ``accelerators=False``
        encodes with the tokenizer libraries' public APIs alone (``mintdim_beam.accel``;
        same output, more CPU). Raises the spec's
        error class when validation fails or a policy aborts the build. Returns a
        ``BuildResult``.
        """
        config = patterns.expand(self.config(on_overflow, on_template_unk, on_bad_record, block_size, accelerators),
                                 options)
        # Both overlap the Beam import below: hashing the inputs, and (when the default
        # local runner will use worker processes) starting those workers.
        early = digests.start_local(config)
        pool = warm_workers.start_for(config, runner, options)
        try:
            with collector_paused():
                from .launcher import launch  # Beam is imported only when a build runs
            freeze_at_exit()
        except BaseException:
            if pool is not None:
                pool.close()
            raise
        return launch(config, runner=runner, options=options, echo=echo, input_digests=early, warm_pool=pool)


def pipeline(name: str) -> UnitBuildJob:
    """Start a job declaration; MintDim 0.1 has one pipeline, ``"unit-build"``."""
    if name != "unit-build":
        raise errors.PipelineValidationError.invalid(
            problem=f"unknown pipeline {name!r}", rules=['pipeline("unit-build") is the only pipeline'])
    return UnitBuildJob()
