package streamlake.windows;

import java.util.ArrayDeque;
import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;

/**
 * One task's sorted rows in, window rows out, streamed: rows are read only while no output row
 * is waiting, so a task holds the windows one row produced at most, never its whole output.
 * After each group comes one summary row (see {@link WindowLoop#OUTPUT_DOC}).
 */
abstract class LoopIterator implements Iterator<InternalRow> {
    private final Iterator<InternalRow> input;
    private final ArrayDeque<InternalRow> pending = new ArrayDeque<>();
    protected final GroupReader reader;
    protected final int agg;
    private boolean started;
    private boolean finished;
    // the current group's figures
    protected long rows, skipped;
    protected boolean replayed;

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
                if (reader.startsGroup(row)) {
                    if (started) endGroup();
                    started = true;
                    rows = 0;
                    skipped = 0;
                    replayed = false;
                    startGroup();
                }
                rows++;
                if (reader.complete(row)) record(row); else skipped++;
            } else if (!finished) {
                finished = true;
                if (started) endGroup();
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

    /** A new group starts (its first row follows). */
    protected abstract void startGroup();

    /** One complete row of the current group (timestamp and value not null). */
    protected abstract void record(InternalRow row);

    /** The bound reported for the group ({@code null} without one), and whether it is stale. */
    protected abstract Long bound();

    protected abstract boolean stale();

    /** Whether the group had a complete row (only such groups count as groups). */
    protected abstract boolean counted();

    private void endGroup() {
        pending.add(new GenericInternalRow(new Object[] {reader.groupHash(), null, null, null, null,
            counted() ? 1 : 2, bound(), stale(), rows, skipped, replayed}));
    }

    /** Queues one window row. */
    protected final void emit(Object key, long start, long end, Object value) {
        pending.add(new GenericInternalRow(new Object[] {reader.groupHash(), GroupReader.outputKey(key), start, end,
            value, 0, null, null, null, null, null}));
    }
}
