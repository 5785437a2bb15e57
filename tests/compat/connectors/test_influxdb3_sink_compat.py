"""``InfluxDB3Sink`` as on quixstreams 3.28.1: the calls a user's unit test sees when it gives the
sink a mocked ``InfluxDBClient3`` (as Quix's own tests of this sink do: one
``write(record=[...point dicts...], write_precision=...)`` per ``batch_size`` records), the errors
and their types, the log lines, and what an InfluxDB server receives from the official client, both
from ``add()``/``flush()`` and from an application on the real broker: each program runs a loopback
HTTP server speaking InfluxDB's write API that records every request (query, headers, the body
un-gzipped). No InfluxDB server installs here (Debian's ``influxdb`` 1.6 has no ``/api/v2/write``).
The quixstreams venv gets ``influxdb3-python==0.21.0``, the project's pin. One shared run per
package; one test per printed section."""

import json

import pytest

from tests.compat.conftest import compare_section, ensure_quix_packages

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-influxdb3")]  # one worker: one shared run

PROGRAM = r'''
import gzip
import logging
import re
import threading
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest.mock import MagicMock
from urllib.parse import parse_qsl, urlparse

import influxdb_client_3
from influxdb_client_3 import InfluxDBClient3
from quixstreams import Application
from quixstreams.sinks import SinkBackpressureError
from quixstreams.sinks.core.influxdb3 import InfluxDB3Sink

TS = 1_700_000_000_000


class Lines(logging.Handler):
    """The sink's log lines, its elapsed time masked."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        if record.name.endswith("sinks.core.influxdb3"):
            self.lines.append(f"{record.levelname} " + re.sub(r"time_elapsed=[0-9.]+s", "time_elapsed=Xs",
                                                              record.getMessage()))


lines = Lines()
logging.getLogger().addHandler(lines)
logging.getLogger().setLevel(logging.DEBUG)


def mocked(**kwargs):
    params = dict(token="", host="", organization_id="test", database="test", measurement="measurement")
    params.update(kwargs)
    sink = InfluxDB3Sink(**params)
    sink._client = MagicMock(spec_set=InfluxDBClient3)
    return sink


def add(sink, value, key="key", timestamp=TS, partition=0, offset=1, topic="test-topic"):
    sink.add(value=value, key=key, timestamp=timestamp, headers=[], topic=topic, partition=partition,
             offset=offset)


def calls(sink):
    for call in sink._client.write.call_args_list:
        print("  call", call.args, sorted(call.kwargs.items()))


def error(exc):
    """An error as both packages should show it: its builtin kinds and Quix's text (the edge adds where
    the record is, after " [InfluxDB3Sink: ")."""
    kinds = [k.__name__ for k in (TypeError, ValueError, KeyError, influxdb_client_3.InfluxDBError,
                                  SinkBackpressureError) if isinstance(exc, k)]
    return f"{kinds} {str(exc).split(' [InfluxDB3Sink: ')[0]}"


print("== mocked client calls")
for name, kwargs, values in [
    ("two partitions", {}, [({"key": "value"}, 0), ({"key": "value"}, 1)]),
    ("fields_keys", {"fields_keys": ["key1"]}, [({"key1": 1, "key2": 2}, 0)]),
    ("tags_keys", {"tags_keys": ["tag1"]}, [({"key1": 1, "tag1": 1}, 0)]),
    ("tags excluded from fields", {"tags_keys": ["b"]}, [({"a": 1, "b": 2}, 0)]),
    ("metadata tags", {"include_metadata_tags": True}, [({"key1": 1, "tag1": 1}, 0)]),
    ("batch_size 1", {"batch_size": 1}, [({"key": "value1"}, 0), ({"key": "value2"}, 0)]),
    ("ints to floats", {"convert_ints_to_floats": True}, [({"a": 1, "b": 1.5, "c": True, "d": "x"}, 0)]),
    ("time column", {"time_setter": "ts"}, [({"ts": TS + 5, "v": 1}, 0), ({"ts": None, "v": 2}, 0)]),
    ("time callable, seconds", {"time_setter": lambda v: v["at"] // 1000, "time_precision": "s"},
     [({"at": TS, "v": 1}, 0)]),
    ("time as str", {"time_setter": "t", "time_precision": "ns"}, [({"t": "2023-11-14T22:13:20.123Z", "v": 1}, 0)]),
    ("time as datetime", {"time_setter": lambda v: v["t"]},
     [({"t": datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc), "v": 2}, 0)]),
    ("callables", {"measurement": lambda v: "m-" + v["kind"], "tags_keys": lambda v: ["kind"],
                   "fields_keys": lambda v: [k for k in v if k.startswith("f")]},
     [({"kind": "a", "f1": 1, "f2": None, "x": 0}, 0)]),
    ("missing field allowed", {"fields_keys": ["a", "b"], "allow_missing_fields": True}, [({"a": 1}, 0)]),
]:
    sink = mocked(**kwargs)
    kept = []
    for offset, (value, partition) in enumerate(values):
        kept.append(value)
        add(sink, value, partition=partition, offset=offset)
    sink.flush()
    print(name, "writes", sink._client.write.call_count, "values after", kept)
    calls(sink)

print("== log lines")
lines.lines.clear()
sink = mocked(batch_size=2)
for offset, ts in enumerate([TS + 3, TS + 1, TS + 2]):
    add(sink, {"v": offset}, timestamp=ts, offset=offset)
sink.flush()
print("\n".join(lines.lines))

print("== errors")
for name, make in [
    ("overlap", lambda: mocked(tags_keys=["b"], fields_keys=["b"])),
    ("time_precision", lambda: mocked(time_precision="m")),
]:
    try:
        make()
    except Exception as exc:
        print(name, error(exc))
try:
    add(mocked(), 1)
except Exception as exc:
    print("not a dict", error(exc))
for name, kwargs, value in [
    ("invalid int timestamp", {"time_setter": "ts"}, {"ts": 1_700_000_000, "v": 1}),
    ("time of another type", {"time_setter": "ts"}, {"ts": 1.5, "v": 1}),
    ("missing time column", {"time_setter": "ts"}, {"v": 1}),
    ("missing field", {"fields_keys": ["a", "b"]}, {"a": 1}),
    ("seconds and a ms time", {"time_setter": "ts", "time_precision": "s"}, {"ts": TS, "v": 1}),
]:
    sink = mocked(**kwargs)
    add(sink, value)
    try:
        sink.flush()
        print(name, "no error")
    except Exception as exc:
        print(name, error(exc), "writes", sink._client.write.call_count)


class Response:
    def __init__(self, status, body=b"", headers=None):
        self.status, self.data, self.reason, self._headers = status, body, "Reason", headers or {}

    def getheader(self, name, default=None):
        return self._headers.get(name, default)

    def getheaders(self):
        return self._headers


print("== write errors")
for name, failure, kwargs in [
    ("429 with Retry-After", influxdb_client_3.InfluxDBError(Response(429, b"", {"Retry-After": "10"})), {}),
    ("422 retention", influxdb_client_3.InfluxDBError(
        Response(422, b'{"error": "partial write: points beyond retention policy violation"}')), {}),
    ("422 retention raised", influxdb_client_3.InfluxDBError(
        Response(422, b'{"error": "points beyond retention policy"}')), {"raise_on_retention_violation": True}),
    ("400", influxdb_client_3.InfluxDBError(Response(400, b'{"error": "parsing failed"}')), {}),
    ("401", influxdb_client_3.InfluxDBError(Response(401, b'{"message": "unauthorized access"}')), {}),
    ("no response", influxdb_client_3.InfluxDBError(), {}),
]:
    lines.lines.clear()
    sink = mocked(batch_size=1, **kwargs)
    sink._client.write.side_effect = [failure, None]
    add(sink, {"v": 1}, offset=1)
    add(sink, {"v": 2}, offset=2)
    try:
        sink.flush()
        print(name, "no error; writes", sink._client.write.call_count)
    except SinkBackpressureError as exc:
        print(name, "SinkBackpressureError retry_after", int(exc.retry_after))
    except Exception as exc:
        print(name, error(exc), "response", getattr(getattr(exc, "response", None), "status", None))
    print("\n".join(f"  {line}" for line in lines.lines if "retention" in line))


class InfluxServer:
    """Speaks InfluxDB's write API (``/ping``, ``/api/v2/write``) and records every write request."""

    def __init__(self):
        self.requests = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return None

            def do_GET(self):
                self.send_response(204)
                self.send_header("X-Influxdb-Version", "2.7.0")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                url = urlparse(self.path)
                owner.requests.append([url.path, sorted(parse_qsl(url.query)),
                                       {h: self.headers.get(h) for h in ("Authorization", "Content-Encoding",
                                                                         "Content-Type", "User-Agent")},
                                       body.decode()])
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def show(self):
        for path, query, headers, body in self.requests:
            print("  ", path, query, headers)
            for line in body.splitlines():
                print("    ", line)
        self.requests.clear()


server = InfluxServer()
print("== requests from add and flush")
for name, kwargs, records in [
    ("tags, every field type, gzip", {"tags_keys": ["sensor", "site"]},
     [({"sensor": "s 1", "site": "a,b=c", "i": 7, "f": 2.0, "g": 0.1, "ok": True, "s": 'say "hi"\\', "n": None},
       b"k1"),
      ({"sensor": "s2", "site": None, "i": -3, "f": float("nan"), "ok": False}, b"k2")]),
    ("metadata tags, no gzip, seconds", {"include_metadata_tags": True, "enable_gzip": False,
                                          "time_setter": "at", "time_precision": "s", "batch_size": 1},
     [({"v": 1, "at": 1_700_000_000}, b"bytes-key"), ({"v": 2, "at": "2023-11-14T22:13:21Z"}, "str-key")]),
    ("ints to floats, measurement callable", {"convert_ints_to_floats": True,
                                              "measurement": lambda v: f"m {v['kind']}", "fields_keys": ["x"]},
     [({"kind": "a", "x": 3}, None)]),
]:
    params = dict(token="secret-token", host=server.url, organization_id="org", database="db",
                  measurement="readings")
    params.update(kwargs)
    sink = InfluxDB3Sink(**params)
    sink.setup()
    for offset, (value, key) in enumerate(records):
        add(sink, value, key=key, timestamp=TS + offset, offset=offset, partition=3)
    sink.flush()
    print(name)
    server.show()

print("== requests from an application")
app = Application(broker_address=BROKER, consumer_group="influx-" + uuid.uuid4().hex[:8],
                  auto_offset_reset="earliest", loglevel=None)
sdf = app.dataframe(app.topic(TOPIC, value_deserializer="json"))
sdf.sink(InfluxDB3Sink(token="tok", host=server.url, organization_id="org", database="db", measurement="readings",
                       tags_keys=["sensor"], include_metadata_tags=True, batch_size=2))
app.run(count=COUNT, timeout=60)
server.show()
'''

SECTIONS = ["mocked client calls", "log lines", "errors", "write errors", "requests from add and flush",
            "requests from an application"]
COUNT = 5


@pytest.fixture(scope="module")
def outputs(run_both_module, quix_python, kafka_bootstrap, kafka_admin):
    import uuid

    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    ensure_quix_packages(quix_python, "influxdb3-python==0.21.0")
    topic = f"compat-influx-{uuid.uuid4().hex[:10]}"
    kafka_admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(COUNT):
        producer.produce(topic, key=f"k{i}".encode(), timestamp=1_700_000_000_000 + i,
                         value=json.dumps({"sensor": f"s{i % 2}", "id": i, "reading": i * 0.5}).encode())
    producer.flush(30)
    header = f"BROKER = {kafka_bootstrap!r}\nTOPIC = {topic!r}\nCOUNT = {COUNT}\n"
    return run_both_module(header + PROGRAM, timeout=180)


@pytest.mark.parametrize("section", SECTIONS)
def test_influxdb3_sink_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_the_client_gets_one_list_of_point_dicts_per_batch(outputs):
    shown = compare_section(outputs, "mocked client calls")
    assert ("two partitions writes 2 values after [{'key': 'value'}, {'key': 'value'}]\n"
            "  call () [('record', [{'measurement': 'measurement', 'tags': {}, 'fields': {'key': 'value'}, "
            "'time': 1700000000000}]), ('write_precision', 'ms')]") in shown
    assert "'tags': {'__key': 'key', '__topic': 'test-topic', '__partition': 0}" in shown
    assert "tags_keys writes 1 values after [{'key1': 1}]" in shown  # the tag is taken out of the value


def test_errors_have_quix_types_and_texts(outputs):
    shown = compare_section(outputs, "errors")
    assert "overlap ['ValueError'] Keys b are present in both \"fields_keys\" and \"tags_keys\"" in shown
    assert "not a dict ['TypeError'] Sink \"InfluxDB3Sink\" supports only dictionaries, got <class 'int'>" in shown
    assert ("invalid int timestamp ['ValueError'] `time_precision` of \"ms\" expects a 13-digit integer epoch, "
            "got 10 (timestamp: 1700000000). writes 0") in shown
    written = compare_section(outputs, "write errors")
    assert "retention policy violation" in written.split("422 retention raised")[0]
    assert "400 ['ValueError', 'InfluxDBError']" not in written and "400 ['InfluxDBError']" in written


def test_the_server_receives_the_same_points(outputs):
    shown = compare_section(outputs, "requests from add and flush")
    assert "readings,sensor=s\\ 1,site=a\\,b\\=c f=2,g=0.1,i=7i,ok=true,s=\"say \\\"hi\\\"\\\\\" 1700000000000" in shown
    app = compare_section(outputs, "requests from an application")
    assert app.count("/api/v2/write") == 3  # 5 records, batch_size 2
    assert "readings,__key=b'k0',__partition=0," in app
