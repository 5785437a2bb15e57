package streamlake.windows;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructType;

/**
 * A task's rows sorted by the group hash {@code __gh} alone, handed on in the order the loops
 * read them: within each run of one hash, by the offset column (NULL first; equal offsets keep
 * their arrival order). Rows of groups that share a hash come interleaved in offset order, as
 * {@link LoopIterator} expects.
 *
 * <p>Why: Spark sorts a single bigint column by radix sort on its 8-byte prefix, while a sort by
 * (hash, offset, group) compares every pair of rows of one group in full (they share the prefix).
 * Ordering each hash's rows here costs a copy of each row and, when a group's rows did not arrive
 * in offset order already, a sort of that group's rows alone; at 10M sliding rows the task sorts
 * ~1 s less (bench/README.md). The price is memory: one hash's rows are held at a time, as copies
 * (the row's bytes, ~100 for the loop's six columns), where {@link SlidingLoop} holds every record
 * of a tidy key anyway (48 bytes each); Spark's sort could spill them instead. So only sliding
 * windows take this order: the fixed windows' loops hold a key's open windows, not its records,
 * and keep Spark's full sort.
 */
final class HashRunOrder implements Iterator<InternalRow> {
    private final Iterator<InternalRow> input;
    private final int gh, offset;
    private final boolean intOffset;
    private InternalRow[] run = new InternalRow[256];
    private long[] offsets = new long[256];
    private boolean[] nulls = new boolean[256];
    private int size, next;
    private InternalRow following;  // the first row of the next hash (a copy)

    HashRunOrder(Iterator<InternalRow> input, StructType schema, String offsetColumn) {
        this.input = input;
        this.gh = schema.fieldIndex("__gh");
        this.offset = schema.fieldIndex(offsetColumn);
        this.intOffset = schema.fields()[offset].dataType() instanceof IntegerType;
    }

    @Override
    public boolean hasNext() {
        if (next < size) return true;
        fill();
        return size > 0;
    }

    @Override
    public InternalRow next() {
        if (!hasNext()) throw new NoSuchElementException();
        InternalRow row = run[next];
        run[next++] = null;  // the loop copies what it keeps
        return row;
    }

    /** Reads the next hash's rows (the sorter reuses its row objects: each is copied) and orders them. */
    private void fill() {
        size = 0;
        next = 0;
        if (following == null && !input.hasNext()) return;
        InternalRow first = following != null ? following : input.next().copy();
        following = null;
        long hash = first.getLong(gh);
        add(first);
        while (input.hasNext()) {
            InternalRow row = input.next();
            if (row.getLong(gh) != hash) {
                following = row.copy();
                break;
            }
            add(row.copy());
        }
        if (!inOrder()) order();
    }

    private void add(InternalRow row) {
        if (size == run.length) {
            run = Arrays.copyOf(run, size * 2);
            offsets = Arrays.copyOf(offsets, size * 2);
            nulls = Arrays.copyOf(nulls, size * 2);
        }
        boolean isNull = row.isNullAt(offset);
        nulls[size] = isNull;
        offsets[size] = isNull ? 0L : intOffset ? row.getInt(offset) : row.getLong(offset);
        run[size++] = row;
    }

    private int compare(int a, int b) {
        if (nulls[a] || nulls[b]) return Boolean.compare(!nulls[a], !nulls[b]);
        return Long.compare(offsets[a], offsets[b]);
    }

    private boolean inOrder() {
        for (int i = 1; i < size; i++) if (compare(i - 1, i) > 0) return false;
        return true;
    }

    /** A stable sort of the run by offset (TimSort: the runs a shuffle leaves are merged, not re-sorted). */
    private void order() {
        Integer[] index = new Integer[size];
        for (int i = 0; i < size; i++) index[i] = i;
        Arrays.sort(index, this::compare);
        InternalRow[] ordered = new InternalRow[run.length];
        for (int i = 0; i < size; i++) ordered[i] = run[index[i]];
        run = ordered;  // offsets and nulls are not read again for this run
    }
}
