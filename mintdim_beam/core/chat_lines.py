"""From conversation lines to rendered samples, and their role tokens (pure).

The chat counterpart of ``sample_lines`` (DESIGN.md §9): a line's list field of
messages is checked message by message, each message rendered by its role's template
(``format.chat``: a prefix, the content, a suffix per message slot), and the sample
hashed over the whole rendered conversation. Every problem is the spec's error for the
line (``SampleSchemaError.chat`` naming the message), or a bad record under
``on_bad_record: skip``.

:class:`RoleTable` holds each role's prefix and suffix ids (encoded once per template,
``template_tokens.role_tokens``) and lays them beside the encoded contents, so the
record layout sees one field segment per slot part, as it sees a ``jsonl`` template's
fields.
"""

from __future__ import annotations

import hashlib
from typing import Optional

import numpy as np

from mintdim_beam import errors
from mintdim_beam.core.config import FileSpec, Policies
from mintdim_beam.core.sample_lines import SLICE_CHARS, SLICE_SAMPLES, slice_status, ParsedSlice, load_object
from mintdim_beam.errors import chat_messages as C
from mintdim_beam.errors.bilingual import Text
from mintdim_beam.format.chat import (ABSENT, PARTS_PER_MESSAGE, ROLES_KEY, json_type_name, render_messages,
                                      segment_name)
from mintdim_beam.format.shard_format import ragged_gather_index
from mintdim_beam.tokenization.unk_rows import CharColumn

_NO_HASH = bytes(32)


def text_digest(path: str, local_line: int, texts, digest=None):
    """sha256 of a sample's rendered text (its segment texts joined, or ``digest(texts)``:
    a template's ``LineParser.digest`` of its field values), or the line's
    ``SourceParseError`` for a lone surrogate from a JSON ``\\u`` escape."""
    try:
        return digest(texts) if digest is not None else hashlib.sha256("".join(texts).encode("utf-8")).digest()
    except UnicodeEncodeError:
        return errors.SourceParseError(file=path, line=local_line, reason="invalid UTF-8")


def parse_object_lines(path: str, policies: Policies, lines: list, pos: int, base: int, file_start: bool,
                       render, per_line: int = 1, chat: bool = True) -> tuple:
    """``sample_lines.LineParser.parse_slice``'s contract for lines rendered one object at
    a time: ``render(local_line, obj)`` gives the line's samples, each ``(values, role
    codes, empty names, extra row keys, digest)``, or the line's error, which every
    of the line's ``per_line`` samples takes (a pair line is two). ``chat``: the samples
    have role codes (``ParsedSlice.codes``)."""
    local_lines: list = []
    values: list = []
    codes: list = []
    good: list = []
    hashes: list = []
    bad: dict = {}
    empty: dict = {}
    extra: dict = {}
    first_error = None
    abort = policies.on_bad_record == "abort"
    n, chars = len(lines), 0
    while pos < n and len(local_lines) < SLICE_SAMPLES and chars < SLICE_CHARS:
        local_line, line = pos, lines[pos]
        pos += 1
        chars += len(line)
        loaded = load_object(path, local_line, line, file_start and local_line == 0)
        if loaded is None:
            continue
        i = len(local_lines)
        rendered = loaded.error if loaded.error is not None else render(local_line, loaded.values)
        local_lines += [local_line] * per_line
        if isinstance(rendered, errors.MintDimError):
            hashes += [_NO_HASH] * per_line
            for k in range(per_line):
                bad[base + i + k] = (type(rendered).__name__, rendered.reason)
            if abort:
                first_error = (base + i, local_line, rendered)
                break
            continue
        for k, (vals, sample_codes, empty_names, keys, digest) in enumerate(rendered):
            hashes.append(digest)
            values.append(vals)
            codes.append(sample_codes)
            good.append(i + k)
            extra[base + i + k] = keys
            if empty_names:
                empty[base + i + k] = empty_names
    if not local_lines:
        return None, pos
    status = slice_status(len(local_lines), bad, base)
    return ParsedSlice(base, local_lines, status, hashes, bad, empty, first_error, good, values,
                       codes=codes if chat else None, extra=extra), pos


class ChatLineParser:
    """Parses, checks, renders and hashes conversation lines with one file's chat settings."""

    def __init__(self, spec: FileSpec, policies: Policies, roles: list):
        """``roles``: the file's ``template_tokens.RoleTokens``, in its declared role order."""
        self.spec = spec
        self.chat = spec.chat
        self.policies = policies
        self.code = {r.role: k for k, r in enumerate(roles)}
        self.prefix = [r.prefix.text for r in roles]
        self.suffix = [r.suffix.text for r in roles]
        self.role_names = [r.role for r in roles]
        self.content_names = [segment_name(i, "content") for i in range(self.chat.max_messages)]

    def parse_slice(self, lines: list, pos: int, base: int, file_start: bool):
        """``(ParsedSlice, next_pos)`` of the next slice of ``lines[pos:]``, or ``(None,
        next_pos)`` when only blank lines were left; ``sample_lines.LineParser``'s contract."""
        return parse_object_lines(self.spec.path, self.policies, lines, pos, base, file_start, self.render_line)

    def render_line(self, local_line: int, obj: dict):
        """``[(slot texts, role codes, empty names, extra row keys, digest)]`` of one
        conversation line, or its error."""
        rendered = self._render(local_line, obj)
        if isinstance(rendered, errors.MintDimError):
            return rendered
        vals, codes, empty_names = rendered
        digest = text_digest(self.spec.path, local_line, vals)
        if isinstance(digest, errors.MintDimError):
            return digest
        return [(vals, codes, empty_names, {ROLES_KEY: [self.role_names[c] for c in codes if c != ABSENT]}, digest)]

    def _render(self, local_line: int, obj: dict):
        """``(slot texts, role codes, empty content names)`` of one conversation, or its error."""
        field = self.chat.field
        if field not in obj:
            return errors.SampleSchemaError(file=self.spec.path, line=local_line, declared=[field],
                                            missing=[field], available=list(obj.keys()))
        messages = obj[field]
        if not isinstance(messages, list):
            return self.problem(local_line, field,
                                C.CHAT_NOT_LIST.format(field=field, type_name=json_type_name(messages)))
        return self.render_messages(local_line, messages, field)

    def problem(self, local_line: int, field: str, text) -> errors.SampleSchemaError:
        return errors.SampleSchemaError.chat(self.spec.path, local_line, field, text)

    def render_messages(self, local_line: int, messages: list, field: str):
        """:meth:`_render` of a list of messages (``field`` names where they come from),
        by ``format.chat.render_messages``, which ``verify --tokenizer`` renders with too."""
        chat = self.chat
        rendered = render_messages(messages, chat.role_key, chat.content_key, self.code, self.prefix,
                                   self.suffix, chat.max_messages, field)
        if isinstance(rendered, Text):
            return self.problem(local_line, field, rendered)
        vals, codes, empty = rendered
        return vals, codes, [self.content_names[i] for i in empty]


class RoleTable:
    """Each role's prefix and suffix ids, laid beside a slice's encoded contents."""

    def __init__(self, roles: list, unk_id: Optional[int], max_messages: int):
        self.max_messages = max_messages
        self.unk_id = unk_id
        # Per part (prefix, suffix): every role's ids one after another, then where each
        # role's start and how many; the last entry is the absent slot (no ids).
        self._ids, self._start, self._len, self._unk = [], [], [], []
        for part in ("prefix", "suffix"):
            constants = [getattr(r, part) for r in roles]
            lens = np.asarray([len(c.ids) for c in constants] + [0], np.int64)
            self._ids.append(np.asarray([i for c in constants for i in c.ids], np.int64))
            self._len.append(lens)
            self._start.append(np.cumsum(lens) - lens)
            self._unk.append([getattr(r, part + "_unk") for r in roles] + [()])

    def lay_out(self, codes: np.ndarray, contents: tuple) -> tuple:
        """``(flat, lengths, unk_owner, unk_local, unk_chars)`` of every slot part of a
        slice, part-slot major as ``records.BlockEncoder`` encodes a template's fields:
        ``contents`` is the encoding of the content texts (content-slot major), ``codes``
        the ``(G, max_messages)`` role codes (``ABSENT`` past a conversation's end)."""
        flat_c, lens_c, owner_c, local_c, chars_c = contents
        G, M = codes.shape
        codes = np.where(codes == ABSENT, len(self._len[0]) - 1, codes)
        starts_c = np.cumsum(lens_c) - lens_c
        flats, lengths = [], []
        unk_owner, unk_local, unk_chars = [], [], []
        for m in range(M):
            for part in range(PARTS_PER_MESSAGE):
                k = PARTS_PER_MESSAGE * m + part
                if part == 1:
                    lens = lens_c[m * G:(m + 1) * G]
                    flats.append(flat_c[ragged_gather_index(starts_c[m * G:(m + 1) * G], lens)])
                    if len(owner_c):
                        mine = (owner_c >= m * G) & (owner_c < (m + 1) * G)
                        if mine.any():
                            unk_owner.append(owner_c[mine] - m * G + k * G)
                            unk_local.append(local_c[mine])
                            unk_chars.append(chars_c.take(np.flatnonzero(mine)))
                else:
                    t = 0 if part == 0 else 1
                    c = codes[:, m]
                    lens = self._len[t][c]
                    flats.append(self._ids[t][ragged_gather_index(self._start[t][c], lens)])
                    if self.unk_id is not None:
                        self._constant_unk(t, c, k, G, unk_owner, unk_local, unk_chars)
                lengths.append(lens)
        flat = np.concatenate(flats) if flats else np.zeros(0, np.int64)
        lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        if not unk_owner:
            empty = np.zeros(0, np.int64)
            return flat, lengths, empty, empty, CharColumn()
        owner, local = np.concatenate(unk_owner), np.concatenate(unk_local)
        order = np.lexsort((local, owner))     # token order: by text, then within it
        return flat, lengths, owner[order], local[order], CharColumn.concat(unk_chars).take(order)

    def _constant_unk(self, t: int, codes: np.ndarray, k: int, G: int, owners, locals_, chars) -> None:
        """The UNK tokens of the prefixes (``t`` 0) or suffixes (1) of slot part ``k``."""
        for role, found in enumerate(self._unk[t]):
            if not found:
                continue
            ids = self._ids[t][self._start[t][role]:self._start[t][role] + self._len[t][role]]
            at = np.flatnonzero(ids == self.unk_id)
            rows = np.flatnonzero(codes == role)
            if not len(rows) or not len(at):
                continue
            owners.append(np.repeat(rows + k * G, len(at)))
            locals_.append(np.tile(at, len(rows)))
            chars.append(CharColumn.of(list(found) * len(rows)))
