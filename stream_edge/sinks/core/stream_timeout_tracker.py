"""Per-key silence detection for sinks: fire a callback once when a Kafka message key goes quiet.

One *stream* is one Kafka message key. A sink calls :meth:`StreamTimeoutTracker.touch` for every
record it receives; a daemon thread (and the sink's ``flush()``) call :meth:`check_now`, which
fires ``on_stream_timeout(key)`` once for every key silent for at least ``stream_timeout_ms``.

Contract (docs/design.md, "Data-lake sink and silence detection contract"):

- Enabled only when ``stream_timeout_ms`` is a positive ``int`` and ``on_stream_timeout`` is
  callable. Otherwise the tracker is disabled with zero overhead: no per-key dict, no thread.
- The key is passed to the callback raw (bytes, str, int, ...). ``None`` keys are ignored.
- When a key has been silent for at least the threshold: (1) its entry is evicted, (2) the
  callback runs, (3) an INFO line ``Stream 'sensor-a' timed out (silence N ms >= threshold M ms)``
  is logged. A raising callback is logged and swallowed; it still counts as fired, so the key
  fires again only after it publishes again (a fresh stream with a new baseline).
- A TTL safety sweep evicts entries older than ``3 x stream_timeout_ms`` without firing, with a
  WARNING.
- Checks run on a daemon thread every ``max(100, min(1000, stream_timeout_ms // 5))`` ms (see
  :meth:`start`) and whenever the owner calls :meth:`check_now` (the sink does at every flush).

Quix Streams 3.28.1's signature is accepted on top (``docs/compatibility.md``): the keyword-only
``idle_exit_cycles`` (the thread exits after that many checks of an empty tracker and the next
:meth:`touch` restarts it) and ``thread_name``; ``touch(key, now_ms=...)`` and
``check_now(now_ms=...)`` with explicit milliseconds; assigning ``tracker._now_ms = lambda: ms``
to drive time in tests; a ``check_interval_ms`` that is not a positive ``int`` falls back to the
default period.

Cost model (why it stays cheap at 1M keys): entries live in an ``OrderedDict`` kept in last-touch
order (``touch`` re-inserts the key at the end, O(1)). The oldest entry is therefore always first,
so a check only looks at the head and stops at the first entry that is not yet due: a check with
nothing to expire is O(1) whatever the number of keys. The lock is held for one entry at a time,
never for a scan, and callbacks run outside it, so ``touch()`` is never blocked behind a check.

Example::

    tracker = StreamTimeoutTracker(60_000, lambda key: print("silent:", key))
    tracker.start()            # background checks
    tracker.touch(b"sensor-a") # per record
    tracker.check_now()        # e.g. at the end of a flush
    tracker.stop()
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Dict, Optional

__all__ = ("StreamTimeoutTracker", "default_check_interval_ms")

TTL_FACTOR = 3
# How many keys one TTL WARNING names; the rest is counted (a stalled process can drop 1M keys).
_TTL_KEYS_NAMED = 10

_default_logger = logging.getLogger(__name__)


def default_check_interval_ms(stream_timeout_ms: int) -> int:
    """The background check period: ``max(100, min(1000, stream_timeout_ms // 5))`` ms.

    >>> default_check_interval_ms(60_000), default_check_interval_ms(2_000), default_check_interval_ms(100)
    (1000, 400, 100)
    """
    return max(100, min(1000, stream_timeout_ms // 5))


def _stream_name(key: Any) -> str:
    """How a key appears in log lines: bytes are decoded (the raw key still goes to the callback)."""
    if isinstance(key, (bytes, bytearray)):
        return bytes(key).decode("utf-8", errors="replace")
    return str(key)


class StreamTimeoutTracker:
    """Tracks the last time each key was seen and fires a callback once per silence period.

    :param stream_timeout_ms: per-key silence threshold in ms; must be a positive ``int`` to enable.
    :param on_stream_timeout: ``callback(raw_key)``; must be callable to enable. Exceptions are
        logged and swallowed. It must not block (it may run on the consumer's thread).
    :param check_interval_ms: period of the background thread; default (and for anything but a
        positive ``int``) ``max(100, min(1000, stream_timeout_ms // 5))``.
    :param idle_exit_cycles: the thread exits after this many consecutive checks of an empty
        tracker; the next :meth:`touch` restarts it (unless :meth:`stop` was called).
    :param thread_name: the daemon thread's name.
    :param clock: returns the current time in milliseconds (default: a monotonic clock). Tests
        pass a controllable clock.
    :param logger: where the INFO/WARNING/ERROR lines go (default: this module's logger).
    """

    __slots__ = (
        "_timeout_ms", "_ttl_ms", "_callback", "_interval_ms", "_clock", "_logger",
        "_entries", "_lock", "_thread", "_stop_event", "_unhashable_warned", "_ms_per_unit",
        "_timeout_units", "_ttl_units", "_partition_of", "fired_total", "_idle_exit_cycles",
        "_thread_name", "_wanted",
    )

    def __init__(
        self,
        stream_timeout_ms: Optional[int],
        on_stream_timeout: Optional[Callable[[Any], None]],
        *,
        check_interval_ms: Optional[int] = None,
        idle_exit_cycles: int = 3,
        thread_name: str = "StreamTimeoutTracker-check",
        logger: Optional[logging.Logger] = None,
        clock: Optional[Callable[[], float]] = None,
    ) -> None:
        enabled = (
            isinstance(stream_timeout_ms, int)
            and not isinstance(stream_timeout_ms, bool)
            and stream_timeout_ms > 0
            and callable(on_stream_timeout)
        )
        self._logger = logger if logger is not None else _default_logger
        # The default clock is time.monotonic itself (seconds, no Python frame per touch);
        # thresholds are converted to its unit once. A given clock returns milliseconds.
        self._clock = clock if clock is not None else time.monotonic
        self._ms_per_unit = 1.0 if clock is not None else 1000.0
        self._thread: Optional[threading.Thread] = None
        self._stop_event: Optional[threading.Event] = None
        self._unhashable_warned = False
        self._idle_exit_cycles = idle_exit_cycles
        self._thread_name = thread_name
        self._wanted = False  # start() was called and stop() was not: touch() restarts an idle-exited thread
        self.fired_total = 0  # silence events fired so far (for metrics)
        if not enabled:
            # Disabled: nothing allocated per key, no lock, no thread.
            self._timeout_ms = None
            self._ttl_ms = None
            self._timeout_units = None
            self._ttl_units = None
            self._callback: Optional[Callable[[Any], Any]] = None
            self._interval_ms: Any = None
            self._entries: Optional[OrderedDict] = None
            self._partition_of: Dict[Any, Any] = {}
            self._lock: Any = None  # a threading.Lock whenever _entries is not None
            return
        assert stream_timeout_ms is not None  # enabled implies a positive timeout
        if not (isinstance(check_interval_ms, int) and not isinstance(check_interval_ms, bool)
                and check_interval_ms > 0):
            check_interval_ms = None  # as Quix Streams 3.28.1: anything else means the default
        self._timeout_ms = stream_timeout_ms
        self._ttl_ms = TTL_FACTOR * stream_timeout_ms
        self._timeout_units = stream_timeout_ms / self._ms_per_unit
        self._ttl_units = self._ttl_ms / self._ms_per_unit
        self._callback = on_stream_timeout
        self._interval_ms = (
            check_interval_ms if check_interval_ms is not None
            else default_check_interval_ms(stream_timeout_ms)
        )
        # key -> last-touch time (ms); insertion order == last-touch order (oldest first).
        self._entries = OrderedDict()
        # key -> partition tag, when callers give one (rebalances forget a partition's keys)
        self._partition_of = {}
        self._lock = threading.Lock()

    # -- introspection ------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """True when both the threshold and the callback are usable."""
        return self._entries is not None

    @property
    def stream_timeout_ms(self) -> Optional[int]:
        return self._timeout_ms

    @property
    def check_interval_ms(self) -> Optional[float]:
        """Background check period in ms (None when disabled)."""
        return self._interval_ms

    @property
    def running(self) -> bool:
        """True while the background thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __len__(self) -> int:
        """Number of keys currently tracked (0 when disabled)."""
        return 0 if self._entries is None else len(self._entries)

    def __contains__(self, key: Any) -> bool:
        return self._entries is not None and key in self._entries

    # -- Quix Streams 3.28.1's test hooks --------------------------------------------------------
    @property
    def _now_ms(self) -> Callable[[], float]:
        """The current time in ms. Assign a function (``tracker._now_ms = lambda: 5000``) to drive
        time, as tests written for Quix Streams 3.28.1 do; it becomes the tracker's clock."""
        clock, per_unit = self._clock, self._ms_per_unit
        return lambda: clock() * per_unit

    @_now_ms.setter
    def _now_ms(self, now_ms: Callable[[], float]) -> None:
        with self._lock if self._lock is not None else threading.Lock():
            if self._entries is not None and self._ms_per_unit != 1.0:
                for key in self._entries:  # keep the stamps already taken, in ms
                    self._entries[key] *= self._ms_per_unit
            self._clock, self._ms_per_unit = now_ms, 1.0
            if self._timeout_ms is not None:
                self._timeout_units, self._ttl_units = self._timeout_ms, self._ttl_ms

    @property
    def _stream_timeout_ms(self) -> Optional[int]:
        return self._timeout_ms

    @property
    def _check_interval_ms(self) -> Optional[float]:
        return self._interval_ms

    @property
    def _timer_thread(self) -> Optional[threading.Thread]:
        return self._thread

    @property
    def _last_seen_by_stream(self) -> Dict[Any, float]:
        """The tracked keys and their last-touch times (in the clock's unit)."""
        return {} if self._entries is None else self._entries

    # -- hot path -----------------------------------------------------------------------------
    def touch(self, key: Any, partition: Any = None, *, now_ms: Optional[float] = None, **context: Any) -> None:
        """Record that ``key`` published now. O(1); ``None`` keys and a disabled tracker do nothing.

        ``partition`` (any hashable tag, e.g. ``(topic, partition)``) lets :meth:`forget_partition`
        drop the key when a rebalance moves its partition to another instance. Other ``context``
        (record coordinates) is accepted and not kept, to stay small at millions of keys.
        ``now_ms`` stamps the key with that time (milliseconds) instead of the clock's.
        """
        entries = self._entries
        if entries is None or key is None:
            return
        try:
            with self._lock:
                entries[key] = self._clock() if now_ms is None else now_ms / self._ms_per_unit
                entries.move_to_end(key)
                if partition is not None:
                    self._partition_of[key] = partition
                if self._thread is None and self._wanted:
                    self._spawn()  # the thread exited while the tracker was empty
        except TypeError:
            # An unhashable key (e.g. a dict from a JSON key deserializer) cannot be tracked.
            if not self._unhashable_warned:
                self._unhashable_warned = True
                self._logger.warning(
                    "Stream timeout tracking skips unhashable message keys of type %s "
                    "(use bytes/str/int keys to track them)", type(key).__name__,
                )

    # -- checks -------------------------------------------------------------------------------
    def check_now(self, *, now_ms: Optional[float] = None) -> int:
        """Fire every key silent for at least the threshold; sweep entries past 3x the threshold.

        Returns the number of callbacks fired. Looks only at the oldest entries: with nothing due
        it costs one lock round-trip and one comparison. ``now_ms``: check as of that time (ms).
        """
        entries = self._entries
        if entries is None:
            return 0
        now = self._clock() if now_ms is None else now_ms / self._ms_per_unit
        timeout, ttl, lock = self._timeout_units, self._ttl_units, self._lock
        fired = 0
        swept: list = []
        swept_count = 0
        while True:
            with lock:
                if not entries:
                    break
                key = next(iter(entries))
                silence = now - entries[key]
                if silence < timeout:
                    break  # every later entry was touched even more recently
                # 1. evict first, so a raising callback still counts as fired.
                del entries[key]
                self._partition_of.pop(key, None)
            if silence >= ttl:
                # TTL safety sweep: too old to be a meaningful timeout; drop without firing.
                swept_count += 1
                if len(swept) < _TTL_KEYS_NAMED:
                    swept.append(key)
                continue
            # 2. the callback, outside the lock; 3. the INFO line.
            try:
                self._callback(key)  # type: ignore[misc]  # set whenever the tracker runs
            except Exception:  # noqa: BLE001 - a user callback must never break the sink
                self._logger.exception("on_stream_timeout callback failed for stream '%s'", _stream_name(key))
            fired += 1
            self._logger.info(
                "Stream '%s' timed out (silence %d ms >= threshold %d ms)",
                _stream_name(key), int(silence * self._ms_per_unit), self._timeout_ms,
            )
        self.fired_total += fired
        if swept_count:
            named = ", ".join(f"'{_stream_name(k)}'" for k in swept)
            more = f" and {swept_count - len(swept)} more" if swept_count > len(swept) else ""
            self._logger.warning(
                "TTL sweep evicted %d stream(s) without firing: tracking entries older than "
                "%d ms (3 x stream_timeout_ms); checks did not run in time: %s%s",
                swept_count, self._ttl_ms, named, more,
            )
        return fired

    # -- background thread --------------------------------------------------------------------
    def start(self) -> None:
        """Start the daemon thread that calls :meth:`check_now` every ``check_interval_ms``.

        Idempotent; does nothing when disabled.
        """
        if self._entries is None or self.running:
            return
        with self._lock:
            self._wanted = True
            self._spawn()

    def _spawn(self) -> None:
        """Start the checking thread (called with the lock held)."""
        stop_event = threading.Event()
        self._stop_event = stop_event
        self._thread = threading.Thread(target=self._run, args=(stop_event,), name=self._thread_name, daemon=True)
        self._thread.start()

    def _run(self, stop_event: threading.Event) -> None:
        interval_s = self._interval_ms / 1000.0
        empty_checks = 0
        while not stop_event.wait(interval_s):
            try:
                self.check_now()
            except Exception:  # noqa: BLE001 - keep checking; a broken clock/logger is reported
                self._logger.exception("Stream timeout check failed")
            with self._lock:
                empty_checks = 0 if self._entries else empty_checks + 1
                if empty_checks >= self._idle_exit_cycles and self._stop_event is stop_event:
                    self._thread = None  # nothing to watch: touch() starts a new thread
                    self._stop_event = None
                    return

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the background thread (idempotent). Tracked keys are kept."""
        self._wanted = False
        thread, stop_event = self._thread, self._stop_event
        if stop_event is not None:
            stop_event.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None
        self._stop_event = None

    def clear(self) -> None:
        """Forget every tracked key (e.g. after a rebalance, when desired)."""
        if self._entries is not None:
            with self._lock:
                self._entries.clear()
                self._partition_of.clear()

    def forget_partition(self, partition: Any) -> int:
        """Forget the keys last seen on ``partition`` (its tag as given to :meth:`touch`): the
        partition now belongs to another instance, which reports their silence. Returns how many
        keys were dropped (no callback fires for them here)."""
        if self._entries is None:
            return 0
        with self._lock:
            keys = [key for key, tag in self._partition_of.items() if tag == partition]
            for key in keys:
                self._entries.pop(key, None)
                del self._partition_of[key]
        return len(keys)
