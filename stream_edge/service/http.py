"""MetricsServer: ``/metrics`` (Prometheus text format), ``/healthz`` and ``/readyz`` over HTTP.

``/healthz`` answers 200 while the process serves requests (liveness); ``/readyz`` answers 200
when partitions are assigned and the last checkpoint is recent, 503 otherwise, with a small
JSON body saying why. Runs in a daemon thread; the processing loop never waits for it.

Example::

    server = MetricsServer(metrics, port=9108).start()
    ...
    server.stop()
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .metrics import EdgeMetrics

__all__ = ("MetricsServer",)


class MetricsServer:
    """The HTTP endpoints of one EdgeMetrics."""

    def __init__(self, metrics: EdgeMetrics, port: int, host: str = "0.0.0.0") -> None:
        self.metrics = metrics
        self._address = (host, port)
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server is not None else self._address[1]

    def start(self) -> "MetricsServer":
        metrics = self.metrics

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path == "/metrics":
                    self._reply(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
                elif self.path == "/healthz":
                    self._reply(200, b"ok\n", "text/plain")
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

        self._server = ThreadingHTTPServer(self._address, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="stream-edge-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
