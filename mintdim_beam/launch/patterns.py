"""Input patterns: entries of ``files`` that are globs, expanded to the files they match.

Corpora such as C4 or Dolma are thousands of files named by a pattern
(``gs://bucket/c4/en/c4-train.*.json.gz``). An entry of ``files`` holding ``*``, ``?``
or ``[`` is a pattern: it is expanded through Beam's ``FileSystems.match`` (local paths,
``gs://``, ``s3://`` alike), its matches sorted by path, and each match takes the
settings of the entry as written. The 1-or-N mapping of the other settings refers to
the entries as written (``config.resolve`` has checked it), so expansion works on the
resolved :class:`BuildConfig` and copies each entry's ``FileSpec``.

Everything downstream (the manifest's source list, sample ids, ``source_file``, the
fingerprint) sees the expanded list, as if the user had written it. A pattern that
matches no file is the spec's missing-file error, like a missing path.

Beam is imported only when an entry is a pattern, so a build of named files starts as
fast as before. A local entry that names an existing file is that file, even when its
name holds ``[``, ``*`` or ``?`` (``part[1].jsonl``): read as a pattern it would match
another file (``part1.jsonl``) or none. A local pattern without a folder (``*.jsonl``)
matches in the current directory, as a relative path does.
"""

from __future__ import annotations

import dataclasses
import os

from mintdim_beam import errors
from mintdim_beam.errors import job_messages as J
from mintdim_beam.core.config import BuildConfig, FileSpec
from mintdim_beam.storage import clients

_GLOB = ("*", "?", "[")


def is_pattern(path: str) -> bool:
    """A glob to expand: glob characters, and not the name of an existing local file."""
    if not any(c in path for c in _GLOB):
        return False
    return "://" in path or not os.path.isfile(path)


def has_patterns(config: BuildConfig) -> bool:
    return any(is_pattern(f.path) for f in config.files)


def match(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted by path (directories left out)."""
    return list(match_sizes(pattern))


def match_sizes(pattern: str) -> dict:
    """``{path: size}`` of the files ``pattern`` matches, sorted by path (directories
    left out): the sizes come with the listing, so nobody needs to ask for them again."""
    from apache_beam.io.filesystems import FileSystems

    local = "://" not in pattern
    # Beam's local file system lists the folder before the first glob character, and a
    # bare "*.jsonl" has none: it would match nothing. Matched as "./*.jsonl", its
    # matches are given back as written, without the "./".
    bare = local and not os.path.dirname(pattern)
    found = FileSystems.match([os.path.join(os.curdir, pattern) if bare else pattern])[0].metadata_list
    paths = sorted((m.path[len(os.curdir) + 1:] if bare else m.path, m.size_in_bytes) for m in found)
    return {p: size for p, size in paths if not (local and os.path.isdir(p))}


def expand(config: BuildConfig, options=None) -> BuildConfig:
    """``config`` with every pattern entry replaced by its matches (unchanged when no
    entry is a pattern). ``options``: Beam flags or ``PipelineOptions`` that reach the
    storage the patterns name (``--s3_endpoint_url``, ...)."""
    if not has_patterns(config):
        return config
    return _expand(config, options, {})


def expand_sizes(config: BuildConfig, options=None) -> tuple[BuildConfig, dict]:
    """:func:`expand`, and ``{path: size, or None if missing}`` of every input file.

    A build needs each input's size for its checks, its choice of local mode, its
    progress total and its block list; on a bucket each round of asking is a listing
    or a request per file, so the launcher asks once, here: a pattern's matches come
    with their sizes, named files are asked together (``storage.sizes_or_none``).
    What a worker reads is still checked by reading it (the fingerprint hashes the
    bytes read), so a file that changes after this listing is found as before."""
    from mintdim_beam.storage import files as storage

    sizes: dict = {}
    if has_patterns(config):
        config = _expand(config, options, sizes)
    else:
        clients.configure(options)
    named = [f.path for f in config.files if f.path not in sizes]
    if named:
        sizes.update(storage.sizes_or_none(named))
    return config, sizes


def _expand(config: BuildConfig, options, sizes: dict) -> BuildConfig:
    """:func:`expand`, adding each match's size (from the listing) to ``sizes``."""

    clients.configure(options)
    files: list[FileSpec] = []
    members: dict[int, list[int]] = {out.index: [] for out in config.outputs}
    entry_of: dict[str, FileSpec] = {}     # each file -> the entry that gave it first
    for spec in config.files:
        if is_pattern(spec.path):
            found = match_sizes(spec.path)
            sizes.update(found)
            paths = list(found)
        else:
            paths = [spec.path]
        if not paths:
            raise errors.MintDimFileNotFoundError(context="source", path=spec.path)
        for path in paths:
            key = path if "://" in path else os.path.abspath(path)
            first = entry_of.setdefault(key, spec)
            if first is not spec and (is_pattern(first.path) or is_pattern(spec.path)):
                # A file written out twice is read twice, as written; one that a pattern
                # also matches would be read twice (its samples doubled) unasked.
                raise _matched_twice(path, first.path, spec.path)
            members[spec.output].append(len(files))
            files.append(dataclasses.replace(spec, index=len(files), path=path))
    outputs = tuple(dataclasses.replace(out, files=tuple(members[out.index])) for out in config.outputs)
    return dataclasses.replace(config, files=tuple(files), outputs=outputs)


def _matched_twice(path: str, first: str, second: str) -> errors.PipelineValidationError:
    problem = J.MATCHED_TWICE.format(path=path, first=first, second=second)
    return errors.PipelineValidationError.invalid(
        problem=problem.en, rules=[J.MATCHED_TWICE_RULE.en], problem_vi=problem.vi,
        rules_vi=[J.MATCHED_TWICE_RULE.vi])
