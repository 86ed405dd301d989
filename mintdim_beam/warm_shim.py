"""The worker command Beam runs when a warm pool is in use (see ``warm_workers``).

Standard library only, run as ``python -I warm_shim.py POOL_DIR``, so it starts in a few
tens of milliseconds. It claims one waiting warm process (an atomic rename of its
socket), sends it this process's environment, which carries the runner's endpoints, and
exits with the status the worker reports. With no warm process to claim, or when the
hand-over fails before the warm process has said its harness is starting (``STARTED``;
it may have died or given up), it becomes Beam's own worker (``exec``), exactly what
the runner would have started: the runner waits for a worker to connect, so a worker
that never starts would stall the build for good.
"""

import json
import os
import socket
import sys

CLAIMED = ".claimed"
STARTED = b"+"   # warm_workers.STARTED


def _claim(directory):
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".sock"))
    except OSError:
        return None
    for name in names:
        path = os.path.join(directory, name)
        try:
            os.rename(path, path + CLAIMED)
        except OSError:
            continue   # another worker claimed it first
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path + CLAIMED)
            conn.sendall(json.dumps(dict(os.environ)).encode("utf-8"))
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            conn.close()
            continue
        return conn
    return None


def _beam_worker():
    os.execv(sys.executable, [sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"])


def main():
    conn = _claim(sys.argv[1]) if len(sys.argv) > 1 else None
    if conn is None:
        _beam_worker()
    status = b""
    while True:
        try:
            chunk = conn.recv(64)
        except OSError:
            break
        if not chunk:
            break
        status += chunk
    conn.close()
    if not status.startswith(STARTED):
        _beam_worker()   # no harness ran: the runner still waits for its worker
    try:
        return int(status[len(STARTED):].decode("ascii"))
    except ValueError:
        return 1   # the warm worker died without reporting


if __name__ == "__main__":
    sys.exit(main())
