"""MetricsServer: ``/metrics`` (Prometheus text format), ``/healthz`` and ``/readyz`` over HTTP.

``/healthz`` answers 200 while the processing loop goes round (liveness, 503 when it is wedged);
``/readyz`` answers 200 when the pipeline is ready (see :class:`EdgeMetrics`), 503 otherwise; both
with a small JSON body saying why. Binds loopback unless told otherwise (the endpoints have no
authentication; the container image binds ``0.0.0.0``). One reader thread collects every
connection's request head without blocking, and a bounded pool of ``workers`` threads answers the
complete ones: a client has ``request_timeout`` seconds for its whole request (not per read), so
clients that send nothing or trickle a byte at a time never hold a worker, and ``/healthz`` is
answered next to any number of them. The processing loop never waits for any of it.

Example::

    server = MetricsServer(metrics, port=9108).start()          # http://127.0.0.1:9108/metrics
    ...
    server.stop()
"""

from __future__ import annotations

import io
import json
import selectors
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, List, Optional, Tuple

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .metrics import EdgeMetrics

__all__ = ("MetricsServer", "PooledHTTPServer")

DEFAULT_HOST = "127.0.0.1"


class _HeadReader:
    """Reads request heads off many connections at once (one selector, one thread): a connection
    goes to ``ready(sock, address, head)`` once its head is complete, and is closed when its
    deadline passes first, its head grows past ``max_head_bytes``, or more than ``max_pending``
    connections are being read (the oldest goes: a flood of slow clients cannot keep a new
    connection, such as a liveness probe, from being read)."""

    def __init__(self, ready: Any, timeout: float, max_head_bytes: int, max_pending: int) -> None:
        self._ready = ready
        self._timeout = timeout
        self._max_head_bytes = max_head_bytes
        self._max_pending = max_pending
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._incoming: List[Tuple[socket.socket, Any]] = []
        # connection -> (address, deadline, bytes so far); oldest first
        self._pending: "OrderedDict[socket.socket, Tuple[Any, float, bytearray]]" = OrderedDict()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="stream-edge-metrics-reader", daemon=True)
        self._thread.start()

    def add(self, sock: socket.socket, address: Any) -> None:
        with self._lock:
            if self._stopping:
                _close(sock)
                return
            self._incoming.append((sock, address))
        self._wake()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
        self._wake()
        self._thread.join(5)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # the pipe is full (already woken) or closed (stopping)
            pass

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    stopping, incoming, self._incoming = self._stopping, self._incoming, []
                for sock, address in incoming:
                    self._admit(sock, address)
                if stopping:
                    break
                now = time.monotonic()
                wait = min((deadline for _, deadline, _ in self._pending.values()), default=now + 1.0) - now
                for key, _ in self._selector.select(timeout=max(0.0, min(wait, 1.0))):
                    if key.fileobj is self._wake_r:
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except OSError:
                            pass
                    else:
                        self._read(key.fileobj)  # type: ignore[arg-type]
                now = time.monotonic()
                for sock in [s for s, (_, deadline, _) in self._pending.items() if deadline <= now]:
                    self._drop(sock)  # the whole request did not arrive in time
        finally:
            for sock in list(self._pending):
                self._drop(sock)
            with self._lock:
                for sock, _ in self._incoming:
                    _close(sock)
                self._incoming = []
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _admit(self, sock: socket.socket, address: Any) -> None:
        while len(self._pending) >= self._max_pending:
            self._drop(next(iter(self._pending)))
        sock.setblocking(False)
        self._pending[sock] = (address, time.monotonic() + self._timeout, bytearray())
        self._selector.register(sock, selectors.EVENT_READ, None)

    def _read(self, sock: socket.socket) -> None:
        entry = self._pending.get(sock)
        if entry is None:
            return
        address, _, head = entry
        try:
            data = sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client went away
            self._drop(sock)
            return
        head += data
        if b"\r\n\r\n" in head or b"\n\n" in head:
            self._selector.unregister(sock)
            del self._pending[sock]
            sock.setblocking(True)
            self._ready(sock, address, bytes(head))
        elif len(head) > self._max_head_bytes:
            self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        self._pending.pop(sock, None)
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


class PooledHTTPServer(HTTPServer):
    """An HTTPServer answering complete requests on at most ``workers`` threads.

    A thread per connection, unbounded, is what ``ThreadingHTTPServer`` does; a fixed pool that
    reads each request itself, with a socket timeout per read, is held by as many clients as it
    has workers trickling a byte now and then. Here a single reader (:class:`_HeadReader`) reads
    every connection's request head without blocking, within ``request_timeout`` seconds for the
    whole head, and a worker only ever answers a request that has fully arrived. At most
    ``max_pending`` connections are read at once, and at most ``max_queued`` complete requests wait
    for a worker (more are closed unanswered)."""

    max_head_bytes = 16384  # a request line and headers larger than this are dropped
    max_pending = 256
    max_queued = 64

    def __init__(self, address: Tuple[str, int], handler: Any, workers: int, request_timeout: float = 5.0) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(workers + self.max_queued)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stream-edge-metrics-worker")
        self._heads: Dict[socket.socket, bytes] = {}
        self._heads_lock = threading.Lock()
        self._reader = _HeadReader(self._dispatch, request_timeout, self.max_head_bytes, self.max_pending)

    def process_request(self, request: Any, client_address: Any) -> None:
        self._reader.add(request, client_address)

    def _dispatch(self, request: socket.socket, client_address: Any, head: bytes) -> None:
        """A complete request head arrived: a worker answers it (or it is closed when too many wait)."""
        if not self._slots.acquire(blocking=False):
            _close(request)
            return
        with self._heads_lock:
            self._heads[request] = head
        try:
            self._pool.submit(self._answer, request, client_address)
        except RuntimeError:  # the pool is shut down: the server is stopping
            self._slots.release()
            self.take_head(request)
            self.shutdown_request(request)

    def take_head(self, request: Any) -> bytes:
        """The request head the reader collected for ``request`` (the handler reads it from here)."""
        with self._heads_lock:
            return self._heads.pop(request, b"")

    def _answer(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - a broken client connection is not the server's failure
            self.handle_error(request, client_address)
        finally:
            self.take_head(request)
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # timeouts and resets of scrapers are not news (http.server prints a traceback)

    def server_close(self) -> None:
        super().server_close()
        self._reader.stop()
        self._pool.shutdown(wait=False)


class _PooledHTTPServer6(PooledHTTPServer):
    address_family = socket.AF_INET6


class MetricsServer:
    """The HTTP endpoints of one EdgeMetrics."""

    def __init__(self, metrics: EdgeMetrics, port: int, host: str = DEFAULT_HOST, request_timeout: float = 5.0,
                 workers: int = 4) -> None:
        if workers < 1 or request_timeout <= 0:
            raise ValueError(f"workers must be >= 1 and request_timeout > 0, got {workers} and {request_timeout}")
        self.metrics = metrics
        self._address = (host, port)
        self._request_timeout = request_timeout
        self._workers = workers
        self._server: Optional[PooledHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def host(self) -> str:
        return str(self._server.server_address[0]) if self._server is not None else self._address[0]

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server is not None else self._address[1]

    def start(self) -> "MetricsServer":
        metrics = self.metrics

        class Handler(BaseHTTPRequestHandler):
            timeout = self._request_timeout  # bounds writing the answer to a client that does not read

            def setup(self) -> None:
                super().setup()
                # The server's reader has the whole request head already (no request has a body).
                self.rfile.close()
                self.rfile = io.BytesIO(self.server.take_head(self.request))  # type: ignore[attr-defined]

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path == "/metrics":
                    self._reply(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
                elif self.path == "/healthz":
                    report = metrics.liveness()
                    self._reply(200 if report["live"] else 503, json.dumps(report).encode() + b"\n",
                                "application/json")
                elif self.path == "/readyz":
                    report = metrics.readiness()
                    self._reply(200 if report["ready"] else 503, json.dumps(report).encode() + b"\n",
                                "application/json")
                else:
                    self._reply(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain")

            def _reply(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - scrapes are not news
                return None

        server_class = _PooledHTTPServer6 if ":" in self._address[0] else PooledHTTPServer  # IPv6: "::1"
        self._server = server_class(self._address, Handler, self._workers, self._request_timeout)
        self._thread = threading.Thread(target=self._server.serve_forever, name="stream-edge-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
