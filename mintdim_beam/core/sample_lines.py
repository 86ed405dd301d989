"""From JSONL lines to rendered samples: parse, check, render and hash (pure).

The first half of encoding a block, split from the tokenizer side (``records``) because
it is where every user mistake in a line is found and named: invalid UTF-8, JSON that is
not one object, a missing field, a field of the wrong type. Each becomes the spec's
error for that line; the rest become a sample's field values and the sha256 digest of
its rendered text (for the duplicate index and the encoder's repeat cache).

Lines come in slices (:data:`SLICE_SAMPLES`, :data:`SLICE_CHARS`). Most slices are all
clean lines and take a C-level fast path (:meth:`LineParser._clean_chunk`); a slice with
anything unusual goes line by line, where every problem gets its exact error.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, starmap
from typing import Optional

import msgspec
import numpy as np
import orjson

from mintdim_beam import errors
from mintdim_beam.core.block_result import BAD
from mintdim_beam.core.config import FileSpec, Policies
from mintdim_beam.format.template import FieldTypeError, render_value

_BOM = "\ufeff"
_BOM_STARTS = (b"\xef", _BOM)   # what a line starting with a BOM starts with, as bytes or str
# A slice of a block: the unit of pipelining between parsing and encoding (see
# BlockEncoder.feed). Measured on 2 cores: ~1k samples per slice is the best trade-off
# between overlap (smaller) and per-slice numpy overhead (larger).
SLICE_SAMPLES = 1024
SLICE_CHARS = 1 << 19
_NO_HASH = bytes(32)  # digest slot of a bad record


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


# One decoder for every line: ``json.loads`` with keyword arguments builds a new one per
# call. Its scanner parses one JSON value at an offset, which is the fast path below.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SCAN = _DECODER.scan_once
_JSON_SPACE = " \t\n\r"
# The fast path's parsers (:meth:`LineParser._clean_chunk`): msgspec for lines of only
# the declared fields, orjson for the others. Both read UTF-8 bytes themselves and accept
# a subset of what the standard decoder accepts, with the same values for the strings a
# template renders. Anything they refuse takes the standard decoder.
_LOADS = orjson.loads
_DECODE_ERROR = msgspec.DecodeError     # a ValidationError (a field missing, unknown or not a string) is one
_CONTAINERS = frozenset((dict, list))
#: Characters of field values from which a sample is hashed part by part (_digest).
_HASH_IN_PARTS = 1 << 20
#: The deepest nesting of arrays and objects a line may have (the object of the line is
#: level 1). A deeper line is a bad record (``SourceParseError``, :data:`REASON_TOO_DEEP`),
#: whichever runner, process or path reads it: the standard decoder recurses once per
#: level and so refuses, at the interpreter's recursion limit less the caller's stack
#: (about 980 levels in one process, fewer in a worker with a deeper stack), what another
#: process accepts; orjson stops at 1024. The depth is measured without recursion
#: (:func:`json_depth`) before either decoder sees the line; 512 leaves the standard
#: decoder the rest of Python's default limit of 1000 for the caller's frames.
MAX_JSON_DEPTH = 512
REASON_TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
# Nesting the fast path leaves to the line-by-line path, to keep its check cheap.
FAST_MAX_DEPTH = 128
# JSON strings (valid or not: an unterminated one is left in place), and what is left
# of a line once they are gone that is not a bracket.
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}.__getitem__


@dataclass
class _Parsed:
    """One non-blank line after parsing and rendering (or its error)."""

    values: Optional[tuple] = None  # rendered text per declared field
    empty: tuple = ()
    error: Optional[errors.MintDimError] = None


@dataclass
class ParsedSlice:
    """One slice of a block's lines, parsed: every sample's status and digest, the
    errors of the bad ones, and the field values of the good ones."""

    base: int                 # local sample number of the slice's first sample
    local_lines: list         # local line of each sample
    status: np.ndarray        # OK, or BAD for a bad record
    hashes: list              # sha256 digest of each sample's rendered text (bad: zeros)
    bad: dict                 # sample -> (error class, reason)
    empty: dict               # sample -> [names of its empty fields]
    first_error: Optional[tuple]   # (sample, local line, error) under on_bad_record="abort"
    good: list                # slice positions of the good samples
    values: list              # their field values, a tuple each (declared field order)
    codes: Optional[list] = None   # a chat slice's role codes, a tuple per good sample (-1: no message)
    extra: dict = field(default_factory=dict)   # sample -> extra keys of its sample_index row

    @property
    def size(self) -> int:
        return len(self.local_lines)


class LineParser:
    """Parses, checks, renders and hashes lines with one file's fields and template."""

    def __init__(self, spec: FileSpec, policies: Policies, constants: Optional[dict] = None):
        """``constants``: segment index -> the text a literal or special segment renders
        as (``template_tokens.Constant.text``); a literal's own text when not given, so
        a template with special segments needs them."""
        self.spec = spec
        self.policies = policies
        segments = spec.segments
        texts = [(constants or {}).get(j, s.text) for j, s in enumerate(segments)]
        if any(s.is_special for s in segments) and constants is None:
            raise ValueError("a template with {@NAME} segments renders with the tokenizer's texts")
        self.field_names = list(dict.fromkeys(spec.fields))  # a field declared twice counts once
        position = {name: k for k, name in enumerate(self.field_names)}
        # The rendered sample (what is hashed) in one C call: literals inline, fields by index.
        self._render = "".join(
            "{%d}" % position[s.text] if s.is_field else t.replace("{", "{{").replace("}", "}}")
            for s, t in zip(segments, texts)
        ).format
        # A template of the declared fields in order, each once, one literal between each
        # two ("{text}", "{instruction}\n\n{input}\n\n{output}"): the same text as a
        # join of a sample's values, which needs no format string read per sample (0.4
        # instead of 0.65 us a sample of real text; one field is its value itself).
        self._join = None
        kinds = [s.is_field for s in segments]
        if kinds == [k % 2 == 0 for k in range(len(segments))] and kinds and kinds[-1] and \
                [s.text for s in segments if s.is_field] == self.field_names and \
                len({t for s, t in zip(segments, texts) if not s.is_field}) <= 1:
            self._join = next((t for s, t in zip(segments, texts) if not s.is_field), "").join
        self._get_fields = operator.itemgetter(*self.field_names)
        self._one_field = len(self.field_names) == 1
        # The fast path's first parser: lines that are one object of exactly the declared
        # fields, each a string (msgspec decodes them into a struct, docs/decisions.md,
        # "msgspec for lines of exactly the declared fields"). Off for the rest of the
        # file once a slice it refused was clean: its lines hold other keys as well.
        struct = msgspec.defstruct(
            "Fields", [(f"f{k}", str) for k in range(len(self.field_names))],
            rename={f"f{k}": name for k, name in enumerate(self.field_names)},
            forbid_unknown_fields=True, gc=False)
        self._decode_fields = msgspec.json.Decoder(struct).decode
        self._struct_values = (msgspec.structs.astuple if self._one_field else
                               operator.attrgetter(*struct.__struct_fields__))   # a tuple either way
        self._fields_only = True
        # The same text in parts, for huge samples (_digest): a field's index or a
        # literal's UTF-8 bytes.
        self._parts = [position[s.text] if s.is_field else t.encode("utf-8") for s, t in zip(segments, texts)]

    def digest(self, vals: tuple) -> bytes:
        """sha256 of the sample that ``vals`` (declared field order) render."""
        return self._digest(vals)

    def _digest(self, vals: tuple) -> bytes:
        """sha256 of the rendered sample's UTF-8 bytes (``UnicodeEncodeError`` for a lone
        surrogate). A huge sample is hashed part by part, so that neither its rendered
        text nor all of its bytes are ever made (two and one times its size)."""
        if sum(map(len, vals)) < _HASH_IN_PARTS:
            return hashlib.sha256(self._render(*vals).encode("utf-8")).digest()
        h = hashlib.sha256()
        for part in self._parts:
            h.update(part if type(part) is bytes else vals[part].encode("utf-8"))
        return h.digest()

    def parse_slice(self, lines: list, pos: int, base: int, file_start: bool):
        """Parse, check and hash one slice of ``lines[pos:]``: ``(ParsedSlice, next_pos)``,
        or ``(None, next_pos)`` when only blank lines were left.

        A slice is at most ``SLICE_SAMPLES`` samples and about ``SLICE_CHARS`` characters
        (bytes, for lines not decoded): small enough that parsing the next slice overlaps
        encoding this one, large enough that per-slice numpy work stays small.

        Most slices take the fast path (:meth:`_clean_chunk`); a slice with anything
        unusual (blank lines, whitespace around the value, a BOM, non-string fields,
        errors) goes line by line, each line through :meth:`_parse` unless it is clean.
        """
        limit = SLICE_SAMPLES
        # A file's first line is special only when it starts with a BOM: a corpus of
        # small files would otherwise take the slow path for nearly every line.
        if not (file_start and pos == 0 and pos < len(lines) and lines[pos][:1] in _BOM_STARTS):
            chunk = lines[pos:pos + limit]
            total = list(accumulate(map(len, chunk)))
            if total and total[-1] > SLICE_CHARS:
                chunk = chunk[:max(1, bisect_left(total, SLICE_CHARS))]
            clean = self._clean_chunk(chunk)
            if clean is not None:
                values, hashes, empty = clean
                S = len(chunk)
                empty = {base + i: names for i, names in empty.items()}
                return ParsedSlice(base, list(range(pos, pos + S)), np.zeros(S, np.int8), hashes,
                                   {}, empty, None, list(range(S)), values), pos + S
        scan, get, one, digest_of = _SCAN, self._get_fields, self._one_field, self._digest
        local_lines: list = []
        values: list = []       # values of the good samples
        good: list = []
        hashes: list = []
        bad: dict = {}
        empty: dict = {}
        first_error = None
        abort = self.policies.on_bad_record == "abort"
        n = len(lines)
        chars = 0
        while pos < n and len(local_lines) < limit and chars < SLICE_CHARS:
            local_line = pos
            line = lines[pos]
            pos += 1
            if type(line) is bytes:
                try:
                    line = line.decode("utf-8")
                except UnicodeDecodeError:
                    pass   # _parse names the line
            chars += len(line)
            vals = None
            if (type(line) is str and line[:1] == "{" and not (file_start and local_line == 0)
                    and not _too_deep(line)):
                try:
                    obj, end = scan(line, 0)
                    if end == len(line) or not line[end:].strip(_JSON_SPACE):
                        vals = (get(obj),) if one else get(obj)
                        for v in vals:
                            if type(v) is not str:
                                vals = None
                                break
                except (StopIteration, KeyError, ValueError, TypeError):
                    vals = None
                if vals is not None:
                    empty_names = ()
                    if "" in vals:
                        empty_names = tuple(name for name, v in zip(self.field_names, vals) if v == "")
                    parsed_error = None
            if vals is None:
                parsed = self._parse(local_line, line, file_start and local_line == 0)
                if parsed is None:
                    continue  # a blank line: no sample
                vals, empty_names, parsed_error = parsed.values, parsed.empty, parsed.error
            i = len(local_lines)
            local_lines.append(local_line)
            if parsed_error is None:
                try:
                    digest = digest_of(vals)
                except UnicodeEncodeError:  # a lone surrogate from a JSON \u escape
                    parsed_error = errors.SourceParseError(file=self.spec.path, line=local_line,
                                                           reason="invalid UTF-8")
            if parsed_error is not None:
                hashes.append(_NO_HASH)
                bad[base + i] = (type(parsed_error).__name__, parsed_error.reason)
                if abort:
                    first_error = (base + i, local_line, parsed_error)
                    break
                continue
            hashes.append(digest)
            values.append(vals)
            good.append(i)
            if empty_names:
                empty[base + i] = list(empty_names)
        if not local_lines:
            return None, pos
        status = slice_status(len(local_lines), bad, base)
        return ParsedSlice(base, local_lines, status, hashes, bad, empty, first_error, good, values), pos

    def _clean_chunk(self, chunk: list):
        """``(values, digests, empty)`` for a chunk of lines that are all clean samples, else None.

        A clean line is one JSON object (JSON whitespace around it allowed) with every
        declared field a string: the common case, done with one C-level pass per step
        (parse, pick fields, render, encode, hash) instead of a Python loop over lines.
        Lines are UTF-8 ``bytes`` (or ``str``). Bytes of exactly the declared fields are
        decoded by msgspec (docs/decisions.md, "msgspec for lines of exactly the
        declared fields"); others are parsed by orjson: about 0.25 s instead of 0.45 s
        per 100 MB of real text for the standard decoder and the decode before it
        ("orjson for clean lines"). Any other chunk is redone line by line, where every
        problem gets its exact error.
        """
        raw = type(chunk[0]) is bytes
        values = None
        if raw and self._fields_only:
            # Lines of exactly the declared string fields: no dict, no nesting to look
            # into, every string of the line decoded (so its UTF-8 checked) by msgspec.
            try:
                values = list(map(self._struct_values, map(self._decode_fields, chunk)))
            except _DECODE_ERROR:
                values = None
        try:
            if values is None:
                values = self._loaded_values(chunk, raw)
                if values is None:
                    return None
                if raw:
                    self._fields_only = False    # clean, with other keys: orjson from here on
            columns = [list(map(operator.itemgetter(k), values)) for k in range(len(self.field_names))]
            if len(chunk) == 1:       # maybe a huge line (alone in its chunk): in parts
                hashes = [self._digest(values[0])]
            else:
                sha256 = hashlib.sha256
                rendered = map(self._join, values) if self._join is not None else starmap(self._render, values)
                hashes = [sha256(d).digest() for d in map(str.encode, rendered)]
        except Exception:  # noqa: BLE001 - any failure means: take the line-by-line path
            return None
        # Sample -> its empty fields' names. Samples with the same names share one list,
        # which nothing changes afterwards (a second field makes new lists).
        empty: dict = {}
        for name, column in zip(self.field_names, columns):
            if "" in column:
                at = compress(range(len(column)), map(operator.not_, column))   # the empty ones
                if empty:
                    for i in at:
                        empty[i] = empty[i] + [name] if i in empty else [name]
                else:
                    empty = dict.fromkeys(at, [name])
        return values, hashes, empty

    def _loaded_values(self, chunk: list, raw: bool) -> Optional[list]:
        """Each line's field values (a tuple, declared field order) through orjson, or
        None when a line is not an object of string fields nested at most
        ``FAST_MAX_DEPTH`` deep (``TypeError``/``KeyError``/orjson's error: the same)."""
        # A chunk with one "{" a line and no "[" holds no nested value: each line's
        # object is dropped as soon as its fields are picked (fewer live objects
        # for the garbage collector to walk). Otherwise every object is looked
        # into: dict.values refuses a line that is not an object; a line nesting
        # deeper than FAST_MAX_DEPTH goes line by line, where MAX_JSON_DEPTH is checked.
        joined = (b"" if raw else "").join(chunk)
        if joined.count(b"{" if raw else "{") == len(chunk) and (b"[" if raw else "[") not in joined:
            objs = map(_LOADS, chunk)
        else:
            objs = list(map(_LOADS, chunk))
            if not _CONTAINERS.isdisjoint(map(type, chain.from_iterable(map(dict.values, objs)))):
                if not all(map(_shallow, objs)):
                    return None
        del joined
        if self._one_field:
            singles = list(map(self._get_fields, objs))
            "".join(singles)    # a TypeError (the line-by-line path) unless every value is a str
            return [(v,) for v in singles]
        values = list(map(self._get_fields, objs))
        for k in range(len(self.field_names)):
            "".join(map(operator.itemgetter(k), values))
        return values

    def _parse(self, local_line: int, line, file_start: bool) -> Optional[_Parsed]:
        """The general path: any line, with the spec's error for each way it can be bad."""
        loaded = load_object(self.spec.path, local_line, line, file_start)
        if loaded is None or loaded.error is not None:
            return loaded
        obj = loaded.values
        missing = [f for f in self.field_names if f not in obj]
        if missing:
            err = errors.SampleSchemaError(
                file=self.spec.path, line=local_line, declared=self.field_names,
                missing=missing, available=list(obj.keys()),
            )
            return _Parsed(error=err)
        try:
            values = tuple(render_value(name, obj[name]) for name in self.field_names)
        except FieldTypeError as exc:
            err = errors.SampleSchemaError.wrong_type(
                file=self.spec.path, line=local_line, declared=self.field_names,
                field=exc.field, type_name=exc.type_name,
            )
            return _Parsed(error=err)
        empty = tuple(name for name, v in zip(self.field_names, values) if v == "")
        return _Parsed(values=values, empty=empty)


def slice_status(n: int, bad: dict, base: int) -> np.ndarray:
    """The status column of a slice of ``n`` samples: OK, or BAD at its bad records
    (``bad`` is keyed by local sample number, ``base`` the slice's first)."""
    status = np.zeros(n, np.int8)
    if bad:
        status[np.asarray(list(bad), np.int64) - base] = BAD
    return status


def load_object(path: str, local_line: int, line, file_start: bool) -> Optional[_Parsed]:
    """One line as a JSON object (``_Parsed.values`` holds the dict), the spec's
    ``SourceParseError`` for a line that is not one (``_Parsed.error``), or None for a
    blank line. ``line`` is UTF-8 bytes or str; a BOM is dropped from a file's first line."""
    def error(reason):
        return _Parsed(error=errors.SourceParseError(file=path, line=local_line, reason=reason))

    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            if file_start and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                return None
            return error("invalid UTF-8")
    if file_start and line.startswith(_BOM):
        line = line[1:]
    if not line.strip():
        return None
    if _too_deep(line):
        return error(REASON_TOO_DEEP)
    try:
        obj = _DECODER.decode(line)
    except ValueError:
        return error("invalid JSON syntax")
    if not isinstance(obj, dict):
        return error("JSON value is not an object")
    return _Parsed(values=obj)


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (0 for a scalar), without recursion.

    Brackets inside strings do not count. On text that is not valid JSON the answer is
    still a pure function of the text, so a line is judged alike everywhere.
    """
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    return max(accumulate(map(_STEP, brackets)), default=0)


def _too_deep(line: str) -> bool:
    """Whether ``line`` nests deeper than :data:`MAX_JSON_DEPTH`; the exact depth is only
    measured when the line holds that many opening brackets at all."""
    return line.count("[") + line.count("{") > MAX_JSON_DEPTH and json_depth(line) > MAX_JSON_DEPTH


def _shallow(obj) -> bool:
    """Whether a parsed line nests at most ``FAST_MAX_DEPTH`` containers deep."""
    level, depth = [obj], 1
    while level:
        if depth > FAST_MAX_DEPTH:
            return False
        inner = []
        for c in level:
            inner.extend(v for v in (c.values() if type(c) is dict else c) if type(v) in _CONTAINERS)
        level, depth = inner, depth + 1
    return True
