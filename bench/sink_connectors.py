"""Throughput of the connector sinks vs. each server's own bulk client doing the same writes.

    ./dev bench sink_connectors                        # 100,000 records per contender
    ./dev bench sink_connectors --records 20000        # quicker
    ./dev bench sink_connectors --only redis,mqtt,kinesis
    ./dev bench sink_connectors --records 2000 --rounds 1 --no-save   # a check of the set-up

Starts the optional servers it needs (``postgres``, ``redis``, ``mosquitto``; see
``infra/local/connector_services.py``) and leaves them running. Every contender gets the same
in-memory records (dicts as a JSON deserializer yields them, key ``k<i>``), cut into checkpoints of
``--checkpoint`` records; 3 interleaved rounds (the order alternating), each figure the median of
the rounds with its low and high:

- ``postgres append``: ``PostgreSQLSink.add()`` per record + ``flush()`` per checkpoint (COPY into the
  table) vs. the limit: dict -> row tuple per record and ``psycopg`` ``COPY ... FROM STDIN`` per
  checkpoint, in one transaction, into an identical table.
- ``postgres upsert``: the sink with ``primary_key_columns=["id"], upsert_on_primary_key=True`` vs.
  COPY into a temporary table + ``INSERT ... ON CONFLICT (id) DO UPDATE`` per checkpoint.
- ``redis``: ``RedisSink`` vs. a redis-py pipeline of ``SET key json.dumps(value)`` per checkpoint.
- ``mqtt``: ``MQTTSink`` (QoS 1) vs. a paho ``publish()`` loop waiting for every PUBACK at the end of
  each checkpoint (the same 1000 messages in flight for both).
- ``iceberg``: ``IcebergSink`` (REST catalog, day-partitioned) vs. pyiceberg ``table.append()`` of one
  Arrow table per checkpoint into an identical table (created by the sink from one record, untimed).
- ``azure``: ``FileSink(format="json", destination=AzureFileDestination(...))`` vs. the same JSON lines
  built in the loop and uploaded with azure-storage-blob's ``upload_blob``, one blob per checkpoint.
- ``kinesis``: ``KinesisSink`` vs. boto3 ``put_records`` of 500 JSON records at a time, both into a
  fresh 2-shard stream of moto's server (the ``s3`` service).

Prints records/s per contender and the sink's share of its limit (target >= 70%).

**Outputs compared by value.** After each timed run (the clock stopped), what the contender wrote is
read back from the server and compared with the records fed (``bench/sink_readback.py``): the rows of
the PostgreSQL table (for the upserts: the last value per key), every Redis key and value, every
MQTT message a subscriber received (it subscribed before the run, untimed), every record of every
Kinesis shard, a scan of the Iceberg table, the Azure blobs parsed. Values are compared decoded
(a sink may serialize differently from the hand-written client), by type too. Any difference is
printed (the contender, how many records differ, one example): the bench exits 1 and saves nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infra.local import services  # noqa: E402
from sink_readback import (  # noqa: E402
    Mismatch, MqttReadBack, azure_rows, compare, fed_rows, iceberg_rows, kinesis_rows, last_per_key, postgres_rows,
    redis_rows)

TS0 = 1_700_000_000_000

#: what a contender's run returns: its timed seconds, and how its read-back differs from what it was
#: fed (None: equal by value); the read-back runs after the clock stopped
Timed = Tuple[float, Optional[Mismatch]]
Contender = Callable[[List[list]], Timed]


def make_records(n: int) -> List[Tuple[bytes, Dict[str, Any], int]]:
    return [(f"k{i}".encode(), {"id": i, "sensor": f"s{i % 50}", "reading": i * 0.25, "ok": i % 3 == 0},
             TS0 + i) for i in range(n)]


def chunks(records: list, size: int) -> List[list]:
    return [records[i:i + size] for i in range(0, len(records), size)]


def feed_sink(sink: Any, checkpoints: List[list]) -> float:
    start = time.perf_counter()
    offset = 0
    for checkpoint in checkpoints:
        for key, value, ts in checkpoint:
            sink.add(value, key, ts, [], "bench", 0, offset)
            offset += 1
        sink.flush("bench", 0)
    return time.perf_counter() - start


# -- PostgreSQL -------------------------------------------------------------------------------------

def postgres_contenders(env: Dict[str, str]) -> Dict[str, Contender]:
    import psycopg

    from stream_edge.sinks.community.postgresql import PostgreSQLSink

    kwargs = dict(host=env["POSTGRES_HOST"], port=int(env["POSTGRES_PORT"]), dbname=env["POSTGRES_DB"],
                  user=env["POSTGRES_USER"], password="")
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(**kwargs, autocommit=True)
    admin.execute(f'CREATE SCHEMA "{schema}"')
    columns = '"timestamp" TIMESTAMP NOT NULL, __key TEXT, id BIGINT{pk}, sensor TEXT, reading DOUBLE PRECISION, ok BOOLEAN'

    def fresh(table: str, pk: bool) -> None:
        admin.execute(f'DROP TABLE IF EXISTS "{schema}".{table}')
        admin.execute(f'CREATE TABLE "{schema}".{table} ({columns.format(pk=" PRIMARY KEY" if pk else "")})')

    def read_back(table: str, upsert: bool, checkpoints: List[list]) -> Optional[Mismatch]:
        # The table's rows against the records fed (an upsert keeps the last value per primary key).
        fed = fed_rows(checkpoints)
        return compare(last_per_key(fed, "id") if upsert else fed, postgres_rows(admin, f'"{schema}".{table}'))

    def sink_run(upsert: bool) -> Contender:
        def run(checkpoints: List[list]) -> Timed:
            table = "sink_upsert" if upsert else "sink_append"
            fresh(table, upsert)
            extra = dict(primary_key_columns=["id"], upsert_on_primary_key=True) if upsert else {}
            sink = PostgreSQLSink(**kwargs, table_name=table, schema_name=schema, **extra)
            sink.setup()
            try:
                seconds = feed_sink(sink, checkpoints)
            finally:
                sink.cleanup()
            return seconds, read_back(table, upsert, checkpoints)
        return run

    def copy_run(upsert: bool) -> Contender:
        def run(checkpoints: List[list]) -> Timed:
            table = "copy_upsert" if upsert else "copy_append"
            fresh(table, upsert)
            names = '"timestamp", __key, id, sensor, reading, ok'
            from_ts, utc = dt.datetime.fromtimestamp, dt.timezone.utc
            with psycopg.connect(**kwargs) as conn:
                start = time.perf_counter()
                for checkpoint in checkpoints:
                    rows = [(from_ts(ts / 1000, utc).replace(tzinfo=None), key.decode(), v["id"], v["sensor"],
                             v["reading"], v["ok"]) for key, v, ts in checkpoint]
                    with conn.transaction(), conn.cursor() as cur:
                        target = f'"{schema}".{table}'
                        if upsert:
                            cur.execute(f"CREATE TEMP TABLE stage (LIKE {target}) ON COMMIT DROP")
                            target = "stage"
                        with cur.copy(f"COPY {target} ({names}) FROM STDIN") as copy:
                            for row in rows:
                                copy.write_row(row)
                        if upsert:
                            cur.execute(f'INSERT INTO "{schema}".{table} ({names}) SELECT {names} FROM stage '
                                        f'ON CONFLICT (id) DO UPDATE SET "timestamp" = EXCLUDED."timestamp", '
                                        f'__key = EXCLUDED.__key, sensor = EXCLUDED.sensor, '
                                        f'reading = EXCLUDED.reading, ok = EXCLUDED.ok')
                seconds = time.perf_counter() - start
            return seconds, read_back(table, upsert, checkpoints)
        return run

    return {"postgres append: PostgreSQLSink": sink_run(False), "postgres append: psycopg COPY (limit)": copy_run(False),
            "postgres upsert: PostgreSQLSink": sink_run(True),
            "postgres upsert: COPY + ON CONFLICT (limit)": copy_run(True)}


# -- Redis ------------------------------------------------------------------------------------------

def redis_contenders(env: Dict[str, str]) -> Dict[str, Contender]:
    import redis

    from stream_edge.sinks.community.redis import RedisSink

    host, port, db = env["REDIS_HOST"], int(env["REDIS_PORT"]), 9
    client = redis.Redis(host=host, port=port, db=db)

    def read_back(checkpoints: List[list]) -> Optional[Mismatch]:
        # Every key of the (flushed) database and its value decoded from JSON: the last value per key.
        return compare(last_per_key(fed_rows(checkpoints, timestamps=False)), redis_rows(client))

    def sink_run(checkpoints: List[list]) -> Timed:
        client.flushdb()
        sink = RedisSink(host, port, db)
        sink.setup()
        try:
            seconds = feed_sink(sink, checkpoints)
        finally:
            sink.cleanup()
        return seconds, read_back(checkpoints)

    def pipeline_run(checkpoints: List[list]) -> Timed:
        client.flushdb()
        dumps = json.dumps
        start = time.perf_counter()
        for checkpoint in checkpoints:
            pipe = client.pipeline(transaction=False)
            for key, value, _ts in checkpoint:
                pipe.set(key, dumps(value))
            pipe.execute()
        seconds = time.perf_counter() - start
        return seconds, read_back(checkpoints)

    return {"redis: RedisSink": sink_run, "redis: redis-py pipeline (limit)": pipeline_run}


# -- MQTT -------------------------------------------------------------------------------------------

def mqtt_contenders(env: Dict[str, str]) -> Dict[str, Contender]:
    import paho.mqtt.client as mqtt

    from stream_edge.sinks.community.mqtt import MQTTSink

    host, port = env["MQTT_HOST"], int(env["MQTT_PORT"])

    def read_back(subscriber: MqttReadBack, checkpoints: List[list]) -> Optional[Mismatch]:
        # Every message the subscriber received: topic suffix (the key) and payload decoded from JSON.
        fed = fed_rows(checkpoints, timestamps=False)
        return compare(fed, subscriber.rows(len(fed)))

    def sink_run(checkpoints: List[list]) -> Timed:
        subscriber = MqttReadBack(host, port, "bench/sink")
        sink = MQTTSink(f"bench-sink-{uuid.uuid4().hex[:6]}", host, port, "bench/sink", tls_enabled=False,
                        mqtt_flush_timeout_seconds=120)
        sink.setup()
        try:
            seconds = feed_sink(sink, checkpoints)
        finally:
            sink.cleanup()
        return seconds, read_back(subscriber, checkpoints)

    def paho_run(checkpoints: List[list]) -> Timed:
        subscriber = MqttReadBack(host, port, "bench/paho")
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-paho-{uuid.uuid4().hex[:6]}")
        client.max_inflight_messages_set(1000)
        client.connect(host, port)
        client.loop_start()
        dumps = json.dumps
        try:
            start = time.perf_counter()
            for checkpoint in checkpoints:
                infos = [client.publish(f"bench/paho/{key.decode()}", dumps(value), qos=1)
                         for key, value, _ts in checkpoint]
                for info in infos:
                    info.wait_for_publish(120)
            seconds = time.perf_counter() - start
        finally:
            client.disconnect()
            client.loop_stop()
        return seconds, read_back(subscriber, checkpoints)

    return {"mqtt: MQTTSink": sink_run, "mqtt: paho publish loop (limit)": paho_run}


# -- Kinesis (moto's server, the ``s3`` service) ----------------------------------------------------

def kinesis_contenders(env: Dict[str, str]) -> Dict[str, Contender]:
    import boto3

    from stream_edge.sinks.community.kinesis import KinesisSink

    endpoint = env["S3_ENDPOINT"]
    credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
    client = boto3.client("kinesis", endpoint_url=endpoint, **credentials)

    def fresh() -> str:
        name = f"bench-{uuid.uuid4().hex[:10]}"
        client.create_stream(StreamName=name, ShardCount=2)
        client.get_waiter("stream_exists").wait(StreamName=name, WaiterConfig={"Delay": 0.2})
        return name

    def read_back(stream: str, checkpoints: List[list]) -> Optional[Mismatch]:
        # Every shard's records: partition key (the key) and data decoded from JSON.
        return compare(fed_rows(checkpoints, timestamps=False), kinesis_rows(client, stream))

    def sink_run(checkpoints: List[list]) -> Timed:
        stream = fresh()
        sink = KinesisSink(stream, aws_endpoint_url=endpoint, **credentials)
        sink.setup()
        try:
            seconds = feed_sink(sink, checkpoints)
        finally:
            sink.cleanup()
        return seconds, read_back(stream, checkpoints)

    def boto_run(checkpoints: List[list]) -> Timed:
        stream, dumps = fresh(), json.dumps
        start = time.perf_counter()
        for checkpoint in checkpoints:
            entries = [{"Data": dumps(value).encode(), "PartitionKey": key.decode()} for key, value, _ts in checkpoint]
            for i in range(0, len(entries), 500):  # put_records takes at most 500 records
                response = client.put_records(StreamName=stream, Records=entries[i:i + 500])
                assert response["FailedRecordCount"] == 0, response["FailedRecordCount"]
        seconds = time.perf_counter() - start
        return seconds, read_back(stream, checkpoints)

    return {"kinesis: KinesisSink": sink_run, "kinesis: boto3 put_records x500 (limit)": boto_run}


# -- Iceberg (the project's REST catalog server, the ``iceberg-rest`` service) -----------------------

def iceberg_contenders(env: Dict[str, str]) -> Dict[str, Contender]:
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import DayTransform

    from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig

    uri = env["ICEBERG_REST_URI"]
    spec = PartitionSpec(PartitionField(1, 1000, DayTransform(), "day"))
    catalog = load_catalog("bench", type="rest", uri=uri)

    def sink_for(name: str) -> Any:
        sink = IcebergSink(name, RESTIcebergConfig(uri), "rest", partition_spec=spec)
        sink.setup()
        return sink

    def read_back(name: str, fed: List[list]) -> Optional[Mismatch]:
        # A scan of the table: _key, _timestamp (as epoch ms) and the value's columns.
        return compare(fed_rows(fed), iceberg_rows(catalog.load_table(name)))

    def sink_run(checkpoints: List[list]) -> Timed:
        name = f"bench_sink.t_{uuid.uuid4().hex[:10]}"
        sink = sink_for(name)
        try:
            seconds = feed_sink(sink, checkpoints)
        finally:
            sink.cleanup()
        return seconds, read_back(name, checkpoints)

    def pyiceberg_run(checkpoints: List[list]) -> Timed:
        # The same table as the sink's (its schema and day partitioning): the sink creates it from one
        # record before the clock starts; then pyiceberg appends one Arrow table per checkpoint.
        name = f"bench_sink.t_{uuid.uuid4().hex[:10]}"
        sink = sink_for(name)
        key, value, ts = checkpoints[0][0]
        sink.add(value, key, ts, [], "bench", 0, 0)
        sink.flush("bench", 0)
        sink.cleanup()
        table = catalog.load_table(name)
        schema = table.schema().as_arrow()
        from_ts, utc = dt.datetime.fromtimestamp, dt.timezone.utc
        start = time.perf_counter()
        for checkpoint in checkpoints:
            rows = [{**value, "_timestamp": from_ts(ts / 1000, utc), "_key": key.decode()}
                    for key, value, ts in checkpoint]
            table.append(pa.Table.from_pylist(rows, schema=schema))
        seconds = time.perf_counter() - start
        # The table also holds the record the sink created it from (untimed): it was fed too.
        return seconds, read_back(name, [[checkpoints[0][0]], *checkpoints])

    return {"iceberg: IcebergSink": sink_run, "iceberg: pyiceberg append (limit)": pyiceberg_run}


# -- Azure Blob Storage (Azurite, the ``azurite`` service) -----------------------------------------

def azure_contenders(env: Dict[str, str]) -> Dict[str, Contender]:
    from azure.storage.blob import BlobServiceClient

    from stream_edge.sinks.community.file import FileSink
    from stream_edge.sinks.community.file.destinations import AzureFileDestination

    conn = env["AZURE_STORAGE_CONNECTION_STRING"]
    service = BlobServiceClient.from_connection_string(conn)

    def fresh() -> str:
        name = f"bench-{uuid.uuid4().hex[:10]}"
        service.create_container(name)
        return name

    def read_back(container: str, checkpoints: List[list]) -> Optional[Mismatch]:
        # Every blob of the container, parsed as JSON lines: _key, _timestamp and the _value's fields.
        return compare(fed_rows(checkpoints), azure_rows(service.get_container_client(container)))

    def sink_run(checkpoints: List[list]) -> Timed:
        container = fresh()
        sink = FileSink(directory="bench", format="json", destination=AzureFileDestination(conn, container))
        sink.setup()
        seconds = feed_sink(sink, checkpoints)
        return seconds, read_back(container, checkpoints)

    def blob_run(checkpoints: List[list]) -> Timed:
        # The same JSON lines FileSink's JSON format writes, one blob per checkpoint.
        name = fresh()
        container = service.get_container_client(name)
        dumps = json.JSONEncoder(separators=(",", ":"), default=str, ensure_ascii=False).encode
        start = time.perf_counter()
        for n, checkpoint in enumerate(checkpoints):
            lines = [dumps({"_timestamp": ts, "_key": key.decode(), "_value": value}) for key, value, ts in checkpoint]
            container.upload_blob(f"bench/{n}.jsonl", ("\n".join(lines) + "\n").encode(), overwrite=True)
        seconds = time.perf_counter() - start
        return seconds, read_back(name, checkpoints)

    return {"azure: FileSink(AzureFileDestination)": sink_run, "azure: upload_blob (limit)": blob_run}


GROUPS = {"postgres": ("postgres", postgres_contenders), "redis": ("redis", redis_contenders),
          "mqtt": ("mosquitto", mqtt_contenders), "kinesis": ("s3", kinesis_contenders),
          "iceberg": ("iceberg-rest", iceberg_contenders), "azure": ("azurite", azure_contenders)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--checkpoint", type=int, default=10_000, help="records per flush")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated: {','.join(GROUPS)}")
    parser.add_argument("--no-save", action="store_true", help="print the figures, leave bench/results alone")
    args = parser.parse_args()
    wanted = [g.strip() for g in args.only.split(",") if g.strip()]
    env = services.up([GROUPS[g][0] for g in wanted])
    records = make_records(args.records)
    checkpoints = chunks(records, args.checkpoint)
    print(f"{args.records} records, checkpoints of {args.checkpoint}, medians of {args.rounds} rounds")
    bars, differing = [], []
    for group in wanted:
        contenders = GROUPS[group][1](env)
        timings: Dict[str, list] = {name: [] for name in contenders}
        for round_ in range(args.rounds):
            order = list(contenders) if round_ % 2 == 0 else list(contenders)[::-1]
            for name in order:
                seconds, mismatch = contenders[name](checkpoints)
                timings[name].append(seconds)
                if mismatch is not None:
                    differing.append(f"{name}, round {round_ + 1}: {mismatch}")
                    print(f"  OUTPUT DIFFERS: {differing[-1]}", flush=True)
        rates = {name: sorted(args.records / seconds for seconds in timed) for name, timed in timings.items()}
        names = list(contenders)
        for sink_name, limit_name in zip(names[0::2], names[1::2]):
            sink, limit = rates[sink_name], rates[limit_name]
            sink_rate, limit_rate = sink[len(sink) // 2], limit[len(limit) // 2]
            print(f"  {sink_name:45} {sink_rate:>10,.0f} rec/s ({sink[0]:,.0f} - {sink[-1]:,.0f})   "
                  f"{100 * sink_rate / limit_rate:5.0f}% of the limit")
            print(f"  {limit_name:45} {limit_rate:>10,.0f} rec/s ({limit[0]:,.0f} - {limit[-1]:,.0f})")
            bars += [(sink_name, "sink", sink_rate, sink[0], sink[-1]),
                     (sink_name, "limit (server's bulk client)", limit_rate, limit[0], limit[-1])]
    if differing:
        print(f"outputs differ from the records fed in {len(differing)} run(s), nothing saved:\n  "
              + "\n  ".join(differing), file=sys.stderr)
        return 1
    print(f"outputs: every contender's read-back equals the records fed, by value, in all {args.rounds} round(s)")
    if args.no_save or set(wanted) != set(GROUPS):
        return 0  # the saved figures (./dev bench report) come from full runs only
    from results import save

    save("sink_connectors", f"sinks vs the server's own bulk client, {args.records:,} records", "rec/s", bars,
         runs=args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
