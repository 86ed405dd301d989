"""From preference-pair lines to two rendered samples each (pure; DESIGN.md §9).

A pair source's line holds a prompt (optional) and two completions, ``chosen`` and
``rejected``: strings rendered by the file's template (``{prompt}``, ``{completion}``),
or lists of messages rendered as a conversation (``chat_lines``), the prompt's messages
first. Every line becomes two samples, chosen then rejected, with consecutive sample ids
(a bad line too: two bad records with its error), so a pair's id is its chosen record's
sample id halved, and no slice or block ever splits a pair. The record layout
(``record_layout``) then puts both records in the unit that fits the longer and
truncates them alike.
"""

from __future__ import annotations


from mintdim_beam import errors
from mintdim_beam.core.chat_lines import ChatLineParser, json_type_name
from mintdim_beam.core.config import FileSpec, Policies
from mintdim_beam.core.sample_lines import SLICE_CHARS, SLICE_SAMPLES, slice_status, ParsedSlice, load_object
from mintdim_beam.errors import chat_messages as C
from mintdim_beam.format.chat import PAIR_ROLE_KEY, PAIR_ROLES, PROMPT_MESSAGES_KEY, ROLES_KEY
from mintdim_beam.format.template import FieldTypeError, render_value

_NO_HASH = bytes(32)


class PairLineParser:
    """Parses, checks, renders and hashes pair lines: two samples a line."""

    def __init__(self, spec: FileSpec, policies: Policies, inner):
        """``inner``: the file's ``LineParser`` (string pairs) or ``ChatLineParser``."""
        self.spec = spec
        self.pairs = spec.pairs
        self.policies = policies
        self.inner = inner
        self.chat = isinstance(inner, ChatLineParser)

    def parse_slice(self, lines: list, pos: int, base: int, file_start: bool):
        """``sample_lines.LineParser.parse_slice``'s contract, two samples a line."""
        local_lines: list = []
        values: list = []
        codes: list = []
        good: list = []
        hashes: list = []
        bad: dict = {}
        empty: dict = {}
        extra: dict = {}
        first_error = None
        abort = self.policies.on_bad_record == "abort"
        n, chars = len(lines), 0
        while pos < n and len(local_lines) < SLICE_SAMPLES and chars < SLICE_CHARS:
            local_line, line = pos, lines[pos]
            pos += 1
            chars += len(line)
            loaded = load_object(self.spec.path, local_line, line, file_start and local_line == 0)
            if loaded is None:
                continue
            i = len(local_lines)
            local_lines += [local_line, local_line]
            rendered = loaded.error if loaded.error is not None else self._render(local_line, loaded.values)
            if isinstance(rendered, errors.MintDimError):
                hashes += [_NO_HASH, _NO_HASH]
                for k in (0, 1):
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
                           codes=codes if self.chat else None, extra=extra), pos

    def _render(self, local_line: int, obj: dict):
        """The two samples of a line, ``(values, role codes, empty, extra keys, digest)``
        each, or the line's error."""
        pairs = self.pairs
        declared = [k for k in (pairs.prompt, pairs.chosen, pairs.rejected) if k is not None]
        missing = [k for k in declared if k not in obj]
        if missing:
            return errors.SampleSchemaError(file=self.spec.path, line=local_line, declared=declared,
                                            missing=missing, available=list(obj.keys()))
        found = []
        for role, key in zip(PAIR_ROLES, (pairs.chosen, pairs.rejected)):
            one = self._render_chat(local_line, obj, key) if self.chat else self._render_text(local_line, obj, key)
            if isinstance(one, errors.MintDimError):
                return one
            vals, sample_codes, empty_names, keys = one
            try:
                digest = (self.inner.digest(vals) if not self.chat else
                          _sha256("".join(vals)))
            except UnicodeEncodeError:  # a lone surrogate from a JSON \u escape
                return errors.SourceParseError(file=self.spec.path, line=local_line, reason="invalid UTF-8")
            found.append((vals, sample_codes, empty_names, dict(keys, **{PAIR_ROLE_KEY: role}), digest))
        return found

    def _render_text(self, local_line: int, obj: dict, key: str):
        pairs = self.pairs
        try:
            vals = tuple(render_value(name, obj[name]) for name in ([pairs.prompt] if pairs.prompt else []) + [key])
        except FieldTypeError as exc:
            return errors.SampleSchemaError.wrong_type(file=self.spec.path, line=local_line,
                                                       declared=[pairs.prompt, pairs.chosen, pairs.rejected],
                                                       field=exc.field, type_name=exc.type_name)
        names = ([pairs.prompt] if pairs.prompt else []) + [key]
        return vals, (), [name for name, v in zip(names, vals) if v == ""], {}

    def _render_chat(self, local_line: int, obj: dict, key: str):
        pairs = self.pairs
        messages = []
        for name in ([pairs.prompt] if pairs.prompt else []) + [key]:
            value = obj[name]
            if isinstance(value, dict):
                value = [value]     # one message
            if not isinstance(value, list):
                return self.inner.problem(local_line, name, C.PAIR_NOT_MESSAGES.format(
                    field=name, type_name=json_type_name(value)))
            messages.append(value)
        prompt = messages[0] if pairs.prompt else []
        rendered = self.inner.render_messages(local_line, prompt + messages[-1], key)
        if isinstance(rendered, errors.MintDimError):
            return rendered
        vals, sample_codes, empty_names = rendered
        roles = [self.inner.role_names[c] for c in sample_codes if c >= 0]
        return vals, sample_codes, empty_names, {ROLES_KEY: roles, PROMPT_MESSAGES_KEY: len(prompt)}


def _sha256(text: str) -> bytes:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).digest()
