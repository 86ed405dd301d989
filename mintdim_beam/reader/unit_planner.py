"""Choose unit sizes that minimise padding, from a token-length histogram.

Every sample is padded up to the smallest unit size that holds it, so the padding of a
size list is a function of the token-length histogram alone. Given the histogram and
``K``, :func:`optimal_sizes` returns the ``K`` sizes with the least total padding,
exactly:

* Only a few sizes can be optimal. Lowering a size to the largest length it holds
  (rounded up to the required multiple) keeps every assignment and never adds padding,
  so an optimum exists among the distinct lengths rounded up to the multiple.
* Over those ``m`` candidates it is a dynamic programme: ``f[k][b]`` is the least
  padding of the samples up to candidate ``b`` with ``k`` sizes, the last one being
  ``b``. The cost of a unit, ``v[b] * (C[b] - C[a]) - (S[b] - S[a])`` with prefix
  counts ``C`` and token sums ``S``, satisfies the quadrangle inequality
  (the difference is ``(v[d] - v[c]) * (C[b] - C[a]) >= 0``), so the best split point
  is monotone in ``b`` and divide and conquer fills each row in ``O(m log m)``.

All of it is pure numpy and never starts a pipeline. The histogram of a job that has
not been built yet needs the real tokenization: the launcher's
``length_histograms`` runs the build's own encoder over the input blocks
(``transforms.CountTokenLengths``) and merges the counts with ``core.plan.merge_counts``;
the ``plan`` command calls it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from mintdim_beam.errors import read_errors
from mintdim_beam.format import names
from mintdim_beam.reader import output_files
from mintdim_beam.reader import sample_index
from mintdim_beam.storage import files


@dataclass(frozen=True)
class LengthHistogram:
    """Sample counts per token length: ``lengths`` ascending and distinct, ``counts`` > 0."""

    lengths: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_lengths(cls, lengths: Iterable[int]) -> "LengthHistogram":
        arr = np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths, dtype=np.int64)
        values, counts = np.unique(arr, return_counts=True)
        return cls(values.astype(np.int64), counts.astype(np.int64))

    @classmethod
    def from_counts(cls, counts: dict) -> "LengthHistogram":
        items = sorted((int(k), int(v)) for k, v in counts.items() if int(v) > 0)
        return cls(np.asarray([k for k, _ in items], np.int64), np.asarray([v for _, v in items], np.int64))

    def merge(self, other: "LengthHistogram") -> "LengthHistogram":
        return LengthHistogram.from_counts(_add(self.as_dict(), other.as_dict()))

    def as_dict(self) -> dict:
        return dict(zip(self.lengths.tolist(), self.counts.tolist()))

    def upto(self, limit: int) -> "LengthHistogram":
        """The samples of at most ``limit`` tokens (those that fit a unit of ``limit``)."""
        keep = self.lengths <= limit
        return LengthHistogram(self.lengths[keep], self.counts[keep])

    @property
    def samples(self) -> int:
        return int(self.counts.sum())

    @property
    def tokens(self) -> int:
        return int((self.lengths * self.counts).sum())

    @property
    def max_length(self) -> int:
        return int(self.lengths[-1]) if len(self.lengths) else 0


def _add(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


@dataclass(frozen=True)
class UnitFit:
    """How a histogram fills a list of unit sizes."""

    sizes: tuple
    samples: tuple          # per size
    tokens: tuple           # per size
    overflow_samples: int   # longer than max(sizes): not placed
    overflow_tokens: int

    @property
    def slots(self) -> int:
        return sum(s * n for s, n in zip(self.sizes, self.samples))

    @property
    def pad_tokens(self) -> int:
        return self.slots - sum(self.tokens)

    @property
    def padding_ratio(self) -> float:
        """Padding over all payload slots, as ``stats.json`` defines it."""
        return self.pad_tokens / self.slots if self.slots else 0.0

    def per_unit(self) -> list[dict]:
        return [{"size": s, "samples": n, "tokens": t, "pad_tokens": s * n - t,
                 "padding_ratio": (s * n - t) / (s * n) if n else 0.0}
                for s, n, t in zip(self.sizes, self.samples, self.tokens)]


def fit(hist: LengthHistogram, sizes: Sequence[int]) -> UnitFit:
    """Assign every length to the smallest size that holds it (the build's rule)."""
    sizes = tuple(int(s) for s in sizes)
    if not sizes or list(sizes) != sorted(set(sizes)) or sizes[0] <= 0:
        raise ValueError(f"sizes must be ascending positive integers, got {list(sizes)}")
    idx = np.searchsorted(np.asarray(sizes, np.int64), hist.lengths, side="left")
    placed = idx < len(sizes)
    samples = np.bincount(idx[placed], weights=hist.counts[placed], minlength=len(sizes))
    tokens = np.bincount(idx[placed], weights=(hist.lengths * hist.counts)[placed], minlength=len(sizes))
    over = ~placed
    return UnitFit(sizes, tuple(int(x) for x in samples), tuple(int(x) for x in tokens),
                   int(hist.counts[over].sum()), int((hist.lengths * hist.counts)[over].sum()))


def candidate_sizes(hist: LengthHistogram, multiple: int = 1) -> np.ndarray:
    """The sizes an optimum can use: each distinct length rounded up to ``multiple``."""
    if multiple < 1:
        raise ValueError(f"multiple must be a positive integer, got {multiple}")
    lengths = np.maximum(hist.lengths, 1)  # a zero-token sample still needs a size >= 1
    return np.unique(-(-lengths // multiple) * multiple)


def optimal_sizes(hist: LengthHistogram, k: int, multiple: int = 1) -> tuple:
    """The ``k`` ascending sizes (multiples of ``multiple``) with the least total padding.

    The largest size is ``max length`` rounded up, so nothing overflows. When fewer
    than ``k`` candidates exist, all of them are returned (zero extra padding is then
    already reached). Ties go to the smaller sizes, so the answer is deterministic.
    """
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if hist.samples == 0:
        raise ValueError("the histogram is empty: no samples to plan for")
    v = candidate_sizes(hist, multiple)
    m = len(v)
    k = min(k, m)
    # C[b], S[b]: samples and tokens with length <= v[b-1]; index 0 means "nothing yet".
    upto = np.searchsorted(hist.lengths, v, side="right")
    ccount = np.concatenate([[0], np.cumsum(hist.counts)])
    csum = np.concatenate([[0], np.cumsum(hist.lengths * hist.counts)])
    C = np.concatenate([[0], ccount[upto]]).astype(np.int64)
    S = np.concatenate([[0], csum[upto]]).astype(np.int64)
    V = np.concatenate([[0], v]).astype(np.int64)

    prev = V * C - S            # one size: everything up to candidate b padded to v[b]
    choices = []                # choices[k-2][b]: the previous size's index for row k
    for row in range(2, k + 1):
        cur = np.zeros(m + 1, np.int64)
        arg = np.zeros(m + 1, np.int64)
        _fill_row(prev, cur, arg, C, S, V, row, m, row - 1, m - 1)
        choices.append(arg)
        prev = cur
    # Backtrack from the last candidate, which must be the largest size.
    picked = [m]
    b = m
    for arg in reversed(choices):
        b = int(arg[b])
        picked.append(b)
    return tuple(int(V[i]) for i in reversed(picked))


def _fill_row(prev, cur, arg, C, S, V, lo, hi, opt_lo, opt_hi) -> None:
    """Divide and conquer: cur[b] for b in [lo, hi], its best split in [opt_lo, opt_hi]."""
    stack = [(lo, hi, opt_lo, opt_hi)]
    while stack:
        lo, hi, olo, ohi = stack.pop()
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        a = np.arange(olo, min(mid - 1, ohi) + 1)
        vals = prev[a] + V[mid] * (C[mid] - C[a]) - (S[mid] - S[a])
        j = int(np.argmin(vals))   # first minimum: the leftmost split, monotone in mid
        cur[mid], arg[mid] = vals[j], a[j]
        stack.append((lo, mid - 1, olo, int(a[j])))
        stack.append((mid + 1, hi, int(a[j]), ohi))


# --------------------------------------------------------------------------- histograms


def dataset_length_histogram(path: str) -> tuple[LengthHistogram, dict]:
    """Token lengths of a built dataset, before its overflow policy changed them.

    ``path`` is an output directory (or a versioned root: the build its ``LATEST``
    names) or its ``sample_index.jsonl``. ``token_count`` there
    is what was written, so a truncated sample is counted with its original length from
    ``overflow_index.jsonl``, and a skipped one (no sample row) is added from it.
    Returns the histogram and a note of what was read.
    """

    if path.endswith(".jsonl"):
        index_path = path
        base = os.path.dirname(path) if files.is_local(path) else path.rsplit("/", 1)[0]
        data = files.read_bytes(index_path)
    else:     # one file, or its parts (index_layout: parts)
        path, _ = output_files.dataset_path(path)
        base, index_path = path, files.join(path, names.SAMPLE_INDEX)
        data = output_files.read_index(path, names.SAMPLE_INDEX)
    index = sample_index.parse_sample_index(data)
    counts = dict(zip(*[x.tolist() for x in np.unique(index.token_count, return_counts=True)]))
    adjusted = {"truncate": 0, "skip": 0}
    written = None
    for _, row in output_files.iter_index(base, names.OVERFLOW_INDEX):
        if not isinstance(row, dict) or row.get("action") not in adjusted:
            continue
        if written is None:
            written = dict(zip(index.sample_id.tolist(), index.token_count.tolist()))
        original = int(row["token_count"])
        if row["action"] == "truncate" and row["sample_id"] in written:
            w = written[row["sample_id"]]
            counts[w] -= 1
        counts[original] = counts.get(original, 0) + 1
        adjusted[row["action"]] += 1
    sizes = None
    manifest_path = files.join(base, names.MANIFEST)
    if files.exists(manifest_path):
        manifest = output_files.read_json(manifest_path)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("units") or {}, dict):
            raise read_errors.ReaderError("manifest_shape", file=manifest_path)
        sizes = (manifest.get("units") or {}).get("sizes")
    info = {"source": index_path, "rows": len(index), "truncated_restored": adjusted["truncate"],
            "skipped_added": adjusted["skip"], "current_sizes": sizes}
    return LengthHistogram.from_counts(counts), info
