"""A split value's timestamps in a running application (the batch loop, not ``row_deserialize``):
the timestamp extractor sees each item and the timestamp it returned for the item before, on
quixstreams 3.28.1 and on stream_edge alike (real broker, one message in, one run)."""

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json
from confluent_kafka import Producer
from quixstreams import Application
from quixstreams.models import Deserializer, TimestampType


class Lines(Deserializer):
    split_values = True

    def __call__(self, value, ctx):
        return [json.loads(line) for line in value.splitlines()]


def extractor(value, headers, timestamp, timestamp_type):
    print("extractor", value, headers, timestamp, timestamp_type == TimestampType.TIMESTAMP_CREATE_TIME)
    return timestamp + value["dt"]


producer = Producer({"bootstrap.servers": BROKER})
producer.produce(TOPIC, value=b'{"dt": 5}\n{"dt": 7}\n{"dt": 0}', key=b"k", timestamp=1000, headers=[("h", b"1")])
producer.flush(30)
app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None)
sdf = app.dataframe(app.topic(TOPIC, value_deserializer=Lines(), timestamp_extractor=extractor))
sdf = sdf.apply(lambda value, key, timestamp, headers: print("row", value, key, timestamp, headers), metadata=True)
app.run(count=3, timeout=30)
'''


def test_the_extractor_stamps_each_item_of_a_split_value(run_both, kafka_bootstrap, make_topic):
    header = (f"BROKER = {kafka_bootstrap!r}\nTOPIC = {make_topic(prefix='compat-split-ts')!r}\n"
              f"GROUP = 'split-ts-' + __import__('uuid').uuid4().hex[:8]\n")
    out = run_both(header + PROGRAM)
    assert out.edge == out.quix
    assert "row {'dt': 7} b'k' 1012 [('h', b'1')]" in out.edge
