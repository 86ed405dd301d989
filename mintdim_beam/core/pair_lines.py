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
from mintdim_beam.core.chat_lines import ChatLineParser, parse_object_lines, text_digest
from mintdim_beam.core.config import FileSpec, Policies
from mintdim_beam.errors import chat_messages as C
from mintdim_beam.format.chat import PAIR_ROLE_KEY, PAIR_ROLES, PROMPT_MESSAGES_KEY, ROLES_KEY, json_type_name
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
        return parse_object_lines(self.spec.path, self.policies, lines, pos, base, file_start, self._render,
                                  per_line=2, chat=self.chat)

    def _render(self, local_line: int, obj: dict):
        """The two samples of a line, ``(values, role codes, empty, extra keys, digest)``
        each, or the line's error."""
        declared = self._declared()
        missing = [k for k in declared if k not in obj]
        if missing:
            return errors.SampleSchemaError(file=self.spec.path, line=local_line, declared=declared,
                                            missing=missing, available=list(obj.keys()))
        found = []
        for role, key in zip(PAIR_ROLES, (self.pairs.chosen, self.pairs.rejected)):
            one = self._render_chat(local_line, obj, key) if self.chat else self._render_text(local_line, obj, key)
            if isinstance(one, errors.MintDimError):
                return one
            vals, sample_codes, empty_names, keys = one
            digest = text_digest(self.spec.path, local_line, vals, None if self.chat else self.inner.digest)
            if isinstance(digest, errors.MintDimError):
                return digest
            found.append((vals, sample_codes, empty_names, dict(keys, **{PAIR_ROLE_KEY: role}), digest))
        return found

    def _declared(self) -> list:
        """The line's fields this source reads: its prompt (when declared) and completions."""
        return [k for k in (self.pairs.prompt, self.pairs.chosen, self.pairs.rejected) if k is not None]

    def _render_text(self, local_line: int, obj: dict, key: str):
        pairs = self.pairs
        names = ([pairs.prompt] if pairs.prompt else []) + [key]
        try:
            vals = tuple(render_value(name, obj[name]) for name in names)
        except FieldTypeError as exc:
            return errors.SampleSchemaError.wrong_type(file=self.spec.path, line=local_line,
                                                       declared=self._declared(), field=exc.field,
                                                       type_name=exc.type_name)
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

