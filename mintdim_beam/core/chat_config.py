"""Chat sources in a job: the ``chat`` declaration resolved per input file (pure).

A chat source (DESIGN.md §9) declares a list field of messages and one template per
role instead of ``fields`` and ``templates``; every key takes one value for all files
or a list of one per file, as the ``jsonl`` settings do. What the templates mean for a
record is ``format.chat``'s; how a line becomes a sample, ``core.chat_lines``'.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Optional

from mintdim_beam import errors
from mintdim_beam.errors import chat_messages as J
from mintdim_beam.errors.bilingual import Text
from mintdim_beam.format.chat import RoleTemplateError, parse_role_template


@dataclass(frozen=True)
class ChatSpec:
    """A chat source's settings for one file (DESIGN.md §9, ``format.chat``)."""

    field: str
    role_key: str
    content_key: str
    roles: tuple          # of format.chat.RoleTemplate, in declared order
    max_messages: int

    def role_names(self) -> tuple:
        return tuple(r.role for r in self.roles)

    def describe(self) -> dict:
        """The ``chat`` entry of ``manifest.json``'s source for this file."""
        return {"field": self.field, "role_key": self.role_key, "content_key": self.content_key,
                "templates": {r.role: r.template for r in self.roles}, "max_messages": self.max_messages}



def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _did_you_mean(name) -> Text:
    close = difflib.get_close_matches(str(name), list(CHAT_KEYS), n=1, cutoff=0.6)
    return J.CHAT_DID_YOU_MEAN.format(close=close[0]) if close else Text("", "")


#: The keys of a ``chat`` declaration, and the defaults of the optional ones.
CHAT_KEYS = ("field", "role_key", "content_key", "templates", "max_messages")
CHAT_DEFAULTS = {"role_key": "role", "content_key": "content"}
#: The most message slots a chat output may have (three segment lengths each).
MAX_MESSAGES = 4096


def _chat_error(problem: Text, rule: Text = J.CHAT_RULE):
    return errors.PipelineValidationError.invalid(
        problem=problem.en, rules=[rule.en], problem_vi=problem.vi, rules_vi=[rule.vi])


def describe_chat_templates(chat: ChatSpec) -> str:
    """A chat file's role templates as one text, for the messages that name a template."""
    return json.dumps({r.role: r.template for r in chat.roles}, ensure_ascii=False)


def chat_specs(job, n: int) -> list:
    """One :class:`ChatSpec` per input file from ``job.chat`` (a ``config.JobSpec``): each key one
    value for every file or a list of one per file (``templates``: a mapping of role to
    template, or a list of them; ``max_messages``: an int, or a list)."""
    chat = job.chat
    if job.fields is not None or job.templates is not None:
        raise _chat_error(J.CHAT_AND_FIELDS)
    if not isinstance(chat, dict):
        raise _chat_error(J.CHAT_NOT_MAPPING.format(type_name=type(chat).__name__))
    unknown = [k for k in chat if k not in CHAT_KEYS]
    if unknown:
        raise _chat_error(J.CHAT_UNKNOWN_KEY.format(key=unknown[0], hint=_did_you_mean(unknown[0])))
    # A pair's conversations are its fields' (source.pairs): no field of its own.
    needed = ("templates", "max_messages") if job.pairs is not None else ("field", "templates", "max_messages")
    missing = [f"source.chat.{k}" for k in needed if chat.get(k) is None]
    if missing:
        raise errors.PipelineValidationError(missing=missing)
    per_file = {}
    defaults = dict(CHAT_DEFAULTS, field="(pairs)") if job.pairs is not None else CHAT_DEFAULTS
    for key in CHAT_KEYS:
        value = chat.get(key, defaults.get(key))
        one = dict if key == "templates" else (int if key == "max_messages" else str)
        values = [value] if isinstance(value, one) and not isinstance(value, bool) else value
        if not isinstance(values, (list, tuple)) or not values:
            raise _chat_error(J.CHAT_VALUE.format(key=key, value=value))
        if len(values) not in (1, n):
            raise _chat_error(J.CHAT_ARITY.format(key=key, got=len(values), files=n))
        per_file[key] = list(values) * n if len(values) == 1 else list(values)
    specs = []
    for i, path in enumerate(job.files):
        for key in ("field", "role_key", "content_key"):
            if not isinstance(per_file[key][i], str) or not per_file[key][i]:
                raise _chat_error(J.CHAT_VALUE.format(key=key, value=per_file[key][i]))
        if per_file["role_key"][i] == per_file["content_key"][i]:
            raise _chat_error(J.CHAT_SAME_KEYS.format(key=per_file["role_key"][i]))
        most = per_file["max_messages"][i]
        if not _is_int(most) or not 1 <= most <= MAX_MESSAGES:
            raise _chat_error(J.CHAT_MAX_MESSAGES.format(value=most, maximum=MAX_MESSAGES))
        templates = per_file["templates"][i]
        if not isinstance(templates, dict) or not templates:
            raise _chat_error(J.CHAT_VALUE.format(key="templates", value=templates))
        roles = []
        for role, template in templates.items():
            if not isinstance(role, str) or not role or not isinstance(template, str):
                raise _chat_error(J.CHAT_TEMPLATE_TYPE.format(role=role, file=path))
            try:
                roles.append(parse_role_template(role, template))
            except RoleTemplateError as exc:
                raise _chat_error(J.CHAT_TEMPLATE_BAD.format(role=role, file=path, template=template,
                                                             problem=str(exc))) from None
        specs.append(ChatSpec(per_file["field"][i], per_file["role_key"][i], per_file["content_key"][i],
                              tuple(roles), most))
    return specs


# --------------------------------------------------------------------------- preference pairs

#: The keys of a ``pairs`` declaration: the fields holding the shared prompt (optional)
#: and the two completions.
PAIR_KEYS = ("prompt", "chosen", "rejected")
#: The placeholders of a string pair's template: the prompt (when declared) and the
#: completion, chosen in one record and rejected in the other.
PAIR_PROMPT, PAIR_COMPLETION = "prompt", "completion"


@dataclass(frozen=True)
class PairSpec:
    """A preference-pair source's fields for one file (DESIGN.md §9)."""

    prompt: Optional[str]
    chosen: str
    rejected: str

    def describe(self) -> dict:
        return {"prompt": self.prompt, "chosen": self.chosen, "rejected": self.rejected}

    def template_fields(self) -> tuple:
        """The placeholders a string pair's template holds, in the order they are checked."""
        return (PAIR_PROMPT, PAIR_COMPLETION) if self.prompt is not None else (PAIR_COMPLETION,)


def pair_specs(job, n: int, on_overflow: str) -> list:
    """One :class:`PairSpec` per input file from ``job.pairs``: each key one field name for
    every file, or a list of one per file."""
    pairs = job.pairs
    if not isinstance(pairs, dict):
        raise _chat_error(J.PAIRS_NOT_MAPPING.format(type_name=type(pairs).__name__), J.PAIRS_RULE)
    unknown = [k for k in pairs if k not in PAIR_KEYS]
    if unknown:
        raise _chat_error(J.PAIRS_UNKNOWN_KEY.format(key=unknown[0]), J.PAIRS_RULE)
    missing = [f"source.pairs.{k}" for k in ("chosen", "rejected") if pairs.get(k) is None]
    if missing:
        raise errors.PipelineValidationError(missing=missing)
    if job.fields is not None:
        raise _chat_error(J.PAIRS_AND_FIELDS, J.PAIRS_RULE)
    if on_overflow == "extend":
        raise _chat_error(J.PAIRS_EXTEND, J.PAIRS_RULE)
    per_file = {}
    for key in PAIR_KEYS:
        value = pairs.get(key)
        values = [value] if value is None or isinstance(value, str) else value
        if not isinstance(values, (list, tuple)) or not values or not all(
                v is None and key == "prompt" or isinstance(v, str) and v for v in values):
            raise _chat_error(J.PAIRS_VALUE.format(key=key, value=value), J.PAIRS_RULE)
        if len(values) not in (1, n):
            raise _chat_error(J.CHAT_ARITY.format(key=f"pairs.{key}", got=len(values), files=n), J.PAIRS_RULE)
        per_file[key] = list(values) * n if len(values) == 1 else list(values)
    specs = []
    for i in range(n):
        spec = PairSpec(per_file["prompt"][i], per_file["chosen"][i], per_file["rejected"][i])
        named = [k for k in (spec.prompt, spec.chosen, spec.rejected) if k is not None]
        if len(set(named)) != len(named):
            raise _chat_error(J.PAIRS_SAME_FIELD.format(fields=named), J.PAIRS_RULE)
        specs.append(spec)
    return specs
