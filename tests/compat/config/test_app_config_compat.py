"""``Application.get_producer(transactional=...)`` and ``ApplicationConfig`` as in quixstreams 3.28.1:
a transactional producer from a non-transactional application (committed and aborted
transactions seen by a read-committed consumer on the real broker), the configured
``transactional.id`` dropped from a plain producer, frozen fields, ``copy()`` and unknown keyword
arguments (``ValueError`` on both: pydantic's ``ValidationError`` is one). One shared run per
package; one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-app-config")]  # one worker: one shared run

PROGRAM = r'''
import uuid

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application
from quixstreams.app import ApplicationConfig
from quixstreams.kafka.configuration import ConnectionConfig

suffix = uuid.uuid4().hex[:8]


def show(label, func):
    try:
        print(label, repr(func()))
    except Exception as exc:
        kind = "ValueError" if isinstance(exc, ValueError) else type(exc).__name__
        print(label, kind)


print("== producer")
topic_name = "tx-" + suffix
admin = AdminClient({"bootstrap.servers": BROKER})
admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result()
app = Application(broker_address=BROKER, consumer_group="g-" + suffix, loglevel=None)
with app.get_producer(transactional=True) as producer:
    producer.begin_transaction()
    producer.produce(topic_name, key=b"k", value=b"committed")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.produce(topic_name, key=b"k", value=b"aborted")
    producer.abort_transaction()
with app.get_producer() as plain:
    plain.produce(topic_name, key=b"k", value=b"plain")
    show("plain begin", lambda: plain.begin_transaction())
fixed = Application(broker_address=BROKER, consumer_group="g-" + suffix, loglevel=None,
                    producer_extra_config={"transactional.id": "fixed-" + suffix})
with fixed.get_producer() as plain:
    plain.produce(topic_name, key=b"k", value=b"no transaction")
with fixed.get_producer(transactional=True) as producer:
    producer.begin_transaction()
    producer.produce(topic_name, key=b"k", value=b"fixed id")
    producer.commit_transaction()
consumer = Consumer({"bootstrap.servers": BROKER, "group.id": "read-" + suffix, "auto.offset.reset": "earliest",
                     "isolation.level": "read_committed"})
consumer.subscribe([topic_name])
seen = []
for _ in range(60):
    msg = consumer.poll(1)
    if msg is not None and not msg.error():
        seen.append(msg.value().decode())
    if len(seen) == 4:
        break
consumer.close()
print("read committed", sorted(seen))

print("== config")
cfg = app.config
show("set field", lambda: setattr(cfg, "commit_interval", 1))
show("set unknown", lambda: setattr(cfg, "zzz", 1))
show("copy", lambda: cfg.copy(commit_interval=4).commit_interval)
show("copy kept", lambda: cfg.commit_interval)
show("copy is new", lambda: cfg.copy() is cfg)
show("copy equal", lambda: cfg.copy() == cfg)
show("copy unknown", lambda: cfg.copy(zzz=1))
show("copy bad number", lambda: cfg.copy(commit_interval="x"))
show("copy bad guarantee", lambda: cfg.copy(processing_guarantee="twice"))
show("prefix", lambda: cfg.consumer_group_prefix)
show("flush_timeout", lambda: cfg.flush_timeout)
show("flush_timeout set", lambda: Application(BROKER, loglevel=None,
     consumer_extra_config={"max.poll.interval.ms": 60000}).config.flush_timeout)
show("exactly_once", lambda: cfg.exactly_once)
show("hash", lambda: hash(cfg))
show("converted", lambda: (Application(BROKER, loglevel=None, commit_interval=3, commit_every=2.0).config.commit_interval,
                           Application(BROKER, loglevel=None, commit_every=2.0).config.commit_every))
broker = ConnectionConfig(bootstrap_servers=BROKER)
show("new", lambda: ApplicationConfig(broker_address=broker, consumer_group="g", consumer_group_prefix="").commit_every)
show("new unknown", lambda: ApplicationConfig(broker_address=broker, consumer_group="g", consumer_group_prefix="", zzz=1))
show("new bad reset", lambda: ApplicationConfig(broker_address=broker, consumer_group="g", consumer_group_prefix="",
                                                auto_offset_reset="middle"))
show("new no group", lambda: ApplicationConfig(broker_address=broker, consumer_group_prefix=""))
show("app unknown keyword", lambda: Application(BROKER, loglevel=None, zzz=1))
'''

SECTIONS = ["producer", "config"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)


@pytest.mark.parametrize("section", SECTIONS)
def test_producer_and_config_match_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_transactions_of_get_producer(outputs):
    shown = compare_section(outputs, "producer")
    assert "read committed ['committed', 'fixed id', 'no transaction', 'plain']" in shown
