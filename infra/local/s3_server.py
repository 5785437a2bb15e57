"""moto's S3 server with conditional writes made atomic, as S3 makes them.

S3 applies a conditional ``PutObject`` (``If-None-Match: *``: create only if absent; ``If-Match``)
atomically: of several writers racing for one key, exactly one succeeds. moto's server answers
each request on a thread of its own and checks the condition, then stores the object, so two
writers can both pass the check (the lake's exclusive batch claims raced that way: two of six
writers won one claim). This launcher runs moto's own ``moto_server`` entry point with one lock
around every conditional write; every other request runs in parallel as before::

    python -m infra.local.s3_server -H 127.0.0.1 -p 5000     # moto_server's arguments
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Iterable

CONDITIONAL_HEADERS = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


class AtomicConditionalWrites:
    """WSGI middleware: conditional ``PUT``/``POST`` requests run one at a time, their response
    produced (the object stored) before the lock is released."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        conditional = environ.get("REQUEST_METHOD") in ("PUT", "POST") and any(
            header in environ for header in CONDITIONAL_HEADERS)
        if not conditional:
            return self.app(environ, start_response)
        with self._lock:
            return list(self.app(environ, start_response))


def main(argv: list[str]) -> None:
    from moto import server

    serve = server.run_simple

    def run_simple(host: str, port: int, app: Any, **options: Any) -> None:
        serve(host, port, AtomicConditionalWrites(app), **options)

    server.run_simple = run_simple  # moto's main builds its application and hands it to run_simple
    server.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
