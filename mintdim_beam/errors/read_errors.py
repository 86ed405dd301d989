"""Errors met while reading a built dataset back: the reader, the report, the commands.

The build's errors say which argument or input line to fix; these say which file of a
dataset is not what its build wrote (a truncated shard, an edited index, a missing
manifest), where in it (shard, record, sample, index line), and what disagrees. They
are `MintDimError`s like the build's, with the same two blocks, so a script catching
`MintDimError` catches a damaged dataset too, and an error raised in a worker (an
export on Beam, a data loader process) is rebuilt from its facts.

Each problem is one line per language: where, then what, as `read_messages.READ_PROBLEMS`
words it under a key (``kind``). A problem made of parts (several checks failing on one
record) is joined into one `detail` by the module that found it. ``verify`` lists the
same problems in English as a report (exit 1) instead of raising: `ReaderError.reason`
is that English line.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import read_messages as R
from mintdim_beam.errors.base import MintDimError, fact_dict


class _ReadingError(MintDimError):
    """One line per language: the location facts, then ``READ_PROBLEMS[kind]``."""

    def __init__(self, kind: str, path: Optional[str] = None, *, file: Optional[str] = None,
                 shard: Optional[str] = None, record: Optional[int] = None, sample_id: Optional[int] = None,
                 line: Optional[int] = None, **facts: Any) -> None:
        if kind not in R.READ_PROBLEMS:
            given = (path, file, shard, record, sample_id, line)
            if facts or any(v is not None for v in given):
                raise TypeError(f"unknown kind {kind!r} for {type(self).__name__}")
            # A ready-made text: a copy made where only the text travelled (a PyTorch
            # DataLoader re-raises a worker's error as ``type(err)(text)``, the text
            # holding the original's two blocks), so the class survives.
            kind, facts = "relayed", {"text": kind}
        facts = fact_dict(kind=kind, path=path, file=file, shard=shard, record=record, sample_id=sample_id,
                       line=line, **facts)
        text = R.read_text(kind, **facts)
        english, vietnamese = self._render(self._located(facts, text), [])
        super().__init__(english, vietnamese, facts)

    @staticmethod
    def _located(facts: dict, text: B.Text) -> B.Text:
        """``path: where: problem``, leaving out what the problem's wording names itself."""
        template = R.READ_PROBLEMS[facts["kind"]].en
        en, vi = [], []
        if facts["path"] is not None and "{path}" not in template:
            en.append(facts["path"])
            vi.append(facts["path"])
        where = facts["file"] if facts["file"] is not None else facts["shard"]
        if where is not None and "{file}" not in template and "{shard}" not in template:
            at = None
            if facts["record"] is not None:
                row = facts["sample_id"] is not None and facts["line"] is not None
                at = R.READ_AT_ROW if row else R.READ_AT_RECORD
            elif facts["line"] is not None:
                at = R.READ_AT_LINE
            place = B.same(where) if at is None else B.Text(at.en.format(where=where, **facts),
                                                              at.vi.format(where=where, **facts))
            en.append(place.en)
            vi.append(place.vi)
        return B.Text(": ".join([*en, text.en]), ": ".join([*vi, text.vi]))

    @property
    def reason(self) -> str:
        """The English line without the class name (what ``verify`` lists as a problem)."""
        return self.english[len(type(self).__name__) + 2:]

    @classmethod
    def _from_fields(cls, fields: Mapping[str, Any]) -> "_ReadingError":
        return cls(**fields)


class ReaderError(_ReadingError):
    """The directory is not a readable, consistent mintdim output.

    ``kind`` is the key of the problem in ``read_messages.READ_PROBLEMS``; ``path`` the
    dataset; ``file`` the file it concerns (relative to ``path``, or a full path when
    no dataset is known); a record that disagrees with the index or the manifest says
    where: ``shard`` (the shard path relative to the directory), ``record``,
    ``sample_id`` and ``line`` (of ``sample_index.jsonl``), None when unknown.
    """


class ReportError(_ReadingError):
    """The HTML report cannot be made: matplotlib, which draws its charts, is missing
    (``no_matplotlib``). A dataset that cannot be read is the reader's `ReaderError`."""


class DatasetAccessError(_ReadingError):
    """A consumer command (``verify``, ``inspect``, ``plan``, ``report``, ``export``)
    cannot do what it was asked: ``no_directory`` (no dataset at the ``paths``), a
    sample id with no record (``bad_record_sample``, ``dropped_sample``, ``no_sample``),
    an option it cannot use (``shard_needs_record``, ``sizes_not_integers``, ...), an
    output that exists already (``target_exists``, without ``--overwrite``), or
    ``command_failed`` with the system's own words as ``why`` (a file that cannot be
    written, ...). ``command`` names the command."""
