"""The batch side on a real Spark standalone cluster (one master, two 1-core workers on loopback):
register -> windows (native path) -> sql with the lake on the S3 server and the Iceberg REST
catalog gives exactly what the same run gives on local Spark, and what the edge's engines emit;
and a worker killed (SIGKILL, executor included) in the middle of the windows job does not change
a single row."""

from __future__ import annotations

import os
import re
import uuid

import pytest
from cluster_kit import CLUSTER, expected_windows, run_pipeline, same_rows

from infra.local import services
from infra.local.spark_cluster import SparkMaster, SparkWorker1

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture()
def namespaces(services_env):
    """Factory of fresh REST-catalog namespaces, dropped with their tables afterwards."""
    made: list[str] = []

    def make(prefix: str) -> str:
        made.append(f"{prefix}_{uuid.uuid4().hex[:8]}")
        return made[-1]

    yield make
    drop_namespaces(services_env, made)


@pytest.fixture(scope="module")
def local_reference(services_env, s3_edge_lake):
    """The same pipeline on ``local[2]`` over the module's edge lake: the reference both cluster
    runs are compared with (run once; each test's cluster run is its own)."""
    namespace = f"on_local_{uuid.uuid4().hex[:8]}"
    yield run_pipeline(services_env, "local[2]", s3_edge_lake[0], namespace)
    drop_namespaces(services_env, [namespace])


def drop_namespaces(services_env: dict[str, str], made: list[str]) -> None:
    """Drop the namespaces and their tables from the REST catalog (a failure is printed, not raised)."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("rest", type="rest", uri=services_env["ICEBERG_REST_URI"])
    for namespace in made:
        try:
            for identifier in catalog.list_tables(namespace):
                catalog.drop_table(identifier)
            catalog.drop_namespace(namespace)
        except Exception as exc:  # noqa: BLE001 - clean-up must not hide the test's own result
            print(f"clean-up of {namespace} failed: {exc}")


def without_windows(result: dict) -> dict:
    """What must be equal between two runs besides the window rows (compared with a float
    tolerance): the paths, the counts, the SQL result and the register figures."""
    return {"paths": {n: (w["path"], w["windows"]) for n, w in result["windows"].items()}, "sql": result["sql"],
            "raw_rows": result["raw_rows"], "register": re.findall(r"files \d+ -> \d+|rows \d+ -> \d+", result["register"])}


def test_register_windows_sql_on_the_cluster_equal_local_spark(services_env, spark_cluster, s3_edge_lake,
                                                                namespaces, local_reference):
    source, rows = s3_edge_lake
    on_cluster = run_pipeline(services_env, spark_cluster, source, namespaces("on_cluster"))
    on_local = local_reference
    assert on_cluster["master"] == spark_cluster and on_local["master"] == "local[2]"
    assert on_cluster["raw_rows"] == len(rows)
    for name, expected in expected_windows(rows).items():
        assert on_cluster["windows"][name]["path"] == "full, native"
        assert len(expected) > 50
        assert same_rows(on_cluster["windows"][name]["rows"], expected)
        assert same_rows(on_cluster["windows"][name]["rows"], on_local["windows"][name]["rows"])
    assert without_windows(on_cluster) == without_windows(on_local)
    assert " sensor-0 " in on_cluster["sql"] and "avg_mean" in on_cluster["sql"]


def test_a_worker_killed_mid_job_changes_nothing(services_env, spark_cluster, s3_edge_lake, namespaces,
                                                 local_reference):
    source, rows = s3_edge_lake
    worker = SparkWorker1()
    pid = worker.pid()
    assert pid is not None and worker.registered() is not None
    try:
        survived = run_pipeline(services_env, spark_cluster, source, namespaces("killed"), kill_pid=pid)
        assert survived["killed"]["stages"], "the worker was not killed while a windows stage ran"
        assert not worker.running()
        lost = [w for w in SparkMaster().state().get("workers", []) if w.get("port") == worker._saved_port("rpc")]
        assert all(w["state"] != "ALIVE" for w in lost)
        reference = local_reference
        assert without_windows(survived) == without_windows(reference)
        for name, expected in expected_windows(rows).items():
            assert same_rows(survived["windows"][name]["rows"], expected)
            assert same_rows(survived["windows"][name]["rows"], reference["windows"][name]["rows"])
    finally:
        services.up(list(CLUSTER))  # the next test gets the whole cluster back


def test_the_cluster_runs_with_separate_folders_and_sizes(spark_cluster):
    state = SparkMaster().state()
    workers = [w for w in state["workers"] if w["state"] == "ALIVE"]
    assert spark_cluster.startswith("spark://127.0.0.1:")
    assert len(workers) >= 2 and all(w["cores"] == 1 and w["memory"] == 1024 for w in workers)
    homes = {services._factory(name)().home for name in CLUSTER}
    assert len(homes) == 3 and all(str(h).startswith(str(services.local_dir())) for h in homes)
    assert os.path.isdir(services._factory("spark-worker-2")().home / "work")
