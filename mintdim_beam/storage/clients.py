"""How the storage layer reaches object stores: Beam's file-system options, and the
clients made from them.

``configure`` hands a job's file-system settings (S3 endpoint and keys, GCS project,
...) to Beam's public ``FileSystems.set_options``, on the launcher and in every DoFn's
``setup()`` (the Dask runner does not configure its workers). The same settings make
this thread's ``s3://`` and ``gs://`` clients, which the fast paths of :mod:`.files`,
:mod:`.s3` and :mod:`.compose` use. Beam is imported inside the functions only.
"""

from __future__ import annotations

import threading

# Option classes that configure file systems (S3 endpoint and keys, GCS project, ...).
FILESYSTEM_OPTION_CLASSES = ("S3Options", "GoogleCloudOptions", "HadoopFileSystemOptions", "AzureOptions")


_thread_clients = threading.local()     # this thread's S3 and GCS clients (each costly to make)


# The file-system options last given to FileSystems by configure() (FileSystems keeps
# its own copy privately): they also build the s3:// clients of s3_client().
_options = None


def filesystem_options(options) -> dict:
    """The file-system settings among a pipeline's options, as a plain dict.

    DoFns carry this dict and call :func:`configure` in ``setup()``: runners that start
    workers through Beam's SDK harness configure ``FileSystems`` themselves, the Dask
    runner does not, and ``s3://`` with a custom endpoint would otherwise go to AWS.
    """
    from apache_beam.options import pipeline_options as po

    found = {}
    for name in FILESYSTEM_OPTION_CLASSES:
        cls = getattr(po, name, None)
        if cls is not None:
            found.update(options.view_as(cls).get_all_options(drop_default=True, current_only=True))
    return {k: v for k, v in found.items() if v is not None}


def filesystem_option_names() -> set:
    """The names of every file-system option Beam knows (``s3_endpoint_url``, ...)."""
    from apache_beam.options import pipeline_options as po

    empty = po.PipelineOptions([])
    return {name for cls in FILESYSTEM_OPTION_CLASSES if getattr(po, cls, None) is not None
            for name in empty.view_as(getattr(po, cls)).get_all_options(current_only=True)}


def configure(options) -> None:
    """Give ``FileSystems`` the file-system settings in ``options``.

    ``options``: a ``PipelineOptions``, a list of Beam flags, or a dict from
    :func:`filesystem_options` (None: nothing to do). The launcher calls it before it
    touches any file; DoFns call it in ``setup()`` with the pipeline's settings, since
    the Dask runner does not configure its workers' ``FileSystems`` (and a long-lived
    Dask worker may hold another job's). The settings are applied through Beam's public
    ``FileSystems.set_options``; the same options also make this module's ``s3://``
    clients (:func:`_s3`). Settings already in force are not set again; none given,
    where none were set here, leave what the runner configured alone.
    """
    from apache_beam.options.pipeline_options import PipelineOptions

    global _options
    if options is None:
        return
    if isinstance(options, dict):
        options = PipelineOptions.from_dictionary(options)
    elif isinstance(options, (list, tuple)):
        options = PipelineOptions(list(options))
    settings = filesystem_options(options)
    if settings == (filesystem_options(_options) if _options is not None else {}):
        return   # already in force (or none given and none set here)
    _options = PipelineOptions.from_dictionary(settings)
    from apache_beam.io.filesystems import FileSystems

    FileSystems.set_options(_options)


def configured_options():
    """The file-system options last given to :func:`configure` (None: none yet)."""
    return _options


def is_s3(path: str) -> bool:
    return path.startswith("s3://")


#: The retry budget of one ``s3://`` request made here (every request of a build's
#: own S3 access, publishing included): at most this many attempts, botocore's
#: ``standard`` mode retrying 5xx answers, throttling and dropped connections after a
#: random wait of at most 1, 2 then 4 s. Beam's own S3 calls retry a 500 for minutes
#: (its backoff on top of boto3's); a store that keeps failing is a job error here in
#: seconds, with the store's answer (``errors.StoreRequestError``; docs/decisions.md).
S3_ATTEMPTS = 4
#: Seconds to open a connection, and to wait for an answer, per attempt. The answer's
#: wait is botocore's default: a server-side copy of a large object answers only once done.
S3_CONNECT_TIMEOUT = 10
S3_READ_TIMEOUT = 60


def s3_settings(options) -> dict:
    """The boto3 client arguments of a job's ``S3Options`` (endpoint, keys, region,
    TLS), as Beam's own S3 client takes them. ``options``: as for :func:`configure`."""
    from apache_beam.options.pipeline_options import PipelineOptions, S3Options

    if options is None:
        options = PipelineOptions([])
    elif isinstance(options, dict):
        options = PipelineOptions.from_dictionary(options)
    elif isinstance(options, (list, tuple)):
        options = PipelineOptions(list(options))
    s3 = options.view_as(S3Options)
    return {
        "region_name": s3.s3_region_name, "api_version": s3.s3_api_version,
        "use_ssl": not s3.s3_disable_ssl, "verify": s3.s3_verify, "endpoint_url": s3.s3_endpoint_url,
        "aws_access_key_id": s3.s3_access_key_id, "aws_secret_access_key": s3.s3_secret_access_key,
        "aws_session_token": s3.s3_session_token,
    }


def s3_client():
    """This thread's boto3 ``s3`` client, made from the options last configured here as
    Beam's S3 file system makes its own, but with the bounded retry budget above
    (``S3_ATTEMPTS``, ``S3_CONNECT_TIMEOUT``, ``S3_READ_TIMEOUT``): every ``s3://``
    request of :mod:`.s3`, :mod:`.files` and :mod:`.compose` goes through it."""
    import boto3
    from botocore.config import Config

    options = _options
    cached = getattr(_thread_clients, "s3", None)
    if cached is None or cached[0] is not options:
        config = Config(connect_timeout=S3_CONNECT_TIMEOUT, read_timeout=S3_READ_TIMEOUT,
                        retries={"total_max_attempts": S3_ATTEMPTS, "mode": "standard"})
        cached = (options, boto3.session.Session().client("s3", config=config, **s3_settings(options)))
        _thread_clients.s3 = cached
    return cached[1]


def gcs_client():
    """A ``google.cloud.storage`` client made as Beam's GCS file system makes its own
    (``gcsio.GcsIO`` from the options last configured here: the job's project and
    credentials), for server-side composition (``compose``); None where Beam's GCS
    support (``apache-beam[gcp]``) is not installed."""
    from apache_beam.options.pipeline_options import PipelineOptions

    try:
        from apache_beam.io.gcp import gcsio
    except ImportError:
        return None
    options = _options
    cached = getattr(_thread_clients, "gcs", None)
    if cached is None or cached[0] is not options:
        cached = (options, gcsio.GcsIO(pipeline_options=options if options is not None else PipelineOptions([])).client)
        _thread_clients.gcs = cached
    return cached[1]
