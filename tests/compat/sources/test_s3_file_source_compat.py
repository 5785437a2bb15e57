"""S3FileSource on quixstreams 3.28.1 and on stream_edge, reading the same gzip JSON-lines and
Parquet objects from the project's real S3 server (moto) into the real broker: outputs compared
byte for byte (keys, values, timestamps, partitions, file order)."""

import gzip
import io
import json
import subprocess
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.compat.sources.arrow_read_table import READ_TABLE_WITHOUT_THREADS

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json
import tempfile
import uuid

from quixstreams import Application
from quixstreams.sources.community.file.s3 import S3FileSource


def consume(source, count):
    app = Application(broker_address=BROKER, consumer_group="s3files-" + uuid.uuid4().hex[:8],
                      auto_offset_reset="earliest", loglevel=None, state_dir=tempfile.mkdtemp())
    app.dataframe(source=source)
    rows = app.run(count=count, timeout=60, metadata=True)
    rows.sort(key=lambda r: (r["_partition"], r["_offset"]))
    for r in rows:
        meta = [r.pop(k) for k in ("_key", "_timestamp", "_partition", "_offset")]
        r.pop("_topic"), r.pop("_headers")
        print(json.dumps([meta[0].decode(), *meta[1:], r], sort_keys=True))


def main():  # sources start in processes: spawn re-imports this module (Quix's start method)
    suffix = uuid.uuid4().hex[:8]
    common = dict(bucket=BUCKET, region_name=REGION, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                  endpoint_url=ENDPOINT, replay_speed=0)
    consume(S3FileSource("readings", file_format="json", compression="gzip", has_partition_folders=True,
                         name="s3json-" + suffix, **common), 8)
    consume(S3FileSource("pq", file_format="parquet", name="s3pq-" + suffix, **common), 5)


if __name__ == "__main__":
    main()
'''


@pytest.fixture(scope="session")
def quix_with_s3(quix_python: str) -> str:
    """The quixstreams venv's python with ``quixstreams[s3]`` (boto3) installed (once)."""
    if subprocess.run([quix_python, "-c", "import boto3"], capture_output=True).returncode != 0:
        subprocess.run([quix_python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "quixstreams[s3]==3.28.1"], check=True)
    return quix_python


def _gz_lines(records):
    buffer = io.BytesIO()
    with gzip.open(buffer, "wt") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return buffer.getvalue()


def _records(start, count):
    return [{"_key": f"sensor-{i % 3}", "_value": {"i": i}, "_timestamp": 1_700_000_000_000 + i} for i in
            range(start, start + count)]


def test_s3_file_source_matches_quixstreams(quix_with_s3, run_both, kafka_bootstrap, services_env):
    import boto3

    s3_client = boto3.client("s3", endpoint_url=services_env["S3_ENDPOINT"], region_name=services_env["AWS_REGION"],
                             aws_access_key_id=services_env["AWS_ACCESS_KEY_ID"],
                             aws_secret_access_key=services_env["AWS_SECRET_ACCESS_KEY"])
    bucket = f"files-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_object(Bucket=bucket, Key="readings/0/0000000005.jsonl.gz", Body=_gz_lines(_records(5, 2)))
    s3_client.put_object(Bucket=bucket, Key="readings/0/0000000000.jsonl.gz", Body=_gz_lines(_records(0, 3)))
    s3_client.put_object(Bucket=bucket, Key="readings/1/0000000000.jsonl.gz", Body=_gz_lines(_records(50, 3)))
    table = pa.table({"_key": ["a", "b", "c"], "_timestamp": [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002],
                      "x": [1, 2, 3], "label": ["p", None, "r"]})
    for key, part in (("pq/b.parquet", table), ("pq/a/z.parquet", table.slice(1, 2))):
        sink = io.BytesIO()
        pq.write_table(part, sink)
        s3_client.put_object(Bucket=bucket, Key=key, Body=sink.getvalue())
    header = (f"BROKER = {kafka_bootstrap!r}\nBUCKET = {bucket!r}\nREGION = {services_env['AWS_REGION']!r}\n"
              f"KEY_ID = {services_env['AWS_ACCESS_KEY_ID']!r}\nSECRET = {services_env['AWS_SECRET_ACCESS_KEY']!r}\n"
              f"ENDPOINT = {services_env['S3_ENDPOINT']!r}\n")
    out = run_both(header + READ_TABLE_WITHOUT_THREADS + PROGRAM, timeout=240)
    assert out.edge == out.quix
    lines = out.edge.splitlines()
    assert len(lines) == 8 + 5
    assert sorted(json.loads(line)[4]["i"] for line in lines[:8]) == [0, 1, 2, 5, 6, 50, 51, 52]
    assert sorted(json.loads(line)[4]["x"] for line in lines[8:]) == [1, 2, 2, 3, 3]
