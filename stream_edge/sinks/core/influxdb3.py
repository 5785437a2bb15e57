"""``InfluxDB3Sink``: processed records as InfluxDB points (Quix Streams 3.x API, ``sinks.core.influxdb3``).

Records are batched per topic partition and written at each checkpoint through InfluxDB's official
Python client, ``influxdb3-python``'s ``InfluxDBClient3`` (extra ``edge-influxdb3``), as Quix does:
the client is built in :meth:`InfluxDB3Sink.setup` from ``self._client_args`` (token, host, org,
database, gzip, TLS verification, and ``write_client_options`` with synchronous writes and the
request timeout). The sink turns each record into a line of line protocol itself (escaping, field
types, time precision: the checks below name the record and the field) and hands the client
``batch_size`` lines per write. A point is identified by measurement, tags and time, so a replay
after a crash rewrites the same points.

Backpressure: HTTP 429 and 503 (``Retry-After`` honoured), other 5xx answers, refused connections and
timeouts raise :class:`SinkBackpressureError`: the partition is paused and replayed. A write rejected
for the retention period logs a warning (or raises with ``raise_on_retention_violation``); any
other 4xx answer stops the application with the server's message.

Example::

    from stream_edge.sinks.core.influxdb3 import InfluxDB3Sink

    sink = InfluxDB3Sink(token="...", host="https://influx:8181", organization_id="org", database="sensors",
                         measurement="readings", tags_keys=["sensor"], fields_keys=["temperature"])
    sdf.sink(sink)
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, List, Literal, Optional, Union

from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import SinkItem
from stream_edge.sinks.base.sink import BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback

try:  # the module imports without the client; constructing the sink then names the extra
    from influxdb_client_3 import InfluxDBClient3, InfluxDBError, WriteOptions
    from influxdb_client_3.write_client.client.write_api import WriteType
except ImportError:  # pragma: no cover - exercised by the import test without the package
    InfluxDBClient3 = None  # type: ignore[assignment,misc]

__all__ = ("InfluxDB3Sink", "InfluxDB3SinkException", "InfluxDB3WriteError")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-influxdb3]"
TimePrecision = Literal["ms", "ns", "us", "s"]
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
InfluxDBValueMap = Dict[str, Union[str, int, float, bool]]
FieldsSetter = Union[Iterable[str], Callable[[InfluxDBValueMap], Iterable[str]]]
MeasurementSetter = Union[str, Callable[[InfluxDBValueMap], str]]
TagsSetter = Union[Iterable[str], Callable[[InfluxDBValueMap], Iterable[str]]]
TimeSetter = Union[str, Callable[[InfluxDBValueMap], Optional[Union[str, int, datetime]]]]


class InfluxDB3SinkException(QuixException):
    """A record the sink cannot write (not a dict, a missing or unsupported field, a bad time)."""


class InfluxDB3WriteError(QuixException):
    """The server rejected a write for good (a 4xx answer other than 429)."""


def _escape(text: str, specials: str) -> str:
    out = text.replace("\\", "\\\\") if "\\" in specials else text
    for char in specials.replace("\\", ""):
        out = out.replace(char, "\\" + char)
    return out.replace("\n", "\\n")


def _field_value(value: Any, ints_to_floats: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(float(value)) if ints_to_floats else f"{value}i"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} is not a number InfluxDB stores")
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"{type(value).__name__} {value!r} is not a str, int, float or bool")


class InfluxDB3Sink(BatchingSink):
    """Writes dict values as InfluxDB points; see the module docstring and Quix's parameters:

    :param token: access token (sent as ``Authorization: Token <token>``).
    :param host: ``http(s)://host[:port]``.
    :param organization_id: organization (sent as ``org``; InfluxDB 3 ignores it).
    :param database: database (bucket) name.
    :param measurement: a name, or ``value -> name``.
    :param fields_keys: field names, or ``value -> names``; empty: every key that is not a tag.
    :param tags_keys: tag names, or ``value -> names`` (values are sent as strings).
    :param time_setter: a column name or ``value -> time`` (``int`` in ``time_precision``, RFC 3339
        ``str`` or ``datetime``; ``None`` means the message timestamp); default the message timestamp.
    :param time_precision: ``"ms"``, ``"ns"``, ``"us"`` or ``"s"``.
    :param allow_missing_fields: skip missing field keys instead of failing.
    :param include_metadata_tags: add the tags ``__key``, ``__topic``, ``__partition``.
    :param convert_ints_to_floats: write integers as floats.
    :param batch_size: lines per request. :param enable_gzip: gzip the request body.
    :param request_timeout_ms: HTTP timeout. :param debug: log every request.
    :param raise_on_retention_violation: fail instead of warning when points are older than the
        database's retention. :param verify_ssl: verify TLS certificates.
    :param backpressure_retry_seconds: pause when the server gives no ``Retry-After`` (edge extension).
    """

    def __init__(self, token: str, host: str, organization_id: str, database: str, measurement: MeasurementSetter,
                 fields_keys: FieldsSetter = (), tags_keys: TagsSetter = (), time_setter: Optional[TimeSetter] = None,
                 time_precision: TimePrecision = "ms", allow_missing_fields: bool = False,
                 include_metadata_tags: bool = False, convert_ints_to_floats: bool = False, batch_size: int = 1000,
                 enable_gzip: bool = True, request_timeout_ms: int = 10_000, debug: bool = False,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
                 raise_on_retention_violation: bool = False, verify_ssl: bool = True,
                 backpressure_retry_seconds: float = 5.0) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        if time_precision not in _PER_SECOND:
            raise ValueError(f"time_precision must be one of {sorted(_PER_SECOND)}, got {time_precision!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not callable(fields_keys) and not callable(tags_keys) and set(fields_keys) & set(tags_keys):
            raise ValueError(f"fields_keys and tags_keys overlap: {sorted(set(fields_keys) & set(tags_keys))}")
        if InfluxDBClient3 is None:
            raise ImportError(f"InfluxDB3Sink needs the 'influxdb3-python' package: {_EXTRA}")
        self._host = host.rstrip("/")
        # what setup() builds the client from (as Quix Streams 3.28 does; tests may patch the class)
        self._client_args: Dict[str, Any] = {
            "token": token,
            "host": self._host,
            "org": organization_id,
            "database": database,
            "debug": debug,
            "enable_gzip": enable_gzip,
            "verify_ssl": verify_ssl,
            "write_client_options": {
                "write_options": WriteOptions(write_type=WriteType.synchronous, timeout=request_timeout_ms),
            },
        }
        self._client: Any = None
        self._measurement = measurement
        self._fields_keys = fields_keys if callable(fields_keys) else tuple(fields_keys)
        self._tags_keys = tags_keys if callable(tags_keys) else tuple(tags_keys)
        self._time_setter = time_setter
        self._precision = time_precision
        self._allow_missing = allow_missing_fields
        self._metadata_tags = include_metadata_tags
        self._ints_to_floats = convert_ints_to_floats
        self._batch_size = batch_size
        self._debug = debug
        self._raise_on_retention = raise_on_retention_violation
        self.backpressure_retry_seconds = backpressure_retry_seconds

    def setup(self) -> None:
        """Build the client and check the server answers (``GET /ping``, which also gives its version)."""
        import urllib3

        self._client = InfluxDBClient3(**self._client_args)
        try:
            version = self._client.get_server_version()
        except InfluxDBError as exc:
            if _status(exc) is not None and _status(exc) < 500:  # type: ignore[operator]
                return  # it answers (e.g. 401 for a token without read access)
            raise ConnectionError(f"InfluxDB at {self._host} did not answer /ping: {_message(exc)}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionError(f"InfluxDB at {self._host} cannot be reached: {exc}") from exc
        if version and not str(version).startswith("3"):
            logger.warning("InfluxDB at %s is version %s; InfluxDB3Sink is made for InfluxDB 3 (its v2 write API "
                           "is compatible)", self._host, version)

    # -- records -> line protocol --------------------------------------------------------------------
    def _line(self, item: SinkItem, batch: SinkBatch) -> Optional[str]:
        where = f"topic '{batch.topic}' partition {batch.partition} offset {item.offset}"
        value = item.value
        if not isinstance(value, dict):
            raise InfluxDB3SinkException(f"InfluxDB3Sink cannot write the value of {where}: it is "
                                         f"{type(value).__name__}, not a dict")
        field = "measurement"
        try:
            measurement = self._measurement(value) if callable(self._measurement) else self._measurement
            field = "tags_keys"
            tag_names = list(self._tags_keys(value) if callable(self._tags_keys) else self._tags_keys)
            tags = {}
            for name in tag_names:
                field = name
                if name in value and value[name] is not None:
                    tags[name] = str(value[name])
            if self._metadata_tags:
                key = item.key.decode(errors="replace") if isinstance(item.key, bytes) else item.key
                tags.update({"__key": str(key), "__topic": batch.topic, "__partition": str(batch.partition)})
            field = "fields_keys"
            names = list(self._fields_keys(value) if callable(self._fields_keys) else self._fields_keys)
            time_column = self._time_setter if isinstance(self._time_setter, str) else None
            if not names:
                names = [k for k in value if k not in tag_names and k != time_column]
            fields = []
            for name in names:
                field = name
                if name not in value:
                    if self._allow_missing:
                        continue
                    raise KeyError(f"the field is missing (allow_missing_fields=True skips it)")
                if value[name] is None:
                    continue
                fields.append(f"{_escape(str(name), ', =')}={_field_value(value[name], self._ints_to_floats)}")
            field = "time"
            timestamp = self._time(value, item.timestamp)
        except Exception as exc:
            raise InfluxDB3SinkException(f"InfluxDB3Sink cannot write field '{field}' of {where}: {exc}") from exc
        if not fields:
            logger.debug("InfluxDB3Sink: %s has no field to write; skipped", where)
            return None
        tag_text = "".join(f",{_escape(k, ', =')}={_escape(v, ', =')}" for k, v in sorted(tags.items()) if v != "")
        return f"{_escape(str(measurement), ', ')}{tag_text} {','.join(fields)} {timestamp}"

    def _time(self, value: Dict[str, Any], kafka_ms: int) -> int:
        setter = self._time_setter
        raw: Any = None
        if isinstance(setter, str):
            raw = value.get(setter)
        elif setter is not None:
            raw = setter(value)
        if raw is None:
            return kafka_ms * _PER_SECOND[self._precision] // 1000
        if isinstance(raw, str):
            raw = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        if isinstance(raw, datetime):
            moment = raw if raw.tzinfo else raw.replace(tzinfo=timezone.utc)
            delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
            micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
            return micros * _PER_SECOND[self._precision] // 1_000_000
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        raise TypeError(f"the time is {type(raw).__name__} {raw!r}, not an int, RFC 3339 str or datetime")

    # -- writing ------------------------------------------------------------------------------------
    def write(self, batch: SinkBatch) -> None:
        """Write the batch, ``batch_size`` lines per write; see the module docstring."""
        if self._client is None:
            self.setup()
        lines = [line for line in (self._line(item, batch) for item in batch) if line is not None]
        for start in range(0, len(lines), self._batch_size):
            self._write_lines(lines[start:start + self._batch_size], batch)

    def _write_lines(self, lines: List[str], batch: SinkBatch) -> None:
        import urllib3

        if self._debug:
            logger.debug("InfluxDB3Sink: writing %d lines of %s[%s]", len(lines), batch.topic, batch.partition)
        try:
            # one payload: the client walks a list record by record (~2x the CPU of the request)
            self._client.write(record="\n".join(lines).encode(), write_precision=self._precision)
        except InfluxDBError as exc:
            status, message = _status(exc), _message(exc)
            if status is None or status == 0 or status == 429 or status >= 500:
                retry_after = self._retry_after(getattr(exc, "retry_after", None))
                self._backpressure(batch, f"HTTP {status}: {message}", retry_after, exc)
            if "retention" in message.lower() and not self._raise_on_retention:
                logger.warning("InfluxDB refused points of %s[%s] outside the retention period: %s", batch.topic,
                               batch.partition, message)
                return
            raise InfluxDB3WriteError(f"InfluxDB rejected the write of topic '{batch.topic}' partition "
                                      f"{batch.partition} offsets {batch.start_offset}-{batch.end_offset}: "
                                      f"HTTP {status}: {message}") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:  # refused, reset, timed out
            self._backpressure(batch, str(exc), self.backpressure_retry_seconds, exc)

    def _retry_after(self, header: Optional[str]) -> float:
        try:
            return max(0.0, float(header)) if header else self.backpressure_retry_seconds
        except ValueError:
            return self.backpressure_retry_seconds

    def _backpressure(self, batch: SinkBatch, reason: str, retry_after: float, cause: BaseException) -> None:
        logger.warning("InfluxDB refused the write of %s[%s] (%s); retrying in %ss", batch.topic, batch.partition,
                       reason, retry_after)
        raise SinkBackpressureError(retry_after, batch.topic, batch.partition) from cause


def _status(exc: BaseException) -> Optional[int]:
    """The HTTP status of a client error (0: no answer, e.g. a TLS failure; None: unknown)."""
    status = getattr(exc, "status", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status", None)
    return status


def _message(exc: BaseException) -> str:
    """The server's message of a client error (its body), cut to 500 characters."""
    body = getattr(exc, "body", None)
    text = body if isinstance(body, str) and body else getattr(exc, "message", None) or str(exc)
    return str(text)[:500]
