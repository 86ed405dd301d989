"""Fixtures for the tests that reach a remote store or a cluster, shared by every folder.

``tests/conftest.py`` imports them, so a test in any folder asks for them by name (and
gets the ``remote`` marker for it, see ``conftest.REMOTE_FIXTURES``):

* ``s3_remote``: moto's S3 server started on 127.0.0.1 in its own process, one per
  test module; Beam's AWS file system reaches it through ``--s3_endpoint_url``.
* ``gs_remote``: a real ``gs://`` prefix named by ``MINTDIM_TEST_GCS_ROOT`` (skipped
  otherwise); ``remote`` is either one, as a parameter.
* ``dask_cluster``: a local ``dask.distributed`` cluster of ``N_WORKERS`` worker
  processes, one per test module.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
BUCKET = "mintdim-test"
N_WORKERS = 3


def worker_pool_env() -> dict:
    """The environment for Beam's ``worker_pool_main``: it starts each SDK worker as
    ``python`` from ``PATH``, which must be this interpreter (a virtualenv's)."""
    return {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}


@dataclass
class Remote:
    """A writable remote prefix and the Beam flags that reach it."""

    root: str
    options: list = field(default_factory=list)
    s3_client: object = None      # boto3 client for test I/O; None: Beam FileSystems
    request_log: Path = None      # the S3 server's log: one line per request it answered

    def requests(self) -> list:
        """``(method, path)`` of every request the server logged so far."""
        found = []
        # Werkzeug >= 3.1.9 styles non-200 lines with ANSI colours even into a file.
        text = _ANSI.sub("", self.request_log.read_text(errors="replace"))
        for line in text.splitlines():
            if '"' in line and " HTTP/1." in line:
                method, _, rest = line.split('"', 2)[1].partition(" ")
                found.append((method, rest.rsplit(" HTTP/1.", 1)[0]))
        return found

    def configure(self):
        from apache_beam.io.filesystems import FileSystems
        from apache_beam.options.pipeline_options import PipelineOptions

        FileSystems.set_options(PipelineOptions(self.options))

    def upload(self, local: str, name: str) -> str:
        path = f"{self.root}/{name}"
        if self.s3_client is not None:
            bucket, key = path[len("s3://"):].split("/", 1)
            self.s3_client.put_object(Bucket=bucket, Key=key, Body=Path(local).read_bytes())
            return path
        from apache_beam.io.filesystems import FileSystems

        self.configure()
        with FileSystems.create(path) as f:
            f.write(Path(local).read_bytes())
        return path

    def download_tree(self, directory: str) -> dict:
        """``{relpath: bytes}`` of every object below ``directory``."""
        prefix = directory.rstrip("/") + "/"
        found = {}
        if self.s3_client is not None:
            bucket, key_prefix = prefix[len("s3://"):].split("/", 1)
            pages = self.s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key_prefix)
            for page in pages:
                for item in page.get("Contents", []):
                    body = self.s3_client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                    found[item["Key"][len(key_prefix):]] = body
            return found
        from apache_beam.io.filesystems import FileSystems

        self.configure()
        for m in FileSystems.match([prefix + "**"])[0].metadata_list:
            with FileSystems.open(m.path) as f:
                found[m.path[len(prefix):]] = f.read() if m.size_in_bytes else b""
        return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3_remote(tmp_path_factory):
    """moto's S3 server in its own process (in a thread it would share our GIL)."""
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    import boto3

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto") / "requests.log"
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    try:
        keys = dict(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
        client = boto3.client("s3", endpoint_url=endpoint, **keys)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield Remote(f"s3://{BUCKET}/mintdim", [
            f"--s3_endpoint_url={endpoint}", "--s3_access_key_id=testing",
            "--s3_secret_access_key=testing", "--s3_region_name=us-east-1",
        ], client, log)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def gs_remote():
    root = os.environ.get("MINTDIM_TEST_GCS_ROOT")
    if not root:
        pytest.skip("set MINTDIM_TEST_GCS_ROOT=gs://bucket/prefix to run the GCS cases")
    pytest.importorskip("apache_beam.io.gcp.gcsfilesystem")
    return Remote(f"{root.rstrip('/')}/{uuid.uuid4().hex[:8]}")


@pytest.fixture(params=["s3", "gs"])
def remote(request) -> Remote:
    return request.getfixturevalue(f"{request.param}_remote")


@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    yield cluster
    cluster.close()
