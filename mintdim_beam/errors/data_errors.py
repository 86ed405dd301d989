"""Errors met while touching data: input files, records, output directories, stores.

A separate module because these errors name where the data is (a file and line, a
directory, an object-store path) rather than an argument, and most are raised on
workers mid-build, so they travel back to the launcher as facts (`error_base`). The
bad-record policy and `bad_record_index.jsonl` are built on `SourceParseError` and
`SampleSchemaError`.
"""

from __future__ import annotations

from typing import Sequence

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import build_messages as M
from mintdim_beam.errors import chat_messages as C
from mintdim_beam.errors.base import MintDimError, as_list, fact_dict


class MintDimFileNotFoundError(MintDimError):
    """A file the build needs (source, tokenizer, ...) does not exist.

    `context` says which part of the configuration named the file, so the user knows
    which argument to fix.
    """

    _variant_kinds = ("not_a_file",)

    def __init__(self, context: str, path: str) -> None:
        facts = fact_dict(context=context, path=path)
        english, vietnamese = self._render(
            M.FILE_NOT_FOUND,
            [
                B.labeled(M.FILE_NOT_FOUND_CONTEXT, facts["context"]),
                B.labeled(M.FILE_NOT_FOUND_PATH, facts["path"]),
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def not_a_file(cls, context: str, path: str, found: str) -> "MintDimFileNotFoundError":
        """The path exists but is no readable regular file: ``found`` is a key of
        ``build_messages.FILE_KINDS`` (directory, fifo, char_device, ...). A FIFO would block
        the build's first read forever, so it is refused before any work."""
        facts = fact_dict(kind="not_a_file", context=context, path=path, found=found)
        what = M.FILE_KINDS.get(facts["found"], M.FILE_KINDS["other"])
        english, vietnamese = cls._render(
            M.FILE_NOT_REGULAR,
            [
                B.labeled(M.FILE_NOT_FOUND_CONTEXT, facts["context"]),
                B.labeled(M.FILE_NOT_REGULAR_PATH, facts["path"]),
                B.labeled(M.FILE_NOT_REGULAR_FOUND, what.en, what.vi),
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
        facts = fact_dict(file=file, line=line, reason=reason)
        english, vietnamese = self._render(
            M.SOURCE_PARSE,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.REASON, facts["reason"]),
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
        facts = fact_dict(kind="looks_compressed", file=file, line=line, compression=compression,
                       extension=extension, reason=f"looks {compression}-compressed")
        english, vietnamese = cls._render(
            M.SOURCE_PARSE,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.REASON, M.SOURCE_LOOKS_COMPRESSED.en.format(compression=compression),
                          M.SOURCE_LOOKS_COMPRESSED.vi.format(compression=compression)),
                B.labeled(M.FIX, M.SOURCE_LOOKS_COMPRESSED_FIX.en.format(extension=extension),
                          M.SOURCE_LOOKS_COMPRESSED_FIX.vi.format(extension=extension)),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def bad_compressed(cls, file: str, line: int, compression: str, truncated: bool,
                       detail: str = "") -> "SourceParseError":
        """A compressed input is truncated or corrupt from ``line`` on (the lines before
        it were read). Always fatal: the rest of the file cannot be read."""
        facts = fact_dict(kind="bad_compressed", file=file, line=line, compression=compression, truncated=truncated,
                       detail=detail, reason=f"{'truncated' if truncated else 'corrupt'} {compression} data")
        text = M.SOURCE_TRUNCATED if truncated else M.SOURCE_CORRUPT
        problem = B.Text(text.en.format(compression=compression, detail=detail),
                         text.vi.format(compression=compression, detail=detail))
        english, vietnamese = cls._render(
            M.SOURCE_PARSE,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.REASON, problem.en, problem.vi),
                B.labeled(M.FIX, M.SOURCE_BAD_COMPRESSED_FIX.en, M.SOURCE_BAD_COMPRESSED_FIX.vi),
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
    _variant_kinds = ("wrong_type", "chat")

    def __init__(
        self,
        file: str,
        line: int,
        declared: Sequence[str],
        missing: Sequence[str],
        available: Sequence[str],
    ) -> None:
        facts = fact_dict(
            file=file,
            line=line,
            declared=as_list(declared),
            missing=as_list(missing),
            available=as_list(available),
        )
        english, vietnamese = self._render(
            M.SAMPLE_MISSING_FIELDS,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.SAMPLE_DECLARED, B.words(facts["declared"])),
                B.labeled(M.SAMPLE_MISSING, B.words(facts["missing"])),
                B.labeled(M.SAMPLE_AVAILABLE, B.words(facts["available"])),
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def wrong_type(
        cls, file: str, line: int, declared: Sequence[str], field: str, type_name: str
    ) -> "SampleSchemaError":
        """A declared field holds a value that cannot be rendered as text."""
        facts = fact_dict(
            kind="wrong_type",
            file=file,
            line=line,
            declared=as_list(declared),
            field=field,
            type_name=type_name,
        )
        reason = M.SAMPLE_WRONG_TYPE_REASON
        english, vietnamese = cls._render(
            M.SAMPLE_WRONG_TYPE,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.FIELD, facts["field"]),
                B.labeled(
                    M.REASON,
                    reason.en.format(type_name=facts["type_name"]),
                    reason.vi.format(type_name=facts["type_name"]),
                ),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @classmethod
    def chat(cls, file: str, line: int, field: str, problem, problem_vi: str | None = None) -> "SampleSchemaError":
        """A conversation (a chat source's list field) that cannot be rendered:
        ``problem`` is a `chat_messages` text filled in (or its English, with
        ``problem_vi``), naming the message."""
        if isinstance(problem, B.Text):
            problem, problem_vi = problem.en, problem.vi
        facts = fact_dict(kind="chat", file=file, line=line, field=field, problem=problem,
                          problem_vi=problem_vi or problem)
        problem = B.Text(facts["problem"], facts["problem_vi"])
        english, vietnamese = cls._render(
            C.SAMPLE_CHAT,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.FIELD, facts["field"]),
                B.labeled(C.CHAT_PROBLEM, problem.en, problem.vi),
            ],
        )
        return cls._make(english, vietnamese, facts)

    @property
    def reason(self) -> str:
        """Short English reason for `bad_record_index.jsonl`."""
        if self.fields.get("kind") == "chat":
            return self.fields["problem"]
        if self.fields.get("kind") == "wrong_type":
            return M.REASON_WRONG_TYPE.format(field=self.fields["field"])
        return M.REASON_MISSING_FIELDS.format(missing=B.words(self.fields["missing"]))




class PairCollapseError(MintDimError):
    """A preference pair whose chosen and rejected records are the same tokens once
    written (identical completions, or both cut away by truncation), and
    ``on_pair_collapse`` is "abort" (DESIGN.md §9: never written silently)."""

    def __init__(self, file: str, line: int, tokens: int, unit: int) -> None:
        facts = fact_dict(file=file, line=line, tokens=tokens, unit=unit)
        english, vietnamese = self._render(
            C.PAIR_COLLAPSED,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                C.PAIR_COLLAPSED_DETAIL.format(tokens=facts["tokens"], unit=facts["unit"]),
                C.PAIR_COLLAPSED_FIX,
            ],
        )
        super().__init__(english, vietnamese, facts)


class UnitOverflowError(MintDimError):
    """A sample has more tokens than the largest unit and the overflow policy is "abort".

    ``beyond_maximum(...)``: the policy is "extend", but the sample is longer than any
    unit may be (``config.MAX_UNIT_SIZE``), so no unit can be added for it.
    """

    _variant_kinds = ("beyond_maximum",)

    def __init__(self, file: str, line: int, token_count: int, max_unit_size: int) -> None:
        facts = fact_dict(file=file, line=line, token_count=token_count, max_unit_size=max_unit_size)
        english, vietnamese = self._render(
            M.UNIT_OVERFLOW,
            [
                B.labeled(M.UNIT_OVERFLOW_SAMPLE, f"{facts['file']}:{facts['line']}"),
                B.labeled(M.UNIT_OVERFLOW_TOKEN_COUNT, facts["token_count"]),
                B.labeled(M.UNIT_OVERFLOW_MAX, facts["max_unit_size"]),
                M.FIX,
                B.bullet_pairs(M.UNIT_OVERFLOW_FIXES),
                M.UNIT_OVERFLOW_POLICY,
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def beyond_maximum(cls, file: str, line: int, token_count: int, max_unit_size: int) -> "UnitOverflowError":
        facts = fact_dict(kind="beyond_maximum", file=file, line=line, token_count=token_count,
                       max_unit_size=max_unit_size)
        english, vietnamese = cls._render(
            M.UNIT_OVERFLOW,
            [
                B.labeled(M.UNIT_OVERFLOW_SAMPLE, f"{facts['file']}:{facts['line']}"),
                B.labeled(M.UNIT_OVERFLOW_TOKEN_COUNT, facts["token_count"]),
                B.labeled(M.UNIT_OVERFLOW_MAX, facts["max_unit_size"]),
                B.labeled(M.PROBLEM, M.UNIT_OVERFLOW_EXTEND_LIMIT.en, M.UNIT_OVERFLOW_EXTEND_LIMIT.vi),
                M.FIX,
                B.bullet_pairs(M.UNIT_OVERFLOW_EXTEND_FIXES),
            ],
        )
        return cls._make(english, vietnamese, facts)


class BuildLimitError(MintDimError):
    """An output failed a guard rail before anything was published (DESIGN.md §8).

    The main form: the output received no sample (``samples`` non-blank lines read, of
    which ``bad_records`` were left out by ``on_bad_record: skip`` and
    ``overflow_skipped`` by ``on_overflow: skip``); a build always fails then.
    ``too_many_bad_records``: more bad records than ``max_bad_records`` allows
    (``limit``, a count or a fraction of ``samples``; ``allowed`` the most that pass).
    ``too_much_unk``: more of the written ``tokens`` are UNK than ``max_unk_fraction``
    (``limit``) allows (``allowed`` UNK tokens at most).
    """

    _main_kind = "no_samples"
    _variant_kinds = ("too_many_bad_records", "too_much_unk")

    def __init__(self, directory: str, samples: int, bad_records: int, overflow_skipped: int) -> None:
        facts = fact_dict(directory=directory, samples=samples, bad_records=bad_records,
                          overflow_skipped=overflow_skipped)
        reasons = [reason for reason, count in (("bad_records", facts["bad_records"]),
                                                ("overflow", facts["overflow_skipped"])) if count]
        paragraphs = [
            B.labeled(M.DIRECTORY, facts["directory"]),
            B.labeled(M.LIMIT_SAMPLES_READ, *M.LIMIT_SAMPLES_READ_TEXT.format(samples=B.number(facts["samples"]))),
        ]
        if facts["bad_records"]:
            paragraphs.append(B.labeled(M.LIMIT_BAD, *M.LIMIT_BAD_SKIPPED.format(bad=B.number(facts["bad_records"]))))
        if facts["overflow_skipped"]:
            paragraphs.append(B.labeled(M.LIMIT_OVERFLOW, *M.LIMIT_OVERFLOW_SKIPPED.format(
                dropped=B.number(facts["overflow_skipped"]))))
        paragraphs += [M.FIX, B.bullet_pairs(M.LIMIT_NO_SAMPLES_FIXES[r] for r in reasons or ["no_lines"])]
        english, vietnamese = self._render(M.LIMIT_NO_SAMPLES, paragraphs)
        super().__init__(english, vietnamese, facts)

    @classmethod
    def too_many_bad_records(cls, directory: str, samples: int, bad_records: int, limit: float,
                             allowed: int) -> "BuildLimitError":
        facts = fact_dict(kind="too_many_bad_records", directory=directory, samples=samples,
                          bad_records=bad_records, limit=limit, allowed=allowed)
        share = facts["bad_records"] / facts["samples"] if facts["samples"] else 1.0
        counted = isinstance(facts["limit"], int)
        bound = (M.LIMIT_BAD_COUNT if counted else M.LIMIT_BAD_FRACTION).format(
            limit=facts["limit"], allowed=B.number(facts["allowed"]), samples=B.number(facts["samples"]))
        english, vietnamese = cls._render(M.LIMIT_BAD_RECORDS, [
            B.labeled(M.DIRECTORY, facts["directory"]),
            B.labeled(M.LIMIT_BAD, *M.LIMIT_BAD_OF.format(bad=B.number(facts["bad_records"]),
                                                         samples=B.number(facts["samples"]),
                                                         share=B.percent(share))),
            B.labeled(M.LIMIT_LABEL, *bound),
            B.labeled(M.FIX, *M.LIMIT_BAD_FIX),
        ])
        return cls._make(english, vietnamese, facts)

    @classmethod
    def too_much_unk(cls, directory: str, tokens: int, unk_tokens: int, samples_with_unk: int, limit: float,
                     allowed: int) -> "BuildLimitError":
        facts = fact_dict(kind="too_much_unk", directory=directory, tokens=tokens, unk_tokens=unk_tokens,
                          samples_with_unk=samples_with_unk, limit=limit, allowed=allowed)
        share = facts["unk_tokens"] / facts["tokens"] if facts["tokens"] else 1.0
        english, vietnamese = cls._render(M.LIMIT_UNK, [
            B.labeled(M.DIRECTORY, facts["directory"]),
            B.labeled(M.LIMIT_UNK_TOKENS, *M.LIMIT_UNK_OF.format(
                unk=B.number(facts["unk_tokens"]), tokens=B.number(facts["tokens"]), share=B.percent(share),
                samples=B.number(facts["samples_with_unk"]))),
            B.labeled(M.LIMIT_LABEL, *M.LIMIT_UNK_ALLOWED.format(limit=facts["limit"],
                                                                allowed=B.number(facts["allowed"]))),
            B.labeled(M.FIX, *M.LIMIT_UNK_FIX),
        ])
        return cls._make(english, vietnamese, facts)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


class OutputValidationError(MintDimError):
    """The output directory already holds files; MintDim never writes over earlier output.

    ``unusable(directory, reason, detail)``: the directory cannot be an output at all
    (``reason``: ``dangling_link``, ``not_directory``, ``not_writable``, ``shared_writable``, ``inside_staging``, or for a versioned root
    ``latest_not_file`` and ``dataset_as_root``).
    """

    _variant_kinds = ("unusable",)

    def __init__(self, directory: str) -> None:
        facts = fact_dict(directory=directory)
        english, vietnamese = self._render(
            M.OUTPUT_NOT_EMPTY,
            [B.labeled(M.DIRECTORY, facts["directory"]), M.OUTPUT_USE_NEW],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def unusable(cls, directory: str, reason: str, detail: str) -> "OutputValidationError":
        facts = fact_dict(kind="unusable", directory=directory, reason=reason, detail=detail)
        problem, fix = M.OUTPUT_UNUSABLE_REASONS[facts["reason"]]
        english, vietnamese = cls._render(
            M.OUTPUT_UNUSABLE,
            [
                B.labeled(M.DIRECTORY, facts["directory"]),
                B.labeled(M.PROBLEM, problem.en.format(detail=facts["detail"]),
                          problem.vi.format(detail=facts["detail"])),
                B.labeled(M.FIX, fix.en, fix.vi),
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
        facts = fact_dict(directory=directory, owner=owner, host=host, pid=pid, started_at=started_at,
                       status=status)
        status_text = M.OUTPUT_CLAIMED_STATUSES.get(facts["status"], M.OUTPUT_CLAIMED_STATUSES["unknown"])
        who = {k: facts[k] for k in ("owner", "host", "pid", "started_at")}
        english, vietnamese = self._render(
            M.OUTPUT_CLAIMED,
            [
                B.labeled(M.DIRECTORY, facts["directory"]),
                B.labeled(M.OUTPUT_CLAIMED_BY, M.OUTPUT_CLAIMED_OWNER.en.format(**who),
                          M.OUTPUT_CLAIMED_OWNER.vi.format(**who)),
                B.labeled(M.OUTPUT_CLAIMED_STATUS, status_text.en, status_text.vi),
                M.OUTPUT_CLAIMED_RULE,
            ],
        )
        super().__init__(english, vietnamese, facts)


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
        facts = fact_dict(path=path, problem=problem, reason=reason)
        fix = M.STORAGE_FIXES.get(facts["problem"], M.STORAGE_FIXES["endpoint"])
        english, vietnamese = self._render(
            M.STORAGE_UNREACHABLE,
            [
                B.labeled(M.STORAGE_PATH, facts["path"]),
                B.labeled(M.REASON, facts["reason"]),
                M.FIX,
                B.bullet_pairs([fix]),
            ],
        )
        super().__init__(english, vietnamese, facts)


class InputChangedError(MintDimError):
    """An input file changed while the build read it: its size now (or as the
    fingerprint hashed it) is not the size its blocks were planned from.

    The manifest's fingerprint must vouch for exactly the bytes the dataset holds; a
    line appended during the build would be fingerprinted and never built, and the
    next ``--skip-unchanged`` would never build it. Nothing is published.
    """

    def __init__(self, file: str, listed_size: int, size_now: int) -> None:
        facts = fact_dict(file=file, listed_size=listed_size, size_now=size_now)
        english, vietnamese = self._render(
            M.INPUT_CHANGED,
            [
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.INPUT_CHANGED_SIZES, M.INPUT_CHANGED_SIZES_TEXT.en.format(**facts),
                          M.INPUT_CHANGED_SIZES_TEXT.vi.format(**facts)),
                B.labeled(M.FIX, M.INPUT_CHANGED_FIX.en, M.INPUT_CHANGED_FIX.vi),
            ],
        )
        super().__init__(english, vietnamese, facts)


class DiskFullError(MintDimError):
    """The disk (or the store's quota) filled up while the build wrote ``path``: a job
    error, not a crash. Nothing was published; ``free_bytes`` is what was left there
    when the build stopped (-1 where unknown), ``needed_bytes`` what the write that
    failed was about to write (-1 where the build did not know: a stream)."""

    def __init__(self, path: str, free_bytes: int, needed_bytes: int = -1) -> None:
        facts = fact_dict(path=path, free_bytes=free_bytes, needed_bytes=needed_bytes)
        paragraphs = [B.labeled(M.STORAGE_PATH, facts["path"]), B.labeled(M.DISK_FREE, facts["free_bytes"])]
        if facts["needed_bytes"] >= 0:
            paragraphs.append(B.labeled(M.DISK_NEEDED, facts["needed_bytes"]))
        paragraphs.append(B.labeled(M.FIX, M.DISK_FULL_FIX.en, M.DISK_FULL_FIX.vi))
        english, vietnamese = self._render(M.DISK_FULL, paragraphs)
        super().__init__(english, vietnamese, facts)

    @classmethod
    def at(cls, path: str, needed_bytes: int = -1) -> "DiskFullError":
        """The error for ``path``, with the space left in its folder now."""
        import os
        import shutil

        folder = os.path.dirname(path) if path and "://" not in path else ""
        while folder and not os.path.isdir(folder):
            folder = os.path.dirname(folder)
        try:
            free = shutil.disk_usage(folder).free if folder else -1
        except OSError:
            free = -1
        return cls(path, free, needed_bytes)


class StoreRequestError(MintDimError):
    """An object store kept failing one request (or stopped answering it) after the
    bounded retries of ``storage.clients`` (``S3_ATTEMPTS``): a job error, not a crash.

    ``operation`` is the request (``PUT``, ``DELETE``, ...) and ``api`` the store's name
    for it (``PutObject``); ``status`` is the store's HTTP status (0: no answer at all,
    a connection reset or a timeout), ``code`` and ``reason`` its own error code and
    message. ``claim`` says what became of the output's claim once the build stopped
    (``released``, ``left``: it could not be removed, at ``claim_path``), empty where the
    worker that met the error cannot know; the launcher fills it in (:meth:`with_claim`).
    """

    def __init__(self, operation: str, path: str, api: str, status: int, code: str, reason: str,
                 attempts: int, claim: str = "", claim_path: str = "") -> None:
        facts = fact_dict(operation=operation, path=path, api=api, status=status, code=code, reason=reason,
                          attempts=attempts, claim=claim, claim_path=claim_path)
        answer = (M.STORE_ANSWER_TEXT if facts["status"] else M.STORE_NO_ANSWER).format(**facts)
        paragraphs = [
            B.labeled(M.STORE_REQUEST, M.STORE_REQUEST_TEXT.en.format(**facts)),
            B.labeled(M.STORE_ANSWER, answer.en, answer.vi),
            B.labeled(M.STORE_ATTEMPTS, *M.STORE_ATTEMPTS_TEXT.format(**facts)),
        ]
        if facts["claim"] in M.STORE_CLAIM_STATES:
            paragraphs.append(B.labeled(M.STORE_CLAIM, *M.STORE_CLAIM_STATES[facts["claim"]].format(**facts)))
        paragraphs.append(B.labeled(M.FIX, M.STORE_FIX.en, M.STORE_FIX.vi))
        english, vietnamese = self._render(M.STORE_FAILED, paragraphs)
        super().__init__(english, vietnamese, facts)

    def with_claim(self, claim: str, claim_path: str = "") -> "StoreRequestError":
        """The same error, saying what became of the output's claim."""
        facts = {**self.fields, "claim": claim, "claim_path": claim_path}
        return type(self)(**facts)
