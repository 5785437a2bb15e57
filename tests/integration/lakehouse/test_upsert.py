"""``lakehouse upsert``: the keyed table equals a replay of the changelog after any runs, kills and
races (real REST catalog, real Spark; the changelog landed by the data-lake sink and registered,
or, where only the job's side matters, written by Spark in the changelog's shape)."""

from __future__ import annotations

import random
import uuid

import pytest
from lh_testkit import run_job

from lakehouse.register import RegisterOptions, run_register
from lakehouse.upsert import UpsertOptions, run_upsert
from lakehouse.upsert import commit as upsert_commit
from lakehouse.upsert import job as upsert_job
from lakehouse.upsert.commit import ConcurrentRunError
from lakehouse.upsert.history import read_state
from lakehouse.upsert.options import BOOKMARK_PROPERTY
from stream_edge.sinks.core.datalake import DataLakeSink

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TS = 1_745_311_234_567
QUIET = {"progress": lambda _line: None}


def replay(changes: list[tuple[int, int, bytes | None, dict | None]]) -> dict[str, dict]:
    """The plain replay: (partition, offset, key, value) in Kafka order; None deletes the key."""
    state: dict[str, dict] = {}
    for _p, _o, key, value in sorted(changes, key=lambda c: (c[0], c[1])):
        if key is None:
            continue
        if value is None:
            state.pop(key.decode(), None)
        else:
            state[key.decode()] = value
    return state


def table_state(spark, table: str, key: str = "key") -> dict:
    spark.sql(f"REFRESH TABLE {table}")
    return {row[key]: {k: v for k, v in row.asDict().items() if k != key} for row in spark.table(table).collect()}


def same(actual: dict, expected: dict) -> bool:
    """Equal by value; a column the replay's value lacks is NULL in the table."""
    return actual.keys() == expected.keys() and all(
        {k: v for k, v in actual[key].items() if v is not None} == {k: v for k, v in expected[key].items()
                                                                   if v is not None} for key in actual)


@pytest.fixture()
def names(services_env):
    namespace = f"ups_{uuid.uuid4().hex[:8]}"
    return f"rest.{namespace}.devices_changelog", f"rest.{namespace}.devices"


def land(sink: DataLakeSink, changes, partition_count: int = 2) -> None:
    for partition in range(partition_count):
        mine = [c for c in changes if c[0] == partition]
        for p, offset, key, value in mine:
            sink.add(value, key, TS + offset, [], "devices", p, offset)
        sink.flush("devices", partition)


def test_plain_upserts_tombstones_schema_evolution_and_rejects(spark, tmp_path, names):
    """Three rounds of edge -> register -> upsert: updates, tombstones, a key deleted then back, a
    new column, a change without a key; after each run the table is the replay."""
    source, table = names
    lake = tmp_path / "lake"
    sink = DataLakeSink("devices", storage_url=lake.as_uri(), hive_columns=["year", "month", "day", "hour"],
                        include_kafka_metadata=True)
    sink.setup()
    rng = random.Random(5)
    offsets = [0, 0]
    changes: list = []

    def more(count: int, extra: dict | None = None) -> list:
        batch = []
        for _ in range(count):
            key = f"dev-{rng.randrange(12)}"
            partition = hash(key) % 2
            value = None if rng.random() < 0.2 else {"name": key.upper(), "level": rng.randrange(100), **(extra or {})}
            batch.append((partition, offsets[partition], key.encode(), value))
            offsets[partition] += 1
        return batch

    def run_round(batch: list) -> object:
        changes.extend(batch)
        land(sink, batch)
        run_register(spark, RegisterOptions(source=(lake / "devices").as_uri(), table=source))
        report = run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)
        assert same(table_state(spark, table), replay(changes)), report.summary_line()
        return report

    first = run_round(more(60))
    assert first.created and first.changes_read == 60 and first.upserts == len(replay(changes))
    assert first.rows_after == len(replay(changes))
    batch = more(60)
    gone = next(c for c in changes if c[3] is not None)[2]  # a key deleted, then back
    batch += [(hash(gone.decode()) % 2, offsets[hash(gone.decode()) % 2], gone, None)]
    offsets[hash(gone.decode()) % 2] += 1
    second = run_round(batch)
    assert second.deletes > 0 and second.since == first.until and not second.rejected
    assert second.plan == "delete + insert"  # merge-on-read, no snapshot reads: keys replaced
    third_batch = more(40, {"firmware": "2.1"}) + [(0, offsets[0], None, {"name": "orphan", "level": 1})]
    offsets[0] += 1
    third_batch += [(hash(gone.decode()) % 2, offsets[hash(gone.decode()) % 2], gone, {"name": "BACK", "level": 7})]
    third = run_round(third_batch)
    assert "firmware" in spark.table(table).columns
    assert third.rejected == 1 and third.rejects_table == f"{table}_rejects"
    rejects = spark.table(f"{table}_rejects").collect()
    assert [(r._kafka_topic, r._kafka_partition, r._kafka_offset, r._kafka_key) for r in rejects] == [
        ("devices", 0, offsets[0] - 1, None)]
    assert rejects[0].reason.startswith("no key")
    assert table_state(spark, table)[gone.decode()]["name"] == "BACK"
    again = run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)
    assert again.notes == ["nothing new"] and again.keys_changed == 0
    assert read_state(spark, spark_name(table)).bookmark == third.until
    for name in (table, f"{table}_rejects", source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def spark_name(table: str) -> str:
    return ".".join(f"`{p}`" for p in table.split("."))


def debezium_replay(changes) -> dict[int, dict]:
    """Debezium's changes applied in Kafka order: c/u set the row, d and tombstones delete it, a
    snapshot read (r) inserts a key that is absent at its place in the log; no key or an unknown
    op: set aside."""
    state: dict[int, dict] = {}
    for _p, _o, key, envelope in sorted(changes, key=lambda c: (c[0], c[1])):
        if key is None or (envelope is not None and envelope.get("op") not in ("c", "u", "d", "r")):
            continue
        if envelope is None or envelope["op"] == "d":
            state.pop(key["id"], None)
        elif envelope["op"] in ("c", "u"):
            state[key["id"]] = {k: v for k, v in envelope["after"].items() if k != "id"}
        else:
            state.setdefault(key["id"], {k: v for k, v in envelope["after"].items() if k != "id"})
    return state


def run_edge(bootstrap: str, topic: str, lake, expected_rows: int) -> None:
    """The edge service's shape: the topic -> DataLakeSink with the Kafka metadata, until the lake
    holds ``expected_rows`` committed rows."""
    import threading
    import time

    import pyarrow.dataset as ds

    from stream_edge import Application

    app = Application(broker_address=bootstrap, commit_interval=0.3, consumer_group=f"edge-{topic}",
                      auto_offset_reset="earliest")
    sink = DataLakeSink("devices", storage_url=lake.as_uri(), hive_columns=["year", "month", "day", "hour"],
                        include_kafka_metadata=True)
    app.dataframe(topic=app.topic(topic)).sink(sink)

    def rows() -> int:
        root = lake / "devices"
        files = [str(p) for p in root.rglob("*.parquet")
                 if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)]
        return ds.dataset(files, format="parquet").count_rows() if files else 0

    def watch() -> None:
        deadline = time.monotonic() + 60
        while rows() < expected_rows and time.monotonic() < deadline:
            time.sleep(0.3)
        app.stop()

    threading.Thread(target=watch, daemon=True).start()
    app.run()
    assert rows() == expected_rows


def test_debezium_changes_through_the_edge_register_and_upsert(spark, kafka_bootstrap, make_topic, tmp_path, names):
    """Debezium envelopes (c/u/d/r) and tombstones on a real topic, landed by the edge, registered,
    merged in two runs: the table is the replay; an unknown op and a change without a key are
    set aside with their coordinates."""
    import json

    from confluent_kafka import Producer

    source, table = names
    topic = make_topic(partitions=2, prefix="dbz")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
    changes: list = []
    offsets = [0, 0]

    def send(key_id: int | None, op: str | None, after: dict | None = None) -> None:
        partition = (key_id or 0) % 2
        key = None if key_id is None else {"id": key_id}
        envelope = None if op is None else {"op": op, "before": None, "after": after, "ts_ms": TS,
                                            "source": {"connector": "postgresql", "table": "devices"}}
        producer.produce(topic, partition=partition, key=None if key is None else json.dumps(key).encode(),
                         value=None if envelope is None else json.dumps(envelope).encode())
        changes.append((partition, offsets[partition], key, envelope))
        offsets[partition] += 1

    def row(i: int, name: str, level: int) -> dict:
        return {"id": i, "name": name, "level": level}

    send(1, "r", row(1, "one", 1)); send(1, "u", row(1, "one", 2))          # noqa: E702 - a snapshot, then live
    send(2, "c", row(2, "two", 1)); send(2, "r", row(2, "two-old", 0))      # noqa: E702 - a late read loses
    send(3, "r", row(3, "three", 1)); send(3, "d"); send(3, "r", row(3, "three", 5))  # noqa: E702
    send(4, "c", row(4, "four", 1)); send(4, "d"); send(4, None)            # noqa: E702 - delete + tombstone
    send(5, "r", row(5, "five", 1))
    producer.flush(10)
    lake = tmp_path / "lake"
    run_edge(kafka_bootstrap, topic, lake, len(changes))
    run_register(spark, RegisterOptions(source=(lake / "devices").as_uri(), table=source))
    first = run_upsert(spark, UpsertOptions(source=source, table=table, cdc="debezium"), **QUIET)
    assert table_state(spark, table, "id") == debezium_replay(changes), first.summary_line()
    assert first.rejected == 0

    send(2, "r", row(2, "two-again", 9))      # present: a read never replaces a row
    send(4, "r", row(4, "four", 3))           # deleted before: the read brings it back
    send(1, "d"); send(1, None)               # noqa: E702
    send(6, "c", row(6, "six", 1)); send(6, "x", row(6, "six", 2))  # noqa: E702 - an unknown op
    send(None, "c", row(7, "keyless", 1))
    send(3, "u", row(3, "three", 6))
    producer.flush(10)
    run_edge(kafka_bootstrap, topic, lake, len(changes))
    run_register(spark, RegisterOptions(source=(lake / "devices").as_uri(), table=source))
    second = run_upsert(spark, UpsertOptions(source=source, table=table, cdc="debezium"), **QUIET)
    assert same(table_state(spark, table, "id"), debezium_replay(changes)), second.summary_line()
    assert second.rejected == 2
    assert second.plan == "merge"  # snapshot reads insert only absent keys: one MERGE
    rejects = {(r._kafka_partition, r._kafka_offset): r.reason for r in spark.table(f"{table}_rejects").collect()}
    unknown = next((p, o) for p, o, _k, e in changes if e is not None and e["op"] == "x")
    keyless = next((p, o) for p, o, k, _e in changes if k is None)
    assert rejects.keys() == {unknown, keyless}
    assert rejects[unknown].startswith("unreadable Debezium envelope: op x") and rejects[keyless].startswith("no key")
    for name in (table, f"{table}_rejects", source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


CHANGELOG_SCHEMA = ("name STRING, level INT, _kafka_topic STRING, _kafka_partition INT, _kafka_offset BIGINT, "
                    "_kafka_timestamp BIGINT, _kafka_key BINARY, _kafka_tombstone BOOLEAN")


def changelog_rows(changes) -> list[tuple]:
    """(partition, offset, key, value) changes as rows of the changelog the edge lands."""
    return [(None if v is None else v["name"], None if v is None else v["level"], "devices", p, o, TS + o, k,
             v is None) for p, o, k, v in changes]


def random_changes(rng: random.Random, count: int, start: int, keys: int = 20) -> list:
    return [(0, start + i, f"k{rng.randrange(keys)}".encode(),
             None if rng.random() < 0.25 else {"name": f"n{i}", "level": rng.randrange(1000)}) for i in range(count)]


def test_two_runs_at_once_never_apply_a_change_twice(spark, names, monkeypatch):
    """Run A merges on its branch and, right before publishing, run B runs whole and publishes the
    same changes; A's fast-forward fails, nothing of A reaches main, A plans again from B's
    bookmark and finds nothing new. With no retry left A refuses clearly, main untouched."""
    source, table = names
    rng = random.Random(3)
    changes = random_changes(rng, 80, 0)
    spark.createDataFrame(changelog_rows(changes), CHANGELOG_SCHEMA).writeTo(source).using("iceberg").create()
    run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)
    interleaved: list = []
    started: list[bool] = []

    def other_run_first(point: str) -> None:  # B runs whole while A waits at its commit
        if point == "upsert.before-commit" and not started:
            started.append(True)
            interleaved.append(run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET))

    monkeypatch.setattr(upsert_commit, "pause_point", other_run_first)
    more = random_changes(rng, 60, 80)
    changes += more
    spark.createDataFrame(changelog_rows(more), CHANGELOG_SCHEMA).writeTo(source).append()
    said: list[str] = []
    report = run_upsert(spark, UpsertOptions(source=source, table=table), progress=said.append)
    assert interleaved and interleaved[0].keys_changed > 0
    assert [line for line in said if "another commit reached" in line and "planning again" in line]
    assert report.retried and report.notes == ["nothing new"]
    assert table_state(spark, table) == replay(changes)

    interleaved.clear()
    started.clear()
    monkeypatch.setattr(upsert_job, "CONCURRENT_RETRIES", 0)
    more = random_changes(rng, 40, 140)
    changes += more
    spark.createDataFrame(changelog_rows(more), CHANGELOG_SCHEMA).writeTo(source).append()
    with pytest.raises(ConcurrentRunError, match="another commit reached .* nothing of this run was published"):
        run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)
    assert table_state(spark, table) == replay(changes)  # B's merge, once
    assert [r.name for r in spark.sql(f"SELECT name FROM {table}.refs").collect()] == ["main"]
    for name in (table, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_killed_mid_commit_then_rerun_over_spark_connect(spark, ensure_services, services_env, names):
    """The job over Spark Connect, its driver SIGKILLed after the merge reached its branch and
    before main moved: main is as it was; the rerun merges exactly what is missing; a copy-on-write
    table gives the same rows."""
    remote = ensure_services("spark-connect")["SPARK_CONNECT_URL"]
    source, table = names
    rng = random.Random(8)
    changes = random_changes(rng, 120, 0)
    spark.createDataFrame(changelog_rows(changes), CHANGELOG_SCHEMA).writeTo(source).using("iceberg").create()
    env = {"SPARK_REMOTE": remote, "LAKEHOUSE_CATALOG": "rest", "ICEBERG_REST_URI": services_env["ICEBERG_REST_URI"],
           "ICEBERG_WAREHOUSE": services_env["ICEBERG_WAREHOUSE"]}
    args = ["upsert", "--source", source, "--table", table]
    code, out, err = run_job(args, env)
    assert code == 0 and "Spark Connect " + remote in err, err[-3000:]
    assert "table created" in out
    more = random_changes(rng, 80, 120)
    changes_before = list(changes)
    changes += more
    spark.createDataFrame(changelog_rows(more), CHANGELOG_SCHEMA).writeTo(source).append()
    run_job(args, env, pause_at="upsert.before-commit")
    assert table_state(spark, table) == replay(changes_before)  # the kill left main as it was
    code, out, err = run_job(args, env)
    assert code == 0, err[-3000:]
    assert "changes read 80" in out
    assert table_state(spark, table) == replay(changes)
    cow = f"{table}_cow"
    code, out, err = run_job(["upsert", "--source", source, "--table", cow, "--merge-mode", "copy-on-write",
                              "--format-version", "2", "--partition-by", "bucket(4, key)"], env)
    assert code == 0 and "(copy-on-write)" in out, err[-3000:]
    assert table_state(spark, cow) == replay(changes)
    assert spark.table(f"{cow}.partitions").count() > 1  # bucketed by key
    for name in (table, cow, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.parametrize("format_version", [3, 2])
def test_maintain_compacts_the_delete_files_and_the_next_run_goes_on(spark, names, format_version):
    """Merge-on-read rounds leave deletion vectors (format 3) or position delete files (format 2);
    ``maintain --action compact-deletes`` rewrites them away with the same rows, and the next
    upsert goes on from its bookmark (the rewrite carries none)."""
    from lakehouse.maintenance import MaintainOptions, run_maintain

    source, table = names
    rng = random.Random(format_version)
    changes = random_changes(rng, 100, 0, keys=40)
    spark.createDataFrame(changelog_rows(changes), CHANGELOG_SCHEMA).writeTo(source).using("iceberg").create()
    options = UpsertOptions(source=source, table=table, format_version=format_version)
    run_upsert(spark, options, **QUIET)
    for start in (100, 160, 220):
        more = random_changes(rng, 60, start, keys=40)
        changes += more
        spark.createDataFrame(changelog_rows(more), CHANGELOG_SCHEMA).writeTo(source).append()
        last = run_upsert(spark, options, **QUIET)
    assert last.files_after[1] > 0  # delete files
    report = run_maintain(spark, MaintainOptions(table=table, action="compact-deletes"))
    deletes_before, deletes_after = (int(n) for n in str(report.extra["delete files"]).split(" -> "))
    assert deletes_before == last.files_after[1] and deletes_after == 0, report.summary_line()
    assert "sorted by `key`" in str(report.extra["target file size"])  # the key recorded at creation
    assert report.extra["live rows"] == f"{len(replay(changes))} -> {len(replay(changes))}"
    assert table_state(spark, table) == replay(changes)
    more = random_changes(rng, 30, 280, keys=40)
    changes += more
    spark.createDataFrame(changelog_rows(more), CHANGELOG_SCHEMA).writeTo(source).append()
    after = run_upsert(spark, options, **QUIET)
    assert after.since == last.until and after.changes_read == 30
    assert table_state(spark, table) == replay(changes)
    for name in (table, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_the_table_widens_int_to_bigint_as_the_changelog_does(spark, names):
    """The changelog's ``level`` grows from int to bigint between runs: the keyed table's column
    is widened before the merge, and a value past int32 lands whole."""
    source, table = names
    changes = random_changes(random.Random(4), 30, 0, keys=10)
    spark.createDataFrame(changelog_rows(changes), CHANGELOG_SCHEMA).writeTo(source).using("iceberg").create()
    run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)
    assert dict(spark.table(table).dtypes)["level"] == "int"
    spark.sql(f"ALTER TABLE {source} ALTER COLUMN level TYPE BIGINT")
    big = [(0, 30, b"k1", {"name": "big", "level": 2 ** 40}), (0, 31, b"new", {"name": "new", "level": -(2 ** 35)})]
    changes += big
    spark.createDataFrame(changelog_rows(big), CHANGELOG_SCHEMA.replace("level INT", "level BIGINT")) \
        .writeTo(source).append()
    run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)
    assert dict(spark.table(table).dtypes)["level"] == "bigint"
    assert table_state(spark, table) == replay(changes)
    for name in (table, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_debezium_envelopes_wrapped_by_a_json_converter_with_schemas(spark, names):
    """``{"schema": ..., "payload": {...}}`` values and keys (Kafka Connect's JSON converter with
    schemas): the envelope and the key fields are read inside ``payload``."""
    import json

    source, table = names
    envelope = "STRUCT<op: STRING, before: STRUCT<id: BIGINT, name: STRING>, after: STRUCT<id: BIGINT, name: STRING>>"
    schema = f"schema STRING, payload {envelope}, " + CHANGELOG_SCHEMA.split(", ", 2)[2]

    def change(offset: int, key_id: int, op: str | None, name: str | None = None) -> tuple:
        key = json.dumps({"schema": {"type": "struct"}, "payload": {"id": key_id}}).encode()
        after = None if name is None else (key_id, name)
        payload = None if op is None else (op, None, after)
        return ("{}", payload, "pg.devices", 0, offset, TS, key, op is None)

    rows = [change(0, 1, "r", "a"), change(1, 2, "c", "b"), change(2, 1, "u", "a2"), change(3, 2, "d"),
            change(4, 2, None), change(5, 3, "c", "c"), change(6, 3, "r", "stale")]
    spark.createDataFrame(rows, schema).writeTo(source).using("iceberg").create()
    report = run_upsert(spark, UpsertOptions(source=source, table=table, cdc="debezium"), **QUIET)
    assert table_state(spark, table, "id") == {1: {"name": "a2"}, 3: {"name": "c"}}, report.summary_line()
    for name in (table, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_debezium_after_gains_a_column_across_runs(spark, tmp_path, names):
    """The database table gains a column: Debezium's ``after`` gains a field between runs.
    ``register`` adds it inside the changelog's struct (no file set aside), and ``upsert`` adds
    it to the keyed table; the table is the replay after each run."""
    source, table = names
    lake = tmp_path / "lake"
    sink = DataLakeSink("devices", storage_url=lake.as_uri(), hive_columns=["year", "month", "day", "hour"],
                        include_kafka_metadata=True)
    sink.setup()
    changes: list = []

    def change(offset: int, key_id: int, op: str | None, **after) -> tuple:
        envelope = None if op is None else {"op": op, "after": {"id": key_id, **after} if after else None,
                                            "source": {"table": "devices"}}
        return 0, offset, {"id": key_id}, envelope

    def run_round(batch: list) -> object:
        import json

        changes.extend(batch)
        land(sink, [(p, o, json.dumps(k).encode(), e) for p, o, k, e in batch], partition_count=1)
        report = run_register(spark, RegisterOptions(source=(lake / "devices").as_uri(), table=source))
        assert report.problem is None, report.summary_line()
        upserted = run_upsert(spark, UpsertOptions(source=source, table=table, cdc="debezium"), **QUIET)
        assert same(table_state(spark, table, "id"), debezium_replay(changes)), upserted.summary_line()
        return upserted

    run_round([change(0, 1, "c", name="one", level=1), change(1, 2, "c", name="two", level=2),
               change(2, 1, "u", name="one", level=3)])
    run_round([change(3, 2, "u", name="two", level=4, firmware="2.1"), change(4, 3, "c", name="three", level=5,
                                                                             firmware="1.0"),
               change(5, 1, "d"), change(6, 4, "c", name="four", level=6)])
    after = dict(spark.table(source).selectExpr("after.*").dtypes)
    assert after["firmware"] == "string" and "firmware" in spark.table(table).columns
    assert table_state(spark, table, "id")[3]["firmware"] == "1.0"
    for name in (table, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
