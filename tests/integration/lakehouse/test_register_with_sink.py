"""One registration path: the data-lake sink's register_in_catalog and `lakehouse register` share
the ledger next to the edge files, so no file is registered twice, whoever comes first, and the
key survives expire_snapshots (real REST catalog, real Spark)."""

from __future__ import annotations

import uuid

import pytest

from lakehouse.register import RegisterOptions, run_register
from stream_edge.lake.registration_ledger import RegistrationLedger, edge_writer
from stream_edge.sinks.core.datalake import DataLakeSink

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TS = 1_745_311_234_567


def make_sink(lake_dir, rest_uri, namespace):
    sink = DataLakeSink("readings", storage_url=lake_dir.as_uri(), hive_columns=["sensor"], timestamp_column="ts_ms",
                        catalog_url=rest_uri, catalog_namespace=namespace, register_in_catalog=True)
    sink.setup()
    return sink


def feed(sink, start, stop, partition=0):
    for i in range(start, stop):
        sink.add({"sensor": "a" if i % 2 else "b", "ts_ms": TS + i, "i": i}, b"k", TS, [], "sensors", partition, i)
    sink.flush("sensors", partition)


def ids(spark, table):
    spark.catalog.clearCache()
    spark.sql(f"REFRESH TABLE {table}")
    return sorted(r["i"] for r in spark.table(table).select("i").collect())


def data_files(spark, table):
    return sorted(r["file_path"] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect())


@pytest.fixture()
def names(services_env):
    namespace = f"one_{uuid.uuid4().hex[:8]}"
    return services_env["ICEBERG_REST_URI"], namespace, f"rest.{namespace}.readings"


def test_sink_first_then_the_job_adds_nothing(spark, tmp_path, names):
    rest, namespace, table = names
    sink = make_sink(tmp_path / "lake", rest, namespace)
    feed(sink, 0, 6)
    before = data_files(spark, table)
    report = run_register(spark, RegisterOptions(source=(tmp_path / "lake" / "readings").as_uri(), table=table))
    assert report.extra["files added"] == 0
    assert data_files(spark, table) == before and ids(spark, table) == list(range(6))
    feed(sink, 6, 8)  # the sink keeps registering after the job ran
    assert ids(spark, table) == list(range(8))


def test_job_first_then_the_sink_registers_only_new_files(spark, tmp_path, names):
    rest, namespace, table = names
    writer = DataLakeSink("readings", storage_url=(tmp_path / "lake").as_uri(), hive_columns=["sensor"],
                          timestamp_column="ts_ms")  # the edge without registration
    writer.setup()
    feed(writer, 0, 4)
    run_register(spark, RegisterOptions(source=(tmp_path / "lake" / "readings").as_uri(), table=table))
    assert ids(spark, table) == [0, 1, 2, 3]
    sink = make_sink(tmp_path / "lake", rest, namespace)
    feed(sink, 2, 7)  # a replay of 2..3 (already in the lake and the table) and 4..6
    assert ids(spark, table) == list(range(7))


def test_expired_snapshots_do_not_make_a_replay_register_twice(spark, tmp_path, names):
    rest, namespace, table = names
    sink = make_sink(tmp_path / "lake", rest, namespace)
    feed(sink, 0, 3)
    feed(sink, 3, 5)
    spark.sql(f"CALL rest.system.expire_snapshots(table => '{table}', retain_last => 1, "
              f"older_than => TIMESTAMP '2999-01-01 00:00:00')")
    assert spark.sql(f"SELECT count(*) AS n FROM {table}.snapshots").collect()[0]["n"] == 1
    restarted = make_sink(tmp_path / "lake", rest, namespace)
    feed(restarted, 0, 5)  # Kafka replays everything: the lake skips it, the registrar too
    restarted._register(restarted._writer.latest_commits_of_table()[0])  # and a forced re-registration
    assert ids(spark, table) == list(range(5))


def test_a_crash_between_the_intent_and_the_commit_is_finished_on_restart(spark, tmp_path, names, monkeypatch):
    rest, namespace, table = names
    sink = make_sink(tmp_path / "lake", rest, namespace)
    feed(sink, 0, 2)

    class Crash(Exception):
        pass

    def crash(*args, **kwargs):
        raise Crash("killed after the ledger intent")

    monkeypatch.setattr(sink._registrar, "_commit", crash)
    with pytest.raises(Crash):
        feed(sink, 2, 4)
    monkeypatch.undo()
    from pyiceberg.catalog import load_catalog

    iceberg = load_catalog("check", type="rest", uri=rest).load_table((namespace, "readings"))
    ledger = RegistrationLedger(sink._writer.fs, sink._writer.root, f"iceberg-{iceberg.metadata.table_uuid}",
                                local=True)
    pending = [b for b in ledger.batches() if not b.done]
    assert [b.writer for b in pending] == [edge_writer("sensors", 0)]
    assert ids(spark, table) == [0, 1]
    restarted = make_sink(tmp_path / "lake", rest, namespace)
    feed(restarted, 2, 6)  # the replay finds 2..3 in the lake; the pending batch is committed first
    assert ids(spark, table) == list(range(6))
    assert all(b.done for b in ledger.batches())


def test_files_compacted_expired_and_forgotten_are_never_retried(spark, tmp_path, names):
    """Compaction rewrites and deletes the edge files, the ledger's checkpoint forgets them; a
    restarted sink re-registering its newest commit (and a pending batch naming a deleted file)
    neither fails nor retries them on every flush."""
    from datetime import timedelta

    import pyarrow.fs as pafs

    from lakehouse.compaction import CompactOptions, run_compact
    from lakehouse.lake_files import LakeLocation, list_committed_files

    rest, namespace, table = names
    sink = make_sink(tmp_path / "lake", rest, namespace)
    for start in range(0, 8, 2):
        feed(sink, start, start + 2)
    run_compact(spark, CompactOptions(table=table, retention=timedelta(0), allow_unsafe_retention=True))
    root = tmp_path / "lake" / "readings"
    existing = {f.relative_path for f in list_committed_files(LakeLocation.parse(root.as_uri()))}
    newest = [p[len(str(root)) + 1:] for p in sink._writer.committed_file_paths(
        sink._writer.latest_commits_of_table()[0])]
    assert newest and not set(newest) & existing  # compacted and deleted
    from pyiceberg.catalog import load_catalog

    uuid_ = load_catalog("check", type="rest", uri=rest).load_table((namespace, "readings")).metadata.table_uuid
    ledger = RegistrationLedger(pafs.LocalFileSystem(), str(root), f"iceberg-{uuid_}", local=True)
    ledger.checkpoint(existing, min_batches=1)
    assert not ledger.registered() & set(newest)
    ledger.write_intent(ledger.next_number(), newest[:1], table, writer=edge_writer("sensors", 0))  # crashed
    files_before = data_files(spark, table)

    restarted = make_sink(tmp_path / "lake", rest, namespace)
    feed(restarted, 0, 8)  # a replay: the lake skips it; the newest commit is re-registered
    feed(restarted, 8, 9)
    assert ids(spark, table) == list(range(9))
    assert all(b.done for b in ledger.batches())
    assert set(files_before) < set(data_files(spark, table))  # only the new commit's file was added
