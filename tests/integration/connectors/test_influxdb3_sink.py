"""InfluxDB3Sink (on influxdb3-python's ``InfluxDBClient3``) on the real Kafka broker against a real
HTTP endpoint started by the test: a small server speaking InfluxDB's write API (``/api/v2/write``,
``/ping``, ``/health``) that records what it is sent and can be told to refuse (HTTP 429 with
``Retry-After``) or to answer any status. No InfluxDB 3 build installs on the build machines (not
on PyPI, npm or Debian)."""

from __future__ import annotations

import gzip
import json
import re
import signal
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import parse_qs, urlparse

import pytest
from connector_testkit import TS0, record, stop_program, wait_for_log

from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.core.influxdb3 import InfluxDB3Sink, InfluxDB3SinkException, InfluxDB3WriteError

pytestmark = pytest.mark.integration

SINK = "stream_edge.sinks.core.influxdb3:InfluxDB3Sink"
RECORDS = 3000


class InfluxWriteServer:
    """Records every accepted line; ``refuse`` makes writes answer 429, ``reject`` 400."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.queries: list[dict[str, list[str]]] = []
        self.headers: list[dict[str, str]] = []
        self.refused = 0
        self.refuse = False
        self.reject = ""
        self.answer: tuple[int, bytes, dict[str, str]] | None = None  # any other answer to writes
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                self._answer(200 if self.path in ("/health", "/ping") else 404, b'{"status":"pass"}')

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                url = urlparse(self.path)
                if url.path != "/api/v2/write":
                    return self._answer(404, b"not found")
                with lock:
                    if owner.refuse:
                        owner.refused += 1
                        return self._answer(429, b'{"error":"too many requests"}', {"Retry-After": "0.3"})
                    if owner.reject:
                        return self._answer(400, owner.reject.encode())
                    if owner.answer is not None:
                        return self._answer(*owner.answer)
                    if self.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    owner.lines.extend(body.decode().splitlines())
                    owner.queries.append(parse_qs(url.query))
                    owner.headers.append(dict(self.headers))
                self._answer(204, b"")

            def _answer(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self) -> list[int]:
        return [int(m.group(1)) for line in self.lines if (m := re.search(r"\bid=(\d+)i", line))]


@pytest.fixture()
def influx() -> Iterator[InfluxWriteServer]:
    server = InfluxWriteServer()
    yield server
    server.server.shutdown()
    server.server.server_close()


def spec(url: str, **extra: Any) -> dict[str, Any]:
    return {"class": SINK, "kwargs": {"token": "tok", "host": url, "organization_id": "org", "database": "edge",
                                      "measurement": "readings", "tags_keys": ["sensor"], **extra}}


def test_kill9_mid_stream_then_restart_loses_nothing(make_topic, produce, run_program, influx):
    topic = make_topic(partitions=2, prefix="influx-kill9")
    produce(topic, RECORDS)
    group = f"influx-kill9-{uuid.uuid4().hex[:8]}"
    crashed = run_program(topic, group, spec(influx.url), crash_after=1000)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    assert 0 < len(set(influx.ids())) < RECORDS
    finished = run_program(topic, group, spec(influx.url))
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert set(influx.ids()) == set(range(RECORDS))  # nothing lost (a replayed point is the same point)
    line = next(line for line in influx.lines if " id=7i," in line)
    assert line == f"readings,sensor=s2 id=7i,reading=3.5 {TS0 + 7}"
    assert influx.queries[0] == {"org": ["org"], "bucket": ["edge"], "precision": ["ms"]}
    assert influx.headers[0]["Authorization"] == "Token tok"


def test_429_is_backpressure_then_everything_lands(make_topic, produce, run_program, influx, tmp_path):
    influx.refuse = True
    topic = make_topic(partitions=1, prefix="influx-bp")
    produce(topic, 500)
    proc = run_program(topic, f"influx-bp-{uuid.uuid4().hex[:8]}", {**spec(influx.url), "idle_timeout": 8},
                       background=True, log_dir=tmp_path)
    try:
        wait_for_log(proc, "InfluxDB refused the write")
        assert influx.lines == []
        influx.refuse = False
        assert proc.wait(timeout=180) == 0, proc.log_path.read_text()
    finally:
        stop_program(proc)
    assert influx.refused >= 1 and sorted(set(influx.ids())) == list(range(500))


def test_bad_field_stops_the_app_naming_record_and_field(make_topic, run_program, influx, kafka_bootstrap):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="influx-bad")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(4):
        producer.produce(topic, key=f"k{i}".encode(), value=json.dumps(record(i)).encode())
    producer.produce(topic, key=b"k4", value=json.dumps(dict(record(4), reading=[1, 2])).encode())
    producer.flush(30)
    done = run_program(topic, f"influx-bad-{uuid.uuid4().hex[:8]}", {**spec(influx.url), "commit_every": 4})
    assert done.returncode != 0
    assert (f'Type: "<class \'list\'>" of field: "reading" is not supported. [InfluxDB3Sink: field \'reading\' of '
            f"topic '{topic}' partition 0 offset 4]") in done.stderr
    assert sorted(influx.ids()) == [0, 1, 2, 3]  # the earlier checkpoint landed


def test_line_protocol_options_and_rejection(influx):
    sink = InfluxDB3Sink("t", influx.url, "o", "db", measurement=lambda v: f"m {v['kind']}",
                         fields_keys=["temp", "ok", "note"], tags_keys=["site"], time_setter="at",
                         time_precision="s", include_metadata_tags=True, convert_ints_to_floats=True,
                         enable_gzip=False)
    sink.setup()
    batch = SinkBatch("t", 3)
    batch.append({"kind": "a", "site": "x,y", "temp": 20, "ok": True, "note": 'say "hi"', "at": 1_700_000_000},
                 b"k1", 0, [], 5)
    batch.append({"kind": "a", "site": "x", "temp": 1.5, "ok": False, "note": "n",
                  "at": "2023-11-14T22:13:20Z"}, b"k2", 0, [], 6)
    sink.write(batch)
    assert influx.lines == [  # as Quix: the client's line protocol, the key as it is (here bytes)
        'm\\ a,__key=b\'k1\',__partition=3,__topic=t,site=x\\,y note="say \\"hi\\"",ok=true,temp=20 1700000000',
        "m\\ a,__key=b'k2',__partition=3,__topic=t,site=x note=\"n\",ok=false,temp=1.5 1700000000"]
    missing = SinkBatch("t", 0)
    missing.append({"kind": "a", "temp": 1, "at": 1_700_000_000}, b"k", 0, [], 9)
    with pytest.raises(KeyError, match="field 'ok' of topic 't' partition 0 offset 9") as raised:
        sink.write(missing)
    assert isinstance(raised.value, InfluxDB3SinkException)
    influx.reject = '{"error":"parsing failed for write_lp endpoint"}'
    with pytest.raises(InfluxDB3WriteError, match="parsing failed.*HTTP 400: parsing failed"):
        sink.write(batch)


def test_writes_go_through_the_official_client_and_its_answers_map_to_backpressure_or_errors(influx, caplog):
    sink = InfluxDB3Sink("tok", influx.url, "org", "db", measurement="m", fields_keys=["v"], request_timeout_ms=3000)
    assert sink._client_args["write_client_options"]["write_options"].timeout == 3000
    sink.setup()
    batch = SinkBatch("t", 0)
    batch.append({"v": 1}, b"k", 1_700_000_001_000, [], 4)
    sink.write(batch)
    assert influx.lines == ["m v=1i 1700000001000"]
    assert influx.headers[0]["User-Agent"].startswith("influxdb3-python/")
    assert influx.headers[0]["Authorization"] == "Token tok"

    influx.answer = (503, b'{"error":"busy"}', {"Retry-After": "7"})
    with pytest.raises(SinkBackpressureError) as pressed:
        sink.write(batch)
    assert pressed.value.retry_after == 7.0
    influx.answer = (500, b'{"error":"internal"}', {})  # no Retry-After: the sink's own pause
    with pytest.raises(SinkBackpressureError) as pressed:
        sink.write(batch)
    assert pressed.value.retry_after == sink.backpressure_retry_seconds

    influx.answer = (422, b'{"error":"points beyond retention policy dropped"}', {})
    with caplog.at_level("WARNING"):
        sink.write(batch)  # a warning, as in Quix: the points are too old for the database
    assert "InfluxDB rejected batch (retention policy violation)" in caplog.text
    assert "points beyond retention policy dropped" in caplog.text  # the server's text
    strict = InfluxDB3Sink("tok", influx.url, "org", "db", measurement="m", raise_on_retention_violation=True)
    with pytest.raises(InfluxDB3WriteError, match="HTTP 422: points beyond retention"):
        strict.write(batch)

    influx.answer = (401, b'{"error":"unauthorized"}', {})
    with pytest.raises(InfluxDB3WriteError, match="HTTP 401: .*unauthorized"):
        sink.write(batch)

    url = influx.url
    influx.server.shutdown()
    influx.server.server_close()
    gone = InfluxDB3Sink("tok", url, "org", "db", measurement="m", backpressure_retry_seconds=2)
    with pytest.raises(ConnectionError, match="cannot be reached"):
        gone.setup()
    with pytest.raises(SinkBackpressureError) as pressed:
        sink.write(batch)  # refused connection: replayed later
    assert pressed.value.retry_after == sink.backpressure_retry_seconds
