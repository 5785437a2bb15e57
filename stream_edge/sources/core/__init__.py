"""Built-in sources."""

from .csv import CSVSource
from .kafka import KafkaReplicatorSource

__all__ = ("CSVSource", "KafkaReplicatorSource")
