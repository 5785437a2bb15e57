"""``KinesisSink``: processed records into an Amazon Kinesis data stream (Quix Streams 3.x API).

Each record becomes one Kinesis record: ``PartitionKey = key_serializer(key)`` (default
``bytes.decode``) and ``Data = value_serializer(value)`` (default ``json.dumps``). Records are
buffered per topic partition; a buffer of 500 records (the ``PutRecords`` limit) is sent at once in
a background thread, the rest at the checkpoint, whose ``flush`` waits for every send of the
partition. Offsets are committed only after Kinesis accepted every record, so a crash replays the
checkpoint: at-least-once (a replay may write a record twice).

Records Kinesis refuses for now (``ProvisionedThroughputExceededException``, internal failures, a
server that does not answer in time) are retried ``max_put_attempts`` times with a growing pause,
then the partition gets :class:`SinkBackpressureError` and is replayed later.

Needs the ``edge-kinesis`` extra (``pip install streaming-lakehouse[edge-kinesis]``); this module
imports without it.

Example::

    from stream_edge.sinks.community.kinesis import KinesisSink

    sink = KinesisSink(stream_name="readings", region_name="eu-west-1")
    sdf.sink(sink)
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from os import getenv
from typing import Any, Callable, Dict, List, Optional, Tuple

from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import BaseSink, ClientConnectFailureCallback, ClientConnectSuccessCallback

__all__ = ("KinesisSink", "KinesisStreamNotFoundError", "KinesisSinkException")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-kinesis]"
_MAX_RECORDS = 500  # PutRecords: at most 500 records ...
_MAX_BYTES = 5 * 1024 * 1024  # ... and 5 MiB per request
_MAX_RECORD_BYTES = 1024 * 1024  # data + partition key of one record
# Error codes that mean "not now": the records are sent again.
_TRANSIENT_CODES = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "LimitExceededException",
    "InternalFailure", "InternalFailureException", "ServiceUnavailable", "ServiceUnavailableException",
    "KMSThrottlingException", "RequestTimeout", "RequestTimeoutException", "SlowDown",
})

Entry = Dict[str, Any]
PartitionKey = Tuple[str, int]


class KinesisStreamNotFoundError(Exception):
    """Raised when the specified Kinesis stream does not exist."""


class KinesisSinkException(QuixException):
    """A record the sink cannot write (its key or value does not serialize, or it is too large)."""


def _boto3() -> Any:
    try:
        import boto3
    except ImportError as exc:
        raise ImportError(f"KinesisSink needs the 'boto3' package: {_EXTRA}") from exc
    return boto3


def _transient(exc: BaseException) -> bool:
    """Whether a botocore error means Kinesis cannot take the records now."""
    from botocore import exceptions as errors

    if isinstance(exc, (errors.ConnectionError, errors.HTTPClientError)):
        return True  # refused, reset, timed out (EndpointConnectionError, ReadTimeoutError, ...)
    if isinstance(exc, errors.ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _TRANSIENT_CODES or status >= 500 or status == 429
    return False


class _Backpressure(Exception):
    """Internal: a send gave up on records Kinesis kept refusing."""


class KinesisSink(BaseSink):
    """Writes every record to a Kinesis stream with ``PutRecords``.

    :param stream_name: Kinesis stream name.
    :param aws_access_key_id: default ``AWS_ACCESS_KEY_ID``.
    :param aws_secret_access_key: default ``AWS_SECRET_ACCESS_KEY``.
    :param region_name: default ``AWS_REGION`` or ``AWS_DEFAULT_REGION``.
    :param aws_endpoint_url: default ``AWS_ENDPOINT_URL_KINESIS`` (a local Kinesis, e.g. moto).
    :param value_serializer: value -> ``str`` (or ``bytes``); default ``json.dumps``.
    :param key_serializer: key -> ``str``, the partition key; default ``bytes.decode``.
    :param on_client_connect_success: called after the stream was found.
    :param on_client_connect_failure: called with the exception when it was not.
    :param max_put_attempts: attempts per refused record before backpressure (edge extension).
    :param backpressure_retry_seconds: pause before a refused partition is replayed (edge extension).
    :param kwargs: more arguments for ``boto3.client("kinesis", ...)``; ``config`` may be a
        ``botocore.config.Config`` or a dict of its arguments (timeouts, retries).
    """

    def __init__(
        self,
        stream_name: str,
        aws_access_key_id: Optional[str] = getenv("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key: Optional[str] = getenv("AWS_SECRET_ACCESS_KEY"),
        region_name: Optional[str] = getenv("AWS_REGION", getenv("AWS_DEFAULT_REGION")),
        aws_endpoint_url: Optional[str] = getenv("AWS_ENDPOINT_URL_KINESIS"),
        value_serializer: Callable[[Any], str] = json.dumps,
        key_serializer: Callable[[Any], str] = bytes.decode,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
        max_put_attempts: int = 4,
        backpressure_retry_seconds: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        boto3 = _boto3()
        if isinstance(kwargs.get("config"), dict):  # e.g. {"read_timeout": 5, "retries": {"max_attempts": 1}}
            from botocore.config import Config

            kwargs["config"] = Config(**kwargs["config"])
        self._stream_name = stream_name
        self._client = boto3.client("kinesis", aws_access_key_id=aws_access_key_id,
                                    aws_secret_access_key=aws_secret_access_key, region_name=region_name,
                                    endpoint_url=aws_endpoint_url, **kwargs)
        self._value_serializer = value_serializer
        self._key_serializer = key_serializer
        self._max_put_attempts = max(1, int(max_put_attempts))
        self.backpressure_retry_seconds = backpressure_retry_seconds
        self._buffers: Dict[PartitionKey, List[Entry]] = {}
        self._sizes: Dict[PartitionKey, int] = {}
        self._futures: Dict[PartitionKey, List[Future]] = {}
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None

    # -- sink API ----------------------------------------------------------------------------------
    def setup(self) -> None:
        """Check the stream exists (``DescribeStreamSummary``)."""
        try:
            self._client.describe_stream_summary(StreamName=self._stream_name)
        except self._client.exceptions.ResourceNotFoundException as exc:
            raise KinesisStreamNotFoundError(f"Kinesis stream {self._stream_name!r} does not exist") from exc

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Buffer one record; a full buffer (500 records or 5 MiB) is sent in the background."""
        entry = self._entry(value, key, topic, partition, offset)
        size = len(entry["Data"]) + len(entry["PartitionKey"].encode())
        where = (topic, partition)
        buffer = self._buffers.setdefault(where, [])
        if buffer and self._sizes.get(where, 0) + size > _MAX_BYTES:
            self._send_buffer(where)
            buffer = self._buffers.setdefault(where, [])
        buffer.append(entry)
        self._sizes[where] = self._sizes.get(where, 0) + size
        if len(buffer) >= _MAX_RECORDS:
            self._send_buffer(where)

    def flush(self, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        """Send the partition's remaining records and wait for all its sends (``flush()``: every
        partition's, as Quix Streams 3.28.1 does).

        Raises :class:`SinkBackpressureError` when Kinesis kept refusing some of them.
        """
        if topic is None or partition is None:
            for where in list(dict.fromkeys([*self._buffers, *self._futures])):
                self.flush(*where)
            return
        where = (topic, partition)
        if self._buffers.get(where):
            self._send_buffer(where)
        futures = self._futures.pop(where, [])
        refused: Optional[BaseException] = None
        for future in futures:
            try:
                future.result()
            except _Backpressure as exc:
                refused = refused or exc
        if refused is not None:
            logger.warning("Kinesis refused records of %s[%s] (%s); retrying in %ss", topic, partition,
                           refused, self.backpressure_retry_seconds)
            raise SinkBackpressureError(self.backpressure_retry_seconds, topic, partition) from refused

    def on_paused(self, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        """The partition will be replayed: drop what is buffered (sends under way still finish);
        without arguments, for every partition."""
        if topic is None or partition is None:
            for where in list(dict.fromkeys([*self._buffers, *self._futures])):
                self._forget(*where)
            return
        self._forget(topic, partition)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: drop what is buffered for it."""
        self._forget(topic, partition)

    def cleanup(self) -> None:
        """Stop the sender thread (waiting for sends under way)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    # -- internals ---------------------------------------------------------------------------------
    def _forget(self, topic: str, partition: int) -> None:
        self._buffers.pop((topic, partition), None)
        self._sizes.pop((topic, partition), None)
        for future in self._futures.pop((topic, partition), []):
            future.cancel()

    def _entry(self, value: Any, key: Any, topic: str, partition: int, offset: int) -> Entry:
        field = "key"
        try:
            partition_key = self._key_serializer(key)
            if not isinstance(partition_key, str) or not 1 <= len(partition_key) <= 256:
                raise ValueError(f"the partition key must be a str of 1 to 256 characters, got "
                                 f"{type(partition_key).__name__} {partition_key!r}")
            field = "value"
            data: Any = self._value_serializer(value)
            if isinstance(data, str):
                data = data.encode()
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"value_serializer returned {type(data).__name__}, not str or bytes")
            if len(data) + len(partition_key.encode()) > _MAX_RECORD_BYTES:
                raise ValueError(f"the record is {len(data)} bytes; Kinesis takes at most 1 MiB")
        except Exception as exc:
            raise KinesisSinkException(f"KinesisSink cannot write the {field} of topic '{topic}' partition "
                                       f"{partition} offset {offset}: {exc}") from exc
        return {"Data": bytes(data), "PartitionKey": partition_key}

    def _send_buffer(self, where: PartitionKey) -> None:
        records = self._buffers.pop(where, [])
        self._sizes.pop(where, None)
        if not records:
            return
        if self._executor is None:
            # One thread: a partition's requests go out in order.
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kinesis-sink")
        self._futures.setdefault(where, []).append(self._executor.submit(self._put, records))

    def _put(self, records: List[Entry]) -> None:
        """``PutRecords`` with retries of the refused records; raises ``_Backpressure`` at the end."""
        pending = records
        last_error = ""
        for attempt in range(self._max_put_attempts):
            if attempt:
                time.sleep(min(0.2 * 2 ** attempt, 2.0))
            try:
                response = self._client.put_records(StreamName=self._stream_name, Records=pending)
            except Exception as exc:  # noqa: BLE001 - sorted into transient / fatal below
                if not _transient(exc):
                    raise
                last_error = str(exc)
                continue
            if not response.get("FailedRecordCount"):
                return
            failed = [(entry, result) for entry, result in zip(pending, response["Records"])
                      if result.get("ErrorCode")]
            fatal = [result for _, result in failed if result["ErrorCode"] not in _TRANSIENT_CODES]
            if fatal:
                raise RuntimeError(f"Kinesis rejected a record: {fatal[0]['ErrorCode']}: "
                                   f"{fatal[0].get('ErrorMessage', '')}")
            pending = [entry for entry, _ in failed]
            last_error = f"{len(pending)} record(s) refused: {failed[0][1]['ErrorCode']}"
        raise _Backpressure(last_error)
