"""Sources: produce data from outside Kafka (or another cluster) into the application's topics."""

from .base import (BaseSource, ClientConnectFailureCallback, ClientConnectSuccessCallback, Source,
                   SourceException, SourceManager, StatefulSource, multiprocessing)
from .core.csv import CSVSource
from .core.kafka import KafkaReplicatorSource

__all__ = ("BaseSource", "ClientConnectSuccessCallback", "ClientConnectFailureCallback", "CSVSource",
           "KafkaReplicatorSource", "multiprocessing", "Source", "SourceException", "SourceManager",
           "StatefulSource")
