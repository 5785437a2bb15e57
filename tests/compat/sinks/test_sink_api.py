"""The sink API as tests written for quixstreams 3.28.1 use it: ``flush()`` without arguments,
``write(batch)`` per topic-partition batch, backpressure and ``on_paused()``, the built-in sinks
called directly (``sink.add(...); sink.flush()``: ``CSVSink``, ``LocalFileSink``, ``ListSink``) and a
custom ``BatchingSink`` / ``BaseSink`` of Quix's form driven by ``app.run()`` on the real broker.
One shared run per package; one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-sink-api")]  # one worker: one shared run

PROGRAM = r'''
import csv
import json
import os
import tempfile
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application
from quixstreams.sinks import BaseSink, BatchingSink, SinkBackpressureError, SinkBatch
from quixstreams.sinks.core.csv import CSVSink
from quixstreams.sinks.core.list import ListSink
from quixstreams.sinks.community.file.local import AppendNotSupported, LocalFileSink

RECORDS = [({"n": 1}, b"a", 10, [("h", b"1")], "t1", 0, 5), ({"n": 2}, b"b", 11, [], "t1", 1, 7),
           ({"n": 3}, b"a", 12, None, "t1", 0, 6), ({"n": 4}, b"c", 13, [], "t2", 0, 1),
           ({"n": 5}, b"d", 14, [], "t1", 1, 8)]


class Recording(BatchingSink):
    def __init__(self, fail=None):
        super().__init__()
        self.writes, self.fail = [], fail

    def write(self, batch):
        if self.fail is not None:
            raise self.fail
        self.writes.append([batch.topic, batch.partition, batch.size, batch.start_offset, batch.empty(),
                            [[i.value, i.key, i.timestamp, i.headers, i.offset] for i in batch],
                            [type(c).__name__ + str(len(c)) for c in batch.iter_chunks(2)]])


def show(label, func):
    try:
        print(label, func())
    except Exception as exc:
        print(label, type(exc).__name__, exc)


def fill(sink):
    for record in RECORDS:
        sink.add(*record)
    return sink


print("== batching sink")
sink = fill(Recording())
sink.flush()
for write in sink.writes:
    print(write)
sink.flush()
print("writes after second flush", len(sink.writes))
paused = fill(Recording())
paused.on_paused()
paused.flush()
print("writes after on_paused", paused.writes)
failing = fill(Recording(fail=SinkBackpressureError(retry_after=3.5)))
try:
    failing.flush()
except SinkBackpressureError as exc:
    print("backpressure", exc.retry_after)
failing.fail = None
failing.flush()
print("writes after failed flush", failing.writes)
batch = SinkBatch(topic="t", partition=2)
print("empty batch", batch.topic, batch.partition, batch.size, batch.empty())
batch.append(value=1, key=b"k", timestamp=3, headers=[], offset=9)
print("batch", batch.size, batch.empty(), batch.start_offset, [list(c) and type(c).__name__ for c in batch.iter_chunks(5)])
show("chunks of 0", lambda: list(batch.iter_chunks(0)))

print("== base sink")


class Printing(BaseSink):
    def __init__(self):
        super().__init__()
        self.pending, self.flushed = [], []

    def add(self, value, key, timestamp, headers, topic, partition, offset):
        self.pending.append((topic, partition, offset, value))

    def flush(self):
        self.flushed.extend(self.pending)
        self.pending.clear()


printing = fill(Printing())
printing.flush()
print("flushed", printing.flushed)
printing.on_paused()
print("setup", printing.setup())

print("== csv sink")
workdir = tempfile.mkdtemp()
path = os.path.join(workdir, "out.csv")
csv_sink = fill(CSVSink(path))
csv_sink.flush()
csv_sink.add({"n": 6}, "z", 15, [], "t3", 4, 0)
csv_sink.flush()
with open(path) as handle:
    print(handle.read())

print("== local file sink")
os.chdir(workdir)
files = fill(LocalFileSink(directory="files"))
files.flush()
for root, _, names in sorted(os.walk("files")):
    for name in sorted(names):
        with open(os.path.join(root, name)) as handle:
            print(os.path.join(root, name), handle.read().strip())
appending = LocalFileSink(append=True, directory="appended")
for record in RECORDS[:2]:
    appending.add(*record)
    appending.flush()
for root, _, names in sorted(os.walk("appended")):
    print(root, sorted(names))
show("parquet append", lambda: LocalFileSink(append=True, format="parquet"))
parquet = fill(LocalFileSink(directory="pq", format="parquet"))
parquet.flush()
import pyarrow.parquet as pq
for root, _, names in sorted(os.walk("pq")):
    for name in sorted(names):
        table = pq.read_table(os.path.join(root, name))
        print(os.path.join(root, name), sorted(table.column_names), table.column("n").to_pylist())

print("== list sink")
listed = fill(ListSink())
listed.flush()
print(list(listed))

print("== app")
suffix = uuid.uuid4().hex[:8]
topic_name = "sink-api-" + suffix
admin = AdminClient({"bootstrap.servers": BROKER})
for future in admin.create_topics([NewTopic(topic_name, num_partitions=2, replication_factor=1)]).values():
    future.result()
producer = Producer({"bootstrap.servers": BROKER})
for i in range(6):
    producer.produce(topic_name, key=f"k{i}", value=json.dumps({"i": i}), partition=i % 2, timestamp=1000 + i)
producer.flush()
app = Application(broker_address=BROKER, consumer_group="g-" + suffix, auto_offset_reset="earliest",
                  loglevel=None, state_dir=tempfile.mkdtemp(), commit_every=100)
sdf = app.dataframe(app.topic(topic_name, value_deserializer="json"))
recording, printing = Recording(), Printing()
sdf.sink(recording)
sdf.sink(printing)
app.run(count=12, timeout=60)  # two sinks: two outputs per record
print("writes", sorted([w[0].replace(suffix, "S"), w[1], w[2], w[3], [v[0] for v in w[5]]] for w in recording.writes))
print("flushed", sorted([t.replace(suffix, "S"), p, o, v] for t, p, o, v in printing.flushed))
'''

SECTIONS = ["batching sink", "base sink", "csv sink", "local file sink", "list sink", "app"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)


@pytest.mark.parametrize("section", SECTIONS)
def test_sink_api_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_flush_writes_one_batch_per_topic_partition(outputs):
    shown = compare_section(outputs, "batching sink")
    assert shown.splitlines()[0].startswith("['t1', 0, 2, 5, False,")
    assert "writes after failed flush []" in shown
    app = compare_section(outputs, "app")
    assert "['sink-api-S', 0, 3, 0, [{'i': 0}, {'i': 2}, {'i': 4}]]" in app
