"""The registry-backed serializers alone: records/s (thread CPU) of Avro, JSON-schema and Protobuf
serialization and deserialization through a Schema Registry, on two trees.

The registry is the tests' small in-memory one (``tests/compat/serializers/registry_server.py``,
in this process: it answers the first calls, then the serializers' caches do). Each format
writes and reads ``--records`` records (best of 3 rounds):

    PYTHONPATH=. .venv/bin/python bench/registry_serializers.py
    PYTHONPATH=/tmp/before:. .venv/bin/python bench/registry_serializers.py   # an older checkout first
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[1]


def _rate(func: Callable[[Any], Any], items: List[Any]) -> float:
    best = 0.0
    for _ in range(3):
        started = time.thread_time()
        for item in items:
            func(item)
        took = time.thread_time() - started
        best = took if not best or took < best else best
    return len(items) / best


def _reading_type() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="bench_reading.proto", package="bench", syntax="proto3")
    field = descriptor_pb2.FieldDescriptorProto
    message = fdp.message_type.add(name="Reading")
    message.field.add(name="sensor", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    message.field.add(name="temp", number=2, type=field.TYPE_DOUBLE, label=field.LABEL_OPTIONAL)
    message.field.add(name="count", number=3, type=field.TYPE_INT64, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Reading"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "compat" / "serializers"))
    from registry_server import RegistryServer

    from stream_edge.models.serializers import SchemaRegistryClientConfig, SerializationContext
    from stream_edge.models.serializers.avro import AvroDeserializer, AvroSerializer
    from stream_edge.models.serializers.json import JSONDeserializer, JSONSerializer
    from stream_edge.models.serializers.protobuf import ProtobufDeserializer, ProtobufSerializer

    registry = RegistryServer()
    try:
        client = SchemaRegistryClientConfig(url=registry.url)
        ctx = SerializationContext("bench", "value")
        values = [{"sensor": f"s{i % 100}", "temp": i * 0.5, "count": i} for i in range(args.records)]
        avro = {"type": "record", "name": "Reading", "namespace": "bench", "fields": [
            {"name": "sensor", "type": "string"}, {"name": "temp", "type": "double"}, {"name": "count", "type": "long"}]}
        schema = {"title": "Reading", "type": "object", "properties": {
            "sensor": {"type": "string"}, "temp": {"type": "number"}, "count": {"type": "integer"}}}
        reading = _reading_type()
        pairs: Dict[str, Any] = {
            "avro": (AvroSerializer(avro, schema_registry_client_config=client),
                     AvroDeserializer(schema_registry_client_config=client)),
            "json": (JSONSerializer(schema=schema, schema_registry_client_config=client),
                     JSONDeserializer(schema=schema, schema_registry_client_config=client)),
            "protobuf": (ProtobufSerializer(reading, schema_registry_client_config=client),
                         ProtobufDeserializer(reading, schema_registry_client_config=client)),
        }
        for name, (serializer, deserializer) in pairs.items():
            written = [serializer(v, ctx) for v in values]
            write = _rate(lambda v: serializer(v, ctx), values)
            read = _rate(lambda b: deserializer(b, ctx), written)
            print(f"{name:9s} serialize {write:>10,.0f} records/s   deserialize {read:>10,.0f} records/s")
    finally:
        registry.close()


if __name__ == "__main__":
    main()
