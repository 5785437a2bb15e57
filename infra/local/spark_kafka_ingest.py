"""Spark Structured Streaming, Kafka topic -> Iceberg table of the project's REST catalog: a peer of
the edge in ``bench/lake_ingest.py`` (what a data team already running Spark would deploy).

    python -m infra.local.spark_kafka_ingest --topic readings --table peers.readings_spark \
        --checkpoint /tmp/ckpt [--trigger available-now | --trigger '5 seconds']

The session is the project's own (``lakehouse.session``: ``local[2]``, Iceberg runtime, catalog
``lake`` on ``$ICEBERG_REST_URI``) plus the ``spark-kafka`` jar set (``spark-sql-kafka-0-10``),
fetched on first use. The job reads JSON values with ``from_json`` and the table's schema
(``id, sensor, ts_ms, temp, hum``), derives ``year/month/day/hour`` (UTC) from ``ts_ms``, and
appends to the table (created if missing with the shape ``bench/lake_ingest.py`` gives every
contender: those four columns identity-partitioned, one partition per hour of event time, format
version 2, zstd; the bench creates it beforehand) with Iceberg's fanout writer (rows are not
sorted by partition first, as Iceberg's docs advise for streaming writes) and a checkpoint
location, so a restarted job (even after ``kill -9``) resumes where the last committed batch
ended. ``available-now`` processes what the topic holds and stops; a processing-time trigger
(``5 seconds``) runs until killed. One JSON line on stdout at the end: ``started_ms``, ``done_ms``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from infra.local.kafka_connect_service import ensure_jar_set
from infra.local.service_base import jar_cache

__all__ = ("JAR_SET", "SCHEMA_DDL", "main")

JAR_SET = "spark-kafka"
SCHEMA_DDL = "id BIGINT, sensor STRING, ts_ms BIGINT, temp DOUBLE, hum DOUBLE"


def build_session(app_name: str = "lake-ingest-spark"):
    """The project's Spark session with the Kafka source on its class path."""
    from lakehouse.session import SparkSettings, build_spark, default_master, runtime_jar_conf, spark_jars

    ensure_jar_set(JAR_SET)
    jars = spark_jars() + sorted(str(p) for p in (jar_cache() / JAR_SET).glob("*.jar"))
    settings = SparkSettings.from_env(app_name=app_name)
    # A local master's executor is the driver's JVM: the jars go on its class path, read in place.
    # spark.jars would copy every one (~700 MB with the AWS SDK bundle) into the session's work
    # folder at the first task, which the ingestion bench would count against this peer.
    local = (settings.master or default_master() or "").startswith("local")  # None: spark-submit decides
    jar_conf = runtime_jar_conf(local, jars)
    settings.extra_conf.update({**jar_conf, "spark.driver.memory": "1g",
                                "spark.sql.streaming.minBatchesToRetain": "5"})
    return build_spark(settings)


def create_table(spark, table: str, catalog: str = "lake") -> str:
    """Create ``catalog.table`` (``namespace.name``) unless it exists; returns the full name."""
    namespace = table.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.{namespace}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {catalog}.{table} ({SCHEMA_DDL}, year INT, month INT, day INT, hour INT) "
              "USING iceberg PARTITIONED BY (year, month, day, hour) "
              "TBLPROPERTIES ('format-version'='2', 'write.parquet.compression-codec'='zstd')")
    return f"{catalog}.{table}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP", ""))
    parser.add_argument("--topic", required=True)
    parser.add_argument("--table", required=True, help="namespace.name in the catalog 'lake'")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--trigger", default="available-now", help="available-now or a processing time ('5 seconds')")
    parser.add_argument("--max-offsets", type=int, default=0, help="maxOffsetsPerTrigger (0: no limit)")
    args = parser.parse_args(argv)
    if not args.bootstrap:
        parser.error("--bootstrap (or $KAFKA_BOOTSTRAP) is required")

    from pyspark.sql import functions as F

    spark = build_session()
    spark.sparkContext.setLogLevel("WARN")
    target = create_table(spark, args.table)
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic).option("startingOffsets", "earliest")
              .option("failOnDataLoss", "false"))
    if args.max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets))
    moment = F.timestamp_millis(F.col("ts_ms"))
    rows = (reader.load()
            .select(F.from_json(F.col("value").cast("string"), SCHEMA_DDL).alias("r")).select("r.*")
            .withColumn("year", F.year(moment)).withColumn("month", F.month(moment))
            .withColumn("day", F.dayofmonth(moment)).withColumn("hour", F.hour(moment)))
    writer = (rows.writeStream.format("iceberg").outputMode("append")
              .option("checkpointLocation", args.checkpoint).option("fanout-enabled", "true"))
    writer = writer.trigger(availableNow=True) if args.trigger == "available-now" else \
        writer.trigger(processingTime=args.trigger)
    started = int(time.time() * 1000)
    query = writer.toTable(target)
    query.awaitTermination()
    print(json.dumps({"started_ms": started, "done_ms": int(time.time() * 1000)}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
