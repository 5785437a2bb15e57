"""``InfluxDB3Sink`` under ``sinks.community`` too; Quix Streams 3.28 ships it as
``quixstreams.sinks.core.influxdb3`` (:mod:`stream_edge.sinks.core.influxdb3`), the same class."""

from stream_edge.sinks.core.influxdb3 import InfluxDB3Sink, InfluxDB3SinkException, InfluxDB3WriteError

__all__ = ("InfluxDB3Sink", "InfluxDB3SinkException", "InfluxDB3WriteError")
