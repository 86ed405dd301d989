"""Where a tokenizer's files are, which special tokens it has, and whether it can emit UNK.

Pure code (no storage, no Beam): the callers hand in the storage layer's ``exists`` and
``read_bytes``, so a local folder, ``gs://`` or ``s3://`` loads alike (DESIGN.md §8).

- **Files.** A tokenizer entry names a SentencePiece ``.model``, a Hugging Face
  ``tokenizer.json``, or (``hf_json``) the folder holding a ``tokenizer.json``. Beside a
  file named ``tokenizer.json`` (a model folder's layout) the companion files
  ``tokenizer_config.json`` and ``special_tokens_map.json`` are read when they exist:
  :func:`locate`.
- **Named tokens.** ``bos``, ``eos``, ``pad`` and ``unk``: the SentencePiece model's own
  ids; for a ``tokenizer.json``, what the file configures (padding, the model's unknown
  token) and otherwise what the companions name, as Hugging Face loaders read them (a
  string, or ``{"content": ...}``): :func:`companion_tokens`.
- **UNK proof.** A vocabulary that provably cannot emit an unknown token needs none:
  :func:`hf_unk_proof` and :func:`sp_unk_proof` say why one cannot, or nothing.
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from mintdim_beam.errors import TokenizerSpecialTokenError, TokenizerValidationError
from mintdim_beam.errors import tokenizer_messages as TM
from mintdim_beam.errors.bilingual import Text

HF_JSON = "hf_json"
#: The file a Hugging Face model folder keeps its tokenizer in.
TOKENIZER_JSON = "tokenizer.json"
#: Files beside a ``tokenizer.json`` that name its special tokens, in the order they are
#: read (``special_tokens_map.json`` is what older loaders read; both must agree).
COMPANIONS = ("tokenizer_config.json", "special_tokens_map.json")
#: The special tokens a template names by role: ``{@bos}``, ``{@eos}``, ``{@pad}``, ``{@unk}``.
NAMED = ("bos", "eos", "pad", "unk")


@dataclass(frozen=True)
class TokenizerFiles:
    """The files one tokenizer entry stands for: the tokenizer file and its companions."""

    main: str
    companions: tuple = ()      # paths of the companions that exist, in COMPANIONS order

    @property
    def paths(self) -> tuple:
        return (self.main, *self.companions)


@dataclass(frozen=True)
class SpecialToken:
    """One special token: its id, its text (the piece or token content) and where it was named."""

    id: int
    content: str
    source: str = ""            # the companion file that named it ("" for the tokenizer file)


@dataclass
class SpecialTokens:
    """A tokenizer's special tokens: by role and by exact content."""

    named: dict = field(default_factory=dict)      # "bos"/"eos"/"pad"/"unk" -> SpecialToken
    by_content: dict = field(default_factory=dict)  # content -> id, control/special/added tokens
    #: Roles a companion file names with a token the vocabulary does not have: role ->
    #: (content, file). Such a role has no token (a Hugging Face loader would add one).
    unresolved: dict = field(default_factory=dict)
    #: content -> id of the control tokens (SentencePiece control and unknown pieces,
    #: Hugging Face special added tokens): the text a template literal must not spell
    #: unless it encodes to them.
    control: dict = field(default_factory=dict)

    def find(self, name: str) -> Optional[SpecialToken]:
        """The token a ``{@NAME}`` segment names: a role (``bos``, ...) or an exact content."""
        if name in NAMED:
            return self.named.get(name)
        if name in self.by_content:
            return SpecialToken(self.by_content[name], name)
        return None

    def shown(self, limit: int = 12) -> list:
        """How the tokens are written in a template, for messages: ``{@eos} = '</s>' (2)``."""
        out = [f"{{@{n}}} = {t.content!r} ({t.id})" for n, t in self.named.items()]
        out += [f"{n}_token {c!r} of {where}: not in the vocabulary" for n, (c, where) in self.unresolved.items()]
        out += [f"{{@{c}}} ({i})" for c, i in list(self.by_content.items())[:limit]]
        if len(self.by_content) > limit:
            out.append(f"... {len(self.by_content) - limit} more")
        return out

    def lookalikes(self) -> dict:
        """``{content: id}`` of every token whose text a template literal must not spell
        without encoding to it: the control tokens, and the named ones written as control
        tokens are (``<...>``, ``[...]``). A companion file may name an ordinary token
        as pad or eos (``"!"``, ``"."``); a literal holding that text is ordinary text."""
        found = {t.content: t.id for t in self.named.values() if _marked(t.content)}
        found.update((c, i) for c, i in self.control.items() if c)
        return found


def _marked(text: str) -> bool:
    """Whether ``text`` is written as a control token: ``<s>``, ``</s>``, ``<|eot|>``, ``[PAD]``."""
    return len(text) >= 3 and (text[0], text[-1]) in (("<", ">"), ("[", "]"))


# --------------------------------------------------------------------------- files


def _is_remote(path: str) -> bool:
    return "://" in path


def join(folder: str, name: str) -> str:
    """``folder/name`` for a local path or an object store key."""
    if _is_remote(folder):
        return folder.rstrip("/") + "/" + name
    return os.path.join(folder, name)


def dirname(path: str) -> str:
    return posixpath.dirname(path) if _is_remote(path) else os.path.dirname(path)


def basename(path: str) -> str:
    return posixpath.basename(path) if _is_remote(path) else os.path.basename(path)


def names_folder(kind: str, path: str) -> bool:
    """Whether a ``hf_json`` entry names a folder rather than a ``.json`` file (by name: a
    path that does not end in ``.json``; the launcher checks that the folder holds one)."""
    return kind == HF_JSON and not path.rstrip("/").lower().endswith(".json")


def main_file(kind: str, path: str) -> str:
    """The tokenizer file an entry stands for: the file, or ``FOLDER/tokenizer.json``."""
    return join(path.rstrip("/"), TOKENIZER_JSON) if names_folder(kind, path) else path


def companion_candidates(kind: str, path: str) -> list:
    """Where the companion files of an entry would be (beside a ``tokenizer.json`` only)."""
    main = main_file(kind, path)
    if kind != HF_JSON or basename(main) != TOKENIZER_JSON:
        return []
    return [join(dirname(main), name) for name in COMPANIONS]


def locate(kind: str, path: str, exists: Optional[Callable[[str], bool]] = None) -> TokenizerFiles:
    """The files of the entry ``path``; ``exists`` (the storage layer's) finds the
    companions: without it none are read."""
    found = tuple(p for p in companion_candidates(kind, path) if exists is not None and exists(p))
    return TokenizerFiles(main_file(kind, path), found)


# --------------------------------------------------------------------------- companions


def _content(value) -> Optional[str]:
    """A special token as ``tokenizer_config.json`` writes it: a string, or an
    ``AddedToken`` dict with its ``content``; anything else names no token."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def companion_tokens(path: str, companions: Mapping[str, bytes]) -> dict:
    """``{"bos": (content, file), ...}``: the roles the companion files name.

    ``companions``: companion path -> bytes. A file that is not a JSON object is
    refused (``TokenizerValidationError``); two files naming different tokens for one
    role are refused (Hugging Face loaders of different versions take different ones).
    """
    found: dict = {}
    for where, data in companions.items():
        try:
            config = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise TokenizerValidationError.unloadable(where, HF_JSON, "not_json", str(exc)) from None
        if not isinstance(config, dict):
            raise TokenizerValidationError.unloadable(where, HF_JSON, "not_json", "not a JSON object")
        for role in NAMED:
            content = _content(config.get(f"{role}_token"))
            if content is None:
                continue
            if role in found and found[role][0] != content:
                fix = TM.SPECIAL_FIX_COMPANIONS_DIFFER.format(key=f"{role}_token", first=found[role][0],
                                                             second=content)
                raise TokenizerSpecialTokenError.with_fix(path, f"{role}_token",
                                                          f"{role}_token named twice, differently", fix)
            found.setdefault(role, (content, basename(where)))
    return found


# --------------------------------------------------------------------------- UNK proofs


def _byte_symbols() -> dict:
    """Byte -> its character in the byte-level alphabet (GPT-2's ``bytes_to_unicode``)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    symbols, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    return symbols


#: Bytes UTF-8 text can hold: all but 0xC0, 0xC1 and 0xF5..0xFF, which no UTF-8
#: encoding of any string contains (and a Python string always encodes to valid UTF-8
#: here: a lone surrogate is a bad record before it reaches a tokenizer).
UTF8_BYTES = tuple(b for b in range(256) if b not in (0xC0, 0xC1) and b < 0xF5)
BYTE_PIECES = tuple(f"<0x{b:02X}>" for b in range(256))


def _why(key: str, **facts) -> tuple:
    return key, facts


def hf_unk_proof(config: dict) -> Optional[tuple]:
    """None when the ``tokenizer.json`` ``config`` provably cannot emit an unknown token,
    else ``(reason key of tokenizer_messages.NO_UNK_WHY, facts)``.

    Proven: a BPE or Unigram model with ``byte_fallback`` whose vocabulary holds all 256
    ``<0xNN>`` pieces (a character it cannot spell becomes its bytes), or a byte-level
    BPE (a ``ByteLevel`` pre-tokenizer, last in a sequence, no subword prefix or suffix)
    whose vocabulary holds the symbol of every byte UTF-8 text can hold (every text is
    spelled in those symbols before the model sees it).
    """
    model = config.get("model") or {}
    kind = model.get("type")
    vocab = model.get("vocab")
    if kind == "Unigram" and isinstance(vocab, list):
        pieces = {entry[0] for entry in vocab if isinstance(entry, list) and entry}
    elif isinstance(vocab, dict):
        pieces = set(vocab)
    else:
        return _why("not_bytes")
    if model.get("byte_fallback") and kind in ("BPE", "Unigram"):
        missing = [p for p in BYTE_PIECES if p not in pieces]
        return None if not missing else _why("byte_pieces", count=len(missing), example=missing[0])
    if kind != "BPE" or not _byte_level(config.get("pre_tokenizer")):
        return _why("not_bytes")
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return _why("affixes")
    symbols = _byte_symbols()
    missing = [b for b in UTF8_BYTES if symbols[b] not in pieces]
    return None if not missing else _why("byte_symbols", count=len(missing), example=f"0x{missing[0]:02X}")


def _byte_level(pre) -> bool:
    if not isinstance(pre, dict):
        return False
    if pre.get("type") == "ByteLevel":
        return True
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    return bool(steps) and isinstance(steps[-1], dict) and steps[-1].get("type") == "ByteLevel"


def sp_unk_proof(sp, byte_fallback: bool) -> Optional[tuple]:
    """As :func:`hf_unk_proof` for a SentencePiece processor ``sp``: byte fallback with
    all 256 byte pieces. (The library refuses a model without an unknown piece, so this
    only speaks for a model whose unknown id the library does not report.)"""
    if not byte_fallback:
        return _why("not_bytes")
    present = {sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_byte(i)}
    missing = [p for p in BYTE_PIECES if p not in present]
    return None if not missing else _why("byte_pieces", count=len(missing), example=missing[0])


def no_unk_error(path: str, why: tuple) -> TokenizerSpecialTokenError:
    """The spec's "missing unk_id", with why the vocabulary is not proven and how to fix it."""
    key, facts = why
    fix = TM.SPECIAL_FIX_UNK.format(why=TM.NO_UNK_WHY[key].format(**facts))
    return TokenizerSpecialTokenError.with_fix(path, "unk_id", "missing unk_id", fix)


def no_pad_error(path: str, kind: str, candidates: list) -> TokenizerSpecialTokenError:
    """The spec's "missing pad_id", saying exactly how to give the tokenizer one."""
    if kind != HF_JSON:
        return TokenizerSpecialTokenError.with_fix(path, "pad_id", "missing pad_id", TM.SPECIAL_FIX_PAD_SP)
    main = main_file(kind, path)
    stem = main[:-len(".json")] if main.lower().endswith(".json") else main
    token = candidates[0] if candidates else "TOKEN"
    listed = TM.SPECIAL_PAD_CANDIDATES.format(tokens=", ".join(repr(c) for c in candidates[:5])) \
        if candidates else Text("", "")
    fix = TM.SPECIAL_FIX_PAD_HF.format(path=main, token=token, copy=f"{stem}.padded.json", candidates=listed)
    return TokenizerSpecialTokenError.with_fix(path, "pad_id", "missing pad_id", fix)


def pad_candidates(added: Mapping[int, object]) -> list:
    """Added tokens that could pad, best first: those whose content says pad, then the
    other special ones (``<|endoftext|>``), by id."""
    specials = sorted((i, t.content) for i, t in added.items() if getattr(t, "special", False))
    padding = [c for _, c in specials if "pad" in c.lower()]
    return padding + [c for _, c in specials if c not in padding]
