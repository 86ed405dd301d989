"""The record codec shared by the writer and readers."""

import numpy as np
import pytest

from mintdim_beam.format.shard_format import UINT16, UINT32, SlotOverflowError, decode_record, layout_units, ragged_gather_index, slot_storage, view_records, widen_records

U2, U4 = np.dtype("<u2"), np.dtype("<u4")


def test_ragged_gather_index():
    idx = ragged_gather_index(np.array([10, 0, 5]), np.array([2, 0, 3]))
    assert idx.tolist() == [10, 11, 5, 6, 7]
    assert ragged_gather_index(np.array([3, 4]), np.array([0, 0])).tolist() == []
    assert ragged_gather_index(np.array([0, 7, 7, 2]), np.array([0, 1, 2, 1])).tolist() == [7, 7, 8, 2]
    rng = np.random.default_rng(0)
    for _ in range(50):          # against the obvious loop: runs going back, repeating, empty
        starts = rng.integers(0, 1000, rng.integers(1, 40)).astype(np.uint32)
        lengths = rng.integers(0, 6, len(starts))
        expected = [int(s) + k for s, n in zip(starts, lengths) for k in range(n)]
        got = ragged_gather_index(starts, lengths)
        assert got.dtype == np.int64 and got.tolist() == expected


def test_records_layout_and_round_trip():
    # Three samples, three segments, one flat source: field tokens first, then a
    # literal (segment 1) that every sample shares. Samples 0 and 2 go to unit 8,
    # sample 1 to unit 4; each unit keeps sample order.
    source = np.array([5, 6, 7, 11, 12, 13, 21, 9])
    lengths = np.array([[2, 1, 0], [1, 1, 0], [1, 1, 3]])
    starts = np.array([[0, 7, 0], [6, 7, 0], [2, 7, 3]])
    out = layout_units(np.array([8, 4, 8]), lengths, starts, source,
                       magic=0xFFFF, pad_id=0, dtype=np.dtype("<u2"))
    assert sorted(out) == [4, 8]
    assert out[8].shape == (2, 1 + 3 + 8) and out[8].dtype == np.dtype("<u2")
    assert out[8][0].tolist() == [0xFFFF, 2, 1, 0, 5, 6, 9, 0, 0, 0, 0, 0]
    assert out[8][1].tolist() == [0xFFFF, 1, 1, 3, 7, 9, 11, 12, 13, 0, 0, 0]
    assert out[4].tolist() == [[0xFFFF, 1, 1, 0, 21, 9, 0, 0]]
    records = view_records(out[8].tobytes(), np.dtype("<u2"), 3, 8)
    segs = decode_record(records[1], 3)
    assert [s.tolist() for s in segs] == [[7], [9], [11, 12, 13]]


def test_truncated_lengths_take_only_leading_tokens():
    # Segment lengths already capped by the truncate policy: only leading tokens go in.
    out = layout_units(np.array([3]), np.array([[2, 1]]), np.array([[0, 3]]), np.array([1, 2, 3, 4, 5]),
                       0xFFFFFFFF, 7, np.dtype("<u4"))
    assert out[3].tolist() == [[0xFFFFFFFF, 2, 1, 1, 2, 4]]


def test_empty_layout():
    assert layout_units(np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64),
                        np.zeros(0, np.int64), 0xFFFF, 0, np.dtype("<u2")) == {}


def _naive_layout(units, seg_lengths, src_starts, source, magic, pad_id, dtype):
    """One record at a time, the way the format is specified."""
    out = {}
    n = seg_lengths.shape[1]
    for u in sorted(set(units.tolist())):
        rows = []
        for i in np.nonzero(units == u)[0]:
            rec = np.full(1 + n + u, pad_id, dtype)
            rec[0] = magic
            rec[1:1 + n] = seg_lengths[i]
            at = 1 + n
            for j in range(n):
                k = seg_lengths[i, j]
                rec[at:at + k] = source[src_starts[i, j]:src_starts[i, j] + k]
                at += k
            rows.append(rec)
        out[u] = np.stack(rows)
    return out


def test_layout_matches_the_record_by_record_definition():
    """Field runs back to back in the token buffer (the encoder's usual case), literal
    runs shared by every sample, and truncated or scattered runs all land as specified."""
    rng = np.random.default_rng(7)
    for case in range(60):
        m = int(rng.integers(1, 40))
        fields = rng.integers(0, 30, size=(m, 2))
        flat = rng.integers(1, 5000, size=int(fields.sum()) + 3)
        literal = rng.integers(1, 5000, size=int(rng.integers(0, 4)))
        source = np.concatenate([flat, literal])
        # field-major buffer: field 0 of every sample, then field 1
        col = fields.T.reshape(-1)
        starts_flat = (np.cumsum(col) - col).reshape(2, m).T
        lengths = np.stack([fields[:, 0], np.full(m, len(literal)), fields[:, 1]], axis=1)
        starts = np.stack([starts_flat[:, 0], np.full(m, len(flat)), starts_flat[:, 1]], axis=1)
        if case % 3 == 1:     # truncation: shorter written runs break contiguity
            lengths = np.minimum(lengths, rng.integers(0, 30, size=lengths.shape))
        if case % 3 == 2:     # samples left out (skipped): gaps between runs
            keep = np.sort(rng.choice(m, size=max(1, m // 2), replace=False))
            lengths, starts = lengths[keep], starts[keep]
        units = np.where(lengths.sum(axis=1) <= 40, 40, 100)
        got = layout_units(units, lengths, starts, source, 65535, 0, np.dtype("<u2"))
        want = _naive_layout(units, lengths, starts, source, 65535, 0, np.dtype("<u2"))
        assert sorted(got) == sorted(want)
        for u in want:
            np.testing.assert_array_equal(got[u], want[u])


# --------------------------------------------------------------------------- slots hold every value


def _one(length: int, unit: int, dtype, ids=None, pad_id=0):
    """Lay out one single-segment sample of ``length`` tokens in ``unit``."""
    source = np.arange(length, dtype=np.int64) % 300 if ids is None else np.asarray(ids, np.int64)
    magic = np.iinfo(dtype).max
    return layout_units(np.array([unit]), np.array([[length]]), np.array([[0]]), source, magic, pad_id, dtype)


def test_slots_widen_only_for_a_unit_above_65535():
    assert slot_storage(UINT16, 65535) == UINT16
    assert slot_storage(UINT16, 65536) == UINT32 == slot_storage(UINT16, 131072)
    assert slot_storage(UINT32, 8) == UINT32
    assert (UINT32.dtype, UINT32.magic, UINT32.bytes_per_token) == ("uint32", 0xFFFFFFFF, 4)


def test_a_header_length_that_does_not_fit_is_refused_not_wrapped():
    # 112,370 tokens in uint16 slots used to be written as 112,370 mod 65,536 = 46,834.
    with pytest.raises(SlotOverflowError, match=r"segment length 112370 does not fit a record slot \(0\.\.65535\)"):
        _one(112370, 131072, U2)
    rec = _one(112370, 131072, U4)[131072][0]
    assert rec[:2].tolist() == [0xFFFFFFFF, 112370]
    assert [s.tolist() for s in decode_record(rec, 1)] == [(np.arange(112370) % 300).tolist()]


def test_a_unit_above_65535_is_refused_in_uint16_slots_even_for_a_short_sample():
    with pytest.raises(SlotOverflowError, match="unit size 65536 does not fit"):
        _one(3, 65536, U2)
    assert _one(3, 65535, U2)[65535].shape == (1, 1 + 1 + 65535)


def test_the_longest_length_uint16_holds_is_kept():
    rec = _one(65535, 65535, U2)[65535][0]
    assert rec[:2].tolist() == [0xFFFF, 0xFFFF]
    assert (rec[2:] == np.arange(65535) % 300).all()


def test_a_token_id_at_or_above_the_magic_is_refused():
    with pytest.raises(SlotOverflowError, match=r"token id 65535 does not fit a record slot \(0\.\.65534\)"):
        _one(2, 4, U2, ids=[7, 65535])
    with pytest.raises(SlotOverflowError, match="token id 70000 does not fit"):
        _one(2, 4, U2, ids=[70000, 1])
    with pytest.raises(SlotOverflowError, match="token id -1 does not fit"):
        _one(2, 4, U2, ids=[-1, 1])
    assert _one(2, 4, U4, ids=[70000, 1])[4].tolist() == [[0xFFFFFFFF, 2, 70000, 1, 0, 0]]
    with pytest.raises(SlotOverflowError, match="pad id 65535 does not fit"):
        _one(2, 4, U2, ids=[1, 2], pad_id=65535)


def test_widen_records_keeps_every_value_and_swaps_the_magic():
    narrow = _one(5, 8, U2, ids=[65534, 0, 9, 3, 12], pad_id=7)[8]
    wide = widen_records(narrow, UINT32)
    assert wide.dtype == U4
    assert wide.tolist() == [[0xFFFFFFFF, 5, 65534, 0, 9, 3, 12, 7, 7, 7]]
    assert wide.tolist() == _one(5, 8, U4, ids=[65534, 0, 9, 3, 12], pad_id=7)[8].tolist()
    with pytest.raises(ValueError, match="misaligned"):
        widen_records(narrow[:, 1:], UINT32)
