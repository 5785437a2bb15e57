"""``InfluxDB3Sink``: processed records as InfluxDB points (Quix Streams 3.x API, ``sinks.core.influxdb3``).

Records are batched per topic partition and written at each checkpoint through InfluxDB's official
Python client, ``influxdb3-python``'s ``InfluxDBClient3`` (extra ``edge-influxdb3``), exactly as Quix
Streams 3.28 hands them to it: the client is built in :meth:`InfluxDB3Sink.setup` from
``self._client_args``, and each chunk of ``batch_size`` records is one
``client.write(record=[{"measurement", "tags", "fields", "time"}, ...], write_precision=...)``; the
client turns the point dicts into line protocol (escaping, field types, time conversion), so the
server receives the same lines from both packages. As in Quix, the tag keys are taken out of the
record's value (``fields`` is what remains, a ``time_setter`` column included, or ``fields_keys``),
``include_metadata_tags`` adds ``__key`` (the record's key as it is), ``__topic`` and
``__partition``, and the client leaves out ``None`` values and non-finite floats. A point is identified by measurement, tags and time, so a
replay after a crash rewrites the same points.

A record the sink cannot write raises the error Quix raises (``TypeError`` for a value that is not a
dict or a time of another type, ``ValueError`` for an integer time of the wrong number of digits or
a field type the client refuses, ``KeyError`` for a missing field or time column), as a subclass of
:class:`InfluxDB3SinkException` whose message ends with the record's topic, partition, offset and
field.

Backpressure: HTTP 429 and other 5xx answers (``Retry-After`` honoured), refused connections and
timeouts raise :class:`SinkBackpressureError`: the partition is paused and replayed. A 422 answer for
points outside the retention policy logs Quix's warning (or raises with
``raise_on_retention_violation``); any other rejection raises :class:`InfluxDB3WriteError`, an
``InfluxDBError`` naming the batch.

Example::

    from stream_edge.sinks.core.influxdb3 import InfluxDB3Sink

    sink = InfluxDB3Sink(token="...", host="https://influx:8181", organization_id="org", database="sensors",
                         measurement="readings", tags_keys=["sensor"], fields_keys=["temperature"])
    sdf.sink(sink)
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Tuple, Union

from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback

try:  # the module imports without the client; constructing the sink then names the extra
    from influxdb_client_3 import InfluxDBClient3, InfluxDBError, WriteOptions
    from influxdb_client_3.write_client.client.write_api import WriteType
except ImportError:  # pragma: no cover - exercised by the import test without the package
    InfluxDBClient3 = None  # type: ignore[assignment,misc]

    class InfluxDBError(Exception):  # type: ignore[no-redef]
        """Stands in for the client's error class when the client is not installed."""

__all__ = ("InfluxDB3Sink", "InfluxDB3SinkException", "InfluxDB3WriteError", "TimePrecision")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-influxdb3]"
TimePrecision = Literal["ms", "ns", "us", "s"]
_PRECISIONS = ("ms", "ns", "us", "s")
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_DIGITS = {"s": 10, "ms": 13, "us": 16, "ns": 19}  # an integer epoch's length in each precision (as Quix checks)
_TIME_TYPES = (str, int, datetime)
InfluxDBValueMap = Dict[str, Union[str, int, float, bool]]
FieldsSetter = Union[Iterable[str], Callable[[InfluxDBValueMap], Iterable[str]]]
MeasurementSetter = Union[str, Callable[[InfluxDBValueMap], str]]
TagsSetter = Union[Iterable[str], Callable[[InfluxDBValueMap], Iterable[str]]]
TimeSetter = Union[str, Callable[[InfluxDBValueMap], Optional[Union[str, int, datetime]]]]


class InfluxDB3SinkException(QuixException):
    """A record the sink cannot write; the subclasses below are also the builtin error Quix raises."""


class InfluxDB3SinkTypeError(InfluxDB3SinkException, TypeError):
    """A value that is not a dict, or a time of another type than ``int``, ``str`` or ``datetime``."""


class InfluxDB3SinkValueError(InfluxDB3SinkException, ValueError):
    """An integer time of the wrong length for ``time_precision``, or a field the client cannot write."""


class InfluxDB3SinkKeyError(InfluxDB3SinkException, KeyError):
    """A field of ``fields_keys`` or the ``time_setter`` column missing from the value."""

    def __str__(self) -> str:  # the message itself, not KeyError's repr of it
        return str(self.args[0]) if self.args else ""


class InfluxDB3WriteError(QuixException, InfluxDBError):
    """The server rejected a write for good (a 4xx answer other than 429): the client's
    ``InfluxDBError`` (its ``response`` kept), its text followed by the batch's topic, partition and
    offsets."""

    def __init__(self, message: str, cause: Optional[BaseException] = None) -> None:
        Exception.__init__(self, message)
        self.message = message
        self.response = getattr(cause, "response", None)  # type: ignore[assignment]
        self.retry_after = getattr(cause, "retry_after", None)


def _record_error(kind: type, text: str, batch_topic: str, partition: int, offset: int, field: str) -> Exception:
    """``kind`` (a subclass above) with Quix's ``text`` followed by where the record is."""
    return kind(f"{text} [InfluxDB3Sink: field '{field}' of topic '{batch_topic}' partition {partition} "
                f"offset {offset}]")


def _field_error(value: Any) -> Optional[str]:
    """The client's complaint about a field value it cannot serialize, or None if it can."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, Decimal) or hasattr(value, "dtype"):  # numpy scalars: the client decides
        return None
    return f'Type: "{type(value)}" of field: "%s" is not supported.'


class InfluxDB3Sink(BatchingSink):
    """Writes dict values as InfluxDB points; see the module docstring and Quix's parameters:

    :param token: access token (sent as ``Authorization: Token <token>``).
    :param host: ``http(s)://host[:port]``.
    :param organization_id: organization (sent as ``org``; InfluxDB 3 ignores it).
    :param database: database (bucket) name.
    :param measurement: a name, or ``value -> name``.
    :param fields_keys: field names, or ``value -> names``; empty: the whole value (tags taken out).
    :param tags_keys: tag names, or ``value -> names`` (taken out of the value; the client sends them
        as strings).
    :param time_setter: a column name or ``value -> time`` (``int`` in ``time_precision``, RFC 3339
        ``str`` or ``datetime``; ``None`` means the message timestamp); default the message timestamp
        (converted to ``time_precision``).
    :param time_precision: ``"ms"``, ``"ns"``, ``"us"`` or ``"s"``.
    :param allow_missing_fields: skip missing field keys instead of failing.
    :param include_metadata_tags: add the tags ``__key``, ``__topic``, ``__partition``.
    :param convert_ints_to_floats: write integers as floats.
    :param batch_size: records per request. :param enable_gzip: gzip the request body.
    :param request_timeout_ms: HTTP timeout. :param debug: the client's debug logs.
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
        if time_precision not in _PRECISIONS:
            raise ValueError(f"Invalid 'time_precision' argument {time_precision}; valid options: {_PRECISIONS}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not callable(fields_keys) and not callable(tags_keys):
            tag_set = set(tags_keys)
            overlap = [key for key in dict.fromkeys(fields_keys) if key in tag_set]
            if overlap:
                raise ValueError(f'Keys {",".join(str(k) for k in overlap)} are present in both "fields_keys" '
                                 f'and "tags_keys"')
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

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples, topic: str, partition: int,
            offset: int) -> None:
        """Add a record to its partition's batch; a value that is not a dict is refused here, as in Quix."""
        if type(value) is not dict:
            error = _not_a_dict(self, value, topic, partition, offset)
            if error is not None:
                raise error
        super().add(value, key, timestamp, headers, topic, partition, offset)

    # -- records -> point dicts -------------------------------------------------------------------
    def _point(self, value: Any, key: Any, kafka_ms: int, offset: int, batch: SinkBatch) -> Dict[str, Any]:
        """The point dict Quix hands the client for one record (its tag keys taken out of ``value``)."""
        if type(value) is not dict:  # a batch filled by SinkBatch.append() rather than add()
            error = _not_a_dict(self, value, batch.topic, batch.partition, offset)
            if error is not None:
                raise error
        measurement = self._measurement(value) if callable(self._measurement) else self._measurement
        tag_names = self._tags_keys(value) if callable(self._tags_keys) else self._tags_keys
        field_names = self._fields_keys(value) if callable(self._fields_keys) else self._fields_keys
        ts = self._time(value, kafka_ms, offset, batch)
        tags = {name: value.pop(name) for name in tag_names if name in value}
        if self._metadata_tags:
            tags["__key"] = key
            tags["__topic"] = batch.topic
            tags["__partition"] = batch.partition
        if field_names:
            fields = {}
            for name in field_names:
                if name in value:
                    fields[name] = value[name]
                elif not self._allow_missing:
                    raise _record_error(InfluxDB3SinkKeyError, repr(name), batch.topic, batch.partition, offset,
                                        name)
        else:
            fields = value
        if self._ints_to_floats:
            fields = {k: float(v) if type(v) is int else v for k, v in fields.items()}
        return {"measurement": measurement, "tags": tags, "fields": fields, "time": ts}

    def _time(self, value: Any, kafka_ms: int, offset: int, batch: SinkBatch) -> Union[int, str, datetime]:
        setter = self._time_setter
        if setter is None:
            ts: Any = None
        elif callable(setter):
            ts = setter(value)
        elif setter in value:
            ts = value[setter]
        else:
            raise _record_error(InfluxDB3SinkKeyError, repr(setter), batch.topic, batch.partition, offset, setter)
        if ts is None:
            ts = kafka_ms if self._precision == "ms" else kafka_ms * _PER_SECOND[self._precision] // 1000
        elif not isinstance(ts, _TIME_TYPES):
            raise _record_error(InfluxDB3SinkTypeError, f'InfluxDB3 "time" field expects: {_TIME_TYPES}, got '
                                f"{type(ts)}", batch.topic, batch.partition, offset, "time")
        if isinstance(ts, int):
            digits, expected = len(str(ts)), _DIGITS[self._precision]
            if digits != expected:
                raise _record_error(InfluxDB3SinkValueError, f'`time_precision` of "{self._precision}" expects a '
                                    f"{expected}-digit integer epoch, got {digits} (timestamp: {ts}).",
                                    batch.topic, batch.partition, offset, "time")
        return ts

    # -- writing ------------------------------------------------------------------------------------
    def write(self, batch: SinkBatch) -> None:
        """Write the batch, one ``client.write(record=[...], write_precision=...)`` per ``batch_size``
        records; see the module docstring."""
        import urllib3

        if self._client is None:
            self.setup()
        for chunk in map(tuple, batch.iter_chunks(n=self._batch_size)):
            points = [self._point(item.value, item.key, item.timestamp, item.offset, batch) for item in chunk]
            low, high = _time_range(points)
            try:
                started = time.monotonic()
                self._client.write(record=points, write_precision=self._precision)
                logger.info(f"Sent data to InfluxDB; total_records={len(points)} min_timestamp={low} "
                            f"max_timestamp={high} time_elapsed={round(time.monotonic() - started, 2)}s")
            except InfluxDBError as exc:
                if self._rejected_for_retention(exc):
                    logger.warning(f"InfluxDB rejected batch (retention policy violation); min_timestamp={low} "
                                   f"max_timestamp={high} topic={batch.topic} partition={batch.partition} "
                                   f"error={exc}")
                    continue
                self._raise_write_error(exc, batch, chunk[0].offset, chunk[-1].offset)
            except (urllib3.exceptions.HTTPError, OSError) as exc:  # refused, reset, timed out
                self._backpressure(batch, str(exc), self.backpressure_retry_seconds, exc)
            except (ValueError, TypeError, OverflowError) as exc:  # the client could not serialize a point
                raise _unwritable_point(points, chunk, batch) or exc

    def _rejected_for_retention(self, exc: BaseException) -> bool:
        """Quix's test: a 422 answer whose text mentions the retention policy (a warning unless
        ``raise_on_retention_violation``)."""
        return _status(exc) == 422 and "retention policy" in str(exc).lower() and not self._raise_on_retention

    def _raise_write_error(self, exc: BaseException, batch: SinkBatch, first: int, last: int) -> None:
        status, message = _status(exc), _message(exc)
        if status is not None and (status == 429 or status >= 500):  # the server is busy or down: pause, retry
            self._backpressure(batch, f"HTTP {status}: {message}",
                               self._retry_after(getattr(exc, "retry_after", None)), exc)
        answer = f", HTTP {status}: {message}" if status else ""
        raise InfluxDB3WriteError(f"{str(exc).rstrip()} [InfluxDB3Sink: the write of topic '{batch.topic}' partition "
                                  f"{batch.partition} offsets {first}-{last} was rejected{answer}]", exc) from exc

    def _retry_after(self, header: Any) -> float:
        try:
            return max(0.0, float(header)) if header else self.backpressure_retry_seconds
        except (TypeError, ValueError):
            return self.backpressure_retry_seconds

    def _backpressure(self, batch: SinkBatch, reason: str, retry_after: float, cause: BaseException) -> None:
        logger.warning("InfluxDB refused the write of %s[%s] (%s); retrying in %ss", batch.topic, batch.partition,
                       reason, retry_after)
        raise SinkBackpressureError(retry_after, batch.topic, batch.partition) from cause


def _not_a_dict(sink: BatchingSink, value: Any, topic: str, partition: int, offset: int) -> Optional[Exception]:
    """Quix's ``TypeError`` for a value that is not a dict (None for a dict)."""
    if isinstance(value, Mapping):
        return None
    return _record_error(InfluxDB3SinkTypeError, f'Sink "{type(sink).__name__}" supports only dictionaries, got '
                         f"{type(value)}", topic, partition, offset, "value")


def _unwritable_point(points: List[Dict[str, Any]], chunk: Tuple[Any, ...], batch: SinkBatch) -> Optional[Exception]:
    """The client refused to serialize a chunk (its error names neither the record nor, for a time, the
    field): the first point it cannot write, as an error naming the record and the field, if found."""
    from influxdb_client_3.write_client.client.util.date_utils import get_date_helper

    for point, item in zip(points, chunk):
        for name, value in point["fields"].items():
            problem = _field_error(value)
            if problem:
                return _record_error(InfluxDB3SinkValueError, problem % name, batch.topic, batch.partition,
                                     item.offset, name)
        if isinstance(point["time"], str):
            try:
                get_date_helper().parse_date(point["time"])
            except (ValueError, OverflowError) as exc:
                return _record_error(InfluxDB3SinkValueError, f"cannot parse the time {point['time']!r}: {exc}",
                                     batch.topic, batch.partition, item.offset, "time")
    return None


def _time_range(points: List[Dict[str, Any]]) -> Tuple[Any, Any]:
    """The least and greatest time of a chunk, for the log lines (None when they do not compare)."""
    try:
        times = [point["time"] for point in points]
        return min(times), max(times)
    except (TypeError, ValueError):
        return None, None


def _status(exc: BaseException) -> Optional[int]:
    """The HTTP status of a client error (0: the client's own refusal, e.g. an unsupported endpoint;
    None: no answer)."""
    status = getattr(exc, "status", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status", None)
    return status if isinstance(status, int) else None


def _message(exc: BaseException) -> str:
    """The server's message of a client error, cut to 500 characters."""
    message = getattr(exc, "message", None)
    if not message:
        body = getattr(exc, "body", None)
        message = body.decode(errors="replace") if isinstance(body, bytes) else body
    return str(message or exc)[:500]
