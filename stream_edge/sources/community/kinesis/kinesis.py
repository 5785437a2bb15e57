"""``KinesisSource``: the records of an Amazon Kinesis data stream into a Kafka topic.

A :class:`~stream_edge.sources.base.source.StatefulSource`: its state maps each shard id to the
sequence number of the last record produced from it (the same changelog records Quix Streams
writes: key ``"shardId-..."``, value ``"<sequence number>"``). Every ``commit_interval`` seconds the
producer is flushed and then the positions are committed, so after a crash (even ``kill -9``) the
source resumes each shard right after its last committed record: at-least-once, and nothing is
produced twice unless it was produced after the last commit.

Shards are read round-robin, up to ``max_records_per_shard`` records per ``GetRecords`` call. A
shard without a committed position starts at ``TRIM_HORIZON`` (``auto_offset_reset="earliest"``) or
``LATEST``. Throttling and network errors pause that shard for ``retry_backoff_secs``; an expired
iterator is renewed from the last position; closed shards (after a reshard) are read to their end.

Messages: key = the record's partition key (``str``), value = its data (``bytes``), timestamp =
its approximate arrival time (ms). The default topic is ``kinesis_<stream name>``.

Needs the ``edge-kinesis`` extra (``pip install streaming-lakehouse[edge-kinesis]``).
"""

from __future__ import annotations

import logging
import time
from os import getenv
from typing import Any, Dict, List, Literal, Optional

from stream_edge.models.topics import Topic
from stream_edge.sources.base.source import (ClientConnectFailureCallback, ClientConnectSuccessCallback,
                                             StatefulSource)

__all__ = ("KinesisSource", "KinesisStreamNotFoundError")

logger = logging.getLogger("stream_edge")

_EXTRA = "pip install streaming-lakehouse[edge-kinesis]"
_SHARD_REFRESH_SECONDS = 30.0
_IDLE_SLEEP = 0.25  # pause of a round that read nothing from any shard
_RETRYABLE = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "LimitExceededException",
                        "InternalFailure", "ServiceUnavailable", "KMSThrottlingException"})


class KinesisStreamNotFoundError(Exception):
    """Raised when the specified Kinesis stream does not exist."""


def _boto3() -> Any:
    try:
        import boto3
    except ImportError as exc:
        raise ImportError(f"KinesisSource needs the 'boto3' package: {_EXTRA}") from exc
    return boto3


class _Shard:
    """Reading position of one shard."""

    __slots__ = ("shard_id", "iterator", "closed", "paused_until")

    def __init__(self, shard_id: str) -> None:
        self.shard_id = shard_id
        self.iterator: Optional[str] = None
        self.closed = False
        self.paused_until = 0.0


class KinesisSource(StatefulSource):
    """Read a Kinesis stream and produce each record to a topic (at-least-once).

    :param stream_name: the Kinesis stream to read.
    :param aws_region: default ``AWS_REGION``.
    :param aws_access_key_id: default ``AWS_ACCESS_KEY_ID``.
    :param aws_secret_access_key: default ``AWS_SECRET_ACCESS_KEY``.
    :param aws_endpoint_url: default ``AWS_ENDPOINT_URL_KINESIS`` (a local Kinesis, e.g. moto).
    :param shutdown_timeout: seconds the application waits for the source to stop.
    :param auto_offset_reset: where a shard without a committed position starts: ``"earliest"``
        or ``"latest"``.
    :param max_records_per_shard: records per ``GetRecords`` call (per shard and round).
    :param commit_interval: seconds between commits of the shard positions.
    :param retry_backoff_secs: pause of a shard after a throttling or network error.
    :param on_client_connect_success: called after the stream was found.
    :param on_client_connect_failure: called with the exception when it was not.

    Example::

        source = KinesisSource("readings", aws_region="eu-west-1", auto_offset_reset="earliest")
        sdf = app.dataframe(source=source)
    """

    def __init__(
        self,
        stream_name: str,
        aws_region: Optional[str] = getenv("AWS_REGION"),
        aws_access_key_id: Optional[str] = getenv("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key: Optional[str] = getenv("AWS_SECRET_ACCESS_KEY"),
        aws_endpoint_url: Optional[str] = getenv("AWS_ENDPOINT_URL_KINESIS"),
        shutdown_timeout: float = 10,
        auto_offset_reset: Literal["earliest", "latest"] = "latest",
        max_records_per_shard: int = 1000,
        commit_interval: float = 5.0,
        retry_backoff_secs: float = 5.0,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
    ) -> None:
        _boto3()  # fail early, in the application's process, when the extra is missing
        if auto_offset_reset not in ("earliest", "latest"):
            raise ValueError(f"auto_offset_reset must be 'earliest' or 'latest', got {auto_offset_reset!r}")
        if not 1 <= int(max_records_per_shard) <= 10000:
            raise ValueError(f"max_records_per_shard must be 1..10000, got {max_records_per_shard!r}")
        self._stream_name = stream_name
        self._client_kwargs = {"region_name": aws_region, "aws_access_key_id": aws_access_key_id,
                               "aws_secret_access_key": aws_secret_access_key, "endpoint_url": aws_endpoint_url}
        self._auto_offset_reset = auto_offset_reset
        self._max_records = int(max_records_per_shard)
        self._commit_interval = float(commit_interval)
        self._retry_backoff = float(retry_backoff_secs)
        self._client: Any = None
        self._shards: Dict[str, _Shard] = {}
        super().__init__(name=f"kinesis_{stream_name}", shutdown_timeout=shutdown_timeout,
                         on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)

    def default_topic(self) -> Topic:
        """``kinesis_<stream>``: string keys (partition keys), bytes values (record data)."""
        return Topic(name=self.name, key_serializer="str", value_serializer="bytes",
                     key_deserializer="str", value_deserializer="bytes")

    def setup(self) -> None:
        """Create the client and check the stream exists."""
        self._client = _boto3().client("kinesis", **self._client_kwargs)
        try:
            self._client.describe_stream_summary(StreamName=self._stream_name)
        except self._client.exceptions.ResourceNotFoundException as exc:
            raise KinesisStreamNotFoundError(f"Kinesis stream {self._stream_name!r} does not exist") from exc

    # -- running ----------------------------------------------------------------------------------
    def run(self) -> None:
        """Read every shard round-robin, producing records; commit positions every interval."""
        if self._client is None:
            self.setup()
        next_commit = time.monotonic() + self._commit_interval
        next_refresh = 0.0
        while self.running:
            now = time.monotonic()
            if now >= next_refresh:
                self._refresh_shards()
                next_refresh = now + _SHARD_REFRESH_SECONDS
            produced = 0
            for shard in list(self._shards.values()):
                if not self.running:
                    break
                produced += self._read_shard(shard)
            if time.monotonic() >= next_commit:
                self.flush()
                next_commit = time.monotonic() + self._commit_interval
            if not produced:
                time.sleep(_IDLE_SLEEP)
        self.flush()

    def _refresh_shards(self) -> None:
        """Add shards the stream has now (after a reshard) to the round-robin."""
        shards: List[Dict[str, Any]] = []
        kwargs: Dict[str, Any] = {"StreamName": self._stream_name}
        while True:
            page = self._client.list_shards(**kwargs)
            shards.extend(page.get("Shards", []))
            token = page.get("NextToken")
            if not token:
                break
            kwargs = {"NextToken": token}
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._shards:
                self._shards[shard_id] = _Shard(shard_id)

    def _iterator(self, shard: _Shard) -> Optional[str]:
        position = self.state.get(shard.shard_id)
        kwargs: Dict[str, Any] = {"StreamName": self._stream_name, "ShardId": shard.shard_id}
        if position is not None:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=str(position))
        else:
            kwargs["ShardIteratorType"] = "TRIM_HORIZON" if self._auto_offset_reset == "earliest" else "LATEST"
        return self._client.get_shard_iterator(**kwargs)["ShardIterator"]

    def _read_shard(self, shard: _Shard) -> int:
        """One ``GetRecords`` call on the shard; returns the number of records produced."""
        if shard.closed or time.monotonic() < shard.paused_until:
            return 0
        from botocore import exceptions as errors

        try:
            if shard.iterator is None:
                shard.iterator = self._iterator(shard)
            response = self._client.get_records(ShardIterator=shard.iterator, Limit=self._max_records)
        except errors.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ExpiredIteratorException":
                shard.iterator = None  # renewed from the last position on the next round
                return 0
            if code not in _RETRYABLE:
                raise
            self._back_off(shard, exc)
            return 0
        except (errors.ConnectionError, errors.HTTPClientError) as exc:
            self._back_off(shard, exc)
            return 0
        records = response.get("Records", [])
        for record in records:
            arrival = record.get("ApproximateArrivalTimestamp")
            timestamp = int(arrival.timestamp() * 1000) if arrival is not None else None
            msg = self.serialize(key=record["PartitionKey"], value=record["Data"], timestamp_ms=timestamp)
            self.produce(key=msg.key, value=msg.value, timestamp=msg.timestamp)
            self.state.set(shard.shard_id, record["SequenceNumber"])
        shard.iterator = response.get("NextShardIterator")
        if shard.iterator is None:
            shard.closed = True
            logger.info("Kinesis source %s: shard %s is closed and fully read", self.name, shard.shard_id)
        return len(records)

    def _back_off(self, shard: _Shard, exc: BaseException) -> None:
        logger.warning("Kinesis source %s: shard %s: %s; retrying in %ss", self.name, shard.shard_id, exc,
                       self._retry_backoff)
        shard.paused_until = time.monotonic() + self._retry_backoff
