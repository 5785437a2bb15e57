"""Stateful apply/filter/update through the state package: state survives restarts and is
recovered from the changelog topic when the local state is gone."""

from __future__ import annotations

import uuid

import pytest

from stream_edge import Application, State

pytestmark = pytest.mark.integration


def totals_app(bootstrap, group, state_dir, src, **kwargs):
    app = Application(bootstrap, consumer_group=group, auto_offset_reset="earliest", loglevel=None,
                      state_dir=state_dir, commit_interval=0.5, **kwargs)

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
