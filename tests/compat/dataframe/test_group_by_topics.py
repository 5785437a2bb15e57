"""How many topics ``group_by`` uses, as on quixstreams 3.28.1 (real broker): on a topic of one
partition it re-keys in place (no repartition topic, each message processed once, stream id and
changelog ``<topic>--groupby--<name>``, rows keep the input topic); on two partitions it goes through
``repartition__<group>--<topic>--<name>`` with the input's partition count (each message processed
twice). The keys, values and state counts are the same either way."""

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-group-by-topics")]  # one shared run

PROGRAM = r'''
import json
import tempfile
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application, message_context
from quixstreams.models import TopicConfig

suffix = uuid.uuid4().hex[:8]
ADMIN = AdminClient({"bootstrap.servers": BROKER})


def S(text):
    return str(text).replace(suffix, "S")


def count(value, key, timestamp, headers, state):
    total = state.get("n", 0) + 1
    state.set("n", total)
    return {"user": value["user"], "n": total, "topic": S(message_context().topic), "key": repr(key)}


def main():
    producer = Producer({"bootstrap.servers": BROKER})
    for partitions in (1, 2):
        processed = []
        app = Application(broker_address=BROKER, consumer_group=f"gb{partitions}-{suffix}",
                          auto_offset_reset="earliest", loglevel=None, state_dir=tempfile.mkdtemp(),
                          on_message_processed=lambda *args: processed.append(1))
        name = f"gb{partitions}-{suffix}"
        ADMIN.create_topics([NewTopic(name, partitions, 1)])[name].result()
        topic = app.topic(name, config=TopicConfig(num_partitions=partitions, replication_factor=1))
        for i, user in enumerate(["a", "b", "a"]):
            producer.produce(topic.name, key=f"k{i}".encode(), value=json.dumps({"user": user}).encode(),
                             partition=i % partitions)
        producer.flush(30)
        sdf = app.dataframe(topic).group_by("user")
        print(f"== {partitions} partition(s)")
        print("stream id", S(sdf.stream_id))
        sdf = sdf.apply(count, stateful=True, metadata=True)
        manager = app._topic_manager
        print("repartition", [[S(name), t.create_config.num_partitions] for name, t in
                              sorted(manager.repartition_topics.items())])
        print("changelogs", sorted(S(t.name) for stores in manager.changelog_topics.values() for t in stores.values()))
        rows = app.run(count=3, timeout=60)
        print("rows", sorted(json.dumps(row, sort_keys=True, default=repr) for row in rows))
        print("processed", len(processed))


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("section", ["1 partition(s)", "2 partition(s)"])
def test_group_by_topics_match_quixstreams(outputs, section):
    from tests.compat.conftest import compare_section

    shown = compare_section(outputs, section)
    if section.startswith("1"):
        assert "repartition []" in shown and "gb1-S--groupby--user" in shown and "processed 3" in shown
    else:
        assert "repartition [['repartition__gb2-S--gb2-S--user', 2]]" in shown and "processed 6" in shown


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)
