package streamlake.windows;

import java.util.HashSet;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The edge's sliding-window engine for one key, step for step
 * (stream_edge/dataframe/windows/sliding_engine.py, {@code _update} and {@code _expire}): every
 * record at {@code t} owns a left window {@code [max(0, t - duration), t]} and a right window
 * {@code [t + 1, t + 1 + duration]}; a backward scan over the key's windows creates or updates the
 * windows whose content changes; windows ending at one of their own records are the results,
 * emitted once closed ({@code start <= event time - duration - grace - 1}); windows that can no
 * longer seed a newer one are deleted. The loop runs it for the keys the closed form does not cover.
 */
final class SlidingEngine {
    private final long duration, grace;
    private final int agg;
    private final boolean integral;
    private final TreeMap<Win, Slot> windows = new TreeMap<>();
    private long latest;
    private Long lastExpired;
    private Long lastDeleted;

    SlidingEngine(long duration, long grace, int agg, boolean integral) {
        this.duration = duration;
        this.grace = grace;
        this.agg = agg;
        this.integral = integral;
    }

    /** Receives the windows a record closes, oldest first. */
    interface Sink {
        void closed(long start, long end, Object value);
    }

    /** One record; the windows it closes go to {@code sink} (null: dropped). */
    void process(long ts, long lv, double dv, Sink sink) {
        long now = Math.max(latest, ts);
        long maxExpired = now - duration - grace - 1;
        long maxDeleted = maxExpired - duration;
        long leftStart = Math.max(0L, ts - duration);
        long leftEnd = ts;
        if (ts <= maxExpired) return;  // late: no window takes it
        latest = now;
        long rightStart = ts + 1;
        long rightEnd = rightStart + duration;
        boolean rightExists = false;
        HashSet<Long> starts = new HashSet<>();
        starts.add(leftStart);
        NavigableMap<Win, Slot> range = windows.subMap(new Win(Math.max(0L, leftStart - duration), Long.MIN_VALUE),
            true, new Win(rightStart, Long.MAX_VALUE), true);
        Win[] scan = range.descendingKeySet().toArray(new Win[0]);
        boolean leftDone = false;
        for (Win w : scan) {
            Slot slot = windows.get(w);
            starts.add(w.start);
            if (w.start == rightStart) {
                rightExists = true;
            } else if (w.end > leftEnd) {
                // reaches past the record: seeds the record's right window from the first one
                // holding a newer record, then takes the record
                if (!rightExists && slot.maxTs > ts) {
                    windows.put(new Win(rightStart, rightEnd), new Slot(slot.maxTs, slot.acc.copy()));
                    rightExists = true;
                }
                if (w.start > maxExpired) {
                    if (ts > slot.maxTs) slot.maxTs = ts;
                    slot.acc.add(agg, integral, lv, dv);
                }
            } else if (w.end == leftEnd) {
                // the record's left window exists; the previous record's right window starts after it
                long backfill = slot.maxTs + 1;
                if (!starts.contains(backfill) && slot.maxTs < ts) {
                    windows.put(new Win(backfill, backfill + duration), new Slot(ts, single(lv, dv)));
                }
                if (w.start > maxExpired) {
                    slot.acc.add(agg, integral, lv, dv);
                    slot.maxTs = ts;
                }
                leftDone = true;
                break;
            } else {
                // the newest window ending before the record seeds its left window
                long backfill = slot.maxTs + 1;
                if (!starts.contains(backfill) && backfill + duration >= ts) {
                    windows.put(new Win(backfill, backfill + duration), new Slot(ts, single(lv, dv)));
                }
                Acc seed = leftStart <= slot.maxTs ? slot.acc.copy() : new Acc();
                seed.add(agg, integral, lv, dv);
                windows.put(new Win(leftStart, leftEnd), new Slot(ts, seed));
                leftDone = true;
                break;
            }
        }
        if (!leftDone && leftStart > maxExpired) {
            windows.put(new Win(leftStart, leftEnd), new Slot(ts, single(lv, dv)));
        }
        expire(maxExpired, maxDeleted, sink);
    }

    private Acc single(long lv, double dv) {
        Acc acc = new Acc();
        acc.add(agg, integral, lv, dv);
        return acc;
    }

    private void expire(long maxExpired, long maxDeleted, Sink sink) {
        Win from = new Win(lastExpired == null ? Long.MIN_VALUE : lastExpired, Long.MAX_VALUE);
        NavigableMap<Win, Slot> closing = windows.subMap(from, lastExpired == null, new Win(maxExpired, Long.MAX_VALUE),
            true);
        Win newest = null;
        for (Map.Entry<Win, Slot> e : closing.entrySet()) {
            Win w = e.getKey();
            if (e.getValue().maxTs == w.end && sink != null) sink.closed(w.start, w.end, e.getValue().acc.value(agg, integral));
            newest = w;
        }
        if (newest != null) lastExpired = newest.start;  // windows at or before it are never emitted again
        Win fromDeleted = new Win(lastDeleted == null ? Long.MIN_VALUE : lastDeleted, Long.MAX_VALUE);
        NavigableMap<Win, Slot> gone = windows.subMap(fromDeleted, lastDeleted == null,
            new Win(maxDeleted, Long.MAX_VALUE), true);
        if (!gone.isEmpty()) {
            long newestDeleted = gone.lastKey().start;
            gone.clear();
            if (newestDeleted != 0) lastDeleted = newestDeleted;  // as the edge: a start of 0 leaves the index
        }
    }

    /** A window's (start, end), ordered as the edge's sorted list of them. */
    private static final class Win implements Comparable<Win> {
        final long start, end;

        Win(long start, long end) {
            this.start = start;
            this.end = end;
        }

        @Override
        public int compareTo(Win o) {
            return start != o.start ? Long.compare(start, o.start) : Long.compare(end, o.end);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Win && ((Win) o).start == start && ((Win) o).end == end;
        }

        @Override
        public int hashCode() {
            return Long.hashCode(start) * 31 + Long.hashCode(end);
        }
    }

    /** A window's newest record time and partial aggregate. */
    private static final class Slot {
        long maxTs;
        final Acc acc;

        Slot(long maxTs, Acc acc) {
            this.maxTs = maxTs;
            this.acc = acc;
        }
    }
}
