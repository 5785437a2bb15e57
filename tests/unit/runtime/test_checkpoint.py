"""Checkpoint order and offsets, with recording fakes (the broker-backed paths are integration tests)."""

from stream_edge.checkpointing import Checkpoint


class Log(list):
    def recorder(self, name):
        return lambda *a, **k: self.append((name, a))


class FakeProducer:
    def __init__(self, log):
        self.log = log

    def flush(self, timeout=None):
        self.log.append(("producer.flush", ()))
        return 0

    def begin_transaction(self):
        self.log.append(("begin", ()))

    def commit_transaction(self, positions, metadata):
        self.log.append(("commit_transaction", ([(p.topic, p.partition, p.offset) for p in positions],)))

    def abort_transaction(self):
        self.log.append(("abort", ()))


class FakeConsumer:
    def __init__(self, log):
        self.log = log

    def commit(self, offsets, asynchronous):
        self.log.append(("consumer.commit", ([(p.topic, p.partition, p.offset) for p in offsets],)))
        return offsets

    def consumer_group_metadata(self):
        return "meta"


class FakeState:
    def __init__(self, log):
        self.prepare_checkpoint = log.recorder("state.prepare")
        self.commit_checkpoint = log.recorder("state.commit")


class FakeSinkManager:
    def __init__(self, log):
        self.flush = log.recorder("sink.flush")
        self.sinks = ["a sink"]


def test_commit_order_at_least_once():
    log = Log()
    cp = Checkpoint(5.0, 0, FakeProducer(log), FakeConsumer(log), FakeState(log), FakeSinkManager(log))
    cp.store_batch({("t", 0): 9, ("t", 1): 4}, {}, 12)
    cp.commit()
    names = [name for name, _ in log]
    assert names == ["sink.flush", "sink.flush", "state.prepare", "producer.flush", "consumer.commit", "state.commit"]
    # the committed position is the next offset to read: last processed + 1
    assert log[4][1][0] == [("t", 0, 10), ("t", 1, 5)]
    assert log[5][1][0] == {("t", 0): 9, ("t", 1): 4}


def test_exactly_once_commits_offsets_in_the_transaction():
    log = Log()
    cp = Checkpoint(5.0, 0, FakeProducer(log), FakeConsumer(log), None, None, exactly_once=True)
    cp.store_batch({("t", 0): 1}, {}, 2)
    cp.commit()
    assert [n for n, _ in log] == ["begin", "producer.flush", "commit_transaction"]
    assert log[2][1][0] == [("t", 0, 2)]
    empty = Checkpoint(5.0, 0, FakeProducer(log), FakeConsumer(log), exactly_once=True)
    assert empty.empty()
    empty.close()
    assert log[-1][0] == "abort"


def test_expiry_by_count_and_time():
    cp = Checkpoint(3600, 10, None, None)
    cp.store_batch({("t", 0): 5}, {}, 6)
    assert not cp.expired() and cp.remaining() == 4
    cp.store_batch({("t", 0): 9}, {}, 4)
    assert cp.expired()
    assert Checkpoint(0, 0, None, None).expired()
