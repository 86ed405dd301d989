"""Worker processes started ahead of Beam for the local multi-process runner.

Beam's FnApiRunner starts its worker processes only when the pipeline runs; each then
spends about a second importing Beam and the build's modules before it takes work,
after the launcher has spent as long importing Beam itself. At the end the runner stops
the workers one after the other, waiting each time for an interpreter to exit. On a
100 MB build that is 1.5 s of a 5-8 s run (measured on two cores).

A :class:`WarmPool` starts one worker interpreter first, so that it imports while the
launcher does; once imported it forks the pool's other workers, which so cost no import
of their own (a second import of Beam is a second of CPU, on two cores half a second of
the build). It lends each worker to Beam through a tiny shim command
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

import contextlib
import gc
import json
import os
import select
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Optional, Sequence

from .cores import usable_cores
from .imports import collector_paused

#: Inputs at least this large run on one worker process per core by default
#: (``launcher.choose_local_mode``).
MULTI_PROCESS_MIN_BYTES = 64 * 1024 * 1024
#: Runner names the launcher maps to the local FnApiRunner.
LOCAL_RUNNERS = (None, "DirectRunner", "FnApiRunner", "direct")
#: Claimed sockets are renamed with this suffix (the claim is the atomic rename).
CLAIMED = ".claimed"
#: Sent to the shim just before the harness starts (then the exit status follows). A
#: shim that reads end of file without it knows no harness ran, and starts Beam's own
#: worker: the runner waits for a worker to connect and would otherwise wait forever.
STARTED = b"+"
#: How often a waiting warm process checks that its launcher is still alive.
POLL_SECONDS = 0.2
#: How long the runner's start waits for worker 0 to bind its sockets (it does so about
#: 0.2 s after it starts, before its imports). A process that imported Beam already gets
#: there first, and a worker that found no socket would be Beam's own (1 s of imports).
LISTEN_TIMEOUT = 2.0
# Not ``-m mintdim_beam.warm_workers``: the package imports this module itself.
_WARM_MAIN = ("import sys; from mintdim_beam.warm_workers import serve_pool; "
              "sys.exit(serve_pool(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))")
# The read end of a pipe whose write end only the launcher holds: it turns readable
# (end of file) when the launcher is gone, however it ended; forked workers share it.
_SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_shim.py")


#: The pool directory's list of tokenizers to load ahead (``_preload``).
PRELOAD = "preload.json"

#: Set to 0 to start the local runner's workers the usual way (Beam's own command).
ENV_SWITCH = "MINTDIM_WARM_WORKERS"

#: The warm workers' first-generation collection threshold (Python's default is 700).
#: A worker's allocations are mostly short-lived containers without cycles (parsed
#: lines, field tuples), each slice's freed before the next; at 700 net allocations a
#: collection ran every few hundred lines and walked the slice still alive (encoder
#: alone, generated corpus: 978 young collections, 0.27-0.30 s; real text 0.06 s). At
#: 10,000 it ran once per corpus.
GC_THRESHOLD0 = 10_000


def supported() -> bool:
    return (os.name == "posix" and hasattr(socket, "AF_UNIX")
            and os.environ.get(ENV_SWITCH, "1").strip() not in ("0", "false", "no", "off"))


class WarmPool:
    """``size`` warm worker processes, each waiting on its own Unix socket ``w<i>.sock``.

    ``process`` is the interpreter started here (worker 0, which forks the others);
    each worker writes its pid to ``w<i>.pid`` in :attr:`directory` when it is ready.
    """

    def __init__(self, size: int, preload: Sequence[tuple] = ()):
        self.size = size
        self.directory = tempfile.mkdtemp(prefix="mintdim-warm-")
        if preload:
            # (kind, path) of the build's tokenizers: each worker loads them while it
            # waits (see ``_preload``).
            with open(os.path.join(self.directory, PRELOAD), "w", encoding="utf-8") as f:
                json.dump([list(p) for p in preload], f)
        alive_r, self._alive_w = os.pipe()   # see _launcher_alive
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WARM_MAIN, self.directory, str(size), str(alive_r)],
                stdin=subprocess.DEVNULL, pass_fds=(alive_r,))
        except OSError:
            os.close(self._alive_w)
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        finally:
            os.close(alive_r)
        self.processes = [self.process]

    def wait_listening(self, timeout: float = LISTEN_TIMEOUT) -> bool:
        """Wait until worker 0 has bound every worker's socket, so that the runner's
        workers claim warm processes rather than fall back to Beam's; False if it
        exited first or ``timeout`` passed."""
        wanted = [f"w{i}.sock" for i in range(self.size)]
        deadline = time.monotonic() + timeout
        while True:
            try:
                present = set(os.listdir(self.directory))
            except OSError:
                return False
            if all(name in present or name + CLAIMED in present for name in wanted):
                return True
            if self.process.poll() is not None or time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def command(self) -> str:
        """The worker command line for Beam's subprocess environment."""
        # -I: the shim needs only the standard library, and isolation keeps its own
        # directory (this package) off sys.path; -S: nor does it need site-packages,
        # whose .pth files cost a start-up as much again (Beam's own worker, if the shim
        # falls back to it, is a new interpreter with the usual start-up).
        return " ".join(shlex.quote(a) for a in (sys.executable, "-I", "-S", _SHIM, self.directory))

    def close(self, wait: bool = False) -> None:
        """Stop the workers no build claimed; let the others finish exiting.

        Removing the socket directory is the signal for forked workers still waiting
        (they look every ``POLL_SECONDS``); worker 0 is stopped directly if unclaimed.
        Claimed workers have reported their harness's end already and only wind down;
        worker 0 is reaped on a daemon thread (or here with ``wait``), the forked ones
        by worker 0, so none is left a zombie.
        """
        claimed = os.path.exists(os.path.join(self.directory, f"w0.sock{CLAIMED}"))
        if not claimed and self.process.poll() is None:   # waiting, or not even listening yet
            self.process.terminate()
        shutil.rmtree(self.directory, ignore_errors=True)
        try:
            os.close(self._alive_w)
        except OSError:
            pass
        proc = self.process

        def reap():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

        if wait:
            reap()
        else:
            threading.Thread(target=reap, name="warm-workers-reap", daemon=True).start()


def start(processes: int, preload: Sequence[tuple] = ()) -> Optional[WarmPool]:
    """A pool of ``processes`` warm workers, or None where pools are not supported;
    ``preload``: (kind, path) of tokenizers the workers load while they wait."""
    if processes < 1 or not supported() or not sys.executable:
        return None
    try:
        return WarmPool(processes, preload)
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
    tokenizers = sorted({(f.tokenizer.kind, f.tokenizer.path) for f in config.files})
    return start(wanted(total, runner, options), [t for t in tokenizers if "://" not in t[1]])


def default_processes(total_input_bytes: int) -> int:
    """Worker processes of the default local configuration: one per usable core
    (``cores.usable_cores``: affinity and CPU quota) from ``MULTI_PROCESS_MIN_BYTES`` of
    input when there are several, else 0 (in memory)."""
    cores = usable_cores()
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


def serve_pool(directory: str, size: int, alive_fd: int) -> int:
    """Worker 0: listen on every socket, import once, fork a worker per further socket.

    Sockets are bound before the imports, so a shim that claims one early waits in its
    backlog rather than falling back. Forking after the imports is the forkserver's
    pattern: this process has run no build code yet, its only other threads are
    library ones that fork handles (OpenBLAS, jemalloc), and gRPC is not initialised
    before a harness opens its channels. A socket whose fork fails is removed, so no
    shim waits on it (it runs Beam's own worker instead).
    """
    servers = []
    for i in range(size):
        path = os.path.join(directory, f"w{i}.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(path)
            server.listen(1)
        except OSError:   # e.g. a socket path too long here: no socket, so no shim waits for us
            server.close()
            continue
        servers.append((server, path))
    if not servers:
        return 1
    with collector_paused():
        _import_worker_modules()
    # This process is ours: what the imports built lives as long as it does, so it is
    # frozen out of every later collection (and the forks share its pages without a
    # collection writing to them), and young objects are collected less often.
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, *gc.get_threshold()[1:])
    children = []
    for server, path in servers[1:]:
        try:
            pid = os.fork()
        except OSError:
            server.close()
            _remove(path)
            continue
        if pid == 0:   # a forked worker: serve this socket only, then leave without cleanup
            code = 1
            try:
                for other, _ in servers:
                    if other is not server:
                        other.close()
                _preload(directory)
                code = _serve(server, path, alive_fd)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
        server.close()
    if children:
        threading.Thread(target=_reap, args=(children,), name="warm-workers-reap", daemon=True).start()
    server, path = servers[0]
    _preload(directory)
    return _serve(server, path, alive_fd)


def _preload(directory: str) -> None:
    """Load the build's tokenizers on a thread while this worker waits to be claimed.

    After the fork, in each worker: a Hugging Face tokenizer whose thread pool ran
    before a fork turns its parallelism off in the child. The harness's first bundle
    takes the adapters (``tokenizers.load_tokenizer_preloaded``) instead of loading
    them itself, on the critical path of every build (0.07 s for T5).
    """
    try:
        with open(os.path.join(directory, PRELOAD), encoding="utf-8") as f:
            wanted = [tuple(p) for p in json.load(f)]
    except (OSError, ValueError):
        return
    from .tokenizers import preload

    def load():
        for kind, path in wanted:
            preload(kind, path)

    threading.Thread(target=load, name="warm-workers-preload", daemon=True).start()


def _import_worker_modules() -> None:
    # The harness sends its log records to the runner, which logs them in the launcher
    # under the launcher's settings; a handler here keeps Python from also printing
    # them (and Beam's import-time warnings) on this terminal through its implicit
    # default handler.
    import logging

    logging.getLogger().addHandler(logging.NullHandler())
    # What a build's worker needs before its first bundle: Beam's harness, the build's
    # DoFns (unpickled from the runner's descriptors) and both tokenizer libraries.
    from apache_beam.runners.worker import sdk_worker_main  # noqa: F401
    import sentencepiece  # noqa: F401
    import tokenizers  # noqa: F401

    from . import transforms  # noqa: F401

    _prompt_bundle_ends()


#: The longest Beam's state sampler sleeps between two samples in a local build (Beam's
#: default: 200 ms).
SAMPLER_PERIOD_MS = 10


def _sampler_init():
    """Beam's ``StateSampler.__init__`` if its period is still the 200 ms default, else None."""
    try:
        from apache_beam.runners.worker import statesampler
    except ImportError:
        return None
    init = getattr(getattr(statesampler, "StateSampler", None), "__init__", None)
    default = getattr(statesampler, "DEFAULT_SAMPLING_PERIOD_MS", None)
    if default is None or default < SAMPLER_PERIOD_MS or getattr(init, "__defaults__", None) != (default,):
        return None
    return init


def _prompt_bundle_ends() -> None:
    """Let a bundle end as soon as its work is done, not up to 200 ms later.

    Beam's harness times each step with a sampler thread that sleeps between samples,
    its sleep growing to 200 ms a second into a bundle; ending the bundle joins that
    thread, so every long bundle ends 0-200 ms after its last element, with no CPU
    used, while the runner waits for it before the next stage can start. A build runs
    four stages in a row; traced on the generated 100 MB corpus, the encode stage ended
    0.09-0.18 s after its last block (docs/decisions.md, "Bundles end promptly"). With
    a 10 ms period the wait is at most 10 ms, and waking 100 times a second costs
    nothing measurable. Set for good in a warm worker (this process is ours); left
    alone if Beam's sampler no longer has that default.
    """
    init = _sampler_init()
    if init is not None:
        init.__defaults__ = (SAMPLER_PERIOD_MS,)


@contextlib.contextmanager
def prompt_bundle_ends():
    """:func:`_prompt_bundle_ends` for the time of a build in the caller's own process.

    The in-memory runner runs its bundles in the launcher's process, which is the
    user's: the sampler's default is restored when the build returns.
    """
    init = _sampler_init()
    if init is None:
        yield
        return
    saved = init.__defaults__
    init.__defaults__ = (SAMPLER_PERIOD_MS,)
    try:
        yield
    finally:
        init.__defaults__ = saved


def _reap(pids: list) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _launcher_alive(alive_fd: int) -> bool:
    """False once the launcher's end of the pipe is closed (it exited, or closed the pool)."""
    try:
        readable, _, _ = select.select([alive_fd], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _serve(server: socket.socket, path: str, alive_fd: int) -> int:
    """Wait for a claim on ``path``, then run one harness with the claimer's environment."""
    with open(path[:-len(".sock")] + ".pid", "w") as f:
        f.write(str(os.getpid()))
    server.settimeout(POLL_SECONDS)
    while True:
        try:
            conn, _ = server.accept()
            break
        except socket.timeout:
            # The launcher is gone, or closed the pool (removed the directory): nobody
            # will claim us.
            if not os.path.exists(path) or not _launcher_alive(alive_fd):
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
    from apache_beam.runners.worker import sdk_worker_main

    try:
        conn.sendall(STARTED)   # from here on, this process is the runner's worker
    except OSError:
        return 1
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
    if not _launcher_alive(alive_fd):   # the launcher died during the build: tidy up after it
        _remove(path + CLAIMED)
    return code


def _remove(socket_path: str) -> None:
    """Remove a socket file and its pid file, and the pool's directory once it is empty."""
    base = socket_path[:socket_path.index(".sock")]
    for name in (socket_path, base + ".pid"):
        try:
            os.unlink(name)
        except OSError:
            pass
    try:
        os.rmdir(os.path.dirname(socket_path))
    except OSError:
        pass
