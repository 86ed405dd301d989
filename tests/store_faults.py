"""A store that fails on purpose: a small reverse proxy in front of the test S3 server.

Publishing must survive a store that answers 500 twice and then recovers, and must end
as a job error (exit 2, the store's own answer in both languages, nothing that looks
complete) when it never recovers. Neither can be asked of moto itself, so the tests
put :class:`FaultProxy` between the build and moto: every request goes through it, and
a :class:`Fault` rule (method, key pattern, how many times) answers a matching request
with an S3-style XML error, or drops its connection with a reset, instead of
forwarding it. Everything else is forwarded unchanged, and every request is logged
with the status the client got.

Standard library only (``http.server``, ``http.client``, ``socket``); one thread per
connection, as boto3 keeps several connections open at once.
"""

from __future__ import annotations

import fnmatch
import http.client
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional
from urllib.parse import unquote, urlsplit

#: What a rule does to a matching request.
RESET = "reset"          # close the connection with a TCP reset, no answer at all

_REASONS = {500: ("InternalError", "We encountered an internal error. Please try again."),
            503: ("SlowDown", "Please reduce your request rate."),
            403: ("AccessDenied", "Access Denied")}


@dataclass
class Fault:
    """Answer ``times`` requests (None: every one) of ``method`` whose path (bucket and
    key, ``/bucket/key``) matches ``pattern`` (``fnmatch``: ``*/manifest.json``) with
    ``status`` (an HTTP status, or :data:`RESET`). ``query``: the request's query
    string must contain it too (``delete`` for a batch delete's POST)."""

    method: str
    pattern: str
    status: object = 500
    times: Optional[int] = None
    query: str = ""
    hits: int = field(default=0, init=False)

    def matches(self, method: str, path: str, query: str) -> bool:
        return (method == self.method and fnmatch.fnmatchcase(path, self.pattern)
                and self.query in query and (self.times is None or self.hits < self.times))


class FaultProxy:
    """A reverse proxy on 127.0.0.1 in front of ``upstream`` (``http://host:port``).

    ``endpoint`` is what the build's ``--s3_endpoint_url`` names; :meth:`add` sets a
    fault, :meth:`clear` removes them all; ``log`` is ``(method, path, status)`` of
    every request, in the order they were answered (status ``"reset"`` for a reset).
    """

    def __init__(self, upstream: str):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.faults: list[Fault] = []
        self.log: list[tuple] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(_ForwardingHandler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()

    def add(self, method: str, pattern: str, status=500, times: Optional[int] = None, query: str = "") -> Fault:
        fault = Fault(method, pattern, status, times, query)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.log.clear()

    def requests(self, method: Optional[str] = None, pattern: str = "*") -> list:
        """The logged ``(method, path, status)`` of matching requests."""
        with self._lock:
            return [r for r in self.log if (method is None or r[0] == method) and fnmatch.fnmatchcase(r[1], pattern)]

    def _fault_for(self, method: str, path: str, query: str) -> Optional[Fault]:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path, query):
                    fault.hits += 1
                    return fault
        return None

    def _record(self, method: str, path: str, status) -> None:
        with self._lock:
            self.log.append((method, path, status))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class _ForwardingHandler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"        # keep-alive, as boto3 expects

    def log_message(self, *args) -> None:   # the proxy's own log is FaultProxy.log
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass              # trailers
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        method = self.command
        parts = urlsplit(self.path)
        path, query = unquote(parts.path), parts.query
        body = self._body()
        fault = self.owner._fault_for(method, path, query)
        if fault is not None and fault.status == RESET:
            self.owner._record(method, path, RESET)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if fault is not None:
            code, message = _REASONS.get(int(fault.status), ("InternalError", "Injected failure."))
            xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                   f"<Message>{message}</Message><Resource>{path}</Resource>"
                   f"<RequestId>fault-{fault.hits}</RequestId></Error>").encode()
            self._answer(int(fault.status), [("Content-Type", "application/xml")], b"" if method == "HEAD" else xml,
                         len(xml))
            self.owner._record(method, path, int(fault.status))
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection")}
        if body or method in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection(*self.owner.upstream, timeout=60)
        try:
            upstream.request(method, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
            kept = [(k, v) for k, v in answer.getheaders()
                    if k.lower() not in ("transfer-encoding", "connection", "content-length")]
            length = int(answer.getheader("Content-Length") or len(data)) if method == "HEAD" else len(data)
            self._answer(answer.status, kept, data, length)
            self.owner._record(method, path, answer.status)
        finally:
            upstream.close()

    def _answer(self, status: int, headers, data: bytes, length: int) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle
