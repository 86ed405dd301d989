"""Where the real engines' pieces are cached, the flags that use them, and small process helpers.

Nothing here downloads: ``tools/fetch_runners.sh`` fetches into the cache (default
``~/.cache/mintdim-beam``, or ``$MINTDIM_BEAM_CACHE``), and each finder returns what is
missing instead, which the tests turn into a skip and the benchmark into an error:

* Prism: ``prism-<beam version>/prism``, built from Beam's Go module of the installed
  Beam version (``go install github.com/apache/beam/sdks/v2/go/cmd/prism@v<version>``);
* Flink: ``jars/beam-runners-flink-<flink>-job-server-<beam version>.jar`` for any Flink
  version Beam supports, and for a cluster a Flink distribution under ``flink-<version>/``;
* Spark: ``jars/beam-runners-spark-3-job-server-<beam version>.jar``.

Every process started here listens on loopback only.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

import apache_beam

BEAM_VERSION = apache_beam.__version__
CACHE = Path(os.environ.get("MINTDIM_BEAM_CACHE") or Path.home() / ".cache" / "mintdim-beam")
JARS = CACHE / "jars"
#: Flink versions whose job server Beam publishes, newest first (Beam 2.77: 1.19 to 2.2).
FLINK_VERSIONS = ("2.2", "2.1", "2.0", "1.20", "1.19")
FETCH = "tools/fetch_runners.sh"


def prism_binary() -> Path:
    return CACHE / f"prism-{BEAM_VERSION}" / "prism"


def prism_flags() -> tuple[list, Optional[str]]:
    """The Beam flags of a Prism build (LOOPBACK workers, Beam's default for Prism), or
    what is missing."""
    binary = prism_binary()
    if not os.access(binary, os.X_OK):
        return [], f"no Prism binary at {binary} (built by {FETCH} with Go)"
    return ["--runner=PrismRunner", f"--prism_location={binary}"], None


def java() -> Optional[str]:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def flink_job_server_jar() -> tuple[Optional[Path], Optional[str]]:
    """The newest cached Flink job server jar of this Beam version, with its Flink version."""
    for flink in FLINK_VERSIONS:
        jar = JARS / f"beam-runners-flink-{flink}-job-server-{BEAM_VERSION}.jar"
        if jar.is_file():
            return jar, flink
    return None, None


def spark_job_server_jar() -> Optional[Path]:
    jar = JARS / f"beam-runners-spark-3-job-server-{BEAM_VERSION}.jar"
    return jar if jar.is_file() else None


def _java_missing() -> Optional[str]:
    return None if java() else "no java on PATH (nor JAVA_HOME)"


def flink_local_flags() -> tuple[list, Optional[str]]:
    """An embedded Flink ([local] mini cluster inside the job server) with LOOPBACK workers."""
    missing = _java_missing()
    jar, flink = flink_job_server_jar()
    if jar is None:
        missing = missing or (f"no Beam {BEAM_VERSION} Flink job server jar under {JARS} "
                              f"(beam-runners-flink-<{'|'.join(FLINK_VERSIONS)}>-job-server; {FETCH})")
    if missing:
        return [], missing
    return ["--runner=FlinkRunner", "--flink_master=[local]", f"--flink_version={flink}",
            f"--flink_job_server_jar={jar}", "--environment_type=LOOPBACK", "--parallelism=2"], None


def spark_local_flags() -> tuple[list, Optional[str]]:
    """Spark in local mode inside the job server, LOOPBACK workers."""
    missing = _java_missing()
    jar = spark_job_server_jar()
    if jar is None:
        missing = missing or (f"no Beam {BEAM_VERSION} Spark job server jar under {JARS} "
                              f"(beam-runners-spark-3-job-server; {FETCH})")
    if missing:
        return [], missing
    return ["--runner=SparkRunner", "--spark_master_url=local[2]", f"--spark_job_server_jar={jar}",
            "--environment_type=LOOPBACK"], None


def flink_distribution() -> Optional[Path]:
    """A Flink distribution (``bin/jobmanager.sh``, ``lib/flink-dist*.jar``) under the cache."""
    for home in sorted(glob.glob(str(CACHE / "flink-*")), reverse=True):
        if os.path.isfile(os.path.join(home, "bin", "jobmanager.sh")) and glob.glob(
                os.path.join(home, "lib", "flink-dist*.jar")):
            return Path(home)
    return None


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: Optional[subprocess.Popen], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    """End a process this test started (its own process group when it made one)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def worker_pool(log) -> tuple[subprocess.Popen, int]:
    """Beam's Python worker pool as its own process (what runs beside a cluster's workers)."""
    port = free_port()
    # The pool starts each SDK harness as "python -c ...": this interpreter's first on PATH.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    wait_for_port(port, proc, "the worker pool")
    return proc, port


def rest_json(url: str, timeout: float = 10.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:   # loopback only
        return json.loads(r.read())


def cli(*argv, env: Optional[dict] = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """``mintdim-beam ARGV`` in a fresh interpreter (this checkout first on the path)."""
    root = str(Path(__file__).resolve().parents[2])
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = root + os.pathsep + full.get("PYTHONPATH", "") if full.get("PYTHONPATH") else root
    return subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", *argv], capture_output=True,
                          text=True, env=full, timeout=timeout)
