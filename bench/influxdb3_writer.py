"""InfluxDB3Sink's writer alone: records/s of ``write(batch)`` against a local HTTP endpoint.

A small server speaking InfluxDB's write API (``/api/v2/write``, ``/ping``; it reads each body and
answers 204) runs in a child process; the sink writes ``--batches`` batches of ``--records``
records (a tag, three fields, the message time), gzip on (the default), ``batch_size`` 1,000
lines per request. Run it on two trees to compare writers, e.g. the standard-library HTTP writer
of an older checkout with the one on ``influxdb3-python``'s ``InfluxDBClient3``:

    PYTHONPATH=. .venv/bin/python bench/influxdb3_writer.py
    PYTHONPATH=/tmp/before .venv/bin/python bench/influxdb3_writer.py   # git archive <commit> | tar -x -C /tmp/before

``--package quixstreams`` measures quixstreams 3.28.1's sink instead (run it with the python of its
venv, ``bench/quix_venv.py``, which needs ``influxdb3-python`` installed there). The server reports
version 2.7 on ``/ping``: quixstreams then skips its Arrow Flight query at set-up.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server answers

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self._answer(200, b'{"status":"pass","version":"2.7.0"}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(204, b"")

    def _answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(port: "multiprocessing.Queue[int]") -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port.put(server.server_address[1])
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000, help="records per batch")
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--no-gzip", action="store_true", help="enable_gzip=False")
    parser.add_argument("--package", default="stream_edge", choices=("stream_edge", "quixstreams"))
    args = parser.parse_args()
    import importlib

    SinkBatch = importlib.import_module(f"{args.package}.sinks.base.batch").SinkBatch
    InfluxDB3Sink = importlib.import_module(f"{args.package}.sinks.core.influxdb3").InfluxDB3Sink

    ports: "multiprocessing.Queue[int]" = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(ports,), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ports.get(timeout=10)}"
    try:
        sink = InfluxDB3Sink("tok", url, "org", "db", measurement="readings", tags_keys=["sensor"],
                             enable_gzip=not args.no_gzip)
        sink.setup()
        batches = []
        for b in range(args.batches):
            batch = SinkBatch("bench", 0)
            for i in range(args.records):
                n = b * args.records + i
                batch.append({"sensor": f"s{n % 100}", "id": n, "reading": n * 0.5, "ok": n % 2 == 0},
                             b"k", 1_700_000_000_000 + n, [], n)
            batches.append(batch)
        sink.write(batches[0])  # warm-up: connection, imports
        started, cpu = time.perf_counter(), time.process_time()
        for batch in batches[1:]:
            sink.write(batch)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        records = args.records * (args.batches - 1)
        print(f"{args.package}: {records:,} records: {records / wall:,.0f} records/s wall, {records / cpu:,.0f} records/s "
              f"per CPU-second of the writer's process")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
