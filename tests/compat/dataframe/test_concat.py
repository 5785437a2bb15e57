"""StreamingDataFrame.concat: the same program on quixstreams 3.28.1 and on stream_edge, on the real
broker, outputs compared byte for byte (two topics merged in timestamp order; two branches of one
topic merged back)."""

import json
import random

import pytest

pytestmark = pytest.mark.integration

TWO_TOPICS = r'''
from quixstreams import Application

app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                  state_dir=STATE_DIR)
left = app.dataframe(app.topic(LEFT, value_deserializer="json"))
right = app.dataframe(app.topic(RIGHT, value_deserializer="json"))
left = left.apply(lambda v: {"src": "left", **v})
right = right[right["x"] % 3 != 0]
both = left.concat(right.apply(lambda v: {"src": "right", **v}))
both["double"] = both["x"] * 2
both = both.filter(lambda v: v["x"] != 13)
both.print(pretty=False, metadata=True)
left.update(lambda v: print("left only", v["x"]))
print("stream_id matches:", both.stream_id == "--".join(sorted([LEFT, RIGHT])))
print("topics:", [t.name for t in both.topics] == [LEFT, RIGHT])
app.run(timeout=4)
'''

BRANCHES = r'''
from quixstreams import Application

app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                  state_dir=STATE_DIR)
sdf = app.dataframe(app.topic(LEFT, value_deserializer="json"))
even = sdf.filter(lambda v: v["x"] % 2 == 0)
odd = sdf[sdf["x"] % 2 == 1]
odd["odd"] = True
merged = odd.concat(even.apply(lambda v: {**v, "even": True}))
merged = merged.apply(lambda v: {**v, "merged": True})
merged.print(pretty=False, metadata=True)
sdf.update(lambda v: print("root", v))
print("stream_id:", merged.stream_id == LEFT)
app.run(timeout=4)
'''


def _header(bootstrap: str, left: str, right: str = "") -> str:
    return (f"BROKER = {bootstrap!r}\nLEFT = {left!r}\nRIGHT = {right!r}\n"
            "GROUP = 'concat-' + __import__('uuid').uuid4().hex[:8]\n"
            "STATE_DIR = __import__('tempfile').mkdtemp()\n")


def _produce(bootstrap: str, topic: str, events: list) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for key, ts, value in events:
        producer.produce(topic, json.dumps(value).encode(), key.encode(), timestamp=ts)
    assert producer.flush(30) == 0


def _timestamps(rng: random.Random, n: int) -> list:
    ts, out = 1_000, []
    for _ in range(n):
        ts += rng.choice([0, 1, 2, 5, 17])  # ties between and within the topics included
        out.append(ts)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_concat_of_two_topics_matches_quixstreams(run_both, kafka_bootstrap, make_topic, seed):
    rng = random.Random(seed)
    left, right = make_topic(prefix="compat-concat-l"), make_topic(prefix="compat-concat-r")
    _produce(kafka_bootstrap, left, [(rng.choice("ab"), ts, {"x": i}) for i, ts in enumerate(_timestamps(rng, 40))])
    _produce(kafka_bootstrap, right, [(rng.choice("ab"), ts, {"x": 100 + i})
                                      for i, ts in enumerate(_timestamps(rng, 40))])
    out = run_both(_header(kafka_bootstrap, left, right) + TWO_TOPICS)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    assert "stream_id matches: True" in out.edge and "'src': 'right'" in out.edge
    assert out.edge.count("'src':") == 40 + sum(1 for i in range(40) if (100 + i) % 3 != 0) - 1


def test_concat_of_two_branches_matches_quixstreams(run_both, kafka_bootstrap, make_topic):
    rng = random.Random(7)
    topic = make_topic(prefix="compat-concat-b")
    _produce(kafka_bootstrap, topic, [(rng.choice("abc"), 1_000 + i, {"x": rng.randrange(50)}) for i in range(30)])
    out = run_both(_header(kafka_bootstrap, topic) + BRANCHES)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    assert out.edge.count("'merged': True") == 30 and out.edge.count("root") == 30
