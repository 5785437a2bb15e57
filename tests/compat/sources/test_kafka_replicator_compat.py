"""``KafkaReplicatorSource`` as on quixstreams 3.28.1 (real broker as both clusters): a missing source
or destination topic, a source with more partitions than the destination and an unreachable
cluster (either side) stop the application with ``SourceException`` whose cause is worded as
3.28.1 words it; the copy resumes from the offset stored in the destination cluster
(``source.target_consumer_group``, under the destination topic's name), and where the copy got to
is stored there, not on the source cluster. One shared run per package; one test per section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-replicator")]

PROGRAM = r'''
import json
import tempfile
import uuid

from confluent_kafka import Consumer as RawConsumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application
from quixstreams.kafka.configuration import ConnectionConfig
from quixstreams.models import Topic, TopicConfig
from quixstreams.sources import SourceException
from quixstreams.sources.core.kafka import KafkaReplicatorSource

suffix = uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})
counter = iter(range(100))


def S(text):
    return str(text).replace(suffix, "S")


def name(kind):
    return f"{kind}-{next(counter)}-{suffix}"


def new_app(**kwargs):
    return Application(broker_address=BROKER, consumer_group=name("g"), auto_offset_reset="earliest",
                       request_timeout=1, loglevel=None, state_dir=tempfile.mkdtemp(), **kwargs)


def create(partitions=1, values=()):
    topic = name("src")
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": BROKER})
    for i in values:
        producer.produce(topic, key=b"test", value=json.dumps(i).encode(), partition=0)
    producer.flush()
    return topic


def replicator(app, topic, config=None, broker=None):
    return KafkaReplicatorSource(name("rep"), app_config=config or app.config, topic=topic,
                                 broker_address=broker or BROKER, auto_offset_reset="earliest")


def failure(app, source, destination):
    app.add_source(source, destination)
    try:
        app.run()
    except SourceException as exc:
        cause = exc.__cause__
        print(type(exc).__name__, type(cause).__name__, S(cause))
    else:
        print("no error")


def committed(group, topic):
    consumer = RawConsumer({"bootstrap.servers": BROKER, "group.id": group})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(topic, 0)], timeout=30)]
    finally:
        consumer.close()


def main():
    print("== errors")
    app = new_app()
    missing = Topic(name("missing"), create_config=TopicConfig(num_partitions=1, replication_factor=1))
    failure(app, replicator(app, missing.name), app.topic(name("dst")))

    app = new_app()
    not_there = Topic(name("dst"), create_config=TopicConfig(num_partitions=1, replication_factor=1))
    failure(app, replicator(app, create(partitions=4)), not_there)

    app = new_app()
    failure(app, replicator(app, create(partitions=4)), app.topic(name("dst")))

    app = new_app()
    failure(app, replicator(app, create(), broker="127.0.0.1:aaa"), app.topic(name("dst")))

    app = new_app()
    bad = app.config.copy(broker_address=ConnectionConfig(bootstrap_servers="127.0.0.1:aaa"))
    failure(app, replicator(app, create(), config=bad), app.topic(name("dst")))

    print("== resume from the destination cluster")
    app = new_app()
    source_topic = create(values=range(10))
    destination = app.topic(create())  # created up front: an offset is stored for it before the run
    source = replicator(app, source_topic)
    print("groups", S(source.source_consumer_group), S(source.target_consumer_group))
    stored = RawConsumer({"bootstrap.servers": BROKER, "group.id": source.target_consumer_group})
    stored.commit(offsets=[TopicPartition(destination.name, 0, 4)], asynchronous=False)
    stored.close()
    sdf = app.dataframe(destination, source=source)
    print("copied", [row for row in app.run(count=6, timeout=60)])
    print("stored on the destination", committed(source.target_consumer_group, destination.name))
    print("stored on the source", committed(source.source_consumer_group, source_topic))


if __name__ == "__main__":
    main()
'''

SECTIONS = ["errors", "resume from the destination cluster"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=240)


@pytest.mark.parametrize("section", SECTIONS)
def test_kafka_replicator_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_the_copy_resumes_from_the_offset_stored_on_the_destination(outputs):
    shown = compare_section(outputs, "resume from the destination cluster")
    assert "copied [{'_value': 4}, {'_value': 5}" in shown and "stored on the destination [10]" in shown


def test_source_errors_name_the_topic_and_the_cause(outputs):
    shown = compare_section(outputs, "errors")
    lines = shown.splitlines()
    assert lines[0].startswith("SourceException ValueError Source topic missing-") and lines[0].endswith("-S not found")
    assert lines[1].startswith("SourceException ValueError Destination topic dst-") and lines[1].endswith("-S not found")
    assert "Source topic has more partitions than destination topic" in shown
    assert shown.count("RuntimeError KafkaError{code=_TRANSPORT") == 2
