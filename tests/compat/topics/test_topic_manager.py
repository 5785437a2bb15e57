"""``TopicManager`` as quixstreams 3.28.1 has it: ``derive_topic_config``, ``stream_id_from_topics``,
``changelog_topic(stream_id=...)``, ``repartition_topic(stream_id=...)`` with their names and
configs (``cleanup.policy=compact`` on changelogs), ``TopicNotFoundError`` for a missing topic
with ``auto_create_topics=False``, ``ensure_topics_copartitioned``; ``TopicConfigurationMismatch`` for a changelog defined again with
another partition count, ``CreateTopicTimeout`` / ``CreateTopicFailure`` from ``TopicAdmin``; and the topic-level settings of
the changelog and repartition topics an application creates (real broker). One shared run per
package; one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-topic-manager")]  # one worker: one shared run

PROGRAM = r'''
import json
import tempfile
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from quixstreams import Application
from quixstreams.models import Topic
from quixstreams.models.topics import TopicAdmin, TopicConfig, TopicManager
from quixstreams.models.topics.exceptions import TopicNotFoundError, TopicPartitionsMismatch

suffix = uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})


def S(text):
    return str(text).replace(suffix, "S")


def cfg(config):
    return S([config.num_partitions, config.replication_factor, sorted(config.extra_config.items())])


def show(label, func):
    try:
        print(label, S(func()))
    except Exception as exc:
        print(label, type(exc).__name__, S(exc))


def overrides(name):
    """A topic's partition count and its topic-level (non-default) settings, from the broker."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    entries = admin.describe_configs([resource])[resource].result()
    meta = admin.list_topics(name, timeout=30).topics[name]
    return [len(meta.partitions), sorted((k, v.value) for k, v in entries.items() if not v.is_default)]


a_name, b_name = "tm-a-" + suffix, "tm-b-" + suffix
futures = admin.create_topics([NewTopic(a_name, 2, 1, config={"retention.ms": "3600000"}),
                               NewTopic(b_name, 3, 1, config={"retention.bytes": "1048576"})])
for future in futures.values():
    future.result()

print("== configs")
manager = TopicManager(TopicAdmin(BROKER), "grp-" + suffix)
print("topic_config", cfg(manager.topic_config()), cfg(manager.topic_config(4, 1, {"x": "1"})))
a, b = manager.topic(a_name), manager.topic(b_name)
print("broker a", cfg(a.broker_config))
print("broker b", cfg(b.broker_config))
print("derive a", cfg(TopicManager.derive_topic_config([a])))
print("derive a b", cfg(manager.derive_topic_config([a, b])))
show("derive none", lambda: TopicManager.derive_topic_config([]))

print("== stream ids and names")
print("stream id", S(manager.stream_id_from_topics([b, a])), S(manager.stream_id_from_topics([a, a])))
show("stream id none", lambda: manager.stream_id_from_topics([]))
config = TopicManager.derive_topic_config([a])
changelog = manager.changelog_topic(stream_id=a.name, store_name="default", config=config)
print("changelog", S(changelog.name), cfg(changelog.create_config), changelog.is_changelog)
print("config mutated", sorted(config.extra_config))
sourceless = manager.changelog_topic(stream_id=None, store_name="st", config=TopicConfig(num_partitions=1, replication_factor=1))
print("changelog no stream", S(sourceless.name), cfg(sourceless.create_config))
merged = manager.changelog_topic(stream_id=manager.stream_id_from_topics([a, b]), store_name="default",
                                 config=manager.derive_topic_config([a, b]))
print("changelog merged", S(merged.name), cfg(merged.create_config))
repartition = manager.repartition_topic("col", stream_id=a.name, config=manager.derive_topic_config([a]))
print("repartition", S(repartition.name), cfg(repartition.create_config), repartition.is_repartition)
nested = manager.repartition_topic("col2", stream_id=repartition.name, config=manager.derive_topic_config([a]))
print("nested", S(nested.name))
nested_log = manager.changelog_topic(stream_id=repartition.name, store_name="default",
                                     config=manager.derive_topic_config([a]))
print("nested changelog", S(nested_log.name))
print("changelogs", sorted(S(k) for k in manager.changelog_topics), len(manager.changelog_topics_list))
print("repartitions", sorted(S(k) for k in manager.repartition_topics))
print("topics", sorted(S(k) for k in manager.topics))
print("all", sorted(S(k) for k in manager.all_topics))
print("changelog broker", cfg(changelog.broker_config))

print("== errors")
strict = TopicManager(TopicAdmin(BROKER), "grp-" + suffix, auto_create_topics=False)
show("missing", lambda: strict.topic("tm-missing-" + suffix))
print("existing", S(strict.topic(a_name).name), cfg(strict.topic(a_name).broker_config))
show("copartitioned", lambda: TopicManager.ensure_topics_copartitioned(a, b))
show("copartitioned same", lambda: TopicManager.ensure_topics_copartitioned(a, a))

print("== changelog partitions and creation")
show("changelog again, same count", lambda: S(manager.changelog_topic(stream_id=a.name, store_name="default",
                                                                      config=manager.derive_topic_config([a])).name))
show("changelog again, other count", lambda: manager.changelog_topic(
    stream_id=a.name, store_name="default", config=TopicConfig(num_partitions=3, replication_factor=1)))
show("changelog of two topics, other count", lambda: manager.changelog_topic(
    stream_id=manager.stream_id_from_topics([a, b]), store_name="default",
    config=TopicConfig(num_partitions=1, replication_factor=1)))
topic_admin = TopicAdmin(BROKER)
show("finalize timeout 0", lambda: topic_admin.create_topics(
    [Topic("tm-late-" + suffix, create_config=manager.topic_config())], finalize_timeout=0))
show("invalid config", lambda: topic_admin.create_topics(
    [Topic("tm-bad-" + suffix, create_config=manager.topic_config(extra_config={"bad_option": "x"}))]))
show("created", lambda: topic_admin.create_topics([Topic("tm-ok-" + suffix, create_config=manager.topic_config())]))
print("listed", ("tm-ok-" + suffix) in topic_admin.list_topics(timeout=30))

print("== application topics")
input_name = "tm-in-" + suffix
admin.create_topics([NewTopic(input_name, 2, 1, config={"retention.ms": "7200000"})])[input_name].result()
producer = Producer({"bootstrap.servers": BROKER})
for i in range(4):
    producer.produce(input_name, key=f"k{i % 2}", value=json.dumps({"g": i % 2, "n": i}), partition=i % 2)
producer.flush()
app = Application(broker_address=BROKER, consumer_group="app-" + suffix, auto_offset_reset="earliest",
                  loglevel=None, state_dir=tempfile.mkdtemp())
sdf = app.dataframe(app.topic(input_name, value_deserializer="json"))
sdf = sdf.group_by("g")


def count(value, state):
    state.set("n", state.get("n", 0) + 1)
    return {**value, "count": state.get("n")}


sdf = sdf.apply(count, stateful=True)
app.run(count=4, timeout=60)
names = sorted(t for t in admin.list_topics(timeout=30).topics if suffix in t and t.startswith(("changelog__", "repartition__")))
for name in names:
    if name.startswith(("changelog__app-", "repartition__app-")):
        print(S(name), S(overrides(name)))
'''

SECTIONS = ["configs", "stream ids and names", "errors", "changelog partitions and creation", "application topics"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)


@pytest.mark.parametrize("section", SECTIONS)
def test_topic_manager_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_changelogs_are_compacted_and_missing_topics_raise(outputs):
    names = compare_section(outputs, "stream ids and names")
    assert "('cleanup.policy', 'compact')" in names
    errors = compare_section(outputs, "errors")
    assert 'missing TopicNotFoundError Topic "tm-missing-S" not found on the broker' in errors


def test_changelog_partition_mismatch_and_creation_errors(outputs):
    shown = compare_section(outputs, "changelog partitions and creation")
    assert "changelog again, other count TopicConfigurationMismatch Invalid partition count" in shown
    assert "finalize timeout 0 CreateTopicTimeout Timed out waiting for creation status" in shown
