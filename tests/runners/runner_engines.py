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


# --------------------------------------------------------------------------- clusters

FLINK_CONFIG = """\
jobmanager.rpc.address: localhost
jobmanager.rpc.port: {rpc}
jobmanager.bind-host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
taskmanager.host: localhost
rest.address: localhost
rest.bind-address: 127.0.0.1
rest.port: {rest}
blob.server.port: 0
jobmanager.memory.process.size: 1024m
taskmanager.memory.process.size: 1280m
taskmanager.numberOfTaskSlots: 1
parallelism.default: {taskmanagers}
"""


class FlinkCluster:
    """A standalone Flink cluster from a distribution's own scripts: ``bin/jobmanager.sh
    start-foreground`` and ``bin/taskmanager.sh start-foreground`` as separate processes
    (one slot each), with their own configuration and log directories under ``workdir``."""

    def __init__(self, home: Path, workdir: Path, taskmanagers: int = 2):
        self.home, self.workdir, self.taskmanagers = Path(home), Path(workdir), taskmanagers
        self.rest = free_port()
        self.procs: list = []

    @property
    def master(self) -> str:
        return f"localhost:{self.rest}"

    def __enter__(self) -> "FlinkCluster":
        conf, logs = self.workdir / "conf", self.workdir / "log"
        conf.mkdir(parents=True, exist_ok=True)
        logs.mkdir(exist_ok=True)
        for f in self.home.joinpath("conf").glob("log4j*.properties"):
            shutil.copy(f, conf / f.name)
        config = FLINK_CONFIG.format(rpc=free_port(), rest=self.rest, taskmanagers=self.taskmanagers)
        opens = self._java_opts()
        if opens:   # the distribution's --add-opens, which Flink needs on Java 17
            config += f"env.java.opts.all: {json.dumps(opens)}\n"
        (conf / "config.yaml").write_text(config)
        env = {**os.environ, "FLINK_CONF_DIR": str(conf), "FLINK_LOG_DIR": str(logs)}
        if java() and not os.environ.get("JAVA_HOME"):
            env["JAVA_HOME"] = str(Path(os.path.realpath(java())).parents[1])
        try:
            self._start("jobmanager", env)
            wait_for_port(self.rest, self.procs[0], "the Flink JobManager", timeout=120)
            for k in range(self.taskmanagers):
                self._start("taskmanager", env, k)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if rest_json(f"http://127.0.0.1:{self.rest}/overview")["taskmanagers"] == self.taskmanagers:
                        return self
                except OSError:
                    pass
                time.sleep(1)
            raise RuntimeError(f"{self.taskmanagers} TaskManagers did not register within 120 s")
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _java_opts(self) -> str:
        import yaml

        try:
            found = yaml.safe_load((self.home / "conf" / "config.yaml").read_text()) or {}
            return str(found.get("env.java.opts.all") or found["env"]["java"]["opts"]["all"])
        except (OSError, KeyError, TypeError, yaml.YAMLError):
            return ""

    def _start(self, role: str, env: dict, k: int = 0) -> None:
        log = open(self.workdir / f"{role}-{k}.out", "wb")
        self.procs.append(subprocess.Popen([str(self.home / "bin" / f"{role}.sh"), "start-foreground"],
                                           stdout=log, stderr=subprocess.STDOUT, env=env))
        log.close()

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):
            stop(proc)

    def job_taskmanagers(self) -> dict:
        """``{job id: {TaskManager ids that ran a subtask which read records}}`` of every job."""
        base = f"http://127.0.0.1:{self.rest}"
        out = {}
        for job in rest_json(f"{base}/jobs")["jobs"]:
            ran = set()
            for vertex in rest_json(f"{base}/jobs/{job['id']}")["vertices"]:
                tms = rest_json(f"{base}/jobs/{job['id']}/vertices/{vertex['id']}/taskmanagers")
                for tm in tms.get("taskmanagers", []):
                    if (tm.get("metrics") or {}).get("read-records", 0) > 0:
                        ran.add(tm.get("taskmanager-id") or tm.get("host"))
            out[job["id"]] = ran
        return out


def spark_distribution() -> Optional[Path]:
    """A Spark 3 distribution (``bin/spark-class``, ``jars/``) under the cache (``spark-3.*``)."""
    for home in sorted(glob.glob(str(CACHE / "spark-3.*")), reverse=True):
        if os.access(os.path.join(home, "bin", "spark-class"), os.X_OK) and os.path.isdir(os.path.join(home, "jars")):
            return Path(home)
    return None


class SparkCluster:
    """A Spark standalone cluster from a distribution's ``bin/spark-class``: one Master and
    ``workers`` Workers (one core, 1 GiB each) as separate processes, on loopback."""

    def __init__(self, home: Path, workdir: Path, workers: int = 2):
        self.home, self.workdir, self.workers = Path(home), Path(workdir), workers
        self.port, self.ui = free_port(), free_port()
        self.worker_uis = [free_port() for _ in range(workers)]
        self.procs: list = []

    @property
    def master(self) -> str:
        return f"spark://localhost:{self.port}"

    def __enter__(self) -> "SparkCluster":
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPARK_HOME": str(self.home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOG_DIR": str(self.workdir), "SPARK_WORKER_DIR": str(self.workdir / "work")}
        try:
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "localhost",
                                   "--port", str(self.port), "--webui-port", str(self.ui)], env)
            wait_for_port(self.port, self.procs[0], "the Spark master", timeout=120)
            for k, ui in enumerate(self.worker_uis):
                self._start(f"worker-{k}", ["org.apache.spark.deploy.worker.Worker", "--host", "localhost",
                                            "--cores", "1", "--memory", "1g", "--webui-port", str(ui),
                                            self.master], env)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    alive = [w for w in rest_json(f"http://127.0.0.1:{self.ui}/json/")["workers"]
                             if w.get("state") == "ALIVE"]
                    if len(alive) == self.workers:
                        return self
                except OSError:
                    pass
                time.sleep(1)
            raise RuntimeError(f"{self.workers} Spark workers did not register within 120 s")
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _start(self, name: str, args: list, env: dict) -> None:
        log = open(self.workdir / f"{name}.out", "wb")
        self.procs.append(subprocess.Popen([str(self.home / "bin" / "spark-class"), *args],
                                           stdout=log, stderr=subprocess.STDOUT, env=env))
        log.close()

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):
            stop(proc)

    def executors_per_worker(self) -> list:
        """For each Worker, the application ids of the executors it ran (running or finished)."""
        out = []
        for ui in self.worker_uis:
            state = rest_json(f"http://127.0.0.1:{ui}/json/")
            out.append({e.get("appid") for e in state.get("executors", []) + state.get("finishedexecutors", [])})
        return out
