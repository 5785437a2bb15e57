"""Program fragments shared by the serializer compatibility tests (plain text, run on both sides)."""

# A protobuf message type built at run time (no protoc): package test, messages Reading (with a
# nested Inner) and Other, enum Kind.
PROTO_TYPES = r'''
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

def build_types(file_name="sensor_test.proto", package="test"):
    fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="sensor_id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="temp", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    m.field.add(name="count", number=3, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="kind", number=4, type=F.TYPE_ENUM, type_name=f".{package}.Kind", label=F.LABEL_OPTIONAL)
    m.field.add(name="tags", number=5, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    n = m.nested_type.add(name="Inner")
    n.field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    e = fdp.enum_type.add(name="Kind")
    e.value.add(name="UNKNOWN", number=0)
    e.value.add(name="HOT", number=1)
    o = fdp.message_type.add(name="Other")
    o.field.add(name="y", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
    return get("Reading"), get("Reading.Inner"), get("Other")

Reading, Inner, Other = build_types()
'''

SHOW = r'''
def show(label, func):
    try:
        result = func()
    except Exception as exc:
        print(label, "->", type(exc).__name__, repr(str(exc)))
    else:
        print(label, "=", repr(result))
'''
