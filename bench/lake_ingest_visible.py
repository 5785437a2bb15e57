"""The finish line and the table of ``bench/lake_ingest.py``: one table shape and one poller for every contender.

Every contender lands the readings in a table of the same REST catalog created by
:func:`create_lake_table`: the same schema (``id, sensor, ts_ms, temp, hum`` and the Hive columns
``year, month, day, hour`` of the event time ``ts_ms`` in UTC, int) and the same partition spec
(identity of the four Hive columns: one partition per hour of event time). It is the shape the
edge's ``DataLakeSink`` registrar gives a table (its files are laid out in Hive folders), so the
other writers are given that shape, not the other way round. :func:`table_shape` reads a table's
columns and spec back, to check every contender wrote to the same shape.

:class:`VisibleClock` is the one finish line: a thread that loads the table through pyiceberg
every ``interval`` seconds (0.25 s by default) and reads ``total-records`` of the current
snapshot's summary. The clock starts when the contender's process is started (Kafka Connect: when
the connector is submitted) and stops at the first poll that sees ``target`` rows: the rows are
visible in the catalog, whatever the contender did to get there. Example::

    clock = VisibleClock(catalog, "ns.table", target=2_000_000).start_clock()
    proc = subprocess.Popen(...)
    clock.wait(timeout=900)   # True once 2M rows are visible
    clock.seconds             # start -> first poll with every row visible
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Tuple

__all__ = ("HIVE", "DATA_COLUMNS", "create_lake_table", "table_shape", "visible_rows", "VisibleClock")

DATA_COLUMNS = ["id", "sensor", "ts_ms", "temp", "hum"]
HIVE = ["year", "month", "day", "hour"]
POLL_INTERVAL = 0.25


def lake_schema() -> Any:
    """The common schema: the readings' fields, then the Hive columns (all optional, as every writer
    here writes them: Spark's ``from_json``, Connect's converter and the edge sinks may see nulls)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

    types = [LongType(), StringType(), LongType(), DoubleType(), DoubleType()] + [IntegerType()] * len(HIVE)
    return Schema(*(NestedField(i + 1, name, ty, required=False)
                    for i, (name, ty) in enumerate(zip(DATA_COLUMNS + HIVE, types))))


def lake_spec(schema: Any) -> Any:
    """Identity of ``year, month, day, hour``: one partition per hour of event time."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    return PartitionSpec(*(PartitionField(schema.find_field(name).field_id, 1000 + i, IdentityTransform(), name)
                           for i, name in enumerate(HIVE)))


def create_lake_table(catalog: Any, table: str) -> None:
    """Create ``table`` (``namespace.name``) with the common schema and spec; the namespace if missing."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    try:
        catalog.create_namespace(table.rsplit(".", 1)[0])
    except NamespaceAlreadyExistsError:
        pass
    schema = lake_schema()
    catalog.create_table(table, schema=schema, partition_spec=lake_spec(schema),
                         properties={"format-version": "2", "write.parquet.compression-codec": "zstd"})


def table_shape(catalog: Any, table: str) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """((column, type) of every column, (source column, transform) of every partition field)."""
    loaded = catalog.load_table(table)
    schema = loaded.schema()
    columns = [(f.name, str(f.field_type)) for f in schema.fields]
    spec = [(schema.find_column_name(f.source_id) or "?", str(f.transform)) for f in loaded.spec().fields]
    return columns, spec


def visible_rows(catalog: Any, table: str) -> int:
    """``total-records`` of the table's current snapshot (0 before the first one)."""
    snap = catalog.load_table(table).current_snapshot()
    if snap is None or snap.summary is None:
        return 0
    return int(snap.summary["total-records"] or 0)


class VisibleClock(threading.Thread):
    """Polls a table's visible row count at a fixed interval; see the module docstring.

    ``started`` is set by :meth:`start_clock`; ``first_visible`` / ``all_visible`` are the wall
    times of the first poll that saw a row / ``target`` rows; ``history`` keeps every change of
    the count as ``(wall time, rows)`` (the kill -9 runs tell late rows from lost ones with it)."""

    def __init__(self, catalog: Any, table: str, target: int, interval: float = POLL_INTERVAL) -> None:
        super().__init__(daemon=True)
        self.catalog, self.table, self.target, self.interval = catalog, table, target, interval
        self.started: Optional[float] = None
        self.first_visible: Optional[float] = None
        self.all_visible: Optional[float] = None
        self.rows = 0
        self.history: List[Tuple[float, int]] = []
        self.errors: List[str] = []
        self._done = threading.Event()
        self._halt = threading.Event()

    def start_clock(self, at: Optional[float] = None) -> "VisibleClock":
        """Start the clock (now, or at ``at``) and the polling thread."""
        self.started = time.time() if at is None else at
        self.start()
        return self

    def poll(self) -> int:
        try:
            rows = visible_rows(self.catalog, self.table)
        except Exception as exc:  # noqa: BLE001 - not created yet (the contender creates it), a hiccup
            if "NoSuchTable" not in type(exc).__name__ and len(self.errors) < 5:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            return self.rows
        now = time.time()
        if rows != self.rows:
            self.history.append((now, rows))
            self.rows = rows
        if rows and self.first_visible is None:
            self.first_visible = now
        if rows >= self.target and self.all_visible is None:
            self.all_visible = now
            self._done.set()
        return rows

    def run(self) -> None:
        while not self._halt.is_set():
            self.poll()
            self._halt.wait(self.interval)

    def wait(self, timeout: float) -> bool:
        """Block until ``target`` rows are visible or ``timeout`` seconds pass; True when visible."""
        return self._done.wait(timeout)

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=30)

    def last_change(self) -> float:
        """Wall time of the last change of the visible count (the clock's start if none yet)."""
        return self.history[-1][0] if self.history else (self.started or time.time())

    @property
    def seconds(self) -> float:
        """Start -> every row visible (0 when they never were)."""
        if self.all_visible is None or self.started is None:
            return 0.0
        return self.all_visible - self.started

    def figures(self) -> Dict[str, Any]:
        return {"seconds": self.seconds, "visible": self.rows,
                "first_visible_s": (self.first_visible - self.started) if self.first_visible and self.started else None,
                "snapshots": len(self.history)}
