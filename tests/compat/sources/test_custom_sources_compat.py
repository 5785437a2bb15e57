"""Custom sources on quixstreams 3.28.1 and on stream_edge (real broker, outputs compared byte for
byte): a Source feeding a dataframe, a StatefulSource resuming from its committed state in a second
run (what it set after its last flush() is committed when run() returns), and a source whose error stops ``app.run()`` as a SourceException caused by that error."""

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json
import tempfile
import uuid

from confluent_kafka.admin import AdminClient
from quixstreams import Application
from quixstreams.sources import Source, SourceException, StatefulSource


class Numbers(Source):
    def run(self):
        for i in range(5):
            if not self.running:
                return
            msg = self.serialize(key=f"n{i}", value={"n": i, "sq": i * i})
            self.produce(key=msg.key, value=msg.value, timestamp=1_700_000_000_000 + i)


class Resuming(StatefulSource):
    def run(self):
        start = self.state.get("next", 0)
        seen = self.state.get("seen", [])
        for i in range(start, start + 3):
            msg = self.serialize(key=f"r{i}", value={"i": i, "seen_before": list(seen)})
            self.produce(key=msg.key, value=msg.value, timestamp=1_700_000_000_100 + i)
            seen.append(i)
            self.state.set("next", i + 1)
            self.state.set("seen", seen)
        self.state.delete("never-set")
        self.flush()
        self.state.set("next", 1000)  # committed by the flush after run() returns


class Broken(Source):
    def run(self):
        msg = self.serialize(key="b", value={"ok": True})
        self.produce(key=msg.key, value=msg.value)
        self.flush()
        raise ValueError("record 7: field 'reading' is missing")


def new_app(group):
    return Application(broker_address=BROKER, consumer_group=group, auto_offset_reset="earliest", loglevel=None,
                       state_dir=tempfile.mkdtemp())


def main():
    suffix = uuid.uuid4().hex[:8]
    app = new_app("numbers-" + suffix)
    sdf = app.dataframe(source=Numbers(name="numbers-" + suffix))
    sdf = sdf.apply(lambda v: {**v, "double": v["n"] * 2})
    rows = app.run(count=5, timeout=60, metadata=True)
    print("source", json.dumps([[r["_key"].decode(), r["_timestamp"], r["n"], r["sq"], r["double"]] for r in rows]))
    topics = AdminClient({"bootstrap.servers": BROKER}).list_topics(timeout=30).topics
    print("topic", sorted(t.replace(suffix, "S") for t in topics if "numbers-" + suffix in t))

    group, name = "stateful-" + suffix, "resuming-" + suffix
    for run in range(2):
        app = new_app(group)
        app.dataframe(source=Resuming(name=name))
        rows = app.run(count=3, timeout=60, metadata=True)
        print("stateful", run, json.dumps([[r["_key"].decode(), r["_timestamp"], r["i"], r["seen_before"]]
                                           for r in rows]))
    topics = AdminClient({"bootstrap.servers": BROKER}).list_topics(timeout=30).topics
    print("changelog", sorted(t.replace(suffix, "S") for t in topics if suffix in t and t.startswith("changelog__")))

    app = new_app("broken-" + suffix)
    app.dataframe(source=Broken(name="broken-" + suffix))
    try:
        app.run(timeout=60)
        print("no error")
    except SourceException as exc:
        print("error", type(exc).__name__, str(exc).replace(str(exc.pid), "<pid>").replace(suffix, "S"),
              repr(exc.__cause__), exc.exitcode)


if __name__ == "__main__":
    main()
'''


def test_custom_and_stateful_sources_match_quixstreams(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=240)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    lines = out.edge.splitlines()
    assert lines[0].startswith('source [["n0", 1700000000000, 0, 0, 0]')
    assert lines[2] == ('stateful 0 [["r0", 1700000000100, 0, []], ["r1", 1700000000101, 1, [0]], '
                        '["r2", 1700000000102, 2, [0, 1]]]')
    assert lines[3].startswith('stateful 1 [["r1000", 1700000001100, 1000, [0, 1, 2]]')
    assert lines[-1].startswith("error SourceException broken-S with PID <pid> failed ValueError(")
