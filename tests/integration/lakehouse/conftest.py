"""Fixtures of the lakehouse job tests (helpers live in ``lh_testkit``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from lh_testkit import EdgeLake, TargetTable

@pytest.fixture()
def s3_bucket(services_env, monkeypatch):
    """A fresh bucket on the S3 server (its name), with the S3 settings in the environment, as a
    deployment gives them."""
    import boto3

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "S3_ENDPOINT"):
        monkeypatch.setenv(key, services_env[key])
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=services_env["S3_ENDPOINT"],
                 region_name=services_env["AWS_REGION"]).create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture()
def edge_lake(tmp_path: Path):
    """Factory: ``edge_lake()`` -> a fresh :class:`EdgeLake` (kwargs go to EdgeLake)."""
    count = iter(range(100))

    def make(**kwargs) -> EdgeLake:
        return EdgeLake(tmp_path / f"lake{next(count)}", **kwargs)

    return make


def _target(kind: str, services_env: dict, spark_local_dir: Path) -> TargetTable:
    suffix = uuid.uuid4().hex[:8]
    base_env = {"LAKEHOUSE_LOCAL_DIR": str(spark_local_dir)}
    if kind == "rest":
        env = dict(base_env, LAKEHOUSE_CATALOG="rest", ICEBERG_REST_URI=services_env["ICEBERG_REST_URI"],
                   ICEBERG_WAREHOUSE=services_env["ICEBERG_WAREHOUSE"])
        return TargetTable(kind, "iceberg", f"rest.lh_{suffix}.sensor_readings", env)
    if kind == "embedded":
        env = dict(base_env, LAKEHOUSE_CATALOG="embedded", ICEBERG_REST_URI="",
                   ICEBERG_WAREHOUSE=(spark_local_dir / "embedded-warehouse").as_uri())
        return TargetTable(kind, "iceberg", f"embedded.lh_{suffix}.sensor_readings", env)
    if kind == "delta":
        env = dict(base_env, LAKEHOUSE_CATALOG="rest", ICEBERG_REST_URI=services_env["ICEBERG_REST_URI"])
        return TargetTable(kind, "delta", f"lh_{suffix}.sensor_readings", env)
    raise ValueError(kind)


@pytest.fixture()
def make_target(services_env, spark_local_dir, spark):
    """Factory: ``make_target(kind)`` -> a fresh, not yet created :class:`TargetTable`
    (kind: rest | embedded | delta). The tables are dropped from their catalogs afterwards: the
    REST server is shared and outlives the test run."""
    made: list[TargetTable] = []

    def make(kind: str) -> TargetTable:
        made.append(_target(kind, services_env, spark_local_dir))
        return made[-1]

    yield make
    for target in made:
        db, table = target.name.split(".")[-2:]
        try:
            if target.kind == "delta":
                spark.sql(f"DROP TABLE IF EXISTS spark_catalog.`{db}`.`{table}`")
            else:
                catalog = target.name.split(".")[0]
                spark.sql(f"DROP TABLE IF EXISTS {target.sql_name()}")
                spark.sql(f"DROP NAMESPACE IF EXISTS `{catalog}`.`{db}`")
        except Exception as exc:  # noqa: BLE001 - clean-up must not hide the test's own result
            print(f"clean-up of {target.name} failed: {exc}")
