"""Documented Quix Streams 3.x examples of serialization, topics and state: the built-in
serializers by name (``json``, ``str``, ``bytes``, ``int``, ``double``) on ``app.topic()``, a topic
with its own ``TopicConfig``, a timestamp extractor, the ``State`` API of the stateful-processing
guide (``get`` with a default, ``set``, ``exists``, ``delete``) and ``on_processing_error`` skipping
bad records, each run on recorded input on the real broker, on quixstreams 3.28.1 and on
stream_edge. One shared run per package; one test id per example (``EXAMPLES``)."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-docs-serialization-state")]  # one worker: one shared run

PROGRAM = r'''
import json
import struct
import tempfile
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application, State
from quixstreams.models import TopicConfig

suffix = uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})
producer = Producer({"bootstrap.servers": BROKER})
counter = [0]


def topic_with(records):
    counter[0] += 1
    name = f"docs4-{suffix}-{counter[0]}"
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    for key, value, ts in records:
        producer.produce(name, key=key, value=value, timestamp=ts)
    producer.flush()
    return name


def new_app(**kw):
    counter[0] += 1
    return Application(broker_address=BROKER, consumer_group=f"g4-{suffix}-{counter[0]}", auto_offset_reset="earliest",
                       loglevel=None, state_dir=tempfile.mkdtemp(), **kw)


def show(rows):
    for row in rows:
        print(repr(row))


def deserialized(name, records, **serializers):
    print("==", name)
    app = new_app()
    app.dataframe(app.topic(topic_with(records), **serializers))
    show(app.run(count=len(records), timeout=30))


deserialized("json values and string keys", [(b"k1", b'{"a": 1}', 1), (b"k2", b'[1, 2]', 2)],
             value_deserializer="json", key_deserializer="str")
deserialized("string values", [(b"k", "héllo".encode(), 1)], value_deserializer="str")
deserialized("bytes values", [(b"k", b"\x00\x01", 1)], value_deserializer="bytes")
deserialized("integer values", [(b"k", struct.pack(">i", 42), 1), (b"k", struct.pack(">i", -7), 2)],
             value_deserializer="int")
deserialized("double values", [(b"k", struct.pack(">d", 2.5), 1)], value_deserializer="double")

print("== serializers on output")
app = new_app()
out_topic = app.topic("docs4-out-" + suffix, value_serializer="json", key_serializer="str")
message = out_topic.serialize(key="id-1", value={"x": 1})
print(message.key, message.value)
for name in ("str", "int", "double", "bytes"):
    topic = app.topic(f"docs4-{name}-{suffix}", value_serializer=name)
    sample = {"str": "abc", "int": 7, "double": 1.5, "bytes": b"raw"}[name]
    print(name, topic.serialize(key=b"k", value=sample).value)

print("== topic with its own config")
app = new_app()
configured = app.topic("docs4-conf-" + suffix, value_deserializer="json",
                       config=TopicConfig(num_partitions=3, replication_factor=1,
                                                 extra_config={"retention.ms": "3600000"}))
print(configured.create_config.num_partitions, configured.broker_config.num_partitions,
      configured.broker_config.extra_config.get("retention.ms"))

print("== timestamp extractor")


def from_value(value, headers, timestamp, timestamp_type):
    return value["ts"]


app = new_app()
sdf = app.dataframe(app.topic(topic_with([(b"k", b'{"ts": 123456, "v": 1}', 5)]), value_deserializer="json",
                              timestamp_extractor=from_value))
sdf = sdf.apply(lambda v, k, t, h: {"v": v["v"], "timestamp": t}, metadata=True)
show(app.run(count=1, timeout=30))

print("== state get, set, exists, delete")


def track(value: dict, state: State):
    before = [state.exists("total"), state.get("total"), state.get("total", 0)]
    if value.get("reset"):
        state.delete("total")
        return {"before": before, "total": None}
    state.set("total", state.get("total", 0) + value["n"])
    return {"before": before, "total": state.get("total")}


app = new_app()
sdf = app.dataframe(app.topic(topic_with([(b"a", b'{"n": 2}', 1), (b"a", b'{"n": 3}', 2),
                                          (b"a", b'{"reset": true}', 3), (b"a", b'{"n": 1}', 4),
                                          (b"b", b'{"n": 9}', 5)]), value_deserializer="json"))
sdf.apply(track, stateful=True)
show(app.run(count=5, timeout=30))

print("== skip bad records with on_processing_error")
skipped = []


def on_processing_error(exc, row, logger):
    skipped.append([type(exc).__name__, row.value])
    return True


app = new_app(on_processing_error=on_processing_error)
sdf = app.dataframe(app.topic(topic_with([(b"k", b'{"n": 4}', 1), (b"k", b'{"n": 0}', 2), (b"k", b'{"n": 2}', 3)]),
                              value_deserializer="json"))
sdf = sdf.apply(lambda v: {"inverse": 1 / v["n"]})
show(app.run(count=2, timeout=30))
print("skipped", skipped)
'''

EXAMPLES = ["json values and string keys", "string values", "bytes values", "integer values", "double values",
            "serializers on output", "topic with its own config", "timestamp extractor",
            "state get, set, exists, delete", "skip bad records with on_processing_error"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=300)


@pytest.mark.parametrize("example", EXAMPLES)
def test_documented_example_matches_quixstreams(outputs, example):
    shown = compare_section(outputs, example)
    assert shown.strip()
