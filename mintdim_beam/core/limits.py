"""The guard rails a build passes before it publishes (DESIGN.md §8), as pure checks.

Each check runs where its figures are first known, and fails the whole build (every
output or none, as publishing does):

* an output that receives no sample, and ``max_bad_records``: the plan knows each
  output's samples read, bad records and records written once every block reported
  (:func:`plan_error`, called by ``plan.make_plan``, so no shard is written for a
  build that cannot publish);
* ``max_unk_fraction``: the UNK tokens of the written payloads are counted by the
  index writers, so finalize checks them (:func:`unk_error`) before it publishes
  any output's files.

A failure is the error's dict (``MintDimError.to_dict()``), the form the plan carries
its first error in. Fractions are compared exactly, as the decimals the user wrote
(``0.57`` of 100 samples allows 57), never through a float product.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from mintdim_beam import errors
from mintdim_beam.core.config import BuildConfig


def share_of(fraction, total: int) -> int:
    """The most of ``total`` that ``fraction`` lets pass, rounded down, from the decimal
    the user wrote (``repr`` of the float: ``0.57`` is 57/100 exactly)."""
    return int(Fraction(repr(float(fraction))) * total)


def bad_records_allowed(limit, samples: int) -> int:
    """``max_bad_records`` as a count: an int is one, a float a fraction of ``samples``."""
    return limit if isinstance(limit, int) else share_of(limit, samples)


def plan_error(config: BuildConfig, outputs: list) -> Optional[dict]:
    """The first output (in output order) that received no sample or has more bad
    records than ``max_bad_records``; ``outputs`` are the plan's ``OutputPlan``s."""
    limit = config.limits.max_bad_records
    for out, oplan in zip(config.outputs, outputs):
        if not sum(oplan.samples.values()):
            skipped = oplan.overflow_samples if config.policies.on_overflow == "skip" else 0
            return errors.BuildLimitError(out.path, oplan.samples_read, oplan.bad_records, skipped).to_dict()
        most = None if limit is None else bad_records_allowed(limit, oplan.samples_read)
        if most is not None and oplan.bad_records > most:
            return errors.BuildLimitError.too_many_bad_records(
                out.path, oplan.samples_read, oplan.bad_records, limit, most).to_dict()
    return None


def unk_error(config: BuildConfig, outputs: list, unk_counts: dict) -> Optional[dict]:
    """The first output whose written payloads hold more UNK tokens than
    ``max_unk_fraction`` allows. ``unk_counts``: output index -> ``(unk_tokens,
    samples_with_unk)``, as the index parts counted them."""
    limit = config.limits.max_unk_fraction
    if limit is None:
        return None
    for out, oplan in zip(config.outputs, outputs):
        unk, samples = unk_counts.get(out.index, (0, 0))
        tokens = sum(oplan.tokens.values())
        most = share_of(limit, tokens)
        if unk > most:
            return errors.BuildLimitError.too_much_unk(out.path, tokens, unk, samples, limit, most).to_dict()
    return None
