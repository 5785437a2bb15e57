"""Concurrent registration on S3 (the real local S3 server, the real REST catalog, Spark): the
data-lake sink's register_in_catalog on two edge partitions and `lakehouse register` run at the
same time on one table, and every row is in it exactly once.

On S3 a batch number is claimed with a conditional PUT (If-None-Match: *); before, a
check-then-PUT let two writers both "claim" a batch and commit the same files twice."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from lakehouse.register import RegisterOptions, run_register
from stream_edge.lake.registration_ledger import LedgerError, RegistrationLedger
from stream_edge.sinks.core.datalake import DataLakeSink

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TS = 1_745_311_234_567
COMMITS = 6  # per edge partition
ROWS = 5     # per commit


@pytest.fixture()
def s3_root(s3_bucket):
    """A fresh bucket; the S3 settings in the environment, as a deployment gives them."""
    return s3_bucket


def s3_fs(services_env):
    import pyarrow.fs as pafs

    scheme, _, host = services_env["S3_ENDPOINT"].partition("://")
    return pafs.S3FileSystem(endpoint_override=host, scheme=scheme, region=services_env["AWS_REGION"],
                             access_key=services_env["AWS_ACCESS_KEY_ID"],
                             secret_key=services_env["AWS_SECRET_ACCESS_KEY"])


def test_a_batch_number_is_claimed_by_exactly_one_writer(services_env, s3_root):
    ledgers = [RegistrationLedger(s3_fs(services_env), f"{s3_root}/t", "iceberg-race", local=False) for _ in range(6)]
    start = threading.Barrier(len(ledgers))

    def claim(i: int) -> bool:
        start.wait()
        try:
            ledgers[i].write_intent(1, [f"p=1/f{i}.parquet"], "rest.db.t", writer=f"edge:t:{i}")
            return True
        except LedgerError:
            return False

    with ThreadPoolExecutor(len(ledgers)) as pool:
        won = list(pool.map(claim, range(len(ledgers))))
    assert won.count(True) == 1
    [batch] = ledgers[0].batches()
    assert batch.files == (f"p=1/f{won.index(True)}.parquet",) and batch.writer == f"edge:t:{won.index(True)}"


def test_two_edge_partitions_and_the_job_register_concurrently_without_duplicates(spark, services_env, s3_root):
    namespace = f"race_{uuid.uuid4().hex[:8]}"
    table = f"rest.{namespace}.readings"
    source = f"s3://{s3_root}/lake/readings"

    def sink() -> DataLakeSink:
        s = DataLakeSink("readings", storage_url=f"s3://{s3_root}", s3_prefix="lake", hive_columns=["sensor"],
                         timestamp_column="ts_ms", s3_endpoint_url=services_env["S3_ENDPOINT"],
                         catalog_url=services_env["ICEBERG_REST_URI"], catalog_namespace=namespace,
                         register_in_catalog=True)
        s.setup()
        return s

    # The table exists before the race (its creation is a separate, already-tested step).
    first = sink()
    first.add({"sensor": "a", "ts_ms": TS, "i": -1}, b"k", TS, [], "sensors", 2, 0)
    first.flush("sensors", 2)

    def edge_partition(partition: int) -> None:
        s = sink()
        for commit in range(COMMITS):
            for row in range(ROWS):
                i = partition * 1000 + commit * ROWS + row
                s.add({"sensor": "ab"[row % 2], "ts_ms": TS + i, "i": i}, b"k", TS, [], "sensors", partition,
                      commit * ROWS + row)
            s.flush("sensors", partition)

    with ThreadPoolExecutor(2) as pool:
        edges = [pool.submit(edge_partition, p) for p in (0, 1)]
        runs = 0
        while not all(f.done() for f in edges) or runs < 2:  # the job keeps registering meanwhile
            run_register(spark, RegisterOptions(source=source, table=table))
            runs += 1
        for f in edges:
            f.result()
    run_register(spark, RegisterOptions(source=source, table=table))

    spark.catalog.clearCache()
    spark.sql(f"REFRESH TABLE {table}")
    ids = sorted(r["i"] for r in spark.table(table).select("i").collect())
    expected = sorted([-1] + [p * 1000 + n for p in (0, 1) for n in range(COMMITS * ROWS)])
    assert ids == expected  # every row, none twice
    paths = [r["file_path"] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect()]
    assert len(paths) == len(set(paths)) == 1 + 2 * COMMITS * 2  # one file per sensor per commit
