"""on_late callbacks receive what Quix Streams 3.28 passes them (value, key, timestamp, lateness,
window bounds, store name, coordinates), for every time-based window kind and session windows
(real broker, same program on both packages, outputs compared byte for byte)."""

import json

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json
from quixstreams import Application

app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                  state_dir=STATE_DIR)
seen = []

def on_late(value, key, timestamp_ms, late_by_ms, start, end, store_name, topic, partition, offset):
    seen.append([value, key, timestamp_ms, late_by_ms, start, end, store_name, topic == TOPIC, partition, offset])
    return False  # do not log

sdf = app.dataframe(app.topic(TOPIC, value_deserializer="json", key_deserializer="str"))
sdf.tumbling_window(10, grace_ms=2, on_late=on_late).sum().final()
sdf.hopping_window(10, step_ms=5, on_late=on_late).count().final()
sdf.sliding_window(10, grace_ms=1, on_late=on_late).max().final()
sdf.session_window(5, grace_ms=0, on_late=on_late).sum().final()
app.run(timeout=3)
for row in seen:
    print(json.dumps(row))
'''

EVENTS = [("a", 100, 1), ("a", 130, 2), ("a", 105, 3), ("b", 50, 4), ("a", 119, 5), ("a", 160, 6), ("a", 90, 7),
          ("b", 80, 8), ("b", 49, 9)]


def test_on_late_callbacks_match_quixstreams(run_both, kafka_bootstrap, make_topic):
    from confluent_kafka import Producer

    topic = make_topic(prefix="compat-late")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, ts, value in EVENTS:
        producer.produce(topic, json.dumps(value).encode(), key.encode(), timestamp=ts)
    assert producer.flush(30) == 0
    header = (f"BROKER = {kafka_bootstrap!r}\nTOPIC = {topic!r}\nGROUP = 'late-' + __import__('uuid').uuid4().hex[:8]\n"
              f"STATE_DIR = __import__('tempfile').mkdtemp()\n")
    out = run_both(header + PROGRAM)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix and out.edge.count("\n") >= 4
