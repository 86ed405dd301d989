"""The global build plan, computed once from small per-block summaries (pure).

Workers encode blocks independently and report only counts. This module turns those
counts into every global fact the writers need, so no worker ever sees the corpus:

* line and sample-id offsets of every block (prefix sums in sample order);
* the rank of every record inside its unit, hence its shard and position;
* the ``extend`` policy's new units, resolved in sample-id order, hence each output's
  largest unit, which decides its slot dtype (``shard_format.slot_storage``) before any
  shard is written: every shard task carries it;
* the shard tasks: which byte ranges of which block spills make up each shard;
* the duplicate tasks: which consecutive digest ranges each groups (about
  ``DUPLICATE_TASK_ROWS`` content hashes, from the blocks' sample counts), and so
  which slice of each block's hash spill it reads;
* the first error, when a policy says ``abort``, or else the first guard rail an
  output fails (``limits.plan_error``: no sample written, too many bad records).

The plan is computed once (from a single-key GroupByKey of the summaries) and travels
inside the task elements that need it; its size grows with the number of blocks and
overflow samples, never with the number of tokens.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from mintdim_beam.core.config import BuildConfig
from mintdim_beam.core.limits import plan_error


@dataclass(frozen=True)
class BlockRef:
    """A byte range of one input file; the unit of parallel reading."""

    file: int
    block: int
    start: int
    end: int


@dataclass(frozen=True)
class EncodeGroup:
    """Blocks one encode task reads and encodes, in order (``blocks.group_blocks``):
    consecutive whole small files of one output, or one block alone."""

    blocks: tuple              # BlockRef

    @property
    def key(self) -> tuple:
        return (self.blocks[0].file, self.blocks[0].block)


class OverflowSample(NamedTuple):
    """An ``extend`` overflow sample, whose unit is decided by the plan."""

    local_sample: int
    token_count: int
    token_offset: int          # into the block's overflow token spill
    lengths: tuple             # per-segment token lengths


@dataclass(frozen=True)
class BlockSummary:
    """What a block reports after encoding: counts only, no tokens."""

    file: int
    block: int
    n_lines: int
    n_samples: int
    unit_counts: dict          # declared unit -> records in this block's spill
    unit_tokens: dict          # declared unit -> payload tokens of those records
    overflow: tuple            # OverflowSample, in sample order (extend policy only)
    bad_records: int
    overflow_events: int       # samples above max(declared sizes), any policy
    first_error: Optional[tuple]  # (local_sample, local_line, error dict)
    # Digest ranges (the output's duplicate tasks) the block's hash spill is cut into,
    # its bounds file saying where each begins; 0 if it spilled no hash.
    hash_tasks: int = 0
    # Where each section of the block's spill lies: name ("unit_<size>", "overflow",
    # "meta", "hashes") -> (byte offset, length); the tasks carry the offsets their
    # readers need, so nothing reads a spill's header.
    sections: dict = field(default_factory=dict)
    # (file, block) naming the spill file that holds those sections: the first block of
    # the block's encode group (``blocks.group_blocks``); None: the block's own.
    spill: Optional[tuple] = None
    # sha256 of the block's "meta" section as the encoder wrote it: the write stage reads
    # the section back only if it still has these bytes (``spill_meta``).
    meta_sha256: str = ""


def spill_key(item) -> tuple:
    """(file, block) naming the spill file of a summary or block plan (``layout.block_spill``)."""
    return item.spill or (item.file, item.block)


class Piece(NamedTuple):
    """Part of a shard: ``count`` records of a block's section of a spill starting at
    ``start``; ``file`` and ``block`` name the spill file (``spill_key``)."""

    file: int
    block: int
    start: int
    count: int
    offset: int = 0            # byte offset of the unit's records in the spill


@dataclass(frozen=True)
class ShardTask:
    output: int
    unit: int
    shard: int
    n_records: int
    pieces: tuple              # Piece for declared units
    # (spill file, spill block, OverflowSample, spill offset of its tokens) for extended units
    overflow: tuple
    # The output's largest unit (declared or extended): with the vocabulary, it sets
    # the slot dtype of every shard of the output, and so whether declared units'
    # spills (laid out for the largest declared unit) are widened when copied.
    largest_unit: int


@dataclass(frozen=True)
class HashSpill:
    """A block's hash spill, and the offsets that make its rows' block-local sample ids
    and lines global."""

    file: int
    block: int
    sample_offset: int
    line_offset: int
    offset: int = 0            # byte offset of the hash rows' section in the spill
    spill: Optional[tuple] = None   # (file, block) of the spill file (``spill_key``)


#: Content hashes a duplicate task groups, about: 48-byte rows, ~30 MiB at peak with
#: their sort. The encoders cut their hashes into digest ranges sized for the worst case
#: (64 input bytes a sample, ``transforms.duplicate_tasks``), before anyone knows the
#: sample count; the plan, which knows it, joins consecutive ranges into tasks of about
#: this many rows. Every task reads its slice of every block's spill, so the reads grow
#: as blocks times tasks: joined, a corpus of 900-byte samples has 14 times fewer.
DUPLICATE_TASK_ROWS = 1 << 18


def duplicate_task_ranges(ranges: int, rows: int) -> list:
    """``[(first, end), ...]``: the encoders' digest ranges ``first`` to ``end - 1``
    (of ``ranges``) that each duplicate task groups, for about ``rows`` content hashes
    in all (digests are uniform: equal runs of ranges hold about equal rows)."""
    tasks = max(1, min(ranges, -(-rows // DUPLICATE_TASK_ROWS)))
    return [(t * ranges // tasks, (t + 1) * ranges // tasks) for t in range(tasks)]


@dataclass(frozen=True)
class DuplicateTask:
    """Task ``task`` of an output's duplicate search: the encoders' digest ranges
    ``first`` to ``end - 1``, whose rows are one slice of each of the output's hash
    spills (``BuildPlan.hash_spills``; the spill's bounds say where it is). The spills
    are not in the task: the runner encodes every task on its own, and tasks that each
    carried every block's spill grew as blocks times tasks (about 600 MiB at 30 GB of
    input); the write stage gets them once, as a side input."""

    output: int
    task: int
    first: int
    end: int


@dataclass
class BlockPlan:
    file: int
    block: int
    output: int
    sample_offset: int
    line_offset: int
    unit_rank: dict                       # declared unit -> rank of the block's first record
    extend: dict = field(default_factory=dict)   # local sample -> (unit, rank)
    meta: tuple = (0, 0)                  # (offset, length) of the result (``spill_meta``) in the spill
    meta_sha256: str = ""                 # its sha256, as the encoder reported it
    samples: int = 0                      # samples the block read
    spill: Optional[tuple] = None         # (file, block) of its spill file (``spill_key``)


@dataclass
class OutputPlan:
    sizes: tuple                          # declared + extended, ascending
    declared: tuple
    samples: dict                         # unit -> records written
    tokens: dict                          # unit -> payload tokens written
    shards: dict                          # unit -> number of shards
    bad_records: int = 0
    overflow_samples: int = 0
    samples_read: int = 0                 # every sample id given: written, bad or skipped

    @property
    def largest_unit(self) -> int:
        """The unit that sets the slot dtype with the vocabulary (DESIGN.md §5)."""
        return max(self.sizes)


@dataclass
class BuildPlan:
    blocks: dict                          # (file, block) -> BlockPlan
    outputs: list
    shard_tasks: list
    error: Optional[dict] = None          # error dict of the first abort, global line set
    duplicate_tasks: list = field(default_factory=list)
    hash_spills: dict = field(default_factory=dict)   # output -> its HashSpill, in sample order


def _ordered(config: BuildConfig, summaries) -> dict:
    """Summaries of each output in sample order: file order in the output, then block."""
    by_output: dict = {o.index: [] for o in config.outputs}
    for s in summaries:
        by_output[config.files[s.file].output].append(s)
    for out in config.outputs:
        position = {f: k for k, f in enumerate(out.files)}
        by_output[out.index].sort(key=lambda s: (position[s.file], s.block))
    return by_output


def _first_error(config: BuildConfig, summaries, line_offsets) -> Optional[dict]:
    found = sorted(
        (s.file, s.block, s.first_error[0], s) for s in summaries if s.first_error is not None
    )
    if not found:
        return None
    _, _, _, s = found[0]
    _, local_line, err = s.first_error
    err = {"error": err["error"], "fields": dict(err["fields"])}
    err["fields"]["line"] = line_offsets[(s.file, s.block)] + local_line + 1
    err["fields"]["file"] = config.files[s.file].path
    return err


def make_plan(config: BuildConfig, summaries) -> BuildPlan:
    """Compute the build plan from every block's summary."""
    summaries = list(summaries)
    line_offsets: dict = {}
    totals: dict = {}
    for s in sorted(summaries, key=lambda s: (s.file, s.block)):   # one pass: a corpus can be 10^5 files
        line_offsets[(s.file, s.block)] = totals.get(s.file, 0)
        totals[s.file] = line_offsets[(s.file, s.block)] + s.n_lines

    error = _first_error(config, summaries, line_offsets)
    blocks: dict = {}
    outputs: list = []
    tasks: list = []
    duplicate_tasks: list = []
    hash_spills: dict = {}
    by_output = _ordered(config, summaries)
    for out in config.outputs:
        ordered = by_output[out.index]
        declared = tuple(out.sizes)
        sample_offset = 0
        unit_rank = {u: 0 for u in declared}
        unit_tokens = {u: 0 for u in declared}
        runs: dict = {u: [] for u in declared}      # unit -> [(summary, count)]
        added: list = []                             # extended sizes, ascending
        members: dict = {}                           # extended unit -> [(file, block, ovf)]
        bad = overflow_events = 0
        for s in ordered:
            plan = BlockPlan(s.file, s.block, out.index, sample_offset, line_offsets[(s.file, s.block)],
                             dict(unit_rank), meta=tuple(s.sections.get("meta", (0, 0))), samples=s.n_samples,
                             spill=s.spill, meta_sha256=s.meta_sha256)
            for u, c in s.unit_counts.items():
                unit_rank[u] += c
                unit_tokens[u] += s.unit_tokens[u]
                runs[u].append((s, c))
            for ovf in s.overflow:
                if not added or ovf.token_count > added[-1]:
                    added.append(ovf.token_count)
                    members[ovf.token_count] = []
                    unit = ovf.token_count
                else:
                    unit = added[bisect.bisect_left(added, ovf.token_count)]
                plan.extend[ovf.local_sample] = (unit, len(members[unit]))
                members[unit].append((*spill_key(s), ovf, _offset(s, "overflow")))
            blocks[(s.file, s.block)] = plan
            sample_offset += s.n_samples
            bad += s.bad_records
            overflow_events += s.overflow_events

        sps = out.samples_per_shard
        largest = max(declared + tuple(added))
        samples = {u: unit_rank[u] for u in declared}
        tokens = dict(unit_tokens)
        shards = {}
        for u in declared:
            shards[u] = -(-samples[u] // sps)
            if error is None:
                tasks.extend(_declared_tasks(out.index, u, runs[u], sps, largest))
        for u in added:
            samples[u] = len(members[u])
            tokens[u] = sum(m[2].token_count for m in members[u])
            shards[u] = -(-samples[u] // sps)
            if error is None:
                for k in range(shards[u]):
                    chunk = tuple(members[u][k * sps:(k + 1) * sps])
                    tasks.append(ShardTask(out.index, u, k, len(chunk), (), chunk, largest))
        outputs.append(OutputPlan(tuple(sorted(declared + tuple(added))), declared, samples, tokens,
                                  shards, bad, overflow_events, sample_offset))
        if error is None:
            hash_spills[out.index] = tuple(
                HashSpill(s.file, s.block, blocks[(s.file, s.block)].sample_offset,
                          blocks[(s.file, s.block)].line_offset, _offset(s, "hashes"), s.spill)
                for s in ordered if s.hash_tasks)
            ranges = max((s.hash_tasks for s in ordered), default=0)
            rows = sum(s.n_samples - s.bad_records for s in ordered if s.hash_tasks)
            if ranges:   # task t reads its ranges' slice of every block's hash spill
                duplicate_tasks.extend(DuplicateTask(out.index, t, first, end) for t, (first, end)
                                       in enumerate(duplicate_task_ranges(ranges, rows)))
    if error is None:
        error = plan_error(config, outputs)
        if error is not None:        # nothing to write for a build that cannot publish
            tasks, duplicate_tasks, hash_spills = [], [], {}
    return BuildPlan(blocks, outputs, tasks, error, duplicate_tasks, hash_spills)


def _declared_tasks(output: int, unit: int, runs, sps: int, largest_unit: int) -> list:
    """Cut the unit's records (runs of consecutive block records) into shards."""
    tasks = []
    pieces: list = []
    shard, filled = 0, 0
    for s, count in runs:
        start = 0
        while count > 0:
            take = min(count, sps - filled)
            pieces.append(Piece(*spill_key(s), start, take, _offset(s, f"unit_{unit}")))
            start += take
            count -= take
            filled += take
            if filled == sps:
                tasks.append(ShardTask(output, unit, shard, filled, tuple(pieces), (), largest_unit))
                shard, filled, pieces = shard + 1, 0, []
    if filled:
        tasks.append(ShardTask(output, unit, shard, filled, tuple(pieces), (), largest_unit))
    return tasks


def _offset(summary: BlockSummary, section: str) -> int:
    """Where ``section`` of the block's spill begins (0 for a summary without sections)."""
    return summary.sections.get(section, (0, 0))[0]


def merge_counts(values) -> tuple:
    """Combiner of the planner's histograms: add ``({length: count}, bad_records)`` pairs
    (associative and commutative, so any runner may combine them in any order)."""
    hist: dict = {}
    bad = 0
    for counts, b in values:
        for length, n in counts.items():
            hist[length] = hist.get(length, 0) + n
        bad += b
    return hist, bad
