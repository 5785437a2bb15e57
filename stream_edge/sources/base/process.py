"""SourceProcess: one source running in its own process, as Quix Streams runs sources.

The child process builds its own producer (and, for a StatefulSource, recovers the source's state
from its changelog topic), calls ``configure()``, ``setup()`` and ``start()``, flushes and exits.
SIGTERM/SIGINT call the source's ``stop()``. If ``start()`` raises, the error is logged ("Error in
source"), sent to the application through a pipe and the process ends (exit code 0); the
application raises :class:`SourceException` from it. If the application's process dies (even by
SIGKILL), the source's process exits at once, without flushing: a StatefulSource then resumes
from its last ``flush()``.

The start method is ``fork`` where the platform has it (sources may then hold lambdas or be defined
in a function), else ``spawn`` (the source must be picklable, as in Quix Streams); the environment
variable ``STREAM_EDGE_SOURCE_START_METHOD`` (``fork``/``spawn``/``forkserver``) overrides it.
"""

from __future__ import annotations

import copy
import logging
import multiprocessing as _mp
import os
import signal
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import Any, Dict, Optional

from stream_edge.app_config import DEFAULT_CONSUMER_GROUP
from stream_edge.models.topics import Topic

__all__ = ("SourceProcess", "SourceSettings", "source_context")

logger = logging.getLogger("stream_edge")
START_METHOD_ENV = "STREAM_EDGE_SOURCE_START_METHOD"
PARENT_CHECK_SECONDS = 0.5


def source_context() -> BaseContext:
    """The multiprocessing context sources start with (see the module docstring)."""
    method = os.environ.get(START_METHOD_ENV) or ("fork" if "fork" in _mp.get_all_start_methods() else "spawn")
    if method not in _mp.get_all_start_methods():
        raise ValueError(f"{START_METHOD_ENV}={method!r} is not a start method of this platform "
                         f"(one of {_mp.get_all_start_methods()})")
    return _mp.get_context(method)


@dataclass
class SourceSettings:
    """What a source's process needs from the Application to build its clients."""

    broker_address: Any
    consumer_group: str = DEFAULT_CONSUMER_GROUP  # names a StatefulSource's changelog topic
    producer_extra_config: Dict[str, Any] = field(default_factory=dict)
    consumer_extra_config: Dict[str, Any] = field(default_factory=dict)
    on_producer_error: Any = None
    recovery_timeout: float = 60.0
    loglevel: Any = "INFO"


def _picklable_topic(topic: Topic) -> Topic:
    """A copy without the manager's broker-config loader (a closure) for the spawn method."""
    clone = copy.copy(topic)
    if hasattr(clone, "broker_config_loader"):
        clone.broker_config_loader = None
    return clone


def _watch_parent(parent_pid: int) -> None:
    """Exit at once when the application's process is gone (killed, crashed)."""
    parent = _mp.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    while True:
        if sentinel is not None:
            from multiprocessing.connection import wait

            if wait([sentinel], timeout=PARENT_CHECK_SECONDS):
                break
        else:
            threading.Event().wait(PARENT_CHECK_SECONDS)
        if os.getppid() != parent_pid:
            break
    os._exit(70)


def _send_error(conn: Connection, exc: BaseException) -> None:
    try:
        conn.send(exc)
    except Exception:  # noqa: BLE001 - an exception that does not pickle travels as its text
        # str(exc), as Quix Streams 3.28 sends it: e.g. confluent-kafka's KafkaException arrives as
        # RuntimeError('KafkaError{code=_TRANSPORT,...}')
        conn.send(RuntimeError(str(exc)))


def _run_source(source: Any, topic: Topic, settings: SourceSettings, changelog_topic: Optional[str],
                parent_pid: int, conn: Connection) -> None:
    """The source's process: build clients, recover state, run, flush; report a failure."""
    from stream_edge.kafka.configuration import connection_dict
    from stream_edge.logging import configure_logging
    from stream_edge.rowproducer import RowProducer

    from .source import StatefulSource
    from .state import SourceStore

    configure_logging(settings.loglevel)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="source-parent-watch", daemon=True).start()

    def on_signal(signum: int, frame: Any) -> None:
        source.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        producer = RowProducer(settings.broker_address, extra_config=settings.producer_extra_config,
                               on_error=settings.on_producer_error)
        if isinstance(source, StatefulSource):
            store = SourceStore(changelog_topic, partition=source.assigned_store_partition)
            store.recover({**settings.consumer_extra_config, **connection_dict(settings.broker_address)},
                          timeout=settings.recovery_timeout)
            source.configure(topic, producer, store_partition=store)
        else:
            source.configure(topic, producer)
        source.init_client()
        source.start()
        producer.flush()
    except BaseException as exc:  # noqa: BLE001 - reported to the application
        # a second stop request (the application asks, then stops) must not interrupt the report:
        # its stop() raising again here would end the process with exit code 1 and no error sent
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        logging.getLogger("stream_edge").exception("Error in source %s", getattr(source, "name", source))
        _send_error(conn, exc)  # the process then ends normally (exit code 0), as in Quix Streams
    conn.close()


class SourceProcess:
    """A source and the process that runs it.

    Example::

        process = SourceProcess(source, topic, SourceSettings("localhost:9092"))
        process.start(); ...; process.stop(); process.raise_for_error()
    """

    def __init__(self, source: Any, topic: Topic, settings: SourceSettings, changelog_topic: Optional[str] = None,
                 context: Optional[BaseContext] = None) -> None:
        self.source = source
        self.topic = topic
        self.settings = settings
        self.changelog_topic = changelog_topic
        self._context = context or source_context()
        self._process: Any = None
        self._errors: Optional[Connection] = None
        self._error: Optional[BaseException] = None
        self._stopping = False

    @property
    def name(self) -> str:
        return str(getattr(self.source, "name", type(self.source).__name__))

    @property
    def pid(self) -> Optional[int]:
        return None if self._process is None else self._process.pid

    @property
    def exitcode(self) -> Optional[int]:
        return None if self._process is None else self._process.exitcode

    def start(self) -> None:
        """Start the source's process."""
        reader, writer = self._context.Pipe(duplex=False)
        topic = self.topic if self._context.get_start_method() == "fork" else _picklable_topic(self.topic)
        process = self._context.Process(  # type: ignore[attr-defined]
            target=_run_source, name=self.name, daemon=False,
            args=(self.source, topic, self.settings, self.changelog_topic, os.getpid(), writer))
        process.start()
        writer.close()
        self._process, self._errors, self._stopping = process, reader, False
        logger.info("started source %s (pid %s)", self.name, process.pid)

    def is_alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def failed(self) -> bool:
        """True if the source reported an error, or its process ended otherwise than normally or by
        SIGTERM, as Quix Streams 3.28 judges it: a source that ``stop()`` had to kill after its
        ``shutdown_timeout`` failed (exit code -9)."""
        code = self.exitcode
        if code is None:
            return False
        return self.error() is not None or code not in (0, -signal.SIGTERM)

    def error(self) -> Optional[BaseException]:
        """The exception the source raised, if it sent one."""
        if self._error is None and self._errors is not None:
            try:
                if self._errors.poll():
                    self._error = self._errors.recv()
            except (EOFError, OSError):
                pass
        return self._error

    def raise_for_error(self) -> None:
        """Raise SourceException (from the source's error) if the process failed."""
        from .exceptions import SourceException

        if self.failed():
            cause = self.error()
            if cause is not None:
                raise SourceException(self) from cause
            raise SourceException(self)

    def request_stop(self) -> None:
        """SIGTERM: the source's process calls its stop(); returns at once."""
        if self._process is not None and self._process.is_alive():
            self._stopping = True
            self._process.terminate()

    def stop(self) -> None:
        """SIGTERM (the source's stop()), wait ``shutdown_timeout``, then SIGKILL."""
        process = self._process
        if process is None:
            return
        self._stopping = True
        if process.is_alive():
            process.terminate()
            process.join(getattr(self.source, "shutdown_timeout", 10))
            if process.is_alive():
                logger.warning("source %s did not stop within its shutdown timeout: killing it", self.name)
                process.kill()
                process.join(5)
        else:
            process.join(0)
        self.error()  # keep the error (if any) before the pipe goes

    def __repr__(self) -> str:
        return f"<SourceProcess name={self.name!r} pid={self.pid} exitcode={self.exitcode}>"
