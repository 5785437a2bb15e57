"""FileSink to the real local S3 server (moto_server), credentials from the AWS environment."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest

from stream_edge.sinks.community.file import FileSink, S3Destination
from stream_edge.sinks.community.file.destinations import S3BucketNotFoundError

pytestmark = pytest.mark.integration


def test_json_and_parquet_objects(s3_bucket, s3_client, list_keys):
    json_sink = FileSink(directory="raw/json", format="json", destination=S3Destination(s3_bucket))
    parquet_sink = FileSink(directory="raw/pq", format="parquet", destination=S3Destination(s3_bucket))
    for sink in (json_sink, parquet_sink):
        for offset in range(3):
            sink.add({"n": offset, "tag": "x" * offset}, b"key", 1000 + offset, [], "events", 1, 20 + offset)
        sink.flush("events", 1)
    assert list_keys(s3_bucket) == [
        "raw/json/events/1/0000000000000000020.jsonl",
        "raw/pq/events/1/0000000000000000020.parquet",
    ]
    body = s3_client.get_object(Bucket=s3_bucket, Key="raw/json/events/1/0000000000000000020.jsonl")["Body"].read()
    assert [json.loads(line)["_value"]["n"] for line in body.splitlines()] == [0, 1, 2]
    data = s3_client.get_object(Bucket=s3_bucket, Key="raw/pq/events/1/0000000000000000020.parquet")["Body"].read()
    table = pq.read_table(io.BytesIO(data))
    assert table.column_names == ["_timestamp", "_key", "n", "tag"]
    assert table.column("n").to_pylist() == [0, 1, 2]


def test_missing_bucket_is_reported(s3_env):
    with pytest.raises(S3BucketNotFoundError):
        S3Destination("no-such-bucket-for-sure")
