"""Fail fast when an object store named by the job cannot be reached.

Beam's file systems retry a failing call with exponential backoff: a wrong
``--s3_endpoint_url`` or a refused key shows only after about ten minutes of retries,
on the launcher and again on every worker. :func:`check` asks each bucket once, with
a short deadline and no retries beyond one, before anything else touches it, and
raises :class:`~mintdim_beam.errors.StorageAccessError` naming the path and the
option to fix. The launcher runs it before its own checks, and every DoFn that
touches storage runs it in ``setup()`` (a worker may see another network, or other
credentials, than the launcher).

Only answers that say the options are wrong stop the build: no connection, keys that
do not exist or do not sign, another region, a bucket that does not exist. A key that
is valid but lacks a permission (``AccessDenied``) is left to the build itself: the
probe lists a prefix, which a job may legitimately not be allowed to do while it can
still read and write its objects.

``s3://`` is probed with boto3, built from the same ``S3Options`` as Beam's own
client, plus a bounded ``botocore`` ``Config``. ``gs://`` has no such knob through
Beam's options, so its probe (``FileSystems.exists``) runs on a thread that the check
waits for a bounded time. Other schemes are not probed.

The commands that read a dataset (``verify``, ``inspect``, ``plan``, ``report``,
``export``) run the same check on the paths they were given, with their file-system
flags, and the reader runs :func:`check_dataset` when it opens a remote directory: a
wrong endpoint is the same message there, in seconds, instead of a hang.
"""

from __future__ import annotations

import threading
from typing import Iterable, Optional

from mintdim_beam.errors import StorageAccessError
from mintdim_beam.storage import clients

#: Seconds to open a connection, and to wait for an answer, per attempt.
CONNECT_TIMEOUT = 5
READ_TIMEOUT = 10
#: Attempts per probe (one retry: a single dropped packet does not fail a build).
ATTEMPTS = 2
#: Seconds a ``gs://`` probe may take in all.
GCS_DEADLINE = 30

_CREDENTIAL_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
                     "TokenRefreshRequired", "InvalidClientTokenId"}
_REGION_CODES = {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException",
                 "301", "Redirect"}

# (scheme settings, bucket) pairs this process has reached: every DoFn's setup()
# checks, and the answer does not change within a build.
_reached: set = set()
_lock = threading.Lock()


def build_paths(config) -> list:
    """Every input, tokenizer and output path of a build (a pattern stands for its bucket)."""
    paths = [f.path for f in config.files]
    paths += [f.tokenizer.path for f in config.files]
    paths += [out.path for out in config.outputs]
    return list(dict.fromkeys(paths))


def _bucket_and_prefix(path: str) -> tuple:
    scheme, rest = path.split("://", 1)
    bucket, _, key = rest.partition("/")
    for i, ch in enumerate(key):      # a pattern: the part before its first wildcard
        if ch in "*?[":
            key = key[:i]
            break
    return scheme, bucket, key


def _probe_s3(path: str, bucket: str, prefix: str, settings: dict) -> None:
    import boto3
    from botocore import exceptions as bx
    from botocore.config import Config

    config = Config(connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
                    retries={"total_max_attempts": ATTEMPTS, "mode": "standard"})
    try:
        client = boto3.session.Session().client("s3", config=config, **settings)
        client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    except (bx.NoCredentialsError, bx.PartialCredentialsError) as exc:
        raise StorageAccessError(path, "credentials", str(exc)) from None
    except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError,
            bx.ConnectionClosedError, bx.SSLError) as exc:
        raise StorageAccessError(path, "endpoint", str(exc)) from None
    except ValueError as exc:         # a malformed endpoint URL
        raise StorageAccessError(path, "endpoint", str(exc)) from None
    except bx.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _CREDENTIAL_CODES:
            raise StorageAccessError(path, "credentials", str(exc)) from None
        if code in _REGION_CODES:
            raise StorageAccessError(path, "region", str(exc)) from None
        if code == "NoSuchBucket":
            raise StorageAccessError(path, "bucket", str(exc)) from None
        # AccessDenied and the rest: the store answered and the keys are valid.


def _probe_gcs(path: str, probe_path: str) -> None:
    _probe_filesystems(path, probe_path, "gcs", GCS_DEADLINE)


def _probe_filesystems(path: str, probe_path: str, problem: str, deadline: float) -> None:
    """Ask Beam's ``FileSystems`` (with whatever settings it holds) whether
    ``probe_path`` exists, on a thread waited for ``deadline`` seconds: its own retries
    go on in the background, the caller is told now."""
    from apache_beam.io.filesystems import FileSystems

    found: dict = {}

    def probe():
        try:
            FileSystems.exists(probe_path)
            found["ok"] = True
        except Exception as exc:      # what the store answered, reported below
            found["error"] = exc

    worker = threading.Thread(target=probe, name="storage-access-check", daemon=True)
    worker.start()
    worker.join(deadline)
    if "error" in found:
        raise StorageAccessError(path, problem, f"{type(found['error']).__name__}: {found['error']}")
    if "ok" not in found:
        raise StorageAccessError(path, problem, f"no answer within {deadline:g} s")


def check(paths: Iterable[str], options=None) -> None:
    """Reach the bucket of every remote path once; raise ``StorageAccessError`` for the
    first that cannot be reached.

    ``options``: the file-system settings (a ``PipelineOptions``, Beam flags, or the
    dict of ``storage.filesystem_options``) the build uses. ``gs://`` goes through
    ``FileSystems``, which must already be configured (``storage.configure``).
    """
    settings: Optional[dict] = None
    for path in paths:
        if "://" not in path:
            continue
        scheme, bucket, prefix = _bucket_and_prefix(path)
        if scheme == "s3":
            if settings is None:
                settings = clients.s3_settings(options)
            key = ("s3", tuple(sorted(settings.items())), bucket)
        elif scheme == "gs":
            key = ("gs", None, bucket)
        else:
            continue
        with _lock:
            if key in _reached:
                continue
        if scheme == "s3":
            _probe_s3(path, bucket, prefix, settings)
        else:
            _probe_gcs(path, f"gs://{bucket}/{prefix}")   # a pattern's fixed head
        with _lock:
            _reached.add(key)


#: Seconds the reader waits for a first answer from an ``s3://`` store whose settings
#: it was not given (``FileSystems`` was configured by the caller).
READER_DEADLINE = 20


def check_dataset(path: str, options=None) -> None:
    """Before the reader touches the dataset ``path``: reach its bucket once, or raise
    ``StorageAccessError``. Local paths pass.

    ``options`` (Beam file-system flags, a ``PipelineOptions`` or a dict) are given to
    ``FileSystems`` first (``storage.configure``) and probed as :func:`check` does.
    Without them, the settings last configured through ``storage.configure`` are
    probed; when there are none (the caller set ``FileSystems`` up itself), Beam's own
    ``FileSystems`` is asked for the manifest with a deadline, since its settings
    cannot be read back.
    """
    if "://" not in path:
        return

    if options is not None:
        clients.configure(options)
    else:
        options = clients.configured_options()
    if options is not None:
        check([path], options)
        return
    scheme, bucket, prefix = _bucket_and_prefix(path)
    if scheme == "s3":
        key = "/".join(k for k in (prefix.strip("/"), "manifest.json") if k)
        _probe_filesystems(path, f"s3://{bucket}/{key}", "endpoint", READER_DEADLINE)
    elif scheme == "gs":
        check([path])
