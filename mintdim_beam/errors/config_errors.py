"""Errors in the build's configuration, found before any record is read.

A separate module because these are the launcher's errors: the fluent configuration
or a job file is incomplete, a 1-or-N list does not map onto the input files, a
template does not match its declared fields, units or samples-per-shard break a rule.
The user fixes an argument, not the data; the message names the argument.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable, Sequence

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import build_messages as M
from mintdim_beam.errors.base import MintDimError, as_list, fact_dict, plain_value


class PipelineValidationError(MintDimError):
    """The fluent configuration is incomplete or structurally invalid.

    Raised by `run()` before any Beam pipeline exists, so the user fixes the
    configuration without paying for a launch. The main form lists only what is
    missing (`missing`); `invalid(problem, rules)` covers everything else, such as an
    unknown policy value or a string where a list is required.
    """

    _main_kind = "incomplete"
    _variant_kinds = ("invalid",)

    def __init__(self, missing: Iterable[str]) -> None:
        facts = fact_dict(missing=as_list(missing))
        english, vietnamese = self._render(
            M.PIPELINE_INCOMPLETE,
            [M.PIPELINE_MISSING, B.bullets(facts["missing"]), M.PIPELINE_MISSING_NOTE],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def invalid(
        cls,
        problem: str,
        rules: Iterable[str] = (),
        problem_vi: str | None = None,
        rules_vi: Iterable[str] | None = None,
    ) -> "PipelineValidationError":
        """A structural problem other than a missing step.

        `problem` and `rules` usually name code identifiers and read the same in both
        blocks; pass `problem_vi` / `rules_vi` when a translation helps.
        """
        facts = fact_dict(
            kind="invalid",
            problem=problem,
            rules=as_list(rules),
            problem_vi=problem_vi,
            rules_vi=None if rules_vi is None else as_list(rules_vi),
        )
        paragraphs = [B.labeled(M.PROBLEM, facts["problem"], facts["problem_vi"])]
        if facts["rules"]:
            paragraphs += [M.RULES, B.bullets(facts["rules"], facts["rules_vi"])]
        english, vietnamese = cls._render(M.PIPELINE_INVALID, paragraphs)
        return cls._make(english, vietnamese, facts)


# ---------------------------------------------------------------------------
# 1-or-N mappings
# ---------------------------------------------------------------------------


class _FileCountMappingError(MintDimError):
    """Shared form of "Received N input files but M <things>." errors.

    Every list-style setting is either one entry shared by all files or one entry per
    file; `files` is the number of input files and `got` the number of entries.
    """

    _text: ClassVar[M.MappingText]

    def __init__(self, files: int, got: int) -> None:
        facts = fact_dict(files=files, got=got)
        english, vietnamese = self._render_count(facts["files"], facts["got"])
        super().__init__(english, vietnamese, facts)

    @classmethod
    def _render_count(cls, files: int, got: int) -> tuple[str, str]:
        text = cls._text
        title = B.Text(
            M.MAPPING_TITLE.en.format(
                files=files,
                file_word=B.plural_en(files, "file", "files"),
                got=got,
                noun=B.plural_en(got, text.noun_en, text.nouns_en),
            ),
            M.MAPPING_TITLE.vi.format(files=files, got=got, noun=text.noun_vi),
        )
        return cls._render(title, [M.SUPPORTS, B.bullet_pairs([text.shared, text.per_file])])


class TokenizerMappingError(_FileCountMappingError):
    """`tokenizer.files` has neither 1 entry nor one per input file."""

    _text = M.MAPPINGS["TokenizerMappingError"]


class FieldMappingError(_FileCountMappingError):
    """`source.fields` has neither 1 entry nor one per input file."""

    _text = M.MAPPINGS["FieldMappingError"]


class TemplateMappingError(_FileCountMappingError):
    """`source.templates` has neither 1 entry nor one per input file."""

    _text = M.MAPPINGS["TemplateMappingError"]


class UnitMappingError(_FileCountMappingError):
    """`units.sizes` or `units.build_batch` has neither 1 entry nor one per input file."""

    _text = M.MAPPINGS["UnitMappingError"]


class OutputMappingError(_FileCountMappingError):
    """Output directories do not map onto the input files.

    The main form is the 1-or-N count error (`files` and `got` are counts);
    `inconsistent(directory, files, differs)` reports files that share one output
    directory but not the settings a directory must have once (`files` is then the list
    of paths and `differs` the setting that differs).
    """

    _text = M.MAPPINGS["OutputMappingError"]
    _main_kind = "count"
    _variant_kinds = ("inconsistent", "overlap", "holds_input")

    @classmethod
    def overlap(cls, directory: str, other: str, relation: str, resolved: str) -> "OutputMappingError":
        """Two outputs are one directory (``relation="same"``, through a symlink or a
        different spelling) or ``other`` lies inside ``directory`` (``"inside"``);
        ``resolved`` is where they meet after resolving links."""
        facts = fact_dict(kind="overlap", directory=directory, other=other, relation=relation, resolved=resolved)
        text = M.OUTPUT_OVERLAP_RELATIONS[facts["relation"]]
        english, vietnamese = cls._render(
            M.OUTPUT_OVERLAP,
            [
                B.labeled(M.DIRECTORY, facts["directory"]),
                B.labeled(M.OUTPUT_OVERLAPS_WITH, facts["other"]),
                B.labeled(M.PROBLEM, text.en.format(resolved=facts["resolved"]),
                          text.vi.format(resolved=facts["resolved"])),
                B.labeled(M.FIX, M.OUTPUT_OVERLAP_FIX.en, M.OUTPUT_OVERLAP_FIX.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def holds_input(cls, directory: str, context: str, path: str) -> "OutputMappingError":
        """An input (``context="source"``) or tokenizer file lies inside an output directory."""
        facts = fact_dict(kind="holds_input", directory=directory, context=context, path=path)
        english, vietnamese = cls._render(
            M.OUTPUT_HOLDS_INPUT,
            [
                B.labeled(M.DIRECTORY, facts["directory"]),
                B.labeled(M.FILE_NOT_FOUND_CONTEXT, facts["context"]),
                B.labeled(M.FILE, facts["path"]),
                B.labeled(M.FIX, M.OUTPUT_HOLDS_INPUT_FIX.en, M.OUTPUT_HOLDS_INPUT_FIX.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def inconsistent(
        cls, directory: str, files: Sequence[str], differs: str
    ) -> "OutputMappingError":
        """Files sharing `directory` differ in `differs` (tokenizer, sequence_template, ...)."""
        facts = fact_dict(
            kind="inconsistent", directory=directory, files=as_list(files), differs=differs
        )
        english, vietnamese = cls._render(
            M.OUTPUT_INCONSISTENT,
            [
                B.labeled(M.DIRECTORY, facts["directory"]),
                B.labeled(M.FILES, B.words(facts["files"])),
                B.labeled(M.OUTPUT_DIFFERS, facts["differs"]),
            ],
        )
        return cls._make(english, vietnamese, facts)


# ---------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------


class TemplateFieldMismatchError(MintDimError):
    """A template and its declared fields do not match one to one, or do not parse.

    Shows the file's API declaration (`fields` and `template`, with Python repr) and
    the offending field with a reason. Use `undeclared_placeholder`, `unused_field` or
    `bad_syntax` for the standard cases; the main constructor takes a custom reason.

    The declared field list is the fact `fields["fields"]`, exposed as the attribute
    `declared_fields` because `fields` holds all the facts.
    """

    _main_kind = "mismatch"
    _variant_kinds = ("undeclared_placeholder", "unused_field", "bad_syntax")
    _attr_aliases = {"fields": "declared_fields"}

    def __init__(
        self,
        file: str,
        fields: Sequence[str],
        template: str,
        field: str,
        reason_en: str,
        reason_vi: str | None = None,
    ) -> None:
        reason = B.Text(reason_en, reason_en if reason_vi is None else reason_vi)
        self._init_error(*self._compose("mismatch", file, fields, template, field, reason))

    @classmethod
    def _compose(
        cls,
        kind: str,
        file: str,
        fields: Sequence[str],
        template: str,
        field: str,
        reason: B.Text,
        **extra: Any,
    ) -> tuple[str, str, dict[str, Any]]:
        facts = fact_dict(
            kind=kind,
            file=file,
            fields=as_list(fields),
            template=template,
            field=field,
            reason_en=reason.en,
            reason_vi=reason.vi,
            **extra,
        )
        declaration = M.TEMPLATE_DECLARATION_VALUE.format(
            fields=facts["fields"], template=facts["template"]
        )
        mismatch = B.Text(
            f"{M.TEMPLATE_MISMATCH_FIELD.en} {facts['field']} {M.REASON.en} {reason.en}",
            f"{M.TEMPLATE_MISMATCH_FIELD.vi} {facts['field']} {M.REASON.vi} {reason.vi}",
        )
        english, vietnamese = cls._render(
            B.labeled(M.TEMPLATE_SOURCE_FILE, facts["file"]),
            [B.labeled(M.TEMPLATE_DECLARATION, declaration), mismatch],
        )
        return english, vietnamese, facts

    @classmethod
    def undeclared_placeholder(
        cls, file: str, fields: Sequence[str], template: str, field: str
    ) -> "TemplateFieldMismatchError":
        """The template uses `{field}` but `fields` does not declare it."""
        reason = B.Text(
            M.TEMPLATE_UNDECLARED.en.format(field=field),
            M.TEMPLATE_UNDECLARED.vi.format(field=field),
        )
        return cls._make(
            *cls._compose("undeclared_placeholder", file, fields, template, field, reason)
        )

    @classmethod
    def unused_field(
        cls, file: str, fields: Sequence[str], template: str, field: str
    ) -> "TemplateFieldMismatchError":
        """`fields` declares `field` but the template never uses `{field}`."""
        reason = B.Text(
            M.TEMPLATE_UNUSED.en.format(field=field),
            M.TEMPLATE_UNUSED.vi.format(field=field),
        )
        return cls._make(*cls._compose("unused_field", file, fields, template, field, reason))

    @classmethod
    def bad_syntax(
        cls, file: str, fields: Sequence[str], template: str, problem: str
    ) -> "TemplateFieldMismatchError":
        """The template does not parse: an empty `{}` or an unbalanced `{` or `}`.

        `problem` is either the offending template text (`"{}"`, the unclosed text
        starting with `"{"`, or `"}"`) or the parser's description of the problem (such
        as "unbalanced '{' at position 4"); both are accepted because the offending text
        is the clearer thing to show and the description is what a parser reports. The
        offending text is shown as the field causing the mismatch (a bare brace when only
        a description is given); `problem` is kept as a fact.
        """
        offending = problem if problem[:1] in ("{", "}") else None
        if problem == "{@}" or (offending is None and "empty special" in problem):
            reason, shown = M.TEMPLATE_EMPTY_SPECIAL, "{@}"
        elif problem == "{}" or (offending is None and "empty" in problem):
            reason, shown = M.TEMPLATE_EMPTY_PLACEHOLDER, "{}"
        elif offending is not None and problem.startswith("{") or "'{'" in problem:
            reason, shown = M.TEMPLATE_UNCLOSED_BRACE, "{"
        else:
            reason, shown = M.TEMPLATE_UNOPENED_BRACE, "}"
        field = shown if offending is None else offending
        return cls._make(
            *cls._compose("bad_syntax", file, fields, template, field, reason, problem=problem)
        )


# ---------------------------------------------------------------------------
# Units and shards
# ---------------------------------------------------------------------------


class UnitValidationError(MintDimError):
    """`units.sizes` or `units.build_batch` breaks a unit rule.

    The spec's message lists the rules; an optional `problem` says which rule was broken
    and by what value.
    """

    def __init__(self, problem: str | None = None, problem_vi: str | None = None) -> None:
        facts = fact_dict(problem=problem)
        if problem_vi is not None:
            facts["problem_vi"] = plain_value(problem_vi)
        paragraphs = [] if facts["problem"] is None else [
            B.labeled(M.PROBLEM, facts["problem"], facts.get("problem_vi"))]
        paragraphs += [M.RULES, B.bullet_pairs(M.UNIT_RULES)]
        english, vietnamese = self._render(M.UNIT_INVALID, paragraphs)
        super().__init__(english, vietnamese, facts)


class SamplesPerShardError(MintDimError):
    """`output.samples_per_shard` has a bad value or a bad number of entries.

    Use `not_positive(index, value)` for a value that is not a positive int and
    `arity(files, got)` for a list that is neither 1 entry nor one per file; the main
    constructor takes any other problem in both languages.
    """

    _main_kind = "problem"
    _variant_kinds = ("not_positive", "arity")

    def __init__(self, problem_en: str, problem_vi: str | None = None) -> None:
        problem = B.Text(problem_en, problem_en if problem_vi is None else problem_vi)
        self._init_error(*self._compose(fact_dict(), problem))

    @classmethod
    def _compose(
        cls, facts: dict[str, Any], problem: B.Text
    ) -> tuple[str, str, dict[str, Any]]:
        facts = {**facts, **fact_dict(problem_en=problem.en, problem_vi=problem.vi)}
        english, vietnamese = cls._render(
            M.SAMPLES_PER_SHARD_INVALID,
            [
                B.labeled(M.PROBLEM, problem.en, problem.vi),
                M.RULES,
                B.bullet_pairs(M.SAMPLES_PER_SHARD_RULES),
            ],
        )
        return english, vietnamese, facts

    @classmethod
    def not_positive(cls, index: int, value: Any) -> "SamplesPerShardError":
        """`samples_per_shard[index]` is not a positive int (shown with repr)."""
        facts = fact_dict(kind="not_positive", index=index, value=value)
        shown = repr(facts["value"])
        problem = B.Text(
            M.SAMPLES_PER_SHARD_NOT_POSITIVE.en.format(index=facts["index"], value=shown),
            M.SAMPLES_PER_SHARD_NOT_POSITIVE.vi.format(index=facts["index"], value=shown),
        )
        return cls._make(*cls._compose(facts, problem))

    @classmethod
    def arity(cls, files: int, got: int) -> "SamplesPerShardError":
        """`samples_per_shard` has `got` entries for `files` input files."""
        facts = fact_dict(kind="arity", files=files, got=got)
        problem = B.Text(
            M.SAMPLES_PER_SHARD_ARITY.en.format(
                files=facts["files"],
                file_word=B.plural_en(facts["files"], "file", "files"),
                got=facts["got"],
                entry_word=B.plural_en(facts["got"], "entry", "entries"),
            ),
            M.SAMPLES_PER_SHARD_ARITY.vi.format(files=facts["files"], got=facts["got"]),
        )
        return cls._make(*cls._compose(facts, problem))
