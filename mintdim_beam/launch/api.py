"""The two ways to declare a build: the spec's fluent API and a job file.

``pipeline("unit-build").source...tokenizer...units...output...run()``: each step only
records what was declared; nothing is read, loaded or validated before ``run()``, which
validates everything (``config.resolve`` then ``preflight.check``) before the Beam
pipeline is constructed. A job file (YAML or JSON, :func:`load_job_file`) holds the same
fields plus a ``run`` section of policies; :func:`demo_job` is the bundled demo. Both
give the same ``JobSpec``, so the CLI and the library validate one way.
"""

from __future__ import annotations

import copy
import json
import os

from mintdim_beam import errors
from mintdim_beam.errors import job_messages as J
from mintdim_beam.errors.bilingual import Text
from mintdim_beam.core.config import JOB_SECTIONS, JobSpec, Limits, Policies, check_job_sections, resolve
from mintdim_beam.tokenization.adapters import HF_JSON, SENTENCEPIECE

DEMO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "demo")


class _Source:
    def __init__(self, job: "UnitBuildJob"):
        self._job = job

    def jsonl(self, files=None, fields=None, templates=None) -> "UnitBuildJob":
        """Declare JSONL inputs: ``fields[i]`` and ``templates[i]`` apply to ``files[i]``."""
        job = self._job._copy()
        job._spec.files, job._spec.fields, job._spec.templates = files, fields, templates
        job._spec.chat = job._spec.pairs = None
        return job

    def pairs(self, files=None, prompt=None, chosen=None, rejected=None, templates=None, chat=None) -> "UnitBuildJob":
        """Declare preference pairs (DESIGN.md §9): each line's ``chosen`` and ``rejected``
        completions (field names; ``prompt`` the shared prompt's, optional) become two
        records linked by ``pair_id``, in one unit, truncated alike. String fields take
        ``templates`` with ``{completion}`` (and ``{prompt}``); conversations (lists of
        messages) take ``chat`` (``source.chat``'s settings but ``field``)."""
        job = self._job._copy()
        job._spec.files, job._spec.fields, job._spec.templates = files, None, templates
        job._spec.pairs = {key: value for key, value in (("prompt", prompt), ("chosen", chosen),
                                                         ("rejected", rejected)) if value is not None}
        job._spec.chat = chat
        return job

    def chat(self, files=None, field=None, templates=None, max_messages=None, role_key=None,
             content_key=None) -> "UnitBuildJob":
        """Declare JSONL conversations (DESIGN.md §9): ``field`` holds a list of messages,
        each rendered by the template of its role (``templates``: role -> template with
        ``{content}`` once; ``role_key``/``content_key`` default to ``role``/``content``,
        ShareGPT's are ``from``/``value``). Every setting is one value for all files or a
        list of one per file; ``max_messages`` is the record's number of message slots."""
        job = self._job._copy()
        declared = {"field": field, "templates": templates, "max_messages": max_messages,
                    "role_key": role_key, "content_key": content_key}
        job._spec.files, job._spec.fields, job._spec.templates = files, None, None
        job._spec.chat = {key: value for key, value in declared.items() if value is not None}
        job._spec.pairs = None
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

    def config(self, on_overflow=None, on_template_unk=None, on_bad_record=None,
               block_size=None, accelerators=None, index_layout=None, max_bad_records=None,
               max_unk_fraction=None, on_pair_collapse=None):
        """Validate the declaration and return the resolved ``BuildConfig``. A setting
        left None takes its default (``config.Policies``, ``config.Limits``,
        ``config.DEFAULT_*``)."""
        policies = Policies(on_overflow=on_overflow, on_template_unk=on_template_unk,
                            on_bad_record=on_bad_record, on_pair_collapse=on_pair_collapse)
        return resolve(self._spec, policies, block_size, accelerators, index_layout,
                       Limits(max_bad_records, max_unk_fraction))

    def run(self, on_overflow=None, on_template_unk=None, on_bad_record=None,
            runner=None, options=None, block_size=None, echo=print, accelerators=None,
            index_layout=None, quiet=False, max_bad_records=None, max_unk_fraction=None, on_pair_collapse=None):
        """Validate, build on ``runner`` (default: local FnApiRunner) and publish.

        ``options`` is a list of Beam flags or a ``PipelineOptions``. ``accelerators=False``
        encodes with the tokenizer libraries' public APIs alone (``mintdim_beam.tokenization.accel``;
        same output, more CPU). ``index_layout="parts"`` publishes each per-block index as
        its blocks' parts (``sample_index/part-NNNNN.jsonl``, ...) instead of one file:
        nothing to concatenate at finalize; readers take either. ``quiet=True``: no
        progress display on stderr (``echo`` still gets the result lines).
        ``max_bad_records`` (a count, or a fraction of the samples read such as 0.01)
        and ``max_unk_fraction`` (UNK tokens / written tokens) fail the build before it
        publishes (``BuildLimitError``), as does an output that receives no sample.
        Raises the spec's error class when validation fails or a policy aborts the
        build. Returns a ``BuildResult``.
        """
        config = self.config(on_overflow, on_template_unk, on_bad_record, block_size, accelerators, index_layout,
                             max_bad_records, max_unk_fraction, on_pair_collapse)
        from mintdim_beam.launch.quiet_logs import silenced

        with silenced(quiet):    # Beam's import logs a warning too
            from mintdim_beam.launch.launcher import launch  # Beam is imported only when a build runs

            return launch(config, runner=runner, options=options, echo=echo, quiet=quiet)


def pipeline(name: str) -> UnitBuildJob:
    """Start a job declaration; MintDim 0.1 has one pipeline, ``"unit-build"``."""
    if name != "unit-build":
        problem = J.UNKNOWN_PIPELINE.format(name=name)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.PIPELINE_RULE.en], problem_vi=problem.vi, rules_vi=[J.PIPELINE_RULE.vi])
    return UnitBuildJob()


# --------------------------------------------------------------------------- job files

_SECTIONS = {name: set(keys) for name, keys in JOB_SECTIONS.items()}


def job_file_error(problem: Text) -> errors.PipelineValidationError:
    """``problem``: a `job_messages` text filled in; the rule lists the job file's sections."""
    sections = ", ".join(f"{k} ({', '.join(sorted(v))})" for k, v in _SECTIONS.items())
    rule = J.JOB_SECTIONS_RULE.format(sections=sections)
    return errors.PipelineValidationError.invalid(
        problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])


def _unique_keys(pairs) -> dict:
    """A JSON object, or a ValueError for a key given twice (the last one used to win
    silently: a second ``run`` section replaced the first one's policies)."""
    found: dict = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one mapping")
        found[key] = value
    return found


def _load_yaml(text: str):
    """``yaml.safe_load``, refusing a key given twice in one mapping."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key!r} appears twice in one mapping", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return yaml.load(text, Loader=UniqueKeyLoader)


def load_job_file(path: str) -> tuple[JobSpec, dict]:
    """Parse a YAML/JSON job file into a JobSpec and the ``run`` section."""
    if not os.path.exists(path):
        raise errors.MintDimFileNotFoundError(context="job file", path=path)
    if not os.path.isfile(path):   # a directory, or a FIFO that would block the read
        raise job_file_error(J.JOB_NOT_REGULAR.format(path=path))
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise job_file_error(J.JOB_NOT_UTF8.format(path=path, why=exc)) from None
    try:
        if path.endswith(".json"):
            data = json.loads(text, object_pairs_hook=_unique_keys)
        else:
            data = _load_yaml(text)
    except Exception as exc:
        raise job_file_error(J.JOB_UNPARSABLE.format(path=path, why=exc)) from None
    check_job_sections(data, path)
    source, tok = data.get("source", {}), data.get("tokenizer", {})
    units, output = data.get("units", {}), data.get("output", {})
    kind, tok_files = tok.get("type"), tok.get("files")
    given = [key for key in ("type", "files", SENTENCEPIECE, HF_JSON) if key in tok]
    if len(set(given) & {SENTENCEPIECE, HF_JSON}) + bool(set(given) & {"type", "files"}) > 1:
        # One of them used to win silently: a job with "type: hf_json" and a
        # "sentencepiece:" key was built with the SentencePiece model.
        raise job_file_error(J.JOB_TOKENIZER_TWICE.format(path=path, given=", ".join(given),
                                                          sentencepiece=SENTENCEPIECE, hf_json=HF_JSON))
    for name in (SENTENCEPIECE, HF_JSON):
        if name in tok:
            kind, tok_files = name, tok[name]
    if kind is not None and kind not in (SENTENCEPIECE, HF_JSON):
        raise errors.TokenizerValidationError.unsupported_format(tokenizer_type=kind)
    spec = JobSpec(
        files=source.get("files"), fields=source.get("fields"), templates=source.get("templates"),
        chat=source.get("chat"), pairs=source.get("pairs"),
        tokenizer_kind=kind, tokenizer_files=tok_files,
        sizes=units.get("sizes"), build_batch=units.get("build_batch"),
        output_dirs=output.get("dir"), samples_per_shard=output.get("samples_per_shard"),
    )
    return spec, dict(data.get("run", {}))


def demo_job(out_dir: str) -> tuple[JobSpec, dict]:
    """The bundled demo: English instructions and Vietnamese chat, one output each."""
    spec = JobSpec(
        files=[os.path.join(DEMO_DIR, "instructions.jsonl"), os.path.join(DEMO_DIR, "chat_vi.jsonl")],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
                   # "User: {prompt}\n\nAssistant: {response}" in Vietnamese, escaped: the package's
                   # source spells Vietnamese only in the errors layer's wording
                   "Ng\u01b0\u1eddi d\xf9ng: {prompt}\n\nTr\u1ee3 l\xfd: {response}"],
        tokenizer_kind=SENTENCEPIECE,
        tokenizer_files=[os.path.join(DEMO_DIR, "demo.model")],
        sizes=[[64, 128, 256], [64, 128, 192]],
        build_batch=[256],
        output_dirs=[os.path.join(out_dir, "instructions"), os.path.join(out_dir, "chat_vi")],
        samples_per_shard=[64],
    )
    return spec, {"on_overflow": "extend", "on_template_unk": "continue", "on_bad_record": "skip"}
