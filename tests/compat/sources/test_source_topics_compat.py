"""Sources and their topics as on quixstreams 3.28.1 (real broker): a ``Source`` whose default topic
leaves ``topic_type`` unset (``None``) runs; ``KafkaReplicatorSource`` from the same broker copies
the source topic's configuration (partitions and settings) to its destination topic and the
messages (key, value, headers, timestamp, partition) without hanging. One shared run per package;
one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-source-topics")]  # one worker: one shared run

PROGRAM = r'''
import json
import tempfile
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from quixstreams import Application
from quixstreams.models import Topic
from quixstreams.sources import Source
from quixstreams.sources.core.kafka import KafkaReplicatorSource

suffix = uuid.uuid4().hex[:8]
RETENTION_MS = "315360000000"  # ten years
admin = AdminClient({"bootstrap.servers": BROKER})


def S(text):
    return str(text).replace(suffix, "S")


def overrides(name):
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    entries = admin.describe_configs([resource])[resource].result()
    meta = admin.list_topics(name, timeout=30).topics[name]
    return [len(meta.partitions), sorted((k, v.value) for k, v in entries.items() if not v.is_default)]


def new_app(group):
    return Application(broker_address=BROKER, consumer_group=group + "-" + suffix, auto_offset_reset="earliest",
                       loglevel=None, state_dir=tempfile.mkdtemp())


class Untyped(Source):
    def run(self):
        for i in range(3):
            msg = self.serialize(key=f"u{i}", value={"i": i})
            self.produce(key=msg.key, value=msg.value, timestamp=1_700_000_000_000 + i)

    def default_topic(self):
        return Topic(name=self.name, topic_type=None, value_deserializer="json", value_serializer="json")


class Plain(Source):
    def run(self):
        for i in range(2):
            msg = self.serialize(key=f"p{i}", value={"p": i})
            self.produce(key=msg.key, value=msg.value, timestamp=1_700_000_000_000 + i)


def main():
    print("== default topics")
    topic = Untyped(name="untyped-" + suffix).default_topic()
    print("unset type", topic.is_regular, topic.is_changelog, topic.is_repartition)
    print("clone", S(topic.__clone__(name="c-" + suffix).name), topic.__clone__(name="c").is_regular)
    for source in (Untyped(name="untyped-" + suffix), Plain(name="plain-" + suffix)):
        app = new_app("src")
        app.dataframe(source=source)
        rows = app.run(count=len(range(3 if isinstance(source, Untyped) else 2)), timeout=60, metadata=True)
        print(type(source).__name__, json.dumps([[r["_key"].decode(), r["_timestamp"], {k: v for k, v in r.items()
                                                                                    if not k.startswith("_")}]
                                                for r in rows]))
        print("topic", S(overrides("source__" + source.name)))

    print("== replicator")
    src = "rep-src-" + suffix
    # A topic-level retention longer than the records' age (2023 timestamps): one hour would let the
    # broker's retention check delete them mid-test (the broker-wide -1 no longer applies).
    admin.create_topics([NewTopic(src, 2, 1, config={"retention.ms": RETENTION_MS, "max.message.bytes": "500000",
                                                     "cleanup.policy": "delete"})])[src].result()
    producer = Producer({"bootstrap.servers": BROKER})
    for i in range(4):
        producer.produce(src, key=f"k{i}", value=json.dumps({"n": i}), partition=i % 2, timestamp=1_700_000_000_000 + i,
                         headers=[("h", str(i).encode())])
    producer.flush()
    app = new_app("rep")
    source = KafkaReplicatorSource(name="rep-" + suffix, app_config=app.config, topic=src, broker_address=BROKER,
                                   auto_offset_reset="earliest")
    print("default topic", S(source.default_topic().name), source.default_topic().create_config.num_partitions)
    sdf = app.dataframe(source=source)
    rows = app.run(count=4, timeout=60, metadata=True)
    print("rows", sorted([r["_key"].decode(), r["n"], r["_timestamp"], r["_headers"]] for r in rows))
    print("destination", S(overrides("source__rep-" + suffix)))
    for i in range(4, 6):
        producer.produce(src, key=f"k{i}", value=json.dumps({"n": i}), partition=i % 2, timestamp=1_700_000_000_000 + i)
    producer.flush()
    app = new_app("rep")
    source = KafkaReplicatorSource(name="rep-" + suffix, app_config=app.config, topic=src, broker_address=BROKER,
                                   auto_offset_reset="earliest")
    app.dataframe(source=source)
    rows = app.run(count=2, timeout=60, metadata=True)
    print("resumed", sorted([r["_key"].decode(), r["n"]] for r in rows))


if __name__ == "__main__":
    main()
'''

SECTIONS = ["default topics", "replicator"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=240)


@pytest.mark.parametrize("section", SECTIONS)
def test_source_topics_match_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_replicator_copies_the_topic_settings(outputs):
    shown = compare_section(outputs, "replicator")
    assert "('retention.ms', '315360000000')" in shown and "('max.message.bytes', '500000')" in shown
