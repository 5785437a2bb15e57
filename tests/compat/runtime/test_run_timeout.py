"""``app.run(timeout=...)`` as quixstreams 3.28.1 measures it (real broker): the idle time starts
after the iteration that consumed a message, commit included, so a sink whose flush is slower than
the timeout does not stop the application while records are still waiting."""


import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import time
from confluent_kafka import Producer
from quixstreams import Application
from quixstreams.sinks import BatchingSink

class SlowSink(BatchingSink):
    """Every flush (one per checkpoint of 2 records) takes longer than run()'s idle timeout."""
    def write(self, batch):
        time.sleep(1.5)
        for item in batch:
            WRITTEN.append(item.value["n"])

WRITTEN = []
producer = Producer({"bootstrap.servers": BROKER})
for n in range(6):
    producer.produce(TOPIC, value=('{"n": %d}' % n).encode(), key=b"k")
producer.flush(30)
app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", commit_every=2,
                  loglevel=None)
app.dataframe(app.topic(TOPIC)).sink(SlowSink())
app.run(timeout=1.0)
print(sorted(set(WRITTEN)))  # which records reached the sink before run() returned
'''


def test_a_commit_slower_than_the_timeout_is_not_idle_time(run_both, kafka_bootstrap, make_topic):
    topic = make_topic(prefix="compat-run-timeout")
    header = (f"BROKER = {kafka_bootstrap!r}\nTOPIC = {topic!r}\n"
              f"GROUP = 'run-timeout-' + __import__('uuid').uuid4().hex[:8]\n")
    out = run_both(header + PROGRAM)
    assert out.edge == out.quix
    assert out.edge.strip() == str(list(range(6)))  # every record written, none left behind
