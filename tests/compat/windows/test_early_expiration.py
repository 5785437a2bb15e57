"""before_update / after_update (early expiration) of tumbling and hopping windows: the same program
on quixstreams 3.28.1 and on stream_edge, on random streams on the real broker, outputs compared
byte for byte (the callbacks' arguments, the windows emitted by ``final()`` and ``current()``)."""

import json
import random

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
from quixstreams import Application
from quixstreams.dataframe.windows import Count, Max, Mean, Min, Sum

app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                  state_dir=STATE_DIR)
sdf = app.dataframe(app.topic(TOPIC, value_deserializer="json"))


def logging(label, decide):
    def callback(aggregated, value, key, timestamp, headers):
        result = decide(aggregated, value)
        print(label, repr(aggregated), value, key, timestamp, headers, result)
        return result
    return callback


def show(label):
    return lambda value, key, timestamp, headers: print(label, key, timestamp, value)


numbers = sdf.apply(lambda v: v["x"])
w = numbers.tumbling_window(10, grace_ms=4, name="t_sum",
                            before_update=logging("t_sum before", lambda a, v: v == 13),
                            after_update=logging("t_sum after", lambda a, v: a >= 40)).sum()
w.final().update(show("t_sum final"), metadata=True)
w = numbers.hopping_window(10, 5, grace_ms=2, name="h_mean",
                           before_update=logging("h_mean before", lambda a, v: a[1] >= 3 and v % 5 == 0),
                           after_update=logging("h_mean after", lambda a, v: a[0] > 50)).mean()
w.final().update(show("h_mean final"), metadata=True)
w = numbers.hopping_window(12, 4, name="h_cur", after_update=logging("h_cur after", lambda a, v: a > 30)).sum()
w.current().update(show("h_cur current"), metadata=True)
w = sdf.hopping_window(10, 5, grace_ms=3, name="h_agg",
                       before_update=logging("h_agg before", lambda a, v: v["x"] == 7),
                       after_update=logging("h_agg after", lambda a, v: a["n/Count"] >= 4 or a["hi/Max/x"] == 19))
w = w.agg(total=Sum("x"), n=Count(), avg=Mean("x"), hi=Max("x"), lo=Min("x"))
w.final().update(show("h_agg final"), metadata=True)
w = sdf.tumbling_window(8, name="t_reduce", before_update=logging("t_reduce before", lambda a, v: a is not None and len(a) >= 3))
w = w.reduce(lambda acc, v: acc + [v["x"]], lambda v: [v["x"]])
w.current().update(show("t_reduce current"), metadata=True)
app.run(timeout=4)
'''


def _events(rng: random.Random, n: int) -> list:
    ts, events = 100, []
    for _ in range(n):
        ts += rng.choice([0, 1, 2, 3, 4, 7])
        stamp = ts - rng.choice([5, 9, 14]) if rng.random() < 0.1 else ts  # some late or in-grace records
        events.append((rng.choice("abc"), max(stamp, 1), {"x": rng.randrange(20)}))
    return events


@pytest.mark.parametrize("seed", [3, 11, 12, 29])
def test_early_expiration_matches_quixstreams(run_both, kafka_bootstrap, make_topic, seed):
    from confluent_kafka import Producer

    topic = make_topic(prefix="compat-early")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, ts, value in _events(random.Random(seed), 150):
        producer.produce(topic, json.dumps(value).encode(), key.encode(), timestamp=ts)
    assert producer.flush(30) == 0
    header = (f"BROKER = {kafka_bootstrap!r}\nTOPIC = {topic!r}\nGROUP = 'early-' + __import__('uuid').uuid4().hex[:8]\n"
              f"STATE_DIR = __import__('tempfile').mkdtemp()\n")
    out = run_both(header + PROGRAM)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    lines = out.edge.splitlines()
    expiring = {line.split()[0] for line in lines if line.split()[1] in ("before", "after") and line.endswith("True")}
    assert len(expiring) >= 3, expiring  # the callbacks did expire windows early
    assert any(line.startswith("h_cur current") for line in lines)
