"""MQTTSink on the real local Mosquitto broker and Kafka broker; a subscriber in the test sees what
the broker delivers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
import uuid

import pytest
from connector_testkit import record, stop_program, wait_for_log

from infra.local.connector_services import Mosquitto
from stream_edge.sinks.community.mqtt import MQTTSink

pytestmark = pytest.mark.integration

SINK = "stream_edge.sinks.community.mqtt:MQTTSink"
RECORDS = 3000


class Subscriber:
    """A QoS 1 subscriber to ``<root>/#`` collecting ``(topic, payload)``."""

    def __init__(self, port: int, root: str, mqtt5: bool = False) -> None:
        import paho.mqtt.client as mqtt

        self.messages: list[tuple[str, bytes]] = []
        self.user_properties: list[list[tuple[str, str]]] = []
        self._lock = threading.Lock()
        ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"sub-{uuid.uuid4().hex[:8]}",
                                  protocol=mqtt.MQTTv5 if mqtt5 else mqtt.MQTTv311)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *args: ready.set()
        self.client.max_inflight_messages_set(1000)
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(f"{root}/#", qos=1)
        self.client.loop_start()
        assert ready.wait(30), "the subscription was never acknowledged"

    def _on_message(self, client, userdata, message) -> None:
        with self._lock:
            self.messages.append((message.topic, message.payload))
            props = getattr(message, "properties", None)
            self.user_properties.append(list(getattr(props, "UserProperty", []) or []))

    def ids(self) -> set[int]:
        with self._lock:
            return {json.loads(payload)["id"] for _, payload in self.messages}

    def wait_for_ids(self, expected: set[int], timeout: float = 60) -> set[int]:
        deadline = time.monotonic() + timeout
        while not expected <= self.ids() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.ids()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def sink_spec(port: int, root: str, **extra) -> dict:
    return {"class": SINK, "kwargs": dict(client_id=f"edge-{uuid.uuid4().hex[:8]}", server="127.0.0.1", port=port,
                                          topic_root=root, tls_enabled=False, **extra)}


def test_kill9_mid_stream_then_restart_delivers_every_record(make_topic, produce, run_program, mqtt_env):
    port = int(mqtt_env["MQTT_PORT"])
    root = f"kill9-{uuid.uuid4().hex[:8]}"
    sub = Subscriber(port, root)
    try:
        topic = make_topic(partitions=2, prefix="mqtt-kill9")
        produce(topic, RECORDS)
        group = f"mqtt-kill9-{uuid.uuid4().hex[:8]}"
        sink = sink_spec(port, root)
        crashed = run_program(topic, group, sink, crash_after=1000)
        assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
        assert 0 < len(sub.ids()) < RECORDS
        finished = run_program(topic, group, sink)
        assert finished.returncode == 0, finished.stdout + finished.stderr
        assert sub.wait_for_ids(set(range(RECORDS))) == set(range(RECORDS))  # nothing lost
        with sub._lock:
            first = {t: json.loads(p) for t, p in sub.messages}
        assert first[f"{root}/k7"] == record(7)  # <topic_root>/<key>, JSON of the value
    finally:
        sub.close()


@pytest.fixture()
def private_mosquitto():
    """A broker of this test alone (the test freezes it with SIGSTOP)."""
    server = Mosquitto(name=f"mosquitto-bp-{uuid.uuid4().hex[:6]}")
    server.start()
    yield server
    pid = server.pid()
    if pid is not None:
        os.kill(pid, signal.SIGCONT)
    server.stop()
    shutil.rmtree(server.home, ignore_errors=True)


def test_frozen_broker_is_backpressure_then_everything_arrives(make_topic, produce, run_program, private_mosquitto,
                                                               tmp_path):
    port = private_mosquitto.port()
    root = "bp"
    sub = Subscriber(port, root)
    topic = make_topic(partitions=1, prefix="mqtt-bp")
    sink = sink_spec(port, root, mqtt_flush_timeout_seconds=1)
    sink.update(idle_timeout=10, commit_every=100)
    produce(topic, 300)
    proc = run_program(topic, f"mqtt-bp-{uuid.uuid4().hex[:8]}", sink, background=True, log_dir=tmp_path)
    try:
        assert sub.wait_for_ids(set(range(300))) == set(range(300))
        os.kill(private_mosquitto.pid(), signal.SIGSTOP)  # the broker stops answering
        try:
            produce(topic, 300, start=300)
            wait_for_log(proc, "MQTT acknowledgement timeout")
        finally:
            os.kill(private_mosquitto.pid(), signal.SIGCONT)
        assert proc.wait(timeout=180) == 0, proc.log_path.read_text()
        assert sub.wait_for_ids(set(range(600))) == set(range(600))
    finally:
        stop_program(proc)
        sub.close()


def test_bad_key_stops_the_app_naming_record_and_field(make_topic, run_program, mqtt_env, kafka_bootstrap):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="mqtt-bad")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b"ok", value=json.dumps(record(0)).encode())
    producer.produce(topic, value=json.dumps(record(1)).encode())  # no key: no MQTT topic
    producer.flush(30)
    done = run_program(topic, f"mqtt-bad-{uuid.uuid4().hex[:8]}", sink_spec(int(mqtt_env["MQTT_PORT"]), "bad"))
    assert done.returncode != 0
    assert f"cannot serialize the key of topic '{topic}' partition 0 offset 1" in done.stderr


def test_parameters_are_checked_and_refused_connection_reaches_the_callback():
    from infra.local.services import free_port

    with pytest.raises(ValueError, match="QoS level 2"):
        MQTTSink("c", "127.0.0.1", 1, "r", qos=2)
    with pytest.raises(ValueError, match="version"):
        MQTTSink("c", "127.0.0.1", 1, "r", version="4")
    seen = []
    MQTTSink("c", "127.0.0.1", free_port(), "r", tls_enabled=False, mqtt_flush_timeout_seconds=1,
             on_client_connect_failure=seen.append).start()
    assert len(seen) == 1 and isinstance(seen[0], ConnectionError)


def test_retain_and_mqtt5_properties(mqtt_env):
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    port = int(mqtt_env["MQTT_PORT"])
    root = f"retain-{uuid.uuid4().hex[:8]}"

    def props(value):
        p = Properties(PacketTypes.PUBLISH)
        p.UserProperty = ("n", str(value["n"]))
        return p

    sink = MQTTSink("retainer", "127.0.0.1", port, root, version="5", tls_enabled=False,
                    retain=lambda value: value["n"] == 1, properties=props)
    sink.setup()
    try:
        sink.add({"n": 1}, b"a", 0, [], "t", 0, 0)
        sink.add({"n": 2}, b"b", 0, [], "t", 0, 1)
        sink.flush("t", 0)
    finally:
        sink.cleanup()
    late = Subscriber(port, root, mqtt5=True)  # subscribes after the publishes: sees only the retained one
    try:
        deadline = time.monotonic() + 30
        while not late.messages and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        assert late.messages == [(f"{root}/a", b'{"n": 1}')]
        assert late.user_properties == [[("n", "1")]]
    finally:
        late.close()
    retained_clear = MQTTSink("clear", "127.0.0.1", port, root, tls_enabled=False, retain=True,
                              value_serializer=lambda v: "")  # an empty retained message clears it
    retained_clear.setup()
    retained_clear.add({}, b"a", 0, [], "t", 0, 0)
    retained_clear.flush("t", 0)
    retained_clear.cleanup()


def _refusing_broker() -> tuple[int, threading.Event]:
    """A TCP server that answers every MQTT 3.1.1 CONNECT with CONNACK "not authorized" (return
    code 5), as a broker with authentication does for bad credentials; the event stops it."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        with server:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    continue
                with conn:
                    conn.recv(1024)  # the CONNECT packet
                    conn.sendall(bytes([0x20, 0x02, 0x00, 0x05]))

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], stop


def test_a_session_the_broker_refuses_fails_the_next_add_naming_the_reason():
    port, stop = _refusing_broker()
    sink = MQTTSink("edge", "127.0.0.1", port, "refused", tls_enabled=False, username="u", password="wrong")
    sink.setup()  # returns once the socket is connected, as in Quix Streams 3.28.1
    try:
        deadline = time.monotonic() + 20
        with pytest.raises(ConnectionError, match=r"refused the session \(Not authorized\)"):
            while time.monotonic() < deadline:
                sink.add({"n": 1}, b"a", 0, [], "t", 0, 0)
                time.sleep(0.05)
    finally:
        sink.cleanup()
        stop.set()
