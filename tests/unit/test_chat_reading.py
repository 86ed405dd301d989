"""Reading chat outputs, the pure parts: ``format.chat.role_mask`` and
``render_messages``, and the optional ``roles`` / ``pair_id`` / ``pair_role`` columns of
``sample_index.jsonl``, the same on the Arrow path and line by line, at any chunk size.

Expected masks are written out position by position; expected columns come from the
rows with ``json``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mintdim_beam.errors import ReaderError
from mintdim_beam.format.chat import ABSENT, render_messages, role_mask
from mintdim_beam.reader import sample_index as si
from mintdim_beam.reader.sample_index import parse_sample_index


def test_role_mask_marks_the_wanted_roles_parts():
    # two slots: (prefix 2, content 3, suffix 1) of role 0, then (1, 2, 1) of role 1
    lengths = [2, 3, 1, 1, 2, 1]
    assert role_mask(lengths, [0, 1], [1], width=12).astype(int).tolist() == \
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    assert role_mask(lengths, [0, 1], [0], ["content", "suffix"], width=10).astype(int).tolist() == \
        [0, 0, 1, 1, 1, 1, 0, 0, 0, 0]
    assert role_mask(lengths, [0, 1], [0, 1], ["prefix"]).astype(int).tolist() == \
        [1, 1, 0, 0, 0, 0, 1, 0, 0, 0]
    # an absent slot is never in the mask, whatever code is asked for
    assert not role_mask([1, 1, 1, 0, 0, 0], [ABSENT, ABSENT], [ABSENT, 0], width=4).any()
    # many records at once, and a width shorter than the tokens (truncated view)
    batch = role_mask([[2, 3, 1, 1, 2, 1], [0, 1, 0, 3, 0, 1]], [[0, 1], [1, 0]], [0], ["content"], width=5)
    assert batch.astype(int).tolist() == [[0, 0, 1, 1, 1], [0, 0, 0, 0, 0]]
    assert role_mask([[0, 1, 0, 3, 0, 1]], [[1, 0]], [0], width=6).astype(int).tolist() == [[0, 1, 1, 1, 1, 0]]
    with pytest.raises(KeyError, match=r"no message part named \['header'\]"):
        role_mask(lengths, [0, 1], [0], ["header"], width=4)
    with pytest.raises(ValueError, match="6 segment lengths per record do not fit 3 message slots"):
        role_mask(lengths, [0, 1, 0], [0], width=4)


def test_render_messages_as_the_build_renders():
    code = {"user": 0, "assistant": 1}
    texts, codes, empty = render_messages(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}], "role", "content", code,
        ["U:", "A:"], ["\n", "<e>"], 3, "messages")
    assert texts == ("U:", "hi", "\n", "A:", "", "<e>", "", "", "")
    assert codes == (0, 1, ABSENT) and empty == [1]
    problem = render_messages([{"role": "bot", "content": "x"}], "role", "content", code, ["", ""], ["", ""], 3,
                              "messages")
    assert problem.en == "message 0: role 'bot' has no template (roles: ['user', 'assistant'])"
    assert render_messages("x", "role", "content", code, [], [], 3, "messages").en == \
        "field 'messages' must be a list of messages, got string"
    assert render_messages([{}] * 4, "role", "content", code, [], [], 3, "messages").en == \
        "conversation has 4 messages, more than max_messages 3"


ROLES = ("system", "user", "assistant", "tool")


def chat_row(i: int, pairs: bool) -> dict:
    unit = (8, 16)[i % 2]
    row = {"sample_id": i, "hash": f"{i * 31:064x}", "token_count": i % unit, "unit_size": unit,
           "source_file": "c.jsonl", "source_line": i + 1, "shard_path": f"unit_{unit}/shard_{i // 8:06d}.bin",
           "empty_fields": [], "shard_record": i % 8, "roles": [ROLES[(i + k) % 4] for k in range(i % 5)]}
    if pairs:
        row["pair_id"], row["pair_role"] = i // 2, ("chosen", "rejected")[i % 2]
    return row


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("chunk", [1, 300, 1 << 20])
def test_roles_and_pairs_columns(pairs, chunk):
    rows = [chat_row(i, pairs) for i in range(40)]
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode()
    ix = parse_sample_index(data, chunk_bytes=chunk)
    assert [ix.roles(r) for r in range(len(ix))] == [tuple(r["roles"]) for r in rows]
    assert ix.role_codes.dtype == np.int16 and len(ix.role_codes) == sum(len(r["roles"]) for r in rows)
    if pairs:
        assert ix.pair_id.tolist() == [i // 2 for i in range(40)]
        assert ix.pair_role.tolist() == [i % 2 for i in range(40)]
    else:
        assert ix.pair_id is None and ix.pair_role is None
    # the Arrow path takes such a chunk whole, and the line-by-line parse agrees with it
    fast = si.parse_sample_index(data)
    lines = si.parse_sample_index(data.replace(b"\n", b"\n\n", 1), problems=[])   # a blank line: line by line
    for other in (fast, lines):
        assert [other.roles(r) for r in range(len(other))] == [tuple(r["roles"]) for r in rows]
        assert (other.pair_id is None) == (not pairs)


def test_rows_without_roles_and_plain_indexes():
    rows = [chat_row(i, False) for i in range(6)]
    plain = [{k: v for k, v in r.items() if k != "roles"} for r in rows]
    ix = parse_sample_index("".join(json.dumps(r) + "\n" for r in plain).encode())
    assert ix.role_count is None and ix.roles(0) is None
    del rows[3]["roles"]        # one row without: -1, and None from roles()
    ix = parse_sample_index("".join(json.dumps(r) + "\n" for r in rows).encode())
    assert ix.role_count.tolist() == [0, 1, 2, -1, 4, 0] and ix.roles(3) is None
    assert ix.roles(4) == ("system", "user", "assistant", "tool")


@pytest.mark.parametrize("edit, message", [
    ({"roles": "user"}, "roles must be a list of at most 4096 role names (strings), got 'user'"),
    ({"roles": ["user", 3]}, "roles must be a list of at most 4096 role names (strings), got ['user', 3]"),
    ({"roles": None}, "roles must be a list of at most 4096 role names (strings), got None"),
    ({"pair_id": 4}, "pair_id without pair_role: a preference pair's rows carry both"),
    ({"pair_role": "chosen"}, "pair_role without pair_id: a preference pair's rows carry both"),
    ({"pair_id": -1, "pair_role": "chosen"}, "pair_id must be a non-negative integer below 2**63, got -1"),
    ({"pair_id": 1.0, "pair_role": "chosen"}, "pair_id must be a non-negative integer below 2**63, got 1.0"),
    ({"pair_id": 1, "pair_role": None}, "pair_role must be one of ['chosen', 'rejected'], got None"),
])
def test_bad_optional_values_are_row_problems(edit, message):
    rows = [chat_row(i, False) for i in range(5)]
    rows[2].update(edit)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    problems = []
    ix = parse_sample_index(data, problems)
    assert [(p.line, p.message) for p in problems] == [(3, message)]
    assert len(ix) == 4
    with pytest.raises(ReaderError) as err:
        parse_sample_index(data)
    assert err.value.english.endswith(f"sample_index.jsonl line 3: {message}")


def test_more_distinct_roles_than_codes_is_a_row_problem():
    most = np.iinfo(np.int16).max
    rows = []
    for i in range(most + 2):
        row = chat_row(i % 40, False)
        row["sample_id"], row["roles"] = i, [f"r{i}"] if i <= most else ["r0"]
        rows.append(row)
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode()
    problems = []
    ix = parse_sample_index(data, problems)
    assert [(p.line, p.message) for p in problems] == [
        (most + 1, f"roles: the index names more than {most} distinct roles, more than a reader codes")]
    assert len(ix) == most + 1 and ix.roles(most) == ("r0",) and len(ix.role_names) == most
