"""The metrics server under clients that trickle their request a byte at a time, on loopback:
they never hold the workers (a reader collects request heads apart from them), each has
``request_timeout`` seconds for its whole request, not per read, and ``/healthz`` keeps answering
next to twice as many of them as there are workers."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Tuple

from stream_edge.service.http import MetricsServer
from stream_edge.service.metrics import EdgeMetrics

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"p" * 60 + b"\r\n\r\n"


def trickle(port: int, started: threading.Barrier, stop: threading.Event) -> Tuple[str, bytes]:
    """Send REQUEST one byte every 0.1 s (a valid request, ~10 s in all); returns how it ended and
    what the server answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        outcome = "sent all"
        for index, byte in enumerate(REQUEST):
            if index == 3:
                started.wait(10)
            if stop.is_set():
                outcome = "stopped by the test"
                break
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                outcome = "closed by the server"
                break
            time.sleep(0.1)
        try:
            answer = sock.recv(1024)
        except OSError:
            answer = b""
        return outcome, answer


def test_slow_clients_never_starve_healthz_and_get_a_deadline_for_the_whole_request():
    workers, slow = 4, 8
    server = MetricsServer(EdgeMetrics(), 0, request_timeout=2.0, workers=workers).start()
    stop = threading.Event()
    started = threading.Barrier(slow + 1)
    pool = ThreadPoolExecutor(max_workers=slow)
    try:
        clients = [pool.submit(trickle, server.port, started, stop) for _ in range(slow)]
        started.wait(10)  # every slow client is connected and trickling
        for _ in range(3):
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as response:
                assert response.status == 200 and json.loads(response.read())["live"] is True
        outcomes = [client.result(timeout=30) for client in clients]
        # Each had 2 s for a request that takes ~10 s to send: dropped before it was complete,
        # never answered (a timeout per read, 2 s, would have let every one of them through).
        assert outcomes == [("closed by the server", b"")] * slow
    finally:
        stop.set()
        pool.shutdown(wait=True)
        server.stop()
