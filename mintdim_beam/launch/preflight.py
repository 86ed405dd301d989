"""Launcher-side checks that touch storage, run before the Beam pipeline is built.

``config.resolve`` has already checked the job's structure. Here, before anything is
written: every source and tokenizer file exists and is a readable regular file (a FIFO
would block the first read forever), output directories neither are one directory
under two names nor lie inside one another (paths compared once symbolic links are
resolved), no input or tokenizer lies inside an output, each output can be created and
written; tokenizers load (a file, or a folder holding a tokenizer.json, with the
companion files beside it) and expose a pad id and an unk id (or prove they need none),
files sharing an output use the same tokenizer bytes, output directories are new or
empty, every ``{@NAME}`` segment names a token of the tokenizer and no literal spells
one without encoding to it, and the template literals are encoded once to apply the
Tier-1 UNK policy (spec, "UNK handling"). Last, every output
is claimed for this build (``claims.py``), so a second build into it stops here.
"""

from __future__ import annotations

import os
import posixpath
import stat
import sys
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from mintdim_beam.beam import claims
from mintdim_beam import errors
from mintdim_beam.errors import build_messages as M
from mintdim_beam.errors import job_messages as J
from mintdim_beam.storage import files as storage
from mintdim_beam.core.config import BuildConfig, normalize_dir
from mintdim_beam.tokenization import special_tokens
from mintdim_beam.tokenization.adapters import Tokenizer, load_files, read_tokenizer, tokenizer_digest
from mintdim_beam.tokenization.template_tokens import check_lookalikes, constant_segments, check_role_lookalikes, role_tokens


@dataclass
class Preflight:
    """What the checks learned: loaded tokenizers and template-literal UNK counts."""

    tokenizers: dict            # TokenizerSpec -> Tokenizer
    tokenizer_sha256: dict      # TokenizerSpec -> hex digest (``adapters.tokenizer_digest``)
    literal_unk: dict           # file index -> [LiteralUnk] of its literals that hold UNK


class LiteralUnk(NamedTuple):
    """A template literal that encodes to UNK, and the characters behind each UNK."""

    text: str
    unk_chars: tuple


def _ask_continue(prompt: str) -> bool:
    answer = input(prompt)
    return answer.strip().lower() in ("y", "yes")


def check_schemes(config: BuildConfig) -> None:
    """Every ``scheme://`` path names a file system Beam has here (``gs://`` needs the
    gcp extra, ``s3://`` the aws one); otherwise Beam's ValueError surfaced as a
    traceback from the first look at the path."""
    from apache_beam.io.filesystems import FileSystems

    paths = [f.path for f in config.files] + [f.tokenizer.path for f in config.files]
    paths += [out.path for out in config.outputs]
    for path in dict.fromkeys(paths):
        if "://" not in path:
            continue
        try:
            FileSystems.get_filesystem(path)
        except ValueError:
            scheme = path.split("://", 1)[0]
            problem = J.NO_FILE_SYSTEM.format(scheme=scheme, path=path)
            raise errors.PipelineValidationError.invalid(
                problem=problem.en, rules=[rule.en for rule in J.FILE_SYSTEM_RULES],
                problem_vi=problem.vi, rules_vi=[rule.vi for rule in J.FILE_SYSTEM_RULES]) from None


def check(config: BuildConfig, ask: Optional[Callable[[str], bool]] = None,
          interactive: Optional[bool] = None, claim: bool = True, sizes: Optional[dict] = None) -> Preflight:
    """Run every launch-time check; raise the spec's error for the first failure.

    On success every output directory exists and is claimed for this build
    (``config.run_id``); on failure nothing was written. ``claim=False`` leaves the
    claim to the caller (:func:`claim_outputs`), which the launcher takes right before
    the build starts, so that nothing in between can fail and leave a claim behind.
    ``sizes``: the inputs as the launcher listed them (``check_inputs``).
    """
    check_paths(config, sizes)
    loaded: dict = {}
    digests: dict = {}
    for spec in dict.fromkeys(f.tokenizer for f in config.files):
        # read once: loaded, and hashed below (a folder's tokenizer.json and companions)
        files, contents = read_tokenizer(spec.kind, spec.path, storage.read_bytes, storage.exists)
        loaded[spec] = load_files(spec.kind, spec.path, files, contents)
        digests[spec] = tokenizer_digest(files, contents)

    for out in config.outputs:
        members = config.files_of(out)
        for other in members[1:]:
            if digests[other.tokenizer] != digests[members[0].tokenizer]:
                raise errors.OutputMappingError.inconsistent(
                    directory=out.path, files=[members[0].path, other.path], differs="tokenizer")
        _check_empty(out.path)

    check_template_tokens(config, loaded)
    literal_unk = template_unk(config, loaded)
    if literal_unk:
        _apply_template_unk_policy(config, literal_unk, ask, interactive)
    if claim:
        claim_outputs(config)
    return Preflight(loaded, digests, literal_unk)


# --------------------------------------------------------------------------- paths


def check_paths(config: BuildConfig, sizes: Optional[dict] = None) -> None:
    """Inputs, tokenizers and outputs, before any work (see the module docstring)."""
    check_inputs(config, sizes)
    outputs = {key: path for path, key in check_outputs_apart(config)}
    inputs = [("source", f.path) for f in config.files]
    inputs += [("tokenizer", t.path) for t in dict.fromkeys(f.tokenizer for f in config.files)]
    parents: dict = {}
    for context, path in inputs:
        # Every directory above the input, against the set of outputs: tens of
        # thousands of inputs cost one walk each, not one comparison per output.
        above, key = None, _located(path, parents)
        while above != key:
            above, key = key, posixpath.dirname(key)
            if key in outputs:
                raise errors.OutputMappingError.holds_input(outputs[key], context, path)
    for out in config.outputs:
        _check_output_usable(out.path)


def check_outputs_apart(config: BuildConfig) -> list:
    """No two outputs are one directory or one inside the other (links resolved).

    Also run on versioned roots before their build ids are appended. Returns
    ``[(path, resolved path)]`` of every output.
    """
    outputs = [(out.path, resolved(out.path)) for out in config.outputs]
    # Sorted with a separator after each path, a directory comes right before what lies
    # inside it (and everything between starts with it too), so neighbours suffice.
    ordered = sorted(outputs, key=lambda o: o[1].rstrip("/") + "/")
    for (outer, outer_key), (inner, inner_key) in zip(ordered, ordered[1:]):
        if inner_key == outer_key:
            raise errors.OutputMappingError.overlap(outer, inner, "same", outer_key)
        if _inside(inner_key, outer_key):
            raise errors.OutputMappingError.overlap(outer, inner, "inside", inner_key)
    return outputs


def check_inputs(config: BuildConfig, sizes: Optional[dict] = None) -> None:
    """Every input and tokenizer file exists and, locally, is a readable regular file.

    ``sizes``: ``{path: size or None}`` the launcher already listed
    (``patterns.expand_sizes``): a remote input found there is not asked for again."""
    known = sizes or {}
    remote = [f.path for f in config.files if not storage.is_local(f.path)]
    found = {p: known[p] for p in remote if p in known}
    asked = [p for p in remote if p not in found]
    if len(asked) > 1:   # asked for together (folders listed), not one round trip after another
        found.update(storage.sizes_or_none(asked))
    missing = next((p for p in (f.path for f in config.files) if p in found and found[p] is None), None)
    if missing is not None:
        raise errors.MintDimFileNotFoundError(context="source", path=missing)
    for spec in config.files:
        if storage.is_local(spec.path) or spec.path not in found:
            _check_input("source", spec.path)
    for spec in dict.fromkeys(f.tokenizer for f in config.files):
        _check_tokenizer(spec.kind, spec.path)


def resolved(path: str) -> str:
    """Where a path really is: symbolic links resolved locally; object keys normalised."""
    if storage.is_local(path):
        return os.path.realpath(path)
    return normalize_dir(path)


def _located(path: str, parents: dict) -> str:
    """``resolved(path)`` for an input: its directory resolved once for all the files in
    it (``parents`` caches them), the file itself only when it is a link."""
    if not storage.is_local(path) or os.path.islink(path):
        return resolved(path)
    head, tail = os.path.split(os.path.abspath(path))
    if head not in parents:
        parents[head] = os.path.realpath(head)
    return os.path.join(parents[head], tail)


def _inside(path: str, directory: str) -> bool:
    sep = os.sep if storage.is_local(directory) else "/"
    return path.startswith(directory.rstrip(sep) + sep)


_FILE_KINDS = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "char_device"),
               (stat.S_ISBLK, "block_device"), (stat.S_ISSOCK, "socket"))


def _check_input(context: str, path: str) -> None:
    """An input or tokenizer: exists, and locally is a regular file this user can read."""
    if not storage.is_local(path):
        if not storage.exists(path):
            raise errors.MintDimFileNotFoundError(context=context, path=path)
        return
    try:
        mode = os.stat(path).st_mode   # follows links: a link to a regular file is one
    except FileNotFoundError:
        raise errors.MintDimFileNotFoundError(context=context, path=path) from None
    except OSError:                    # a dangling link's loop, a component that is a file, ...
        raise errors.MintDimFileNotFoundError(context=context, path=path) from None
    if not stat.S_ISREG(mode):
        found = next((name for test, name in _FILE_KINDS if test(mode)), "other")
        raise errors.MintDimFileNotFoundError.not_a_file(context, path, found)
    if not os.access(path, os.R_OK):
        raise errors.MintDimFileNotFoundError.not_a_file(context, path, "unreadable")


def _check_tokenizer(kind: str, path: str) -> None:
    """A tokenizer entry: a file, or (``hf_json``) a folder holding a tokenizer.json.

    A ``hf_json`` entry not named ``.json`` is taken as a folder; locally, a file of
    that name is a format the build does not read."""
    if special_tokens.names_folder(kind, path):
        if storage.is_local(path) and os.path.isfile(path):
            raise errors.TokenizerValidationError.unsupported_format(path)
        _check_input("tokenizer", special_tokens.main_file(kind, path))
        return
    _check_input("tokenizer", path)


#: Every build stages under OUT/.mintdim-staging/ (``names.STAGING``; layout imports Beam).
STAGING = ".mintdim-staging"


def _check_output_usable(path: str) -> None:
    """Not inside a build's staging folder (which its build removes once published); and
    locally: not a dangling link, not a file, and creatable or writable."""
    parts = path.split("://", 1)[-1].replace(os.sep, "/").split("/")
    if STAGING in parts:
        raise errors.OutputValidationError.unusable(path, "inside_staging", STAGING)
    if not storage.is_local(path):
        return
    if os.path.islink(path) and not os.path.exists(path):
        raise errors.OutputValidationError.unusable(path, "dangling_link", os.readlink(path))
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise errors.OutputValidationError.unusable(path, "not_directory", existing)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise errors.OutputValidationError.unusable(path, "not_writable", f"{existing} is not writable")
    _check_private(path, existing)


def _check_private(path: str, existing: str) -> None:
    """Refuse a local output that another user can change under the build: the
    directory itself (or, for a new one, the folder it is created in) writable by
    group or others, or owned by another user. A sticky folder such as ``/tmp`` is
    fine for a new output: nobody else can rename or remove what this build creates
    there. What the build reads back from staging is never code (``spill_meta``), and
    its metadata is checked against digests; this keeps its records out of reach too."""
    st = os.stat(existing)
    mine = st.st_uid == os.getuid()
    shared = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if os.path.abspath(existing) == os.path.abspath(path):      # the output directory itself
        if not mine or shared:
            raise errors.OutputValidationError.unusable(
                path, "shared_writable", f"{existing} (mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid})")
    elif shared and not st.st_mode & stat.S_ISVTX:
        raise errors.OutputValidationError.unusable(
            path, "shared_writable", f"{existing} (mode {stat.S_IMODE(st.st_mode):04o}, not sticky)")


def _check_empty(path: str) -> None:
    found = claims.read(path)
    if found is not None:
        raise claims.claimed_error(path, found)
    if not storage.is_missing_or_empty(path):
        raise errors.OutputValidationError(directory=path)


def claim_outputs(config: BuildConfig) -> None:
    """Claim every output for this build, or none: a failed claim releases the others."""
    done = []
    try:
        for out in config.outputs:
            created = storage.is_local(out.path) and not os.path.lexists(out.path)
            claims.claim(out.path, out.run_id)
            done.append((out, created))
    except BaseException:
        for out, created in reversed(done):
            claims.release(out.path, out.run_id)
            if created:
                _remove_empty_dirs(out.path)
        raise


def _remove_empty_dirs(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def check_template_tokens(config: BuildConfig, tokenizers: dict) -> None:
    """Every ``{@NAME}`` segment names a token of its file's tokenizer, and no literal
    spells a special token's text without encoding to it (DESIGN.md §8): both are a
    ``TemplateTokenizerError`` whatever ``on_template_unk`` says. Once per template."""
    checked = set()
    for spec in config.files:
        key = (spec.tokenizer, spec.segments)
        if key in checked:
            continue
        checked.add(key)
        tok: Tokenizer = tokenizers[spec.tokenizer]
        if spec.chat is not None:
            for role in spec.chat.roles:      # each role's template, as a template
                role_tokens(role, tok, spec.index)
                check_role_lookalikes(role, tok, spec.index)
            continue
        constants = constant_segments(spec.segments, tok, spec.index, spec.template)
        check_lookalikes(spec.segments, tok, constants, spec.index, spec.template)


def template_unk(config: BuildConfig, tokenizers: dict) -> dict:
    """File index -> the literal segments whose tokens include UNK (:class:`LiteralUnk`).

    Special segments are not literals: ``{@unk}`` asks for the unknown token by name."""
    found = {}
    checked: dict = {}   # (tokenizer, segments) -> bad literals: once per template, not per file
    for spec in config.files:
        key = (spec.tokenizer, spec.segments, spec.chat)
        if key not in checked:
            tok: Tokenizer = tokenizers[spec.tokenizer]
            segments = spec.segments
            if spec.chat is not None:       # a chat's literals are its role templates'
                segments = [seg for role in spec.chat.roles for seg in role.segments]
            checked[key] = [LiteralUnk(seg.text, tuple(tok.unk_substrings(seg.text))) for seg in segments
                            if seg.is_literal and tok.unk_id is not None and tok.unk_id in tok.encode(seg.text)]
        if checked[key]:
            found[spec.index] = list(checked[key])
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
            # each block of the question under its language's tag, its lines aligned
            en, vi = (block.replace("\n", "\n      ") for block in M.TEMPLATE_UNK_QUESTION)
            text = (
                "[unit-build] Template UNK detected\n"
                f"  file index {first}\n"
                f"  literal segments with UNK {len(literals)}: "
                f"{', '.join(repr(lit.text) for lit in literals)}\n"
                f"  characters that encode to UNK: {', '.join(repr(ch) for ch in chars)}\n\n"
                f"  EN: {en}\n"
                f"  VN: {vi}\n\n"
                "  [y/N] > "
            )
            if ask(text):
                return
    raise error
