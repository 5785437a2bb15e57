"""Kafka Connect (Apache Kafka 4.3.1, distributed worker) on loopback, with Apache Iceberg's sink
connector on its class path: a peer of the edge in ``bench/lake_ingest.py``.

    ./dev services up kafka-connect          # needs the default Kafka broker; fetches its jars once

The jar set ``kafka-connect`` (``infra/jars/pom.xml``) is fetched on first start only (the
default set-up does not need it). The worker joins the group ``streamlake-connect`` of the local
broker, keeps its configs, offsets and statuses in ``_streamlake-connect-*`` topics and serves
its REST API on a free loopback port, written to the env file as ``KAFKA_CONNECT_URL``.

Connectors are submitted through the REST API; :func:`iceberg_sink_config` builds the Iceberg
sink's configuration for a topic and a table of an Iceberg REST catalog (the connector's
coordinator commits through transactional producers on its control topic: exactly once), either
as shipped (defaults) or hardened as Apache Iceberg's own tests run it, optionally with
:func:`hive_transforms` (``year/month/day/hour`` of the message timestamp, Kafka's own transforms).
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

from infra.local.service_base import REPO_ROOT, Service, ServiceError, _http_ok, _java, jar_cache, service_jvm_opts

__all__ = ("KafkaConnect", "ensure_jar_set", "hive_transforms", "iceberg_sink_config", "rest")

JAR_SET = "kafka-connect"
GROUP = "streamlake-connect"
HEAP = "768m"


def ensure_jar_set(name: str) -> None:
    """Fetch a jar set with ``infra/jars/fetch.sh`` unless it is complete (offline afterwards)."""
    folder = jar_cache() / name
    if any(folder.glob(".complete-*")) and any(folder.glob("*.jar")):
        return
    proc = subprocess.run([str(REPO_ROOT / "infra" / "jars" / "fetch.sh"), name], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ServiceError(f"fetching jar set '{name}' failed:\n{proc.stderr[-2000:]}")


def rest(url: str, method: str = "GET", body: Optional[Dict[str, Any]] = None, timeout: float = 30) -> Any:
    """One call of the Connect REST API; returns the decoded JSON (None for an empty body)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            text = resp.read()
    except urllib.error.HTTPError as exc:
        raise ServiceError(f"{method} {url}: HTTP {exc.code}: {exc.read().decode(errors='replace')}") from exc
    return json.loads(text) if text else None


HARDENED_COMMIT_INTERVAL_MS = 10_000
HARDENED_COMMIT_TIMEOUT_MS = 30_000
HIVE_FORMATS = (("year", "yyyy"), ("month", "MM"), ("day", "dd"), ("hour", "HH"))


def hive_transforms() -> Dict[str, str]:
    """Kafka Connect's own transforms adding ``year, month, day, hour`` (UTC) of each message's
    timestamp to its value (strings; the Iceberg sink converts them to the table's ints).

    Two per column: ``InsertField`` copies the message timestamp into the field, then
    ``TimestampConverter`` formats it (its formats are UTC). The messages' timestamps must be their
    event times (``bench/lake_ingest_data.py`` produces them so)."""
    config: Dict[str, str] = {}
    names = []
    for column, pattern in HIVE_FORMATS:
        config[f"transforms.{column}Ts.type"] = "org.apache.kafka.connect.transforms.InsertField$Value"
        config[f"transforms.{column}Ts.timestamp.field"] = column
        config[f"transforms.{column}Fmt.type"] = "org.apache.kafka.connect.transforms.TimestampConverter$Value"
        config[f"transforms.{column}Fmt.field"] = column
        config[f"transforms.{column}Fmt.target.type"] = "string"
        config[f"transforms.{column}Fmt.format"] = pattern
        names += [f"{column}Ts", f"{column}Fmt"]
    config["transforms"] = ",".join(names)
    return config


def iceberg_sink_config(topic: str, table: str, catalog_uri: str, control_topic: Optional[str] = None, *,
                        tasks: Optional[int] = None, commit_interval_ms: Optional[int] = None,
                        hardened: bool = True, hive_columns: bool = False) -> Dict[str, str]:
    """The Iceberg sink connector's configuration: ``topic`` (JSON values without schemas) into
    ``table`` (``namespace.name``, created beforehand) of the REST catalog at ``catalog_uri``.

    ``hardened=False`` is the connector as shipped: only what it cannot run without, every other
    setting at its default (1 task, the shared control topic ``control-iceberg``, a commit every
    5 minutes, the coordinator's consumer at ``latest``), unless ``tasks``, ``control_topic`` or
    ``commit_interval_ms`` are given. ``hardened=True`` is how Apache Iceberg's own integration
    tests and docs run it: both consumers (the tasks' through ``consumer.override.`` and the
    coordinator's ``iceberg.kafka.``) start at ``earliest``, a commit every 10 s, a 30 s commit
    timeout, the connector's own control topic (required). ``hive_columns`` adds
    :func:`hive_transforms`."""
    config = {
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "topics": topic,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "iceberg.tables": table,
        "iceberg.catalog.type": "rest",
        "iceberg.catalog.uri": catalog_uri,
    }
    if hardened:
        if not control_topic:
            raise ValueError("a hardened Iceberg sink needs its own control topic (control_topic)")
        config.update({
            "consumer.override.auto.offset.reset": "earliest",
            "iceberg.kafka.auto.offset.reset": "earliest",
            "iceberg.control.commit.interval-ms": str(commit_interval_ms or HARDENED_COMMIT_INTERVAL_MS),
            "iceberg.control.commit.timeout-ms": str(HARDENED_COMMIT_TIMEOUT_MS),
        })
    elif commit_interval_ms:
        config["iceberg.control.commit.interval-ms"] = str(commit_interval_ms)
    if control_topic:
        config["iceberg.control.topic"] = control_topic
    if tasks:
        config["tasks.max"] = str(tasks)
    if hive_columns:
        config.update(hive_transforms())
    return config


class KafkaConnect(Service):
    """One Kafka Connect distributed worker (``ConnectDistributed``) against the local broker."""

    startup_timeout = 120.0

    def __init__(self) -> None:
        super().__init__("kafka-connect")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._saved_port('rest')}"

    def _bootstrap(self) -> str:
        from infra.local.services import Kafka

        kafka = Kafka()
        if not kafka.running():
            raise ServiceError("kafka-connect needs the local Kafka broker: run './dev services up' first")
        return kafka.bootstrap()

    def prepare(self) -> None:
        ensure_jar_set(JAR_SET)
        self._port("rest")  # a free port, remembered (``url`` reads it)
        props = {
            "bootstrap.servers": self._bootstrap(),
            "group.id": GROUP,
            "listeners": self.url,
            "rest.advertised.host.name": "127.0.0.1",
            "config.storage.topic": "_streamlake-connect-configs",
            "offset.storage.topic": "_streamlake-connect-offsets",
            "status.storage.topic": "_streamlake-connect-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "plugin.discovery": "service_load",  # the Iceberg connector ships its service file
            "connector.client.config.override.policy": "All",
            "scheduled.rebalance.max.delay.ms": "0",  # a restarted worker gets its tasks back at once
            # An idle sink task is polled (put()) once per flush interval; the Iceberg connector
            # reads its control topic in put(), so a long interval delays every commit by as much.
            "offset.flush.interval.ms": "1000",
        }
        (self.home / "connect.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.home / "log4j2.properties").write_text(
            "status = warn\n"
            "appender.file.type = File\nappender.file.name = FILE\n"
            f"appender.file.fileName = {self.home / 'worker.log'}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n"
            "logger.iceberg.name = org.apache.iceberg\nlogger.iceberg.level = INFO\n"
            "logger.kafka.name = org.apache.kafka\nlogger.kafka.level = WARN\n"
            "logger.runtime.name = org.apache.kafka.connect.runtime\nlogger.runtime.level = INFO\n")

    def command(self) -> tuple[list[str], dict[str, str]]:
        jars = jar_cache() / JAR_SET
        return ([_java(), f"-Xmx{HEAP}", "-XX:+UseSerialGC", *service_jvm_opts(),
                 f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                 "-cp", f"{jars}/*", "org.apache.kafka.connect.cli.ConnectDistributed",
                 str(self.home / "connect.properties")], {})

    def env_entries(self) -> dict[str, str]:
        return {"KAFKA_CONNECT_URL": self.url}

    def ready(self) -> bool:
        if not _http_ok(f"{self.url}/"):
            return False
        try:
            plugins = rest(f"{self.url}/connector-plugins", timeout=5)
        except (ServiceError, OSError, ValueError):
            return False
        return any(p.get("class", "").endswith("IcebergSinkConnector") for p in plugins)
