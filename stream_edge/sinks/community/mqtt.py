"""``MQTTSink``: processed records published to an MQTT broker (Quix Streams 3.x API).

Every record is published as it arrives, to ``<topic_root>/<serialized key>``; at each checkpoint
``flush(topic, partition)`` waits until the broker acknowledged every message of that partition
(QoS 1; with QoS 0, until each was written to the socket). A broker that does not acknowledge
within ``mqtt_flush_timeout_seconds``, or a publish the client could not queue, raises
:class:`MqttPublishAckTimeout` / :class:`MqttPublishEnqueueFailed`, both
:class:`SinkBackpressureError`: the partition pauses and is replayed, so nothing is lost (a
replayed message may be delivered twice: MQTT QoS 1 is at-least-once).

Needs the ``edge-mqtt`` extra (``pip install streaming-lakehouse[edge-mqtt]``); this module imports
without it.

Example::

    from stream_edge.sinks.community.mqtt import MQTTSink

    sink = MQTTSink(client_id="edge-1", server="127.0.0.1", port=1883, topic_root="sensors",
                    tls_enabled=False)
    sdf.sink(sink)     # publishes sensors/<key> with the JSON of the value
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable, Dict, Literal, Optional, Set, Tuple, Union

from stream_edge.errors import OutageError
from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import BaseSink, ClientConnectFailureCallback, ClientConnectSuccessCallback

__all__ = ("MQTTSink", "MQTTSinkException", "MqttBrokerUnavailable", "MqttPublishAckTimeout", "MqttPublishEnqueueFailed")

logger = logging.getLogger(__name__)

ProtocolVersion = Literal["3.1", "3.1.1", "5"]
MqttPropertiesHandler = Union[Any, Callable[[Any], Any]]
RetainHandler = Union[bool, Callable[[Any], bool]]

_EXTRA = "pip install streaming-lakehouse[edge-mqtt]"
_BACKPRESSURE_RETRY_SECONDS = 5.0


class MQTTSinkException(QuixException):
    """A record the sink cannot publish (its key or value does not serialize)."""


class MqttBrokerUnavailable(OutageError):
    """The MQTT broker refused the session (e.g. bad credentials) or could not be reached: an
    outage (``stream_edge.is_outage``), retried with backoff, never a record's error. A
    ``ConnectionError``, as Quix Streams 3.28.1 raises."""


class MqttPublishAckTimeout(SinkBackpressureError):
    """The broker did not acknowledge a partition's messages in time (backpressure)."""


class MqttPublishEnqueueFailed(SinkBackpressureError):
    """The client could not queue a message (disconnected with QoS 0, or its queue is full)."""


def _paho() -> Any:
    try:
        import paho.mqtt.client as mqtt
    except ImportError as exc:
        raise ImportError(f"MQTTSink needs the 'paho-mqtt' package: {_EXTRA}") from exc
    return mqtt


class MQTTSink(BaseSink):
    """Publishes each record to ``<topic_root>/<key_serializer(key)>`` with
    ``value_serializer(value)`` as payload.

    :param client_id: MQTT client identifier. :param server: broker address. :param port: port.
    :param topic_root: prefix of every MQTT topic.
    :param username: optional user name. :param password: optional password.
    :param version: protocol version, ``"3.1"``, ``"3.1.1"`` (default) or ``"5"``.
    :param tls_enabled: connect with TLS (default True, as in Quix Streams).
    :param key_serializer: message key -> topic suffix (default ``bytes.decode``).
    :param value_serializer: value -> payload (default ``json.dumps``).
    :param qos: 0 or 1.
    :param mqtt_flush_timeout_seconds: how long a flush waits for acknowledgements.
    :param retain: retain flag, or a callable ``value -> bool``.
    :param properties: MQTT 5 ``Properties``, or a callable ``value -> Properties``.
    :param on_client_connect_success: called once the broker accepted the connection.
    :param on_client_connect_failure: called with the exception when it did not.
    """

    def __init__(
        self,
        client_id: str,
        server: str,
        port: int,
        topic_root: str,
        username: Optional[str] = None,
        password: Optional[str] = None,
        version: ProtocolVersion = "3.1.1",
        tls_enabled: bool = True,
        key_serializer: Callable[[Any], str] = bytes.decode,
        value_serializer: Callable[[Any], str] = json.dumps,
        qos: Literal[0, 1] = 1,
        mqtt_flush_timeout_seconds: int = 10,
        retain: RetainHandler = False,
        properties: Optional[MqttPropertiesHandler] = None,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        mqtt = _paho()
        if qos == 2:
            raise ValueError("MQTT QoS level 2 is currently not supported.")
        if qos not in (0, 1):
            raise ValueError(f"Invalid MQTT QoS level {qos!r}; use 0 or 1")
        protocols = {"3.1": mqtt.MQTTv31, "3.1.1": mqtt.MQTTv311, "5": mqtt.MQTTv5}
        if version not in protocols:
            raise ValueError(f"Invalid MQTT version {version!r}; use one of {list(protocols)}")
        if properties and version != "5":
            raise ValueError("MQTT Properties can only be used with MQTT protocol version 5")
        self._server, self._port = server, port
        self._topic_root = topic_root
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._qos = qos
        self._flush_timeout = mqtt_flush_timeout_seconds
        self._retain: Callable[[Any], bool] = retain if callable(retain) else _constant(bool(retain))
        self._properties: Optional[Callable[[Any], Any]] = (
            None if not properties else properties if callable(properties) else _constant(properties))
        # Keyword arguments as Quix Streams 3.28 passes them (tests that patch paho's Client see the same calls).
        self._client = mqtt.Client(callback_api_version=mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                                   userdata=None, protocol=protocols[version])
        if username:
            self._client.username_pw_set(username, password)
        if tls_enabled:
            self._client.tls_set()
        self._client.reconnect_delay_set(5, 60)
        # Enough messages in flight to keep a loopback or LAN broker busy (paho's default is 20).
        self._client.max_inflight_messages_set(1000)
        self._client.on_publish = self._on_publish
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        # Acknowledged message ids not yet matched to a partition (an ack can beat publish()'s
        # return), and ids of forgotten messages whose late acks must not count for a reused id.
        self._lock = threading.Condition()
        self._acked: Set[int] = set()
        self._ignored: Set[int] = set()
        self._pending: Dict[Tuple[str, int], Set[int]] = {}
        self._failed: Dict[Tuple[str, int], str] = {}
        self._connect_error: Optional[str] = None
        self._answered = threading.Event()  # the broker answered a CONNECT (accepted or refused)
        self._started = False
        self.backpressure_retry_seconds = _BACKPRESSURE_RETRY_SECONDS
        self.published = 0

    # -- paho callbacks (network thread) ---------------------------------------------------------
    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        self._connect_error = str(reason_code) if reason_code.is_failure else None
        self._answered.set()

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        if reason_code.is_failure:
            logger.warning("MQTT broker %s:%s disconnected (%s); reconnecting", self._server, self._port, reason_code)

    def _on_publish(self, client: Any, userdata: Any, mid: int, reason_code: Any, properties: Any) -> None:
        with self._lock:
            if mid in self._ignored:
                self._ignored.discard(mid)
            else:
                self._acked.add(mid)
            self._lock.notify_all()

    # -- sink API ----------------------------------------------------------------------------------
    def setup(self) -> None:
        """Connect and start the network thread (returns without waiting for the broker's answer,
        as Quix Streams 3.28.1 does).

        A server that cannot be reached raises what the socket raises (``ConnectionRefusedError``,
        ``socket.gaierror``, ...), as in 3.28.1. A broker that refuses the session (e.g. bad
        credentials) answers on paho's network thread: the next ``add()`` or ``flush()`` raises
        :class:`MqttBrokerUnavailable` (a ``ConnectionError``) naming the reason, an outage the
        runtime retries with backoff (3.28.1 raises it on that thread, where nothing sees it).
        """
        self._client.connect(self._server, self._port)
        self._client.loop_start()
        self._started = True

    def _raise_if_refused(self) -> None:
        if self._connect_error is not None:
            self._reopen()

    def _reopen(self) -> None:
        """The broker refused the session (or did not answer): an outage, no record's fault.

        The first call closes the refused session and raises :class:`MqttBrokerUnavailable` (the
        runtime pauses the partition and retries after a backoff); the next one, the retry,
        connects again and waits for the broker's answer (up to ``mqtt_flush_timeout_seconds``),
        raising again while it refuses."""
        service = f"MQTT broker {self._server}:{self._port}"
        if self._started:
            refused = self._connect_error
            self._cleanup()
            raise MqttBrokerUnavailable(service, f"refused the session ({refused})")
        self._answered.clear()
        self._connect_error = None
        try:
            self._client.connect(self._server, self._port)
        except OSError as exc:
            self._connect_error = f"{type(exc).__name__}: {exc}"
            raise MqttBrokerUnavailable(service, self._connect_error) from exc
        self._client.loop_start()
        self._started = True
        if not self._answered.wait(self._flush_timeout):
            self._connect_error = f"no answer within {self._flush_timeout}s"
        refused = self._connect_error
        if refused is not None:
            self._cleanup()
            raise MqttBrokerUnavailable(service, f"refused the session ({refused})")
        logger.info("%s accepted the session again", service)

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Publish one record now; its acknowledgement is awaited by :meth:`flush`.

        A record whose key or value does not serialize raises :class:`MQTTSinkException` naming it
        (the connection stays up for the next records); a client that fails to publish is stopped
        and disconnected, then its error raised, as in 3.28.1."""
        self._raise_if_refused()
        field = "key"
        try:
            mqtt_topic = f"{self._topic_root}/{self._key_serializer(key)}"
            field = "value"
            payload = self._value_serializer(value)
        except Exception as exc:
            raise MQTTSinkException(f"MQTTSink cannot serialize the {field} of topic '{topic}' partition "
                                    f"{partition} offset {offset}: {exc}") from exc
        props = self._properties(value) if self._properties is not None else None
        # Never hold self._lock across publish(): paho may call on_publish under its own locks.
        try:
            info = self._client.publish(mqtt_topic, payload=payload, qos=self._qos, properties=props,
                                        retain=self._retain(value))
        except Exception:
            self._cleanup()
            raise
        rc = info.rc
        with self._lock:
            if rc == 0 or (rc == _paho().MQTT_ERR_NO_CONN and self._qos > 0):  # queued for (re)send
                if info.mid in self._acked:
                    self._acked.discard(info.mid)
                else:
                    self._pending.setdefault((topic, partition), set()).add(info.mid)
                self.published += 1
            else:
                self._failed.setdefault((topic, partition), f"publish of offset {offset} failed: "
                                                            f"{_paho().error_string(rc)}")

    def flush(self, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        """Wait for the partition's acknowledgements; backpressure if they do not all come in time
        (``flush()``: every partition's, as Quix Streams 3.28.1 does)."""
        self._raise_if_refused()
        if topic is None or partition is None:
            for where in list(dict.fromkeys([*self._pending, *self._failed])):
                self.flush(*where)
            return
        key = (topic, partition)
        failed = self._failed.pop(key, None)
        if failed is not None:
            self._pending.pop(key, None)
            logger.warning("MQTT %s[%s]: %s; retrying in %ss", topic, partition, failed, self.backpressure_retry_seconds)
            raise MqttPublishEnqueueFailed(self.backpressure_retry_seconds, topic, partition)
        deadline = time.monotonic() + self._flush_timeout
        with self._lock:
            mids = self._pending.get(key)
            while mids:
                done = mids & self._acked
                mids -= done
                self._acked -= done
                if not mids:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    self._pending.pop(key, None)
                    self._ignored |= mids
                    logger.warning("MQTT acknowledgement timeout of %ss reached for %s[%s] (%d unacknowledged); "
                                   "retrying in %ss", self._flush_timeout, topic, partition, len(mids),
                                   self.backpressure_retry_seconds)
                    raise MqttPublishAckTimeout(self.backpressure_retry_seconds, topic, partition)
                self._lock.wait(min(left, 0.5))
            self._pending.pop(key, None)

    def on_paused(self, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        """The partition will be replayed: forget its outstanding messages (without arguments:
        every partition's)."""
        if topic is None or partition is None:
            for where in list(dict.fromkeys([*self._pending, *self._failed])):
                self._forget(*where)
            return
        self._forget(topic, partition)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: forget its outstanding messages."""
        self._forget(topic, partition)

    def _forget(self, topic: str, partition: int) -> None:
        with self._lock:
            mids = self._pending.pop((topic, partition), set())
            done = mids & self._acked
            self._acked -= done
            self._ignored |= mids - done
            self._failed.pop((topic, partition), None)

    def cleanup(self) -> None:
        """Stop the network thread and disconnect (idempotent)."""
        if self._started:
            self._started = False
            self._cleanup()

    def _cleanup(self) -> None:
        """``loop_stop()`` then ``disconnect()``, Quix Streams 3.28.1's order and name."""
        self._started = False
        self._client.loop_stop()
        self._client.disconnect()


def _constant(result: Any) -> Callable[[Any], Any]:
    """A handler returning ``result`` whatever the value."""

    def handler(value: Any) -> Any:
        return result

    return handler
