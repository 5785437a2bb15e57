"""Inline registration: one Iceberg commit per checkpoint for every partition (real REST catalog)."""

from __future__ import annotations

import uuid

import pytest

from stream_edge.sinks.core.datalake import DataLakeSink
from stream_edge.sinks.core.datalake.catalog import offset_property

pytestmark = pytest.mark.integration

TS = 1_745_311_234_567


def make_sink(tmp_path, rest_uri, namespace, **kw):
    sink = DataLakeSink("readings", storage_url=(tmp_path / "lake").as_uri(), hive_columns=["day"],
                        timestamp_column="ts_ms", catalog_url=rest_uri, catalog_namespace=namespace,
                        register_in_catalog=True, **kw)
    sink.setup()
    return sink


def feed(sink, partition, start, stop):
    for i in range(start, stop):
        sink.add({"ts_ms": TS, "p": partition, "i": i}, b"k", TS, [], "sensors", partition, i)


def load(rest_uri, namespace):
    from pyiceberg.catalog import load_catalog

    return load_catalog("check", type="rest", uri=rest_uri).load_table((namespace, "readings"))


def rows(rest_uri, namespace):
    return sorted((r["p"], r["i"]) for r in load(rest_uri, namespace).scan().to_arrow().to_pylist())


def test_one_catalog_commit_registers_every_partition_of_the_checkpoint(services_env, tmp_path):
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = make_sink(tmp_path, rest, namespace)
    for partition in range(3):
        feed(sink, partition, 0, 4)
    sink.flush("sensors", 0)  # the checkpoint's first flush
    table = load(rest, namespace)
    snapshots = table.metadata.snapshots
    assert rows(rest, namespace) == [(p, i) for p in range(3) for i in range(4)]
    assert len(snapshots) == 1
    assert {p: snapshots[0].summary.get(offset_property("sensors", p)) for p in range(3)} == {0: "3", 1: "3", 2: "3"}
    sink.flush("sensors", 1)
    sink.flush("sensors", 2)  # nothing left for them
    assert len(load(rest, namespace).metadata.snapshots) == 1
    # A restarted edge that gets the same offsets again (plus new ones) registers nothing twice.
    again = make_sink(tmp_path, rest, namespace)
    for partition in range(3):
        feed(again, partition, 2, 6)
    again.flush("sensors", 2)
    assert rows(rest, namespace) == [(p, i) for p in range(3) for i in range(6)]
    assert len(load(rest, namespace).metadata.snapshots) == 2


def test_a_crash_between_lake_commits_and_registration_registers_once(services_env, tmp_path):
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = make_sink(tmp_path, rest, namespace)
    for partition in range(2):
        feed(sink, partition, 0, 3)
    sink.flush("sensors", 0)

    class Crash(Exception):
        pass

    def fail(*args, **kwargs):
        raise Crash()

    sink._registrar.register_many = fail  # lake committed, registration cut off
    for partition in range(2):
        feed(sink, partition, 3, 5)
    with pytest.raises(Crash):
        sink.flush("sensors", 0)
    assert rows(rest, namespace) == [(p, i) for p in range(2) for i in range(3)]
    restarted = make_sink(tmp_path, rest, namespace)
    for partition in range(2):
        feed(restarted, partition, 3, 7)  # replays 3..4 (already in the lake) and brings 5..6
    restarted.flush("sensors", 1)
    restarted.flush("sensors", 0)
    assert rows(rest, namespace) == [(p, i) for p in range(2) for i in range(7)]


def test_a_checkpoint_loads_the_table_from_the_catalog_once(services_env, tmp_path):
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = make_sink(tmp_path, rest, namespace)
    feed(sink, 0, 0, 3)
    sink.flush("sensors", 0)  # creates the table
    catalog = sink._registrar._catalog
    loads = []
    real_load = catalog.load_table

    def counting_load(identifier):
        loads.append(identifier)
        return real_load(identifier)

    catalog.load_table = counting_load  # the real catalog, counted
    for checkpoint in range(1, 4):
        feed(sink, 0, 3 * checkpoint, 3 * checkpoint + 3)
        sink.flush("sensors", 0)
    assert len(loads) == 3  # one per registration: the commit reuses it, no reload after it
    assert rows(rest, namespace) == [(0, i) for i in range(12)]


def test_a_commit_another_writer_made_meanwhile_is_retried_on_a_fresh_load(services_env, tmp_path):
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = make_sink(tmp_path, rest, namespace)
    feed(sink, 0, 0, 3)
    sink.flush("sensors", 0)
    registrar = sink._registrar
    real_registrar = registrar._registrar

    def registrar_after_another_commit(table):
        # Another writer commits between this registration's load and its commit.
        with load(rest, namespace).transaction() as tx:
            tx.set_properties({"other-writer": "was here"})
        return real_registrar(table)

    registrar._registrar = registrar_after_another_commit
    feed(sink, 0, 3, 6)
    sink.flush("sensors", 0)
    table = load(rest, namespace)
    assert table.properties["other-writer"] == "was here"
    assert rows(rest, namespace) == [(0, i) for i in range(6)]
    assert len(table.metadata.snapshots) == 2
