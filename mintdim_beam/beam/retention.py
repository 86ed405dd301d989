"""Which builds a versioned root keeps: ``--keep N`` removes the older ones.

A versioned root (``ROOT/<build-id>/`` folders and ``ROOT/LATEST``) grows by a build a
night. Once a build is published and every ``LATEST`` moved (``publish.write_latest_all``),
:func:`prune` removes a root's older builds, keeping the ``keep`` newest and always the
one ``LATEST`` names. Only a *complete* build is ever removed: a folder with
``manifest.json`` and no claim (``.mintdim-claim.json``), dated by its
``build_info.json`` ``started_at``. A folder still being written (a claim), one that
failed (no manifest) or one that cannot be dated is left alone: what is not known to be
finished and superseded is never deleted. A removed build loses its manifest first, so
it never looks complete half-deleted.

The launcher prunes while it still holds the root's claim (``claims.claim_root``), so
two builds never prune one root at once.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import NamedTuple, Optional

from mintdim_beam.beam import publish
from mintdim_beam.format import names
from mintdim_beam.storage import files as storage


class Pruned(NamedTuple):
    """What :func:`prune` did in one root: the builds removed (oldest first) and those
    it could not remove, with the system's words."""

    removed: tuple
    failed: tuple = ()


def _started_at(build: str) -> Optional[_dt.datetime]:
    """When the build in folder ``build`` started (its ``build_info.json``), or None."""
    try:
        info = json.loads(storage.read_bytes(storage.join(build, names.BUILD_INFO)))
        started = _dt.datetime.fromisoformat(info["started_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return started if started.tzinfo is not None else started.replace(tzinfo=_dt.timezone.utc)


def complete_builds(root: str) -> list:
    """``(started_at, build id)`` of the root's complete builds, oldest first: folders
    named as build ids with ``manifest.json``, no claim, and a ``started_at``."""
    found = []
    for name in storage.list_dir(root):
        if not names.is_build_id(name):
            continue
        build = storage.join(root, name)
        if storage.exists(storage.join(build, names.CLAIM)) or not storage.exists(storage.join(build, names.MANIFEST)):
            continue
        started = _started_at(build)
        if started is not None:
            found.append((started, name))
    return sorted(found)


def prune(root: str, keep: int) -> Pruned:
    """Remove the root's complete builds older than its ``keep`` newest, never the one
    ``LATEST`` names."""
    latest = publish.read_latest(root)
    builds = [name for _, name in complete_builds(root)]
    removed, failed = [], []
    for name in builds[:max(0, len(builds) - keep)]:
        if name == latest:
            continue
        build = storage.join(root, name)
        try:
            storage.delete(storage.join(build, names.MANIFEST))     # no longer a dataset, first
            storage.delete_tree(build)
        except OSError as exc:
            failed.append((name, exc.strerror or str(exc)))
            continue
        removed.append(name)
    return Pruned(tuple(removed), tuple(failed))
