package streamlake.windows;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;

/**
 * One task's sorted rows in, window rows out, streamed: rows are read only while no output row
 * is waiting, so a task holds the windows one row produced at most, never its whole output.
 * What it counts per group (rows read and skipped, groups, the window state's floor, replayed
 * sliding keys, an increment's figures) goes to a {@link LoopFigures} once the input is exhausted.
 *
 * <p>Rows come sorted by the group's hash {@code __gh}, then in offset order, then by the group's
 * columns (the offset right after the hash makes almost every comparison of the sort end on the
 * sort's prefix and the offset, never on the key's bytes). So a group's rows are contiguous unless
 * two groups share a hash: then their rows interleave in offset order, and the loop keeps one state
 * per group of that hash until the hash changes.
 *
 * <p>An increment's rows ({@code __new} among the columns, lakehouse/window_tail.py) are the
 * window state's open records ({@code __new} false, with the group's old {@code __old_latest} and
 * {@code __old_last}; a group without open records has one such row without a record) and the new
 * rows. Windows up to the old event time's bound count as closed (they were emitted before); a
 * group whose new complete records do not all follow its old last record in offset order is
 * <em>reordered</em>: its windows are held back (the job recomputes its keys whole). An increment
 * counts its new rows, its groups with a new complete record ({@code changed}) and, of those, the
 * reordered ones.
 *
 * @param <G> a group's state
 */
abstract class LoopIterator<G extends LoopIterator.Group> implements Iterator<InternalRow> {
    private final Iterator<InternalRow> input;
    private final ArrayDeque<InternalRow> pending = new ArrayDeque<>();
    protected final GroupReader reader;
    protected final int agg;
    private final WindowState.Collector state;  // null: no window state gathered
    private final LoopFigures figures;          // null: nothing counted
    private final long[] counts = new long[LoopFigures.NAMES.length];  // this task's, added at its end
    private final boolean increment;            // the rows are an increment's (reader.isNew >= 0)
    private G emitting;                         // the group whose row is being recorded
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
        // an increment's group (see the class doc): its old event time, new rows, whether it got a new
        // complete record, whether one sits at or before its old last record, and its windows, held
        long oldLatest = Long.MIN_VALUE;
        long newRows;
        boolean changed, reordered;
        ArrayList<InternalRow> held;
    }

    LoopIterator(Iterator<InternalRow> input, GroupReader reader, int agg, WindowState.Collector state,
                 LoopFigures figures) {
        this.input = input;
        this.reader = reader;
        this.agg = agg;
        this.state = state;
        this.figures = figures;
        counts[LoopFigures.STATE_FLOOR] = LoopFigures.NO_FLOOR;
        this.increment = reader.isNew >= 0;
        if (increment && state == null) {
            throw new IllegalArgumentException("an increment's loop gathers the window state");
        }
    }

    @Override
    public final boolean hasNext() {
        while (pending.isEmpty()) {
            if (input.hasNext()) {
                InternalRow row = input.next();
                G group = groupOf(row);
                group.rows++;
                boolean complete = reader.complete(row);
                if (increment) incremental(group, row, complete);
                if (complete) {
                    emitting = group;
                    record(group, row);
                    if (state != null) state.add(group.buffer, row);
                } else {
                    group.skipped++;
                }
            } else if (!finished) {
                finished = true;
                endAll();
                if (figures != null) figures.add(counts);
            } else {
                return false;
            }
        }
        return true;
    }

    /** What an increment's row tells about its group, before the row is recorded. */
    private void incremental(G group, InternalRow row, boolean complete) {
        if (!row.getBoolean(reader.isNew)) {
            if (group.changed) group.reordered = true;  // an old record after a new one
            if (!row.isNullAt(reader.oldLatest)) group.oldLatest = row.getLong(reader.oldLatest);
            state.old(group.buffer, row);
            return;
        }
        group.newRows++;
        if (complete && !group.changed) {
            group.changed = true;
            if (state.atOrBeforeOldLast(group.buffer, row)) group.reordered = true;
        }
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
        if (increment) group.held = new ArrayList<>();
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
        if (increment) {
            if (!group.reordered) {
                pending.addAll(group.held);
                counts[LoopFigures.WINDOWS] += group.held.size();
            }
            counts[LoopFigures.NEW_ROWS] += group.newRows;
            if (group.changed) counts[LoopFigures.CHANGED]++;
            if (group.reordered) counts[LoopFigures.REORDERED]++;
            return;
        }
        counts[LoopFigures.ROWS] += group.rows;
        counts[LoopFigures.SKIPPED] += group.skipped;
        if (group.replayed) counts[LoopFigures.REPLAYED]++;
        if (!counted(group)) return;
        counts[LoopFigures.GROUPS]++;
        Long bound = bound(group);
        if (bound != null) counts[LoopFigures.STATE_FLOOR] = Math.min(counts[LoopFigures.STATE_FLOOR], bound);
        if (stale(group)) counts[LoopFigures.STALE_GROUPS]++;
    }

    /**
     * Queues one window row of the current hash's groups. A generic row: Spark converts it to an
     * UnsafeRow once; writing UnsafeRows here (copied out of a reused writer) was slower, 10M
     * sliding rows to the noop sink 8.3-9.0 s against 7.7-8.0 s (bench/README.md).
     */
    protected final void emit(Object key, long start, long end, Object value) {
        InternalRow row = new GenericInternalRow(new Object[] {gh, GroupReader.outputKey(key), start, end, value});
        if (increment) {
            emitting.held.add(row);
        } else {
            pending.add(row);
            counts[LoopFigures.WINDOWS]++;
        }
    }
}
