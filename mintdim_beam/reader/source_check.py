"""``verify --tokenizer``: a dataset checked against its sources.

Sample ids are the ordinals of the non-blank lines of the source files, in the order
the manifest lists them (DESIGN.md §4), so a dataset says where each sample comes from
twice: by its id, and by the ``source_file``/``source_line`` of its index rows. One pass
over the sources matches every row to its line *by id* and reports a row whose
location disagrees, or whose id no line has; the sampled rows are then re-rendered
with their file's template and re-tokenized, and compared with their hash, the other
columns the source decides (``token_count``, ``unit_size``, ``empty_fields``) and
their record.
Keying by the row's own location instead would trust the very field being checked: a
row moved to its neighbour's line would be compared with the neighbour, or skipped.

Sources are streamed in chunks; a compressed or remote source goes through the build's
storage layer, imported only then (it imports Beam).
"""

from __future__ import annotations

import hashlib
import json
from typing import NamedTuple

import numpy as np

from mintdim_beam.reader import dataset as rd
from mintdim_beam.errors import bilingual as B
from mintdim_beam.format.chat import ABSENT, PARTS_PER_MESSAGE, parse_role_template, render_messages, segment_name
from mintdim_beam.format.template import parse_template, render_value
from mintdim_beam.reader.verify_report import LISTED_PER_CHECK, Checker
from mintdim_beam.errors import read_errors
from mintdim_beam.format import names
from mintdim_beam.reader import output_files
from mintdim_beam.reader import sample_index
from mintdim_beam.format import inputs
from mintdim_beam.storage.compressed import open_decompressed
from mintdim_beam.storage.line_blocks import MAX_LINE_BYTES
from mintdim_beam.storage import files as storage


def retokenize(chk: Checker, meta: output_files.Metadata, index: sample_index.SampleIndex, tokenizer: str, sample_rows: int) -> None:
    """Re-render and re-tokenize ``sample_rows`` rows from their sources (0 = all).

    Rows are matched to source lines by sample id, never by the ``source_file`` and
    ``source_line`` they claim: ids number the non-blank lines of the manifest's source
    files in order (DESIGN.md §4), so one pass over the sources finds the line behind
    every id. Each row of sample_index.jsonl, overflow_index.jsonl and
    bad_record_index.jsonl is checked against it (a changed location is a problem, and
    so is an id no line has), and the sampled rows' records against the tokenizer's
    encoding of their true line.
    """
    from mintdim_beam.tokenization.adapters import open_tokenizer
    from mintdim_beam.tokenization.template_tokens import constant_segments

    info = meta.manifest.get("tokenizer") or {}
    path = info.get("path") if tokenizer == "manifest" else tokenizer
    try:
        tok = open_tokenizer(info.get("type"), path, storage.read_bytes, exists=storage.exists)
    except Exception as exc:
        chk.problem(str(path), f"cannot load the tokenizer for re-tokenization: {str(exc).strip()}")
        return
    for key, got in (("vocab_size", tok.vocab_size), ("unk_id", tok.unk_id), ("pad_id", tok.pad_id)):
        if info.get(key) != got:
            chk.problem(str(path), f"tokenizer {key} is {got}, manifest.json says {info.get(key)}")
    source = meta.manifest.get("source") or {}
    files, templates = source.get("files") or [], source.get("templates") or []
    fields = source.get("fields") or []
    chats = source.get("chat")
    pairs = source.get("pairs")
    n = len(index)
    picks = np.arange(n) if sample_rows <= 0 or sample_rows >= n else \
        np.unique(np.linspace(0, n - 1, sample_rows).round().astype(np.int64))
    truncated = set()
    claims = _LocationClaims(index)
    for name in (names.OVERFLOW_INDEX, names.BAD_RECORD_INDEX):
        for line, row in output_files.iter_index(meta.path, name, meta.manifest):
            if isinstance(row, dict) and isinstance(row.get("sample_id"), int):
                claims.add(row["sample_id"], name, line, row.get("source_file"), row.get("source_line"))
                if row.get("action") == "truncate":
                    truncated.add(row["sample_id"])
    built_from = {e.get("path"): e.get("sha256") for e in (meta.manifest.get("fingerprint") or {}).get("inputs") or []
                  if isinstance(e, dict)}
    lines = _lines_by_id(chk, files, claims, {int(index.sample_id[r]) for r in picks.tolist()}, built_from,
                         per_line=2 if isinstance(pairs, list) else 1)
    if not n:
        return
    try:
        reader = rd.OutputReader(meta.path, index=index)
    except read_errors.ReaderError as exc:   # e.g. two rows for one sample id (reported already)
        chk.problem(names.SAMPLE_INDEX, f"cannot re-tokenize: {exc.reason}")
        return
    if isinstance(chats, list):
        parsed = [_parsed_chat(c, tok, fi) for fi, c in enumerate(chats)]
    else:
        parsed = [_parsed(t, tok, fi, constant_segments) for fi, t in enumerate(templates)]
    partner = {}
    if isinstance(pairs, list):
        # A pair line is two samples, chosen then rejected (core.pair_lines): each side
        # renders as a line of the file's template or chat would; its unit is its pair's.
        parsed = [PairRender(pairs[fi], one) if fi < len(pairs) and isinstance(pairs[fi], dict)
                  and not isinstance(one, Exception) else one for fi, one in enumerate(parsed)]
        if index.pair_id is not None:
            order = np.argsort(index.pair_id, kind="stable")
            ids = index.pair_id[order]
            for k in np.flatnonzero((ids[1:] == ids[:-1]) & (ids[1:] >= 0)).tolist():
                partner[int(order[k])], partner[int(order[k + 1])] = int(order[k + 1]), int(order[k])
    records = _unit_records(reader, index, picks)
    for start in range(0, len(picks), RETOKENIZE_ROWS):
        rows = _rendered_rows(chk, index, picks[start:start + RETOKENIZE_ROWS], lines, files, parsed)
        encoded = _encode_all(tok, rows, parsed)
        for (r, sid, fi, where, texts, obj), expected in zip(rows, encoded):
            pair = parsed[fi] if isinstance(parsed[fi], PairRender) else None
            if pair is not None:
                obj = pair.check_row(chk, index, r, where, obj)
            if isinstance(obj, ChatRendered):
                empty = obj.empty
                if index.roles(r) != obj.roles:
                    chk.problem(names.SAMPLE_INDEX, f"{where}: roles is {list(index.roles(r) or [])}, the source's "
                                                 f"messages have roles {list(obj.roles)}", line=int(index.row_line[r]))
            elif pair is not None:
                empty = pair.empty_fields(obj, sid)
            else:
                empty = _empty_fields(fields[fi] if fi < len(fields) else None, obj)
            partner_tokens = int(index.token_count[partner[r]]) if r in partner else None
            written = _check_columns(chk, meta, index, r, where, expected, sid in truncated, empty, partner_tokens)
            if sid in truncated:
                expected = _truncate(expected, written)
            if _check_record(chk, meta, index, reader, r, where, expected, records.get(r)):
                chk.report.retokenized += 1


#: Sampled rows rendered and re-tokenized at a time: their segments go to the tokenizer
#: in one call (one call per segment cost 40 times the build's encoding: 84 s against
#: 3 s on 24k samples), their texts and ids held for that many rows only.
RETOKENIZE_ROWS = 4096


def _parsed(template, tok, fi: int, constant_segments):
    """A template's ``(segments, constants)`` (its literal and ``{@NAME}`` segments'
    text and ids, ``template_tokens``), or the error that parsing it raised (said for
    each of its rows, as a line that no longer renders)."""
    try:
        segments = parse_template(template)
        return segments, constant_segments(segments, tok, fi, template)
    except Exception as exc:   # a manifest edited since the build; a {@NAME} this tokenizer lacks
        return exc


def _rendered_rows(chk: Checker, index: sample_index.SampleIndex, picks: np.ndarray, lines: dict, files: list,
                   parsed: list) -> list:
    """``(row, sample id, file index, where, segment texts, parsed line)`` of the picked
    rows whose source line is known and still renders, each hash checked; a line that
    no longer renders is a problem."""
    out = []
    for r in picks.tolist():
        sid = int(index.sample_id[r])
        if sid not in lines:
            continue   # no line has this id (reported), or a source could not be read
        fi, line_no, text = lines[sid]
        where = f"{files[fi]}:{line_no} (sample {sid})"
        try:
            obj = json.loads(text)
            if isinstance(parsed[fi], Exception):
                raise parsed[fi]
            how = parsed[fi]
            if isinstance(how, PairRender):
                obj, how = how.side(obj, sid), how.inner
            if isinstance(how, ChatRender):
                texts, obj = how.render(obj)
            else:
                segments, fixed = how
                texts = [render_value(s.text, obj[s.text]) if s.is_field else fixed[j].text
                         for j, s in enumerate(segments)]
        except Exception as exc:  # a source changed since the build
            chk.problem(names.SAMPLE_INDEX, f"{where}: source line no longer renders ({type(exc).__name__})",
                        line=int(index.row_line[r]))
            continue
        digest = hashlib.sha256("".join(texts).encode("utf-8")).hexdigest()
        if digest != index.hash(r):
            chk.problem(names.SAMPLE_INDEX, f"{where}: hash of the re-rendered text is {digest}, row says "
                                         f"{index.hash(r)}", line=int(index.row_line[r]))
        out.append((r, sid, fi, where, texts, obj))
    return out


def _encode_all(tok, rows: list, parsed: list) -> list:
    """Each row's segments as the build writes them (DESIGN.md §4): every field segment
    encoded on its own, from one ``encode_batch`` call over the rows' distinct field
    texts (empty fields repeat in every row); literal and ``{@NAME}`` segments are the
    template's constants."""
    distinct: dict = {}
    keys = []
    for _, _, fi, _, texts, obj in rows:
        how = parsed[fi].inner if isinstance(parsed[fi], PairRender) else parsed[fi]
        if isinstance(obj, ChatRendered):
            keys.append(how.keys(texts, obj.codes, distinct))
            continue
        segments, fixed = how
        keys.append([distinct.setdefault(t, len(distinct)) if s.is_field else np.asarray(fixed[j].ids, np.int64)
                     for j, (s, t) in enumerate(zip(segments, texts))])
    flat, lengths = tok.encode_batch(list(distinct)) if distinct else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    flat = np.asarray(flat, np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return [[flat[starts[k]:ends[k]] if isinstance(k, int) else k for k in row] for row in keys]


class ChatRendered(NamedTuple):
    """What a chat line renders to besides its slot texts: the slots' role codes (the
    file's), the roles of its messages and its empty contents (``empty_fields``)."""

    codes: tuple
    roles: tuple
    empty: tuple


class ChatRender:
    """A chat file's settings (the manifest's ``source.chat`` entry) against the
    tokenizer: renders a line exactly as the build does (``format.chat.render_messages``,
    each role's prefix and suffix from ``template_tokens.role_tokens``)."""

    def __init__(self, settings: dict, tok, fi: int):
        from mintdim_beam.tokenization.template_tokens import role_tokens

        self.field, self.role_key = settings["field"], settings["role_key"]
        self.content_key, self.max_messages = settings["content_key"], settings["max_messages"]
        roles = [role_tokens(parse_role_template(role, t), tok, fi) for role, t in settings["templates"].items()]
        if not roles:
            raise ValueError("no role templates")
        self.names = tuple(r.role for r in roles)
        self.code = {name: k for k, name in enumerate(self.names)}
        self.prefix = [r.prefix.text for r in roles]
        self.suffix = [r.suffix.text for r in roles]
        self.ids = ([np.asarray(r.prefix.ids, np.int64) for r in roles],
                    [np.asarray(r.suffix.ids, np.int64) for r in roles])

    def render(self, obj: dict) -> tuple:
        """``(slot texts, ChatRendered)`` of a parsed line; ValueError when it no longer renders."""
        rendered = render_messages(obj[self.field], self.role_key, self.content_key, self.code, self.prefix,
                                   self.suffix, self.max_messages, self.field)
        if isinstance(rendered, B.Text):
            raise ValueError(rendered.en)
        texts, codes, empty = rendered
        roles = tuple(self.names[c] for c in codes if c != ABSENT)
        return texts, ChatRendered(codes, roles, tuple(segment_name(i, "content") for i in empty))

    def keys(self, texts: tuple, codes: tuple, distinct: dict) -> list:
        """The slots' segments for :func:`_encode_all`: contents by their distinct text,
        prefixes and suffixes as their role's ids."""
        empty = np.zeros(0, np.int64)
        out = []
        for j, text in enumerate(texts):
            slot, part = divmod(j, PARTS_PER_MESSAGE)
            code = codes[slot]
            if part == 1:
                out.append(distinct.setdefault(text, len(distinct)) if code != ABSENT else empty)
            else:
                out.append(empty if code == ABSENT else self.ids[part // 2][code])
        return out


class PairRender:
    """A pair file's settings (the manifest's ``source.pairs`` entry) around its template
    or chat rendering: sample ``2k`` of the pair lines is line ``k``'s chosen side,
    ``2k + 1`` its rejected side, each rendered as the build does (``core.pair_lines``)."""

    def __init__(self, settings: dict, inner):
        self.prompt, self.completions = settings.get("prompt"), (settings["chosen"], settings["rejected"])
        self.inner = inner
        self.prompt_counts: dict = {}     # sample id -> its prompt's messages (conversations)

    def side(self, obj: dict, sid: int) -> dict:
        """The line a side renders as: its prompt and completion under the template's
        names, or its prompt's and completion's messages under the chat's field."""
        key = self.completions[sid % 2]
        if isinstance(self.inner, ChatRender):
            messages = []
            for name in ([self.prompt] if self.prompt else []) + [key]:
                value = obj[name]
                messages.append([value] if isinstance(value, dict) else value)
            if not all(isinstance(m, list) for m in messages):
                raise ValueError("a pair's messages are not lists")
            self.prompt_counts[sid] = len(messages[0]) if self.prompt else 0
            return {self.inner.field: [m for part in messages for m in part]}
        found = {"completion": obj[key]}
        if self.prompt:
            found["prompt"] = obj[self.prompt]
        return found

    def empty_fields(self, obj: dict, sid: int) -> tuple:
        """The source keys whose value renders empty, as the build lists them."""
        names = ([("prompt", self.prompt)] if self.prompt else []) + [("completion", self.completions[sid % 2])]
        return tuple(real for name, real in names if render_value(name, obj[name]) == "")

    def check_row(self, chk: Checker, index: sample_index.SampleIndex, r: int, where: str, obj):
        """A conversation pair's ``prompt_messages`` against its source; ``obj`` as it was."""
        if isinstance(obj, ChatRendered) and index.prompt_messages is not None:
            got, want = int(index.prompt_messages[r]), self.prompt_counts.pop(int(index.sample_id[r]), None)
            if want is not None and got != want:
                chk.problem(names.SAMPLE_INDEX, f"{where}: prompt_messages is {got}, the source's prompt has "
                                             f"{want} messages", line=int(index.row_line[r]))
        return obj


def _parsed_chat(settings, tok, fi: int):
    """A :class:`ChatRender` of a chat file's settings, or the error that reading them
    raised (said for each of its rows, as a line that no longer renders)."""
    try:
        return ChatRender(settings, tok, fi)
    except Exception as exc:   # a manifest edited since the build; a {@NAME} this tokenizer lacks
        return exc


def _unit_records(reader, index: sample_index.SampleIndex, picks: np.ndarray) -> dict:
    """``{row: record}`` for the picked rows of each unit that is mostly picked, in a
    local dataset (memory-mapped: nothing is copied): read a shard batch at a time with
    the reader's checks (``OutputReader.batches``), instead of a row at a time. A unit
    that fails them is left out, so its rows go through ``record_at_row``, which skips
    exactly the records that fail."""
    if not storage.is_local(reader.path):
        return {}
    found: dict = {}
    units = index.unit[picks]
    for unit in np.unique(units).tolist():
        rows = reader.unit_rows(unit)
        if 4 * int(np.count_nonzero(units == unit)) < len(rows):
            continue
        mine, done = {}, 0
        try:
            for batch in reader.batches(unit):
                mine.update(zip(rows[done:done + len(batch.sample_ids)].tolist(), batch.records))
                done += len(batch.sample_ids)
        except read_errors.ReaderError:
            continue
        found.update(mine)
    return found


def _check_record(chk: Checker, meta: output_files.Metadata, index: sample_index.SampleIndex, reader, r: int,
                  where: str, expected: list, rec=None) -> bool:
    """Whether the row's record could be read (``rec``: read and checked already); a
    problem unless it holds ``expected``: each segment's length in the header, their
    tokens in the payload."""
    try:
        rec = reader.record_at_row(r) if rec is None else rec
    except read_errors.ReaderError:
        return False  # already reported by the shard and index checks
    n = meta.n_segments
    want = np.fromiter(map(len, expected), np.int64, len(expected))
    got = rec[1:1 + n].astype(np.int64)
    total = int(want.sum())
    if np.array_equal(want, got) and np.array_equal(rec[1 + n:1 + n + total], np.concatenate(expected)):
        return True
    starts = np.concatenate([[0], np.cumsum(got)])
    for j, e in enumerate(expected):
        g = rec[1 + n + starts[j]:1 + n + starts[j + 1]]
        if len(e) != len(g) or not np.array_equal(e, g):
            unit, shard = int(index.unit[r]), int(index.shard[r])
            chk.problem(meta.shard_path(unit, shard), f"{where}: segment {j} ({meta.sequence_template[j]}) holds "
                                                      f"{len(g)} tokens that differ from the {len(e)} the tokenizer "
                                                      f"gives for the source", record=int(index.record[r]))
            break
    return True


def _empty_fields(names, obj: dict):
    """The declared fields whose value renders empty, in declared order, as the build
    lists them in ``empty_fields``; None when the manifest does not name the fields."""
    if not isinstance(names, list):
        return None
    return tuple(name for name in names if render_value(name, obj[name]) == "")


def _check_columns(chk: Checker, meta: output_files.Metadata, index: sample_index.SampleIndex, r: int, where: str,
                   expected: list, truncated: bool, empty, partner_tokens=None) -> int:
    """The row's columns that its source line decides, against what it says:
    ``token_count`` (the tokens written: all of them, or the largest unit's worth when
    the overflow policy truncated the sample), ``unit_size`` (the smallest unit that
    holds them, DESIGN.md §4; units added by ``extend`` included; a pair's record: the
    one that holds the longer of the pair, ``partner_tokens`` being the other's written
    tokens) and ``empty_fields``. Returns the token count the source gives."""
    total = sum(len(e) for e in expected)
    sizes = list(meta.unit_sizes)
    if truncated:       # a pair's shorter record may have been cut to nothing: its pair overflowed
        written, unit = min(total, max(sizes)), max(sizes)
    else:
        written = total
        need = total if partner_tokens is None else max(total, partner_tokens)
        unit = next((u for u in sizes if u >= need), None)
    line = int(index.row_line[r])
    got = int(index.token_count[r])
    if got != written:
        chk.problem(names.SAMPLE_INDEX, f"{where}: token_count is {got}, the source gives {written} tokens"
                                     + (" (truncated)" if truncated else ""), line=line)
    got = int(index.unit[r])
    if unit is None:
        chk.problem(names.SAMPLE_INDEX, f"{where}: its {total} tokens fit no unit of {sizes}, yet it has a row",
                    line=line)
    elif got != unit:
        chk.problem(names.SAMPLE_INDEX, f"{where}: unit_size is {got}, the source's {written} tokens go to unit {unit}",
                    line=line)
    listed = tuple(index.empty_fields.get(r, ()))
    if empty is not None and listed != empty:
        chk.problem(names.SAMPLE_INDEX, f"{where}: empty_fields is {list(listed)}, the source's empty fields are "
                                     f"{list(empty)}", line=line)
    return written


class _LocationClaims:
    """Where each index row says its sample comes from, walked in ascending sample id
    alongside the sources (sample_index.jsonl from its columns, the two small indexes
    from their rows)."""

    def __init__(self, index: sample_index.SampleIndex):
        self.index = index
        self.order = np.argsort(index.sample_id, kind="stable")
        self.pos = 0
        self.side: dict = {}       # sample id -> [(index file, line, source_file, source_line)]
        #: The largest sample id any index names (every id the build gave has a row).
        self.last_id = int(index.sample_id.max()) if len(index.sample_id) else None

    def add(self, sid: int, name: str, line: int, file, source_line) -> None:
        self.side.setdefault(sid, []).append((name, line, file, source_line))
        self.last_id = sid if self.last_id is None else max(self.last_id, sid)

    def at(self, sid: int):
        """Every claim about ``sid`` (ids must be asked in ascending order)."""
        ix = self.index
        while self.pos < len(self.order) and ix.sample_id[self.order[self.pos]] < sid:
            self.pos += 1          # ids below: asked before, or below every line (never)
        while self.pos < len(self.order) and ix.sample_id[self.order[self.pos]] == sid:
            r = int(self.order[self.pos])
            yield names.SAMPLE_INDEX, int(ix.row_line[r]), ix.files[int(ix.file[r])], int(ix.line[r])
            self.pos += 1
        yield from self.side.pop(sid, ())

    def left(self):
        """Claims about ids beyond the last one asked for."""
        ix = self.index
        for r in self.order[self.pos:].tolist():
            yield int(ix.sample_id[r]), names.SAMPLE_INDEX, int(ix.row_line[r])
        for sid, claims in sorted(self.side.items()):
            for name, line, _, _ in claims:
                yield sid, name, line


def _lines_by_id(chk: Checker, files: list, claims: _LocationClaims, wanted: set,
                 built_from: dict, per_line: int = 1) -> dict:
    """One pass over the sources: ``{sample id: (file index, line, text)}`` for the
    ``wanted`` ids, and a problem for every claim whose location is not its id's line,
    and for a source whose sha256 is not the one ``built_from`` (the manifest's
    fingerprint: path -> sha256) records."""
    found: dict = {}
    sid = 0
    wrong = 0
    for fi, fname in enumerate(files):
        try:
            sha = hashlib.sha256()
            for line_no, raw in _source_lines(fname, sha):
                text = _line_text(raw, line_no == 1)
                if not text.strip():
                    continue        # a blank line is not a sample
                for _ in range(per_line):   # a pair source's line is two samples
                    for name, at, file, line in claims.at(sid):
                        if (file, line) != (fname, line_no):
                            wrong += 1
                            if wrong <= LISTED_PER_CHECK:
                                chk.problem(name, f"sample {sid} comes from {fname}:{line_no} (sample ids number "
                                                  f"the non-blank lines of the sources), but the row says "
                                                  f"{file}:{line}", line=at)
                    if sid in wanted:
                        found[sid] = (fi, line_no, text if isinstance(text, str) else text.decode("utf-8", "replace"))
                    sid += 1
            want = built_from.get(fname)
            got = sha.hexdigest() if _plain(fname) else _stored_sha256(fname)
            if want is not None and got != want:
                chk.problem(fname, f"sha256 is {got}, the fingerprint in manifest.json records {want}: the source "
                                   f"changed after the build, so rows that disagree with it may be right")
        except OSError as exc:
            chk.problem(fname, f"cannot read the source file for re-tokenization: {exc}")
            return found            # the ids of the lines after it are unknown
    if wrong > LISTED_PER_CHECK:
        chk.problem(names.SAMPLE_INDEX, f"... and {wrong - LISTED_PER_CHECK} more rows name another source line "
                                     f"than their sample id's")
    if claims.last_id is not None and sid > claims.last_id + 1:
        chk.problem(files[-1] if files else names.SAMPLE_INDEX,
                    f"the sources hold {sid} non-blank lines, the dataset's indexes {claims.last_id + 1} sample ids "
                    f"(0..{claims.last_id}): {sid - claims.last_id - 1} source lines were never built (appended "
                    f"after the build read them?)")
    unmatched = list(claims.left())
    for s, name, at in unmatched[:LISTED_PER_CHECK]:
        chk.problem(name, f"sample {s} matches no source line: the sources hold {sid} non-blank lines "
                          f"(sample ids 0..{sid - 1})", line=at)
    if len(unmatched) > LISTED_PER_CHECK:
        chk.problem(names.SAMPLE_INDEX, f"... and {len(unmatched) - LISTED_PER_CHECK} more rows match no source line")
    return found


def _truncate(segments: list, keep: int) -> list:
    """The build's truncation: keep the first ``keep`` payload tokens, last segments shrink."""
    out, left = [], keep
    for s in segments:
        out.append(s[:max(0, left)])
        left -= len(s)
    return out




def _plain(path: str) -> bool:
    return storage.is_local(path) and not inputs.is_compressed(path)


def _stored_sha256(path: str) -> str:
    """The sha256 of a compressed or remote file's stored bytes, as the build's
    fingerprint takes it."""
    return storage.file_digest(path)[1]


def _source_lines(path: str, sha=None):
    """``(line number, bytes)`` of every line of a source file, as the build numbers them
    (split on ``\n``; a last line without one counts), read in chunks; a plain local
    file's bytes also go to ``sha``. A compressed or remote file is read through the
    build's storage layer."""
    if _plain(path):
        f = storage.open_local(path)      # a FIFO or a device named by a manifest is refused
    else:
        f = open_decompressed(path, inputs.compression(path))
    n, pending, held = 0, [], 0
    with f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            if sha is not None and _plain(path):
                sha.update(chunk)
            if b"\n" not in chunk:
                pending.append(chunk)
                held += len(chunk)
                if held > MAX_LINE_BYTES + 1:   # as the build: a line is never held past the limit
                    raise OSError(f"line {n + 1} is longer than {MAX_LINE_BYTES} bytes, the longest a build reads")
                continue
            held = len(chunk) - chunk.rfind(b"\n") - 1
            parts = (b"".join(pending) + chunk if pending else chunk).split(b"\n")
            pending = [parts.pop()]
            for raw in parts:
                n += 1
                yield n, raw
    tail = b"".join(pending)
    if tail:
        yield n + 1, tail


def _line_text(raw: bytes, first: bool):
    """A line as the build reads it: ``str`` (BOM and ``\r`` removed), or ``bytes``
    when it is not valid UTF-8 (then ASCII whitespace decides whether it is blank)."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if first and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
