"""Build configuration: frozen dataclasses, 1-or-N broadcast and structural validation.

Everything here is pure and runs before any Beam work: the fluent API and the job-file
loader both produce a :class:`JobSpec` (what the user declared, unchecked) and
:func:`resolve` turns it into a :class:`BuildConfig` or raises the spec's error. Checks
that touch storage (files exist, tokenizers load, output directories are empty) live in
``preflight.py``.
"""

from __future__ import annotations

import difflib
import numbers
import os
import posixpath
import uuid
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any, Optional

from mintdim_beam import errors
from mintdim_beam.errors import build_messages as M
from mintdim_beam.errors import job_messages as J
from mintdim_beam.errors.bilingual import Text, number
from mintdim_beam.core.chat_config import ChatSpec, PairSpec, chat_specs, describe_chat_templates, pair_specs
from mintdim_beam.format.chat import chat_sequence_template
from mintdim_beam.format.template import Segment, TemplateSyntaxError, parse_template, placeholders, sequence_template
from mintdim_beam.tokenization.adapters import HF_JSON, SENTENCEPIECE, check_kind_of_path
from mintdim_beam.format.names import LATEST, IndexLayout, is_build_id

OVERFLOW_POLICIES = ("abort", "truncate", "skip", "extend")
TEMPLATE_UNK_POLICIES = ("abort", "continue", "prompt")
BAD_RECORD_POLICIES = ("abort", "skip")
PAIR_COLLAPSE_POLICIES = ("abort", "skip")
#: How the per-block index files are published: ``file`` (one file each, the parts
#: concatenated at finalize) or ``parts`` (``<index>/part-NNNNN.jsonl``, one per block).
INDEX_LAYOUTS = tuple(layout.value for layout in IndexLayout)

# The defaults of the build's settings, stated here only (the policies' are the fields
# of ``Policies``): ``resolve``, the fluent API and the command line take None for them.
#: Default byte size of the input blocks that workers read independently.
DEFAULT_BLOCK_SIZE = 4 * 1024 * 1024
#: Take the exact tokenizer accelerators by default (same output, less CPU).
DEFAULT_ACCELERATORS = True
#: One file per index by default.
DEFAULT_INDEX_LAYOUT = IndexLayout.FILE
MIN_BLOCK_SIZE = 1024
#: A worker holds one block's bytes (and their lines) in memory.
MAX_BLOCK_SIZE = 1 << 30

#: Largest declared unit size (tokens). Every record of a unit is padded to its size and
#: laid out in memory before it is spilled: at 2^24 one record is 64 MiB of uint32 slots,
#: which a worker still holds beside its slice; 2^31 would be 8 GiB per record.
MAX_UNIT_SIZE = 1 << 24
#: A tokenizer call never takes more than one slice (``records.SLICE_SAMPLES``) anyway;
#: the bound only refuses values that can only be typing mistakes.
MAX_BUILD_BATCH = 1 << 20
#: Record numbers within a shard are int32 wherever arrays hold them.
MAX_SAMPLES_PER_SHARD = (1 << 31) - 1

#: Keys of each job-file section (the fluent API's arguments plus the ``run`` options).
JOB_SECTIONS = {
    "source": ("files", "fields", "templates", "chat", "pairs"),
    "tokenizer": ("type", "files", SENTENCEPIECE, HF_JSON),
    "units": ("sizes", "build_batch"),
    "output": ("dir", "samples_per_shard"),
    "run": ("on_overflow", "on_template_unk", "on_bad_record", "block_size", "versioned", "skip_unchanged",
            "accelerators", "index_layout", "max_bad_records", "max_unk_fraction", "keep", "on_pair_collapse"),
}
RUN_FLAGS = ("versioned", "skip_unchanged")



@dataclass
class JobSpec:
    """What the user declared, before any check (``None`` = not declared)."""

    files: Any = None
    fields: Any = None
    templates: Any = None
    tokenizer_kind: Optional[str] = None
    tokenizer_files: Any = None
    sizes: Any = None
    build_batch: Any = None
    output_dirs: Any = None
    samples_per_shard: Any = None
    #: A chat source (``chat_config``): its keys, each one value or one per file.
    chat: Any = None
    #: A preference-pair source (``chat_config.pair_specs``): prompt, chosen, rejected.
    pairs: Any = None


@dataclass(frozen=True)
class Policies:
    """Launch-time answers to the spec's interactive prompts (DESIGN.md §3). The field
    defaults are the policies' defaults; None for one is its default."""

    on_overflow: str = "abort"
    on_template_unk: str = "prompt"
    on_bad_record: str = "abort"
    #: A preference pair whose two records are the same tokens once written.
    on_pair_collapse: str = "abort"

    def __post_init__(self):
        for f in dataclass_fields(self):
            if getattr(self, f.name) is None:
                object.__setattr__(self, f.name, f.default)
        for name, allowed in (
            ("on_overflow", OVERFLOW_POLICIES),
            ("on_template_unk", TEMPLATE_UNK_POLICIES),
            ("on_bad_record", BAD_RECORD_POLICIES),
            ("on_pair_collapse", PAIR_COLLAPSE_POLICIES),
        ):
            value = getattr(self, name)
            if value not in allowed:
                problem = J.ONE_OF.format(name=name, choices=", ".join(allowed), value=value)
                raise errors.PipelineValidationError.invalid(
                    problem=problem.en, rules=[f"{name}: {' | '.join(allowed)}"], problem_vi=problem.vi)


@dataclass(frozen=True)
class Limits:
    """Guard rails checked before anything is published (DESIGN.md §8); the field
    defaults are theirs, None: no limit. An output that receives no sample fails
    whatever they say.

    ``max_bad_records``: a count (an ``int``: more bad records than that fail the
    build) or a fraction of the samples read (a ``float`` from 0 to 1: ``0.01`` fails
    above 1%); ``max_unk_fraction``: the most UNK tokens among the written tokens, as
    a fraction. An output's bad records are known once the plan is (``core.plan``),
    its UNK tokens once every index part is written (``beam.publish.finalize``).
    """

    max_bad_records: Optional[float] = None
    max_unk_fraction: Optional[float] = None

    def __post_init__(self):
        bad, unk = self.max_bad_records, self.max_unk_fraction
        if bad is not None and not (_is_int(bad) and bad >= 0 or _is_fraction(bad)):
            _limit_error(J.MAX_BAD_RECORDS_VALUE.format(value=bad), J.MAX_BAD_RECORDS_RULE)
        if unk is not None and not (_is_fraction(unk) or _is_int(unk) and unk in (0, 1)):
            _limit_error(J.MAX_UNK_FRACTION_VALUE.format(value=unk), J.MAX_UNK_FRACTION_RULE)


def _is_fraction(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, int)) and 0 <= value <= 1


def _limit_error(problem: Text, rule: Text):
    raise errors.PipelineValidationError.invalid(
        problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])


#: The policies a length count (``plan JOB``) runs under: it counts every sample, asks nothing.
COUNTING_POLICIES = Policies(on_overflow="skip", on_template_unk="continue", on_bad_record="skip",
                             on_pair_collapse="skip")


@dataclass(frozen=True)
class TokenizerSpec:
    kind: str
    path: str


@dataclass(frozen=True)
class FileSpec:
    """One input file with every list-style setting resolved for it.

    A chat file (``chat`` set) has the message slots' names as its ``fields`` and
    one field segment per slot part as its ``segments`` (``format.chat``)."""

    index: int
    path: str
    fields: tuple[str, ...]
    template: str
    segments: tuple[Segment, ...]
    tokenizer: TokenizerSpec
    sizes: tuple[int, ...]
    build_batch: int
    output: int
    samples_per_shard: int
    chat: Optional[ChatSpec] = None
    pairs: Optional[PairSpec] = None

    @property
    def sequence_template(self) -> tuple[str, ...]:
        return tuple(sequence_template(self.segments))


@dataclass(frozen=True)
class OutputSpec:
    """One output directory: a dataset built from the files mapped to it, in order."""

    index: int
    path: str
    files: tuple[int, ...]
    tokenizer: TokenizerSpec
    sequence_template: tuple[str, ...]
    sizes: tuple[int, ...]
    samples_per_shard: int
    #: This build's id: it claims the directory (``claims.py``) and names its staging
    #: area, ``.mintdim-staging/<run_id>/``. Never part of an output's bytes.
    run_id: str = ""
    #: A chat output's roles (every role its files' templates name, in first-declared
    #: order); empty for a ``jsonl`` output.
    roles: tuple = ()


def new_run_id() -> str:
    """A build's run id: random, so two builds (even of one job) never share one."""
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class BuildConfig:
    """The fully resolved, validated build."""

    files: tuple[FileSpec, ...]
    outputs: tuple[OutputSpec, ...]
    policies: Policies = field(default_factory=Policies)
    block_size: int = DEFAULT_BLOCK_SIZE
    #: Take the exact tokenizer accelerators (``mintdim_beam.tokenization.accel``); same output.
    accelerators: bool = DEFAULT_ACCELERATORS
    #: One file per index, or its blocks' parts published in place.
    index_layout: IndexLayout = DEFAULT_INDEX_LAYOUT
    #: The guard rails checked before publishing; they never change a published byte.
    limits: Limits = field(default_factory=Limits)

    def files_of(self, output: OutputSpec) -> list[FileSpec]:
        return [self.files[i] for i in output.files]

    @property
    def run_id(self) -> str:
        """The build's run id (every output carries the same one)."""
        return self.outputs[0].run_id if self.outputs else ""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _broadcast(values: list, n: int, error) -> list:
    if len(values) == 1:
        return values * n
    if len(values) == n:
        return list(values)
    raise error


def _missing(job: JobSpec) -> list[str]:
    checks = [("source.files", job.files)]
    if job.chat is None and job.pairs is None:
        checks += [("source.fields", job.fields), ("source.templates", job.templates)]
    elif job.chat is None:
        checks += [("source.templates", job.templates)]
    checks += [
        ("tokenizer", job.tokenizer_files if job.tokenizer_kind else None),
        ("units.sizes", job.sizes),
        ("units.build_batch", job.build_batch),
        ("output.dir", job.output_dirs),
        ("output.samples_per_shard", job.samples_per_shard),
    ]
    return [name for name, value in checks if value is None or (isinstance(value, (list, tuple)) and not value)]


def _check_list(name: str, value, item_check, items: Text):
    """``items``: what every item must be (``job_messages.NON_EMPTY_PATHS``, ...)."""
    rule = J.LIST_RULE.format(name=name, items=items)
    if not isinstance(value, (list, tuple)):
        problem = J.NOT_A_LIST.format(name=name, type_name=type(value).__name__)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])
    for i, item in enumerate(value):
        if not item_check(item):
            problem = J.LIST_ITEM.format(name=name, index=i, items=items, type_name=type(item).__name__)
            raise errors.PipelineValidationError.invalid(
                problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])


def normalize_dir(path: str) -> str:
    """Key that identifies an output directory whatever the spelling (``./a`` == ``a/``)."""
    if "://" in path:
        scheme, rest = path.split("://", 1)
        return f"{scheme}://{posixpath.normpath(rest)}"
    return os.path.abspath(path)


def resolve(job: JobSpec, policies: Policies | None = None, block_size: int | None = None,
            accelerators: bool | None = None, index_layout: IndexLayout | str | None = None,
            limits: Limits | None = None) -> BuildConfig:
    """Validate ``job`` structurally and broadcast every setting to every file.

    A setting given as None takes its default (``DEFAULT_*``, ``Policies()``, ``Limits()``)."""
    policies = policies or Policies()
    limits = limits or Limits()
    accelerators = DEFAULT_ACCELERATORS if accelerators is None else accelerators
    _check_accelerators(accelerators)
    index_layout = check_index_layout(DEFAULT_INDEX_LAYOUT if index_layout is None else index_layout)
    block_size = DEFAULT_BLOCK_SIZE if block_size is None else block_size
    missing = _missing(job)
    if missing:
        raise errors.PipelineValidationError(missing=missing)

    _check_list("source.files", job.files, lambda x: isinstance(x, str) and x, J.NON_EMPTY_PATHS)
    chats = pairs = None
    if job.pairs is not None:
        pairs = pair_specs(job, len(job.files), policies.on_overflow)
    if job.chat is not None:
        chats = chat_specs(job, len(job.files))
    elif pairs is not None:
        _check_list("source.templates", job.templates, lambda x: isinstance(x, str), J.TEMPLATE_STRINGS)
    else:
        _check_list("source.fields", job.fields,
                    lambda x: isinstance(x, (list, tuple)) and all(isinstance(f, str) for f in x), J.FIELD_NAME_LISTS)
        _check_list("source.templates", job.templates, lambda x: isinstance(x, str), J.TEMPLATE_STRINGS)
    if not isinstance(job.tokenizer_files, (list, tuple)):
        problem = J.NOT_A_LIST.format(name="tokenizer.files", type_name=type(job.tokenizer_files).__name__)
        raise errors.TokenizerValidationError(component="files", problem=problem.en, problem_vi=problem.vi)
    for path in job.tokenizer_files:
        if not isinstance(path, str):
            raise errors.TokenizerValidationError(
                component="files", problem=f"tokenizer file path must be str, got {type(path).__name__}"
            )
    if job.tokenizer_kind not in (SENTENCEPIECE, HF_JSON):
        raise errors.TokenizerValidationError.unsupported_format(tokenizer_type=job.tokenizer_kind)
    if not isinstance(job.sizes, (list, tuple)) or not all(isinstance(s, (list, tuple)) for s in job.sizes):
        raise errors.UnitValidationError(problem=J.SIZES_NOT_LISTS.en, problem_vi=J.SIZES_NOT_LISTS.vi)
    if not isinstance(job.build_batch, (list, tuple)):
        raise errors.UnitValidationError(problem=J.BUILD_BATCH_NOT_LIST.en, problem_vi=J.BUILD_BATCH_NOT_LIST.vi)
    output_dirs = [job.output_dirs] if isinstance(job.output_dirs, str) else job.output_dirs
    _check_list("output.dir", output_dirs, lambda x: isinstance(x, str) and x, J.NON_EMPTY_PATHS)
    if not isinstance(job.samples_per_shard, (list, tuple)):
        problem = J.SAMPLES_PER_SHARD_NOT_LIST.format(type_name=type(job.samples_per_shard).__name__,
                                                      value=job.samples_per_shard)
        raise errors.SamplesPerShardError(problem.en, problem.vi)

    n = len(job.files)
    if chats is None and pairs is not None:
        fields = [p.template_fields() for p in pairs]   # a string pair's template: {prompt}, {completion}
        templates = _broadcast(list(job.templates), n, errors.TemplateMappingError(files=n, got=len(job.templates)))
    elif chats is None:
        fields = _broadcast(list(job.fields), n, errors.FieldMappingError(files=n, got=len(job.fields)))
        templates = _broadcast(list(job.templates), n, errors.TemplateMappingError(files=n, got=len(job.templates)))
    else:
        fields = [chat_sequence_template(c.max_messages) for c in chats]
        templates = [describe_chat_templates(c) for c in chats]
    tok_paths = _broadcast(list(job.tokenizer_files), n, errors.TokenizerMappingError(files=n, got=len(job.tokenizer_files)))
    sizes = _broadcast(list(job.sizes), n, errors.UnitMappingError(files=n, got=len(job.sizes)))
    batches = _broadcast(list(job.build_batch), n, errors.UnitMappingError(files=n, got=len(job.build_batch)))
    outs = _broadcast(list(output_dirs), n, errors.OutputMappingError(files=n, got=len(output_dirs)))
    if len(job.samples_per_shard) not in (1, n):
        raise errors.SamplesPerShardError.arity(files=n, got=len(job.samples_per_shard))
    for i, value in enumerate(job.samples_per_shard):
        if not _is_int(value) or value <= 0:
            raise errors.SamplesPerShardError.not_positive(index=i, value=value)
        if value > MAX_SAMPLES_PER_SHARD:
            problem = J.SAMPLES_PER_SHARD_TOO_LARGE.format(index=i, value=value,
                                                           maximum=number(MAX_SAMPLES_PER_SHARD))
            raise errors.SamplesPerShardError(problem.en, problem.vi)
    sps = _broadcast(list(job.samples_per_shard), n, None)

    for unit_sizes in job.sizes:
        if not unit_sizes or not all(_is_int(s) and s > 0 for s in unit_sizes):
            problem = J.SIZES_NOT_POSITIVE.format(sizes=list(unit_sizes))
            raise errors.UnitValidationError(problem=problem.en, problem_vi=problem.vi)
        if any(a >= b for a, b in zip(unit_sizes, unit_sizes[1:])):
            problem = J.SIZES_NOT_ASCENDING.format(sizes=list(unit_sizes))
            raise errors.UnitValidationError(problem=problem.en, problem_vi=problem.vi)
        if unit_sizes[-1] > MAX_UNIT_SIZE:
            problem = J.UNIT_SIZE_TOO_LARGE.format(size=unit_sizes[-1], maximum=number(MAX_UNIT_SIZE))
            raise errors.UnitValidationError(problem=problem.en, problem_vi=problem.vi)
    for value in job.build_batch:
        if not _is_int(value) or value <= 0:
            problem = J.BUILD_BATCH_NOT_POSITIVE.format(value=value)
            raise errors.UnitValidationError(problem=problem.en, problem_vi=problem.vi)
        if value > MAX_BUILD_BATCH:
            problem = J.BUILD_BATCH_TOO_LARGE.format(value=value, maximum=number(MAX_BUILD_BATCH))
            raise errors.UnitValidationError(problem=problem.en, problem_vi=problem.vi)
    for path in job.tokenizer_files:
        check_kind_of_path(job.tokenizer_kind, path)

    file_specs = []
    out_keys: dict[str, int] = {}
    out_paths: list[str] = []
    for i, path in enumerate(job.files):
        if chats is None:
            segments = _parse_checked(path, list(fields[i]), templates[i])
        else:
            segments = tuple(Segment(True, name) for name in fields[i])
        key = normalize_dir(outs[i])
        if key not in out_keys:
            out_keys[key] = len(out_paths)
            out_paths.append(outs[i])
        file_specs.append(
            FileSpec(
                index=i,
                path=path,
                fields=tuple(fields[i]),
                template=templates[i],
                segments=segments,
                tokenizer=TokenizerSpec(job.tokenizer_kind, tok_paths[i]),
                sizes=tuple(sizes[i]),
                build_batch=batches[i],
                output=out_keys[key],
                samples_per_shard=sps[i],
                chat=None if chats is None else chats[i],
                pairs=None if pairs is None else pairs[i],
            )
        )

    outputs = []
    run_id = new_run_id()
    for o, out_path in enumerate(out_paths):
        members = [f for f in file_specs if f.output == o]
        first = members[0]
        for other in members[1:]:
            if (first.chat is None, first.pairs is None) != (other.chat is None, other.pairs is None):
                raise errors.OutputMappingError.inconsistent(
                    directory=out_path, files=[first.path, other.path], differs="source kind (chat, pairs, jsonl)")
            for name, a, b in (
                ("sequence_template", first.sequence_template, other.sequence_template),
                ("sizes", first.sizes, other.sizes),
                ("samples_per_shard", first.samples_per_shard, other.samples_per_shard),
            ):
                if a != b:
                    raise errors.OutputMappingError.inconsistent(
                        directory=out_path, files=[first.path, other.path], differs=name
                    )
        outputs.append(
            OutputSpec(
                index=o,
                path=out_path,
                files=tuple(f.index for f in members),
                tokenizer=first.tokenizer,
                sequence_template=first.sequence_template,
                sizes=first.sizes,
                samples_per_shard=first.samples_per_shard,
                run_id=run_id,
                roles=tuple(dict.fromkeys(r for f in members if f.chat for r in f.chat.role_names())),
            )
        )
    check_block_size(block_size)
    return BuildConfig(tuple(file_specs), tuple(outputs), policies, block_size, accelerators, index_layout, limits)


def check_index_layout(value) -> IndexLayout:
    """``index_layout``: ``file`` (default) or ``parts`` (or their members), as its member."""
    if value not in INDEX_LAYOUTS:
        problem = J.ONE_OF.format(name="index_layout", choices=", ".join(INDEX_LAYOUTS), value=value)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.INDEX_LAYOUT_RULE.en],
            problem_vi=problem.vi, rules_vi=[J.INDEX_LAYOUT_RULE.vi])
    return IndexLayout(value)


def _check_accelerators(value) -> None:
    if not isinstance(value, bool):
        problem = J.ACCELERATORS_NOT_BOOL.format(value=value)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.ACCELERATORS_RULE.en],
            problem_vi=problem.vi, rules_vi=[J.ACCELERATORS_RULE.vi])


def check_block_size(block_size) -> int:
    """``block_size``: an int (never a bool, a float or a string) of 1 KiB .. 1 GiB."""
    if not _is_int(block_size) or not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
        problem = J.BLOCK_SIZE_RANGE.format(least=MIN_BLOCK_SIZE, most=MAX_BLOCK_SIZE, value=block_size)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.BLOCK_SIZE_RULE.en],
            problem_vi=problem.vi, rules_vi=[J.BLOCK_SIZE_RULE.vi])
    return block_size


def _parse_checked(path: str, fields: list[str], template: str) -> tuple[Segment, ...]:
    """Parse a template and check set(placeholders) == set(fields) (spec rules 1 and 3)."""
    try:
        segments = parse_template(template)
    except TemplateSyntaxError as exc:
        raise errors.TemplateFieldMismatchError.bad_syntax(
            file=path, fields=fields, template=template, problem=exc.offending
        ) from None
    used = placeholders(segments)
    for name in used:
        if name not in fields:
            raise errors.TemplateFieldMismatchError.undeclared_placeholder(
                file=path, fields=fields, template=template, field=name
            )
    for name in fields:
        if name not in used:
            raise errors.TemplateFieldMismatchError.unused_field(
                file=path, fields=fields, template=template, field=name
            )
    return segments


def describe_sources(config: BuildConfig, output: OutputSpec) -> dict:
    """``source`` block of manifest.json for one output."""
    files = config.files_of(output)
    found = {"files": [f.path for f in files]}
    if files[0].chat is not None:
        found["chat"] = [f.chat.describe() for f in files]
    else:
        if files[0].pairs is None:
            found["fields"] = [list(f.fields) for f in files]
        found["templates"] = [f.template for f in files]
    if files[0].pairs is not None:
        found["pairs"] = [f.pairs.describe() for f in files]
    return found


# --------------------------------------------------------------------------- job files and run options


def _job_error(problem: Text) -> errors.PipelineValidationError:
    sections = ", ".join(f"{k} ({', '.join(v)})" for k, v in JOB_SECTIONS.items())
    rule = J.JOB_SECTIONS_RULE.format(sections=sections)
    return errors.PipelineValidationError.invalid(
        problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])


def _did_you_mean(name, known) -> Text:
    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return M.DID_YOU_MEAN.format(close=close[0]) if close else Text("", "")


def check_job_sections(data, path: str) -> None:
    """A parsed job file: a mapping of known sections, each a mapping of known keys.

    An unknown name is reported with the closest known one, so a typo such as
    ``smaples_per_shard`` does not read as a missing setting.
    """
    if not isinstance(data, dict):
        raise _job_error(J.JOB_NOT_MAPPING.format(path=path))
    for section, value in data.items():
        if section not in JOB_SECTIONS:
            raise _job_error(J.JOB_UNKNOWN_SECTION.format(section=section, path=path,
                                                          hint=_did_you_mean(section, JOB_SECTIONS)))
        if not isinstance(value, dict):
            raise _job_error(J.JOB_SECTION_NOT_MAPPING.format(section=section, path=path,
                                                              type_name=type(value).__name__))
        for key in value:
            if key not in JOB_SECTIONS[section]:
                raise _job_error(J.JOB_UNKNOWN_KEY.format(key=key, section=section, path=path,
                                                          hint=_did_you_mean(key, JOB_SECTIONS[section])))


def run_settings(run: dict) -> dict:
    """The ``run`` options (job file merged with flags), each checked for its type.

    YAML reads ``"false"`` as a string, which Python would take as true, and ``1e6``
    as a string: every value must already have the type it is used as.
    """
    checked = dict(run)
    for name in RUN_FLAGS:
        value = checked.get(name, False)
        if not isinstance(value, bool):
            raise _job_error(J.RUN_FLAG_NOT_BOOL.format(name=name, value=value))
        checked[name] = value
    for name, allowed in (("on_overflow", OVERFLOW_POLICIES), ("on_template_unk", TEMPLATE_UNK_POLICIES),
                          ("on_bad_record", BAD_RECORD_POLICIES), ("on_pair_collapse", PAIR_COLLAPSE_POLICIES)):
        value = checked.get(name)
        if value is not None and value not in allowed:
            problem = J.ONE_OF.format(name=f"run.{name}", choices=", ".join(allowed), value=value)
            raise errors.PipelineValidationError.invalid(
                problem=problem.en, rules=[f"{name}: {' | '.join(allowed)}"], problem_vi=problem.vi)
    if "block_size" in checked:
        checked["block_size"] = check_block_size(checked["block_size"])
    checked["accelerators"] = checked.get("accelerators", DEFAULT_ACCELERATORS)
    _check_accelerators(checked["accelerators"])
    checked["index_layout"] = check_index_layout(checked.get("index_layout", DEFAULT_INDEX_LAYOUT))
    checked["limits"] = Limits(checked.get("max_bad_records"), checked.get("max_unk_fraction"))
    if checked["skip_unchanged"] and not checked["versioned"]:
        raise _job_error(J.NEEDS_VERSIONED.format(option="skip_unchanged"))
    checked["keep"] = check_keep(checked.get("keep"))
    if checked["keep"] is not None and not checked["versioned"]:
        raise _job_error(J.NEEDS_VERSIONED.format(option="keep"))
    return checked


def check_keep(keep) -> Optional[int]:
    """``keep``: how many complete builds a versioned root keeps (None: every one)."""
    if keep is not None and not (_is_int(keep) and keep >= 1):
        problem = J.KEEP_VALUE.format(value=keep)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[J.KEEP_RULE.en], problem_vi=problem.vi, rules_vi=[J.KEEP_RULE.vi])
    return keep


def check_build_id(build_id) -> str:
    """A build id names ``ROOT/<build-id>/``: one plain path component, never ``LATEST``."""
    if not isinstance(build_id, str) or not is_build_id(build_id):
        problem, rule = J.BUILD_ID_NOT_PLAIN.format(build_id=build_id), J.BUILD_ID_RULE.format(latest=LATEST)
        raise errors.PipelineValidationError.invalid(
            problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])
    return build_id
