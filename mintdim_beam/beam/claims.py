"""One output directory belongs to one build: the claim file that says which.

Two builds into one directory (a scheduler firing twice, two operators) could both find
it empty, both build, and publish one dataset made of two. So preflight claims every
output before the build writes anything: ``<output>/.mintdim-claim.json`` holds the
build's run id (``OutputSpec.run_id``), host, process and start time. Its staging area
is ``.mintdim-staging/<run-id>/``, publishing checks the claim is still its own before
the first published file and again before ``manifest.json``, and removes it last. A
build that finds another build's claim stops with ``OutputClaimedError`` naming that
build; a claim is never taken over, not even from a build that was killed (the error
says so and says to delete the directory: what such a build left cannot be trusted).

What is guaranteed:

* Local file systems: the claim is created with ``O_CREAT | O_EXCL``, which the kernel
  makes atomic, after the directory was found empty, and the directory is listed again
  once claimed. Of builds started together, exactly one claims and builds; every other
  fails before writing anything.
* Object stores (``gs://``, ``s3://``, through Beam's ``FileSystems``): there is no
  create-if-absent, so a build checks that no claim exists, writes its own, waits
  ``SETTLE_SECONDS`` and reads it back; a later writer's claim replaces it, and the
  earlier build then stops (``status="replaced"``). Both builds can only pass if the
  second one's check and write are more than ``SETTLE_SECONDS`` apart while the first
  one's write falls between them; then both build, each in its own staging area, and
  the claim is read again before publishing, where the build whose claim was replaced
  stops with nothing of it published. What remains is a window of one read before
  ``manifest.json``: never two builds' files under one manifest, unless a store
  delays a claim's write by more than the settle time.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import time
from typing import Optional

from mintdim_beam import errors
from mintdim_beam.beam import layout
from mintdim_beam.storage import files as storage
from mintdim_beam.format import names

#: Object stores: how long a claim must stay unreplaced before the build starts.
SETTLE_SECONDS = 2.0
#: A claim file created an instant ago may not hold its text yet.
_READ_TRIES = 20


def _claim_bytes(run_id: str) -> bytes:
    return (json.dumps({
        "run_id": run_id,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }) + "\n").encode("utf-8")


def read(out_path: str) -> Optional[dict]:
    """The claim in ``out_path``, None when there is none; ``{}`` when it is unreadable."""
    return _read_claim(layout.claim_path(out_path))


def _read_claim(path: str) -> Optional[dict]:
    for attempt in range(_READ_TRIES):
        if not storage.exists(path):
            return None
        try:
            found = json.loads(storage.read_bytes(path))
            if isinstance(found, dict) and found.get("run_id"):
                return found
        except (ValueError, OSError):
            pass
        time.sleep(0.05)   # created with O_EXCL, its text not written yet
    return {}


def _status(claim: dict) -> str:
    """What is known of the claiming build: its process on this host, or nothing."""
    if not claim:
        return "unreadable"
    if claim.get("host") != socket.gethostname() or not isinstance(claim.get("pid"), int):
        return "unknown"
    try:
        os.kill(claim["pid"], 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:   # alive, another user's
        return "running"
    return "running"


def claimed_error(out_path: str, claim: Optional[dict], status: Optional[str] = None) -> errors.OutputClaimedError:
    claim = claim or {}
    return errors.OutputClaimedError(
        directory=out_path, owner=claim.get("run_id", "?"), host=claim.get("host", "?"),
        pid=claim.get("pid", "?"), started_at=claim.get("started_at", "?"),
        status=status or _status(claim))


def claim(out_path: str, run_id: str, settle: float = SETTLE_SECONDS) -> None:
    """Make ``out_path`` this build's, or raise the error that says why it cannot be.

    The directory must be new or empty (``OutputValidationError``); a claim of another
    build gives ``OutputClaimedError``; a directory that cannot be created or written
    gives ``OutputValidationError.unusable``.
    """
    if storage.is_local(out_path):
        _claim_local(out_path, run_id)
    else:
        _claim_remote(out_path, run_id, settle)


def _unwritable(out_path: str, exc: OSError) -> errors.OutputValidationError:
    detail = f"{exc.strerror or exc}: {exc.filename or out_path}"
    return errors.OutputValidationError.unusable(out_path, "not_writable", detail)


def _claim_local(out_path: str, run_id: str) -> None:
    try:
        os.makedirs(out_path, exist_ok=True)
    except OSError as exc:
        raise _unwritable(out_path, exc) from None
    try:
        _create_exclusive(layout.claim_path(out_path), run_id)
    except FileExistsError:
        raise claimed_error(out_path, read(out_path)) from None
    except OSError as exc:
        raise _unwritable(out_path, exc) from None
    # Found empty before, claimed now: anything else here came in between, from a
    # build that published and released its claim meanwhile, or from another tool.
    if any(name != names.CLAIM for name in os.listdir(out_path)):
        release(out_path, run_id)
        raise errors.OutputValidationError(directory=out_path)


def _create_exclusive(path: str, run_id: str) -> None:
    """Write this build's claim at ``path`` if no file is there (``O_EXCL``: atomic
    locally), flushed to disk; ``FileExistsError`` otherwise."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, _claim_bytes(run_id))
        os.fsync(fd)
    finally:
        os.close(fd)


def _claim_remote(out_path: str, run_id: str, settle: float) -> None:
    found = read(out_path)
    if found is not None:
        raise claimed_error(out_path, found)
    storage.write_bytes(layout.claim_path(out_path), _claim_bytes(run_id))
    time.sleep(settle)
    check_owned(out_path, run_id)
    if any(not p.endswith("/" + names.CLAIM) for p in storage.list_files(out_path)):
        release(out_path, run_id)
        raise errors.OutputValidationError(directory=out_path)


def claimed_by_other(out_path: str, run_id: str) -> bool:
    found = read(out_path)
    return found is not None and found.get("run_id") != run_id


def owns(out_path: str, run_id: str) -> bool:
    found = read(out_path)
    return bool(found) and found.get("run_id") == run_id


def check_owned(out_path: str, run_id: str, claimed: bool = False) -> None:
    """Raise ``OutputClaimedError`` unless ``out_path``'s claim is this build's.

    ``claimed``: the launcher claimed the directory before the pipeline ran; then a
    missing claim means the launcher released it (the build was interrupted or failed)
    and a worker still finishing must not take it again and publish. Without any claim
    and without a launcher's (``UnitBuild`` composed into a pipeline without
    ``preflight.check``), the build claims the directory now.
    """
    found = read(out_path)
    if found is None:
        if claimed:
            raise claimed_error(out_path, {"run_id": run_id}, status="released")
        claim_unclaimed(out_path, run_id)
        return
    if found.get("run_id") != run_id:
        raise claimed_error(out_path, found, status="replaced" if not storage.is_local(out_path) else None)


def claim_unclaimed(out_path: str, run_id: str) -> None:
    """Claim a directory this build has written to without a claim (a composed ``UnitBuild``)."""
    path = layout.claim_path(out_path)
    if storage.is_local(out_path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise claimed_error(out_path, read(out_path)) from None
        try:
            os.write(fd, _claim_bytes(run_id))
        finally:
            os.close(fd)
        return
    storage.write_bytes(path, _claim_bytes(run_id))


def release(out_path: str, run_id: str) -> None:
    """Remove the claim if it is this build's (the last step of publishing)."""
    if owns(out_path, run_id):
        storage.delete(layout.claim_path(out_path))


# --------------------------------------------------------------------------- versioned roots


def claim_root(root: str, run_id: str, settle: float = SETTLE_SECONDS) -> None:
    """Make the versioned ``root`` this build's until it has moved ``LATEST``.

    Two builds into one root would each publish ``ROOT/<id>/`` and then move ``LATEST``
    in the order they finish, so an older build could move it back. The second build
    now stops before it starts, naming the first (``OutputClaimedError``). A root claim
    left by a build whose process is gone from this host is taken over: the root's
    builds keep their own claims and markers, nothing in them depends on it.
    """
    path = storage.join(root, names.ROOT_CLAIM)
    if storage.is_local(root):
        try:
            os.makedirs(root, exist_ok=True)
            _create_exclusive(path, run_id)
        except FileExistsError:
            found = _read_claim(path)
            if found is None or _status(found) != "gone":
                raise claimed_error(root, found) from None
            storage.write_bytes(path, _claim_bytes(run_id))      # replaced whole (a rename)
            if (_read_claim(path) or {}).get("run_id") != run_id:
                raise claimed_error(root, _read_claim(path)) from None
            return
        except OSError as exc:
            raise _unwritable(root, exc) from None
        return
    found = _read_claim(path)
    if found is not None:
        raise claimed_error(root, found)
    storage.write_bytes(path, _claim_bytes(run_id))
    time.sleep(settle)
    found = _read_claim(path)
    if (found or {}).get("run_id") != run_id:
        raise claimed_error(root, found, status="replaced")


def check_root_owned(root: str, run_id: str) -> None:
    """Raise unless ``root`` is still claimed by this build (before ``LATEST`` moves)."""
    found = _read_claim(storage.join(root, names.ROOT_CLAIM))
    if (found or {}).get("run_id") != run_id:
        raise claimed_error(root, found or {"run_id": run_id}, status="released" if found is None else "replaced")


def release_root(root: str, run_id: str) -> None:
    path = storage.join(root, names.ROOT_CLAIM)
    if (_read_claim(path) or {}).get("run_id") == run_id:
        storage.delete(path)
