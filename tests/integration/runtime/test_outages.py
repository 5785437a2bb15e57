"""Outages on the real broker: a service that refuses or does not answer is no record's fault.

The records that meet an outage wait in Kafka (their partition pauses and retries with backoff)
and are processed once the service answers again; none is dead-lettered; under exactly-once
every output is written once. Also: a dead letter too large for the producer is delivered cut
and the stream goes on; a record dead-lettered under exactly-once leaves nothing of itself in the
committed outputs or state. Services here are real servers the test controls: a TCP upstream, a
Schema Registry (``tests/compat/serializers/registry_server.py``) that drops its connections or
answers 401.
"""

from __future__ import annotations

import hashlib
import importlib.util
import socket
import threading
import time
from pathlib import Path

import orjson
import pytest

from stream_edge.errors import is_outage
from stream_edge.processing.dead_letter import HEADER_PREFIX
from stream_edge.service.metrics import EdgeMetrics
from stream_edge.sinks import BatchingSink

pytestmark = pytest.mark.integration


def _close_listener(server: socket.socket) -> None:
    """Stop listening now: shutdown() wakes the thread blocked in accept() (close() alone would
    leave the socket listening until that accept() returns)."""
    try:
        server.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    server.close()


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


class Upstream:
    """A TCP service on a fixed loopback port the test can take down (connections refused) and
    bring back."""

    def __init__(self) -> None:
        self._server = None
        self.port = _free_port()
        self.up()

    def up(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._serve, args=(server,), daemon=True).start()

    def _serve(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"ok")
            conn.close()

    def down(self) -> None:
        _close_listener(self._server)

    def call(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
            conn.recv(2)


def _outage_after(upstream: Upstream, calls: int, seconds: float):
    """A function counting its calls; at the ``calls``-th the upstream goes down for ``seconds``."""
    state = {"n": 0}

    def maybe() -> None:
        state["n"] += 1
        if state["n"] == calls:
            upstream.down()
            threading.Timer(seconds, upstream.up).start()

    return maybe


def _stop_when(app, done) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not done():
            time.sleep(0.05)
        app.stop()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _values(msgs) -> list:
    return sorted(orjson.loads(m.value())["i"] for m in msgs)


def test_an_upstream_outage_in_user_code_waits_in_kafka_and_each_output_is_written_once(
        new_app, make_topic, produce, read_topic, committed):
    src, out, dlq = make_topic(partitions=2), make_topic(partitions=2), make_topic()
    n = 400
    for partition in (0, 1):
        produce(src, [(b"k", {"i": partition * n // 2 + i}) for i in range(n // 2)], partition=partition)
    upstream = Upstream()
    trigger = _outage_after(upstream, 150, 2.0)
    seen: set = set()

    def call_upstream(value):
        trigger()
        upstream.call()  # ConnectionRefusedError during the outage
        seen.add(value["i"])
        return value

    app, group = new_app(dead_letter_topic=dlq, processing_guarantee="exactly-once", commit_interval=0.5)
    app.dataframe(app.topic(src)).apply(call_upstream).to_topic(app.topic(out))
    metrics = EdgeMetrics()
    app.add_run_observer(metrics)
    reasons = []
    watcher = threading.Thread(target=lambda: [reasons.append(metrics.readiness().get("reason", "")) or time.sleep(0.1)
                                               for _ in range(60)], daemon=True)
    watcher.start()
    _stop_when(app, lambda: len(seen) == n)
    app.run()

    outputs = read_topic(out, n, settle=0.5)
    assert _values(outputs) == list(range(n))  # every record, each once, after the outage
    assert read_topic(dlq, 1, timeout=1) == []  # none dead-lettered
    assert metrics.registry.get_sample_value("stream_edge_outage_retries_total", {"stage": "processing"}) >= 1
    assert any(r.startswith("outage: an upstream service (ConnectionRefusedError)") for r in reasons)
    assert committed(group, src, partitions=2) == {0: n // 2, 1: n // 2}


class FlakySink(BatchingSink):
    """``add()`` refuses (ConnectionRefusedError) while ``down`` is set; ``write()`` times out
    the first ``write_failures`` times: a destination having an outage."""

    def __init__(self, write_failures: int) -> None:
        super().__init__()
        self.down = threading.Event()
        self.write_failures = write_failures
        self.written: list = []

    def add(self, value, key, timestamp, headers, topic, partition, offset):
        if self.down.is_set():
            raise ConnectionRefusedError(111, "Connection refused")
        super().add(value, key, timestamp, headers, topic, partition, offset)

    def write(self, batch):
        if self.write_failures:
            self.write_failures -= 1
            raise TimeoutError("the destination did not answer")
        self.written.extend(item.value["i"] for item in batch)


def test_an_outage_in_a_sink_is_retried_and_the_outputs_are_written_once(new_app, make_topic, produce, read_topic):
    src, out, dlq = make_topic(), make_topic(), make_topic()
    n = 200
    produce(src, [(b"k", {"i": i}) for i in range(n)])
    sink = FlakySink(write_failures=1)
    count = {"n": 0}

    def mark(value):
        count["n"] += 1
        if count["n"] == 60:
            sink.down.set()
            threading.Timer(1.0, sink.down.clear).start()
        return value

    app, _group = new_app(dead_letter_topic=dlq, processing_guarantee="exactly-once", commit_interval=0.3)
    sdf = app.dataframe(app.topic(src)).apply(mark)
    sdf.to_topic(app.topic(out))
    sdf.sink(sink)
    _stop_when(app, lambda: len(set(sink.written)) == n)
    app.run()

    assert sorted(set(sink.written)) == list(range(n))  # a sink is at-least-once; none lost
    assert _values(read_topic(out, n, settle=0.5)) == list(range(n))  # exactly once
    assert read_topic(dlq, 1, timeout=1) == []


def _registry_server():
    path = Path(__file__).resolve().parents[2] / "compat" / "serializers" / "registry_server.py"
    spec = importlib.util.spec_from_file_location("outage_registry_server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RegistryServer()


@pytest.mark.parametrize("failure", ["no answer", "401"])
def test_a_schema_registry_outage_waits_and_nothing_is_dead_lettered(failure, new_app, make_topic, produce,
                                                                     read_topic):
    from stream_edge.models.serializers import SchemaRegistryClientConfig, SerializationContext
    from stream_edge.models.serializers.avro import AvroDeserializer, AvroSerializer

    registry = _registry_server()
    real_answer = registry._answer
    broken = threading.Event()

    def answer(method, parts, body):
        if broken.is_set():
            if failure == "401":
                return 401, {"error_code": 40101, "message": "Unauthorized"}
            raise ConnectionAbortedError("the registry stops answering")  # the connection drops
        return real_answer(method, parts, body)

    registry._answer = answer
    try:
        schema = {"type": "record", "name": "R", "fields": [{"name": "i", "type": "int"}]}
        writer = AvroSerializer(schema, schema_registry_client_config=SchemaRegistryClientConfig(
            url=registry.url, basic_auth_user_info="writer:w"))
        src, dlq = make_topic(), make_topic()
        ctx = SerializationContext(src, "value")
        produce(src, [(b"k", writer({"i": i}, ctx)) for i in range(20)])
        broken.set()  # until the app met it (its client's own retries ride out short ones), at most 20 s
        reader_url = registry.url.replace("http://", "http://edge:s3cret@")  # a fresh client, a secret in the URL
        seen: list = []
        app, _group = new_app(dead_letter_topic=dlq, commit_interval=0.5)
        topic = app.topic(src, value_deserializer=AvroDeserializer(
            schema_registry_client_config=SchemaRegistryClientConfig(url=reader_url)))
        app.dataframe(topic).update(lambda v: seen.append(v["i"]))
        metrics = EdgeMetrics()
        app.add_run_observer(metrics)

        def heal() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not metrics.registry.get_sample_value(
                    "stream_edge_outage_retries_total", {"stage": "deserialization"}):
                time.sleep(0.1)
            broken.clear()

        threading.Thread(target=heal, daemon=True).start()
        _stop_when(app, lambda: len(seen) >= 20)
        app.run()
    finally:
        registry.close()
    assert sorted(seen) == list(range(20))
    assert read_topic(dlq, 1, timeout=1) == []
    assert metrics.registry.get_sample_value("stream_edge_outage_retries_total", {"stage": "deserialization"}) >= 1


def test_a_dead_letter_too_large_is_delivered_cut_and_the_stream_goes_on(new_app, make_topic, produce, read_topic,
                                                                         committed):
    src, out, dlq = make_topic(), make_topic(), make_topic()
    huge = b"\x01" + b"x" * 999_699  # 999,700 bytes, not JSON
    produce(src, [(b"a", {"i": 0}), (b"big", huge), (b"b", {"i": 1})])
    app, group = new_app(dead_letter_topic=dlq, commit_interval=0.3)
    app.dataframe(app.topic(src)).to_topic(app.topic(out))
    app.run(count=2, timeout=20)
    assert _values(read_topic(out, 2, settle=0.5)) == [0, 1]  # once each: no crash, no replay
    [letter] = read_topic(dlq, 1, settle=0.5)
    headers = dict(letter.headers())
    assert huge.startswith(letter.value()) and len(letter.value()) < len(huge)
    assert headers[HEADER_PREFIX + "value.original.size"] == b"999700"
    assert headers[HEADER_PREFIX + "value.sha256"] == hashlib.sha256(huge).hexdigest().encode()
    assert headers[HEADER_PREFIX + "offset"] == b"1"
    assert committed(group, src)[0] == 3


def test_exactly_once_a_dead_lettered_record_leaves_no_output_and_no_state(new_app, make_topic, produce, read_topic):
    """The bad record wrote to ``to_topic`` and to the state before it failed: the checkpoint is
    aborted and replayed, the record dead-lettered before it runs; nothing of it is committed."""
    src, early, late, dlq = make_topic(), make_topic(), make_topic(), make_topic()
    items = [(b"k", {"i": i, "bad": i == 7}) for i in range(15)]
    produce(src, items)

    def count(value, state):
        state.set("n", state.get("n", 0) + 1)
        return {**value, "n": state.get("n")}

    def check(value):
        if value["bad"]:
            raise ValueError(f"record {value['i']} is bad")
        return value

    app, _group = new_app(dead_letter_topic=dlq, processing_guarantee="exactly-once", commit_interval=0.3)
    sdf = app.dataframe(app.topic(src)).apply(count, stateful=True)
    sdf.to_topic(app.topic(early))
    sdf.apply(check).to_topic(app.topic(late))
    app.run(timeout=2)

    firsts = [orjson.loads(m.value()) for m in read_topic(early, 14, settle=1.0)]
    assert sorted(v["i"] for v in firsts) == [i for i in range(15) if i != 7]  # no output of the bad record
    assert [v["n"] for v in sorted(firsts, key=lambda v: v["i"])] == list(range(1, 15))  # nor its state change
    assert _values(read_topic(late, 14, settle=0.5)) == [i for i in range(15) if i != 7]
    [letter] = read_topic(dlq, 1, settle=0.5)
    assert dict(letter.headers())[HEADER_PREFIX + "offset"] == b"7"
    assert orjson.loads(letter.value()) == {"i": 7, "bad": True}


def test_is_outage_tells_an_error_callback_which_kind_it_got(new_app, make_topic, produce):
    src = make_topic()
    produce(src, [(b"k", {"i": 0})])
    kinds = []

    def on_processing_error(exc, row, logger):
        kinds.append(is_outage(exc))
        return False  # stop

    app, _group = new_app(on_processing_error=on_processing_error)
    app.dataframe(app.topic(src)).apply(lambda v: socket.create_connection(("127.0.0.1", 9), timeout=1))
    with pytest.raises(ConnectionRefusedError):
        app.run(timeout=5)
    assert kinds == [True]


def _auth_mosquitto():
    """A private Mosquitto (the local service's package) that wants a password: ``edge`` is
    refused until :func:`_accept_edge` sets the password the sink uses."""
    import subprocess
    import uuid

    from infra.local.connector_services import Mosquitto

    class AuthMosquitto(Mosquitto):
        def prepare(self) -> None:
            super().prepare()
            conf = self.home / "mosquitto.conf"
            passwd = self.home / "passwd"
            subprocess.run(["mosquitto_passwd", "-b", "-c", str(passwd), "reader", "r"], check=True)
            subprocess.run(["mosquitto_passwd", "-b", str(passwd), "edge", "an-old-password"], check=True)
            conf.write_text(conf.read_text().replace("allow_anonymous true", f"allow_anonymous false\npassword_file {passwd}"))

        def ready(self) -> bool:  # any CONNACK: it answers (and refuses anonymous clients)
            port = self._saved_port("tcp")
            try:
                with socket.create_connection(("127.0.0.1", port), 1) as sock:
                    sock.settimeout(1)
                    sock.sendall(bytes([0x10, 0x0C, 0x00, 0x04]) + b"MQTT" + bytes([0x04, 0x02, 0x00, 0x3C, 0x00, 0x00]))
                    return sock.recv(2) == bytes([0x20, 0x02])
            except (OSError, TypeError):
                return False

    server = AuthMosquitto(name=f"mosquitto-auth-{uuid.uuid4().hex[:6]}")
    server.start()
    return server


def _accept_edge(server) -> None:
    import os
    import signal
    import subprocess

    subprocess.run(["mosquitto_passwd", "-b", str(server.home / "passwd"), "edge", "right"], check=True)
    os.kill(server.pid(), signal.SIGHUP)  # Mosquitto reloads its password file


def test_mosquitto_refusing_the_session_is_an_outage_and_every_record_arrives_after(new_app, make_topic, produce,
                                                                                    read_topic):
    import shutil
    import uuid

    import paho.mqtt.client as mqtt

    from stream_edge.sinks.community.mqtt import MQTTSink

    server = _auth_mosquitto()
    port = server.port()
    root = f"refused-{uuid.uuid4().hex[:6]}"
    got: set = set()
    reader = mqtt.Client(callback_api_version=mqtt.CallbackAPIVersion.VERSION2, client_id=f"r-{root}")
    reader.username_pw_set("reader", "r")
    reader.on_connect = lambda c, u, f, rc, p: c.subscribe(f"{root}/#", qos=1)
    reader.on_message = lambda c, u, m: got.add(orjson.loads(m.payload)["i"])
    reader.connect("127.0.0.1", port)
    reader.loop_start()
    try:
        src, dlq = make_topic(), make_topic()
        produce(src, [(b"k%d" % i, {"i": i}) for i in range(50)])
        sink = MQTTSink(f"edge-{root}", "127.0.0.1", port, root, username="edge", password="right",
                        tls_enabled=False, mqtt_flush_timeout_seconds=2)
        app, _group = new_app(dead_letter_topic=dlq, commit_interval=0.5)
        app.dataframe(app.topic(src)).sink(sink)
        metrics = EdgeMetrics()
        app.add_run_observer(metrics)

        def fix_when_refused() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not metrics.registry.get_sample_value(
                    "stream_edge_outage_retries_total", {"stage": "processing"}):
                time.sleep(0.1)
            _accept_edge(server)

        threading.Thread(target=fix_when_refused, daemon=True).start()
        _stop_when(app, lambda: len(got) == 50)
        app.run()
        assert got == set(range(50))  # every record, after the broker accepted the session
        assert read_topic(dlq, 1, timeout=1) == []  # none dead-lettered
    finally:
        reader.loop_stop()
        server.stop()
        shutil.rmtree(server.home, ignore_errors=True)


class Proxy:
    """A TCP proxy on a fixed loopback port to ``target`` (host:port): the catalog as the sink sees
    it. :meth:`down` stops it (listener and open connections closed: refused), :meth:`up` starts it."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host.split("//")[-1], int(port.split("/")[0]))
        self.port = _free_port()
        self._conns: list = []
        self._server = None

    def up(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            backend = socket.create_connection(self.target)
            self._conns += [client, backend]
            for a, b in ((client, backend), (backend, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self) -> None:
        _close_listener(self._server)
        for conn in self._conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self._conns = []


def test_the_catalog_stopped_for_10s_under_the_data_lake_sink_is_an_outage(new_app, make_topic, produce, read_topic,
                                                                           services_env, tmp_path):
    import uuid

    from pyiceberg.catalog import load_catalog

    from stream_edge.sinks.core.datalake import DataLakeSink

    rest = services_env["ICEBERG_REST_URI"]
    proxy = Proxy(rest)
    proxy.up()
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = DataLakeSink("readings", storage_url=(tmp_path / "lake").as_uri(), catalog_url=f"http://127.0.0.1:{proxy.port}",
                        catalog_namespace=namespace, register_in_catalog=True, max_buffer_bytes=4096)
    src, dlq = make_topic(), make_topic()
    produce(src, [(b"k", {"i": i, "pad": "x" * 40}) for i in range(100)])

    def registered() -> set:
        try:
            table = load_catalog("check", type="rest", uri=rest).load_table((namespace, "readings"))
        except Exception:  # noqa: BLE001 - not created yet
            return set()
        return set(table.scan(selected_fields=("i",)).to_arrow().column("i").to_pylist())

    app, _group = new_app(dead_letter_topic=dlq, commit_interval=0.5)
    app.dataframe(app.topic(src)).sink(sink)
    metrics = EdgeMetrics()
    app.add_run_observer(metrics)
    done = threading.Event()

    def outage() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(registered()) < 100:
            time.sleep(0.2)
        proxy.down()  # the catalog stops answering (connections refused) for 10 s
        produce(src, [(b"k", {"i": i, "pad": "x" * 40}) for i in range(100, 300)])  # early writes and checkpoints
        time.sleep(10)
        proxy.up()
        while time.monotonic() < deadline + 30 and len(registered()) < 300:
            time.sleep(0.2)
        done.set()

    threading.Thread(target=outage, daemon=True).start()
    _stop_when(app, done.is_set)
    try:
        app.run()
    finally:
        proxy.down()
    table = load_catalog("check", type="rest", uri=rest).load_table((namespace, "readings"))
    rows = table.scan(selected_fields=("i",)).to_arrow().column("i").to_pylist()
    assert sorted(rows) == list(range(300))  # every record registered once, the ones of the outage after it
    assert read_topic(dlq, 1, timeout=1) == []  # none dead-lettered (nor in the lake and on the topic)
    assert sink.stats()["storage_faults_transient"] >= 1  # the registration backed off


def test_an_outage_longer_than_max_retry_seconds_stops_cleanly_naming_the_service_and_the_record(
        new_app, make_topic, produce, read_topic, committed):
    from stream_edge.errors import OutageTimeoutError

    src, dlq = make_topic(), make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(5)])
    upstream = Upstream()
    upstream.down()  # and never back

    def call_upstream(value):
        if value["i"] == 2:
            upstream.call()
        return value

    app, group = new_app(dead_letter_topic=dlq, max_retry_seconds=1.5, commit_interval=0.2)
    app.dataframe(app.topic(src)).apply(call_upstream)
    with pytest.raises(OutageTimeoutError, match=r"an upstream service \(ConnectionRefusedError\) has been unavailable "
                                                 r"for \d+s \(max_retry_seconds=1.5\) at topic '.+' partition 0 offset 2"):
        app.run(timeout=30)
    assert committed(group, src)[0] == 2  # the records before it; it and those after stay in Kafka
    assert read_topic(dlq, 1, timeout=1) == []
