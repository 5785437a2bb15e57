"""Documented Quix Streams 3.x examples that need state or Kafka: stateful ``apply`` / ``filter`` /
``update`` with ``State``, ``group_by`` (column and callable), ``to_topic`` with a new key and a
dynamic topic, and the windowing guide's windows (tumbling, hopping, sliding, session, count-based)
with ``agg()`` and the aggregations of the reference (Sum, Count, Mean, Min, Max, First, Last,
Reduce, Collect), ``current()`` and ``final()``. Each runs ``app.run(count=..., timeout=...)`` on
recorded input on the real broker, on quixstreams 3.28.1 and on stream_edge. One shared run per
package; one test id per example (``EXAMPLES``)."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-docs-stateful")]  # one worker: one shared run

PROGRAM = r'''
import json
import tempfile
import uuid
from datetime import timedelta

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application, State
import quixstreams.dataframe.windows.aggregations as agg

suffix = uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})
producer = Producer({"bootstrap.servers": BROKER})
counter = [0]


def topic_with(records, partitions=1):
    counter[0] += 1
    name = f"docs-{suffix}-{counter[0]}"
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result()
    for key, value, ts in records:
        producer.produce(name, key=key.encode(), value=json.dumps(value), timestamp=ts)
    producer.flush()
    return name


def example(name, records, build, count, metadata=False, partitions=1):
    print("==", name)
    app = Application(broker_address=BROKER, consumer_group=f"g-{suffix}-{counter[0]}", auto_offset_reset="earliest",
                      loglevel=None, state_dir=tempfile.mkdtemp())
    sdf = app.dataframe(app.topic(topic_with(records, partitions), value_deserializer="json"))
    build(app, sdf)
    rows = [json.dumps(row, default=str).replace(suffix, "S") for row in app.run(count=count, timeout=30,
                                                                                metadata=metadata)]
    # several partitions: no order across them
    print("\n".join(sorted(rows) if partitions > 1 else rows))


def read(name, count):
    consumer = Consumer({"bootstrap.servers": BROKER, "group.id": "r-" + uuid.uuid4().hex[:6],
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([name])
    out = []
    for _ in range(40):
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            out.append([msg.key().decode(), json.loads(msg.value())])
        if len(out) == count:
            break
    consumer.close()
    return out


READINGS = [("a", {"v": 3}, 1000), ("b", {"v": 10}, 1100), ("a", {"v": 5}, 1200), ("a", {"v": 1}, 1900),
            ("b", {"v": 2}, 2300), ("a", {"v": 7}, 2600), ("a", {"v": 4}, 4100), ("b", {"v": 6}, 4200)]


def stateful_apply(app, sdf):
    def remember(value: dict, state: State):
        previous = state.get("last", None)
        state.set("last", value["v"])
        state.set("seen", state.get("seen", 0) + 1)
        return {"v": value["v"], "previous": previous, "seen": state.get("seen")}
    sdf.apply(remember, stateful=True)


def stateful_filter(app, sdf):
    def rising(value: dict, state: State):
        if value["v"] > state.get("max", 0):
            state.set("max", value["v"])
            return True
        return False
    sdf.filter(rising, stateful=True)


def stateful_update(app, sdf):
    def running_total(value: dict, state: State):
        total = state.get("total", 0) + value["v"]
        state.set("total", total)
        value["total"] = total
    sdf.update(running_total, stateful=True)


PURCHASES = [("store-1", {"customer_account_id": "c1", "customer_spent": 10}, 1000),
             ("store-2", {"customer_account_id": "c2", "customer_spent": 5}, 1001),
             ("store-2", {"customer_account_id": "c1", "customer_spent": 7}, 1002),
             ("store-1", {"customer_account_id": "c2", "customer_spent": 1}, 1003)]


def group_by_column(app, sdf):
    def customer_total(d: dict, state: State):
        total = state.get("customer_sum", 0) + d["customer_spent"]
        state.set("customer_sum", total)
        d["customer_total"] = total
        return d
    sdf = sdf.group_by("customer_account_id")
    sdf.apply(customer_total, stateful=True)


def group_by_callable(app, sdf):
    sdf = sdf.group_by(lambda v: v["customer_account_id"].upper(), name="upper_id")
    sdf.apply(lambda v: {"id": v["customer_account_id"], "spent": v["customer_spent"]})


OUT = {}


def to_topics(app, sdf):
    high, low = app.topic(f"docs-high-{suffix}", value_serializer="json"), app.topic(f"docs-low-{suffix}",
                                                                                     value_serializer="json")
    OUT["high"], OUT["low"] = high.name, low.name
    sdf.to_topic(low, key=lambda data: str(data["v"]))

    def select_topic(value, key, timestamp, headers):
        return high if value["v"] > 5 else low
    sdf.to_topic(select_topic)


def windowed(make):
    def build(app, sdf):
        make(sdf.apply(lambda v: v["v"]))
    return build


def windowed_rows(make):
    def build(app, sdf):
        make(sdf)
    return build


example("stateful apply with State", READINGS, stateful_apply, 8)
example("stateful filter: rising values", READINGS, stateful_filter, 5)
example("stateful update: running total", READINGS, stateful_update, 8)
# two partitions: through the repartition topic (one partition re-keys in place on both: test_group_by_topics.py)
example("group_by a column", PURCHASES, group_by_column, 4, metadata=True, partitions=2)
example("group_by a callable with a name", PURCHASES, group_by_callable, 4, metadata=True, partitions=2)
example("to_topic with a new key and a dynamic topic", READINGS[:4], to_topics, 4)
print("low", sorted(map(json.dumps, read(OUT["low"], 6))))
print("high", sorted(map(json.dumps, read(OUT["high"], 1))))
example("tumbling window: sum, current", READINGS,
        windowed(lambda s: s.tumbling_window(duration_ms=timedelta(seconds=1)).agg(value=agg.Sum()).current()), 8)
example("tumbling window: mean, final", READINGS,
        windowed(lambda s: s.tumbling_window(1000, grace_ms=timedelta(milliseconds=100)).mean().final()), 3)
example("hopping window: sum, current", READINGS,
        windowed(lambda s: s.hopping_window(duration_ms=1000, step_ms=500).agg(value=agg.Sum()).current()), 16)
example("sliding window: sum, current", READINGS,
        windowed(lambda s: s.sliding_window(duration_ms=1000).agg(value=agg.Sum()).current()), 8)
example("session window: sum, final", READINGS,
        windowed(lambda s: s.session_window(inactivity_gap_ms=600).agg(value=agg.Sum()).final()), 2)
example("tumbling count window: sum, current", READINGS,
        windowed(lambda s: s.tumbling_count_window(count=2).agg(value=agg.Sum()).current()), 8)
example("hopping count window: sum, final", READINGS,
        windowed(lambda s: s.hopping_count_window(count=3, step=1).sum().final()), 4)
example("sliding count window: count, final", READINGS,
        windowed(lambda s: s.sliding_count_window(count=2).count().final()), 4)
example("several aggregations in one window", READINGS,
        windowed_rows(lambda s: s.tumbling_window(1000).agg(
            total=agg.Sum("v"), n=agg.Count(), avg=agg.Mean("v"), low=agg.Min("v"), high=agg.Max("v"),
            first=agg.First("v"), last=agg.Last("v")).final()), 3)
example("reduce with an initializer", READINGS,
        windowed(lambda s: s.tumbling_window(1000).agg(
            spread=agg.Reduce(reducer=lambda acc, v: [min(acc[0], v), max(acc[1], v)],
                              initializer=lambda v: [v, v])).final()), 3)
example("collect a window's values", READINGS,
        windowed(lambda s: s.tumbling_window(1000).collect().final()), 3)
'''

EXAMPLES = [
    "stateful apply with State", "stateful filter: rising values", "stateful update: running total",
    "group_by a column", "group_by a callable with a name", "to_topic with a new key and a dynamic topic",
    "tumbling window: sum, current", "tumbling window: mean, final", "hopping window: sum, current",
    "sliding window: sum, current", "session window: sum, final", "tumbling count window: sum, current",
    "hopping count window: sum, final", "sliding count window: count, final", "several aggregations in one window",
    "reduce with an initializer", "collect a window's values",
]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=600)


@pytest.mark.parametrize("example", EXAMPLES)
def test_documented_example_matches_quixstreams(outputs, example):
    shown = compare_section(outputs, example)
    assert shown.strip()
