"""``MQTTSink`` as on quixstreams 3.28.1, against the local Mosquitto server: connection errors raised
by ``setup()`` (and handed to ``on_client_connect_failure``) with the socket's own exception types,
records published by ``add()`` and confirmed by ``flush()``, and ``_cleanup()`` stopping the network
loop and disconnecting; the retain flag (a callable) as a late subscriber sees it;
``properties`` refused on MQTT 3.1.1; and what a user's unit test that patches paho's ``Client`` (as
Quix's own tests of this sink do) sees: the client's constructor arguments, ``setup()`` returning
after ``connect()``/``loop_start()``, ``publish()``'s keyword arguments, and a failing publish
stopping and disconnecting the client before its error propagates. One shared run per package; one
test per printed section."""

import pytest

from tests.compat.conftest import compare_section, ensure_quix_packages

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-mqtt")]  # one worker: one shared run

PROGRAM = r'''
import json
import socket
import threading
import time
import uuid

import paho.mqtt.client as paho
from quixstreams.sinks.community.mqtt import MQTTSink

suffix = uuid.uuid4().hex[:8]


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe(exc):
    return [type(exc).__name__, isinstance(exc, ConnectionError), isinstance(exc, OSError)]


print("== connection errors")
sink = MQTTSink(client_id="c-" + suffix, server="127.0.0.1", port=closed_port(), topic_root="t", tls_enabled=False)
try:
    sink.setup()
    print("setup", "connected")
except Exception as exc:
    print("setup", describe(exc), str(exc))
failures = []
sink = MQTTSink(client_id="c-" + suffix, server="127.0.0.1", port=closed_port(), topic_root="t", tls_enabled=False,
                on_client_connect_failure=failures.append)
sink.start()
print("callback", [describe(exc) for exc in failures])
sink = MQTTSink(client_id="c-" + suffix, server="no-such-host.invalid", port=1883, topic_root="t", tls_enabled=False)
try:
    sink.setup()
except Exception as exc:
    print("unknown host", describe(exc))
for kwargs in ({"qos": 2}, {"version": "4"}):
    try:
        MQTTSink(client_id="x", server="127.0.0.1", port=1, topic_root="t", tls_enabled=False, **kwargs)
    except Exception as exc:
        print("invalid", kwargs, type(exc).__name__)

print("== publish and cleanup")
received, done = [], threading.Event()


def on_message(client, userdata, message):
    received.append([message.topic.replace(suffix, "S"), message.payload.decode()])
    if len(received) == 3:
        done.set()


subscribed = threading.Event()
reader = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="r-" + suffix)
reader.on_message = on_message
reader.on_subscribe = lambda *args: subscribed.set()
reader.connect("127.0.0.1", PORT)
reader.loop_start()
reader.subscribe(f"root-{suffix}/#", qos=1)
subscribed.wait(10)
sink = MQTTSink(client_id="w-" + suffix, server="127.0.0.1", port=PORT, topic_root="root-" + suffix,
                tls_enabled=False, qos=1)
sink.setup()
for i, key in enumerate([b"a", b"b", b"a"]):
    sink.add(value={"n": i}, key=key, timestamp=i, headers=[], topic="in", partition=0, offset=i)
sink.flush()
print("received", done.wait(20), sorted(received))
print("loop running", sink._client._thread is not None)
sink._cleanup()
time.sleep(0.2)
print("after cleanup", sink._client._thread is None, sink._client.is_connected())

print("== retain")
root = "retain-" + suffix
sink = MQTTSink(client_id="k-" + suffix, server="127.0.0.1", port=PORT, topic_root=root, tls_enabled=False, qos=1,
                retain=lambda value: value["n"] == 1)
sink.setup()
for i, key in enumerate([b"a", b"b"]):
    sink.add(value={"n": i + 1}, key=key, timestamp=i, headers=[], topic="in", partition=0, offset=i)
sink.flush()
sink._cleanup()
late, got = [], threading.Event()
reader.on_message = lambda client, userdata, message: (late.append([message.topic.replace(suffix, "S"),
                                                                    message.payload.decode(), message.retain]),
                                                       got.set())
reader.subscribe(root + "/#", qos=1)  # subscribed after the publishes: only the retained message comes
print("retained", got.wait(20), late)
reader.loop_stop()
reader.disconnect()
try:
    MQTTSink(client_id="p", server="127.0.0.1", port=1, topic_root="t", tls_enabled=False, properties=lambda v: None)
except ValueError as exc:
    print("properties on 3.1.1", exc)

print("== patched client")
# What a user's unit test sees when it patches paho's Client, as Quix's own tests of this sink do.
from unittest.mock import patch


class Info:
    rc, mid = 0, 123


with patch("paho.mqtt.client.Client") as Client:
    sink = MQTTSink(client_id="test_client", server="localhost", port=1883, topic_root="test/topic",
                    username="user", password="pass", tls_enabled=True, qos=1)
client = Client.return_value
print("client", Client.call_args)
print("auth", client.username_pw_set.call_args, "tls", client.tls_set.call_count)
sink.setup()
print("connect", client.connect.call_args, "loop_start", client.loop_start.call_count)
client.publish.return_value = Info()
sink.add(value="test_data", key=b"test_key", timestamp=1, headers=[], topic="t", partition=0, offset=1)
print("publish", client.publish.call_args)
client.publish.side_effect = ConnectionError("publish error")
try:
    sink.add(value="data", key=b"key", timestamp=2, headers=(), topic="t", partition=0, offset=2)
except ConnectionError as exc:
    print("error", type(exc).__name__, exc)
print("stopped", client.loop_stop.call_count, "disconnected", client.disconnect.call_count)
'''

SECTIONS = ["connection errors", "publish and cleanup", "retain", "patched client"]


@pytest.fixture(scope="module")
def outputs(run_both_module, quix_python, ensure_services):
    ensure_quix_packages(quix_python, "paho-mqtt==2.2.0")
    env = ensure_services("mosquitto")
    return run_both_module(f"PORT = {int(env['MQTT_PORT'])}\n" + PROGRAM, timeout=120)


@pytest.mark.parametrize("section", SECTIONS)
def test_mqtt_sink_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_refused_connection_is_connection_refused_error(outputs):
    shown = compare_section(outputs, "connection errors")
    assert "setup ['ConnectionRefusedError', True, True]" in shown
    assert "after cleanup True False" in compare_section(outputs, "publish and cleanup")


def test_retained_message_and_a_failing_publish_stop_the_client(outputs):
    retained = compare_section(outputs, "retain")
    assert "retained True [['retain-S/a', '{\"n\": 1}', True]]" in retained
    assert "properties on 3.1.1 MQTT Properties can only be used with MQTT protocol version 5" in retained
    patched = compare_section(outputs, "patched client")
    assert "connect call('localhost', 1883) loop_start 1" in patched
    assert "payload='\"test_data\"', qos=1, properties=None, retain=False" in patched
    assert "error ConnectionError publish error\nstopped 1 disconnected 1" in patched
