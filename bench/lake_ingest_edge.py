"""The edge contender of ``bench/lake_ingest.py``: one process, Kafka topic -> lake, until caught up.

    python bench/lake_ingest_edge.py --bootstrap B --topic T --group G --sink datalake \
        --storage file:///tmp/lake --table readings [--commit-interval 5] [--max-buffer-bytes N]

``--sink datalake``: ``DataLakeSink`` (Hive ``year/month/day/hour`` from ``ts_ms``; the catalog
side is ``lakehouse register``, run by the bench). ``--sink iceberg``: ``IcebergSink`` on the REST
catalog (``--catalog-uri``, ``--table ns.name``). The process stops once every partition of the
topic has been processed up to the high watermark read at start (a restarted process after a
``kill -9`` resumes from the committed offsets), then prints one JSON line: ``first_ms`` (first
batch started), ``last_ms`` (end of the last batch processed), ``done_ms`` (last checkpoint
committed), ``processed`` (counted per batch by a ``RunObserver``, which also detects the end).
``--follow`` keeps consuming until SIGTERM/SIGINT instead (the freshness runs of
``bench/lake_ingest_freshness.py``); ``--register-namespace NS`` makes the data-lake sink add each
commit's files to the Iceberg table ``NS.<table>`` itself (``register_in_catalog``).
``--hive-fields`` adds ``year/month/day/hour`` (UTC, of ``ts_ms``) to each record before the sink:
``IcebergSink`` then writes the bench's common table (partitioned by those four columns), as the
data-lake sink does from its Hive folders.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Dict

# LAKE_INGEST_EDGE_ROOT: run another checkout's stream_edge (``lake_ingest.py --edge-root``).
sys.path.insert(0, os.environ.get("LAKE_INGEST_EDGE_ROOT") or str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from stream_edge import Application  # noqa: E402
from stream_edge.processing.observer import RunObserver  # noqa: E402


def remaining(bootstrap: str, topic: str, group: str) -> Dict[int, int]:
    """partition -> last offset still to process (partitions already caught up are left out)."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        parts = sorted(probe.list_topics(topic, timeout=10).topics[topic].partitions)
        committed = probe.committed([TopicPartition(topic, p) for p in parts], timeout=10)
        todo = {}
        for tp in committed:
            low, high = probe.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)
            start = tp.offset if tp.offset >= 0 else low
            if start < high:
                todo[tp.partition] = high - 1
        return todo
    finally:
        probe.close()


def with_hive_fields(value: dict) -> dict:
    """The reading with ``year, month, day, hour`` of its ``ts_ms`` (UTC) added."""
    moment = time.gmtime(value["ts_ms"] // 1000)
    value.update(year=moment.tm_year, month=moment.tm_mon, day=moment.tm_mday, hour=moment.tm_hour)
    return value


def build_sink(args: argparse.Namespace):
    if args.sink == "null":  # the runtime alone (memory/CPU floor of the edge): drops every record
        from stream_edge.sinks.base.sink import BaseSink

        class NullSink(BaseSink):
            def add(self, *args, **kwargs) -> None:
                pass

            def flush(self, topic=None, partition=None) -> None:
                pass

        return NullSink()
    if args.sink == "datalake":
        from stream_edge.sinks.core.datalake import DataLakeSink

        extra = {} if args.max_buffer_bytes is None else {"max_buffer_bytes": args.max_buffer_bytes}
        if args.register_namespace:
            extra.update(catalog_url=args.catalog_uri, register_in_catalog=True,
                         catalog_namespace=args.register_namespace)
        return DataLakeSink(args.table, storage_url=args.storage, hive_columns=["year", "month", "day", "hour"],
                            timestamp_column="ts_ms", **extra)
    from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig

    extra = {} if args.max_buffer_bytes is None else {"max_buffer_bytes": args.max_buffer_bytes}
    return IcebergSink(table_name=args.table, config=RESTIcebergConfig(args.catalog_uri), data_catalog_spec="rest",
                       **extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--sink", choices=("datalake", "iceberg", "null"), default="datalake")
    parser.add_argument("--storage", default="")
    parser.add_argument("--table", required=True)
    parser.add_argument("--catalog-uri", default="")
    parser.add_argument("--commit-interval", type=float, default=5.0)
    parser.add_argument("--max-buffer-bytes", type=int, default=None)
    parser.add_argument("--guarantee", default="exactly-once")
    parser.add_argument("--follow", action="store_true", help="consume until SIGTERM/SIGINT, not until caught up")
    parser.add_argument("--register-namespace", default="",
                        help="datalake sink: register each commit in the Iceberg table NS.<table> (--catalog-uri)")
    parser.add_argument("--shared-group", action="store_true",
                        help="other instances share the group: also stop once the group has committed the rest")
    parser.add_argument("--hive-fields", action="store_true",
                        help="add year/month/day/hour (UTC, of ts_ms) to each record before the sink")
    parser.add_argument("--consumer", action="append", default=[], metavar="KEY=VALUE",
                        help="a librdkafka consumer setting (repeatable)")
    args = parser.parse_args()

    todo = remaining(args.bootstrap, args.topic, args.group)
    state = {"first_ms": 0, "last_ms": 0, "processed": 0}
    app = Application(args.bootstrap, consumer_group=args.group, auto_offset_reset="earliest",
                      commit_interval=args.commit_interval, processing_guarantee=args.guarantee,
                      loglevel="WARNING", auto_create_topics=False, use_changelog_topics=False,
                      consumer_extra_config=dict(kv.split("=", 1) for kv in args.consumer))

    class EndOfTopic(RunObserver):
        """Counts processed records and stops the app once every partition reached its end.

        Per batch, not per record: the consumer's position of a partition is "last returned
        offset + 1", and every returned message of a batch is processed (no ``count`` limit)."""

        def __init__(self) -> None:
            self.consumer = None
            self.tps = [TopicPartition(args.topic, p) for p in sorted(todo)]

        def on_start(self, topics, consumer) -> None:
            self.consumer = consumer

        def on_batch(self, messages, processed: int, seconds: float) -> None:
            now = int(time.time() * 1000)
            if not state["first_ms"]:
                state["first_ms"] = now - int(seconds * 1000)  # the batch's start
            state["processed"] += processed
            state["last_ms"] = now
            if args.follow or not todo or self.consumer is None:
                return
            for tp in self.consumer.position(self.tps):
                last = todo.get(tp.partition)
                if last is not None and tp.offset > last:  # position = last processed + 1
                    todo.pop(tp.partition, None)
            self.tps = [TopicPartition(args.topic, p) for p in sorted(todo)]
            if not todo:
                app.stop()

    def others_done() -> None:
        """With several instances in the group, the partitions another one owns are done when
        the group's committed offsets pass their end."""
        while todo:
            time.sleep(0.5)
            try:
                mine = set(todo)
            except RuntimeError:  # changed by the processing thread meanwhile
                continue
            if mine and not mine & set(remaining(args.bootstrap, args.topic, args.group)):
                todo.clear()
                app.stop()

    app.add_run_observer(EndOfTopic())
    sdf = app.dataframe(app.topic(args.topic, value_deserializer="json"))
    if args.hive_fields:
        sdf = sdf.apply(with_hive_fields)
    sdf.sink(build_sink(args))
    if todo or args.follow:
        if args.shared_group:
            threading.Thread(target=others_done, daemon=True).start()
        app.run()
    print(json.dumps({"first_ms": state["first_ms"], "last_ms": state["last_ms"],
                      "done_ms": int(time.time() * 1000), "processed": state["processed"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
