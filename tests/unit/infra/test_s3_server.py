"""The local S3 server's middleware (infra/local/s3_server.py): of writers racing for one key with
``If-None-Match: *``, exactly one wins, as on S3, even where the application behind it checks the
condition and stores the object in two steps (as moto does)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from infra.local.s3_server import AtomicConditionalWrites


class CheckThenStore:
    """A WSGI app with moto's race: the condition is checked, then (a moment later) the object stored."""

    def __init__(self, writers: int = 6) -> None:
        self.objects: dict[str, bytes] = {}
        # the window between the check and the store stays open until every writer is in it (or,
        # when writers come one at a time, until the barrier gives up and breaks)
        self.window = threading.Barrier(writers, timeout=0.5)
        self.running = self.most_running = 0
        self._count = threading.Lock()

    def __call__(self, environ, start_response):
        with self._count:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            key = environ["PATH_INFO"]
            if environ.get("HTTP_IF_NONE_MATCH") == "*" and key in self.objects:
                start_response("412 Precondition Failed", [])
                return [b""]
            try:
                self.window.wait()
            except threading.BrokenBarrierError:
                pass
            self.objects[key] = environ["wsgi.input"]
            start_response("200 OK", [])
            return [b"stored"]
        finally:
            with self._count:
                self.running -= 1


def race(app, writers: int = 6, conditional: bool = True) -> list[str]:
    start = threading.Barrier(writers)

    def put(i: int) -> str:
        environ = {"REQUEST_METHOD": "PUT", "PATH_INFO": "/bucket/ledger/1.json", "wsgi.input": f"w{i}".encode()}
        if conditional:
            environ["HTTP_IF_NONE_MATCH"] = "*"
        statuses: list[str] = []
        start.wait()
        b"".join(app(environ, lambda status, headers: statuses.append(status)))
        return statuses[0]

    with ThreadPoolExecutor(writers) as pool:
        return list(pool.map(put, range(writers)))


def test_the_race_exists_without_the_middleware() -> None:
    assert race(CheckThenStore()).count("200 OK") > 1  # what the middleware is for


def test_exactly_one_conditional_writer_wins_with_it() -> None:
    store = CheckThenStore()
    statuses = race(AtomicConditionalWrites(store))
    assert statuses.count("200 OK") == 1 and statuses.count("412 Precondition Failed") == 5
    assert store.most_running == 1


def test_unconditional_writes_still_run_side_by_side() -> None:
    store = CheckThenStore()
    assert race(AtomicConditionalWrites(store), conditional=False) == ["200 OK"] * 6
    assert store.most_running > 1
