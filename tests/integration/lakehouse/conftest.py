"""Fixtures of the lakehouse job tests (helpers live in ``lh_testkit``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from lh_testkit import EdgeLake, TargetTable

@pytest.fixture()
def edge_lake(tmp_path: Path):
    """Factory: ``edge_lake()`` -> a fresh :class:`EdgeLake` (kwargs go to EdgeLake)."""
    count = iter(range(100))

    def make(**kwargs) -> EdgeLake:
        return EdgeLake(tmp_path / f"lake{next(count)}", **kwargs)

    return make


@pytest.fixture()
def make_target(services_env, spark_local_dir, spark):
    """Factory: ``make_target(kind)`` -> a fresh, not yet created :class:`TargetTable`."""

    def make(kind: str) -> TargetTable:
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

    return make
