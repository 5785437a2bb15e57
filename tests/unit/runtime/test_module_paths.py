"""The Quix Streams 3.x module paths resolve under stream_edge with the documented names."""

import importlib

import pytest

PATHS = {
    "stream_edge": ["Application", "State", "MessageContext", "message_context", "set_message_context"],
    "stream_edge.app": ["Application", "ApplicationConfig"],
    "stream_edge.models": ["Topic", "TopicConfig", "TopicManager", "TopicAdmin", "MessageContext", "Row",
                           "TimestampType", "MessageTimestamp", "JSONSerializer", "JSONDeserializer",
                           "IgnoreMessage", "SerializationContext", "Serializer", "Deserializer"],
    "stream_edge.models.topics": ["Topic", "TopicConfig", "TopicAdmin", "TopicManager"],
    "stream_edge.models.topics.topic": ["Topic", "TopicConfig"],
    "stream_edge.models.topics.admin": ["TopicAdmin"],
    "stream_edge.models.topics.manager": ["TopicManager", "affirm_ready_for_create"],
    "stream_edge.models.topics.utils": ["merge_headers"],
    "stream_edge.models.serializers": ["BytesSerializer", "BytesDeserializer", "StringSerializer",
                                       "StringDeserializer", "IntegerSerializer", "IntegerDeserializer",
                                       "DoubleSerializer", "DoubleDeserializer", "JSONSerializer",
                                       "JSONDeserializer", "IgnoreMessage", "SerializationError"],
    "stream_edge.models.serializers.json": ["JSONSerializer", "JSONDeserializer"],
    "stream_edge.models.serializers.simple_types": ["IntegerSerializer", "DoubleDeserializer"],
    "stream_edge.models.serializers.base": ["Serializer", "Deserializer", "SerializationContext"],
    "stream_edge.models.serializers.exceptions": ["IgnoreMessage", "SerializationError"],
    "stream_edge.models.timestamps": ["TimestampType", "MessageTimestamp"],
    "stream_edge.models.messagecontext": ["MessageContext"],
    "stream_edge.models.messages": ["KafkaMessage"],
    "stream_edge.models.rows": ["Row"],
    "stream_edge.models.types": ["HeadersTuples", "RawConfluentKafkaMessageProto"],
    "stream_edge.kafka": ["Producer", "Consumer", "ConnectionConfig"],
    "stream_edge.kafka.configuration": ["ConnectionConfig"],
    "stream_edge.kafka.producer": ["Producer", "TransactionalProducer"],
    "stream_edge.kafka.consumer": ["BaseConsumer", "Consumer"],
    "stream_edge.dataframe": ["StreamingDataFrame", "StreamingSeries", "DataframeRegistry"],
    "stream_edge.dataframe.dataframe": ["StreamingDataFrame"],
    "stream_edge.dataframe.series": ["StreamingSeries"],
    "stream_edge.dataframe.registry": ["DataframeRegistry"],
    "stream_edge.dataframe.utils": ["ensure_milliseconds"],
    "stream_edge.core.stream": ["Stream", "ApplyFunction", "FilterFunction", "UpdateFunction", "TransformFunction"],
    "stream_edge.core.stream.functions": ["StreamFunction", "ApplyWithMetadataFunction", "pickle_copier"],
    "stream_edge.processing": ["ProcessingContext"],
    "stream_edge.processing.context": ["ProcessingContext"],
    "stream_edge.processing.pausing": ["PausingManager"],
    "stream_edge.checkpointing": ["Checkpoint", "BaseCheckpoint"],
    "stream_edge.checkpointing.checkpoint": ["Checkpoint"],
    "stream_edge.rowconsumer": ["RowConsumer"],
    "stream_edge.rowproducer": ["RowProducer"],
    "stream_edge.error_callbacks": ["ConsumerErrorCallback", "ProcessingErrorCallback", "ProducerErrorCallback"],
    "stream_edge.logging": ["configure_logging", "LogLevel"],
    "stream_edge.context": ["message_context", "set_message_context"],
    "stream_edge.exceptions": ["QuixException"],
    "stream_edge.sources": ["Source", "BaseSource", "CSVSource", "KafkaReplicatorSource", "SourceException"],
    "stream_edge.sources.base": ["Source", "BaseSource"],
    "stream_edge.sources.base.source": ["Source", "BaseSource"],
    "stream_edge.sources.base.manager": ["SourceManager"],
    "stream_edge.sources.core.csv": ["CSVSource"],
    "stream_edge.sources.core.kafka": ["KafkaReplicatorSource"],
    "stream_edge.sources.kafka": ["KafkaReplicatorSource"],
}


@pytest.mark.parametrize("module", sorted(PATHS))
def test_module_exports(module):
    mod = importlib.import_module(module)
    missing = [name for name in PATHS[module] if not hasattr(mod, name)]
    assert not missing, f"{module} lacks {missing}"
