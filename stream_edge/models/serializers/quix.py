"""The Quix formats of Quix Streams < 2.0: ``TimeseriesData`` (``ParameterData``) and ``EventData``.

A message is either *legacy* (the model and codec inside the value,
``{"C":"JT","K":"ParameterData","V":{...},"S":34,"E":...}``, where S and E are the byte offsets of
``V`` in the message) or *new* (the value alone, model and codec in the ``__Q_ModelKey`` and
``__Q_CodecId`` headers). ``QuixDeserializer`` reads both and yields one row per timestamp;
``QuixTimeseriesSerializer`` and ``QuixEventsSerializer`` write either (``as_legacy``).

>>> ctx = SerializationContext("t")
>>> data = QuixTimeseriesSerializer()({"a": 1, "Timestamp": 5}, ctx)
>>> data
b'{"C":"JT","K":"ParameterData","V":{"BinaryValues":{},"StringValues":{},"NumericValues":{"a":[1]},"Timestamps":[5],"TagValues":{}},"S":34,"E":129}'
>>> QuixDeserializer()(data, ctx)
[{'a': 1, 'Tags': {}, 'Timestamp': 5}]
"""

from __future__ import annotations

import base64
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import IgnoreMessage, SerializationError
from .json import default_dumps, default_loads

__all__ = ("QuixDeserializer", "QuixTimeseriesSerializer", "QuixEventsSerializer", "QuixSerializer",
           "QModelKey", "QCodecId", "LegacyHeaders")


class QModelKey:
    """Values of the ``__Q_ModelKey`` header (or the legacy ``K`` field)."""

    HEADER_NAME = "__Q_ModelKey"
    TIMESERIESDATA = "TimeseriesData"
    PARAMETERDATA = "ParameterData"
    EVENTDATA = "EventData"
    EVENTDATA_LIST = "EventData[]"
    KEYS_TO_IGNORE = ("StreamProperties", "StreamEnd", "ParameterDefinitions", "EventDefinitions")
    KEYS_TO_PARSE = (TIMESERIESDATA, PARAMETERDATA, EVENTDATA, EVENTDATA_LIST)
    ALLOWED_KEYS = KEYS_TO_PARSE + KEYS_TO_IGNORE


class QCodecId:
    """Values of the ``__Q_CodecId`` header (or the legacy ``C`` field); JSON ones are supported."""

    HEADER_NAME = "__Q_CodecId"
    JSON = "J"
    JSON_TYPED = "JT"
    PROTOBUF = "PB"
    STRING = "S"
    BYTES = "B[]"
    NULL = "null"
    Q_CODECID_ALLOWED = (JSON, JSON_TYPED, PROTOBUF, STRING, BYTES, NULL)
    SUPPORTED_CODECS = (JSON, JSON_TYPED)


class LegacyHeaders:
    """Field names of the legacy envelope."""

    Q_CODEC_ID = "C"
    Q_MODEL_KEY = "K"
    VALUE = "V"
    VALUE_START_IDX = "S"
    VALUE_END_IDX = "E"


_LEGACY_PREFIX = b'{"C":'
_LEGACY_MODEL = b'"K":'


def _header_text(value: Any) -> Any:
    return value.decode() if isinstance(value, (bytes, bytearray)) else value


class QuixDeserializer(Deserializer):
    """Deserialize Quix ``TimeseriesData``/``ParameterData`` and ``EventData`` messages (legacy or with
    headers) into rows; other Quix models (stream properties, definitions, end) are ignored."""

    def __init__(self, loads: Callable[[Union[bytes, bytearray]], Any] = default_loads) -> None:
        super().__init__()
        self._loads = loads

    @property
    def split_values(self) -> bool:
        return True

    def _parse(self, value: bytes) -> Any:
        try:
            return self._loads(value)
        except Exception as exc:  # the parser's message, as in Quix Streams
            raise SerializationError(str(exc)) from exc

    def __call__(self, value: bytes, ctx: SerializationContext) -> List[Dict[str, Any]]:
        data: Any
        if value[:5] == _LEGACY_PREFIX and _LEGACY_MODEL in value:
            envelope = self._parse(value)
            if not isinstance(envelope, Mapping):
                raise SerializationError(f"Expected mapping, got type \"{type(envelope)}\"")
            codec, model = envelope.get(LegacyHeaders.Q_CODEC_ID), envelope.get(LegacyHeaders.Q_MODEL_KEY)
            self._check(codec, model)
            if LegacyHeaders.VALUE not in envelope:
                raise SerializationError(f'legacy Quix message without its "V" field (model "{model}")')
            data = envelope[LegacyHeaders.VALUE]
        else:
            headers = dict(ctx.headers or ())
            codec = _header_text(headers.get(QCodecId.HEADER_NAME))
            model = _header_text(headers.get(QModelKey.HEADER_NAME))
            self._check(codec, model)
            data = self._parse(value)
        if model in (QModelKey.TIMESERIESDATA, QModelKey.PARAMETERDATA):
            return self._timeseries(data)
        if model == QModelKey.EVENTDATA:
            return [self._event(data)]
        return [self._event(item) for item in data]  # EventData[]

    @staticmethod
    def _check(codec: Optional[str], model: Optional[str]) -> None:
        if not codec:
            raise SerializationError(f'"{QCodecId.HEADER_NAME}" header is missing or empty')
        if not model:
            raise SerializationError(f'"{QModelKey.HEADER_NAME}" header is missing or empty')
        if codec not in QCodecId.SUPPORTED_CODECS:
            raise SerializationError(f'Unsupported "{QCodecId.HEADER_NAME}" value "{codec}"')
        if model in QModelKey.KEYS_TO_IGNORE:
            raise IgnoreMessage(f'Ignore Quix message with "{QModelKey.HEADER_NAME}": "{model}"')
        if model not in QModelKey.KEYS_TO_PARSE:
            raise SerializationError(f'Unsupported "{QModelKey.HEADER_NAME}" value "{model}"')

    @staticmethod
    def _timeseries(data: Any) -> List[Dict[str, Any]]:
        if not isinstance(data, Mapping):
            raise SerializationError(f"Expected mapping, got type \"{type(data)}\"")
        if "Timestamps" not in data:
            raise SerializationError('TimeseriesData without its "Timestamps" field')
        timestamps = data["Timestamps"]
        columns: List[tuple] = []
        for group in ("NumericValues", "StringValues", "BinaryValues"):
            for name, values in (data.get(group) or {}).items():
                columns.append((name, values, group == "BinaryValues", group))
        tags = list((data.get("TagValues") or {}).items())
        rows = []
        for i, timestamp in enumerate(timestamps):
            row: Dict[str, Any] = {}
            try:
                for name, values, binary, group in columns:
                    item = values[i]
                    row[name] = base64.b64decode(item) if binary and item is not None else item
                row["Tags"] = {tag: values[i] for tag, values in tags}
            except IndexError:
                raise SerializationError(
                    f"TimeseriesData has {len(timestamps)} timestamps but fewer values in one of its series "
                    f"(row {i})") from None
            row["Timestamp"] = timestamp
            rows.append(row)
        return rows

    @staticmethod
    def _event(data: Any) -> Dict[str, Any]:
        if not isinstance(data, Mapping):
            raise SerializationError(f"Expected mapping, got type \"{type(data)}\"")
        try:
            return {"Timestamp": data["Timestamp"], "Id": data["Id"], "Value": data["Value"], "Tags": data["Tags"]}
        except KeyError as exc:
            raise SerializationError(f"EventData without its {exc} field") from None


class QuixSerializer(Serializer):
    """Base of the Quix serializers: the legacy envelope or the two headers."""

    model_key = ""

    def __init__(self, as_legacy: bool = True, dumps: Callable[[Any], Union[str, bytes]] = default_dumps) -> None:
        self._as_legacy = as_legacy
        self._dumps = dumps
        prefix = f'{{"C":"{QCodecId.JSON_TYPED}","K":"{self.legacy_model_key}","V":'.encode()
        self._prefix, self._start = prefix, len(prefix)

    legacy_model_key = ""

    @property
    def extra_headers(self) -> Mapping[str, Any]:
        if self._as_legacy:
            return {}
        return {QModelKey.HEADER_NAME: self.model_key, QCodecId.HEADER_NAME: QCodecId.JSON_TYPED}

    def _to_json(self, value: Mapping[str, Any]) -> Union[str, bytes]:
        try:
            data = self._dumps(value)
        except (TypeError, ValueError) as exc:
            raise SerializationError(str(exc)) from exc
        if not self._as_legacy:
            return data
        body = data.encode() if isinstance(data, str) else bytes(data)
        return b"%s%s,\"S\":%d,\"E\":%d}" % (self._prefix, body, self._start, self._start + len(body))

    def __call__(self, value: Any, ctx: SerializationContext) -> Union[str, bytes]:
        if not isinstance(value, Mapping):
            raise SerializationError(f"Expected Mapping, got {type(value)}")
        return self._to_json(self._build(value))

    def _build(self, value: Mapping[str, Any]) -> Mapping[str, Any]:  # pragma: no cover - abstract
        raise SerializationError(f"{type(self).__name__} does not define a Quix model")


def _timestamp(value: Mapping[str, Any]) -> Any:
    try:
        return value["Timestamp"]
    except KeyError:
        raise SerializationError("Missing required Quix field: 'Timestamp'") from None


class QuixTimeseriesSerializer(QuixSerializer):
    """Serialize a dict of parameters (``int``/``float``, ``str``, ``bytes``; ``None`` skipped) with its
    ``Timestamp`` and optional ``Tags`` to the Quix ``TimeseriesData`` format (one timestamp)."""

    model_key = QModelKey.TIMESERIESDATA
    legacy_model_key = QModelKey.PARAMETERDATA

    def _build(self, value: Mapping[str, Any]) -> Mapping[str, Any]:
        numeric: Dict[str, List[Any]] = {}
        strings: Dict[str, List[Any]] = {}
        binary: Dict[str, List[Any]] = {}
        tags: Dict[str, List[Any]] = {}
        for key, item in value.items():
            if key == "Tags":
                if not isinstance(item, Mapping):
                    raise SerializationError(f'"Tags" must be a Mapping, got type "{type(item)}"')
                tags = {tag: [tag_value] for tag, tag_value in item.items()}
            elif key == "Timestamp" or item is None:
                continue
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                numeric[key] = [item]
            elif isinstance(item, str):
                strings[key] = [item]
            elif isinstance(item, (bytes, bytearray)):
                binary[key] = [base64.b64encode(item).decode("ascii")]
            else:
                raise SerializationError(f'Item with key "{key}" has unsupported type "{type(item)}"')
        timestamps = [_timestamp(value)] if numeric or strings or binary else []
        return {"BinaryValues": binary, "StringValues": strings, "NumericValues": numeric,
                "Timestamps": timestamps, "TagValues": tags}


class QuixEventsSerializer(QuixSerializer):
    """Serialize ``{"Id": str, "Value": str, "Tags": dict, "Timestamp": ...}`` (other keys ignored) to the
    Quix ``EventData`` format."""

    model_key = QModelKey.EVENTDATA
    legacy_model_key = QModelKey.EVENTDATA

    def _build(self, value: Mapping[str, Any]) -> Mapping[str, Any]:
        event_id, event_value, tags = value.get("Id", ""), value.get("Value", ""), value.get("Tags", {})
        for name, item, kind in (("Id", event_id, str), ("Value", event_value, str), ("Tags", tags, dict)):
            if not isinstance(item, kind):
                raise SerializationError(f'Field "{name}" is expected to be of type "{kind.__name__}", '
                                         f'got {type(item)}')
        return {"Id": event_id, "Value": event_value, "Tags": tags, "Timestamp": _timestamp(value)}
