package streamlake.windows;

import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Sliding {@code final()} windows of a task's rows, sorted by key (within its Kafka partition)
 * and then in offset order, in one pass.
 *
 * <p>While a key's records are tidy (every accepted record lands after the key's closed windows,
 * and lies above {@code 2 * duration + grace}), its windows have a closed form: each accepted
 * timestamp {@code t} ends one window {@code [t - duration, t]} holding the accepted records in
 * that range, emitted once {@code t <= event time - grace - 1}. The loop keeps the accepted records
 * in time order (inserting late ones in place) and emits each window when it closes; nothing
 * written is ever withdrawn, since a tidy record cannot join a closed window.
 *
 * <p>The first untidy record switches the key to {@link SlidingEngine}, the edge's own algorithm:
 * the key's earlier records are replayed through it (their windows were emitted already, the same
 * ones), then the key continues there. So the loop keeps every record of a key while it is tidy
 * (16 bytes each), which the replay needs.
 */
final class SlidingLoop extends LoopIterator<SlidingLoop.State> {
    private final long duration, grace;
    private final boolean integral;

    /** A key's event time, and its tidy records or the engine that took the key over. */
    static final class State extends LoopIterator.Group {
        Object key;
        long latest;
        boolean counted;
        SlidingEngine engine;
        SlidingEngine.Sink engineSink;
        final Records accepted = new Records();  // tidy keys: accepted records by time, from head
        final Records arrivals = new Records();  // tidy keys: every record in arrival order
        int emitted;                             // accepted records [head, emitted) have had their window
    }

    SlidingLoop(Iterator<InternalRow> input, GroupReader reader, int agg, long duration, long grace,
                LoopFigures figures) {
        super(input, reader, agg, null, figures);
        this.duration = duration;
        this.grace = grace;
        this.integral = reader.integral;
    }

    @Override
    protected State newGroup() {
        return new State();
    }

    @Override
    protected void record(State g, InternalRow row) {
        if (g.key == null) {
            Object key = reader.key(row);
            g.key = key;
            g.engineSink = (start, end, value) -> emit(key, start, end, value);
        }
        g.counted = true;
        long ts = row.getLong(reader.ts);
        long lv = integral ? row.getLong(reader.value) : 0L;
        double dv = integral ? 0.0 : row.getDouble(reader.value);
        if (g.engine != null) {
            g.engine.process(ts, lv, dv, g.engineSink);
            return;
        }
        long now = Math.max(g.latest, ts);
        boolean isAccepted = ts > now - duration - grace - 1;
        if (isAccepted && (ts <= now - grace - 1 || ts <= 2 * duration + grace)) {
            switchToEngine(g);
            g.engine.process(ts, lv, dv, g.engineSink);
            return;
        }
        g.arrivals.append(ts, lv, dv);
        if (!isAccepted) return;  // late: the edge drops it, and its event time stays
        g.latest = now;
        g.accepted.insert(ts, lv, dv);
        emitClosed(g);
    }

    /** Emits the windows of accepted timestamps {@code t <= latest - grace - 1}, one per distinct t. */
    private void emitClosed(State g) {
        long closedUpTo = g.latest - grace - 1;
        Records a = g.accepted;
        while (g.emitted < a.size && a.ts[g.emitted] <= closedUpTo) {
            long t = a.ts[g.emitted];
            int last = g.emitted;
            while (last + 1 < a.size && a.ts[last + 1] == t) last++;
            while (a.ts[a.head] < t - duration) a.head++;
            Acc acc = new Acc();
            for (int i = a.head; i <= last; i++) acc.add(agg, integral, a.l[i], a.d[i]);
            emit(g.key, t - duration, t, acc.value(agg, integral));
            g.emitted = last + 1;
        }
        if (a.head > 4096 && a.head > a.size / 2) g.emitted -= a.compact();
    }

    /** The key turned untidy: the edge's engine takes over, after a replay of the key so far. */
    private void switchToEngine(State g) {
        g.engine = new SlidingEngine(duration, grace, agg, integral);
        Records r = g.arrivals;
        for (int i = 0; i < r.size; i++) g.engine.process(r.ts[i], r.l[i], r.d[i], null);
        g.replayed = true;
        g.accepted.clear();
        g.arrivals.clear();
    }

    @Override
    protected Long bound(State g) {
        return null;
    }

    @Override
    protected boolean stale(State g) {
        return false;
    }

    @Override
    protected boolean counted(State g) {
        return g.counted;
    }

    /** Records (timestamp, long value, double value) in growable arrays, live from {@code head}. */
    static final class Records {
        long[] ts = new long[64];
        long[] l = new long[64];
        double[] d = new double[64];
        int head, size;

        void clear() {
            head = 0;
            size = 0;
        }

        void append(long t, long lv, double dv) {
            if (size == ts.length) grow();
            ts[size] = t;
            l[size] = lv;
            d[size] = dv;
            size++;
        }

        /** Inserts in time order, after records of the same time (late records shift a few). */
        void insert(long t, long lv, double dv) {
            if (size == ts.length) grow();
            int at = size;
            while (at > head && ts[at - 1] > t) at--;
            if (at < size) {
                System.arraycopy(ts, at, ts, at + 1, size - at);
                System.arraycopy(l, at, l, at + 1, size - at);
                System.arraycopy(d, at, d, at + 1, size - at);
            }
            ts[at] = t;
            l[at] = lv;
            d[at] = dv;
            size++;
        }

        /** Moves the live records to the front; returns how far they moved. */
        int compact() {
            int moved = head;
            System.arraycopy(ts, head, ts, 0, size - head);
            System.arraycopy(l, head, l, 0, size - head);
            System.arraycopy(d, head, d, 0, size - head);
            size -= head;
            head = 0;
            return moved;
        }

        private void grow() {
            ts = java.util.Arrays.copyOf(ts, ts.length * 2);
            l = java.util.Arrays.copyOf(l, l.length * 2);
            d = java.util.Arrays.copyOf(d, d.length * 2);
        }
    }
}
