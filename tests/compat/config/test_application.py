"""Application settings, topics and environment variables as in Quix Streams 3.28 (real broker)."""

import uuid

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import os
from pathlib import Path
from quixstreams import Application
from quixstreams.models import TopicConfig, Topic

def show(label, func):
    try:
        print(label, func())
    except Exception as exc:
        print(label, "ValueError" if isinstance(exc, ValueError) else type(exc).__name__)

os.environ["Quix__Consumer_Group"] = "group-from-env"
os.environ["Quix__State__Dir"] = "state-from-env"
os.environ["Quix__Broker__Address"] = BROKER
app = Application(loglevel=None, auto_offset_reset="earliest", commit_interval=2.5, commit_every=7,
                  max_partition_buffer_size=500, broker_availability_timeout=30.0,
                  auto_recover_from_source_offset_out_of_range=False, state_recovery_offset_reset="latest",
                  processing_guarantee="exactly-once")
cfg = app.config
for name in ("consumer_group", "auto_offset_reset", "commit_interval", "commit_every", "processing_guarantee",
             "exactly_once", "auto_create_topics", "use_changelog_topics", "request_timeout",
             "topic_create_timeout", "consumer_poll_timeout", "producer_poll_timeout",
             "auto_recover_from_source_offset_out_of_range", "state_recovery_offset_reset",
             "max_partition_buffer_size"):
    show(name, lambda: getattr(cfg, name))
show("state_dir", lambda: Path(cfg.state_dir).name)
show("broker", lambda: cfg.broker_address.bootstrap_servers == BROKER)
show("bad guarantee", lambda: Application(BROKER, loglevel=None, processing_guarantee="twice"))
show("bad recovery reset", lambda: Application(BROKER, loglevel=None, state_recovery_offset_reset="sometimes"))
show("bad offset reset", lambda: Application(BROKER, loglevel=None, auto_offset_reset="middle"))

topic = app.topic(TOPIC, value_deserializer="json", config=TopicConfig(num_partitions=3, replication_factor=1))
show("repr", lambda: repr(topic))
show("create_config", lambda: topic.create_config)
show("kinds", lambda: (topic.is_regular, topic.is_repartition, topic.is_changelog))
show("broker partitions", lambda: topic.broker_config.num_partitions)
raw = Topic("raw-" + TOPIC, create_config=TopicConfig(num_partitions=2, replication_factor=1))
show("direct", lambda: (repr(raw), raw.create_config.num_partitions, raw.name))
show("defaults", lambda: TopicConfig(num_partitions=None, replication_factor=None))
'''


def test_application_settings_and_topics_match_quixstreams(run_both, kafka_bootstrap):
    topic = f"compat-app-{uuid.uuid4().hex[:8]}"
    source = f"BROKER = {kafka_bootstrap!r}\nTOPIC = {topic!r}\n" + PROGRAM
    out = run_both(source)
    assert out.edge == out.quix
    assert "group-from-env" in out.edge and "broker partitions 3" in out.edge
