package streamlake.windows;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.unsafe.types.UTF8String;

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
    }

    LoopIterator(Iterator<InternalRow> input, GroupReader reader, int agg) {
        this.input = input;
        this.reader = reader;
        this.agg = agg;
    }

    @Override
    public final boolean hasNext() {
        while (pending.isEmpty()) {
            if (input.hasNext()) {
                InternalRow row = input.next();
                G group = groupOf(row);
                group.rows++;
                if (reader.complete(row)) record(group, row); else group.skipped++;
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
            current = newGroup();
        } else if (!reader.matches(row, currentValues)) {  // two groups share the hash
            int found = -1;
            for (int i = 0; i < others.size() && found < 0; i++) if (reader.matches(row, otherValues.get(i))) found = i;
            G group = found < 0 ? newGroup() : others.get(found);
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

    private void endAll() {
        if (current != null) endGroup(current);
        for (G group : others) endGroup(group);
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

    private void endGroup(G group) {
        pending.add(new GenericInternalRow(new Object[] {gh, null, null, null, null,
            counted(group) ? 1 : 2, bound(group), stale(group), group.rows, group.skipped, group.replayed}));
    }

    // window rows are written as UnsafeRows (what Spark converts every row to): no boxed field
    private final UnsafeRowWriter writer = new UnsafeRowWriter(WindowLoop.OUTPUT_WIDTH, 32);

    /** Queues one window row of the current hash's groups. */
    protected final void emit(Object key, long start, long end, Object value) {
        writer.reset();
        writer.zeroOutNullBytes();
        writer.write(0, gh);
        if (key instanceof UTF8String) writer.write(1, (UTF8String) key);
        else if (key instanceof java.nio.ByteBuffer) writer.write(1, ((java.nio.ByteBuffer) key).array());
        else if (key instanceof Long) writer.write(1, (long) (Long) key);
        else if (key instanceof Integer) writer.write(1, (int) (Integer) key);
        else writer.setNullAt(1);
        writer.write(2, start);
        writer.write(3, end);
        if (value instanceof Long) writer.write(4, (long) (Long) value); else writer.write(4, (double) (Double) value);
        writer.write(5, 0);
        for (int i = 6; i < WindowLoop.OUTPUT_WIDTH; i++) writer.setNullAt(i);
        pending.add(writer.getRow().copy());
    }
}
