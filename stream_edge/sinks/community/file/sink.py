"""``FileSink``: batches of each topic partition to files, in a format, to a destination."""

from __future__ import annotations

import logging
from typing import Optional, Union

from stream_edge.sinks.base import BatchingSink, SinkBackpressureError, SinkBatch

from .destinations import Destination, LocalDestination
from .formats import Format, FormatName, InvalidFormatError, resolve_format

__all__ = ("FileSink", "InvalidFormatError")

logger = logging.getLogger(__name__)


class FileSink(BatchingSink):
    """Writes each checkpoint's batch of a topic partition to one file.

    Files are ``<directory>/<topic>/<partition>/<start offset, 19 digits><extension>``.

    :param directory: base directory (default: current directory).
    :param format: ``"json"``, ``"parquet"`` or a :class:`Format` instance.
    :param destination: where files go (default :class:`LocalDestination`).

    Example::

        sdf.sink(FileSink(directory="out", format="parquet"))
    """

    def __init__(self, directory: str = "", format: Union[FormatName, Format] = "json",  # noqa: A002
                 destination: Optional[Destination] = None) -> None:
        super().__init__()
        self._format = resolve_format(format)
        self._destination = destination or LocalDestination()
        self._destination.set_directory(directory)
        self._destination.set_extension(self._format)

    def write(self, batch: SinkBatch) -> None:
        """Serialize and store the batch; a storage failure becomes 5 s of backpressure.

        Serialization errors (e.g. a non-dict value for Parquet) are raised as they are: retrying
        cannot fix the data.
        """
        data = self._format.serialize(batch)
        try:
            self._destination.write(data, batch)
        except Exception as exc:
            logger.warning("FileSink failed to write %s[%s] from offset %s: %s; retrying in 5 s",
                           batch.topic, batch.partition, batch.start_offset, exc)
            raise SinkBackpressureError(retry_after=5.0, topic=batch.topic, partition=batch.partition) from exc
