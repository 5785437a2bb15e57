"""Quix-format messages framed by headers (``__Q_ModelKey`` / ``__Q_CodecId``) produced by an
Application and consumed by another with ``QuixDeserializer``: the deserializer gets the consumed
message's headers, and the rows match quixstreams 3.28.1 on the real broker."""

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import uuid
from quixstreams import Application
from quixstreams.models.serializers.quix import QuixDeserializer, QuixEventsSerializer, QuixTimeseriesSerializer

run = uuid.uuid4().hex[:8]
app = Application(broker_address=BROKER, consumer_group="qh-" + run, auto_offset_reset="earliest")
ts_topic = app.topic("qh-ts-" + run, value_serializer=QuixTimeseriesSerializer(as_legacy=False))
ev_topic = app.topic("qh-ev-" + run, value_serializer=QuixEventsSerializer(as_legacy=False))
with app.get_producer() as producer:
    for i in range(3):
        msg = ts_topic.serialize(key=f"k{i}", value={"a": i, "b": f"s{i}", "Tags": {"t": "x"}, "Timestamp": 1000 + i})
        producer.produce(ts_topic.name, msg.value, msg.key, headers=ts_topic._value_serializer.extra_headers)
        msg = ev_topic.serialize(key=f"k{i}", value={"Id": f"e{i}", "Value": "v", "Tags": {}, "Timestamp": 2000 + i})
        producer.produce(ev_topic.name, msg.value, msg.key, headers=ev_topic._value_serializer.extra_headers)

for topic in (ts_topic, ev_topic):
    reader = Application(broker_address=BROKER, consumer_group="qh-read-" + topic.name, auto_offset_reset="earliest")
    sdf = reader.dataframe(reader.topic(topic.name, value_deserializer=QuixDeserializer()))
    rows = reader.run(count=3, timeout=10)
    for row in sorted(rows, key=lambda r: r["Timestamp"]):
        print(sorted(row.items()))
'''


def test_header_framed_quix_messages_round_trip_through_applications(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)
    assert out.edge == out.quix
    assert out.edge.count("\n") == 6 and "('a', 2)" in out.edge and "('Id', 'e1')" in out.edge
