"""The global plan: prefix sums, ranks, extend units and shard cutting (pure)."""

from mintdim_beam.core.config import JobSpec, Policies, resolve
from mintdim_beam.core.plan import (DUPLICATE_TASK_ROWS, BlockSummary, DuplicateTask, HashSpill, OverflowSample, Piece,
                                    duplicate_task_ranges, make_plan)


def _config(files=("a.jsonl", "b.jsonl"), outputs=("out",), sizes=(4, 8), sps=3, overflow="extend"):
    job = JobSpec(files=list(files), fields=[["t"]], templates=["{t}"], tokenizer_kind="sentencepiece",
                  tokenizer_files=["tok.model"], sizes=[list(sizes)], build_batch=[8],
                  output_dirs=list(outputs), samples_per_shard=[sps])
    return resolve(job, Policies(on_overflow=overflow))


def _summary(file, block, n_lines, n_samples, counts, overflow=(), error=None, hash_tasks=0):
    return BlockSummary(file, block, n_lines, n_samples, dict(counts), {u: c for u, c in counts.items()},
                        tuple(overflow), 0, len(overflow), error, hash_tasks)


def test_duplicate_tasks_list_every_hash_spill_with_its_offsets_once():
    """Each task reads its range of every block that spilled hashes, in sample order,
    with the offsets that make the rows' local ids and lines global; the spills are the
    plan's, once per output, and no task carries them (the runner encodes each task on
    its own: they would grow as blocks times tasks)."""
    config = _config()
    plan = make_plan(config, [
        _summary(1, 0, 5, 4, {4: 4}, hash_tasks=3),
        _summary(0, 1, 3, 2, {4: 2}, hash_tasks=3),
        _summary(0, 0, 10, 7, {4: 7}, hash_tasks=3),
        _summary(0, 2, 2, 0, {}),                                 # no sample, no spill
    ])
    spills = (HashSpill(0, 0, 0, 0), HashSpill(0, 1, 7, 10), HashSpill(1, 0, 9, 0))
    assert plan.duplicate_tasks == [DuplicateTask(0, 0, 0, 3)]      # 13 hashes: the 3 ranges are one task
    assert plan.hash_spills == {0: spills}
    failed = make_plan(config, [_summary(0, 0, 1, 1, {4: 1}, error=(0, 0, {"error": "E", "fields": {}}),
                                         hash_tasks=1)])
    assert failed.error is not None and failed.duplicate_tasks == [] and failed.hash_spills == {}


def test_duplicate_tasks_join_the_encoders_ranges_by_the_hashes_they_hold():
    """The encoders cut hashes into ranges sized for 64-byte samples; the plan joins
    consecutive ranges into tasks of about DUPLICATE_TASK_ROWS hashes (bad records spill
    none), every range in exactly one task, never more tasks than ranges."""
    config = _config()
    rows = DUPLICATE_TASK_ROWS
    summaries = [_summary(0, b, rows, rows, {4: 7}, hash_tasks=10) for b in range(3)]
    summaries[2] = BlockSummary(0, 2, rows, rows, {4: 7}, {4: 7}, (), rows // 2, 0, None, 10)
    plan = make_plan(config, summaries)
    assert plan.duplicate_tasks == [DuplicateTask(0, 0, 0, 3), DuplicateTask(0, 1, 3, 6), DuplicateTask(0, 2, 6, 10)]
    assert duplicate_task_ranges(4, 100 * rows) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert duplicate_task_ranges(7, 0) == [(0, 7)]
    for ranges, tasks in ((7, 3), (4096, 41), (5, 5)):
        cut = duplicate_task_ranges(ranges, tasks * rows)
        assert len(cut) == tasks and cut[0][0] == 0 and cut[-1][1] == ranges
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(cut, cut[1:]))


def test_offsets_follow_file_then_block_order():
    config = _config()
    plan = make_plan(config, [
        _summary(1, 0, 5, 4, {4: 4}),
        _summary(0, 1, 3, 2, {4: 1, 8: 1}),
        _summary(0, 0, 10, 7, {4: 5, 8: 2}),
    ])
    assert plan.blocks[(0, 0)].sample_offset == 0
    assert plan.blocks[(0, 1)].sample_offset == 7
    assert plan.blocks[(1, 0)].sample_offset == 9
    assert plan.blocks[(0, 1)].line_offset == 10
    assert plan.blocks[(1, 0)].line_offset == 0
    assert plan.blocks[(1, 0)].unit_rank == {4: 6, 8: 3}
    # unit 4 holds 10 records: shards of 3, 3, 3, 1 cut across block boundaries
    tasks = [t for t in plan.shard_tasks if t.unit == 4]
    assert [t.n_records for t in tasks] == [3, 3, 3, 1]
    assert tasks[1].pieces == (Piece(0, 0, 3, 2), Piece(0, 1, 0, 1))
    assert tasks[2].pieces == (Piece(1, 0, 0, 3),)
    assert plan.outputs[0].shards == {4: 4, 8: 1}


def test_extend_adds_units_in_sample_order():
    config = _config(files=("a.jsonl",))
    ovf = [OverflowSample(0, 12, 0, (12,)), OverflowSample(1, 10, 12, (10,)),
           OverflowSample(2, 20, 22, (20,)), OverflowSample(3, 15, 42, (15,))]
    plan = make_plan(config, [_summary(0, 0, 4, 4, {}, ovf[:2]), _summary(0, 1, 2, 2, {}, ovf[2:])])
    assert plan.outputs[0].sizes == (4, 8, 12, 20)
    # 10 fits the added 12; 15 fits the added 20
    assert plan.blocks[(0, 0)].extend == {0: (12, 0), 1: (12, 1)}
    assert plan.blocks[(0, 1)].extend == {2: (20, 0), 3: (20, 1)}
    assert plan.outputs[0].samples[12] == 2 and plan.outputs[0].tokens[20] == 35


def test_first_error_wins_by_file_then_line_and_blocks_tasks():
    config = _config()
    err_b = (0, 3, {"error": "SourceParseError", "fields": {"file": "x", "line": 3, "reason": "invalid JSON syntax"}})
    err_a = (2, 1, {"error": "SourceParseError", "fields": {"file": "x", "line": 1, "reason": "invalid UTF-8"}})
    plan = make_plan(config, [
        _summary(1, 0, 5, 4, {4: 4}, error=err_b),
        _summary(0, 0, 9, 7, {4: 7}),
        _summary(0, 1, 6, 5, {4: 5}, error=err_a),
    ])
    assert plan.error["fields"]["file"] == "a.jsonl"
    assert plan.error["fields"]["line"] == 9 + 1 + 1
    assert plan.error["fields"]["reason"] == "invalid UTF-8"
    assert plan.shard_tasks == []


def test_tasks_carry_where_each_section_of_a_spill_lies():
    """Shard pieces, extended samples, hash spills and block plans carry the byte offset
    of their section in the block's one spill file, so no reader opens its header."""
    config = _config(files=("a.jsonl",), sps=10)
    ovf = OverflowSample(1, 9, 0, (9,))
    summary = BlockSummary(0, 0, 3, 3, {4: 2}, {4: 6}, (ovf,), 0, 1, None, 1,
                           {"unit_4": (100, 40), "overflow": (140, 18), "meta": (158, 70), "hashes": (228, 160)})
    plan = make_plan(config, [summary])
    assert plan.blocks[(0, 0)].meta == (158, 70)
    declared = [t for t in plan.shard_tasks if t.unit == 4]
    assert declared[0].pieces == (Piece(0, 0, 0, 2, 100),)
    extended = [t for t in plan.shard_tasks if t.unit == 9]
    assert extended[0].overflow == ((0, 0, ovf, 140),)
    assert plan.hash_spills[0] == (HashSpill(0, 0, 0, 0, 228),)
