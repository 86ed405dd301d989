"""The record codec shared by the writer and readers."""

import numpy as np

from mintdim_beam.shard_format import decode_record, layout_units, ragged_gather_index, view_records


def test_ragged_gather_index():
    idx = ragged_gather_index(np.array([10, 0, 5]), np.array([2, 0, 3]))
    assert idx.tolist() == [10, 11, 5, 6, 7]


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
