"""Fakes for runtime unit tests (integration tests use the real broker)."""

import pytest

from stream_edge.dataframe import DataframeRegistry, StreamingDataFrame
from stream_edge.models import Topic, TopicConfig
from stream_edge.processing.context import ProcessingContext


class RecordingProducer:
    """Stands in for RowProducer.topic_output: records what would be produced."""

    def __init__(self):
        self.produced = []

    def topic_output(self, topic, key=None):
        from stream_edge.rowproducer import TopicOutput

        def produce(name, value, msg_key, timestamp, headers):
            self.produced.append((name, value, msg_key, timestamp, headers))

        def on_failure(value, msg_key, timestamp, headers, exc, retry):
            raise exc

        return TopicOutput(produce=produce, topic_name=topic.name, value_dumps=None, key_func=key,
                           key_dumps=None, extra_headers=None, on_failure=on_failure)


class FakeTopicManager:
    partitions = 2  # what the broker would say about the input topic: group_by repartitions

    def stream_topic_config(self, stream_id):
        return TopicConfig(num_partitions=self.partitions, replication_factor=1)

    def repartition_topic(self, operation, stream_id, **serializers):
        return Topic(f"repartition__g--{stream_id}--{operation}", value_deserializer="json",
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
