"""The record codec shared by the writer and readers."""

import numpy as np

from mintdim_beam.shard_format import decode_record, encode_records, ragged_gather_index, view_records


def test_ragged_gather_index():
    idx = ragged_gather_index(np.array([10, 0, 5]), np.array([2, 0, 3]))
    assert idx.tolist() == [10, 11, 5, 6, 7]


def test_records_layout_and_round_trip():
    # two samples, three segments; segment 1 is a literal shared by both samples
    lengths = np.array([[2, 1, 0], [1, 1, 3]])
    field0 = np.array([5, 6, 7])
    lit = np.array([9])
    field2 = np.array([11, 12, 13])
    out = encode_records(
        8, lengths, [field0, lit, field2],
        [np.array([0, 2]), np.array([0, 0]), np.array([0, 0])],
        magic=0xFFFF, pad_id=0, dtype=np.dtype("<u2"),
    )
    assert out.shape == (2, 1 + 3 + 8)
    assert out[0].tolist() == [0xFFFF, 2, 1, 0, 5, 6, 9, 0, 0, 0, 0, 0]
    assert out[1].tolist() == [0xFFFF, 1, 1, 3, 7, 9, 11, 12, 13, 0, 0, 0]
    records = view_records(out.tobytes(), np.dtype("<u2"), 3, 8)
    segs = decode_record(records[1], 3)
    assert [s.tolist() for s in segs] == [[7], [9], [11, 12, 13]]


def test_truncated_lengths_take_only_leading_tokens():
    lengths = np.array([[2, 1]])
    out = encode_records(3, lengths, [np.array([1, 2, 3]), np.array([4, 5])],
                         [np.array([0]), np.array([0])], 0xFFFFFFFF, 7, np.dtype("<u4"))
    assert out.tolist() == [[0xFFFFFFFF, 2, 1, 1, 2, 4]]
