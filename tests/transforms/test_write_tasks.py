"""The write stage's index tasks, cut from the global plan (the plan itself is
``tests/unit/test_plan.py``)."""

from mintdim_beam.core.plan import DUPLICATE_TASK_ROWS, DuplicateTask, make_plan
from test_plan import _config, _summary


def test_index_tasks_group_small_consecutive_blocks_of_an_output():
    """With index_layout "file", consecutive blocks of an output share one index task up
    to INDEX_GROUP_SAMPLES samples; a larger block is a task alone; with "parts" every
    block is its own task (its part is published as it is)."""
    from mintdim_beam.beam.write_stage import INDEX_GROUP_SAMPLES, index_tasks

    config = _config(files=("a.jsonl", "b.jsonl", "c.jsonl"), outputs=("o1", "o1", "o2"))
    small = INDEX_GROUP_SAMPLES // 3
    plan = make_plan(config, [
        _summary(0, 0, small, small, {}), _summary(0, 1, small, small, {}), _summary(0, 2, small, small, {}),
        _summary(0, 3, small, small, {}), _summary(1, 0, 2 * INDEX_GROUP_SAMPLES, 2 * INDEX_GROUP_SAMPLES, {}),
        _summary(1, 1, 5, 5, {}), _summary(2, 0, 5, 5, {}),
    ])
    keys = [[(bp.file, bp.block) for bp in task] for task in index_tasks(plan, "file")]
    assert keys == [[(0, 0), (0, 1), (0, 2)], [(0, 3)], [(1, 0)], [(1, 1)], [(2, 0)]]
    assert [len(task) for task in index_tasks(plan, "parts")] == [1] * 7


def test_the_encoded_write_tasks_grow_with_blocks_plus_tasks_not_their_product():
    """What the runner carries between the plan and the write stage, encoded as Beam
    encodes each element: 8x the blocks and 8x the duplicate tasks must not cost 64x."""
    from apache_beam.coders import registry

    from mintdim_beam.beam.write_stage import write_tasks

    coder = registry.get_coder(object)

    def encoded(blocks: int, tasks: int) -> int:
        rows = DUPLICATE_TASK_ROWS * tasks // blocks      # enough hashes for a task per range
        summaries = [_summary(0, b, rows, rows, {4: 7}, hash_tasks=tasks) for b in range(blocks)]
        plan = make_plan(_config(), summaries)
        dup = [t for t in write_tasks(plan) if isinstance(t, DuplicateTask)]
        assert len(dup) == tasks and len(plan.hash_spills[0]) == blocks
        return sum(len(coder.encode(t)) for t in dup)

    small, large = encoded(16, 16), encoded(128, 128)
    assert large < 10 * small

