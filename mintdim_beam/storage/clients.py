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


_thread_clients = threading.local()     # this thread's S3IO and GCS client (each costly to make)


# The file-system options last given to FileSystems by configure() (FileSystems keeps
# its own copy privately): they also build the s3:// clients of thread_s3io().
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


def thread_s3io():
    """Beam's ``S3IO`` for this thread, built from the options last configured here."""
    from apache_beam.io.aws import s3io
    from apache_beam.io.aws.clients.s3 import boto3_client
    from apache_beam.options.pipeline_options import PipelineOptions

    options = _options
    cached = getattr(_thread_clients, "entry", None)
    if cached is None or cached[0] is not options:
        client = boto3_client.Client(options=options if options is not None else PipelineOptions([]))
        cached = (options, s3io.S3IO(client=client))
        _thread_clients.entry = cached
    return cached[1]


def s3_client():
    """The boto3 client of this thread's ``S3IO`` (for server-side copies: ``compose``)."""
    return thread_s3io().client.client


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
