"""Read-backs for ``bench/sink_connectors.py``: what each contender wrote, compared by value with
what it was fed.

A contender's figure counts only if, after its timed run (never inside it), reading back the server
finds exactly the records it was fed. Every read-back decodes what landed into rows
``(key, {field: value})`` in the same form as the fed records, so a sink and the hand-written client
are compared by decoded values, not by bytes (a sink may serialize differently: JSON spacing, a
timestamp column's type), and strictly by type (``1`` is not ``True``, ``1`` is not ``1.0``).

Example::

    expected = fed_rows(checkpoints)
    mismatch = compare(expected, postgres_rows(conn, '"bench".sink_append'))
    if mismatch:
        print(f"postgres append: {mismatch}")
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import multiprocessing
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

Row = Tuple[str, Dict[str, Any]]  # (message key, decoded fields): one record as fed or as read back

_EPOCH = dt.datetime(1970, 1, 1)
_MS = dt.timedelta(milliseconds=1)


@dataclass(frozen=True)
class Mismatch:
    """How a contender's output differs from what it was fed."""

    expected: int
    missing: int  # fed, not found (or found with other values)
    unexpected: int  # found, not fed (or a duplicate)
    example: str

    @property
    def differing(self) -> int:
        return max(self.missing, self.unexpected)

    def __str__(self) -> str:
        return (f"{self.differing:,} of {self.expected:,} records differ ({self.missing:,} fed and not found, "
                f"{self.unexpected:,} found and not fed), e.g. {self.example}")


def fed_rows(checkpoints: Iterable[list], timestamps: bool = True) -> List[Row]:
    """The records fed, ``(key, value)`` as rows; with the message timestamp as ``timestamp`` (ms)."""
    return [(key.decode(), {"timestamp": ts, **value} if timestamps else dict(value))
            for checkpoint in checkpoints for key, value, ts in checkpoint]


def last_per_key(rows: Sequence[Row], field: Optional[str] = None) -> List[Row]:
    """What an upsert keeps: the last row per key (the message key, or the value of ``field``)."""
    last: Dict[Any, Row] = {}
    for row in rows:
        last[row[0] if field is None else row[1][field]] = row
    return list(last.values())


def compare(expected: Sequence[Row], landed: Sequence[Row]) -> Optional[Mismatch]:
    """None if ``landed`` holds exactly the rows of ``expected`` (as multisets, in any order).

    >>> fed = [("k0", {"id": 0, "ok": True}), ("k1", {"id": 1, "ok": False})]
    >>> compare(fed, list(reversed(fed))) is None
    True
    >>> print(compare(fed, [("k0", {"id": 0, "ok": 1}), fed[1], fed[1]]))
    2 of 2 records differ (1 fed and not found, 2 found and not fed), e.g. k0: fed {'id': 0, 'ok': True}, \
found {'id': 0, 'ok': 1}
    """
    originals: Dict[Any, Row] = {}
    for row in (*expected, *landed):
        originals.setdefault(_canonical(row), row)
    want, got = Counter(map(_canonical, expected)), Counter(map(_canonical, landed))
    missing, unexpected = want - got, got - want
    if not missing and not unexpected:
        return None
    if missing:
        key, fields = originals[next(iter(missing))]
        found = [originals[c][1] for c in unexpected if c[0] == key]
        example = f"{key}: fed {fields}, " + (f"found {found[0]}" if found else "not found")
    else:
        key, fields = originals[next(iter(unexpected))]
        example = f"{key}: found {fields} {got[_canonical((key, fields))]} time(s), fed {want[_canonical((key, fields))]}"
    return Mismatch(len(expected), sum(missing.values()), sum(unexpected.values()), example)


def _canonical(row: Row) -> Tuple[str, Any]:
    return row[0], _freeze(row[1])


def _freeze(value: Any) -> Any:
    """A hashable form that keeps types apart (``True`` and ``1`` hash alike in Python)."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return type(value).__name__, value


def epoch_ms(timestamp: dt.datetime) -> Any:
    """A naive UTC timestamp as epoch milliseconds (an ``int``; a ``float`` if it is not a whole ms)."""
    whole, rest = divmod(timestamp - _EPOCH, _MS)
    return whole if not rest else (timestamp - _EPOCH) / _MS


# -- one reader per server -------------------------------------------------------------------------

def postgres_rows(conn: Any, table: str) -> List[Row]:
    """The table's rows: ``__key`` and the ``timestamp`` column (TIMESTAMP, UTC) as epoch ms."""
    cursor = conn.execute(f'SELECT "timestamp", __key, id, sensor, reading, ok FROM {table}')
    return [(key, {"timestamp": epoch_ms(ts), "id": id_, "sensor": sensor, "reading": reading, "ok": ok})
            for ts, key, id_, sensor, reading, ok in cursor.fetchall()]


def redis_rows(client: Any) -> List[Row]:
    """Every key of the client's database with its value decoded from JSON."""
    keys = list(client.scan_iter(count=10_000))
    rows: List[Row] = []
    for i in range(0, len(keys), 10_000):
        chunk = keys[i:i + 10_000]
        rows += [(key.decode(), json.loads(value)) for key, value in zip(chunk, client.mget(chunk))]
    return rows


def kinesis_rows(client: Any, stream: str) -> List[Row]:
    """Every record of every shard (from the trim horizon): partition key, data decoded from JSON."""
    rows: List[Row] = []
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"],
                                             ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while iterator:
            out = client.get_records(ShardIterator=iterator, Limit=10_000)
            rows += [(r["PartitionKey"], json.loads(r["Data"])) for r in out["Records"]]
            iterator = out.get("NextShardIterator") if out["Records"] else None
    return rows


def iceberg_rows(table: Any) -> List[Row]:
    """A scan of the table's current snapshot: ``_key``, ``_timestamp`` as epoch ms, the other columns."""
    rows: List[Row] = []
    for record in table.scan().to_arrow().to_pylist():
        key, stamp = record.pop("_key"), record.pop("_timestamp")
        rows.append((key, {"timestamp": epoch_ms(stamp), **record}))
    return rows


def azure_rows(container: Any) -> List[Row]:
    """Every blob of the container, parsed as JSON lines ``{"_timestamp", "_key", "_value"}``."""
    rows: List[Row] = []
    for blob in container.list_blobs():
        data = container.download_blob(blob.name).readall()
        for line in (gzip.decompress(data) if blob.name.endswith(".gz") else data).decode().splitlines():
            if line:
                record = json.loads(line)
                rows.append((record["_key"], {"timestamp": record["_timestamp"], **record["_value"]}))
    return rows


class MqttReadBack:
    """Every message published under ``topic_root``, received by a QoS 1 subscriber that subscribed
    before the publisher starts (untimed set-up). The subscriber runs in a process of its own, so
    receiving does not take the publisher's interpreter lock while the clock runs; the broker's
    work of delivering to it falls on the sink and its limit alike."""

    def __init__(self, host: str, port: int, topic_root: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._prefix = topic_root + "/"
        self._process = context.Process(target=_subscribe, args=(host, port, self._prefix + "#", child),
                                        daemon=True)
        self._process.start()
        child.close()
        answer = self._conn.recv() if self._conn.poll(60) else "no answer in 60 s"
        if answer != "subscribed":
            self._process.kill()
            raise RuntimeError(f"MQTT read-back: could not subscribe to {self._prefix}#: {answer}")

    def rows(self, expected: int, idle: float = 5.0) -> List[Row]:
        """The messages received once ``expected`` arrived (or none came for ``idle`` seconds):
        the topic's suffix (the message key), the payload decoded from JSON."""
        self._conn.send((expected, idle))
        messages = self._conn.recv()
        self._process.join(30)
        return [(topic[len(self._prefix):], json.loads(payload)) for topic, payload in messages]


def _subscribe(host: str, port: int, topic_filter: str, conn: Any) -> None:
    """The subscriber process: subscribe, say so, collect until told how many to expect and they
    came (then 0.5 s more, so a duplicate shows) or nothing came for the idle time, send them."""
    import paho.mqtt.client as mqtt

    received: List[Tuple[str, bytes]] = []
    subscribed = threading.Event()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-readback-{uuid.uuid4().hex[:6]}")
    client.on_connect = lambda c, userdata, flags, reason, props: c.subscribe(topic_filter, qos=1)
    client.on_subscribe = lambda c, userdata, mid, reasons, props: subscribed.set()
    client.on_message = lambda c, userdata, message: received.append((message.topic, message.payload))
    client.connect(host, port)
    client.loop_start()
    try:
        if not subscribed.wait(30):
            conn.send("no SUBACK in 30 s")
            return
        conn.send("subscribed")
        expected, idle = conn.recv()
        count, last = -1, time.monotonic()
        while time.monotonic() - last < (0.5 if len(received) >= expected else idle):
            if len(received) != count:
                count, last = len(received), time.monotonic()
            time.sleep(0.05)
    finally:
        client.disconnect()
        client.loop_stop()
    conn.send(list(received))
