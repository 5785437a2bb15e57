"""The edge as a long-running service: Kafka topic -> data-lake sink, with silence detection.

This is what systemd (``infra/systemd/stream-edge@.service``) and Docker (``infra/docker``) run.
Everything that changes between a laptop and production comes from the environment, so a
deployment changes configuration only::

    Quix__Broker__Address=127.0.0.1:9092 LAKE_STORAGE_URL=file:///tmp/lake \\
        python -m pipelines.edge_service

==========================  ======================================  ================================
variable                    meaning                                 default
==========================  ======================================  ================================
Quix__Broker__Address       Kafka bootstrap servers                 ``KAFKA_BOOTSTRAP`` or required
Quix__Consumer_Group        consumer group                          ``stream-edge``
EDGE_INPUT_TOPIC            topic of JSON records                   ``sensor-readings``
EDGE_PROCESSING_GUARANTEE   ``at-least-once`` / ``exactly-once``    ``at-least-once``
EDGE_COMMIT_INTERVAL        seconds between checkpoints             ``5``
EDGE_STATE_DIR              state directory                         ``state``
LAKE_STORAGE_URL            ``file:///path`` or ``s3://bucket``     ``file://<cwd>/.local/lake``
LAKE_PREFIX                 prefix under the storage URL            ``data-lake/time-series``
LAKE_TABLE                  table folder name                       ``sensor_readings``
LAKE_HIVE_COLUMNS           comma-separated partition columns       ``year,month,day,hour``
LAKE_TIMESTAMP_COLUMN       event-time column (ms since epoch)      ``ts_ms``
LAKE_KAFKA_METADATA         ``_kafka_*`` columns (key, offset...)   ``true`` (the windows job needs them)
EDGE_STREAM_TIMEOUT_MS      per-key silence threshold; 0 = off      ``0``
EDGE_TIMEOUT_TOPIC          side topic for silence events           ``stream-timeouts``
AWS_* / AWS_ENDPOINT_URL    S3 credentials and endpoint             standard AWS environment
==========================  ======================================  ================================
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

logger = logging.getLogger("pipelines.edge_service")


class EdgeConfigError(ValueError):
    """The service's environment is incomplete or invalid; the message names the variable."""


@dataclass(frozen=True)
class EdgeConfig:
    """The edge service's settings, read and validated from the environment."""

    broker_address: str
    consumer_group: str = "stream-edge"
    input_topic: str = "sensor-readings"
    processing_guarantee: str = "at-least-once"
    commit_interval: float = 5.0
    state_dir: str = "state"
    storage_url: str = field(default_factory=lambda: (Path.cwd() / ".local" / "lake").as_uri())
    prefix: str = "data-lake/time-series"
    table: str = "sensor_readings"
    hive_columns: tuple[str, ...] = ("year", "month", "day", "hour")
    timestamp_column: str = "ts_ms"
    kafka_metadata: bool = True
    stream_timeout_ms: int = 0
    timeout_topic: str = "stream-timeouts"
    auto_offset_reset: str = "earliest"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "EdgeConfig":
        env = os.environ if env is None else env
        broker = env.get("Quix__Broker__Address") or env.get("KAFKA_BOOTSTRAP")
        if not broker:
            raise EdgeConfigError("set Quix__Broker__Address (or KAFKA_BOOTSTRAP) to the Kafka bootstrap servers")
        guarantee = env.get("EDGE_PROCESSING_GUARANTEE", "at-least-once")
        if guarantee not in ("at-least-once", "exactly-once"):
            raise EdgeConfigError(f"EDGE_PROCESSING_GUARANTEE must be at-least-once or exactly-once, not {guarantee!r}")
        defaults = cls(broker_address=broker)
        hive = tuple(c.strip() for c in env.get("LAKE_HIVE_COLUMNS", ",".join(defaults.hive_columns)).split(",") if c.strip())
        return cls(
            broker_address=broker,
            consumer_group=env.get("Quix__Consumer_Group", defaults.consumer_group),
            input_topic=env.get("EDGE_INPUT_TOPIC", defaults.input_topic),
            processing_guarantee=guarantee,
            commit_interval=_number(env, "EDGE_COMMIT_INTERVAL", defaults.commit_interval, float),
            state_dir=env.get("EDGE_STATE_DIR", defaults.state_dir),
            storage_url=env.get("LAKE_STORAGE_URL", defaults.storage_url),
            prefix=env.get("LAKE_PREFIX", defaults.prefix),
            table=env.get("LAKE_TABLE", defaults.table),
            hive_columns=hive,
            timestamp_column=env.get("LAKE_TIMESTAMP_COLUMN", defaults.timestamp_column),
            kafka_metadata=_flag(env, "LAKE_KAFKA_METADATA", defaults.kafka_metadata),
            stream_timeout_ms=_number(env, "EDGE_STREAM_TIMEOUT_MS", 0, int),
            timeout_topic=env.get("EDGE_TIMEOUT_TOPIC", defaults.timeout_topic),
            auto_offset_reset=env.get("EDGE_AUTO_OFFSET_RESET", defaults.auto_offset_reset),
        )


def _number(env: Mapping[str, str], name: str, default: float, kind: Callable[[str], Any]) -> Any:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise EdgeConfigError(f"{name} must be a {kind.__name__}, not {raw!r}") from None
    if value < 0:
        raise EdgeConfigError(f"{name} must not be negative, got {raw!r}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise EdgeConfigError(f"{name} must be true or false, not {env.get(name)!r}")


def timeout_event(stream: Any, now_ms: int) -> bytes:
    """The side-channel record for a silent key (docs/design.md, silence detection contract)."""
    name = stream.decode("utf-8", errors="replace") if isinstance(stream, bytes) else str(stream)
    return json.dumps({"ts_ms": now_ms, "stream": name, "event": "stream_timeout"}).encode()


def build_app(config: EdgeConfig):
    """Wire the Application: input topic -> data-lake sink (+ silence events to a side topic)."""
    from stream_edge import Application
    from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

    app = Application(
        broker_address=config.broker_address,
        consumer_group=config.consumer_group,
        auto_offset_reset=config.auto_offset_reset,
        commit_interval=config.commit_interval,
        processing_guarantee=config.processing_guarantee,
        state_dir=config.state_dir,
    )
    on_timeout = None
    side_producer = None
    if config.stream_timeout_ms > 0:
        side_producer = app.get_producer()
        timeout_topic = app.topic(config.timeout_topic, key_serializer="bytes", value_serializer="bytes")

        def on_timeout(stream: Any) -> None:
            # Fire-and-forget: a flush here would stall the consumer's heartbeat.
            side_producer.produce(topic=timeout_topic.name, key=stream,
                                  value=timeout_event(stream, int(time.time() * 1000)))

    sink = QuixTSDataLakeSink(
        s3_prefix=config.prefix,
        table_name=config.table,
        workspace_id="",
        hive_columns=list(config.hive_columns),
        timestamp_column=config.timestamp_column,
        storage_url=config.storage_url,
        include_kafka_metadata=config.kafka_metadata,
        stream_timeout_ms=config.stream_timeout_ms or None,
        on_stream_timeout=on_timeout,
    )
    sdf = app.dataframe(topic=app.topic(config.input_topic, value_deserializer="json"))
    sdf.sink(sink)
    return app, side_producer


def pipeline(app: Any) -> None:
    """The data-lake pipeline for ``stream-edge run pipelines.edge_service:pipeline`` (what the
    systemd unit and the Docker image run): ``app`` comes configured from the command's settings;
    the lake and silence settings are read from the same environment as :class:`EdgeConfig`."""
    import atexit

    from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

    env = dict(os.environ)
    env.setdefault("Quix__Broker__Address", str(app.config.broker_address.bootstrap_servers))
    config = EdgeConfig.from_env(env)
    on_timeout = None
    if config.stream_timeout_ms > 0:
        side_producer = app.get_producer()
        atexit.register(side_producer.flush)  # silence events still queued when the service stops
        timeout_topic = app.topic(config.timeout_topic, key_serializer="bytes", value_serializer="bytes")

        def on_timeout(stream: Any) -> None:
            side_producer.produce(topic=timeout_topic.name, key=stream,
                                  value=timeout_event(stream, int(time.time() * 1000)))

    sink = QuixTSDataLakeSink(
        s3_prefix=config.prefix, table_name=config.table, workspace_id="", hive_columns=list(config.hive_columns),
        timestamp_column=config.timestamp_column, storage_url=config.storage_url,
        include_kafka_metadata=config.kafka_metadata, stream_timeout_ms=config.stream_timeout_ms or None,
        on_stream_timeout=on_timeout)
    app.dataframe(topic=app.topic(config.input_topic, value_deserializer="json")).sink(sink)


def main(env: Mapping[str, str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("EDGE_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = EdgeConfig.from_env(env)
    except EdgeConfigError as exc:
        print(f"edge_service: configuration error: {exc}", file=sys.stderr)
        return 2
    logger.info("edge starting: topic=%s group=%s lake=%s/%s/%s guarantee=%s silence=%sms",
                config.input_topic, config.consumer_group, config.storage_url.split("?")[0],
                config.prefix, config.table, config.processing_guarantee, config.stream_timeout_ms)
    app, side_producer = build_app(config)
    if side_producer is not None:
        with side_producer:
            app.run()
    else:
        app.run()
    logger.info("edge stopped cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
