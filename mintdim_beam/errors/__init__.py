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

Every English/Vietnamese text lives in the `*_messages` modules of this package:
`build_messages` (the build's errors), `job_messages` (the problems found in a declared
job: its arguments, job file, run options and Beam flags) and `read_messages` (a built
dataset read back), each text a `bilingual.Text` pair laid out by the helpers of
`bilingual`. This module is the catalogue:
every class is importable from here and rebuilt from JSON by its name here, while the
classes live by concept in `config_errors` (arguments and job files),
`tokenizer_errors` (the tokenizer's file, tokens and vocabulary), `data_errors`
(input files, records, output directories, stores) and `read_errors` (a built dataset
read back: the reader, the report, the consumer commands), on the base in `base`.
"""

from __future__ import annotations

from typing import Any, Mapping

from mintdim_beam.errors.config_errors import FieldMappingError, OutputMappingError, PipelineValidationError, SamplesPerShardError, TemplateFieldMismatchError, TemplateMappingError, TokenizerMappingError, UnitMappingError, UnitValidationError
from mintdim_beam.errors.data_errors import BuildLimitError, DiskFullError, InputChangedError, MintDimFileNotFoundError, OutputClaimedError, OutputValidationError, PairCollapseError, SampleSchemaError, SourceParseError, StorageAccessError, StoreRequestError, UnitOverflowError
from mintdim_beam.errors.base import MintDimError, REGISTRY
from mintdim_beam.errors.read_errors import DatasetAccessError, ReaderError, ReportError
from mintdim_beam.errors.tokenizer_errors import TemplateTokenizerError, TokenDTypeCapacityError, TokenizerFailedError, TokenizerSpecialTokenError, TokenizerValidationError

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
    "PairCollapseError",
    "OutputValidationError",
    "OutputClaimedError",
    "TokenDTypeCapacityError",
    "SamplesPerShardError",
    "StorageAccessError",
    "StoreRequestError",
    "InputChangedError",
    "DiskFullError",
    "BuildLimitError",
    "TokenizerFailedError",
    "ReaderError",
    "ReportError",
    "DatasetAccessError",
]


def error_from_dict(data: Mapping[str, Any]) -> MintDimError:
    """Rebuild an error from `MintDimError.to_dict()` output: same class, same text."""
    name = data.get("error")
    cls = REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"not a MintDim error class: {name!r}")
    return cls._from_fields(dict(data.get("fields") or {}))

