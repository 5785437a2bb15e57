"""Fixtures of the cluster tests: the real standalone cluster (master + two workers, started by
``infra/local/spark_cluster.py`` through ``ensure_services``) and an edge lake on the S3 server."""

from __future__ import annotations

import os
import uuid

import pytest
from cluster_kit import CLUSTER, kafka_like_rows


@pytest.fixture(scope="session")
def spark_cluster(ensure_services) -> str:
    """``spark://127.0.0.1:<port>`` of the running cluster, both workers registered."""
    return ensure_services(*CLUSTER)["SPARK_CLUSTER_MASTER"]


@pytest.fixture(scope="module")
def s3_edge_lake(services_env) -> tuple[str, list[tuple]]:
    """An edge table with Kafka metadata, written by the real DataLakeSink into a fresh bucket."""
    import boto3

    from stream_edge.sinks.core.datalake import DataLakeSink

    bucket = f"cluster-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=services_env["S3_ENDPOINT"], region_name=services_env["AWS_REGION"],
                 aws_access_key_id=services_env["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=services_env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=bucket)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    os.environ.update({k: services_env[k] for k in saved})
    try:
        sink = DataLakeSink("readings", storage_url=f"s3://{bucket}", s3_prefix="lake", hive_columns=["hour"],
                            timestamp_column="ts_ms", include_kafka_metadata=True,
                            s3_endpoint_url=services_env["S3_ENDPOINT"])
        sink.setup()
        rows = kafka_like_rows(4000)
        for batch in range(4):
            for key, ts, partition, offset, temp in rows[batch * 1000:(batch + 1) * 1000]:
                sink.add({"temp": temp, "ts_ms": ts}, key, ts, [], "readings", partition, offset)
            for partition in (0, 1):
                sink.flush("readings", partition)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return f"s3://{bucket}/lake/readings", rows


