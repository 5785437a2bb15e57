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
 *     {@code start <= event time - grace - duration} are closed (with {@code __closed_floor}: at
 *     least up to it, the windows an earlier run emitted);</li>
 * <li>a record goes into each of its windows (starts are multiples of the step, never negative
 *     for hopping windows) that is not closed when it arrives;</li>
 * <li>a window is emitted when it closes; windows still open at the group's end are not.</li>
 * </ul>
 *
 * A group is a key within its Kafka partition ({@code perKey}) or a whole partition, whose event
 * time then closes every key's windows (a heap of window starts, as the edge keeps it).
 */
final class FixedLoop extends LoopIterator {
    private final long duration, step, grace;
    private final boolean hopping, perKey;
    private final int capacity;
    private final boolean[] created = new boolean[1];
    private final OpenWindows.Sink sink;
    // the current group
    private long maxTs, lastTs;
    private boolean counted;
    private OpenWindows single;                       // per key
    private HashMap<Object, OpenWindows> keys;        // per partition
    private PriorityQueue<Start> starts;              // per partition: the open windows by start

    FixedLoop(Iterator<InternalRow> input, GroupReader reader, int agg, long duration, long step, long grace,
              boolean perKey) {
        super(input, reader, agg);
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
    protected void startGroup() {
        maxTs = Long.MIN_VALUE;
        lastTs = 0;
        counted = false;
        single = null;
        if (!perKey) {
            keys = new HashMap<>();
            starts = new PriorityQueue<>((a, b) -> Long.compare(a.k, b.k));
        }
    }

    @Override
    protected void record(InternalRow row) {
        long ts = row.getLong(reader.ts);
        counted = true;
        lastTs = ts;
        if (ts > maxTs) maxTs = ts;
        long closed = Math.max(0L, maxTs) - grace - duration;
        if (reader.closedFloor >= 0 && !row.isNullAt(reader.closedFloor)) {
            closed = Math.max(closed, row.getLong(reader.closedFloor));
        }
        long closedK = Math.floorDiv(closed, step);
        OpenWindows windows;
        if (perKey) {
            if (single == null) single = new OpenWindows(reader.key(row), capacity);
            single.closeUpTo(closedK, sink);
            windows = single;
        } else {
            closeAll(closedK);
            windows = keyWindows(row);
        }
        long newest = Math.floorDiv(ts, step);
        long oldest = hopping ? Math.max(0L, Math.floorDiv(ts - duration, step) + 1) : newest;
        long lv = reader.integral ? row.getLong(reader.value) : 0L;
        double dv = reader.integral ? 0.0 : row.getDouble(reader.value);
        for (long k = Math.max(oldest, closedK + 1); k <= newest; k++) {
            windows.at(k, created).add(agg, reader.integral, lv, dv);
            if (created[0] && !perKey) starts.add(new Start(k, windows));
        }
    }

    private OpenWindows keyWindows(InternalRow row) {
        Object key = reader.key(row);
        OpenWindows windows = keys.get(key);
        if (windows == null) {
            windows = new OpenWindows(key, capacity);
            keys.put(key, windows);
        }
        return windows;
    }

    private void closeAll(long closedK) {
        while (!starts.isEmpty() && starts.peek().k <= closedK) {
            Start top = starts.poll();
            Acc acc = top.windows.take(top.k);
            if (acc != null) sink.closed(top.windows, top.k, acc);
        }
    }

    @Override
    protected Long bound() {
        return counted ? Math.max(0L, maxTs) - grace - duration : null;
    }

    @Override
    protected boolean stale() {
        long bound = Math.max(0L, maxTs) - grace - duration;
        return counted && (lastTs <= bound || maxTs <= bound);
    }

    @Override
    protected boolean counted() {
        return counted;
    }

    /** A window of one key, in the partition's heap of open windows. */
    private static final class Start {
        final long k;
        final OpenWindows windows;

        Start(long k, OpenWindows windows) {
            this.k = k;
            this.windows = windows;
        }
    }
}
