"""``sample_index.jsonl`` as numpy columns: where every written sample lives.

Random access needs to know where each sample lives; the index says it (``unit_size``,
``shard_path``, ``shard_record``) with its provenance (``source_file``, ``source_line``,
``hash``, ``token_count``, ``empty_fields``). It is parsed once into numpy columns
rather than a dict per row, so an index of millions of samples costs tens of bytes per
sample, and a lookup is one ``searchsorted``. ``verify`` parses it with ``problems`` to
list every bad row; the reader raises on the first.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np

from .record_checks import SAMPLE_INDEX, ReaderError

SHARD_PATH = re.compile(r"^unit_(\d+)/shard_(\d+)\.bin$")


class IndexProblem(NamedTuple):
    """A ``sample_index.jsonl`` row that could not be used (1-based line number)."""

    line: int
    message: str


_INT64_END = 1 << 63
_ROW_INTS = ("sample_id", "token_count", "unit_size", "source_line", "shard_record")


@dataclass
class SampleIndex:
    """``sample_index.jsonl`` as numpy columns, one entry per row, in file order.

    ``files`` holds each distinct ``source_file`` once; ``file`` indexes it. Rows with an
    empty ``empty_fields`` list (nearly all) cost nothing in ``empty_fields``.
    """

    sample_id: np.ndarray
    unit: np.ndarray
    shard: np.ndarray
    record: np.ndarray
    token_count: np.ndarray
    file: np.ndarray
    line: np.ndarray
    digest: np.ndarray              # (rows, 32) uint8, the sha256 of the rendered text
    files: list
    empty_fields: dict = field(default_factory=dict)   # row -> tuple of field names
    row_line: np.ndarray = None     # 1-based line of each row in sample_index.jsonl

    def __len__(self) -> int:
        return int(self.sample_id.shape[0])

    @property
    def sorted(self) -> bool:
        s = self.sample_id
        return bool(len(s) < 2 or (s[1:] > s[:-1]).all())

    def hash(self, row: int) -> str:
        return bytes(self.digest[row]).hex()

    def positions(self, samples_per_shard: int) -> np.ndarray:
        """Rank of each row's record inside its unit (shard * samples_per_shard + record)."""
        return self.shard.astype(np.int64) * samples_per_shard + self.record


def parse_sample_index(data: bytes, problems: Optional[list] = None) -> SampleIndex:
    """Parse ``sample_index.jsonl`` bytes into a :class:`SampleIndex`.

    A malformed row raises :class:`ReaderError`, or, when ``problems`` is a list, is
    reported there as an :class:`IndexProblem` and left out (what ``verify`` wants).
    """
    cols = {k: [] for k in ("sample_id", "unit", "shard", "record", "token_count", "file", "line", "row_line")}
    digests: list = []
    files: dict = {}
    empty: dict = {}
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        message = None
        try:
            row = json.loads(raw)
        except ValueError:
            row, message = None, "not valid JSON"
        if row is not None:
            message = _row_problem(row)
        if message is not None:
            if problems is None:
                raise ReaderError(f"{SAMPLE_INDEX} line {n}: {message}")
            problems.append(IndexProblem(n, message))
            continue
        m = SHARD_PATH.match(row["shard_path"])
        k = len(cols["sample_id"])
        cols["sample_id"].append(row["sample_id"])
        cols["unit"].append(row["unit_size"])
        cols["shard"].append(int(m.group(2)))
        cols["record"].append(row["shard_record"])
        cols["token_count"].append(row["token_count"])
        cols["file"].append(files.setdefault(row["source_file"], len(files)))
        cols["line"].append(row["source_line"])
        cols["row_line"].append(n)
        digests.append(bytes.fromhex(row["hash"]))
        if row.get("empty_fields"):
            empty[k] = tuple(row["empty_fields"])
    i64 = lambda name: np.asarray(cols[name], dtype=np.int64)  # noqa: E731
    return SampleIndex(
        sample_id=i64("sample_id"), unit=i64("unit"), shard=np.asarray(cols["shard"], np.int32),
        record=i64("record"), token_count=i64("token_count"), file=np.asarray(cols["file"], np.int32),
        line=i64("line"),
        digest=np.frombuffer(b"".join(digests), np.uint8).reshape(-1, 32).copy(),
        files=list(files), empty_fields=empty, row_line=i64("row_line"),
    )


def _row_problem(row) -> Optional[str]:
    if not isinstance(row, dict):
        return "row is not a JSON object"
    for key in _ROW_INTS:
        value = row.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _INT64_END:
            # the columns are int64: a larger value would be an OverflowError, not a problem
            return f"{key} must be a non-negative integer below 2**63, got {value!r}"
    if not isinstance(row.get("source_file"), str):
        return "source_file must be a string"
    digest = row.get("hash")
    if not isinstance(digest, str) or len(digest) != 64 or not re.fullmatch(r"[0-9a-f]{64}", digest):
        return f"hash must be 64 lowercase hex digits, got {digest!r}"
    path = row.get("shard_path")
    m = SHARD_PATH.match(path) if isinstance(path, str) else None
    if m is None:
        return f"shard_path must look like unit_<size>/shard_NNNNNN.bin, got {path!r}"
    if int(m.group(2)) >= 1 << 31:
        return f"shard_path {path}: shard number above 2**31 - 1"
    if int(m.group(1)) != row["unit_size"]:
        return f"shard_path {path} is not in unit_{row['unit_size']}"
    if not isinstance(row.get("empty_fields", []), list):
        return "empty_fields must be a list"
    return None
