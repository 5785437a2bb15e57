"""Fixtures of the sink integration tests: a fresh bucket on the real local S3 server."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture()
def s3_env(services_env, monkeypatch):
    """The standard AWS environment pointed at the local S3 server (what production would set)."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(key, services_env[key])
    monkeypatch.setenv("AWS_ENDPOINT_URL", services_env["S3_ENDPOINT"])
    return services_env


@pytest.fixture()
def s3_bucket(s3_env) -> str:
    import boto3

    name = f"sink-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_env["S3_ENDPOINT"], region_name=s3_env["AWS_REGION"])
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture()
def s3_client(s3_env):
    import boto3

    return boto3.client("s3", endpoint_url=s3_env["S3_ENDPOINT"], region_name=s3_env["AWS_REGION"])


@pytest.fixture()
def list_keys(s3_client):
    """``list_keys(bucket, prefix="")`` -> sorted object keys."""

    def keys(bucket: str, prefix: str = "") -> list[str]:
        found: list[str] = []
        for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found.extend(obj["Key"] for obj in page.get("Contents", []))
        return sorted(found)

    return keys
