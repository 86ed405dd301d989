"""Launcher-side checks that touch storage, run before the Beam pipeline is built.

``config.resolve`` has already checked the job's structure. Here: every source and
tokenizer file exists, tokenizers load and expose unk/pad ids, files sharing an output
use the same tokenizer bytes, output directories are new or empty, and the template
literals are encoded once to apply the Tier-1 UNK policy (spec, "UNK handling").
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from . import errors, storage
from .config import BuildConfig
from .tokenizers import Tokenizer, load_tokenizer


@dataclass
class Preflight:
    """What the checks learned: loaded tokenizers and template-literal UNK counts."""

    tokenizers: dict            # TokenizerSpec -> Tokenizer
    tokenizer_sha256: dict      # TokenizerSpec -> hex digest
    literal_unk: dict           # file index -> [LiteralUnk] of its literals that hold UNK


class LiteralUnk(NamedTuple):
    """A template literal that encodes to UNK, and the characters behind each UNK."""

    text: str
    unk_chars: tuple


def _ask_continue(prompt: str) -> bool:
    answer = input(prompt)
    return answer.strip().lower() in ("y", "yes")


def check(config: BuildConfig, ask: Optional[Callable[[str], bool]] = None,
          interactive: Optional[bool] = None) -> Preflight:
    """Run every launch-time check; raise the spec's error for the first failure."""
    for spec in config.files:
        if not storage.exists(spec.path):
            raise errors.MintDimFileNotFoundError(context="source", path=spec.path)
    loaded: dict = {}
    digests: dict = {}
    for spec in dict.fromkeys(f.tokenizer for f in config.files):
        if not storage.exists(spec.path):
            raise errors.MintDimFileNotFoundError(context="tokenizer", path=spec.path)
        data = storage.read_bytes(spec.path)
        loaded[spec] = load_tokenizer(spec.kind, spec.path, data)
        digests[spec] = hashlib.sha256(data).hexdigest()

    for out in config.outputs:
        members = config.files_of(out)
        for other in members[1:]:
            if digests[other.tokenizer] != digests[members[0].tokenizer]:
                raise errors.OutputMappingError.inconsistent(
                    directory=out.path, files=[members[0].path, other.path], differs="tokenizer")
        if not storage.is_missing_or_empty(out.path):
            raise errors.OutputValidationError(directory=out.path)

    literal_unk = template_unk(config, loaded)
    if literal_unk:
        _apply_template_unk_policy(config, literal_unk, ask, interactive)
    return Preflight(loaded, digests, literal_unk)


def template_unk(config: BuildConfig, tokenizers: dict) -> dict:
    """File index -> the literal segments whose tokens include UNK (:class:`LiteralUnk`)."""
    found = {}
    for spec in config.files:
        tok: Tokenizer = tokenizers[spec.tokenizer]
        bad = []
        for seg in spec.segments:
            if not seg.is_field and tok.unk_id in tok.encode(seg.text):
                bad.append(LiteralUnk(seg.text, tuple(tok.unk_substrings(seg.text))))
        if bad:
            found[spec.index] = bad
    return found


def _unk_chars(literals: list) -> list:
    """The distinct source substrings behind the literals' UNK tokens, in order."""
    return list(dict.fromkeys(ch for lit in literals for ch in lit.unk_chars))


def _apply_template_unk_policy(config, literal_unk, ask, interactive) -> None:
    policy = config.policies.on_template_unk
    if policy == "continue":
        return
    first = min(literal_unk)
    spec = config.files[first]
    literals = literal_unk[first]
    chars = _unk_chars(literals)
    error = errors.TemplateTokenizerError(file_index=first, template=spec.template,
                                          literals=[lit.text for lit in literals], unk_chars=chars)
    if policy == "prompt":
        interactive = sys.stdin.isatty() if interactive is None else interactive
        if interactive:
            ask = ask or _ask_continue
            text = (
                "[unit-build] Template UNK detected\n"
                f"  file index {first}\n"
                f"  literal segments with UNK {len(literals)}: "
                f"{', '.join(repr(lit.text) for lit in literals)}\n"
                f"  characters that encode to UNK: {', '.join(repr(ch) for ch in chars)}\n\n"
                "  EN: Static-text tokens will be UNK in every encoded sample.\n"
                "      Continue building?\n"
                "  VN: Token của static-text sẽ là UNK ở mọi sample.\n"
                "      Tiếp tục build?\n\n"
                "  [y/N] > "
            )
            if ask(text):
                return
    raise error
