"""The Kafka Connect contenders of ``bench/lake_ingest.py``: Apache Iceberg's sink connector, twice.

- ``kafka-connect-defaults``: the connector as shipped. Only what it cannot run without (class,
  topic, table, catalog, converters) and the worker's own transforms that give the rows the
  common table's Hive columns; everything else at its defaults: one task, a commit every 5
  minutes, the shared control topic ``control-iceberg`` (created if missing: the bench's broker
  does not create topics), the coordinator's consumer at ``latest``.
- ``kafka-connect-hardened``: as Apache Iceberg's own integration tests and docs run it: both
  ``auto.offset.reset`` overrides ``earliest`` (the tasks' and the coordinator's, apache/iceberg
  PR 18006), a commit every 10 s (``--connect-commit-interval``), a 30 s commit timeout,
  ``tasks.max`` = the topic's partitions or the machine's cores, whichever is fewer (a task per
  core at most: more only adds threads, consumers and buffers on the same cores), its own control topic.

Each run restarts the worker first (its peak RSS and CPU are this run's, start-up included; the
clock starts at the connector's submission), creates the common table, submits the connector and
runs :class:`~lake_ingest_visible.VisibleClock` until every row is visible or ``--timeout``.
:class:`ConnectRun` is also what the kill -9 mode drives (``kill_worker``) and where it copies
the worker's log from (``save_log``).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

from confluent_kafka.admin import AdminClient, NewTopic

from infra.local import services
from infra.local.kafka_connect_service import KafkaConnect, iceberg_sink_config, rest
from lake_ingest_data import PARTITIONS
from lake_ingest_meter import Meter

CONNECT_CONTENDERS = ("kafka-connect-defaults", "kafka-connect-hardened")
DEFAULT_CONTROL_TOPIC = "control-iceberg"  # the connector's default iceberg.control.topic
DEFAULT_COMMIT_INTERVAL_S = 300.0  # the connector's default iceberg.control.commit.interval-ms


def commit_interval(name: str, args: Any) -> float:
    """Seconds between the coordinator's commits for contender ``name``."""
    return DEFAULT_COMMIT_INTERVAL_S if name.endswith("defaults") else args.connect_commit_interval


def restart_worker() -> KafkaConnect:
    """A fresh worker JVM (its RSS and CPU counted from its start) running no connector.

    Connector configs outlive the worker (they are kept in its config topic): one left by an
    interrupted run or test would run next to the contender, so every one is deleted, by name."""
    services.down(["kafka-connect"])
    services.up(["kafka-connect"])
    worker = KafkaConnect()
    for stale in rest(f"{worker.url}/connectors") or []:
        print(f"kafka-connect: deleting connector {stale!r} left on the worker", file=sys.stderr)
        rest(f"{worker.url}/connectors/{stale}", "DELETE")
    return worker


def ensure_control_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)


def hardened_tasks() -> int:
    """``tasks.max`` of ``kafka-connect-hardened``: no more than the topic's partitions and the cores."""
    return max(1, min(PARTITIONS, os.cpu_count() or 1))


def connector_config(name: str, env: Dict[str, str], topic: str, table: str, tag: str, args: Any,
                     tasks: Optional[int] = None) -> Dict[str, str]:
    """The configuration of contender ``name`` (``tasks`` overrides the hardened ``tasks.max``)."""
    uri = env["ICEBERG_REST_URI"]
    if name.endswith("defaults"):
        ensure_control_topic(env["KAFKA_BOOTSTRAP"], DEFAULT_CONTROL_TOPIC)
        return iceberg_sink_config(topic, table, uri, hardened=False, tasks=tasks, hive_columns=True)
    control = f"bench-lake-control-{tag}"
    ensure_control_topic(env["KAFKA_BOOTSTRAP"], control)
    return iceberg_sink_config(topic, table, uri, control, tasks=tasks or hardened_tasks(), hive_columns=True,
                               commit_interval_ms=int(args.connect_commit_interval * 1000))


class ConnectRun:
    """One connector on a freshly started worker, metered from the worker's start."""

    def __init__(self, name: str, env: Dict[str, str], topic: str, table: str, tag: str, args: Any,
                 tasks: Optional[int] = None) -> None:
        self.name, self.env, self.topic, self.table, self.tag = name, env, topic, table, tag
        self.config = connector_config(name, env, topic, table, tag, args, tasks)
        self.connector = f"bench-lake-{name.rsplit('-', 1)[1]}-{tag}"
        self.started = time.time()  # the worker's start is inside the clock, as the others' process start
        self.worker = restart_worker()
        self.log_start = self._log_size()
        self.meter = Meter(self._pid())
        self.kills = 0

    def _pid(self) -> int:
        pid = self.worker.pid()
        if pid is None:
            raise RuntimeError(f"the Kafka Connect worker is not running; see {self.worker.log_file}")
        return pid

    def _log(self) -> Path:
        return self.worker.home / "worker.log"

    def _log_size(self) -> int:
        return self._log().stat().st_size if self._log().exists() else 0

    def submit(self) -> float:
        """Start the meter and submit the connector; returns the submission's wall time."""
        self.meter.__enter__()
        submitted = time.time()
        rest(f"{self.worker.url}/connectors/{self.connector}/config", "PUT", self.config)
        return submitted

    def kill_worker(self, running_timeout: float = 300.0) -> float:
        """kill -9 the worker JVM, then start a new one (its tasks resume from the committed state);
        returns when the connector's tasks run again (or ``running_timeout`` passed): the wall time
        from which a stall is counted."""
        os.kill(self._pid(), signal.SIGKILL)
        self.kills += 1
        self.worker.stop()
        services.up(["kafka-connect"])
        self.worker = KafkaConnect()
        self.meter.pid = self._pid()
        deadline = time.time() + running_timeout
        while time.time() < deadline:
            tasks = self.status().get("tasks") or []
            if tasks and all(task.get("state") == "RUNNING" for task in tasks):
                break
            time.sleep(1.0)
        return time.time()

    @property
    def control_topic(self) -> str:
        return self.config.get("iceberg.control.topic", DEFAULT_CONTROL_TOPIC)

    def control_end(self) -> int:
        """The control topic's end offset (partition 0: the bench's control topics have one)."""
        from confluent_kafka import Consumer, TopicPartition

        probe = Consumer({"bootstrap.servers": self.env["KAFKA_BOOTSTRAP"], "group.id": "bench-lake-control-probe"})
        try:
            return probe.get_watermark_offsets(TopicPartition(self.control_topic, 0), timeout=10)[1]
        finally:
            probe.close()

    def wait_for_commit_round(self, since: int, timeout: float) -> bool:
        """Block until a commit round is under way: the coordinator's ``START_COMMIT`` and a task's
        answer (``DataWritten``, ``DataComplete``), each a transaction (its records and a commit
        marker), are on the control topic after offset ``since``: 5 offsets. Killing the worker
        then replaces the coordinator between the tasks' answers (their source offsets committed
        with them) and its table commit, the window of apache/iceberg PR 18006. False on timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.control_end() >= since + 5:
                return True
            time.sleep(0.05)
        return False

    def wait_running(self, timeout: float = 300.0) -> float:
        """Block until every task of the connector runs; returns that wall time (the end of
        Connect's start-up: worker start, submission, tasks assigned and started)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            tasks = self.status().get("tasks") or []
            if tasks and all(task.get("state") == "RUNNING" for task in tasks):
                break
            time.sleep(0.2)
        return time.time()

    def status(self) -> Dict[str, Any]:
        try:
            return rest(f"{self.worker.url}/connectors/{self.connector}/status")
        except Exception as exc:  # noqa: BLE001 - reported, not fatal
            return {"error": str(exc)}

    def finish(self) -> None:
        """Stop the meter and delete the connector (the worker keeps running for the next run)."""
        self.meter.sample()
        self.meter.__exit__(None, None, None)
        try:
            rest(f"{self.worker.url}/connectors/{self.connector}", "DELETE")
        except Exception:  # noqa: BLE001 - the worker may be gone; nothing left to clean
            pass

    def save_log(self, folder: Path) -> Path:
        """Copy the worker's log of this run (from the run's start) into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{self.connector}-worker.log"
        with open(self._log(), "rb") as source, open(target, "wb") as out:
            source.seek(self.log_start)
            shutil.copyfileobj(source, out)
        return target
