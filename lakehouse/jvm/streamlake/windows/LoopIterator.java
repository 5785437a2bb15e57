package streamlake.windows;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;

/**
 * One task's sorted rows in, window rows out, streamed: rows are read only while no output row
 * is waiting, so a task holds the windows one row produced at most, never its whole output.
 * After each group comes one summary row (see {@link WindowLoop#OUTPUT_DOC}).
 *
 * <p>Rows come sorted by the group's hash {@code __gh}, then in offset order, then by the group's
 * columns (the offset right after the hash makes almost every comparison of the sort end on the
 * sort's prefix and the offset, never on the key's bytes). So a group's rows are contiguous unless
 * two groups share a hash: then their rows interleave in offset order, and the loop keeps one state
 * per group of that hash until the hash changes.
 *
 * @param <G> a group's state
 */
abstract class LoopIterator<G extends LoopIterator.Group> implements Iterator<InternalRow> {
    private final Iterator<InternalRow> input;
    private final ArrayDeque<InternalRow> pending = new ArrayDeque<>();
    protected final GroupReader reader;
    protected final int agg;
    private final WindowState.Collector state;  // null: no window state gathered
    private boolean finished;
    private long gh;
    private G current;
    private Object[] currentValues;
    private final ArrayList<G> others = new ArrayList<>();            // same hash, other groups
    private final ArrayList<Object[]> otherValues = new ArrayList<>();

    /** What every group counts; subclasses add their own state. */
    static class Group {
        long rows, skipped;
        boolean replayed;
        WindowState.Buffer buffer;  // with a window state collector
    }

    LoopIterator(Iterator<InternalRow> input, GroupReader reader, int agg, WindowState.Collector state) {
        this.input = input;
        this.reader = reader;
        this.agg = agg;
        this.state = state;
    }

    @Override
    public final boolean hasNext() {
        while (pending.isEmpty()) {
            if (input.hasNext()) {
                InternalRow row = input.next();
                G group = groupOf(row);
                group.rows++;
                if (reader.complete(row)) {
                    record(group, row);
                    if (state != null) state.add(group.buffer, row);
                } else {
                    group.skipped++;
                }
            } else if (!finished) {
                finished = true;
                endAll();
            } else {
                return false;
            }
        }
        return true;
    }

    @Override
    public final InternalRow next() {
        if (!hasNext()) throw new java.util.NoSuchElementException();
        return pending.poll();
    }

    private G groupOf(InternalRow row) {
        long rowGh = row.getLong(reader.gh);
        if (current == null || rowGh != gh) {
            endAll();
            gh = rowGh;
            currentValues = reader.values(row);
            current = fresh();
        } else if (!reader.matches(row, currentValues)) {  // two groups share the hash
            int found = -1;
            for (int i = 0; i < others.size() && found < 0; i++) if (reader.matches(row, otherValues.get(i))) found = i;
            G group = found < 0 ? fresh() : others.get(found);
            Object[] values = found < 0 ? reader.values(row) : otherValues.get(found);
            if (found >= 0) {
                others.set(found, current);
                otherValues.set(found, currentValues);
            } else {
                others.add(current);
                otherValues.add(currentValues);
            }
            current = group;
            currentValues = values;
        }
        return current;
    }

    private G fresh() {
        G group = newGroup();
        if (state != null) group.buffer = state.newBuffer();
        return group;
    }

    private void endAll() {
        if (current != null) endGroup(current, currentValues);
        for (int i = 0; i < others.size(); i++) endGroup(others.get(i), otherValues.get(i));
        current = null;
        others.clear();
        otherValues.clear();
    }

    /** A new group's state (its first row follows). */
    protected abstract G newGroup();

    /** One complete row of {@code group} (timestamp and value not null). */
    protected abstract void record(G group, InternalRow row);

    /** The bound reported for the group ({@code null} without one), and whether it is stale. */
    protected abstract Long bound(G group);

    protected abstract boolean stale(G group);

    /** Whether the group had a complete row (only such groups count as groups). */
    protected abstract boolean counted(G group);

    private void endGroup(G group, Object[] values) {
        if (state != null) state.finish(group.buffer, values);
        pending.add(new GenericInternalRow(new Object[] {gh, null, null, null, null,
            counted(group) ? 1 : 2, bound(group), stale(group), group.rows, group.skipped, group.replayed}));
    }

    /**
     * Queues one window row of the current hash's groups. A generic row: Spark converts it to an
     * UnsafeRow once; writing UnsafeRows here (copied out of a reused writer) was slower, 10M
     * sliding rows to the noop sink 8.3-9.0 s against 7.7-8.0 s (bench/README.md).
     */
    protected final void emit(Object key, long start, long end, Object value) {
        pending.add(new GenericInternalRow(new Object[] {gh, GroupReader.outputKey(key), start, end,
            value, 0, null, null, null, null, null}));
    }
}
