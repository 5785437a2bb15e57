"""FileSource: produce the records of files (JSON lines or Parquet, optionally gzip) to a topic.

Subclasses say where files come from (:class:`~.local.LocalFileSource`,
:class:`~.s3.S3FileSource`): ``get_file_list()`` (every file under a path, in lexicographic order,
folders walked in place), ``read_file()`` and ``file_partition_counter()``. Each record's key,
value and timestamp come from the setters (default: the FileSink fields ``_key``, ``_value``,
``_timestamp``); the producer is flushed after each file (at-least-once). With ``replay_speed`` the
time between records follows their timestamps (``1.0``: original speed, ``0``: no delay), counted
per partition folder.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Optional, Tuple, Union

from stream_edge.models.topics import Topic, TopicConfig
from stream_edge.sources.base.source import (ClientConnectFailureCallback, ClientConnectSuccessCallback,
                                             Source)

from .compressions import CompressionName
from .formats import FORMATS, Format, FormatName

__all__ = ("FileSource", "RecordFieldError")

logger = logging.getLogger("stream_edge")
_MAX_SLEEP = 0.5  # replay sleeps in slices, so stop() is honoured promptly


class RecordFieldError(KeyError):
    """A record lacks a field a default setter reads; names the file, the record and the field."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _field_getter(field: str, setter: str) -> Callable[[object], object]:
    def get(record: object) -> object:
        try:
            return record[field]  # type: ignore[index]
        except (KeyError, TypeError, IndexError):
            raise RecordFieldError(f"the record has no field '{field}' (pass {setter}= to read it "
                                   f"from elsewhere)") from None
    return get


class FileSource(Source):
    """Read every file under ``filepath`` and produce each record as a message.

    Example::

        source = LocalFileSource("lake/readings", file_format="json", compression="gzip", replay_speed=0)
        sdf = app.dataframe(source=source)
    """

    _clock: Callable[[], float] = staticmethod(time.monotonic)
    _sleep: Callable[[float], None] = staticmethod(time.sleep)

    def __init__(self, filepath: Union[str, Path], key_setter: Optional[Callable[[object], object]] = None,
                 value_setter: Optional[Callable[[object], object]] = None,
                 timestamp_setter: Optional[Callable[[object], int]] = None,
                 file_format: Union[Format, FormatName] = "json", compression: Optional[CompressionName] = None,
                 has_partition_folders: bool = False, replay_speed: float = 1.0, name: Optional[str] = None,
                 shutdown_timeout: float = 30,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        if not isinstance(replay_speed, (int, float)) or replay_speed < 0:
            raise ValueError(f"replay_speed must be a number >= 0, got {replay_speed!r}")
        self._filepath = Path(filepath)
        self._key_setter = key_setter or _field_getter("_key", "key_setter")
        self._value_setter = value_setter or _field_getter("_value", "value_setter")
        self._timestamp_setter = timestamp_setter or _field_getter("_timestamp", "timestamp_setter")
        self._format = self._resolve_format(file_format, compression)
        self._has_partition_folders = has_partition_folders
        self._replay_speed = float(replay_speed)
        self._replay_anchor: Optional[Tuple[Path, float, int]] = None  # (folder, clock, timestamp)
        super().__init__(name=name or f"file_{self._filepath.name}", shutdown_timeout=shutdown_timeout,
                         on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)

    @staticmethod
    def _resolve_format(file_format: Union[Format, str], compression: Optional[CompressionName]) -> Format:
        if isinstance(file_format, Format):
            return file_format
        try:
            return FORMATS[file_format](compression=compression)
        except KeyError:
            raise ValueError(f"unknown file_format {file_format!r}: use one of {sorted(FORMATS)} "
                             f"or a Format instance") from None

    # -- what subclasses provide ------------------------------------------------------------------
    @abstractmethod
    def get_file_list(self, filepath: Path) -> Iterable[Path]:
        """Every file under ``filepath`` (or the file itself), in processing order."""

    @abstractmethod
    def read_file(self, filepath: Path) -> BinaryIO:
        """An open binary stream of one file (as stored: still compressed)."""

    @abstractmethod
    def file_partition_counter(self) -> int:
        """How many partition folders ``filepath`` holds (used with ``has_partition_folders``)."""

    # -- running ----------------------------------------------------------------------------------
    def default_topic(self) -> Topic:
        """A topic named after the source; with ``has_partition_folders``, one partition per folder."""
        topic = super().default_topic()
        if self._has_partition_folders:
            topic.create_config = TopicConfig(num_partitions=self.file_partition_counter() or 1,
                                              replication_factor=1)
        return topic

    def run(self) -> None:
        for path in self.get_file_list(self._filepath):
            if not self.running:
                return
            logger.info("file source %s: reading %s", self.name, path)
            stream = self.read_file(path)
            try:
                for number, record in enumerate(self._format.read(stream), start=1):
                    if not self.running:
                        return
                    try:
                        self._produce_record(record, path)
                    except RecordFieldError as exc:
                        raise RecordFieldError(f"{path}, record {number}: {exc}") from None
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from exc
            finally:
                stream.close()
            self.flush()

    def process_record(self, record: object) -> None:
        """Apply the replay delay, serialize the record and produce it."""
        self._produce_record(record, None)

    def _produce_record(self, record: object, path: Optional[Path]) -> None:
        key = self._key_setter(record)
        value = self._value_setter(record)
        timestamp: Optional[int] = self._timestamp_setter(record)  # type: ignore[assignment]
        if self._replay_speed > 0 and timestamp is not None:
            self._replay_delay(int(timestamp), path.parent if path is not None else None)
        msg = self.serialize(key=key, value=value, timestamp_ms=timestamp)
        self.produce(key=msg.key, value=msg.value, timestamp=timestamp)

    def _replay_delay(self, timestamp: int, folder: Optional[Path]) -> None:
        """Sleep so records leave ``replay_speed`` times as far apart as their timestamps
        (measured from the first record of the current partition folder)."""
        now = self._clock()
        anchor = self._replay_anchor
        if anchor is None or anchor[0] != folder or timestamp < anchor[2]:
            self._replay_anchor = (folder, now, timestamp)  # type: ignore[assignment]
            return
        due = anchor[1] + (timestamp - anchor[2]) / 1000.0 * self._replay_speed
        while self.running and now < due:
            self._sleep(min(_MAX_SLEEP, due - now))
            now = self._clock()
