package streamlake.windows;

import java.util.HashMap;
import java.util.Iterator;
import java.util.PriorityQueue;

import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Tumbling and hopping {@code final()} windows of a task's rows, sorted by closing group and then
 * in Kafka offset order, in one pass (the rules of stream_edge/dataframe/windows/fixed_engine.py):
 *
 * <ul>
 * <li>the group's event time is the largest timestamp so far, from 0; windows with
 *     {@code start <= event time - grace - duration} are closed (with {@code __closed_floor}, or in
 *     an increment's rows up to the old event time's bound: at least up to it, the windows an
 *     earlier run emitted);</li>
 * <li>a record goes into each of its windows (starts are multiples of the step, never negative
 *     for hopping windows) that is not closed when it arrives;</li>
 * <li>a window is emitted when it closes; windows still open at the group's end are not.</li>
 * </ul>
 *
 * A group is a key within its Kafka partition ({@code perKey}) or a whole partition, whose event
 * time then closes every key's windows (a heap of window starts, as the edge keeps it).
 */
final class FixedLoop extends LoopIterator<FixedLoop.State> {
    private final long duration, step, grace;
    private final boolean hopping, perKey;
    private final int capacity;
    private final boolean[] created = new boolean[1];
    private final OpenWindows.Sink sink;

    /** A group's event time, last timestamp and open windows. */
    static final class State extends LoopIterator.Group {
        long maxTs = Long.MIN_VALUE, lastTs;
        boolean counted;
        OpenWindows single;                                           // per key
        final HashMap<Object, OpenWindows> keys = new HashMap<>();    // per partition
        final PriorityQueue<Start> starts = new PriorityQueue<>((a, b) -> Long.compare(a.k, b.k));
    }

    FixedLoop(Iterator<InternalRow> input, GroupReader reader, int agg, long duration, long step, long grace,
              boolean perKey, WindowState.Collector state, LoopFigures figures) {
        super(input, reader, agg, state, figures);
        this.duration = duration;
        this.step = step;
        this.grace = grace;
        this.hopping = step != duration;
        this.perKey = perKey;
        this.capacity = (int) Math.min(1 << 12, (grace + duration) / step + 2);
        final boolean integral = reader.integral;
        this.sink = (windows, k, acc) -> emit(windows.key, k * step, k * step + duration, acc.value(agg, integral));
    }

    @Override
    protected State newGroup() {
        return new State();
    }

    @Override
    protected void record(State g, InternalRow row) {
        long ts = row.getLong(reader.ts);
        g.counted = true;
        g.lastTs = ts;
        if (ts > g.maxTs) g.maxTs = ts;
        long closed = Math.max(0L, g.maxTs) - grace - duration;
        if (reader.closedFloor >= 0 && !row.isNullAt(reader.closedFloor)) {
            closed = Math.max(closed, row.getLong(reader.closedFloor));
        }
        if (g.oldLatest != Long.MIN_VALUE) closed = Math.max(closed, g.oldLatest - grace - duration);  // increments
        long closedK = Math.floorDiv(closed, step);
        OpenWindows windows;
        if (perKey) {
            if (g.single == null) g.single = new OpenWindows(reader.key(row), capacity);
            g.single.closeUpTo(closedK, sink);
            windows = g.single;
        } else {
            closeAll(g, closedK);
            Object key = reader.key(row);
            windows = g.keys.get(key);
            if (windows == null) {
                windows = new OpenWindows(key, capacity);
                g.keys.put(key, windows);
            }
        }
        long newest = Math.floorDiv(ts, step);
        long oldest = hopping ? Math.max(0L, Math.floorDiv(ts - duration, step) + 1) : newest;
        long lv = reader.integral ? row.getLong(reader.value) : 0L;
        double dv = reader.integral ? 0.0 : row.getDouble(reader.value);
        for (long k = Math.max(oldest, closedK + 1); k <= newest; k++) {
            windows.at(k, created).add(agg, reader.integral, lv, dv);
            if (created[0] && !perKey) g.starts.add(new Start(k, windows));
        }
    }

    private void closeAll(State g, long closedK) {
        while (!g.starts.isEmpty() && g.starts.peek().k <= closedK) {
            Start top = g.starts.poll();
            Acc acc = top.windows.take(top.k);
            if (acc != null) sink.closed(top.windows, top.k, acc);
        }
    }

    @Override
    protected Long bound(State g) {
        return g.counted ? Math.max(0L, g.maxTs) - grace - duration : null;
    }

    @Override
    protected boolean stale(State g) {
        long bound = Math.max(0L, g.maxTs) - grace - duration;
        return g.counted && (g.lastTs <= bound || g.maxTs <= bound);
    }

    @Override
    protected boolean counted(State g) {
        return g.counted;
    }

    /** A window of one key, in the partition's heap of open windows. */
    static final class Start {
        final long k;
        final OpenWindows windows;

        Start(long k, OpenWindows windows) {
            this.k = k;
            this.windows = windows;
        }
    }
}
