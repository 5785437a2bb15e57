"""PostgreSQLSink on the real local PostgreSQL server and Kafka broker."""

from __future__ import annotations

import datetime as dt
import signal
import time
import uuid

import pytest

from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.community.postgresql import (
    PostgreSQLSink,
    PostgreSQLSinkException,
    PostgresSQLSinkMissingExistingPK,
    PostgresSQLSinkPKNullValue,
)

from connector_testkit import TS0, record, stop_program, wait_for_log

pytestmark = pytest.mark.integration

SINK = "stream_edge.sinks.community.postgresql:PostgreSQLSink"
RECORDS = 3000


def spec(pg_kwargs, schema, **extra):
    return {"class": SINK, "kwargs": dict(pg_kwargs, table_name="readings", schema_name=schema, **extra)}


def test_kill9_mid_stream_then_restart_upserts_every_record_once(make_topic, produce, run_program, pg_kwargs,
                                                                   pg_schema, pg_query):
    topic = make_topic(partitions=2, prefix="pg-kill9")
    produce(topic, RECORDS)
    group = f"pg-kill9-{uuid.uuid4().hex[:8]}"
    sink = spec(pg_kwargs, pg_schema, primary_key_columns=["id"], upsert_on_primary_key=True)
    crashed = run_program(topic, group, sink, crash_after=1000)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    written_before = pg_query(f'SELECT count(*) FROM "{pg_schema}".readings')[0][0]
    assert 0 < written_before < RECORDS
    finished = run_program(topic, group, sink)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rows = pg_query(f'SELECT id, sensor, reading, __key, "timestamp" FROM "{pg_schema}".readings ORDER BY id')
    assert len(rows) == RECORDS
    assert [r[0] for r in rows] == list(range(RECORDS))
    assert rows[7][1:4] == (record(7)["sensor"], record(7)["reading"], "k7")
    assert rows[7][4] == dt.datetime.fromtimestamp((TS0 + 7) / 1000, dt.timezone.utc).replace(tzinfo=None)
    pk = pg_query("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                  "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary",
                  (f'"{pg_schema}".readings',))
    assert pk == [("id",)]


def test_kill9_mid_stream_then_restart_appends_without_loss(make_topic, produce, run_program, pg_kwargs,
                                                            pg_schema, pg_query):
    topic = make_topic(partitions=2, prefix="pg-append")
    produce(topic, RECORDS)
    group = f"pg-append-{uuid.uuid4().hex[:8]}"
    sink = spec(pg_kwargs, pg_schema)
    crashed = run_program(topic, group, sink, crash_after=1000)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    finished = run_program(topic, group, sink)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ids = [r[0] for r in pg_query(f'SELECT id FROM "{pg_schema}".readings')]
    assert sorted(set(ids)) == list(range(RECORDS))  # nothing lost
    assert len(ids) >= RECORDS  # append mode is at-least-once: a replayed checkpoint may repeat


def test_locked_table_is_backpressure_then_everything_lands(make_topic, produce, run_program, pg_kwargs,
                                                             pg_schema, tmp_path):
    import psycopg

    topic = make_topic(partitions=1, prefix="pg-bp")
    produce(topic, 600)
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{pg_schema}"')
        conn.execute(f'CREATE TABLE "{pg_schema}".readings ("timestamp" TIMESTAMP NOT NULL, __key TEXT, '
                     f'id BIGINT PRIMARY KEY, sensor TEXT, reading DOUBLE PRECISION)')
    locker = psycopg.connect(**pg_kwargs)
    locker.execute(f'LOCK TABLE "{pg_schema}".readings IN ACCESS EXCLUSIVE MODE')
    sink = spec(pg_kwargs, pg_schema, primary_key_columns=["id"], upsert_on_primary_key=True,
                statement_timeout_seconds=1, backpressure_retry_seconds=0.3)
    sink["idle_timeout"] = 8
    proc = run_program(topic, f"pg-bp-{uuid.uuid4().hex[:8]}", sink, background=True, log_dir=tmp_path)
    try:
        wait_for_log(proc, "PostgreSQL refused the write")
        locker.rollback()  # releases the lock: the paused partition resumes and is replayed
        assert proc.wait(timeout=180) == 0, proc.log_path.read_text()
    finally:
        locker.close()
        stop_program(proc)
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        ids = [r[0] for r in conn.execute(f'SELECT id FROM "{pg_schema}".readings ORDER BY id')]
    assert ids == list(range(600))


def test_bad_record_stops_the_app_naming_record_and_field(make_topic, produce, run_program, pg_kwargs,
                                                          pg_schema, pg_query, kafka_bootstrap):
    import json

    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="pg-bad")
    produce(topic, 10)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b"k10", value=json.dumps({"id": 10, "sensor": "s0", "reading": "hot"}).encode())
    producer.flush(30)
    sink = spec(pg_kwargs, pg_schema)
    sink["commit_every"] = 5
    done = run_program(topic, f"pg-bad-{uuid.uuid4().hex[:8]}", sink)
    assert done.returncode != 0
    assert f"field 'reading' of topic '{topic}' partition 0 offset 10" in done.stderr
    assert "column" in done.stderr and "double precision" in done.stderr
    # The good records of earlier checkpoints are there; the bad checkpoint committed nothing.
    assert [r[0] for r in pg_query(f'SELECT id FROM "{pg_schema}".readings ORDER BY id')] == list(range(10))


# -- the sink driven directly against the server: schema evolution and refusals ----------------------

def _batch(values, start=0, topic="t", partition=0):
    batch = SinkBatch(topic, partition)
    for n, value in enumerate(values):
        batch.append(value=value, key=f"k{start + n}".encode(), timestamp=TS0 + n, headers=[], offset=start + n)
    return batch


def _sink(pg_kwargs, schema, **kw):
    sink = PostgreSQLSink(**pg_kwargs, table_name=kw.pop("table_name", "evo"), schema_name=schema, **kw)
    sink.setup()
    return sink


def test_new_fields_become_columns_and_types_are_inferred(pg_kwargs, pg_schema, pg_query):
    sink = _sink(pg_kwargs, pg_schema)
    sink.write(_batch([{"a": 1, "b": None}, {"a": 2, "c": "x"}]))
    sink.write(_batch([{"a": 3, "d": {"nested": [1, 2]}, "e": True, "f": 1.5}], start=2))
    types = dict(pg_query("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s",
                          (pg_schema,)))
    assert types == {"timestamp": "timestamp without time zone", "__key": "text", "a": "bigint", "c": "text",
                     "d": "jsonb", "e": "boolean", "f": "double precision"}
    rows = pg_query(f'SELECT a, c, d, e, f, __key FROM "{pg_schema}".evo ORDER BY a')
    assert rows == [(1, None, None, None, None, "k0"), (2, "x", None, None, None, "k1"),
                    (3, None, {"nested": [1, 2]}, True, 1.5, "k2")]


def test_primary_key_grows_and_existing_key_must_be_kept(pg_kwargs, pg_schema, pg_query):
    first = _sink(pg_kwargs, pg_schema, primary_key_columns="a", upsert_on_primary_key=True)
    first.write(_batch([{"a": 1, "b": 1, "v": 1}, {"a": 1, "b": 1, "v": 2}]))
    assert pg_query(f'SELECT a, b, v FROM "{pg_schema}".evo') == [(1, 1, 2)]  # last record per key wins
    wider = _sink(pg_kwargs, pg_schema, primary_key_columns=["a", "b"], upsert_on_primary_key=True)
    wider.write(_batch([{"a": 1, "b": 2, "v": 3}, {"a": 1, "b": 1, "v": 4}]))
    assert pg_query(f'SELECT a, b, v FROM "{pg_schema}".evo ORDER BY b') == [(1, 1, 4), (1, 2, 3)]
    narrower = _sink(pg_kwargs, pg_schema, primary_key_columns=["b"], upsert_on_primary_key=True)
    with pytest.raises(PostgresSQLSinkMissingExistingPK, match=r"\['a', 'b'\]"):
        narrower.write(_batch([{"a": 5, "b": 5, "v": 5}]))
    with pytest.raises(PostgresSQLSinkPKNullValue, match="primary key field 'b' of topic 't' partition 0 offset 0"):
        wider.write(_batch([{"a": 5, "v": 5}]))


def test_do_nothing_keeps_existing_rows_and_plain_pk_collision_names_the_record(pg_kwargs, pg_schema, pg_query):
    keep = _sink(pg_kwargs, pg_schema, primary_key_columns=["a"], on_conflict_do_nothing=True)
    keep.write(_batch([{"a": 1, "v": "first"}]))
    keep.write(_batch([{"a": 1, "v": "second"}, {"a": 2, "v": "new"}]))
    assert pg_query(f'SELECT a, v FROM "{pg_schema}".evo ORDER BY a') == [(1, "first"), (2, "new")]
    plain = _sink(pg_kwargs, pg_schema, primary_key_columns=["a"])
    with pytest.raises(PostgreSQLSinkException, match="topic 't' partition 0 offset 41"):
        plain.write(_batch([{"a": 3, "v": "x"}, {"a": 1, "v": "dup"}], start=40))
    assert pg_query(f'SELECT count(*) FROM "{pg_schema}".evo') == [(2,)]  # the failed batch wrote nothing


def test_without_schema_auto_update_unknown_fields_are_refused(pg_kwargs, pg_schema, pg_query):
    _sink(pg_kwargs, pg_schema).write(_batch([{"a": 1}]))
    fixed = _sink(pg_kwargs, pg_schema, schema_auto_update=False)
    fixed.write(_batch([{"a": 2}]))
    with pytest.raises(PostgreSQLSinkException, match="field 'zz' of topic 't' partition 0 offset 7 has no column"):
        fixed.write(_batch([{"a": 3, "zz": 1}], start=7))
    missing = _sink(pg_kwargs, pg_schema, schema_auto_update=False, table_name="nope")
    with pytest.raises(PostgreSQLSinkException, match="does not exist"):
        missing.write(_batch([{"a": 1}]))
    assert pg_query(f'SELECT a FROM "{pg_schema}".evo ORDER BY a') == [(1,), (2,)]


def test_include_metadata_false_and_table_name_callable(pg_kwargs, pg_schema, pg_query):
    sink = _sink(pg_kwargs, pg_schema, include_metadata=False, table_name=lambda item: f"t_{item.value['kind']}")
    sink.write(_batch([{"kind": "x", "n": 1}, {"kind": "y", "n": 2}, {"kind": "x", "n": 3}]))
    assert pg_query(f'SELECT kind, n FROM "{pg_schema}".t_x ORDER BY n') == [("x", 1), ("x", 3)]
    assert pg_query(f'SELECT kind, n FROM "{pg_schema}".t_y') == [("y", 2)]
    cols = pg_query("SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = 't_x' "
                    "ORDER BY ordinal_position", (pg_schema,))
    assert cols == [("kind",), ("n",)]


def test_unreachable_server_is_a_connect_failure_callback(pg_kwargs, pg_schema):
    from infra.local.services import free_port

    seen = []
    sink = PostgreSQLSink(**dict(pg_kwargs, port=free_port()), table_name="x", schema_name=pg_schema,
                          connection_timeout_seconds=2, on_client_connect_failure=seen.append)
    sink.start()
    assert len(seen) == 1 and "connection" in str(seen[0]).lower()
