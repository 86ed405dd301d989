"""Build configuration: frozen dataclasses, 1-or-N broadcast and structural validation.

Everything here is pure and runs before any Beam work: the fluent API and the job-file
loader both produce a :class:`JobSpec` (what the user declared, unchecked) and
:func:`resolve` turns it into a :class:`BuildConfig` or raises the spec's error. Checks
that touch storage (files exist, tokenizers load, output directories are empty) live in
``preflight.py``.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import uuid
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any, Optional

from mintdim_beam import errors
from mintdim_beam.format.template import Segment, TemplateSyntaxError, parse_template, placeholders, sequence_template
from mintdim_beam.tokenization.adapters import HF_JSON, SENTENCEPIECE, check_kind_of_path
from mintdim_beam.format.names import LATEST, IndexLayout

OVERFLOW_POLICIES = ("abort", "truncate", "skip", "extend")
TEMPLATE_UNK_POLICIES = ("abort", "continue", "prompt")
BAD_RECORD_POLICIES = ("abort", "skip")
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
    "source": ("files", "fields", "templates"),
    "tokenizer": ("type", "files", SENTENCEPIECE, HF_JSON),
    "units": ("sizes", "build_batch"),
    "output": ("dir", "samples_per_shard"),
    "run": ("on_overflow", "on_template_unk", "on_bad_record", "block_size", "versioned", "skip_unchanged",
            "accelerators", "index_layout"),
}
RUN_FLAGS = ("versioned", "skip_unchanged")

#: A build id is one plain path component: it names ``ROOT/<build-id>/``.
BUILD_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


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


@dataclass(frozen=True)
class Policies:
    """Launch-time answers to the spec's interactive prompts (DESIGN.md §3). The field
    defaults are the policies' defaults; None for one is its default."""

    on_overflow: str = "abort"
    on_template_unk: str = "prompt"
    on_bad_record: str = "abort"

    def __post_init__(self):
        for f in dataclass_fields(self):
            if getattr(self, f.name) is None:
                object.__setattr__(self, f.name, f.default)
        for name, allowed in (
            ("on_overflow", OVERFLOW_POLICIES),
            ("on_template_unk", TEMPLATE_UNK_POLICIES),
            ("on_bad_record", BAD_RECORD_POLICIES),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise errors.PipelineValidationError.invalid(
                    problem=f"{name} must be one of {', '.join(allowed)}, got {value!r}",
                    rules=[f"{name}: {' | '.join(allowed)}"],
                    problem_vi=f"{name} phải là một trong {', '.join(allowed)}, hiện tại là {value!r}",
                )


#: The policies a length count (``plan JOB``) runs under: it counts every sample, asks nothing.
COUNTING_POLICIES = Policies(on_overflow="skip", on_template_unk="continue", on_bad_record="skip")


@dataclass(frozen=True)
class TokenizerSpec:
    kind: str
    path: str


@dataclass(frozen=True)
class FileSpec:
    """One input file with every list-style setting resolved for it."""

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
    checks = [
        ("source.files", job.files),
        ("source.fields", job.fields),
        ("source.templates", job.templates),
        ("tokenizer", job.tokenizer_files if job.tokenizer_kind else None),
        ("units.sizes", job.sizes),
        ("units.build_batch", job.build_batch),
        ("output.dir", job.output_dirs),
        ("output.samples_per_shard", job.samples_per_shard),
    ]
    return [name for name, value in checks if value is None or (isinstance(value, (list, tuple)) and not value)]


def _check_list(name: str, value, item_check, item_desc: str, item_desc_vi: str):
    """``item_desc``/``item_desc_vi``: what every item must be, in English and Vietnamese."""
    rules, rules_vi = [f"{name} is a list of {item_desc}"], [f"{name} là list các {item_desc_vi}"]
    if not isinstance(value, (list, tuple)):
        raise errors.PipelineValidationError.invalid(
            problem=f"{name} must be a list, got {type(value).__name__}", rules=rules,
            problem_vi=f"{name} phải là một list, hiện tại là {type(value).__name__}", rules_vi=rules_vi,
        )
    for i, item in enumerate(value):
        if not item_check(item):
            raise errors.PipelineValidationError.invalid(
                problem=f"{name}[{i}] must be {item_desc}, got {type(item).__name__}", rules=rules,
                problem_vi=f"{name}[{i}] phải thuộc loại {item_desc_vi}, hiện tại là {type(item).__name__}",
                rules_vi=rules_vi,
            )


def normalize_dir(path: str) -> str:
    """Key that identifies an output directory whatever the spelling (``./a`` == ``a/``)."""
    if "://" in path:
        scheme, rest = path.split("://", 1)
        return f"{scheme}://{posixpath.normpath(rest)}"
    return os.path.abspath(path)


def resolve(job: JobSpec, policies: Policies | None = None, block_size: int | None = None,
            accelerators: bool | None = None, index_layout: IndexLayout | str | None = None) -> BuildConfig:
    """Validate ``job`` structurally and broadcast every setting to every file.

    A setting given as None takes its default (``DEFAULT_*``, ``Policies()``)."""
    policies = policies or Policies()
    accelerators = DEFAULT_ACCELERATORS if accelerators is None else accelerators
    _check_accelerators(accelerators)
    index_layout = check_index_layout(DEFAULT_INDEX_LAYOUT if index_layout is None else index_layout)
    block_size = DEFAULT_BLOCK_SIZE if block_size is None else block_size
    missing = _missing(job)
    if missing:
        raise errors.PipelineValidationError(missing=missing)

    _check_list("source.files", job.files, lambda x: isinstance(x, str) and x, "non-empty path strings",
                "chuỗi đường dẫn không rỗng")
    _check_list("source.fields", job.fields,
                lambda x: isinstance(x, (list, tuple)) and all(isinstance(f, str) for f in x),
                "lists of field names", "list tên field")
    _check_list("source.templates", job.templates, lambda x: isinstance(x, str), "template strings",
                "chuỗi template")
    if not isinstance(job.tokenizer_files, (list, tuple)):
        got = type(job.tokenizer_files).__name__
        raise errors.TokenizerValidationError(
            component="files", problem=f"tokenizer.files must be a list, got {got}",
            problem_vi=f"tokenizer.files phải là một list, hiện tại là {got}",
        )
    for path in job.tokenizer_files:
        if not isinstance(path, str):
            raise errors.TokenizerValidationError(
                component="files", problem=f"tokenizer file path must be str, got {type(path).__name__}"
            )
    if job.tokenizer_kind not in (SENTENCEPIECE, HF_JSON):
        raise errors.TokenizerValidationError.unsupported_format(tokenizer_type=job.tokenizer_kind)
    if not isinstance(job.sizes, (list, tuple)) or not all(isinstance(s, (list, tuple)) for s in job.sizes):
        raise errors.UnitValidationError(problem="sizes must be a list of lists of positive integers",
                                         problem_vi="sizes phải là một list gồm các list số nguyên dương")
    if not isinstance(job.build_batch, (list, tuple)):
        raise errors.UnitValidationError(problem="build_batch must be a list of positive integers",
                                         problem_vi="build_batch phải là một list các số nguyên dương")
    output_dirs = [job.output_dirs] if isinstance(job.output_dirs, str) else job.output_dirs
    _check_list("output.dir", output_dirs, lambda x: isinstance(x, str) and x, "non-empty path strings",
                "chuỗi đường dẫn không rỗng")
    if not isinstance(job.samples_per_shard, (list, tuple)):
        got = type(job.samples_per_shard).__name__
        raise errors.SamplesPerShardError(
            f"samples_per_shard must be a list of positive ints, got {got} {job.samples_per_shard!r}",
            f"samples_per_shard phải là một list các số nguyên dương, hiện tại là {got} "
            f"{job.samples_per_shard!r}")

    n = len(job.files)
    fields = _broadcast(list(job.fields), n, errors.FieldMappingError(files=n, got=len(job.fields)))
    templates = _broadcast(list(job.templates), n, errors.TemplateMappingError(files=n, got=len(job.templates)))
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
            raise errors.SamplesPerShardError(
                f"samples_per_shard[{i}] is {value}, above the maximum {MAX_SAMPLES_PER_SHARD:,}",
                f"samples_per_shard[{i}] là {value}, vượt quá giá trị tối đa "
                f"{MAX_SAMPLES_PER_SHARD:,}".replace(",", "."))
    sps = _broadcast(list(job.samples_per_shard), n, None)

    for unit_sizes in job.sizes:
        if not unit_sizes or not all(_is_int(s) and s > 0 for s in unit_sizes):
            raise errors.UnitValidationError(problem=f"sizes must be positive integers, got {list(unit_sizes)}",
                                             problem_vi=f"sizes phải là các số nguyên dương, hiện tại là "
                                                        f"{list(unit_sizes)}")
        if any(a >= b for a, b in zip(unit_sizes, unit_sizes[1:])):
            raise errors.UnitValidationError(problem=f"sizes must be sorted ascending, got {list(unit_sizes)}",
                                             problem_vi=f"sizes phải được sắp xếp tăng dần, hiện tại là "
                                                        f"{list(unit_sizes)}")
        if unit_sizes[-1] > MAX_UNIT_SIZE:
            raise errors.UnitValidationError(
                problem=f"unit size {unit_sizes[-1]} is above the maximum {MAX_UNIT_SIZE:,} tokens",
                problem_vi=f"unit size {unit_sizes[-1]} vượt quá giá trị tối đa "
                           f"{MAX_UNIT_SIZE:,} token".replace(",", "."))
    for value in job.build_batch:
        if not _is_int(value) or value <= 0:
            raise errors.UnitValidationError(problem=f"build_batch must be a positive integer, got {value!r}",
                                             problem_vi=f"build_batch phải là số nguyên dương, hiện tại là {value!r}")
        if value > MAX_BUILD_BATCH:
            raise errors.UnitValidationError(
                problem=f"build_batch {value} is above the maximum {MAX_BUILD_BATCH:,}",
                problem_vi=f"build_batch {value} vượt quá giá trị tối đa {MAX_BUILD_BATCH:,}".replace(",", "."))
    for path in job.tokenizer_files:
        check_kind_of_path(job.tokenizer_kind, path)

    file_specs = []
    out_keys: dict[str, int] = {}
    out_paths: list[str] = []
    for i, path in enumerate(job.files):
        segments = _parse_checked(path, list(fields[i]), templates[i])
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
            )
        )

    outputs = []
    run_id = new_run_id()
    for o, out_path in enumerate(out_paths):
        members = [f for f in file_specs if f.output == o]
        first = members[0]
        for other in members[1:]:
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
            )
        )
    check_block_size(block_size)
    return BuildConfig(tuple(file_specs), tuple(outputs), policies, block_size, accelerators, index_layout)


def check_index_layout(value) -> IndexLayout:
    """``index_layout``: ``file`` (default) or ``parts`` (or their members), as its member."""
    if value not in INDEX_LAYOUTS:
        raise errors.PipelineValidationError.invalid(
            problem=f"index_layout must be one of {', '.join(INDEX_LAYOUTS)}, got {value!r}",
            rules=["run.index_layout: file (one file per index, default) | parts (sample_index/part-NNNNN.jsonl, "
                   "... one part per input block, published without concatenating)"],
            problem_vi=f"index_layout phải là một trong {', '.join(INDEX_LAYOUTS)}, hiện tại là {value!r}",
            rules_vi=["run.index_layout: file (mỗi index một file, mặc định) | parts (sample_index/part-NNNNN.jsonl, "
                      "... mỗi khối đầu vào một part, publish không cần nối file)"])
    return IndexLayout(value)


def _check_accelerators(value) -> None:
    if not isinstance(value, bool):
        raise errors.PipelineValidationError.invalid(
            problem=f"accelerators must be true or false, got {value!r}",
            rules=["run.accelerators: true | false (default true)"],
            problem_vi=f"accelerators phải là true hoặc false, hiện tại là {value!r}",
            rules_vi=["run.accelerators: true | false (mặc định true)"])


def check_block_size(block_size) -> int:
    """``block_size``: an int (never a bool, a float or a string) of 1 KiB .. 1 GiB."""
    if not _is_int(block_size) or not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
        raise errors.PipelineValidationError.invalid(
            problem=f"block_size must be an integer from {MIN_BLOCK_SIZE} to {MAX_BLOCK_SIZE} bytes, "
                    f"got {block_size!r}",
            rules=["block_size is the byte size of the input blocks read by one worker"],
            problem_vi=f"block_size phải là số nguyên từ {MIN_BLOCK_SIZE} đến {MAX_BLOCK_SIZE} byte, "
                       f"hiện tại là {block_size!r}",
            rules_vi=["block_size là số byte của mỗi khối đầu vào một worker đọc"],
        )
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
    return {
        "files": [f.path for f in files],
        "fields": [list(f.fields) for f in files],
        "templates": [f.template for f in files],
    }


# --------------------------------------------------------------------------- job files and run options


def _job_rules() -> list:
    return ["job file sections: " + ", ".join(f"{k} ({', '.join(v)})" for k, v in JOB_SECTIONS.items())]


def _job_error(problem: str, problem_vi: str) -> errors.PipelineValidationError:
    rules = _job_rules()
    return errors.PipelineValidationError.invalid(
        problem=problem, rules=rules, problem_vi=problem_vi,
        rules_vi=[r.replace("job file sections", "các section của job file") for r in rules])


def _did_you_mean(name, known) -> tuple[str, str]:
    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    if not close:
        return "", ""
    return f" (did you mean {close[0]!r}?)", f" (có phải ý bạn là {close[0]!r}?)"


def check_job_sections(data, path: str) -> None:
    """A parsed job file: a mapping of known sections, each a mapping of known keys.

    An unknown name is reported with the closest known one, so a typo such as
    ``smaples_per_shard`` does not read as a missing setting.
    """
    if not isinstance(data, dict):
        raise _job_error(f"job file {path} must hold a mapping of sections",
                         f"job file {path} phải chứa một mapping các section")
    for section, value in data.items():
        if section not in JOB_SECTIONS:
            en, vi = _did_you_mean(section, JOB_SECTIONS)
            raise _job_error(f"unknown section {section!r} in {path}{en}",
                             f"section không xác định {section!r} trong {path}{vi}")
        if not isinstance(value, dict):
            raise _job_error(f"section {section!r} of {path} must be a mapping, got {type(value).__name__}",
                             f"section {section!r} của {path} phải là một mapping, hiện tại là "
                             f"{type(value).__name__}")
        for key in value:
            if key not in JOB_SECTIONS[section]:
                en, vi = _did_you_mean(key, JOB_SECTIONS[section])
                raise _job_error(f"unknown key {key!r} in section {section!r} of {path}{en}",
                                 f"key không xác định {key!r} trong section {section!r} của {path}{vi}")


def run_settings(run: dict) -> dict:
    """The ``run`` options (job file merged with flags), each checked for its type.

    YAML reads ``"false"`` as a string, which Python would take as true, and ``1e6``
    as a string: every value must already have the type it is used as.
    """
    checked = dict(run)
    for name in RUN_FLAGS:
        value = checked.get(name, False)
        if not isinstance(value, bool):
            raise _job_error(
                f"run.{name} must be true or false (a YAML boolean, without quotes), got {value!r}",
                f"run.{name} phải là true hoặc false (boolean YAML, không có dấu nháy), hiện tại là {value!r}")
        checked[name] = value
    for name, allowed in (("on_overflow", OVERFLOW_POLICIES), ("on_template_unk", TEMPLATE_UNK_POLICIES),
                          ("on_bad_record", BAD_RECORD_POLICIES)):
        value = checked.get(name)
        if value is not None and value not in allowed:
            raise errors.PipelineValidationError.invalid(
                problem=f"run.{name} must be one of {', '.join(allowed)}, got {value!r}",
                rules=[f"{name}: {' | '.join(allowed)}"],
                problem_vi=f"run.{name} phải là một trong {', '.join(allowed)}, hiện tại là {value!r}",
            )
    if "block_size" in checked:
        checked["block_size"] = check_block_size(checked["block_size"])
    checked["accelerators"] = checked.get("accelerators", DEFAULT_ACCELERATORS)
    _check_accelerators(checked["accelerators"])
    checked["index_layout"] = check_index_layout(checked.get("index_layout", DEFAULT_INDEX_LAYOUT))
    if checked["skip_unchanged"] and not checked["versioned"]:
        raise _job_error("skip_unchanged needs versioned output roots (--versioned or run.versioned: true)",
                         "skip_unchanged cần output root có phiên bản (--versioned hoặc run.versioned: true)")
    return checked


def check_build_id(build_id) -> str:
    """A build id names ``ROOT/<build-id>/``: one plain path component, never ``LATEST``."""
    if not isinstance(build_id, str) or not BUILD_ID_PATTERN.fullmatch(build_id) or build_id == LATEST:
        raise errors.PipelineValidationError.invalid(
            problem=f"build id {build_id!r} is not a plain name",
            rules=["a build id is 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or "
                   f"digit, and not {LATEST}: it names ROOT/<build-id>/"],
            problem_vi=f"build id {build_id!r} không phải là một tên đơn giản",
            rules_vi=["build id gồm 1 đến 128 chữ cái, chữ số, '.', '_' hoặc '-', bắt đầu bằng chữ cái "
                      f"hoặc chữ số, và khác {LATEST}: nó là tên của ROOT/<build-id>/"],
        )
    return build_id
