"""The data-lake sink: Hive-partitioned Parquet, exactly-once commits, optional Iceberg registration."""

from .records import RecordTypeError, SchemaConflictError
from .sink import DataLakeSink

__all__ = ("DataLakeSink", "RecordTypeError", "SchemaConflictError")
