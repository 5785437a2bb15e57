"""The parts are real: a Kafka broker, an Iceberg REST catalog, an S3 server, Spark with Iceberg
and Delta. Each test round-trips data through one of them."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import DataFramesNotEqualError, assert_df_equality


@pytest.mark.integration
def test_kafka_produce_then_consume_round_trip(kafka_bootstrap: str, make_topic) -> None:
    from confluent_kafka import Consumer, Producer

    topic = make_topic(partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    sent = {f"k{i}".encode(): f'{{"n": {i}}}'.encode() for i in range(50)}
    for key, value in sent.items():
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    received: dict[bytes, bytes] = {}
    partitions: set[int] = set()
    try:
        for _ in range(60):
            for msg in consumer.consume(100, timeout=1.0):
                assert msg.error() is None, msg.error()
                received[msg.key()] = msg.value()
                partitions.add(msg.partition())
            if len(received) == len(sent):
                break
    finally:
        consumer.close()
    assert received == sent
    assert partitions == {0, 1}


@pytest.mark.integration
def test_iceberg_rest_catalog_table_written_by_pyiceberg_is_read_by_spark(services_env, spark) -> None:
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("rest", type="rest", uri=services_env["ICEBERG_REST_URI"])
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    data = pa.table({"sensor": ["a", "b", "c"], "reading": [1.5, 2.5, 3.5]})
    table = catalog.create_table(f"{namespace}.readings", schema=data.schema)
    table.append(data)

    assert namespace in {ns[0] for ns in catalog.list_namespaces()}
    df = spark.sql(f"SELECT sensor, reading FROM rest.{namespace}.readings ORDER BY sensor")
    expected = spark.createDataFrame([("a", 1.5), ("b", 2.5), ("c", 3.5)], "sensor string, reading double")
    assert_df_equality(df, expected, ignore_nullable=True)


@pytest.mark.integration
def test_s3_server_stores_and_returns_a_parquet_object(services_env) -> None:
    from pyarrow import fs

    s3 = fs.S3FileSystem(endpoint_override=services_env["S3_ENDPOINT"], scheme="http",
                         access_key=services_env["AWS_ACCESS_KEY_ID"],
                         secret_key=services_env["AWS_SECRET_ACCESS_KEY"], region="us-east-1", allow_bucket_creation=True)
    bucket = f"bucket-{uuid.uuid4().hex[:8]}"
    s3.create_dir(bucket)
    data = pa.table({"x": list(range(100)), "y": [str(i) for i in range(100)]})
    pq.write_table(data, f"{bucket}/dir/part-0.parquet", filesystem=s3)

    info = s3.get_file_info(f"{bucket}/dir/part-0.parquet")
    assert info.type == fs.FileType.File and info.size > 0
    assert pq.read_table(f"{bucket}/dir/part-0.parquet", filesystem=s3).equals(data)


@pytest.mark.integration
def test_spark_reads_s3a_objects_from_the_s3_server(services_env, spark) -> None:
    from pyarrow import fs

    s3 = fs.S3FileSystem(endpoint_override=services_env["S3_ENDPOINT"], scheme="http",
                         access_key="testing", secret_key="testing", region="us-east-1", allow_bucket_creation=True)
    bucket = f"spark-{uuid.uuid4().hex[:8]}"
    s3.create_dir(bucket)
    pq.write_table(pa.table({"v": [1, 2, 3]}), f"{bucket}/t/part-0.parquet", filesystem=s3)
    rows = spark.read.parquet(f"s3a://{bucket}/t/").agg({"v": "sum"}).collect()
    assert rows[0][0] == 6


@pytest.mark.integration
def test_delta_table_write_then_read(spark, tmp_path) -> None:
    path = str(tmp_path / "delta_readings")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, name string")
    df.write.format("delta").save(path)
    spark.createDataFrame([(3, "c")], "id int, name string").write.format("delta").mode("append").save(path)

    back = spark.read.format("delta").load(path).orderBy("id")
    expected = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, name string")
    assert_df_equality(back, expected, ignore_nullable=True)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert len(history) == 2


@pytest.mark.integration
def test_embedded_iceberg_catalog_needs_no_server(spark) -> None:
    ns = f"emb_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE embedded.{ns}")
    spark.sql(f"CREATE TABLE embedded.{ns}.t (id bigint, day string) USING iceberg PARTITIONED BY (day)")
    spark.sql(f"INSERT INTO embedded.{ns}.t VALUES (1, '2026-01-01'), (2, '2026-01-02')")
    files = spark.sql(f"SELECT count(*) FROM embedded.{ns}.t.files").collect()[0][0]
    assert files == 2
    assert spark.sql(f"SELECT sum(id) FROM embedded.{ns}.t").collect()[0][0] == 3


@pytest.mark.integration
def test_chispa_detects_a_difference(spark) -> None:
    left = spark.createDataFrame([(1, "a")], "id int, name string")
    right = spark.createDataFrame([(1, "b")], "id int, name string")
    with pytest.raises(DataFramesNotEqualError, match="name=b"):
        assert_df_equality(left, right)
