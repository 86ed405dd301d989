"""``mintdim-beam tokenizer add-padding``: tools for the tokenizer files a build reads.

    mintdim-beam tokenizer add-padding TOKENIZER_JSON --pad-token TOKEN OUT

A Hugging Face ``tokenizer.json`` without a padding section (and without a
``tokenizer_config.json`` beside it that names a ``pad_token``) gives a build no pad id,
and the job may not declare one (ids come from the tokenizer, never from the job).
``add-padding`` writes a copy of the file whose padding section names one of its own
tokens, so the copy carries the pad id the job then uses; the original is never
written. Nothing else in the file changes (same JSON, keys in the same order).
"""

from __future__ import annotations

import json
import os
import sys

from mintdim_beam import errors
from mintdim_beam.cli import flags
from mintdim_beam.storage import files as storage
from mintdim_beam.tokenization import special_tokens

COMMANDS = ("tokenizer",)


def add_subcommands(subparsers) -> dict:
    """Add the ``tokenizer`` command (its tools as sub-commands); return it by name."""
    p = subparsers.add_parser("tokenizer", help="tools for tokenizer files (add-padding)",
                              description="Tools for the tokenizer files a build reads.",
                              epilog=flags.EXIT_CODES_HELP)
    tools = p.add_subparsers(dest="tokenizer_command", required=True, metavar="TOOL", parser_class=flags.Parser)
    pad = tools.add_parser(
        "add-padding", help="write a copy of a tokenizer.json that pads with one of its own tokens",
        description="Write OUT: a copy of TOKENIZER_JSON whose padding section names TOKEN, an existing "
                    "token of it, so a build reads the pad id from the file (the job never declares ids). "
                    "The original is left as it is.",
        epilog=flags.EXIT_CODES_HELP)
    pad.add_argument("tokenizer", metavar="TOKENIZER_JSON",
                     help="a Hugging Face tokenizer.json, or the model folder holding one")
    pad.add_argument("--pad-token", dest="pad_token", required=True, metavar="TOKEN",
                     help="the token to pad with, exactly as the tokenizer writes it, e.g. '<|padding|>' "
                          "(required; no default)")
    pad.add_argument("out", metavar="OUT", help="where the copy goes; must not exist yet")
    return {"tokenizer": p}


def run(args) -> int:
    """Run the tool ``args`` names; the exit code (``flags.EXIT_CODES_HELP``)."""
    try:
        if args.tokenizer_command == "add-padding":
            return add_padding(args.tokenizer, args.pad_token, args.out)
    except errors.MintDimError as exc:
        print(str(exc), file=sys.stderr)
        return flags.EXIT_ERROR
    return flags.EXIT_USAGE


def padded(data: bytes, token: str, path: str = "", out: str = "") -> tuple:
    """``(copy's bytes, pad id)``: ``data`` (a tokenizer.json) with a padding section
    naming ``token``, as ``Tokenizer.enable_padding`` writes one."""
    from tokenizers import Tokenizer

    try:
        text = data.decode("utf-8")
        config = json.loads(text)
        tok = Tokenizer.from_str(text)
    except Exception as exc:   # noqa: BLE001 - not UTF-8, not JSON, or the library refused it
        raise errors.TokenizerValidationError.add_padding(path, out, "not_hf", detail=str(exc).strip()) from None
    if not isinstance(config, dict):
        raise errors.TokenizerValidationError.add_padding(path, out, "not_hf", detail="not a JSON object")
    if tok.padding is not None:
        shown = f"pad_token {tok.padding.get('pad_token')!r} (id {tok.padding.get('pad_id')})"
        raise errors.TokenizerValidationError.add_padding(path, out, "has_padding", detail=shown)
    pad_id = tok.token_to_id(token)
    if pad_id is None:
        candidates = special_tokens.pad_candidates(tok.get_added_tokens_decoder())
        raise errors.TokenizerValidationError.add_padding(path, out, "no_token", token=token,
                                                          candidates=candidates[:8])
    tok.enable_padding(pad_id=pad_id, pad_token=token)
    # The library's own padding section, put into the file's JSON as it is.
    config["padding"] = json.loads(tok.to_str())["padding"]
    copy = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    again = Tokenizer.from_str(copy.decode("utf-8"))
    assert again.padding is not None and again.padding["pad_id"] == pad_id
    return copy, pad_id


def add_padding(source: str, token: str, out: str) -> int:
    """Write ``out``, the padded copy of the tokenizer ``source`` (a file or its folder)."""
    path = source
    if not (storage.is_local(source) and os.path.isfile(source)):   # a model folder: its tokenizer.json
        path = special_tokens.main_file(special_tokens.HF_JSON, source)
    if storage.exists(out):
        raise errors.TokenizerValidationError.add_padding(path, out, "out_exists")
    if not storage.exists(path):
        raise errors.MintDimFileNotFoundError(context="tokenizer", path=path)
    copy, pad_id = padded(storage.read_bytes(path), token, path, out)
    storage.write_bytes(out, copy)
    print(f"[tokenizer] wrote {out}: {path} with padding pad_token {token!r} (id {pad_id}); "
          f"point tokenizer.files at it")
    return 0
