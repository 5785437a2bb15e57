"""MetricsServer: ``/metrics`` (Prometheus text format), ``/healthz`` and ``/readyz`` over HTTP.

``/healthz`` answers 200 while the processing loop goes round (liveness, 503 when it is wedged);
``/readyz`` answers 200 when the pipeline is ready (see :class:`EdgeMetrics`), 503 otherwise; both
with a small JSON body saying why. Binds loopback unless told otherwise (the endpoints have no
authentication; the container image binds ``0.0.0.0``). A bounded pool of ``workers`` threads
answers requests, each connection with a socket timeout of ``request_timeout`` seconds, so slow
or idle clients can neither pile up threads nor hold a worker for long; when every worker is busy
new connections wait in the listen backlog. The processing loop never waits for any of it.

Example::

    server = MetricsServer(metrics, port=9108).start()          # http://127.0.0.1:9108/metrics
    ...
    server.stop()
"""

from __future__ import annotations

import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Optional, Tuple

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .metrics import EdgeMetrics

__all__ = ("MetricsServer", "PooledHTTPServer")

DEFAULT_HOST = "127.0.0.1"


class PooledHTTPServer(HTTPServer):
    """An HTTPServer answering on at most ``workers`` threads (a thread per connection, unbounded,
    is what ``ThreadingHTTPServer`` does). The accept loop waits for a free worker, so the kernel's
    listen backlog, not memory, holds the excess."""

    def __init__(self, address: Tuple[str, int], handler: Any, workers: int) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(workers)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stream-edge-metrics-worker")

    def process_request(self, request: Any, client_address: Any) -> None:
        self._slots.acquire()
        try:
            self._pool.submit(self._answer, request, client_address)
        except RuntimeError:  # the pool is shut down: the server is stopping
            self._slots.release()
            self.shutdown_request(request)

    def _answer(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - a broken client connection is not the server's failure
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # timeouts and resets of scrapers are not news (http.server prints a traceback)

    def server_close(self) -> None:
        super().server_close()
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
            timeout = self._request_timeout  # socket timeout: a silent client is dropped

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
        self._server = server_class(self._address, Handler, self._workers)
        self._thread = threading.Thread(target=self._server.serve_forever, name="stream-edge-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
