"""Fakes for runtime unit tests (integration tests use the real broker)."""

import pytest

from stream_edge.dataframe import DataframeRegistry, StreamingDataFrame
from stream_edge.models import Topic
from stream_edge.processing.context import ProcessingContext


class RecordingProducer:
    """Stands in for RowProducer.topic_writer: records what would be produced."""

    def __init__(self):
        self.produced = []

    def topic_writer(self, topic, key=None):
        def write(value, msg_key, ts, headers):
            out_key = key(value) if key is not None else msg_key
            self.produced.append((topic.name, value, out_key, ts, headers))
        return write


class FakeTopicManager:
    def repartition_topic(self, operation, topic_name, **serializers):
        return Topic(f"repartition__g--{topic_name}--{operation}", value_deserializer="json",
                     key_deserializer="json", value_serializer="json", key_serializer="json")


@pytest.fixture()
def producer():
    return RecordingProducer()


@pytest.fixture()
def sdf(producer):
    ctx = ProcessingContext(producer=producer)
    registry = DataframeRegistry()
    frame = StreamingDataFrame(Topic("in", value_deserializer="json"), topic_manager=FakeTopicManager(),
                               registry=registry, processing_context=ctx)
    registry.register_root(frame)
    return frame
