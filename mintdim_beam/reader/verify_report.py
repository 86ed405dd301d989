"""What ``verify`` finds, and how it lists it: :class:`Problem`, :class:`VerifyReport`
and the :class:`Checker` that each check of :mod:`mintdim_beam.reader.verify` (and of
:mod:`mintdim_beam.reader.source_check`, with a tokenizer) adds its problems to.

Its own module so that both of those import it and neither imports the other's
checker: ``verify`` calls ``source_check``, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

LISTED_PER_CHECK = 10          # records listed per (shard, check) before counting the rest


@dataclass(frozen=True)
class Problem:
    """One inconsistency: the file, and the shard record or index line when known."""

    file: str
    message: str
    record: Optional[int] = None
    line: Optional[int] = None

    def __str__(self) -> str:
        where = self.file
        if self.record is not None:
            where += f" record {self.record}"
        if self.line is not None:
            where += f" line {self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class VerifyWarning:
    """Something a training job would meet in a dataset that is not damaged (a sample
    with no loss position): listed, never a failure. ``text`` is English and Vietnamese."""

    file: str
    text: tuple          # errors.bilingual.Text
    line: Optional[int] = None

    def _where(self) -> str:
        return self.file if self.line is None else f"{self.file} line {self.line}"

    def __str__(self) -> str:
        return f"{self._where()}: warning: {self.text.en}"

    @property
    def vietnamese(self) -> str:
        return f"{self._where()}: {self.text.vi}"


#: Warnings kept per report (each kind then only counted): a dataset where every sample
#: lacks the loss role must not list a million lines.
KEPT_WARNINGS = 100


@dataclass
class VerifyReport:
    path: str
    problems: list = field(default_factory=list)
    samples: int = 0
    shards: int = 0
    tokens: int = 0
    units: int = 0
    retokenized: int = 0
    checksummed: Optional[int] = None     # files compared with SHA256SUMS (None: not asked)
    warnings: list = field(default_factory=list)
    no_loss_samples: int = 0              # chat samples without a loss position (all counted)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        text = (f"{self.samples} samples, {self.tokens} tokens in {self.shards} shards over "
                f"{self.units} units")
        if self.retokenized:
            text += f"; {self.retokenized} samples re-tokenized from their sources"
        if self.no_loss_samples:
            text += f"; {self.no_loss_samples} samples without a loss position (warnings)"
        if self.ok:
            sums = "checksums not compared" if self.checksummed is None else \
                f"sha256 of {self.checksummed} files"
            return f"verify OK {self.path}: {text}; {sums}, magic, headers, pad tails, token ids, " \
                   f"shard counts, sample_index, stats.json and histogram.json all consistent"
        n = len(self.problems)
        return f"verify FAILED {self.path}: {n} problem{'s' if n != 1 else ''} ({text})"


class Checker:
    def __init__(self, path: str):
        self.path = path
        self.report = VerifyReport(path)

    def problem(self, file: str, message: str, record=None, line=None) -> None:
        self.report.problems.append(Problem(file, message, record, line))

    def warning(self, file: str, text, line=None) -> bool:
        """List a warning (``text`` a bilingual ``Text``); False once ``KEPT_WARNINGS`` are."""
        if len(self.report.warnings) >= KEPT_WARNINGS:
            return False
        self.report.warnings.append(VerifyWarning(file, text, line))
        return True

    def per_record(self, file: str, records: np.ndarray, describe) -> None:
        """Report a check failing on ``records``: the first few by name, the rest counted."""
        for r in records[:LISTED_PER_CHECK].tolist():
            self.problem(file, describe(r), record=r)
        if len(records) > LISTED_PER_CHECK:
            self.problem(file, f"... and {len(records) - LISTED_PER_CHECK} more records fail the same check "
                               f"({describe(int(records[LISTED_PER_CHECK])).split(':')[0]})")
