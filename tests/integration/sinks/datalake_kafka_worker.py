"""A consumer process for the kill -9 tests: Kafka -> DataLakeSink with checkpoint semantics.

It mirrors the runtime's checkpoint order (flush sinks, then commit Kafka offsets synchronously)
with a plain confluent-kafka consumer, so the sink's commit protocol can be killed at each point:

    python datalake_kafka_worker.py BOOTSTRAP TOPIC GROUP STORAGE_URL [CRASH_POINT CRASH_AT]

CRASH_POINT is one of the writer's points (before-stage, after-stage, after-commit-record,
after-publish = after the lake commit, before the Kafka commit); the process SIGKILLs itself
there on the CRASH_AT-th commit. Without a crash point it consumes to the end and exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from stream_edge.sinks.core.datalake import DataLakeSink

CHECKPOINT_EVERY = 150


def main() -> int:
    bootstrap, topic, group, storage_url = sys.argv[1:5]
    crash_point = sys.argv[5] if len(sys.argv) > 5 else None
    crash_at = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    sink = DataLakeSink("events", storage_url=storage_url, hive_columns=["sensor", "hour"],
                        timestamp_column="ts_ms", include_kafka_metadata=True)
    sink.setup()
    seen = {"commits": 0}

    def hook(point: str) -> None:
        if point == "before-stage":
            seen["commits"] += 1
        if point == crash_point and seen["commits"] >= crash_at:
            sys.stdout.write(f"CRASHING at {point}\n")
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    sink._writer.crash_hook = hook
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True,
                         # A restarted worker replaces its killed predecessor at once (static
                         # membership) instead of waiting for the session timeout.
                         "group.instance.id": f"{group}-worker", "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    pending: dict[int, int] = {}  # partition -> next offset to commit
    eof: set[int] = set()
    since_checkpoint = 0
    partitions = None
    deadline = time.monotonic() + 120

    def checkpoint() -> None:
        if not pending:
            return
        for partition in sorted(pending):
            sink.flush(topic, partition)
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in pending.items()], asynchronous=False)
        pending.clear()

    while time.monotonic() < deadline:
        for message in consumer.consume(200, timeout=0.5):
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF
                    eof.add(message.partition())
                    continue
                raise RuntimeError(message.error())
            eof.discard(message.partition())
            value = None if message.value() is None else json.loads(message.value())  # None: a tombstone
            sink.add(value, message.key(), message.timestamp()[1], [],
                     message.topic(), message.partition(), message.offset())
            pending[message.partition()] = message.offset() + 1
            since_checkpoint += 1
            if since_checkpoint >= CHECKPOINT_EVERY:
                checkpoint()
                since_checkpoint = 0
        if partitions is None:
            assignment = consumer.assignment()
            partitions = {tp.partition for tp in assignment} or None
        if partitions and eof >= partitions:
            checkpoint()
            consumer.close()
            print("DONE")
            return 0
    raise SystemExit("worker did not reach the end of the topic in time")


if __name__ == "__main__":
    sys.exit(main())
