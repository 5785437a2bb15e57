"""StateStoreManager against the real broker: compacted changelog topics are created, state is
rebuilt from them before processing (with progress in the log), records of a checkpoint whose
offsets were never committed are not applied, and untrustworthy local state is rebuilt."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource

from stream_edge import Application
from stream_edge.state.exceptions import StateRecoveryOffsetOutOfRange

pytestmark = pytest.mark.integration


def new_manager(bootstrap, group, state_dir, store_type="rocksdb", **app_kwargs):
    app = Application(bootstrap, consumer_group=group, state_dir=state_dir, loglevel=None, **app_kwargs)
    manager = app.processing_context.state_manager
    manager._default_store_type = store_type
    return app, manager


def checkpoint(app, manager, offsets):
    manager.prepare_checkpoint(offsets)
    app._producer.flush()
    manager.commit_checkpoint(offsets)


def write_totals(app, manager, src, partition, values, offset):
    tx = manager.get_transaction(src, partition)
    for key, total in values.items():
        tx.as_state(key).set("total", total)
    checkpoint(app, manager, {(src, partition): offset})


def totals(manager, src, partition, keys):
    tx = manager.get_transaction(src, partition)
    return {key: tx.as_state(key).get("total") for key in keys}


def test_changelog_is_compacted_and_recovers_a_fresh_memory_store(kafka_bootstrap, kafka_admin, make_topic, group,
                                                                   tmp_path, caplog):
    src = make_topic(partitions=2)
    app, manager = new_manager(kafka_bootstrap, group, tmp_path / "a")
    manager.register_store(src)
    for p in (0, 1):
        manager.on_partition_assign(src, p, -1001)
    keys = [f"key-{i}".encode() for i in range(300)]
    write_totals(app, manager, src, 0, {k: i for i, k in enumerate(keys)}, offset=299)
    write_totals(app, manager, src, 0, {keys[0]: "updated"}, offset=300)
    manager.get_transaction(src, 0).as_state(keys[1]).delete("total")
    checkpoint(app, manager, {(src, 0): 301})
    manager.close()

    changelog = f"changelog__{group}--{src}--default"
    config = kafka_admin.describe_configs([ConfigResource("topic", changelog)])
    (entries,) = [f.result(timeout=30) for f in config.values()]
    assert entries["cleanup.policy"].value == "compact"
    assert len(kafka_admin.list_topics(changelog, timeout=10).topics[changelog].partitions) == 2

    caplog.set_level(logging.INFO, logger="stream_edge.state")
    app2, memory = new_manager(kafka_bootstrap, group, tmp_path / "b", store_type="memory")
    memory.register_store(src)
    memory.on_partition_assign(src, 0, 302)
    got = totals(memory, src, 0, keys)
    assert got[keys[0]] == "updated" and got[keys[1]] is None
    assert all(got[k] == i for i, k in enumerate(keys) if i > 1)
    assert "recovering from changelog" in caplog.text and "recovered 302 records" in caplog.text
    memory.close()


def test_records_of_an_uncommitted_checkpoint_are_not_recovered(kafka_bootstrap, make_topic, group, tmp_path, caplog):
    src = make_topic()
    app, manager = new_manager(kafka_bootstrap, group, tmp_path / "a")
    manager.register_store(src)
    manager.on_partition_assign(src, 0, -1001)
    write_totals(app, manager, src, 0, {b"k": 1}, offset=9)
    # the next checkpoint produces its changelog, then its offset commit fails: the app dies
    manager.get_transaction(src, 0).as_state(b"k").set("total", 2)
    manager.prepare_checkpoint({(src, 0): 19})
    app._producer.flush()
    manager.close()

    caplog.set_level(logging.INFO, logger="stream_edge.state")
    for state_dir in ("a", "fresh"):  # the local store, and a rebuild from the changelog alone
        app2, again = new_manager(kafka_bootstrap, group, tmp_path / state_dir)
        again.register_store(src)
        again.on_partition_assign(src, 0, 10)  # the group's committed offset
        assert totals(again, src, 0, [b"k"]) == {b"k": 1}
        again.close()
    assert "1 records of uncommitted checkpoints skipped" in caplog.text


def test_local_state_ahead_of_a_recreated_changelog_is_rebuilt(kafka_bootstrap, kafka_admin, make_topic, group,
                                                                tmp_path, caplog):
    src = make_topic()
    app, manager = new_manager(kafka_bootstrap, group, tmp_path / "a")
    manager.register_store(src)
    manager.on_partition_assign(src, 0, -1001)
    for offset in range(5):
        write_totals(app, manager, src, 0, {b"k": offset}, offset=offset)
    manager.close()
    changelog = f"changelog__{group}--{src}--default"
    kafka_admin.delete_topics([changelog])[changelog].result(timeout=30)

    # The broker deletes the topic asynchronously: wait until its metadata no longer lists it, so
    # the next definition of the store sees a missing changelog (not one being deleted) and creates
    # it again, empty, as 3.28.1 does when a store is defined; any error then is real.
    deadline = time.monotonic() + 30
    while changelog in kafka_admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"topic {changelog} still listed 30 s after its deletion"
        time.sleep(0.2)
    caplog.set_level(logging.INFO, logger="stream_edge.state")
    app2, again = new_manager(kafka_bootstrap, group, tmp_path / "a")
    again.register_store(src)
    again.on_partition_assign(src, 0, 5)
    assert "dropping the local state and rebuilding it from the changelog" in caplog.text
    assert totals(again, src, 0, [b"k"]) == {b"k": None}
    again.close()


def test_source_offset_out_of_range_rebuilds_state_by_policy(kafka_bootstrap, kafka_admin, make_topic, send, group,
                                                             tmp_path, caplog):
    """Retention deleted source messages the group never processed (committed 4, log start 15):
    Quix 3.28's state_recovery_offset_reset decides what the state keeps and where to resume."""
    src = make_topic()
    send(src, [(b"k", {"n": i}, None) for i in range(20)])
    app, manager = new_manager(kafka_bootstrap, group, tmp_path / "a")
    manager.register_store(src)
    manager.on_partition_assign(src, 0, -1001)
    write_totals(app, manager, src, 0, {b"early": 1}, offset=2)    # changelog record of source offset 2
    write_totals(app, manager, src, 0, {b"late": 2}, offset=17)    # ... and of source offset 17
    manager.close()
    for future in kafka_admin.delete_records([TopicPartition(src, 0, 15)]).values():
        future.result(timeout=30)

    caplog.set_level(logging.INFO, logger="stream_edge.state")
    app, earliest = new_manager(kafka_bootstrap, group, tmp_path / "a")
    earliest.register_store(src)
    assert earliest.on_partition_assign(src, 0, 4) == 15  # resume at the log start
    assert "committed offset 4 is no longer retained by Kafka (log start 15)" in caplog.text
    # Local state deleted and rebuilt from the changelog records below the new position only.
    assert totals(earliest, src, 0, [b"early", b"late"]) == {b"early": 1, b"late": None}
    earliest.close()

    app, latest = new_manager(kafka_bootstrap, group, tmp_path / "b", state_recovery_offset_reset="latest")
    latest.register_store(src)
    assert latest.on_partition_assign(src, 0, 4) == 20  # resume at the end
    assert totals(latest, src, 0, [b"early", b"late"]) == {b"early": None, b"late": None}
    latest.close()

    app, strict = new_manager(kafka_bootstrap, group, tmp_path / "c",
                              auto_recover_from_source_offset_out_of_range=False)
    strict.register_store(src)
    with pytest.raises(StateRecoveryOffsetOutOfRange, match="no longer retained"):
        strict.on_partition_assign(src, 0, 4)
    strict.close()
    app, match_error = new_manager(kafka_bootstrap, group, tmp_path / "d", state_recovery_offset_reset="match",
                                   auto_offset_reset="error")
    match_error.register_store(src)
    with pytest.raises(StateRecoveryOffsetOutOfRange):
        match_error.on_partition_assign(src, 0, 4)
    match_error.close()
