"""The demo's edge pipeline: a user pipeline as a data team would write it, run by the demo or by
``stream-edge run pipelines.demo_pipeline:build``.

    raw JSON bytes --parse--> malformed? --> raises: the dead-letter topic gets the record's original
                              |              bytes, the reason and its topic/partition/offset in headers
                                valid ------> + temperature_f, + seq (keyed state: readings per sensor)
                                              |--> data-lake sink (Hive-partitioned Parquet; silent
                                              |    sensors reported to the silence topic)
                                              '--> 1-minute tumbling window per sensor (grace 5 s,
                                                   on the record timestamps, which the devices set):
                                                   mean temperature and count -> windows topic

The quarantine is the application's dead-letter topic (``Application(dead_letter_topic=...)``;
``stream-edge run --dead-letter-topic sensor-quarantine pipelines.demo_pipeline:build``): a
malformed reading raises :class:`MalformedReading` and the runtime dead-letters it (no error
callback is set, so every failing record goes there and the stream goes on).

Settings (environment): ``DEMO_INPUT_TOPIC``, ``DEMO_WINDOWS_TOPIC``, ``EDGE_TIMEOUT_TOPIC`` and
``EDGE_STREAM_TIMEOUT_MS`` (silence), and the lake settings of :mod:`pipelines.edge_service`
(``LAKE_STORAGE_URL``, ``LAKE_PREFIX``, ``LAKE_TABLE``, ...).
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import timedelta
from typing import Any, Mapping, Optional

from stream_edge.processing.observer import RunObserver

WINDOW = timedelta(minutes=1)
GRACE = timedelta(seconds=5)


class MalformedReading(ValueError):
    """A reading the pipeline cannot use; its text is ``"<problem>: <reason>"`` (the problem is a
    short kind, e.g. ``bad temperature``, that the demo's report counts)."""

    def __init__(self, problem: str, reason: str) -> None:
        super().__init__(f"{problem}: {reason}")
        self.problem = problem


def parse_reading(raw: Optional[bytes]) -> dict:
    """A valid reading as a dict; :class:`MalformedReading` naming the field otherwise.

    >>> parse_reading(b'{"sensor": "s1", "ts_ms": 5, "temperature": 20.5, "humidity": 40}')["temperature"]
    20.5
    >>> parse_reading(b'{"sensor": "s1", "ts_ms": 5, "temperature": "n/a"}')
    Traceback (most recent call last):
    ...
    pipelines.demo_pipeline.MalformedReading: bad temperature: field 'temperature': expected a number, got 'n/a'
    """
    text = (raw or b"").decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise MalformedReading("invalid JSON", f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise MalformedReading("not an object", f"expected a JSON object, got {type(value).__name__}")
    for name, kinds, what in (("sensor", (str,), "a string"), ("ts_ms", (int,), "an integer (ms)"),
                              ("temperature", (int, float), "a number")):
        field = value.get(name)
        if field is None:
            raise MalformedReading(f"missing {name}", f"field {name!r} is missing")
        if isinstance(field, bool) or not isinstance(field, kinds):
            raise MalformedReading(f"bad {name}", f"field {name!r}: expected {what}, got {field!r}")
    return value


def _with_sequence(value: dict, state: Any) -> dict:
    """Keyed state: the how-many-th valid reading of this sensor this is."""
    seq = state.get("seen", 0) + 1
    state.set("seen", seq)
    return {**value, "temperature_f": round(value["temperature"] * 9 / 5 + 32, 2), "seq": seq}


class LateReadings:
    """The window's ``on_late`` callback: counts the readings it drops as late, per window, in place
    of one log line each; :meth:`summary` says it in one line (logged once per run by :func:`build`,
    or printed by the demo's report)."""

    def __init__(self) -> None:
        self.by_window: dict = {}  # window start (ms) -> late readings dropped

    def __call__(self, value: Any, key: Any, timestamp_ms: int, late_by_ms: int, start: int, end: int,
                 name: str, topic: Any, partition: Any, offset: Any) -> bool:
        self.by_window[start] = self.by_window.get(start, 0) + 1
        return False  # counted here: no log line per record

    @property
    def total(self) -> int:
        return sum(self.by_window.values())

    def summary(self) -> str:
        """``5 late readings dropped by the 1-minute window, in 4 windows (12:03 x2, 12:05, ...)``.

        >>> late = LateReadings()
        >>> for start in (60_000, 60_000, 180_000):
        ...     _ = late(None, b"s", start + 1, 9_000, start, start + 60_000, "w", "t", 0, 1)
        >>> late.summary()
        '3 late readings dropped by the 1-minute window, in 2 windows (00:01 x2, 00:03)'
        """
        if not self.by_window:
            return "no late readings dropped by the 1-minute window"
        shown = [f"{time.strftime('%H:%M', time.gmtime(start / 1000))}" + (f" x{n}" if n > 1 else "")
                 for start, n in sorted(self.by_window.items())]
        more = f", ... {len(shown) - 8} more" if len(shown) > 8 else ""
        return (f"{self.total} late readings dropped by the 1-minute window, in {len(shown)} windows "
                f"({', '.join(shown[:8])}{more})")


class _SummarizeLate(RunObserver):
    """Logs the late readings' summary once, when the run ends."""

    def __init__(self, late: LateReadings) -> None:
        self.late = late

    def on_stop(self, error: Optional[BaseException]) -> None:
        if self.late.total:
            logging.getLogger("pipelines.demo_pipeline").warning("%s", self.late.summary())


class _CloseWhenStopped(RunObserver):
    """Delivers the silence events still queued and releases the side producer when the run ends."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer

    def on_stop(self, error: Optional[BaseException]) -> None:
        self.producer.close()


def build(app: Any, env: Optional[Mapping[str, str]] = None, late: Optional[LateReadings] = None) -> None:
    """Define the demo pipeline on ``app`` (see the module docstring). The window's late readings
    are counted in ``late`` (a caller that reports them itself passes its own); without it, one
    summary line is logged when the run ends."""
    from pipelines.edge_service import EdgeConfig, timeout_event
    from stream_edge.dataframe.windows import Count, Mean
    from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

    env = dict(os.environ if env is None else env)
    env.setdefault("Quix__Broker__Address", str(app.config.broker_address.bootstrap_servers))
    if app.dead_letter_topic is None:
        raise ValueError("the demo pipeline quarantines malformed readings on the application's dead-letter "
                         "topic: create the Application with dead_letter_topic=... (stream-edge run "
                         "--dead-letter-topic NAME, or STREAM_EDGE_DEAD_LETTER_TOPIC)")
    config = EdgeConfig.from_env(env)
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
    valid = sdf.apply(parse_reading).apply(_with_sequence, stateful=True)
    valid.sink(lake)
    if late is None:
        late = LateReadings()
        app.add_run_observer(_SummarizeLate(late))
    (valid.tumbling_window(WINDOW, grace_ms=GRACE, on_late=late)
          .agg(mean_temperature=Mean("temperature"), readings=Count())
          .final()
          .to_topic(windows))
