"""Headers, timestamps and hopping window ranges as quixstreams 3.28.1 gives them: ``Topic.serialize``
keeps ``headers`` as given (``None`` stays ``None``, ``[]`` stays ``[]``) and leaves the timestamp
unset; rows of messages produced without headers carry ``None``; ``to_topic`` outputs keep the
input's headers; ``sdf.test()`` defaults; ``get_window_ranges`` oldest first; the order in which
hopping windows are emitted for one message by ``current()`` and ``final()`` (real broker). One
shared run per package; one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-headers-timestamps")]  # one worker: one shared run

PROGRAM = r'''
import json
import tempfile
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application
from quixstreams.dataframe.windows.base import get_window_ranges
from quixstreams.models import Topic

suffix = uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})


def show(label, func):
    try:
        print(label, repr(func()))
    except Exception as exc:
        print(label, type(exc).__name__, exc)


def new_app(group, **kw):
    return Application(broker_address=BROKER, consumer_group=group + "-" + suffix, auto_offset_reset="earliest",
                       loglevel=None, state_dir=tempfile.mkdtemp(), **kw)


def create(name, partitions=1):
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result()
    return name


def read(name, count):
    consumer = Consumer({"bootstrap.servers": BROKER, "group.id": "r-" + uuid.uuid4().hex[:6],
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([name])
    out = []
    for _ in range(60):
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            out.append(msg)
        if len(out) == count:
            break
    consumer.close()
    return out


print("== window ranges")
for args in [(10, 10, 5), (12, 10, 3), (3, 10, 5), (0, 10, 2), (25, 10, None), (100, 30, 10)]:
    ranges = get_window_ranges(*args)
    print(args, type(ranges).__name__, list(ranges))

print("== serialize")
topic = Topic("t", value_serializer="json", key_serializer="str")
for headers in (None, [], {"a": b"1"}, [("a", b"1")]):
    message = topic.serialize(key="k", value={"v": 1}, headers=headers)
    print(type(message).__name__, message.key, message.value, repr(message.headers), message.timestamp)
message = topic.serialize(key="k", value={"v": 1}, timestamp_ms=5)
print("timestamp", message.timestamp, repr(message.headers))

print("== rows")
source = create("hts-in-" + suffix)
producer = Producer({"bootstrap.servers": BROKER})
producer.produce(source, key=b"a", value=json.dumps({"x": 1}), timestamp=1_000)
producer.produce(source, key=b"a", value=json.dumps({"x": 2}), timestamp=2_000, headers=[("h", b"1")])
producer.produce(source, key=b"a", value=json.dumps({"x": 3}), timestamp=3_000, headers=[])
producer.flush()
app = new_app("rows")
sdf = app.dataframe(app.topic(source, value_deserializer="json"))
sink_name = create("hts-out-" + suffix)
sdf.to_topic(app.topic(sink_name, value_serializer="json"))
rows = app.run(count=3, timeout=60, metadata=True)
print([[r["x"], r["_timestamp"], r["_headers"]] for r in rows])
print("out", [[json.loads(m.value())["x"], m.timestamp()[1], m.headers()] for m in read(sink_name, 3)])
show("test defaults", lambda: app.dataframe(app.topic("hts-t-" + suffix, value_deserializer="json")).test({"a": 1}))

print("== hopping")
windows_in = create("hts-win-" + suffix)
for i, ts in enumerate([12, 17, 31, 44, 60]):
    producer.produce(windows_in, key=b"k", value=json.dumps({"x": i + 1}), timestamp=ts)
producer.flush()
app = new_app("hop")
sdf = app.dataframe(app.topic(windows_in, value_deserializer="json")).apply(lambda v: v["x"])
current = sdf.hopping_window(duration_ms=10, step_ms=5, name="cur").sum().current()
rows = app.run(count=10, timeout=60)
print("current", [[r["start"], r["end"], r["value"]] for r in rows])
app = new_app("hopf")
sdf = app.dataframe(app.topic(windows_in, value_deserializer="json")).apply(lambda v: v["x"])
final = sdf.hopping_window(duration_ms=30, step_ms=10, name="fin").sum().final()
rows = app.run(count=4, timeout=60)
print("final", [[r["start"], r["end"], r["value"]] for r in rows])
'''

SECTIONS = ["window ranges", "serialize", "rows", "hopping"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=240)


@pytest.mark.parametrize("section", SECTIONS)
def test_headers_timestamps_and_windows_match_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_window_ranges_are_oldest_first(outputs):
    shown = compare_section(outputs, "window ranges")
    assert "(12, 10, 3) deque [(3, 13), (6, 16), (9, 19), (12, 22)]" in shown
