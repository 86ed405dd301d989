"""Error classes of the MintDim spec, with structured fields and bilingual text.

Every error prints the spec's two blocks, `[english] ...` then `[vietnam] ...`. The text
is not the error's source of truth, though: each error also keeps the facts behind it
(file, line, field, counts, ...) in `fields`, for three reasons:

* A Beam pipeline raises errors on workers, often in another process or machine, while
  the user reads them on the launcher. Facts travel as JSON (`to_dict` /
  `error_from_dict`) and through pickle, and the launcher rebuilds the same class with
  the same text, instead of a generic runtime error wrapping a traceback string.
* Records skipped with `on_bad_record="skip"` are written to `bad_record_index.jsonl`
  from the same facts (`error`, `reason`), so the index and the abort message agree.
* Tests and callers can check what went wrong without parsing prose.

The wording itself lives in `mintdim_beam.messages`.
"""

from __future__ import annotations

import copy
import inspect
import numbers
import os
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from mintdim_beam import messages as M

__all__ = [
    "MintDimError",
    "error_from_dict",
    "PipelineValidationError",
    "MintDimFileNotFoundError",
    "SourceParseError",
    "SampleSchemaError",
    "TokenizerValidationError",
    "TokenizerSpecialTokenError",
    "TokenizerMappingError",
    "FieldMappingError",
    "TemplateMappingError",
    "TemplateFieldMismatchError",
    "TemplateTokenizerError",
    "UnitMappingError",
    "OutputMappingError",
    "UnitValidationError",
    "UnitOverflowError",
    "OutputValidationError",
    "OutputClaimedError",
    "TokenDTypeCapacityError",
    "SamplesPerShardError",
    "StorageAccessError",
]

# Public error classes by name, so `error_from_dict` can rebuild the right class.
_REGISTRY: dict[str, type["MintDimError"]] = {}


def _plain(value: Any) -> Any:
    """Turn a fact into a JSON value, so an error survives the trip to the launcher.

    Rendering always uses the normalised value, so a rebuilt error prints exactly the
    same text as the original (a tuple of fields, for example, is shown as the list it
    becomes after JSON).
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (os.PathLike, bytes)):
        return os.fsdecode(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return repr(value)


def _facts(**facts: Any) -> dict[str, Any]:
    """Normalised facts of one error, in the order they were given."""
    return {key: _plain(value) for key, value in facts.items()}


def _as_list(value: Any) -> Any:
    """A lone string where a list is expected is one item, not a list of characters."""
    return [value] if isinstance(value, (str, bytes, os.PathLike)) else value


class MintDimError(Exception):
    """Base of every MintDim error: bilingual text plus the structured facts behind it.

    Catching `MintDimError` catches every spec error; the CLI prints `str(err)` without a
    traceback. Subclasses build their text from facts; the base constructor is for
    errors that carry ready-made text.

    Classes with several message variants record which one in the fact `kind`, so the
    exact variant is rebuilt from JSON.
    """

    english: str
    vietnamese: str
    fields: dict[str, Any]

    # `kind` recorded by the main constructor of classes that have variants.
    _main_kind: ClassVar[str | None] = None
    # Alternate constructors (classmethods) that `error_from_dict` may call by `kind`.
    _variant_kinds: ClassVar[tuple[str, ...]] = ()
    # Facts whose name would shadow a base attribute are exposed under another name.
    _attr_aliases: ClassVar[dict[str, str]] = {}

    # Beam re-creates a failing DoFn's exception as `type(exn)(args[0] + note)` unless it
    # is already tagged; that would either lose the class (constructors take facts, not
    # a message) or, for one-argument errors, bury the message inside a fact. Marking
    # every MintDim error as tagged keeps the original error and its facts intact.
    _tagged_with_step: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            _REGISTRY[cls.__name__] = cls

    def __init__(
        self, english: str, vietnamese: str, fields: Mapping[str, Any] | None = None
    ) -> None:
        self._init_error(english, vietnamese, dict(fields or {}))

    def _init_error(self, english: str, vietnamese: str, fields: dict[str, Any]) -> None:
        if self._main_kind is not None and "kind" not in fields:
            fields = {"kind": self._main_kind, **fields}
        self.english = english
        self.vietnamese = vietnamese
        self.fields = fields
        for key, value in fields.items():
            setattr(self, self._attr_aliases.get(key, key), value)
        Exception.__init__(self, str(self))

    @classmethod
    def _make(cls, english: str, vietnamese: str, fields: dict[str, Any]) -> "MintDimError":
        """Instance for an alternate constructor, bypassing the main constructor."""
        err = cls.__new__(cls)
        err._init_error(english, vietnamese, fields)
        return err

    @classmethod
    def _render(cls, title: M.Text, paragraphs: Sequence[M.Text]) -> tuple[str, str]:
        return M.render(cls.__name__, title, paragraphs)

    def __str__(self) -> str:
        return "[english] " + self.english + "\n\n[vietnam] " + self.vietnamese

    def __repr__(self) -> str:
        facts = ", ".join(f"{key}={value!r}" for key, value in self.fields.items())
        return f"{type(self).__name__}({facts})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: `{"error": ClassName, "fields": {...}}`."""
        return {"error": type(self).__name__, "fields": copy.deepcopy(self.fields)}

    @classmethod
    def _from_fields(cls, fields: Mapping[str, Any]) -> "MintDimError":
        """Rebuild through the constructor that made the error, chosen by `kind`."""
        kind = fields.get("kind")
        if kind is None or kind == cls._main_kind:
            build = cls
        elif kind in cls._variant_kinds:
            build = getattr(cls, kind)
        else:
            raise ValueError(f"unknown kind {kind!r} for {cls.__name__}")
        params = inspect.signature(build).parameters
        return build(**{key: value for key, value in fields.items() if key in params})

    def __reduce__(self) -> tuple[Any, ...]:
        if type(self) is MintDimError:
            return (MintDimError, (self.english, self.vietnamese, self.fields))
        return (error_from_dict, (self.to_dict(),))


def error_from_dict(data: Mapping[str, Any]) -> MintDimError:
    """Rebuild an error from `MintDimError.to_dict()` output: same class, same text."""
    name = data.get("error")
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"not a MintDim error class: {name!r}")
    return cls._from_fields(dict(data.get("fields") or {}))


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


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
        facts = _facts(missing=_as_list(missing))
        english, vietnamese = self._render(
            M.PIPELINE_INCOMPLETE,
            [M.PIPELINE_MISSING, M.bullets(facts["missing"]), M.PIPELINE_MISSING_NOTE],
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
        facts = _facts(
            kind="invalid",
            problem=problem,
            rules=_as_list(rules),
            problem_vi=problem_vi,
            rules_vi=None if rules_vi is None else _as_list(rules_vi),
        )
        paragraphs = [M.labeled(M.PROBLEM, facts["problem"], facts["problem_vi"])]
        if facts["rules"]:
            paragraphs += [M.RULES, M.bullets(facts["rules"], facts["rules_vi"])]
        english, vietnamese = cls._render(M.PIPELINE_INVALID, paragraphs)
        return cls._make(english, vietnamese, facts)


class MintDimFileNotFoundError(MintDimError):
    """A file the build needs (source, tokenizer, ...) does not exist.

    `context` says which part of the configuration named the file, so the user knows
    which argument to fix.
    """

    _variant_kinds = ("not_a_file",)

    def __init__(self, context: str, path: str) -> None:
        facts = _facts(context=context, path=path)
        english, vietnamese = self._render(
            M.FILE_NOT_FOUND,
            [
                M.labeled(M.FILE_NOT_FOUND_CONTEXT, facts["context"]),
                M.labeled(M.FILE_NOT_FOUND_PATH, facts["path"]),
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def not_a_file(cls, context: str, path: str, found: str) -> "MintDimFileNotFoundError":
        """The path exists but is no readable regular file: ``found`` is a key of
        ``messages.FILE_KINDS`` (directory, fifo, char_device, ...). A FIFO would block
        the build's first read forever, so it is refused before any work."""
        facts = _facts(kind="not_a_file", context=context, path=path, found=found)
        what = M.FILE_KINDS.get(facts["found"], M.FILE_KINDS["other"])
        english, vietnamese = cls._render(
            M.FILE_NOT_REGULAR,
            [
                M.labeled(M.FILE_NOT_FOUND_CONTEXT, facts["context"]),
                M.labeled(M.FILE_NOT_REGULAR_PATH, facts["path"]),
                M.labeled(M.FILE_NOT_REGULAR_FOUND, what.en, what.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


class SourceParseError(MintDimError):
    """A non-blank JSONL line is not a JSON object.

    `reason` is one of "invalid UTF-8", "invalid JSON syntax", "JSON nested deeper than
    512 levels" or "JSON value is not an object"; it is also the `reason` column of
    `bad_record_index.jsonl`.
    """

    def __init__(self, file: str, line: int, reason: str) -> None:
        facts = _facts(file=file, line=line, reason=reason)
        english, vietnamese = self._render(
            M.SOURCE_PARSE,
            [
                M.labeled(M.FILE, facts["file"]),
                M.labeled(M.LINE, facts["line"]),
                M.labeled(M.REASON, facts["reason"]),
            ],
        )
        super().__init__(english, vietnamese, facts)

    _variant_kinds = ("looks_compressed", "bad_compressed")

    @classmethod
    def looks_compressed(cls, file: str, line: int, compression: str, extension: str) -> "SourceParseError":
        """A file named as plain JSONL starts with a compressed format's magic bytes.

        Always fatal, whatever the bad-record policy: the whole file is unreadable as
        named, and skipping its "lines" would lose it silently.
        """
        facts = _facts(kind="looks_compressed", file=file, line=line, compression=compression,
                       extension=extension, reason=f"looks {compression}-compressed")
        english, vietnamese = cls._render(
            M.SOURCE_PARSE,
            [
                M.labeled(M.FILE, facts["file"]),
                M.labeled(M.LINE, facts["line"]),
                M.labeled(M.REASON, M.SOURCE_LOOKS_COMPRESSED.en.format(compression=compression),
                          M.SOURCE_LOOKS_COMPRESSED.vi.format(compression=compression)),
                M.labeled(M.FIX, M.SOURCE_LOOKS_COMPRESSED_FIX.en.format(extension=extension),
                          M.SOURCE_LOOKS_COMPRESSED_FIX.vi.format(extension=extension)),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def bad_compressed(cls, file: str, line: int, compression: str, truncated: bool,
                       detail: str = "") -> "SourceParseError":
        """A compressed input is truncated or corrupt from ``line`` on (the lines before
        it were read). Always fatal: the rest of the file cannot be read."""
        facts = _facts(kind="bad_compressed", file=file, line=line, compression=compression, truncated=truncated,
                       detail=detail, reason=f"{'truncated' if truncated else 'corrupt'} {compression} data")
        text = M.SOURCE_TRUNCATED if truncated else M.SOURCE_CORRUPT
        problem = M.Text(text.en.format(compression=compression, detail=detail),
                         text.vi.format(compression=compression, detail=detail))
        english, vietnamese = cls._render(
            M.SOURCE_PARSE,
            [
                M.labeled(M.FILE, facts["file"]),
                M.labeled(M.LINE, facts["line"]),
                M.labeled(M.REASON, problem.en, problem.vi),
                M.labeled(M.FIX, M.SOURCE_BAD_COMPRESSED_FIX.en, M.SOURCE_BAD_COMPRESSED_FIX.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)


class SampleSchemaError(MintDimError):
    """A JSONL object does not fit its declared fields.

    The main form reports missing declared fields; `wrong_type` reports a field whose
    value is an array or an object. `reason` is the short English form written to
    `bad_record_index.jsonl`.
    """

    _main_kind = "missing_fields"
    _variant_kinds = ("wrong_type",)

    def __init__(
        self,
        file: str,
        line: int,
        declared: Sequence[str],
        missing: Sequence[str],
        available: Sequence[str],
    ) -> None:
        facts = _facts(
            file=file,
            line=line,
            declared=_as_list(declared),
            missing=_as_list(missing),
            available=_as_list(available),
        )
        english, vietnamese = self._render(
            M.SAMPLE_MISSING_FIELDS,
            [
                M.labeled(M.FILE, facts["file"]),
                M.labeled(M.LINE, facts["line"]),
                M.labeled(M.SAMPLE_DECLARED, M.words(facts["declared"])),
                M.labeled(M.SAMPLE_MISSING, M.words(facts["missing"])),
                M.labeled(M.SAMPLE_AVAILABLE, M.words(facts["available"])),
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def wrong_type(
        cls, file: str, line: int, declared: Sequence[str], field: str, type_name: str
    ) -> "SampleSchemaError":
        """A declared field holds a value that cannot be rendered as text."""
        facts = _facts(
            kind="wrong_type",
            file=file,
            line=line,
            declared=_as_list(declared),
            field=field,
            type_name=type_name,
        )
        reason = M.SAMPLE_WRONG_TYPE_REASON
        english, vietnamese = cls._render(
            M.SAMPLE_WRONG_TYPE,
            [
                M.labeled(M.FILE, facts["file"]),
                M.labeled(M.LINE, facts["line"]),
                M.labeled(M.FIELD, facts["field"]),
                M.labeled(
                    M.REASON,
                    reason.en.format(type_name=facts["type_name"]),
                    reason.vi.format(type_name=facts["type_name"]),
                ),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @property
    def reason(self) -> str:
        """Short English reason for `bad_record_index.jsonl`."""
        if self.fields.get("kind") == "wrong_type":
            return M.REASON_WRONG_TYPE.format(field=self.fields["field"])
        return M.REASON_MISSING_FIELDS.format(missing=M.words(self.fields["missing"]))


# ---------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------


class TokenizerValidationError(MintDimError):
    """The tokenizer step is structurally wrong, or its file format is unsupported.

    The main form names the `component` at fault and the `problem`, followed by the
    spec's tokenizer rules; `unsupported_format(path)` lists the formats V1 reads.
    """

    _main_kind = "invalid"
    _variant_kinds = ("unsupported_format", "unloadable")

    def __init__(self, component: str, problem: str) -> None:
        facts = _facts(component=component, problem=problem)
        english, vietnamese = self._render(
            M.TOKENIZER_INVALID,
            [
                M.labeled(M.TOKENIZER_COMPONENT, facts["component"]),
                M.labeled(M.PROBLEM, facts["problem"]),
                M.RULES,
                M.bullet_pairs(M.TOKENIZER_RULES),
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def unsupported_format(
        cls, path: str | None = None, tokenizer_type: Any = None
    ) -> "TokenizerValidationError":
        """The tokenizer file is neither a SentencePiece model nor a tokenizer.json.

        `tokenizer_type`, when given, is the unknown value of a job file's
        `tokenizer.type`; the message names it and the closest valid value.
        """
        extra = {} if tokenizer_type is None else {"tokenizer_type": tokenizer_type}
        facts = _facts(kind="unsupported_format", path=path, **extra)
        paragraphs = [] if facts["path"] is None else [M.labeled(M.FILE, facts["path"])]
        if tokenizer_type is not None:
            paragraphs.append(_tokenizer_type_text(facts["tokenizer_type"]))
        paragraphs += [M.TOKENIZER_SUPPORTED_FORMATS, M.bullets(M.TOKENIZER_FORMATS)]
        english, vietnamese = cls._render(M.TOKENIZER_UNSUPPORTED, paragraphs)
        return cls._make(english, vietnamese, facts)


    @classmethod
    def unloadable(cls, path: str, tokenizer_type: str, problem: str, detail: str = "",
                   looks_like: str | None = None) -> "TokenizerValidationError":
        """The tokenizer file cannot be loaded as the declared ``tokenizer_type``.

        ``problem`` is a key of ``messages.TOKENIZER_LOAD_PROBLEMS`` (empty, truncated or
        damaged, not JSON, JSON but not a tokenizer, named as the other format);
        ``detail`` the parser's own words; ``looks_like`` the other type when the bytes
        read as that format, which the message then suggests.
        """
        facts = _facts(kind="unloadable", path=path, tokenizer_type=tokenizer_type, problem=problem,
                       detail=detail, looks_like=looks_like)
        said = M.TOKENIZER_LOAD_PROBLEMS[problem]
        paragraphs = [
            M.labeled(M.FILE, facts["path"]),
            M.labeled(M.TOKENIZER_DECLARED, M.TOKENIZER_FORMAT_OF.get(tokenizer_type, tokenizer_type)),
            M.labeled(M.PROBLEM, said.en.format(detail=detail, extension=detail),
                      said.vi.format(detail=detail, extension=detail)),
        ]
        if looks_like in M.TOKENIZER_LOOKS_LIKE:
            hint = M.TOKENIZER_LOOKS_LIKE[looks_like]
            paragraphs.append(M.labeled(M.FIX, hint.en, hint.vi))
        paragraphs.append(M.labeled(M.RULE, M.TOKENIZER_LOAD_RULE.en, M.TOKENIZER_LOAD_RULE.vi))
        english, vietnamese = cls._render(M.TOKENIZER_UNLOADABLE, paragraphs)
        return cls._make(english, vietnamese, facts)


def _tokenizer_type_text(value: Any) -> M.Text:
    import difflib

    close = difflib.get_close_matches(str(value), M.TOKENIZER_TYPES, n=1, cutoff=0.6)
    hint = M.Text("", "") if not close else M.Text(
        M.TOKENIZER_TYPE_HINT.en.format(close=close[0]), M.TOKENIZER_TYPE_HINT.vi.format(close=close[0]))
    choices = ", ".join(M.TOKENIZER_TYPES)
    return M.Text(
        M.TOKENIZER_TYPE_VALUE.en.format(value=repr(value), hint=hint.en, choices=choices),
        M.TOKENIZER_TYPE_VALUE.vi.format(value=repr(value), hint=hint.vi, choices=choices),
    )


def _unk_chars_text(unk_chars: Sequence[str], literals: Sequence[str] | None) -> M.Text:
    """`'✓' (U+2713), '漢字' (U+6F22 U+5B57) in literal segments '\n✓ '`."""
    shown = ", ".join(
        f"{text!r} ({' '.join(f'U+{ord(ch):04X}' for ch in text)})" for text in unk_chars
    )
    where_en = where_vi = ""
    if literals:
        listed = ", ".join(repr(lit) for lit in literals)
        where_en = f" {M.TEMPLATE_UNK_IN_LITERALS.en} {listed}"
        where_vi = f" {M.TEMPLATE_UNK_IN_LITERALS.vi} {listed}"
    return M.labeled(M.TEMPLATE_UNK_CHARS, shown + where_en, shown + where_vi)


class TokenizerSpecialTokenError(MintDimError):
    """The tokenizer library does not provide a special token MintDim needs.

    Special-token ids (`unk_id`, `pad_id`) come from the tokenizer only, never from the
    user, so the fix is on the tokenizer side; the message says which token is missing.
    """

    def __init__(self, tokenizer: str, special_token: str, problem: str) -> None:
        facts = _facts(tokenizer=tokenizer, special_token=special_token, problem=problem)
        english, vietnamese = self._render(
            M.TOKENIZER_SPECIAL,
            [
                M.labeled(M.TOKENIZER_LABEL, facts["tokenizer"]),
                M.labeled(M.SPECIAL_TOKEN_LABEL, facts["special_token"]),
                M.labeled(M.PROBLEM, facts["problem"]),
                M.labeled(M.RULE, M.TOKENIZER_SPECIAL_RULE.en, M.TOKENIZER_SPECIAL_RULE.vi),
            ],
        )
        super().__init__(english, vietnamese, facts)


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
        facts = _facts(files=files, got=got)
        english, vietnamese = self._render_count(facts["files"], facts["got"])
        super().__init__(english, vietnamese, facts)

    @classmethod
    def _render_count(cls, files: int, got: int) -> tuple[str, str]:
        text = cls._text
        title = M.Text(
            M.MAPPING_TITLE.en.format(
                files=files,
                file_word=M.plural_en(files, "file", "files"),
                got=got,
                noun=M.plural_en(got, text.noun_en, text.nouns_en),
            ),
            M.MAPPING_TITLE.vi.format(files=files, got=got, noun=text.noun_vi),
        )
        return cls._render(title, [M.SUPPORTS, M.bullet_pairs([text.shared, text.per_file])])


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
        facts = _facts(kind="overlap", directory=directory, other=other, relation=relation, resolved=resolved)
        text = M.OUTPUT_OVERLAP_RELATIONS[facts["relation"]]
        english, vietnamese = cls._render(
            M.OUTPUT_OVERLAP,
            [
                M.labeled(M.DIRECTORY, facts["directory"]),
                M.labeled(M.OUTPUT_OVERLAPS_WITH, facts["other"]),
                M.labeled(M.PROBLEM, text.en.format(resolved=facts["resolved"]),
                          text.vi.format(resolved=facts["resolved"])),
                M.labeled(M.FIX, M.OUTPUT_OVERLAP_FIX.en, M.OUTPUT_OVERLAP_FIX.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def holds_input(cls, directory: str, context: str, path: str) -> "OutputMappingError":
        """An input (``context="source"``) or tokenizer file lies inside an output directory."""
        facts = _facts(kind="holds_input", directory=directory, context=context, path=path)
        english, vietnamese = cls._render(
            M.OUTPUT_HOLDS_INPUT,
            [
                M.labeled(M.DIRECTORY, facts["directory"]),
                M.labeled(M.FILE_NOT_FOUND_CONTEXT, facts["context"]),
                M.labeled(M.FILE, facts["path"]),
                M.labeled(M.FIX, M.OUTPUT_HOLDS_INPUT_FIX.en, M.OUTPUT_HOLDS_INPUT_FIX.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def inconsistent(
        cls, directory: str, files: Sequence[str], differs: str
    ) -> "OutputMappingError":
        """Files sharing `directory` differ in `differs` (tokenizer, sequence_template, ...)."""
        facts = _facts(
            kind="inconsistent", directory=directory, files=_as_list(files), differs=differs
        )
        english, vietnamese = cls._render(
            M.OUTPUT_INCONSISTENT,
            [
                M.labeled(M.DIRECTORY, facts["directory"]),
                M.labeled(M.FILES, M.words(facts["files"])),
                M.labeled(M.OUTPUT_DIFFERS, facts["differs"]),
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
        reason = M.Text(reason_en, reason_en if reason_vi is None else reason_vi)
        self._init_error(*self._compose("mismatch", file, fields, template, field, reason))

    @classmethod
    def _compose(
        cls,
        kind: str,
        file: str,
        fields: Sequence[str],
        template: str,
        field: str,
        reason: M.Text,
        **extra: Any,
    ) -> tuple[str, str, dict[str, Any]]:
        facts = _facts(
            kind=kind,
            file=file,
            fields=_as_list(fields),
            template=template,
            field=field,
            reason_en=reason.en,
            reason_vi=reason.vi,
            **extra,
        )
        declaration = M.TEMPLATE_DECLARATION_VALUE.format(
            fields=facts["fields"], template=facts["template"]
        )
        mismatch = M.Text(
            f"{M.TEMPLATE_MISMATCH_FIELD.en} {facts['field']} {M.REASON.en} {reason.en}",
            f"{M.TEMPLATE_MISMATCH_FIELD.vi} {facts['field']} {M.REASON.vi} {reason.vi}",
        )
        english, vietnamese = cls._render(
            M.labeled(M.TEMPLATE_SOURCE_FILE, facts["file"]),
            [M.labeled(M.TEMPLATE_DECLARATION, declaration), mismatch],
        )
        return english, vietnamese, facts

    @classmethod
    def undeclared_placeholder(
        cls, file: str, fields: Sequence[str], template: str, field: str
    ) -> "TemplateFieldMismatchError":
        """The template uses `{field}` but `fields` does not declare it."""
        reason = M.Text(
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
        reason = M.Text(
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
        if problem == "{}" or (offending is None and "empty" in problem):
            reason, shown = M.TEMPLATE_EMPTY_PLACEHOLDER, "{}"
        elif offending is not None and problem.startswith("{") or "'{'" in problem:
            reason, shown = M.TEMPLATE_UNCLOSED_BRACE, "{"
        else:
            reason, shown = M.TEMPLATE_UNOPENED_BRACE, "}"
        field = shown if offending is None else offending
        return cls._make(
            *cls._compose("bad_syntax", file, fields, template, field, reason, problem=problem)
        )


class TemplateTokenizerError(MintDimError):
    """Literal (non-placeholder) text of a template encodes to UNK.

    The literal is repeated in every sample, so every sample would carry the same UNK;
    raised when the template-UNK policy is "abort". `literals` optionally records the
    offending literal segments for programmatic use; the message keeps the spec's text.
    """

    def __init__(
        self,
        file_index: int,
        template: str,
        literals: Sequence[str] | None = None,
        unk_chars: Sequence[str] | None = None,
    ) -> None:
        extra = {} if unk_chars is None else {"unk_chars": _as_list(unk_chars)}
        facts = _facts(
            file_index=file_index,
            template=template,
            literals=None if literals is None else _as_list(literals),
            **extra,
        )
        paragraphs = [
            M.labeled(M.TEMPLATE_UNK_FILE_INDEX, facts["file_index"]),
            M.labeled(M.TEMPLATE_LABEL, repr(facts["template"])),
            M.labeled(M.PROBLEM, M.TEMPLATE_UNK_PROBLEM.en, M.TEMPLATE_UNK_PROBLEM.vi),
        ]
        if facts.get("unk_chars"):
            paragraphs.append(_unk_chars_text(facts["unk_chars"], facts["literals"]))
        paragraphs += [
            M.labeled(M.FIX, M.TEMPLATE_UNK_FIX.en, M.TEMPLATE_UNK_FIX.vi),
            M.TEMPLATE_UNK_POLICY,
        ]
        english, vietnamese = self._render(M.TEMPLATE_UNK, paragraphs)
        super().__init__(english, vietnamese, facts)


# ---------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------


class UnitValidationError(MintDimError):
    """`units.sizes` or `units.build_batch` breaks a unit rule.

    The spec's message lists the rules; an optional `problem` says which rule was broken
    and by what value.
    """

    def __init__(self, problem: str | None = None, problem_vi: str | None = None) -> None:
        facts = _facts(problem=problem)
        if problem_vi is not None:
            facts["problem_vi"] = _plain(problem_vi)
        paragraphs = [] if facts["problem"] is None else [
            M.labeled(M.PROBLEM, facts["problem"], facts.get("problem_vi"))]
        paragraphs += [M.RULES, M.bullet_pairs(M.UNIT_RULES)]
        english, vietnamese = self._render(M.UNIT_INVALID, paragraphs)
        super().__init__(english, vietnamese, facts)


class UnitOverflowError(MintDimError):
    """A sample has more tokens than the largest unit and the overflow policy is "abort"."""

    def __init__(self, file: str, line: int, token_count: int, max_unit_size: int) -> None:
        facts = _facts(file=file, line=line, token_count=token_count, max_unit_size=max_unit_size)
        english, vietnamese = self._render(
            M.UNIT_OVERFLOW,
            [
                M.labeled(M.UNIT_OVERFLOW_SAMPLE, f"{facts['file']}:{facts['line']}"),
                M.labeled(M.UNIT_OVERFLOW_TOKEN_COUNT, facts["token_count"]),
                M.labeled(M.UNIT_OVERFLOW_MAX, facts["max_unit_size"]),
                M.FIX,
                M.bullet_pairs(M.UNIT_OVERFLOW_FIXES),
                M.UNIT_OVERFLOW_POLICY,
            ],
        )
        super().__init__(english, vietnamese, facts)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


class OutputValidationError(MintDimError):
    """The output directory already holds files; MintDim never writes over earlier output.

    ``unusable(directory, reason, detail)``: the directory cannot be an output at all
    (``reason``: ``dangling_link``, ``not_directory`` or ``not_writable``).
    """

    _variant_kinds = ("unusable",)

    def __init__(self, directory: str) -> None:
        facts = _facts(directory=directory)
        english, vietnamese = self._render(
            M.OUTPUT_NOT_EMPTY,
            [M.labeled(M.DIRECTORY, facts["directory"]), M.OUTPUT_USE_NEW],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def unusable(cls, directory: str, reason: str, detail: str) -> "OutputValidationError":
        facts = _facts(kind="unusable", directory=directory, reason=reason, detail=detail)
        problem, fix = M.OUTPUT_UNUSABLE_REASONS[facts["reason"]]
        english, vietnamese = cls._render(
            M.OUTPUT_UNUSABLE,
            [
                M.labeled(M.DIRECTORY, facts["directory"]),
                M.labeled(M.PROBLEM, problem.en.format(detail=facts["detail"]),
                          problem.vi.format(detail=facts["detail"])),
                M.labeled(M.FIX, fix.en, fix.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)


class OutputClaimedError(MintDimError):
    """Another build claimed the output directory: one directory belongs to one build.

    ``owner``, ``host``, ``pid`` and ``started_at`` come from that build's claim;
    ``status`` says what is known of it: ``running`` or ``gone`` (a process on this
    host), ``unknown`` (another host), ``unreadable`` (an empty claim file) or
    ``replaced`` (it overwrote this build's claim on an object store). A claim is never taken over: the text says how to recover.
    """

    def __init__(self, directory: str, owner: str, host: str, pid: int, started_at: str,
                 status: str) -> None:
        facts = _facts(directory=directory, owner=owner, host=host, pid=pid, started_at=started_at,
                       status=status)
        status_text = M.OUTPUT_CLAIMED_STATUSES.get(facts["status"], M.OUTPUT_CLAIMED_STATUSES["unknown"])
        who = {k: facts[k] for k in ("owner", "host", "pid", "started_at")}
        english, vietnamese = self._render(
            M.OUTPUT_CLAIMED,
            [
                M.labeled(M.DIRECTORY, facts["directory"]),
                M.labeled(M.OUTPUT_CLAIMED_BY, M.OUTPUT_CLAIMED_OWNER.en.format(**who),
                          M.OUTPUT_CLAIMED_OWNER.vi.format(**who)),
                M.labeled(M.OUTPUT_CLAIMED_STATUS, status_text.en, status_text.vi),
                M.OUTPUT_CLAIMED_RULE,
            ],
        )
        super().__init__(english, vietnamese, facts)


class TokenDTypeCapacityError(MintDimError):
    """The tokenizer's vocabulary does not fit uint32 next to the reserved magic value.

    Numbers are grouped the way each language writes them (5,000,000,000 in English,
    5.000.000.000 in Vietnamese), as in the spec.
    """

    def __init__(self, vocab_size: int) -> None:
        facts = _facts(vocab_size=vocab_size)
        size = facts["vocab_size"]
        limits = [
            M.Text(
                M.DTYPE_LIMIT.en.format(dtype=dtype, limit=M.number_en(limit)),
                M.DTYPE_LIMIT.vi.format(dtype=dtype, limit=M.number_vi(limit)),
            )
            for dtype, limit in M.DTYPE_LIMITS
        ]
        english, vietnamese = self._render(
            M.DTYPE_CAPACITY,
            [
                M.labeled(M.DTYPE_VOCAB_SIZE, M.number_en(size), M.number_vi(size)),
                M.DTYPE_SUPPORTED,
                M.bullet_pairs(limits),
                M.FIX,
                M.bullet_pairs(M.DTYPE_FIXES),
            ],
        )
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
        problem = M.Text(problem_en, problem_en if problem_vi is None else problem_vi)
        self._init_error(*self._compose(_facts(), problem))

    @classmethod
    def _compose(
        cls, facts: dict[str, Any], problem: M.Text
    ) -> tuple[str, str, dict[str, Any]]:
        facts = {**facts, **_facts(problem_en=problem.en, problem_vi=problem.vi)}
        english, vietnamese = cls._render(
            M.SAMPLES_PER_SHARD_INVALID,
            [
                M.labeled(M.PROBLEM, problem.en, problem.vi),
                M.RULES,
                M.bullet_pairs(M.SAMPLES_PER_SHARD_RULES),
            ],
        )
        return english, vietnamese, facts

    @classmethod
    def not_positive(cls, index: int, value: Any) -> "SamplesPerShardError":
        """`samples_per_shard[index]` is not a positive int (shown with repr)."""
        facts = _facts(kind="not_positive", index=index, value=value)
        shown = repr(facts["value"])
        problem = M.Text(
            M.SAMPLES_PER_SHARD_NOT_POSITIVE.en.format(index=facts["index"], value=shown),
            M.SAMPLES_PER_SHARD_NOT_POSITIVE.vi.format(index=facts["index"], value=shown),
        )
        return cls._make(*cls._compose(facts, problem))

    @classmethod
    def arity(cls, files: int, got: int) -> "SamplesPerShardError":
        """`samples_per_shard` has `got` entries for `files` input files."""
        facts = _facts(kind="arity", files=files, got=got)
        problem = M.Text(
            M.SAMPLES_PER_SHARD_ARITY.en.format(
                files=facts["files"],
                file_word=M.plural_en(facts["files"], "file", "files"),
                got=facts["got"],
                entry_word=M.plural_en(facts["got"], "entry", "entries"),
            ),
            M.SAMPLES_PER_SHARD_ARITY.vi.format(files=facts["files"], got=facts["got"]),
        )
        return cls._make(*cls._compose(facts, problem))


# ---------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------


class StorageAccessError(MintDimError):
    """An object store named by the job cannot be reached with the options given.

    Raised by the access check (``storage_access``) that the launcher and every
    worker run once, with a short deadline, before touching ``gs://`` or ``s3://``;
    without it a wrong endpoint or key shows only after Beam's retries (about ten
    minutes). ``problem`` is ``endpoint``, ``credentials``, ``region``, ``bucket``
    or ``gcs`` and chooses the option the message tells the user to fix;
    ``reason`` is what the store (or the network) answered.
    """

    def __init__(self, path: str, problem: str, reason: str) -> None:
        facts = _facts(path=path, problem=problem, reason=reason)
        fix = M.STORAGE_FIXES.get(facts["problem"], M.STORAGE_FIXES["endpoint"])
        english, vietnamese = self._render(
            M.STORAGE_UNREACHABLE,
            [
                M.labeled(M.STORAGE_PATH, facts["path"]),
                M.labeled(M.REASON, facts["reason"]),
                M.FIX,
                M.bullet_pairs([fix]),
            ],
        )
        super().__init__(english, vietnamese, facts)
