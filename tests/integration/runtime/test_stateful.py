"""Stateful apply/filter/update through the state package: state survives restarts and is
recovered from the changelog topic when the local state is gone."""

from __future__ import annotations

import uuid

import pytest

from stream_edge import Application, State

pytestmark = pytest.mark.integration


def totals_app(bootstrap, group, state_dir, src, **kwargs):
    kwargs.setdefault("auto_offset_reset", "earliest")
    app = Application(bootstrap, consumer_group=group, loglevel=None, state_dir=state_dir, commit_interval=0.5,
                      **kwargs)

    def running_total(value: dict, state: State) -> dict:
        total = state.get("total", 0) + value["amount"]
        state.set("total", total)
        return {"total": total}

    sdf = app.dataframe(app.topic(src))
    sdf = sdf.filter(lambda value, state: state.get("blocked") is None, stateful=True)
    sdf.update(lambda value, key, ts, headers, state: state.set("last_ts", ts), stateful=True, metadata=True)
    sdf = sdf.apply(running_total, stateful=True)
    return app, sdf


def test_stateful_totals_survive_restart_and_changelog_recovery(kafka_bootstrap, make_topic, produce, tmp_path):
    src = make_topic(partitions=2)
    group = f"state-{uuid.uuid4().hex[:8]}"
    produce(src, [(k, {"amount": 1}) for k in (b"a", b"b", b"a")])
    app, _ = totals_app(kafka_bootstrap, group, tmp_path / "s1", src)
    first = app.run(count=3, timeout=30)
    assert sorted(r["total"] for r in first) == [1, 1, 2]

    produce(src, [(b"a", {"amount": 10})])
    app, _ = totals_app(kafka_bootstrap, group, tmp_path / "s1", src)  # same local state
    assert app.run(count=1, timeout=30) == [{"total": 12}]

    produce(src, [(b"a", {"amount": 100}), (b"b", {"amount": 5})])
    app, _ = totals_app(kafka_bootstrap, group, tmp_path / "fresh", src)  # no local state: changelog
    assert sorted(r["total"] for r in app.run(count=2, timeout=60)) == [6, 112]


def test_stateful_without_changelogs_and_clear_state(kafka_bootstrap, make_topic, produce, tmp_path):
    src = make_topic()
    group = f"state-{uuid.uuid4().hex[:8]}"
    produce(src, [(b"a", {"amount": 2}), (b"a", {"amount": 3})])
    app, _ = totals_app(kafka_bootstrap, group, tmp_path / "s", src, use_changelog_topics=False)
    assert [r["total"] for r in app.run(count=2, timeout=30)] == [2, 5]
    assert not any(name.startswith("changelog__") for name in app.topic_manager.all_topics)
    app.clear_state()
    assert not (tmp_path / "s" / group).exists()


def test_committed_offset_deleted_by_retention_resumes_at_the_log_start(kafka_bootstrap, kafka_admin, make_topic,
                                                                        produce, tmp_path):
    """The committed source offset was deleted by retention: the runner resumes where the state
    manager's recovery policy says (default "earliest": the log start), not at auto_offset_reset."""
    from confluent_kafka import TopicPartition

    src = make_topic()
    group = f"state-{uuid.uuid4().hex[:8]}"
    produce(src, [(b"a", {"amount": 1}) for _ in range(5)])
    app, _ = totals_app(kafka_bootstrap, group, tmp_path / "s", src)
    assert [r["total"] for r in app.run(count=5, timeout=30)] == [1, 2, 3, 4, 5]  # commits offset 5
    produce(src, [(b"a", {"amount": 10}) for _ in range(15)])  # offsets 5..19
    for future in kafka_admin.delete_records([TopicPartition(src, 0, 15)]).values():
        future.result(timeout=30)  # offsets 5..14 never processed, now gone
    app, _ = totals_app(kafka_bootstrap, group, tmp_path / "s", src, auto_offset_reset="latest")
    rows = app.run(count=5, timeout=30, metadata=True)
    # Offsets 15..19; the local state was deleted and rebuilt from changelog records below 15,
    # i.e. the five first messages (total 5).
    assert [r["_offset"] for r in rows] == [15, 16, 17, 18, 19]
    assert [r["total"] for r in rows] == [15, 25, 35, 45, 55]
