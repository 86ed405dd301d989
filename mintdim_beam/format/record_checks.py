"""What a record read back must agree with, checked with numpy (pure).

A record carries no checksum of its own, but the directory says a lot about it: the
magic and pad id (``length_field.json``), the vocabulary size (``manifest.json``), and
its sample's token count and empty fields (``sample_index.jsonl``). The reader checks
every record it hands out against all of them (:func:`record_problem`), one record for
random access or a whole batch of a shard at once for bulk reads, so that a corrupted
shard raises instead of returning tokens. The record's place (records of a unit are in
ascending sample_id) is the reader's to check, since it needs the whole index.

A token changed to another valid id passes all of that; only a file's sha256 against
the line ``SHA256SUMS`` holds for it (:func:`checksum_problem`) finds it. The reader
and ``verify`` share the parsing of that file. ``meta`` below is the dataset's
metadata as the reader loads it (``reader.output_files.Metadata``: segment count, magic,
pad id, vocabulary size); this layer only reads those attributes. Problems are worded as ``read_messages.READ_PROBLEMS`` pairs, so a raised error says them in
both languages.
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


def record_problem(meta, unit: int, records: np.ndarray, token_counts: Optional[np.ndarray] = None,
                   empty: Optional[np.ndarray] = None) -> Optional[tuple[int, B.Text]]:
    """The first of ``records`` (``(k, slots)``) that disagrees with what is known of it.

    Checked, all at once with numpy: the magic; the segment lengths against the unit,
    against ``token_counts`` (sample_index.jsonl's, when given) and against ``empty``
    (``(k, n_segments)`` booleans: segments of fields listed in ``empty_fields``, which
    hold no token); token ids below the manifest's vocabulary size; the pad id in every
    slot after the written tokens. Returns ``(j, what disagrees)`` (in both languages), or None.
    """
    k = records.shape[0]
    if k == 0 or (k == 1 and _fine(meta, unit, records[0], token_counts, empty)):
        return None
    n = meta.n_segments
    lengths = records[:, 1:1 + n].astype(np.int64)
    total = lengths.sum(axis=1)
    payload = records[:, 1 + n:]
    written = np.arange(unit)[None, :] < np.minimum(total, unit)[:, None]
    checks = [
        (records[:, 0] != meta.magic, lambda j: R.read_text("magic", got=int(records[j, 0]), want=meta.magic)),
        (total > unit, lambda j: R.read_text("over_unit", lengths=lengths[j].tolist(), total=int(total[j]),
                                             unit=unit)),
    ]
    if token_counts is not None:
        checks.append((total != token_counts, lambda j: R.read_text(
            "token_count", lengths=lengths[j].tolist(), total=int(total[j]), count=int(token_counts[j]))))
    if empty is not None:
        filled = (lengths != 0) & empty
        checks.append((filled.any(axis=1), lambda j: _empty_filled(meta, lengths[j], filled[j])))
    # one reduction over the batch settles the vocabulary for nearly every batch (the
    # pad id is an id of the vocabulary too); only a batch with a large id is masked
    if meta.vocab_size is not None and int(payload.max(initial=0)) >= meta.vocab_size:
        over = (payload >= meta.vocab_size) & written
        checks.append((over.any(axis=1), lambda j: R.read_text(
            "vocab", id=int(payload[j, np.argmax(over[j])]), at=int(np.argmax(over[j])), vocab=meta.vocab_size)))
    dirty = (payload != meta.pad_id) > written
    checks.append((dirty.any(axis=1), lambda j: R.read_text(
        "pad_tail", slot=int(np.argmax(dirty[j])), got=int(payload[j, np.argmax(dirty[j])]), total=int(total[j]),
        pad=meta.pad_id)))
    bad = np.zeros(k, bool)
    for mask, _ in checks:
        bad |= mask
    if not bad.any():
        return None
    j = int(np.argmax(bad))
    return j, B.joined(describe(j) for mask, describe in checks if mask[j])


def _empty_filled(meta, lengths: np.ndarray, filled: np.ndarray) -> B.Text:
    """Segments listed in ``empty_fields`` that hold tokens, named with their lengths."""
    segments = B.joined((R.read_text("empty_segment", segment=s, name=meta.sequence_template[s],
                                     count=int(lengths[s])) for s in np.nonzero(filled)[0].tolist()), ", ")
    return R.read_text("empty_filled", detail=segments)


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
