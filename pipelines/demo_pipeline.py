"""The demo's edge pipeline: a user pipeline as a data team would write it, run by the demo or by
``stream-edge run pipelines.demo_pipeline:build``.

    raw JSON bytes --inspect--> malformed? --> quarantine topic (the record, the field, the reason)
                                valid ------> + temperature_f, + seq (keyed state: readings per sensor)
                                              |--> data-lake sink (Hive-partitioned Parquet; silent
                                              |    sensors reported to the silence topic)
                                              '--> 1-minute tumbling window per sensor (grace 5 s,
                                                   on the record timestamps, which the devices set):
                                                   mean temperature and count -> windows topic

Settings (environment): ``DEMO_INPUT_TOPIC``, ``DEMO_QUARANTINE_TOPIC``, ``DEMO_WINDOWS_TOPIC``,
``EDGE_TIMEOUT_TOPIC`` and ``EDGE_STREAM_TIMEOUT_MS`` (silence), and the lake settings of
:mod:`pipelines.edge_service` (``LAKE_STORAGE_URL``, ``LAKE_PREFIX``, ``LAKE_TABLE``, ...).
"""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from typing import Any, Mapping, Optional

from stream_edge.processing.observer import RunObserver

WINDOW = timedelta(minutes=1)
GRACE = timedelta(seconds=5)


def inspect_reading(raw: Optional[bytes]) -> dict:
    """A valid reading as a dict, or ``{"_quarantine": reason, "raw": text}`` naming the field.

    >>> inspect_reading(b'{"sensor": "s1", "ts_ms": 5, "temperature": 20.5, "humidity": 40}')["temperature"]
    20.5
    >>> inspect_reading(b'{"sensor": "s1", "ts_ms": 5, "temperature": "n/a"}')["_quarantine"]
    "field 'temperature': expected a number, got 'n/a'"
    """
    text = (raw or b"").decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError as exc:
        return {"_quarantine": f"not valid JSON: {exc}", "problem": "invalid JSON", "raw": text}
    if not isinstance(value, dict):
        return {"_quarantine": f"expected a JSON object, got {type(value).__name__}", "problem": "not an object",
                "raw": text}
    for name, kinds, what in (("sensor", (str,), "a string"), ("ts_ms", (int,), "an integer (ms)"),
                              ("temperature", (int, float), "a number")):
        field = value.get(name)
        if field is None:
            return {"_quarantine": f"field {name!r} is missing", "problem": f"missing {name}", "raw": text}
        if isinstance(field, bool) or not isinstance(field, kinds):
            return {"_quarantine": f"field {name!r}: expected {what}, got {field!r}", "problem": f"bad {name}",
                    "raw": text}
    return value


def _with_sequence(value: dict, state: Any) -> dict:
    """Keyed state: the how-many-th valid reading of this sensor this is."""
    seq = state.get("seen", 0) + 1
    state.set("seen", seq)
    return {**value, "temperature_f": round(value["temperature"] * 9 / 5 + 32, 2), "seq": seq}


def _quarantine_record(value: dict) -> dict:
    from stream_edge import message_context

    ctx = message_context()
    return {"error": value["_quarantine"], "problem": value["problem"], "raw": value["raw"], "topic": ctx.topic, "partition": ctx.partition,
            "offset": ctx.offset}


class _CloseWhenStopped(RunObserver):
    """Delivers the silence events still queued and releases the side producer when the run ends."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer

    def on_stop(self, error: Optional[BaseException]) -> None:
        self.producer.close()


def build(app: Any, env: Optional[Mapping[str, str]] = None) -> None:
    """Define the demo pipeline on ``app`` (see the module docstring)."""
    from pipelines.edge_service import EdgeConfig, timeout_event
    from stream_edge.dataframe.windows import Count, Mean
    from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

    env = dict(os.environ if env is None else env)
    env.setdefault("Quix__Broker__Address", str(app.config.broker_address.bootstrap_servers))
    config = EdgeConfig.from_env(env)
    quarantine = app.topic(env.get("DEMO_QUARANTINE_TOPIC", "sensor-quarantine"), value_serializer="json")
    windows = app.topic(env.get("DEMO_WINDOWS_TOPIC", "temperature-1m"), value_serializer="json")

    on_timeout = None
    if config.stream_timeout_ms > 0:
        side = app.get_producer()
        silence_topic = app.topic(config.timeout_topic, key_serializer="bytes", value_serializer="bytes")

        def on_timeout(stream: Any) -> None:
            side.produce(topic=silence_topic.name, key=stream, value=timeout_event(stream, int(time.time() * 1000)))
            side.poll(0)

        app.add_run_observer(_CloseWhenStopped(side))

    lake = QuixTSDataLakeSink(
        s3_prefix=config.prefix, table_name=config.table, workspace_id="", hive_columns=list(config.hive_columns),
        timestamp_column=config.timestamp_column, storage_url=config.storage_url,
        include_kafka_metadata=config.kafka_metadata, stream_timeout_ms=config.stream_timeout_ms or None,
        on_stream_timeout=on_timeout)

    sdf = app.dataframe(app.topic(config.input_topic, value_deserializer="bytes"))
    checked = sdf.apply(inspect_reading)
    checked.filter(lambda v: "_quarantine" in v).apply(_quarantine_record).to_topic(quarantine)
    valid = checked.filter(lambda v: "_quarantine" not in v).apply(_with_sequence, stateful=True)
    valid.sink(lake)
    (valid.tumbling_window(WINDOW, grace_ms=GRACE)
          .agg(mean_temperature=Mean("temperature"), readings=Count())
          .final()
          .to_topic(windows))
