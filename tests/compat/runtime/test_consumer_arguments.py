"""``Consumer.store_offsets`` / ``commit`` refuse their arguments as quixstreams 3.28.1 does (no
broker needed: the checks come before any call to the client), a closed consumer refuses further
calls with ``RuntimeError("Consumer closed")``, and (real broker) stored offsets are committed at
``close()`` with auto-commit on."""

PROGRAM = r'''
from quixstreams.kafka import Consumer


def show(label, func):
    try:
        print(label, "=", func())
    except Exception as exc:
        print(label, "->", type(exc).__name__, repr(str(exc)))


consumer = Consumer(broker_address="127.0.0.1:1", consumer_group="g", auto_offset_reset="earliest")
show("store_offsets()", lambda: consumer.store_offsets())
show("store_offsets(offsets, message)", lambda: consumer.store_offsets(offsets=[], message=123))
show("commit(offsets, message)", lambda: consumer.commit(offsets=[], message=123))
consumer.close()
show("poll after close", lambda: consumer.poll(timeout=0))
show("store_offsets after close", lambda: consumer.store_offsets(offsets=[]))
show("close again", lambda: consumer.close())
'''


def test_store_offsets_and_commit_argument_errors_match_quixstreams(run_both):
    out = run_both(PROGRAM)
    assert out.edge == out.quix
    assert """store_offsets() -> ValueError 'One of "message" or "offsets" must be passed'""" in out.edge
    assert "poll after close -> RuntimeError 'Consumer closed'" in out.edge


STORED = r'''
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams.kafka import Consumer

topic, group = "stored-" + uuid.uuid4().hex[:8], "stored-" + uuid.uuid4().hex[:8]
admin = AdminClient({"bootstrap.servers": BROKER})
admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
producer = Producer({"bootstrap.servers": BROKER})


def produce(key):
    producer.produce(topic, key=key, value=b"v")
    producer.flush(30)


def first(consumer):
    for _ in range(100):
        msg = consumer.poll(0.3)
        if msg is not None and not msg.error():
            return msg
    return None


for auto_commit in (False, True):
    produce(b"stored-%d" % auto_commit)
    with Consumer(BROKER, group + str(auto_commit), "earliest", auto_commit_enable=auto_commit) as consumer:
        consumer.subscribe([topic])
        msg = first(consumer)
        try:
            consumer.store_offsets(message=msg)  # committed when the consumer closes, if auto-commit is on
            print("stored", msg.key())
        except Exception as exc:
            print("store_offsets ->", type(exc).__name__, exc)
    produce(b"after-%d" % auto_commit)
    with Consumer(BROKER, group + str(auto_commit), "earliest", auto_commit_enable=False) as consumer:
        consumer.subscribe([topic])
        print("auto-commit", auto_commit, "next", first(consumer).key())
'''


def test_stored_offsets_are_committed_at_close_with_auto_commit(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + STORED)
    assert out.edge == out.quix
    assert "stored b'stored-0'\nauto-commit False next b'stored-0'" in out.edge  # nothing committed
    assert "stored b'stored-0'\nauto-commit True next b'after-0'" in out.edge  # offset 0 committed at close
