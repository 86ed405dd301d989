"""Worker processes started ahead of Beam for the local multi-process runner.

Beam's FnApiRunner starts its worker processes only when the pipeline runs; each then
spends about a second importing Beam and the build's modules before it takes work,
after the launcher has spent as long importing Beam itself. At the end the runner stops
the workers one after the other, waiting each time for an interpreter to exit. On a
100 MB build that is 1.5 s of a 5-8 s run (measured on two cores).

A :class:`WarmPool` starts the worker interpreters first, so that they import while the
launcher does, and lends each one to Beam through a tiny shim command
(``warm_shim.py``): Beam runs the shim as its worker subprocess; the shim claims a
waiting warm process, passes it its environment (the runner's control, logging and
options endpoints) and exits with the worker's status as soon as the worker's harness
has returned, while that process winds down on its own time. When no warm process is
left, or anything about the hand-over fails before the harness starts, the shim runs
Beam's own worker instead: the pool changes when work starts, never what is done.

Local and POSIX only (Unix sockets); the launcher uses it only for the multi-process
configuration it picks by default. This module does not import Beam: a pool starts
before Beam is imported (``mintdim_beam.run`` and ``mintdim-beam build``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from typing import Optional

#: Inputs at least this large run on one worker process per core by default
#: (``launcher.choose_local_mode``).
MULTI_PROCESS_MIN_BYTES = 64 * 1024 * 1024
#: Runner names the launcher maps to the local FnApiRunner.
LOCAL_RUNNERS = (None, "DirectRunner", "FnApiRunner", "direct")
#: Claimed sockets are renamed with this suffix (the claim is the atomic rename).
CLAIMED = ".claimed"
#: How often a waiting warm process checks that its launcher is still alive.
POLL_SECONDS = 0.2
# Not ``-m mintdim_beam.warm_workers``: the package imports this module itself.
_WARM_MAIN = "import sys; from mintdim_beam.warm_workers import serve; sys.exit(serve(sys.argv[1], int(sys.argv[2])))"
_SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_shim.py")


#: Set to 0 to start the local runner's workers the usual way (Beam's own command).
ENV_SWITCH = "MINTDIM_WARM_WORKERS"

#: glibc malloc arenas per warm worker (``MALLOC_ARENA_MAX``, read by glibc at process
#: start; other C libraries ignore it; a value already in the environment is kept).
#: glibc's default, 8 per core, lets a worker's peak memory creep up as a build grows
#: (generated corpus x1 -> x4: tree RSS +16%); with 3 it is +9%, at no cost on real text
#: and up to 8% more time on the UNK-heavy generated corpus (docs/decisions.md).
MALLOC_ARENAS = "3"


def worker_environment() -> dict:
    """The warm workers' environment: the launcher's, with ``MALLOC_ARENA_MAX`` set."""
    env = dict(os.environ)
    env.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    return env


def supported() -> bool:
    return (os.name == "posix" and hasattr(socket, "AF_UNIX")
            and os.environ.get(ENV_SWITCH, "1").strip() not in ("0", "false", "no", "off"))


class WarmPool:
    """``size`` warm worker processes, each waiting on its own Unix socket."""

    def __init__(self, size: int):
        self.size = size
        self.directory = tempfile.mkdtemp(prefix="mintdim-warm-")
        self.processes: list[subprocess.Popen] = []
        try:
            for i in range(size):
                path = os.path.join(self.directory, f"w{i}.sock")
                self.processes.append(subprocess.Popen(
                    [sys.executable, "-c", _WARM_MAIN, path, str(os.getpid())], stdin=subprocess.DEVNULL,
                    env=worker_environment()))
        except OSError:
            self.close(wait=True)
            raise

    def command(self) -> str:
        """The worker command line for Beam's subprocess environment."""
        # -I: the shim needs only the standard library, and isolation keeps its own
        # directory (this package) off sys.path.
        return " ".join(shlex.quote(a) for a in (sys.executable, "-I", _SHIM, self.directory))

    def close(self, wait: bool = False) -> None:
        """Stop the processes no worker claimed; let the others finish exiting.

        Claimed processes have reported their harness's end already and only wind down;
        they are reaped on a daemon thread (or here with ``wait``) so none is left a
        zombie. The socket directory goes too.
        """
        for i, proc in enumerate(self.processes):
            claimed = os.path.exists(os.path.join(self.directory, f"w{i}.sock{CLAIMED}"))
            if not claimed and proc.poll() is None:   # waiting, or not even listening yet
                proc.terminate()
        procs = list(self.processes)

        def reap():
            for proc in procs:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

        if wait:
            reap()
        else:
            threading.Thread(target=reap, name="warm-workers-reap", daemon=True).start()
        shutil.rmtree(self.directory, ignore_errors=True)


def start(processes: int) -> Optional[WarmPool]:
    """A pool of ``processes`` warm workers, or None where pools are not supported."""
    if processes < 1 or not supported() or not sys.executable:
        return None
    try:
        return WarmPool(processes)
    except OSError:   # cannot start interpreters here: Beam starts its workers as usual
        return None


def start_for(config, runner=None, options=None) -> Optional[WarmPool]:
    """The pool a local build will use (see :func:`wanted`), started now, or None."""
    paths = [f.path for f in config.files]
    if any("://" in p for p in paths):
        return None
    try:
        total = sum(os.path.getsize(p) for p in paths)
    except OSError:
        return None   # the launcher reports missing inputs
    return start(wanted(total, runner, options))


def default_processes(total_input_bytes: int) -> int:
    """Worker processes of the default local configuration: one per core from
    ``MULTI_PROCESS_MIN_BYTES`` of input on a multi-core machine, else 0 (in memory)."""
    cores = os.cpu_count() or 1
    return cores if cores > 1 and total_input_bytes >= MULTI_PROCESS_MIN_BYTES else 0


def wanted(total_input_bytes: int, runner, options) -> int:
    """Worker processes the launcher's default will use, judged before Beam is imported.

    Mirrors ``launcher.choose_local_mode`` for the cases it can see without Beam: a
    local runner (or none), and no options or a list of flags that names no other
    runner and no direct mode or worker count. Anything else gets no pool (the
    launcher decides as usual, and closes a pool it does not use).
    """
    if runner not in LOCAL_RUNNERS:
        return 0
    if options is not None:
        if not isinstance(options, (list, tuple)):
            return 0
        flags = [str(f) for f in options]
        for k, flag in enumerate(flags):
            name, _, value = flag.lstrip("-").partition("=")
            if name == "runner":
                value = value or (flags[k + 1] if k + 1 < len(flags) else "")
                if value not in LOCAL_RUNNERS:
                    return 0
            elif name in ("direct_running_mode", "direct_num_workers", "environment_type",
                          "environment_config"):
                return 0
    return default_processes(total_input_bytes)


def _read_env(conn: socket.socket) -> dict:
    chunks = []
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return json.loads(b"".join(chunks).decode("utf-8"))


def serve(path: str, parent: int) -> int:
    """A warm worker: listen first, import, then run one harness for whoever claims us."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        server.listen(1)
    except OSError:   # e.g. a socket path too long here: no socket, so no shim waits for us
        return 1
    # The harness sends its log records to the runner, which logs them in the launcher
    # under the launcher's settings; a handler here keeps Python from also printing
    # them (and Beam's import-time warnings) on this terminal through its implicit
    # default handler.
    import logging

    logging.getLogger().addHandler(logging.NullHandler())
    # What a build's worker needs before its first bundle: Beam's harness, the build's
    # DoFns (unpickled from the runner's descriptors) and both tokenizer libraries.
    from apache_beam.runners.worker import sdk_worker_main
    import sentencepiece  # noqa: F401
    import tokenizers  # noqa: F401

    from . import transforms  # noqa: F401

    server.settimeout(POLL_SECONDS)
    while True:
        try:
            conn, _ = server.accept()
            break
        except socket.timeout:
            if os.getppid() != parent:   # the launcher is gone: nobody will claim us
                _remove(path)
                return 0
    server.close()
    conn.settimeout(None)
    try:
        env = _read_env(conn)
    except (OSError, ValueError):
        return 1
    os.environ.clear()
    os.environ.update(env)
    code = 0
    try:
        sdk_worker_main.main([])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # the harness logged it; the shim reports the failure to Beam
        traceback.print_exc()
        code = 1
    try:
        conn.sendall(str(code).encode("ascii"))
        conn.close()
    except OSError:
        pass
    if os.getppid() != parent:   # the launcher died during the build: tidy up after it
        _remove(path + CLAIMED)
    return code


def _remove(socket_path: str) -> None:
    """Remove a socket file, and the pool's directory once it is empty."""
    try:
        os.unlink(socket_path)
        os.rmdir(os.path.dirname(socket_path))
    except OSError:
        pass

