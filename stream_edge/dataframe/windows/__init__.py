"""Time windows: tumbling, hopping and sliding, with a pure engine shared with Spark.

Pure modules (no Kafka, no RocksDB): ``math``, ``aggregations``, ``fixed_engine``, ``replay``,
``sliding_engine``. Runtime glue: ``definitions``, ``time_based``, ``sliding``, ``base``.
"""

from .aggregations import (Aggregation, Aggregator, BaseAggregator, BaseCollector, Collect, Collector, Count, Earliest,
                           First, Last, Latest, Max, Mean, Min, Reduce, Sum)
from .base import Window, get_window_ranges
from .count import CountWindow, SessionWindow
from .count_engine import CountWindowEngine
from .session_engine import SessionWindowEngine
from .definitions import (FixedTimeWindowDefinition, HoppingCountWindowDefinition, HoppingTimeWindowDefinition,
                          SessionWindowDefinition, SlidingCountWindowDefinition, SlidingTimeWindowDefinition,
                          TumblingCountWindowDefinition,
                          TumblingTimeWindowDefinition)
from .fixed_engine import FixedWindowEngine
from .sliding import SlidingWindow
from .sliding_engine import SlidingWindowEngine
from .time_based import FixedTimeWindow

__all__ = ("Aggregation", "Aggregator", "BaseAggregator", "BaseCollector", "Collector", "Sum", "Count", "Mean",
           "Min", "Max", "First", "Last", "Earliest", "Latest", "Reduce", "Collect", "Window",
           "get_window_ranges", "FixedTimeWindowDefinition", "TumblingTimeWindowDefinition",
           "HoppingTimeWindowDefinition", "SlidingTimeWindowDefinition", "FixedWindowEngine",
           "SlidingWindowEngine", "FixedTimeWindow", "SlidingWindow", "CountWindow", "CountWindowEngine",
           "TumblingCountWindowDefinition", "HoppingCountWindowDefinition", "SlidingCountWindowDefinition",
           "SessionWindow", "SessionWindowDefinition", "SessionWindowEngine")
