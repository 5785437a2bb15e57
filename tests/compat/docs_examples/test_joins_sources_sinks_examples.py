"""Documented Quix Streams 3.x examples of joins, sources, sinks and ``Application.run``:
``join_asof`` of measurements with their latest metadata, ``join_interval`` within minutes before
and after, ``concat`` of two branches, a custom ``Source`` and a custom ``BatchingSink`` as the docs
write them, ``ListSink``, and ``app.run(count=..., timeout=..., collect=False)``. Each runs on
recorded input on the real broker, on quixstreams 3.28.1 and on stream_edge (cross-topic joins are
rerun on quixstreams until its own timestamp order matches, as ``run_both`` documents). One shared
run per package; one test id per example (``EXAMPLES``)."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-docs-joins-sources-sinks")]  # one worker: one shared run

PROGRAM = r'''
import json
import tempfile
import uuid
from datetime import timedelta

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application
from quixstreams.sinks import BatchingSink, SinkBatch
from quixstreams.sinks.core.list import ListSink
from quixstreams.sources import Source

suffix = uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})
producer = Producer({"bootstrap.servers": BROKER})
counter = [0]


def topic_with(records):
    counter[0] += 1
    name = f"docs3-{suffix}-{counter[0]}"
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    for key, value, ts in records:
        producer.produce(name, key=key.encode(), value=json.dumps(value), timestamp=ts)
    producer.flush()
    return name


def new_app():
    counter[0] += 1
    return Application(broker_address=BROKER, consumer_group=f"g3-{suffix}-{counter[0]}", auto_offset_reset="earliest",
                       loglevel=None, state_dir=tempfile.mkdtemp())


def show(rows):
    for row in rows:
        print(json.dumps(row, default=str, sort_keys=True))


class NumbersSource(Source):
    """The docs' custom source (module level: quixstreams starts sources with spawn)."""

    def run(self):
        for number in range(5):
            if not self.running:
                return
            event = self.serialize(key=str(number % 2), value={"number": number})
            self.produce(key=event.key, value=event.value, timestamp=1_700_000_000_000 + number)


class PrintingSink(BatchingSink):
    def __init__(self):
        super().__init__()
        self.batches = []

    def write(self, batch: SinkBatch):
        self.batches.append([batch.topic.replace(suffix, "S"), batch.partition, [item.value for item in batch]])


def main():
    metadata = [("dev-1", {"location": "hall"}, 1000), ("dev-2", {"location": "roof"}, 1000),
                ("dev-1", {"location": "lab"}, 5000)]
    measurements = [("dev-1", {"temp": 20}, 2000), ("dev-2", {"temp": 30}, 3000), ("dev-1", {"temp": 21}, 6000),
                    ("dev-3", {"temp": 99}, 6500)]
    meta_topic, measure_topic = topic_with(metadata), topic_with(measurements)

    print("== join_asof: latest metadata")
    app = new_app()
    sdf_measurements = app.dataframe(app.topic(measure_topic, value_deserializer="json"))
    sdf_metadata = app.dataframe(app.topic(meta_topic, value_deserializer="json"))
    sdf_joined = sdf_measurements.join_asof(sdf_metadata, how="inner", grace_ms=timedelta(days=14))
    show(app.run(count=3, timeout=30))

    print("== join_asof: left join keeps unmatched")
    app = new_app()
    left = app.dataframe(app.topic(measure_topic, value_deserializer="json"))
    right = app.dataframe(app.topic(meta_topic, value_deserializer="json"))
    left.join_asof(right, how="left", on_merge="keep-left")
    show(app.run(count=4, timeout=30))

    events = [("dev-1", {"event": "door"}, 1900), ("dev-2", {"event": "alarm"}, 9000)]
    events_topic = topic_with(events)
    print("== join_interval: within minutes")
    app = new_app()
    sdf_measurements = app.dataframe(app.topic(measure_topic, value_deserializer="json"))
    sdf_events = app.dataframe(app.topic(events_topic, value_deserializer="json"))
    sdf_measurements.join_interval(right=sdf_events, how="inner", on_merge="keep-left", grace_ms=timedelta(days=7),
                                   backward_ms=timedelta(minutes=5), forward_ms=timedelta(minutes=5))
    show(app.run(count=2, timeout=30))

    print("== concat of two branches")
    app = new_app()
    sdf = app.dataframe(app.topic(measure_topic, value_deserializer="json"))
    hot = sdf[sdf["temp"] >= 30].apply(lambda v: {**v, "kind": "hot"})
    cold = sdf[sdf["temp"] < 30].apply(lambda v: {**v, "kind": "cold"})
    hot.concat(cold)
    show(app.run(count=4, timeout=30))

    print("== custom source")

    app = new_app()
    sdf = app.dataframe(source=NumbersSource(name="numbers-" + suffix))
    sdf = sdf.apply(lambda v: {**v, "square": v["number"] ** 2})
    show([{k: v for k, v in row.items() if k not in ("_topic",)} for row in app.run(count=5, timeout=30, metadata=True)])

    print("== custom batching sink")

    app = new_app()
    sink = PrintingSink()
    app.dataframe(app.topic(measure_topic, value_deserializer="json")).sink(sink)
    app.run(count=4, timeout=30)
    show(sink.batches)

    print("== list sink")
    app = new_app()
    list_sink = ListSink()
    app.dataframe(app.topic(measure_topic, value_deserializer="json")).sink(list_sink)
    app.run(count=4, timeout=30)
    show([{k: v for k, v in row.items() if k != "_topic"} for row in list_sink])

    print("== run without collecting")
    app = new_app()
    app.dataframe(app.topic(measure_topic, value_deserializer="json")).apply(lambda v: v["temp"])
    print(app.run(count=4, timeout=30, collect=False))


if __name__ == "__main__":
    main()
'''

EXAMPLES = ["join_asof: latest metadata", "join_asof: left join keeps unmatched", "join_interval: within minutes",
            "concat of two branches", "custom source", "custom batching sink", "list sink",
            "run without collecting"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=400, quix_attempts=3)


@pytest.mark.parametrize("example", EXAMPLES)
def test_documented_example_matches_quixstreams(outputs, example):
    shown = compare_section(outputs, example)
    assert shown.strip()
