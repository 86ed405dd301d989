"""What a record read back must agree with, checked with numpy (pure).

A record carries no checksum of its own, but the directory says a lot about it: the
magic and pad id (``length_field.json``), the vocabulary size (``manifest.json``), and
its sample's token count and empty fields (``sample_index.jsonl``). The checks are
made here once (:func:`check_records`, vectorised over a batch of records) for both
users: the reader checks every record it hands out (:func:`record_problem`), one record
for random access or a whole batch of a shard at once for bulk reads, so that a
corrupted shard raises instead of returning tokens; ``verify`` scans every shard in
chunks with the same function and lists each failing record (:class:`Findings`). The
record's place (records of a unit are in ascending sample_id) is the reader's to check,
since it needs the whole index.

A token changed to another valid id passes all of that; only a file's sha256 against
the line ``SHA256SUMS`` holds for it (:func:`checksum_problem`) finds it. The reader
and ``verify`` share the parsing of that file. ``meta`` below is the dataset's
metadata as the reader loads it (``reader.output_files.Metadata``: segment count, magic,
pad id, vocabulary size); this layer only reads those attributes. Problems are worded
as ``read_messages.READ_PROBLEMS`` pairs, so a raised error says them in both languages.
"""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple, Optional

import numpy as np

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import read_messages as R
from mintdim_beam.format.names import CHECKSUMS


_CHECKSUM_LINE = re.compile(r"([0-9a-f]{64})  (\S.*)")


class RecordBatch(NamedTuple):
    """Consecutive records of one shard, checked, with the samples they hold.

    ``records`` is ``(k, slots)``: magic, the segment lengths, the padded payload;
    ``sample_ids[j]`` is the sample of ``records[j]``, at ``first_record + j`` of
    ``shard_path``. Locally ``records`` is a view of the memory-mapped shard.
    """

    unit: int
    shard_path: str
    first_record: int
    sample_ids: np.ndarray
    records: np.ndarray
    n_segments: int

    @property
    def lengths(self) -> np.ndarray:
        """``(k, n_segments)`` segment lengths (int64)."""
        return self.records[:, 1:1 + self.n_segments].astype(np.int64)

    @property
    def token_counts(self) -> np.ndarray:
        return self.lengths.sum(axis=1)

    def payload(self, j: int) -> np.ndarray:
        """The written tokens of record ``j`` (no padding)."""
        start = 1 + self.n_segments
        return self.records[j, start:start + int(self.token_counts[j])]


# the checks, in the order a record failing several names them
CHECKS = ("magic", "over_unit", "token_count", "empty_filled", "vocab", "pad_tail")


class Findings:
    """Which of ``k`` records fail which check, with the facts of each failure.

    A check is one of ``CHECKS``, named as its ``read_messages.READ_PROBLEMS`` wording: each
    holds a ``(k,)`` mask of the records failing it and, for a record ``j`` among them,
    its facts (:meth:`facts`: the values that wording names). A check that was not
    asked for, or that no record can fail (the vocabulary when no id reaches it), has
    none failing. ``total`` (each record's header length sum, int64) and ``written``
    (``(k, unit)``: the payload slots that hold written tokens) are the figures the
    checks derive, kept for callers that count over the same records (verify's UNK
    tokens).
    """

    def __init__(self, k: int, total: np.ndarray, written: Optional[np.ndarray] = None):
        self.k = k
        self.total = total
        self.written = written
        self._checks: dict = {}       # kind -> (mask, facts of record j)

    def add(self, kind: str, mask: np.ndarray, facts) -> None:
        self._checks[kind] = (mask, facts)

    def failing(self, kind: str) -> np.ndarray:
        """Positions, ascending, of the records failing ``kind``."""
        check = self._checks.get(kind)
        return np.zeros(0, np.int64) if check is None else np.nonzero(check[0])[0]

    def facts(self, kind: str, j: int) -> dict:
        """What disagrees in record ``j`` (failing ``kind``), as the wording's fields."""
        return self._checks[kind][1](j)

    def text(self, kind: str, j: int) -> B.Text:
        """:meth:`facts` worded in both languages."""
        facts = self.facts(kind, j)
        if kind == "empty_filled":
            facts = {"detail": B.joined((R.read_text("empty_segment", segment=s, name=name, count=count)
                                         for s, name, count in facts["segments"]), ", ")}
        return R.read_text(kind, **facts)

    def first(self) -> Optional[tuple[int, B.Text]]:
        """``(j, every check record j fails, worded)`` for the first failing record, or None."""
        bad = np.zeros(self.k, bool)
        for mask, _ in self._checks.values():
            bad |= mask
        if not bad.any():
            return None
        j = int(np.argmax(bad))
        return j, B.joined(self.text(kind, j) for kind, (mask, _) in self._checks.items() if mask[j])


def check_records(meta, unit: int, records: np.ndarray, token_counts: Optional[np.ndarray] = None,
                  empty: Optional[np.ndarray] = None) -> Findings:
    """Every check of ``records`` (``(k, slots)`` of unit ``unit``), all at once with numpy.

    ``magic``: slot 0 against the magic; ``over_unit``: the segment lengths summing to
    more than the unit; ``token_count``: their sum against ``token_counts``
    (sample_index.jsonl's, when given: :func:`check_token_counts`); ``empty_filled``:
    segments with tokens among ``empty`` (``(k, n_segments)`` booleans: segments of the
    fields listed in ``empty_fields``, which hold no token), when given; ``vocab``: a
    written token id at or above the manifest's vocabulary size; ``pad_tail``: a slot
    after the written tokens that is not the pad id.
    """
    k = records.shape[0]
    n = meta.n_segments
    lengths = records[:, 1:1 + n].astype(np.int64)
    total = lengths.sum(axis=1)
    payload = records[:, 1 + n:]
    written = np.arange(unit)[None, :] < np.minimum(total, unit)[:, None]
    found = Findings(k, total, written)
    magic = records[:, 0]
    found.add("magic", magic != meta.magic, lambda j: {"got": int(magic[j]), "want": meta.magic})
    found.add("over_unit", total > unit, lambda j: {"lengths": lengths[j].tolist(), "total": int(total[j]),
                                                    "unit": unit})
    if token_counts is not None:
        _token_counts(found, total, token_counts, lengths)
    if empty is not None:
        filled = (lengths != 0) & empty
        found.add("empty_filled", filled.any(axis=1), lambda j: {"segments": [
            (s, meta.sequence_template[s], int(lengths[j, s])) for s in np.nonzero(filled[j])[0].tolist()]})
    # one reduction over the batch settles the vocabulary for nearly every batch (the
    # pad id is an id of the vocabulary too); only a batch with a large id is masked
    if meta.vocab_size is not None and int(payload.max(initial=0)) >= meta.vocab_size:
        over = (payload >= meta.vocab_size) & written
        found.add("vocab", over.any(axis=1), lambda j: {
            "id": int(payload[j, np.argmax(over[j])]), "at": int(np.argmax(over[j])), "vocab": meta.vocab_size})
    dirty = (payload != meta.pad_id) > written
    found.add("pad_tail", dirty.any(axis=1), lambda j: {
        "slot": int(np.argmax(dirty[j])), "got": int(payload[j, np.argmax(dirty[j])]), "total": int(total[j]),
        "pad": meta.pad_id})
    return found


def check_token_counts(total: np.ndarray, token_counts: np.ndarray) -> Findings:
    """The ``token_count`` check alone, of records whose header length sums ``total``
    are known already (verify recounts them while it scans the shards, before it reads
    the index): facts ``total`` and ``count``."""
    total = np.asarray(total, np.int64)
    found = Findings(len(total), total)
    _token_counts(found, total, np.asarray(token_counts), None)
    return found


def _token_counts(found: Findings, total: np.ndarray, token_counts: np.ndarray, lengths) -> None:
    def facts(j):
        out = {"total": int(total[j]), "count": int(token_counts[j])}
        if lengths is not None:
            out["lengths"] = lengths[j].tolist()
        return out

    found.add("token_count", total != token_counts, facts)


def record_problem(meta, unit: int, records: np.ndarray, token_counts: Optional[np.ndarray] = None,
                   empty: Optional[np.ndarray] = None) -> Optional[tuple[int, B.Text]]:
    """The first of ``records`` (``(k, slots)``) that disagrees with what is known of it:
    ``(j, what disagrees)`` (in both languages), or None. The checks are
    :func:`check_records`'; a single record (random access) is first passed through
    them with as few numpy calls as possible."""
    k = records.shape[0]
    if k == 0 or (k == 1 and _fine(meta, unit, records[0], token_counts, empty)):
        return None
    return check_records(meta, unit, records, token_counts, empty).first()


def _fine(meta, unit: int, record: np.ndarray, token_counts, empty) -> bool:
    """The checks of :func:`record_problem` on one record, with as few numpy calls as
    possible (random access reads one record at a time): True when all pass."""
    n = meta.n_segments
    lengths = record[1:1 + n].tolist()
    total = sum(lengths)
    if int(record[0]) != meta.magic or total > unit:
        return False
    if token_counts is not None and total != int(token_counts[0]):
        return False
    if empty is not None and any(length for length, e in zip(lengths, empty[0].tolist()) if e):
        return False
    payload = record[1 + n:]
    if total and meta.vocab_size is not None and int(payload[:total].max()) >= meta.vocab_size:
        return False
    tail = payload[total:]
    return not len(tail) or (int(tail.min()) == meta.pad_id and int(tail.max()) == meta.pad_id)


def parse_checksums(data: bytes) -> tuple[dict, list]:
    """``SHA256SUMS`` bytes -> ``({path: sha256 hex}, [line numbers that are not a
    "<sha256>  <path>" line])``."""
    sums, bad = {}, []
    for n, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        m = _CHECKSUM_LINE.fullmatch(line)
        if m is not None:
            sums[m.group(2)] = m.group(1)
        elif line:
            bad.append(n)
    return sums, bad


def checksum_problem(name: str, data, sums: dict, recorder: str = CHECKSUMS) -> Optional[tuple[str, dict]]:
    """Why the bytes ``data`` of the file ``name`` are not what ``recorder`` (the file
    holding ``sums``) records: ``(kind, facts)`` of a :class:`ReaderError`, or None."""
    want = sums.get(name)
    if want is None:
        return "no_sum_line", {}
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        return "sha_differs", {"got": got, "want": want, "recorder": recorder}
    return None
