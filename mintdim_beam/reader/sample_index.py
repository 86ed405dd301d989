"""``sample_index.jsonl`` as numpy columns: where every written sample lives.

Random access needs to know where each sample lives; the index says it (``unit_size``,
``shard_path``, ``shard_record``) with its provenance (``source_file``, ``source_line``,
``hash``, ``token_count``, ``empty_fields``). It is parsed once into numpy columns
rather than a dict per row, so an index of millions of samples costs tens of bytes per
sample, and a lookup is one ``searchsorted``. ``verify`` parses it with ``problems`` to
list every bad row; the reader raises on the first.

Two kinds of dataset add columns (DESIGN.md §9): a chat output's rows end with
``roles`` (the roles of the sample's messages, in order), kept as one small code per
message, not a tuple per row; a preference pair's two rows share a ``pair_id`` and say
their ``pair_role``. Each column is ``None`` when no row has it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
import operator
from typing import Iterable, Iterator, NamedTuple, Optional

import numpy as np

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import read_messages as R
from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format.chat import PAIR_ID_KEY, PAIR_ROLE_KEY, PAIR_ROLES, PROMPT_MESSAGES_KEY, ROLES_KEY
from mintdim_beam.format.names import SAMPLE_INDEX
from mintdim_beam.format.names import SHARD_PATH



class IndexProblem(NamedTuple):
    """A ``sample_index.jsonl`` row that could not be used (1-based line number)."""

    line: int
    message: str


_INT64_END = 1 << 63
_ROW_INTS = ("sample_id", "token_count", "unit_size", "source_line", "shard_record")
#: The keys of the optional columns, and what ``pair_role`` may say (its codes).
_OPTIONAL_KEYS = (ROLES_KEY, PAIR_ID_KEY, PAIR_ROLE_KEY, PROMPT_MESSAGES_KEY)
#: The most messages a row's ``roles`` may list (a chat output's ``max_messages`` bound).
MAX_ROLES = 4096


@dataclass
class SampleIndex:
    """``sample_index.jsonl`` as numpy columns, one entry per row, in file order.

    ``files`` holds each distinct ``source_file`` once; ``file`` indexes it. Rows with an
    empty ``empty_fields`` list (nearly all) cost nothing in ``empty_fields``.
    """

    sample_id: np.ndarray
    unit: np.ndarray
    shard: np.ndarray
    record: np.ndarray
    token_count: np.ndarray
    file: np.ndarray
    line: np.ndarray
    digest: np.ndarray              # (rows, 32) uint8, the sha256 of the rendered text
    files: list
    empty_fields: dict = field(default_factory=dict)   # row -> tuple of field names
    row_line: np.ndarray = None     # 1-based line of each row in sample_index.jsonl
    # A chat output's ``roles``: row r's messages have the roles
    # role_names[role_codes[role_start[r]:role_start[r] + role_count[r]]]; a row
    # without the key counts -1. None when no row has one.
    role_count: Optional[np.ndarray] = None      # (rows,) int32
    role_codes: Optional[np.ndarray] = None      # (messages of all rows,) int16, into role_names
    role_names: list = field(default_factory=list)
    # Preference pairs: ``pair_id`` (-1 for a row without one) and ``pair_role``
    # (PAIR_ROLES' index, -1 without one); None when no row has them.
    pair_id: Optional[np.ndarray] = None         # (rows,) int64
    pair_role: Optional[np.ndarray] = None       # (rows,) int8
    # A chat pair's row: how many of its messages are the shared prompt's (-1 without).
    prompt_messages: Optional[np.ndarray] = None  # (rows,) int64
    _role_start: Optional[np.ndarray] = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.sample_id.shape[0])

    @property
    def sorted(self) -> bool:
        s = self.sample_id
        return bool(len(s) < 2 or (s[1:] > s[:-1]).all())

    def hash(self, row: int) -> str:
        return bytes(self.digest[row]).hex()

    def positions(self, samples_per_shard: int) -> np.ndarray:
        """Rank of each row's record inside its unit (shard * samples_per_shard + record)."""
        return self.shard.astype(np.int64) * samples_per_shard + self.record

    @property
    def role_start(self) -> Optional[np.ndarray]:
        """Where each row's role codes start in ``role_codes`` (computed once)."""
        if self.role_count is None:
            return None
        if self._role_start is None or len(self._role_start) != len(self.role_count):
            counts = np.maximum(self.role_count, 0).astype(np.int64)
            self._role_start = np.cumsum(counts) - counts
        return self._role_start

    def row_role_codes(self, row: int) -> Optional[np.ndarray]:
        """The codes (into ``role_names``) of one row's ``roles``; None when it has none."""
        if self.role_count is None or self.role_count[row] < 0:
            return None
        start = int(self.role_start[row])
        return self.role_codes[start:start + int(self.role_count[row])]

    def roles(self, row: int) -> Optional[tuple]:
        """The ``roles`` of one row (names, in message order); None when it has none."""
        codes = self.row_role_codes(row)
        return None if codes is None else tuple(self.role_names[c] for c in codes.tolist())


#: Bytes of whole lines parsed at a time: the parse holds the growing columns plus
#: about this much text and its Arrow table, whatever the index's size.
CHUNK_BYTES = 1 << 20
_COLUMNS = (("sample_id", np.int64), ("unit", np.int64), ("shard", np.int32), ("record", np.int64),
            ("token_count", np.int64), ("file", np.int32), ("line", np.int64), ("row_line", np.int64))
#: Per-row columns only some datasets have (-1 in a row without the key).
_OPTIONAL_COLUMNS = (("role_count", np.int32), ("pair_id", np.int64), ("pair_role", np.int8),
                     ("prompt_messages", np.int64))


def parse_sample_index(data: bytes, problems: Optional[list] = None, chunk_bytes: int = CHUNK_BYTES) -> SampleIndex:
    """Parse ``sample_index.jsonl`` bytes into a :class:`SampleIndex`.

    A malformed row raises :class:`ReaderError`, or, when ``problems`` is a list, is
    reported there as an :class:`IndexProblem` and left out (what ``verify`` wants).
    """
    view = memoryview(data)
    pieces = (view[k:k + chunk_bytes] for k in range(0, len(data), chunk_bytes))
    return parse_sample_index_pieces(pieces, problems, size_hint=len(data), chunk_bytes=chunk_bytes)


def parse_sample_index_pieces(pieces: Iterable, problems: Optional[list] = None, size_hint: Optional[int] = None,
                              chunk_bytes: int = CHUNK_BYTES) -> SampleIndex:
    """:func:`parse_sample_index` of the concatenation of ``pieces`` (bytes cut
    anywhere, e.g. an index file read a few MB at a time, or its parts in order),
    without ever holding the whole text: the peak is the columns plus one chunk.
    ``size_hint`` (the total bytes, when known) sizes the columns up front."""
    columns = _GrowingIndex(size_hint)
    for size, chunk in _chunks(pieces, problems, chunk_bytes):
        columns.append(chunk, size)
    return columns.finish()


def iter_sample_index(pieces: Iterable, problems: Optional[list] = None,
                      chunk_bytes: int = CHUNK_BYTES) -> Iterator[SampleIndex]:
    """The rows of the concatenation of ``pieces``, as one :class:`SampleIndex` per
    chunk of about ``chunk_bytes`` of whole lines, in file order.

    Every chunk shares one ``files`` list (grown as new source files appear), so
    ``file`` codes mean the same across chunks; ``row_line`` counts lines from the
    start of the whole text; ``empty_fields`` keys are rows of the chunk.
    """
    for _, chunk in _chunks(pieces, problems, chunk_bytes):
        yield chunk


def _chunks(pieces: Iterable, problems: Optional[list], chunk_bytes: int) -> Iterator[tuple[int, SampleIndex]]:
    """``(bytes of text, its rows)`` of each chunk."""
    files: dict = {}
    names: list = []
    roles = _Vocabulary()
    for first_line, text in _line_chunks(pieces, chunk_bytes):
        chunk = _fast_chunk(text, first_line, files, names, roles)
        if chunk is None:
            chunk = _checked_chunk(text, first_line, problems, files, names, roles)
        yield len(text), chunk


def _line_chunks(pieces: Iterable, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(number of its first line, bytes)`` of consecutive runs of whole lines, each
    about ``chunk_bytes`` long (a longer line makes a chunk of its own)."""
    pending, first = bytearray(), 1
    for piece in pieces:
        pending += piece
        while len(pending) >= chunk_bytes:
            cut = pending.rfind(b"\n", 0, max(chunk_bytes, 1))
            if cut < 0:
                cut = pending.find(b"\n", chunk_bytes)
                if cut < 0:
                    break           # one long line so far: wait for its end
            text = bytes(pending[:cut + 1])
            del pending[:cut + 1]
            yield first, text
            first += text.count(b"\n")
    if pending:
        yield first, bytes(pending)


_HEX = np.full(256, 255, np.uint8)
_HEX[list(b"0123456789")] = np.arange(10, dtype=np.uint8)
_HEX[list(b"abcdef")] = np.arange(10, 16, dtype=np.uint8)


def _arrow_options():
    """The row as the writer writes it: a value of another type fails the read, and the
    chunk goes line by line. Other keys are ignored, as the line-by-line parse does."""
    import pyarrow as pa
    import pyarrow.json as pj

    ints = [(key, pa.int64()) for key in _ROW_INTS + (PAIR_ID_KEY, PROMPT_MESSAGES_KEY)]
    strings = [(key, pa.string()) for key in ("source_file", "hash", "shard_path", PAIR_ROLE_KEY)]
    lists = [(key, pa.list_(pa.string())) for key in ("empty_fields", ROLES_KEY)]
    schema = pa.schema(ints + strings + lists)
    return pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")


def _fast_chunk(text: bytes, first_line: int, files: dict, names: list, roles: "_Vocabulary") -> Optional[SampleIndex]:
    """The chunk parsed with pyarrow's JSON reader and checked column by column, when
    every row passes every check of :func:`_row_problem`; None otherwise, and the
    chunk is parsed line by line instead (:func:`_checked_chunk`), which finds and
    words each problem. So this path only ever accepts what the line-by-line one
    accepts, and gives the same columns, ~20 times faster.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    # One Arrow row per line. The writer starts every line with "{"; a chunk with a
    # line that does not (blank, or edited) goes line by line, and so does one with a
    # lone "\r", which would split a line in two for Arrow (json.loads rejects it).
    lines = text.count(b"\n") + (not text.endswith(b"\n"))
    if text.count(b"\n{") + text.startswith(b"{") != lines:
        return None
    if b"\r" in text and text.count(b"\r") != text.count(b"\r\n"):
        return None
    if not lines:
        return _chunk_index({}, np.zeros((0, 32), np.uint8), names, {}, roles)
    row_line = np.arange(first_line, first_line + lines, dtype=np.int64)
    try:
        table = pj.read_json(pa.py_buffer(text), read_options=pj.ReadOptions(use_threads=False,
                             block_size=len(text) + 1), parse_options=_arrow_options())
    except (pa.ArrowInvalid, UnicodeDecodeError, ValueError):
        return None
    if table.num_rows != lines:
        return None
    got = {name: table.column(name).combine_chunks() for name in table.column_names}
    optional = {}
    nulls = None        # whether the text holds "null" at all (the writer never writes one)
    for key in _OPTIONAL_KEYS:
        column = got.pop(key, None)
        if column is None or column.null_count == len(column):
            nulls = (b"null" in text) if nulls is None else nulls
            if nulls and b'"' + key.encode() + b'"' in text:
                return None     # a null value, or the key in a text: json.loads tells them apart
        elif column.null_count:
            return None         # in some rows only: the line-by-line parse checks each
        else:
            optional[key] = column
    if (PAIR_ID_KEY in optional) != (PAIR_ROLE_KEY in optional):
        return None             # one without the other: a problem the line-by-line parse words
    if any(a.null_count for a in got.values()):
        return None         # a key missing or null: json.loads tells them apart
    got.update(optional)
    try:        # Arrow's JSON reader leaves strings' UTF-8 unchecked; json.loads rejects bad UTF-8
        for name in ("source_file", "shard_path", "empty_fields", ROLES_KEY, PAIR_ROLE_KEY):
            if name in got:
                got[name].validate(full=True)
    except pa.ArrowInvalid:
        return None
    ints = {k: got[k].to_numpy() for k in _ROW_INTS + (PAIR_ID_KEY, PROMPT_MESSAGES_KEY) if k in got}
    if any(int(v.min()) < 0 for v in ints.values()):
        return None
    extra = _fast_optional(got, roles)
    if extra is None:
        return None
    digest = got["hash"]
    if int(pc.min(pc.binary_length(digest)).as_py()) != 64 or int(pc.max(pc.binary_length(digest)).as_py()) != 64:
        return None
    first = int(np.frombuffer(digest.buffers()[1], np.int32)[digest.offset])
    nibbles = _HEX[np.frombuffer(digest.buffers()[2], np.uint8)[first:first + 64 * len(digest)]]
    if (nibbles == 255).any():
        return None
    nibbles = nibbles.reshape(-1, 32, 2)
    digests = (nibbles[:, :, 0] << 4) | nibbles[:, :, 1]
    try:
        place = pc.extract_regex(got["shard_path"], r"^unit_(?P<unit>\d+)/shard_(?P<shard>\d+)\.bin$")
        if place.null_count:
            return None
        unit = pc.cast(place.field("unit"), pa.int64()).to_numpy()
        shard = pc.cast(place.field("shard"), pa.int64()).to_numpy()
    except (pa.ArrowInvalid, OverflowError):
        return None
    if (unit != ints["unit_size"]).any() or int(shard.max()) > np.iinfo(np.int32).max:
        return None
    empty = {}
    lists = got["empty_fields"]
    for k in np.flatnonzero(pc.list_value_length(lists).to_numpy(zero_copy_only=False)).tolist():
        empty[k] = tuple(lists[k].as_py())
    source = got["source_file"]
    distinct = pc.unique(source)
    codes = np.asarray([_file_code(name, files, names) for name in distinct.to_pylist()], np.int32)
    cols = {"sample_id": ints["sample_id"], "unit": ints["unit_size"], "shard": shard.astype(np.int32),
            "record": ints["shard_record"], "token_count": ints["token_count"],
            "file": codes[pc.index_in(source, distinct).to_numpy()], "line": ints["source_line"],
            "row_line": row_line}
    return _chunk_index(cols, digests, names, empty, roles, **extra)


def _fast_optional(got: dict, roles: "_Vocabulary") -> Optional[dict]:
    """The optional columns of an Arrow-parsed chunk (``_chunk_index``'s keywords), or
    None when a value is one that :func:`_row_problem` refuses."""
    import pyarrow as pa
    import pyarrow.compute as pc

    extra = {}
    lists = got.get(ROLES_KEY)
    if lists is not None:
        counts = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
        flat = pc.list_flatten(lists)
        if flat.null_count or int(counts.max()) > MAX_ROLES:
            return None
        distinct = pc.unique(flat)
        if not roles.room(distinct.to_pylist()):
            return None         # more distinct roles than codes: the line-by-line parse words it
        codes = np.asarray([roles.code(name) for name in distinct.to_pylist()], np.int16)
        extra["role_count"] = counts.astype(np.int32)
        extra["role_codes"] = codes[pc.index_in(flat, distinct).to_numpy()] if len(flat) else np.zeros(0, np.int16)
    if PAIR_ID_KEY in got:
        said = pc.index_in(got[PAIR_ROLE_KEY], pa.array(PAIR_ROLES))
        if said.null_count:
            return None
        extra["pair_id"] = got[PAIR_ID_KEY].to_numpy()
        extra["pair_role"] = said.to_numpy().astype(np.int8)
    if PROMPT_MESSAGES_KEY in got:
        extra["prompt_messages"] = got[PROMPT_MESSAGES_KEY].to_numpy()
    return extra


class _Vocabulary:
    """Distinct role names in first-seen order, shared by the chunks of one parse."""

    def __init__(self):
        self.names: list = []
        self._codes: dict = {}

    #: Distinct role names an index may hold (codes are int16).
    MOST = np.iinfo(np.int16).max

    def room(self, names) -> bool:
        """Whether ``names`` fit beside the ones met so far."""
        return len(self.names) + sum(1 for n in set(names) if n not in self._codes) <= self.MOST

    def code(self, name: str) -> int:
        code = self._codes.get(name)
        if code is None:
            code = self._codes[name] = len(self.names)
            self.names.append(name)
        return code


def _file_code(name: str, files: dict, names: list) -> int:
    code = files.get(name)
    if code is None:
        code = files[name] = len(names)
        names.append(name)
    return code


def _chunk_index(cols: dict, digests: np.ndarray, names: list, empty: dict, roles: _Vocabulary,
                 role_count=None, role_codes=None, pair_id=None, pair_role=None,
                 prompt_messages=None) -> SampleIndex:
    return SampleIndex(**{name: np.asarray(cols.get(name, ()), dtype) for name, dtype in _COLUMNS},
                       digest=digests, files=names, empty_fields=empty,
                       role_count=None if role_count is None else np.asarray(role_count, np.int32),
                       role_codes=None if role_codes is None else np.asarray(role_codes, np.int16),
                       role_names=roles.names,
                       pair_id=None if pair_id is None else np.asarray(pair_id, np.int64),
                       pair_role=None if pair_role is None else np.asarray(pair_role, np.int8),
                       prompt_messages=None if prompt_messages is None else np.asarray(prompt_messages, np.int64))


def _checked_chunk(text: bytes, first_line: int, problems: Optional[list], files: dict, names: list,
                   roles: _Vocabulary) -> SampleIndex:
    """The chunk parsed a line at a time, each row checked by :func:`_row_problem`."""
    cols = {name: [] for name, _ in _COLUMNS}
    digests: list = []
    empty: dict = {}
    role_count: list = []
    role_codes: list = []
    pair_id: list = []
    pair_role: list = []
    prompt_messages: list = []
    lines = text.split(b"\n")
    if lines[-1] == b"":
        lines.pop()         # after the newline that ends the chunk's last line: no line
    for n, raw in enumerate(lines, start=first_line):
        if not raw.strip():
            # the writer never writes one: a line inserted, or two rows' text run together
            message = R.read_text("row_blank")
            if problems is None:
                raise ReaderError("row", file=SAMPLE_INDEX, line=n, detail=message)
            problems.append(IndexProblem(n, message.en))
            continue
        message = None
        try:
            row = json.loads(raw)
        except ValueError:
            row, message = None, R.read_text("row_not_json")
        if row is not None:
            message = _row_problem(row)
        if message is None and isinstance(row.get(ROLES_KEY), list) and not roles.room(row[ROLES_KEY]):
            message = R.read_text("row_roles_names", most=roles.MOST)
        if message is not None:
            if problems is None:
                raise ReaderError("row", file=SAMPLE_INDEX, line=n, detail=message)
            problems.append(IndexProblem(n, message.en))
            continue
        m = SHARD_PATH.match(row["shard_path"])
        k = len(cols["sample_id"])
        cols["sample_id"].append(row["sample_id"])
        cols["unit"].append(row["unit_size"])
        cols["shard"].append(int(m.group(2)))
        cols["record"].append(row["shard_record"])
        cols["token_count"].append(row["token_count"])
        cols["file"].append(_file_code(row["source_file"], files, names))
        cols["line"].append(row["source_line"])
        cols["row_line"].append(n)
        digests.append(bytes.fromhex(row["hash"]))
        if row.get("empty_fields"):
            empty[k] = tuple(row["empty_fields"])
        said = row.get(ROLES_KEY)
        role_count.append(-1 if said is None else len(said))
        role_codes.extend(roles.code(name) for name in said or ())
        pair_id.append(row.get(PAIR_ID_KEY, -1))
        pair_role.append(PAIR_ROLES.index(row[PAIR_ROLE_KEY]) if PAIR_ROLE_KEY in row else -1)
        prompt_messages.append(row.get(PROMPT_MESSAGES_KEY, -1))
    has_roles = any(c >= 0 for c in role_count)
    has_pairs = any(p >= 0 for p in pair_id)
    return _chunk_index(cols, np.frombuffer(b"".join(digests), np.uint8).reshape(-1, 32).copy(), names, empty,
                        roles, role_count if has_roles else None, role_codes if has_roles else None,
                        pair_id if has_pairs else None, pair_role if has_pairs else None,
                        prompt_messages if any(p >= 0 for p in prompt_messages) else None)


class _GrowingIndex:
    """Columns that chunks are appended to, sized once from the index's byte size
    (pages never written cost no memory) and grown by half when that falls short."""

    def __init__(self, size_hint: Optional[int]):
        self._size_hint = size_hint
        self._bytes_seen = 0
        self._cols = {name: np.empty(0, dtype) for name, dtype in _COLUMNS}
        self._digest = np.empty((0, 32), np.uint8)
        self._n = 0
        self._files: list = []
        self._empty: dict = {}
        self._role_names: list = []
        self._optional: dict = {}       # role_count, pair_id, pair_role: once a chunk has them
        self._role_codes: list = []     # each chunk's, joined at the end

    def append(self, chunk: SampleIndex, size: int) -> None:
        k = len(chunk)
        self._files = chunk.files
        self._bytes_seen += size
        if self._n + k > len(self._digest):
            self._grow(self._n + k)
        for name, _ in _COLUMNS:
            self._cols[name][self._n:self._n + k] = getattr(chunk, name)
        self._digest[self._n:self._n + k] = chunk.digest
        for row, names in chunk.empty_fields.items():
            self._empty[self._n + row] = names
        self._role_names = chunk.role_names
        for name, dtype in _OPTIONAL_COLUMNS:
            values = getattr(chunk, name)
            if values is not None and name not in self._optional:
                self._optional[name] = np.full(len(self._digest), -1, dtype)
            if name in self._optional:
                self._optional[name][self._n:self._n + k] = -1 if values is None else values
        if chunk.role_codes is not None:
            self._role_codes.append(chunk.role_codes)
        self._n += k

    def _grow(self, need: int) -> None:
        cap = max(need, len(self._digest) * 3 // 2)
        if self._size_hint and not len(self._digest):
            # rows the whole text holds at the first chunk's bytes per row, and a margin
            cap = max(cap, int(need * 1.1 * self._size_hint / max(1, self._bytes_seen)) + 1024)
        for name, dtype in _COLUMNS:
            grown = np.empty(cap, dtype)
            grown[:self._n] = self._cols[name][:self._n]
            self._cols[name] = grown
        grown = np.empty((cap, 32), np.uint8)
        grown[:self._n] = self._digest[:self._n]
        self._digest = grown
        for name, values in self._optional.items():
            grown = np.full(cap, -1, values.dtype)
            grown[:self._n] = values[:self._n]
            self._optional[name] = grown

    def finish(self) -> SampleIndex:
        n = self._n
        cols = {name: _trimmed(self._cols[name], n) for name, _ in _COLUMNS}
        optional = {name: _trimmed(values, n) for name, values in self._optional.items()}
        if "role_count" in optional:
            optional["role_codes"] = np.concatenate(self._role_codes) if self._role_codes else np.zeros(0, np.int16)
        return SampleIndex(**cols, digest=_trimmed(self._digest, n), files=list(self._files),
                           empty_fields=self._empty, role_names=list(self._role_names), **optional)


def _trimmed(arr: np.ndarray, n: int) -> np.ndarray:
    """``arr[:n]`` without keeping the rest: shrunk in place when possible."""
    if len(arr) == n:
        return arr
    try:
        arr.resize((n,) + arr.shape[1:], refcheck=False)
        return arr
    except ValueError:
        return arr[:n].copy()


def _row_problem(row) -> Optional[B.Text]:
    """What is wrong with one parsed row, in both languages; None when nothing is."""
    if not isinstance(row, dict):
        return R.read_text("row_not_object")
    for key in _ROW_INTS:
        value = row.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _INT64_END:
            # the columns are int64: a larger value would be an OverflowError, not a problem
            return R.read_text("row_int", key=key, got=repr(value))
    if not isinstance(row.get("source_file"), str):
        return R.read_text("row_source_file")
    digest = row.get("hash")
    if not isinstance(digest, str) or len(digest) != 64 or not re.fullmatch(r"[0-9a-f]{64}", digest):
        return R.read_text("row_hash", got=repr(digest))
    path = row.get("shard_path")
    m = SHARD_PATH.match(path) if isinstance(path, str) else None
    if m is None:
        return R.read_text("row_shard_path", got=repr(path))
    if int(m.group(2)) >= 1 << 31:
        return R.read_text("row_shard_number", shard_path=path)
    if int(m.group(1)) != row["unit_size"]:
        return R.read_text("row_shard_unit", shard_path=path, unit=row["unit_size"])
    if not isinstance(row.get("empty_fields", []), list):
        return R.read_text("row_empty_fields")
    if ROLES_KEY in row:
        said = row[ROLES_KEY]
        if not isinstance(said, list) or not all(isinstance(r, str) for r in said) or len(said) > MAX_ROLES:
            return R.read_text("row_roles", got=_short(said), most=MAX_ROLES)
    if (PAIR_ID_KEY in row) != (PAIR_ROLE_KEY in row):
        return R.read_text("row_pair_keys", has=PAIR_ID_KEY if PAIR_ID_KEY in row else PAIR_ROLE_KEY,
                           lacks=PAIR_ROLE_KEY if PAIR_ID_KEY in row else PAIR_ID_KEY)
    if PAIR_ID_KEY in row:
        value = row[PAIR_ID_KEY]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _INT64_END:
            return R.read_text("row_int", key=PAIR_ID_KEY, got=repr(value))
        if row[PAIR_ROLE_KEY] not in PAIR_ROLES:
            return R.read_text("row_pair_role", got=repr(row[PAIR_ROLE_KEY]), roles=list(PAIR_ROLES))
    if PROMPT_MESSAGES_KEY in row:
        value = row[PROMPT_MESSAGES_KEY]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ROLES:
            return R.read_text("row_int", key=PROMPT_MESSAGES_KEY, got=repr(value))
    return None


def _short(value) -> str:
    """``repr`` of a value, cut to a readable length for a message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def as_int(value, what: str) -> int:
    """``value`` as an int; TypeError for floats, strings and booleans (numpy ints pass)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}") from None
