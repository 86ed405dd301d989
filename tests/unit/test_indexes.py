"""Index rows written column-wise (``mintdim_beam.core.indexes``) against rows built one by
one with ``json.dumps``, on the strings and numbers that make that hard."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from mintdim_beam.core import indexes
from mintdim_beam.core.block_result import BlockResult
from mintdim_beam.tokenization.unk_rows import UnkTable
from mintdim_beam.core.plan import BlockPlan
from mintdim_beam.tokenization.unk_rows import CharColumn, unk_part

TRICKY = ['"', "\\", "\n", "\x00", "\x1f", "", "\uffff", "\ufffe", "漢字", "🙂", "a\"b\\c", "\U0010ffff",
          "\ue000", "\u2028", "\x7f", "Q:", "\ud7ff"]


def _block(rng, n_samples: int, chars_pool: list, max_position: int):
    """A block of ``n_samples`` OK samples, some with UNK tokens, and its UNK table."""
    sample, position, segment, chars = [], [], [], []
    for s in range(n_samples):
        k = rng.choice([0, 0, 1, 3, 12])
        for p in sorted(rng.sample(range(max_position), min(k, max_position))):
            sample.append(s)
            position.append(p)
            segment.append(rng.randrange(3))
            chars.append(rng.choice(chars_pool))
    unk = UnkTable(np.asarray(sample, np.int64), np.asarray(position, np.int64),
                           np.asarray(segment, np.int64), chars)
    meta = BlockResult(
        n_lines=n_samples, local_line=np.arange(n_samples, dtype=np.int64),
        status=np.zeros(n_samples, np.int8), token_count=np.full(n_samples, 5, np.int64),
        orig_count=np.full(n_samples, 5, np.int64), unit=np.full(n_samples, 8, np.int64),
        digests=np.frombuffer(rng.randbytes(32 * n_samples), np.uint8).reshape(n_samples, 32), unk=unk)
    return meta, BlockPlan(0, 0, 0, 100, 200, {8: 0})


def _want(meta, plan, source) -> str:
    rows = []
    unk = meta.unk
    chars = unk.chars.tolist()
    for s in sorted(set(unk.sample.tolist())):
        at = np.flatnonzero(unk.sample == s)
        rows.append(indexes.dumps_row({
            "sample_id": plan.sample_offset + s, "hash": meta.digests[s].tobytes().hex(),
            "source_file": source, "source_line": plan.line_offset + 1 + int(meta.local_line[s]),
            "unk_count": len(at), "unk_positions": unk.position[at].tolist(),
            "unk_field_indices": unk.segment[at].tolist(), "unk_chars": [chars[i] for i in at.tolist()],
        }))
    return "".join(rows)


@pytest.mark.parametrize("pool, max_position", [
    (TRICKY, 50),                                   # escapes, noncharacters as content
    (TRICKY + ["x"] * 10, 70000),                   # five-digit positions
    (["\uffff", "\ufffe", "\U0010ffff", "\U0010fffe", "\ue000", "ok"], 9),   # every separator taken
])
def test_unk_rows_equal_json_dumps(pool, max_position):
    rng = random.Random(len(pool) + max_position)
    meta, plan = _block(rng, 300, pool, max_position)
    source = 'data/"odd" %s.jsonl'
    got = indexes.block_index_rows(meta, plan, source, 8, 16)
    assert bytes(got["unk_index.jsonl"]).decode() == _want(meta, plan, source)
    assert got["stats"]["unk_tokens"] == len(meta.unk) > 300


@pytest.mark.parametrize("pool", [TRICKY, ["\uffff", "\ufffe", "\U0010ffff", "\U0010fffe", "\ue000", ""]])
def test_unk_table_keeps_its_strings_as_code_points(pool):
    """A list of strings goes in, the same strings come out: through the column's own
    operations, a pickle, and the (separator, joined) form tables were pickled in."""
    rng = random.Random(5)
    chars = [rng.choice(pool) for _ in range(5000)]
    table = UnkTable(np.arange(5000), np.arange(5000), np.zeros(5000, np.int64), chars)
    assert isinstance(table.chars, CharColumn) and table.chars.tolist() == chars
    assert table.chars.codes.dtype == np.uint32 and len(table.chars.codes) == len("".join(chars))
    back = pickle.loads(pickle.dumps(table, protocol=5))
    assert back.chars == table.chars and back.chars.tolist() == chars
    assert np.array_equal(back.sample, table.sample)
    index = rng.sample(range(5000), 300) + [7, 7, 0]
    assert table.chars.take(index).tolist() == [chars[i] for i in index]
    assert table.chars.take([]).tolist() == []
    halves = CharColumn.concat([CharColumn.of(chars[:1234]), CharColumn(), CharColumn.of(chars[1234:])])
    assert halves == table.chars
    found = table.chars.joined()
    if pool is TRICKY:
        sep, joined = found
        assert sep not in "".join(chars) and joined.split(sep) == chars
    else:
        assert found is None                             # every separator occurs
    for old in (chars, ("\x01", "\x01".join(chars))):  # as tables were once pickled
        older = UnkTable.__new__(UnkTable)
        older.__setstate__({**table.__dict__, "chars": old})
        assert older.chars.tolist() == chars
    assert pickle.loads(pickle.dumps(UnkTable())).chars.tolist() == []
    assert UnkTable(chars=["\uffff"]).chars.joined() == ("\ufffe", "\uffff")


def test_an_unk_table_pickles_its_integers_narrow_and_loads_them_as_int64():
    """A spilled table is mostly its integer columns: they travel in the narrowest type
    that holds them (int8 ... int64, values at the edges included) and come back as
    the same int64 columns."""
    n = 20_000
    rng = np.random.default_rng(3)
    cases = [
        (np.arange(n), rng.integers(0, 70_000, n), np.zeros(n, np.int64)),          # int16, int32, int8
        (np.full(n, 2**31 - 1), np.full(n, -2**31), np.full(n, 2**40)),           # int32 edges, int64
        (np.full(n, 127), np.full(n, -128), np.full(n, 128)),                      # int8 edges, int16
    ]
    for sample, position, segment in cases:
        table = UnkTable(sample, position, segment, ["é"] * n, np.arange(3), np.array([1, 2, 3]),
                                 ["a", "b", "c"])
        wide = len(pickle.dumps({**table.__dict__, "chars": (table.chars.codes, table.chars.ends)}, protocol=5))
        data = pickle.dumps(table, protocol=5)
        back = pickle.loads(data)
        for name in ("sample", "position", "segment", "rendered_sample", "rendered_count"):
            assert getattr(back, name).dtype == np.int64 and np.array_equal(getattr(back, name), getattr(table, name))
        assert back.chars == table.chars and back.chars.ends.dtype == np.int64
        assert back.rendered_text == ["a", "b", "c"] and back.row_parts() == table.row_parts()
        assert len(data) < wide
    small = pickle.dumps(UnkTable(np.arange(n), np.arange(n), np.zeros(n, np.int64), ["é"] * n), protocol=5)
    assert len(small) < 0.45 * n * (3 * 8 + 4 + 8)      # int64 columns, code points, int64 ends


@pytest.mark.parametrize("pool", [TRICKY, ["\uffff", "\ufffe", "\U0010ffff", "\U0010fffe", "\ue000", "ok"]])
def test_an_unpickled_block_writes_the_same_rows(pool):
    """The write stage reads a block's metadata back from its spill."""
    rng = random.Random(11)
    meta, plan = _block(rng, 300, pool, 50)
    source = "data/in.jsonl"
    want = indexes.block_index_rows(meta, plan, source, 8, 16)["unk_index.jsonl"]
    back = pickle.loads(pickle.dumps(meta, protocol=5))
    assert len(back.unk) == len(meta.unk) > 300
    got = indexes.block_index_rows(back, plan, source, 8, 16)["unk_index.jsonl"]
    assert got == want and bytes(got).decode() == _want(meta, plan, source)
    assert back.unk.chars == meta.unk.chars
    assert all(np.array_equal(getattr(back.unk, c), getattr(meta.unk, c)) for c in ("sample", "position", "segment"))


def _rendered(unk: UnkTable, which: set) -> UnkTable:
    """``unk`` with the samples in ``which`` moved to rendered entries (as the encoder's
    repeat cache hands them over), each UNK part one shared string."""
    keep = ~np.isin(unk.sample, sorted(which))
    moved = sorted(which & set(unk.sample.tolist()))
    counts, texts = [], []
    for s in moved:
        at = np.flatnonzero(unk.sample == s)
        counts.append(len(at))
        texts.append(unk_part(unk.position[at], unk.segment[at], unk.chars.take(at).tolist()))
    return UnkTable(unk.sample[keep], unk.position[keep], unk.segment[keep],
                            unk.chars.take(np.flatnonzero(keep)),
                            np.asarray(moved, np.int64), np.asarray(counts, np.int64), texts)


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_rendered_unk_parts_write_the_rows_columns_write(share):
    """Samples whose UNK part comes rendered (a repeat's) give the bytes json.dumps gives,
    in sample order among the others, before and after a pickle round trip."""
    rng = random.Random(int(share * 10) + 3)
    meta, plan = _block(rng, 300, TRICKY + ["x"] * 5, 60)
    source = "data/in.jsonl"
    want = _want(meta, plan, source)
    with_unk = sorted(set(meta.unk.sample.tolist()))
    moved = {s for s in with_unk if rng.random() < share}
    meta_r = BlockResult(**{**meta.__dict__, "unk": _rendered(meta.unk, moved)})
    assert len(meta_r.unk.rendered_sample) == len(moved) and meta_r.unk.tokens == meta.unk.tokens
    got = indexes.block_index_rows(meta_r, plan, source, 8, 16)
    assert bytes(got["unk_index.jsonl"]).decode() == want
    assert got["stats"] == {"samples_with_unk": len(with_unk), "unk_tokens": len(meta.unk)}
    assert meta_r.unk.row_parts() == meta.unk.row_parts() and len(meta.unk.row_parts()) == len(with_unk)
    back = pickle.loads(pickle.dumps(meta_r, protocol=5))
    assert bytes(indexes.block_index_rows(back, plan, source, 8, 16)["unk_index.jsonl"]).decode() == want


def test_a_shared_unk_part_is_pickled_once():
    part = unk_part(np.arange(400), np.zeros(400, np.int64), ["ệ"] * 400)
    table = UnkTable(rendered_sample=np.arange(1000), rendered_count=np.full(1000, 400),
                             rendered_text=[part] * 1000)
    data = pickle.dumps(table, protocol=5)
    assert len(part) * 1000 > 100 * len(data)
    back = pickle.loads(data)
    assert back.rendered_text == [part] * 1000 and back.tokens == 400_000
    old = {k: v for k, v in table.__dict__.items() if not k.startswith("rendered")}
    older = UnkTable.__new__(UnkTable)
    older.__setstate__(old)                         # a table pickled before rendered entries
    assert older.tokens == 0 and older.rendered_text == []


@pytest.mark.parametrize("values", [
    [0, 7, 10, 65535, 4096, 9],                  # the table of small integers
    [0, 65536, 3],                                # one past it: Arrow's cast
    [-1, 5],                                      # negative: the cast
    [2**40, 123456789],
    [],
])
def test_integer_texts_are_what_str_writes(values):
    assert indexes._ints_text(np.asarray(values, np.int64)).to_pylist() == [str(v) for v in values]


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_a_spilled_block_result_reads_back_as_written(share):
    """Spilled metadata is data (``spill_meta``), never a pickle: the rows written from
    what is read back are the rows of the block itself, and a shared UNK part is
    written once."""
    from mintdim_beam.core import spill_meta

    rng = random.Random(5)
    meta, plan = _block(rng, 300, TRICKY + ["x"] * 5, 60)
    moved = {s for s in set(meta.unk.sample.tolist()) if rng.random() < share}
    meta = BlockResult(**{**meta.__dict__, "unk": _rendered(meta.unk, moved)})
    meta.empty_fields.update({3: ["input"], 7: ["input", "output"]})
    meta.bad.update({5: ("SourceParseError", "not valid JSON")})
    data = spill_meta.encode(meta)
    back = spill_meta.decode(data)
    source = "data/in.jsonl"
    want = indexes.block_index_rows(meta, plan, source, 8, 16)
    got = indexes.block_index_rows(back, plan, source, 8, 16)
    assert {k: bytes(v) for k, v in got.items() if k != "stats"} == {k: bytes(v) for k, v in want.items() if k != "stats"}
    assert got["stats"] == want["stats"]
    assert back.empty_fields == meta.empty_fields and back.bad == meta.bad and back.n_lines == meta.n_lines
    for name in ("local_line", "status", "token_count", "orig_count", "unit", "digests"):
        assert np.array_equal(getattr(back, name), getattr(meta, name)) and getattr(back, name).dtype == getattr(meta, name).dtype
    assert back.unk.row_parts() == meta.unk.row_parts()
    part = unk_part(np.arange(400), np.zeros(400, np.int64), ["ệ"] * 400)
    shared = BlockResult(unk=UnkTable(rendered_sample=np.arange(1000), rendered_count=np.full(1000, 400),
                                      rendered_text=[part] * 1000))
    assert len(spill_meta.encode(shared)) < 2 * len(part.encode()) + 8000


def test_a_crafted_spill_is_refused_and_runs_nothing(tmp_path):
    """A pickle (which would run code when loaded) or damaged bytes in place of a
    block's metadata are a ValueError, never unpickled."""
    from mintdim_beam.core import spill_meta

    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    good = spill_meta.encode(BlockResult(n_lines=3, status=np.zeros(2, np.int8), local_line=np.arange(2),
                                         token_count=np.ones(2, np.int64), orig_count=np.ones(2, np.int64),
                                         unit=np.full(2, 8), digests=np.zeros((2, 32), np.uint8)))
    header_end = len(spill_meta.MAGIC) + 8 + int.from_bytes(good[len(spill_meta.MAGIC):len(spill_meta.MAGIC) + 8], "little")
    crafted = [
        pickle.dumps(Boom()),
        good[:len(good) - 9],                                            # an array cut short
        good.replace(b'"<i8"', b'"|O"', 1),                              # object dtype
        good[:len(spill_meta.MAGIC)] + (10 ** 9).to_bytes(8, "little") + good[len(spill_meta.MAGIC) + 8:],
        good[:header_end].replace(b'"n_lines"', b'"n_linez"') + good[header_end:],
    ]
    for data in crafted:
        with pytest.raises(ValueError):
            spill_meta.decode(data)
    assert not marker.exists()
    assert spill_meta.decode(good).n_lines == 3


def test_spilled_empty_fields_read_back_through_their_table():
    """Empty fields spill as two columns and a table of the distinct lists: they read
    back as written, and a list index outside the table is refused."""
    from mintdim_beam.core import spill_meta

    n = 200
    empty = {s: (["input"] if s % 3 else ["input", "output"]) for s in range(0, n, 2)}
    meta = BlockResult(n_lines=n, status=np.zeros(n, np.int8), local_line=np.arange(n),
                       token_count=np.ones(n, np.int64), orig_count=np.ones(n, np.int64),
                       unit=np.full(n, 8), digests=np.zeros((n, 32), np.uint8), empty_fields=empty)
    data = spill_meta.encode(meta)
    assert spill_meta.decode(data).empty_fields == empty
    assert data.count(b'"output"') == 1          # each distinct list once, not once a sample
    table = b'"empty_lists":[["input","output"],["input"]]'
    shorter = b'"empty_lists":[["input"]]'
    broken = data.replace(table, shorter + b" " * (len(table) - len(shorter)), 1)   # the header keeps its length
    assert broken != data
    with pytest.raises(ValueError, match="out of range"):
        spill_meta.decode(broken)


def test_sample_rows_empty_fields_equal_json_dumps_across_blocks():
    """Each sample row's ``empty_fields`` is its own list as ``json.dumps`` writes it,
    when consecutive blocks have different lists (some shared objects, some equal
    copies, names that need escapes), a block has none, and a bad sample has some
    (it has no row)."""
    import json

    from mintdim_beam.core.block_result import BAD

    rng = random.Random(7)
    lists = [["input"], ["input", "output"], ['q"uote', "漢字"], ["output"]]
    blocks = []
    for b, n in enumerate((40, 25, 30)):
        meta, _ = _block(rng, n, ["x"], 5)
        if b != 1:
            for s in rng.sample(range(n), n // 2):
                names = rng.choice(lists)
                meta.empty_fields[s] = names if rng.random() < 0.5 else list(names)
        if b == 2:
            meta.status[3] = BAD
            meta.empty_fields[3] = ["input"]
        blocks.append((meta, BlockPlan(0, b, 0, 100 * b, 1000 * b, {8: 40 * b}), f"f{b}.jsonl"))
    rows = indexes.run_index_rows(blocks, 8, 10)["sample_index.jsonl"]
    got = [json.loads(line)["empty_fields"] for line in bytes(rows).decode("utf-8").splitlines()]
    want = [meta.empty_fields.get(s, []) for meta, _, _ in blocks for s in range(len(meta.status))
            if meta.status[s] != BAD]
    assert got == want and len(got) == 94
    assert b'"empty_fields":["q\\"uote","\xe6\xbc\xa2\xe5\xad\x97"]' in bytes(rows)
