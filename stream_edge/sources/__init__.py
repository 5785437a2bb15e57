"""Sources: produce data from outside Kafka (or another cluster) into the application's topics."""

from .base import BaseSource, Source, SourceException, SourceManager
from .core.csv import CSVSource
from .core.kafka import KafkaReplicatorSource

__all__ = ("BaseSource", "CSVSource", "KafkaReplicatorSource", "Source", "SourceException", "SourceManager")
