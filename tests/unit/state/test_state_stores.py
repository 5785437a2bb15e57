"""Stores and per-checkpoint transactions: memory and RocksDB, no broker (changelogs off)."""

from __future__ import annotations

import pytest

from stream_edge.dataframe.windows.aggregations import Sum
from stream_edge.dataframe.windows.fixed_engine import FixedWindowEngine
from stream_edge.state import (MemoryBackend, PartitionTransaction, RocksDBBackend, RocksDBOptions,
                               StateStoreManager)
from stream_edge.state.exceptions import (PartitionNotAssignedError, StateOffsetMismatchError, StoreLockedError,
                                          StoreNotRegisteredError)

NO_OFFSET = -1001


def manager(tmp_path, store_type="rocksdb", **kwargs) -> StateStoreManager:
    return StateStoreManager(group_id="g", state_dir=tmp_path, use_changelog_topics=False,
                             default_store_type=store_type, **kwargs)


def checkpoint(mgr, offsets):
    mgr.prepare_checkpoint(offsets)
    mgr.commit_checkpoint(offsets)


@pytest.mark.parametrize("backend_factory", [MemoryBackend, lambda: None], ids=["memory", "rocksdb"])
def test_state_is_scoped_per_message_key(tmp_path, backend_factory):
    backend = backend_factory() or RocksDBBackend(tmp_path / "db")
    tx = PartitionTransaction(backend)
    a, b = tx.as_state(b"key-a"), tx.as_state(b"key-b")
    a.set("n", 1)
    assert (a.get("n"), b.get("n"), b.get("n", 0)) == (1, None, 0)
    assert a.exists("n") and not b.exists("n")
    tx.commit(processed_offsets={"input": 5}, changelog_offset=None)
    assert a.get("n") == 1 and backend.processed_offsets == {"input": 5}
    a.delete("n")
    assert not a.exists("n") and a.get("n", "gone") == "gone"
    tx.rollback()
    assert a.get("n") == 1
    backend.close()


def test_rocksdb_state_survives_restart_and_a_failed_checkpoint_leaves_nothing(tmp_path):
    mgr = manager(tmp_path)
    mgr.register_store("input")
    mgr.on_partition_assign("input", 0, NO_OFFSET)
    state = mgr.get_transaction("input", 0).as_state(b"k")
    state.set("total", 10)
    checkpoint(mgr, {("input", 0): 99})
    state.set("total", 11)
    state.set("other", [1, 2])
    mgr.prepare_checkpoint({("input", 0): 120})  # the offset commit then fails: no commit_checkpoint
    mgr.close()

    again = manager(tmp_path)
    again.register_store("input")
    again.on_partition_assign("input", 0, 100)
    state = again.get_transaction("input", 0).as_state(b"k")
    assert state.get("total") == 10 and not state.exists("other")
    assert (tmp_path / "g" / "default" / "input" / "0").is_dir()
    again.close()


def test_partitions_are_isolated_and_uncommitted_partitions_roll_back(tmp_path):
    mgr = manager(tmp_path, store_type="memory")
    mgr.register_store("input")
    for p in (0, 1):
        mgr.on_partition_assign("input", p, NO_OFFSET)
    mgr.get_transaction("input", 0).as_state(b"k").set("v", "p0")
    mgr.get_transaction("input", 1).as_state(b"k").set("v", "p1")
    # partition 1 was rewound by sink backpressure: nothing of it is committed
    checkpoint(mgr, {("input", 0): 3})
    assert mgr.get_transaction("input", 0).as_state(b"k").get("v") == "p0"
    assert mgr.get_transaction("input", 1).as_state(b"k").get("v") is None


def test_windowed_store_persists_key_states_once_per_checkpoint(tmp_path):
    engine = FixedWindowEngine(10, 0, None, Sum())
    mgr = manager(tmp_path)
    mgr.register_windowed_store("input", "tumbling_window_10_sum")
    mgr.on_partition_assign("input", 0, NO_OFFSET)
    tx = mgr.get_transaction("input", 0, "tumbling_window_10_sum")
    for ts in (1, 2, 3):
        engine.process_final(tx.key_state(b"k", engine), 1, ts)
    assert [key for key, _ in tx.prepare()] == [b"k"]
    mgr.commit_checkpoint({("input", 0): 2})
    mgr.close()

    again = manager(tmp_path)
    again.register_windowed_store("input", "tumbling_window_10_sum")
    again.on_partition_assign("input", 0, 3)
    tx = again.get_transaction("input", 0, "tumbling_window_10_sum")
    assert engine.process_final(tx.key_state(b"k", engine), 1, 12) == [(0, 10, 3)]
    again.close()


def test_rocksdb_options_dumps_and_loads_are_used(tmp_path):
    calls = []

    def dumps(value):
        calls.append(value)
        return repr(value).encode()

    opts = RocksDBOptions(dumps=dumps, loads=lambda data: eval(data.decode()), block_cache_size=8 * 1024 * 1024)
    mgr = manager(tmp_path, rocksdb_options=opts)
    mgr.register_store("input")
    mgr.on_partition_assign("input", 0, NO_OFFSET)
    mgr.get_transaction("input", 0).as_state(b"k").set("t", (1, 2))
    checkpoint(mgr, {("input", 0): 0})
    assert mgr.get_transaction("input", 0).as_state(b"k").get("t") == (1, 2)
    assert (1, 2) in calls
    mgr.close()


def test_locked_store_fails_with_an_actionable_error(tmp_path):
    first = RocksDBBackend(tmp_path / "db")
    with pytest.raises(StoreLockedError, match="locked by another process"):
        RocksDBBackend(tmp_path / "db", RocksDBOptions(open_max_retries=1, open_retry_backoff=0.01))
    first.close()


def test_stale_state_against_missing_committed_offset_is_an_error(tmp_path):
    mgr = manager(tmp_path)
    mgr.register_store("input")
    mgr.on_partition_assign("input", 0, NO_OFFSET)
    mgr.get_transaction("input", 0).as_state(b"k").set("n", 1)
    checkpoint(mgr, {("input", 0): 50})
    mgr.close()
    again = manager(tmp_path)
    again.register_store("input")
    with pytest.raises(StateOffsetMismatchError, match="clear_state"):
        again.on_partition_assign("input", 0, NO_OFFSET)  # the group's offsets expired
    with pytest.raises(StateOffsetMismatchError, match="committed offset 20"):
        again.on_partition_assign("input", 0, 20)  # the group was reset behind the state
    again.on_partition_assign("input", 0, 51)
    assert again.get_transaction("input", 0).as_state(b"k").get("n") == 1
    again.close()


def test_errors_name_the_store_and_partition(tmp_path):
    mgr = manager(tmp_path, store_type="memory")
    mgr.register_store("input")
    with pytest.raises(PartitionNotAssignedError, match="'input' partition 3"):
        mgr.get_transaction("input", 3)
    with pytest.raises(StoreNotRegisteredError, match="'other'"):
        mgr.get_transaction("input", 0, "other")


def test_clear_state_deletes_the_group_directory(tmp_path):
    mgr = manager(tmp_path)
    mgr.register_store("input")
    mgr.on_partition_assign("input", 0, NO_OFFSET)
    mgr.close()
    assert (tmp_path / "g").exists()
    mgr.clear_state()
    assert not (tmp_path / "g").exists()


def test_a_store_of_two_topics_is_reached_by_reference_and_keeps_each_topics_offset(tmp_path):
    mgr = manager(tmp_path)
    ref = mgr.register_store("left--right", topics=["left", "right"])
    assert mgr.register_store("left--right", topics=["right", "left"]) is ref  # registered once
    with pytest.raises(ValueError, match="fed by topics"):
        mgr.register_store("left--right", "other", topics=["left"])
    resume = mgr.assign_partitions([("left", 1, NO_OFFSET), ("right", 1, NO_OFFSET)])
    assert resume == {}
    ref.transaction(1).as_state(b"k").set("n", 1)  # a message of either topic: the same store partition
    checkpoint(mgr, {("left", 1): 7})  # only "left" had messages in this checkpoint
    ref.transaction(1).as_state(b"k").set("n", 2)
    checkpoint(mgr, {("right", 1): 3})
    ref.transaction(1).as_state(b"k").set("n", 3)
    mgr.prepare_checkpoint({("left", 1): 9, ("right", 1): 4}, rewound={("right", 1)})  # backpressure on right
    mgr.commit_checkpoint({("left", 1): 9})
    assert ref.transaction(1).as_state(b"k").get("n") == 2  # rolled back: its changes mix both topics
    mgr.on_partition_revoke("right", 1)  # either topic's revoke closes the stream's partition
    with pytest.raises(PartitionNotAssignedError, match="'left--right' partition 1"):
        ref.transaction(1)
    mgr.close()

    again = manager(tmp_path)
    again.register_store("left--right", topics=["left", "right"])
    with pytest.raises(StateOffsetMismatchError, match="topic 'right' up to offset 3"):
        again.assign_partitions([("left", 1, 10), ("right", 1, 3)])  # right's group offset reset behind it
    again.assign_partitions([("left", 1, 10), ("right", 1, 4)])
    assert again.get_transaction("left--right", 1).as_state(b"k").get("n") == 2
    again.close()


def test_changelog_headers_carry_each_topics_offset_and_recovery_skips_uncommitted_checkpoints():
    from stream_edge.state.changelog import ChangelogWriter, processed_offsets_of
    from stream_edge.state.recovery import _uncommitted

    class Recording:
        def __init__(self):
            self.sent = []

        def produce(self, topic, value=None, key=None, headers=None, partition=None):
            self.sent.append((topic, key, value, headers, partition))

    producer = Recording()
    ChangelogWriter(producer, "changelog__g--in--default", ("in",)).produce(2, [(b"k", b"1")], {"in": 41})
    ChangelogWriter(producer, "changelog__g--a--b--default", ("a", "b")).produce(
        2, [(b"k", None)], {"a": 7, "b": 3})
    single, double = producer.sent
    assert single == ("changelog__g--in--default", b"k", b"1", [("__processed_offset__", b"41")], 2)
    assert processed_offsets_of(single[3], ("in",)) == {"in": 41}
    assert processed_offsets_of(double[3], ("a", "b")) == {"a": 7, "b": 3}
    assert processed_offsets_of(None, ("a",)) is None
    assert not _uncommitted({"a": 7, "b": 3}, {"a": 8, "b": 4})  # both committed past it: applied
    assert _uncommitted({"a": 7, "b": 3}, {"a": 8, "b": 3})  # b's offset was never committed: skipped
    assert _uncommitted({"a": 7}, {"a": None})  # the group has no offset for a
    assert not _uncommitted({"a": 7, "b": 3}, {"a": 8})  # b not assigned here: nothing to compare with
