"""Pure join pieces: mergers, per-key stores (expiry, checkpoint marks), the timestamp ordering of
joined topics (fake consumer: the real one is exercised by tests/compat/joins) and the SQLite lookup."""

from __future__ import annotations

import sqlite3

import pytest
from confluent_kafka import TopicPartition

from stream_edge.dataframe.joins.lookups import SQLiteLookup, SQLiteLookupField, SQLiteLookupQueryField
from stream_edge.kafka.timestamp_order import TimestampOrder
from stream_edge.dataframe.joins.store import AsOfCodec, AsOfKeyState, IntervalCodec, IntervalKeyState
from stream_edge.dataframe.joins.utils import get_merger


def test_mergers_follow_on_merge_modes():
    left, right = {"x": 1, "l": 1}, {"x": 2, "r": 2}
    assert list(get_merger("keep-left")(left, right).items()) == [("x", 1), ("r", 2), ("l", 1)]
    assert list(get_merger("keep-right")(left, right).items()) == [("x", 2), ("l", 1), ("r", 2)]
    assert get_merger("raise")({"l": 1}, None) == {"l": 1}
    with pytest.raises(ValueError, match="Overlapping columns: x"):
        get_merger("raise")(left, right)
    with pytest.raises(ValueError, match='Invalid "on_merge" value: nope'):
        get_merger("nope")  # type: ignore[arg-type]


def test_asof_state_keeps_one_value_per_timestamp_and_expires_past_grace():
    ks = AsOfKeyState()
    for ts, value in [(100, "a"), (100, "b"), (160, "c"), (99, "late")]:
        ks.add(ts, value, grace_ms=60)
    assert ks.times == [100, 160] and ks.latest(159) == "b" and ks.latest(99) is None
    restored = AsOfCodec().load_key_state(AsOfCodec().dump_key_state(ks))
    assert restored.latest(1000) == "c"


def test_interval_state_expires_only_records_of_earlier_checkpoints():
    ks, codec = IntervalKeyState(), IntervalCodec()
    ks.add(100, "a", grace_ms=10)
    ks.add(100, "b", grace_ms=10)
    ks.add(500, "c", grace_ms=10)
    assert ks.between(90, 100) == ["a", "b"]  # same checkpoint: kept
    codec.dump_key_state(ks)  # the checkpoint commits them
    ks.add(501, "d", grace_ms=10)
    assert ks.between(0, 1000) == ["c", "d"]


class _Msg:
    def __init__(self, topic: str, offset: int, ts: int) -> None:
        self._t, self._o, self._ts = topic, offset, ts

    def topic(self): return self._t
    def partition(self): return 0
    def offset(self): return self._o
    def timestamp(self): return (1, self._ts)
    def error(self): return None


class _Consumer:
    def __init__(self, batches, high=100):
        self.batches, self.high, self.at = list(batches), high, 50

    def consume(self, n, timeout):
        return self.batches.pop(0) if self.batches else []

    def position(self, parts):
        return [TopicPartition(p.topic, p.partition, self.at) for p in parts]

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None):
        on_assign(self, [TopicPartition("L", 0), TopicPartition("R", 0)])

    def get_watermark_offsets(self, tp, cached=True):
        return (0, self.high)


def test_ordering_merges_heads_by_timestamp_and_holds_back_until_both_sides_arrive():
    consumer = _Consumer([[_Msg("R", 0, 94), _Msg("R", 1, 100), _Msg("R", 2, 905)], [],  # [] ends the drain
                          [_Msg("L", 0, 100), _Msg("L", 1, 1000), _Msg("L", 2, 900)]])
    ordering = TimestampOrder(consumer)
    ordering.add_group(["L", "R"])
    ordering.subscribe(["L", "R"], on_assign=lambda c, p: None)
    assert ordering.consume(10, 0) == []  # the left partition may still have older records
    assert ordering.position([TopicPartition("R", 0)])[0].offset == 0  # nothing committed past them
    out = ordering.consume(10, 0)
    assert [(m.topic(), m.timestamp()[1]) for m in out] == [("R", 94), ("L", 100), ("R", 100), ("R", 905)]
    assert ordering.position([TopicPartition("L", 0)])[0].offset == 1
    # a waiting consume that finds nothing releases nothing while the right side may still have older records
    assert ordering.consume(1, 1.0) == []
    consumer.at = 100  # the right partition reached its high watermark: it is idle, the held records go
    rest = ordering.consume(1, 1.0)
    assert [m.timestamp()[1] for m in rest] == [1000, 900]


def test_sqlite_lookup_fields_defaults_and_cache(tmp_path):
    path = str(tmp_path / "d.db")
    with sqlite3.connect(path) as conn:
        conn.execute("create table dev (id text, name text, level integer)")
        conn.executemany("insert into dev values (?, ?, ?)", [("a", "alpha", 1), ("a", "alpha2", 2), ("b", "beta", 3)])
    lookup = SQLiteLookup(path)
    fields = {"dev": SQLiteLookupField(table="dev", columns=["name"], on="id", default="none"),
              "all": SQLiteLookupField(table="dev", columns=["level"], on="id", order_by="level",
                                       order_by_direction="DESC", first_match_only=False),
              "q": SQLiteLookupQueryField("SELECT name FROM dev WHERE level >= :min")}
    value = {"min": 2}
    lookup.join(fields, "a", value, None, 0, None)
    assert value == {"min": 2, "dev": {"name": "alpha"}, "all": [{"level": 2}, {"level": 1}], "q": ("alpha2",)}
    other = {"min": 9}
    lookup.join(fields, "zz", other, None, 0, None)
    assert other["dev"] == "none" and other["all"] == [] and other["q"] is None
    lookup.join(fields, "a", {"min": 0}, None, 0, None)
    assert lookup.cache_info() == {"hits": 3, "misses": 6, "size": 6, "maxsize": 1000}
    with pytest.raises(ValueError, match="Invalid SQL identifier: de v"):
        SQLiteLookupField(table="de v", columns=["x"], on="id")


def test_application_bounds_the_timestamp_order_buffers_with_max_partition_buffer_size():
    from stream_edge import Application

    app = Application(broker_address="127.0.0.1:1", consumer_group="g", max_partition_buffer_size=3)
    consumer = app._consumer  # what joins and concat call order_by_timestamp on
    consumer.order_by_timestamp(["left-t", "right-t"])
    assert consumer._order is not None and consumer._order._limit == 3
