"""``QuixTSDataLakeSink``: the data-lake sink with the constructor of the Quix TS DataLake Sink.

A program written for ``quixstreams.sinks.core.quix_ts_datalake_sink`` runs unchanged after
replacing ``quixstreams`` with ``stream_edge``. Storage is chosen with ``storage_url`` (default
``$STREAM_EDGE_STORAGE_URL`` or ``./lake``) instead of Quix Cloud's blob configuration;
``workspace_id`` is accepted and ignored (Quix Cloud specific).

Example::

    sink = QuixTSDataLakeSink(
        s3_prefix="data-lake/time-series", table_name="sensor_readings", workspace_id="",
        hive_columns=["year", "month", "day"], timestamp_column="ts_ms",
        stream_timeout_ms=60_000, on_stream_timeout=on_stream_timeout,
    )
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, List, Optional
from urllib.parse import urlparse

from .datalake import DataLakeSink, RecordTypeError, SchemaConflictError

__all__ = ("QuixTSDataLakeSink", "DataLakeSink", "RecordTypeError", "SchemaConflictError", "silence_chatty_loggers")

# The storage SDKs' per-request HTTP loggers (INFO per blob call), as the Quix TS DataLake Sink lists them.
_CHATTY_HTTP_LOGGERS = ("azure", "azure.core", "azure.core.pipeline.policies.http_logging_policy", "azure.storage",
                        "adlfs", "botocore", "boto3", "s3transfer")


def silence_chatty_loggers() -> None:
    """Raise the storage SDKs' HTTP loggers to WARNING (failures, retries and throttling still show);
    ``setup()`` calls it unless ``silence_azure_http_logs=False``, as the Quix TS DataLake Sink does."""
    for name in _CHATTY_HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


class QuixTSDataLakeSink(DataLakeSink):
    """The contract's constructor (docs/design.md) on top of :class:`DataLakeSink` (extra keyword arguments pass through).

    :param s3_prefix: folder(s) between the storage root and the table.
    :param table_name: the table.
    :param workspace_id: Quix Cloud workspace (accepted for compatibility, not used).
    :param hive_columns: partition columns (``year/month/day/hour`` from ``timestamp_column``).
    :param timestamp_column: epoch-ms field of the records (default ``"ts_ms"``, as in Quix; None: the
        Kafka timestamp).
    :param catalog_url: Iceberg REST catalog URL.
    :param catalog_auth_token: catalog bearer token.
    :param auto_discover: create the catalog table from the discovered schema when registering.
    :param stream_timeout_ms: per-key silence threshold in ms.
    :param on_stream_timeout: ``callback(raw_key)`` fired once per silent key.
    :param silence_azure_http_logs: call :func:`silence_chatty_loggers` in ``setup()`` (default True).
    """

    def __init__(
        self,
        s3_prefix: str,
        table_name: str,
        workspace_id: str = "",
        hive_columns: Optional[List[str]] = None,
        timestamp_column: Optional[str] = "ts_ms",
        catalog_url: Optional[str] = None,
        catalog_auth_token: Optional[str] = None,
        auto_discover: bool = True,
        stream_timeout_ms: Optional[int] = None,
        on_stream_timeout: Optional[Callable[[Any], None]] = None,
        silence_azure_http_logs: bool = True,
        **kwargs: Any,
    ) -> None:
        self.workspace_id = workspace_id
        self._silence_http_logs = silence_azure_http_logs
        self._s3_bucket: Optional[str] = None
        super().__init__(
            table_name=table_name, s3_prefix=s3_prefix, hive_columns=hive_columns,
            timestamp_column=timestamp_column, catalog_url=catalog_url,
            catalog_auth_token=catalog_auth_token, auto_discover=auto_discover,
            stream_timeout_ms=stream_timeout_ms, on_stream_timeout=on_stream_timeout, **kwargs,
        )

    def setup(self) -> None:
        """Open the storage (see :class:`DataLakeSink`); then :func:`silence_chatty_loggers` (after the
        application configured logging, as in Quix) and :attr:`s3_bucket` is known."""
        super().setup()
        if self._silence_http_logs:
            silence_chatty_loggers()
        url = urlparse(self.storage_url)
        if url.scheme == "s3":
            self._s3_bucket = url.netloc
        else:  # a local lake: its root folder holds the tables, as a bucket does
            self._s3_bucket = os.path.abspath(url.path if url.scheme == "file" else self.storage_url)

    @property
    def s3_bucket(self) -> str:
        """The bucket (for a local lake, its root folder) the sink writes to; known after ``setup()``."""
        if self._s3_bucket is None:
            raise RuntimeError("s3_bucket not initialized. Call setup() first.")
        return self._s3_bucket
