"""Builds into versioned roots: ``ROOT/<build-id>/`` published, then ``ROOT/LATEST``
moved to it in every root, or in none.

A root is claimed by one build at a time (``claims.claim_root``), so ``LATEST`` only ever
moves forward; ``--skip-unchanged`` builds nothing when every root's latest build has
the fingerprint the inputs have now; ``--keep N`` removes older complete builds after a
publish (``retention.prune``). The build itself is :func:`launcher.launch`'s.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

from mintdim_beam import errors
from mintdim_beam.beam import claims, publish, retention
from mintdim_beam.core.config import BuildConfig, check_build_id, check_keep
from mintdim_beam.format import names
from mintdim_beam.launch import launcher, patterns, preflight
from mintdim_beam.launch.quiet_logs import quiet_when_asked
from mintdim_beam.storage import access as storage_access
from mintdim_beam.storage import clients
from mintdim_beam.storage import files as storage

@dataclass(frozen=True)
class VersionedResult:
    """A build into versioned roots: its id, or the latest id when nothing changed."""

    build_id: str
    skipped: bool
    roots: tuple
    result: Optional[launcher.BuildResult] = None
    fingerprints: dict = field(default_factory=dict)   # root -> fingerprint id (when checked)
    pruned: dict = field(default_factory=dict)         # root -> build ids removed by ``keep``


def new_build_id(now: Optional[float] = None) -> str:
    """Sortable and unique: UTC time to the second, then 8 random hex digits."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def _check_versioned_root(root: str) -> None:
    """Before any work: a root whose LATEST is a directory used to fail only once the build
    was published (IsADirectoryError, a stray LATEST.tmp-*), and a root that is itself a
    published dataset took builds inside it."""
    latest = storage.join(root, names.LATEST)
    if storage.is_local(root) and os.path.lexists(latest) and not os.path.isfile(latest):
        raise errors.OutputValidationError.unusable(root, "latest_not_file", latest)
    manifest = storage.join(root, names.MANIFEST)
    if storage.exists(manifest):
        raise errors.OutputValidationError.unusable(root, "dataset_as_root", manifest)


@quiet_when_asked
def launch_versioned(config: BuildConfig, runner=None, options=None, skip_unchanged: bool = False,
                     build_id: Optional[str] = None, ask=None, interactive=None,
                     echo=print, quiet: bool = False, keep: Optional[int] = None) -> VersionedResult:
    """Treat every output directory as a versioned root: build into ``ROOT/<build-id>/``.

    After every output is published, each ``ROOT/LATEST`` is replaced (atomically) by
    the new id. With ``skip_unchanged`` the launcher hashes the inputs first and skips
    the build when every root's latest build has the same fingerprint. ``keep``: then
    each root keeps its ``keep`` newest complete builds (and the one ``LATEST``
    names) and the older complete ones are removed (``retention.prune``).
    """
    if build_id is not None:
        check_build_id(build_id)
    check_keep(keep)
    opts = launcher.make_options(options)
    clients.configure(opts)
    preflight.check_schemes(config)
    storage_access.check(storage_access.build_paths(config), opts)
    config, sizes = patterns.expand_sizes(config)     # listed once, for launch() too
    roots = tuple(out.path for out in config.outputs)
    preflight.check_outputs_apart(config)   # roots, as the outputs are checked
    for root in roots:
        _check_versioned_root(root)
    digests = None
    current: dict = {}
    if skip_unchanged:
        preflight.check_inputs(config, sizes)   # before hashing them: a FIFO would block for good
        digests = launcher.hash_inputs(config)
        current = {out.path: publish.fingerprint(config, out, digests.files)["id"] for out in config.outputs}
        latest = {root: publish.latest_fingerprint(root) for root in roots}
        if all(latest[root] == current[root] for root in roots):
            ids = sorted({publish.read_latest(root) for root in roots})
            echo(f"[unit-build] unchanged: fingerprint equals LATEST ({', '.join(ids)}); nothing built "
                 f"(inputs hashed in {digests.seconds:.1f} s)")
            return VersionedResult(ids[0] if len(ids) == 1 else ",".join(ids), True, roots, None, current)
    build_id = build_id or new_build_id()
    versioned = dataclasses.replace(config, outputs=tuple(
        dataclasses.replace(out, path=storage.join(out.path, build_id)) for out in config.outputs))
    run_id = versioned.outputs[0].run_id if versioned.outputs else build_id
    claimed = []
    try:
        for root in roots:      # one build at a time per root: LATEST only ever moves forward
            claims.claim_root(root, run_id)
            claimed.append(root)
        result = launcher.launch(versioned, runner=runner, options=options, ask=ask, interactive=interactive, echo=echo,
                        input_digests=digests, quiet=quiet, input_sizes=sizes)
        for root in roots:
            claims.check_root_owned(root, run_id)
        publish.write_latest_all(roots, build_id)
        pruned = {root: retention.prune(root, keep) for root in roots} if keep is not None else {}
    except BaseException:
        for root in claimed:        # the error that stopped the build is the one to report
            try:
                claims.release_root(root, run_id)
            except errors.StoreRequestError:
                echo(f"[unit-build:warning] the root claim {storage.join(root, names.ROOT_CLAIM)} could not "
                     "be removed: delete it before building into this root again")
        raise
    for root in claimed:
        claims.release_root(root, run_id)
    echo(f"[unit-build] published build {build_id}; LATEST updated in {', '.join(roots)}")
    for root, done in pruned.items():
        if done.removed:
            echo(f"[unit-build] kept the {keep} newest builds in {root}; removed {', '.join(done.removed)}")
        for name, why in done.failed:
            echo(f"[unit-build:warning] could not remove the older build {storage.join(root, name)}: {why}")
    return VersionedResult(build_id, False, roots, result, current, {r: d.removed for r, d in pruned.items()})
