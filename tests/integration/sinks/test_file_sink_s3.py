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


def test_s3_file_sink_connects_in_setup_and_keeps_its_directory_and_format(s3_env, s3_bucket, list_keys):
    from stream_edge.sinks.community.file.s3 import S3FileSink

    sink = S3FileSink(bucket=s3_bucket, aws_access_key_id=s3_env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=s3_env["AWS_SECRET_ACCESS_KEY"], region_name=s3_env["AWS_REGION"],
                      endpoint_url=s3_env["S3_ENDPOINT"], directory="lazy/raw", format="parquet")
    sink.setup()  # the S3 client is created here, with the directory and format given before
    sink.add({"n": 1}, b"key", 1000, [], "events", 0, 7)
    sink.flush("events", 0)
    assert list_keys(s3_bucket) == ["lazy/raw/events/0/0000000000000000007.parquet"]
