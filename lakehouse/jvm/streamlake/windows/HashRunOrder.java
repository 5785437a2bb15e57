package streamlake.windows;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.SparkEnv;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.UnsafeExternalRowSorter;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.collection.unsafe.sort.PrefixComparators;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;

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
 * 1-2 s less (bench/README.md). The price is memory: one hash's rows are held at a time, as copies
 * (the row's bytes, ~100 for the loop's six columns). A hash with more than {@code maxHeld} rows
 * goes to Spark's own external sorter instead (by offset, in the task's managed memory, spilling
 * to disk when it runs short), so a key of any size fits.
 */
final class HashRunOrder implements Iterator<InternalRow> {
    private final Iterator<InternalRow> input;
    private final StructType schema;
    private final int gh, offset, maxHeld;
    private final boolean intOffset;
    private UnsafeProjection toUnsafe;           // for input rows that are not UnsafeRows (none from a sort)
    private UnsafeExternalRowSorter sorter;       // a hash past maxHeld rows, while it is read out
    private scala.collection.Iterator<InternalRow> sorted;
    private InternalRow[] run = new InternalRow[256];
    private long[] offsets = new long[256];
    private boolean[] nulls = new boolean[256];
    private int size, next;
    private InternalRow following;  // the first row of the next hash (a copy)

    HashRunOrder(Iterator<InternalRow> input, StructType schema, String offsetColumn, int maxHeld) {
        this.input = input;
        this.schema = schema;
        this.maxHeld = Math.max(1, maxHeld);
        this.gh = schema.fieldIndex("__gh");
        this.offset = schema.fieldIndex(offsetColumn);
        this.intOffset = schema.fields()[offset].dataType() instanceof IntegerType;
    }

    @Override
    public boolean hasNext() {
        if (sorted != null) {
            if (sorted.hasNext()) return true;
            sorted = null;
            sorter.cleanupResources();
            sorter = null;
        }
        if (next < size) return true;
        fill();
        return size > 0 || sorted != null;
    }

    @Override
    public InternalRow next() {
        if (!hasNext()) throw new NoSuchElementException();
        if (sorted != null) return sorted.next();  // the sorter's row is reused: the loop copies what it keeps
        InternalRow row = run[next];
        run[next++] = null;
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
            if (size == maxHeld) {
                sortExternally(hash, row);
                return;
            }
            add(row.copy());
        }
        if (!inOrder()) order();
    }

    /** The rest of a hash too large to hold, with the rows held so far, through Spark's sorter. */
    private void sortExternally(long hash, InternalRow row) {
        try {
            sorter = UnsafeExternalRowSorter.createWithRecordComparator(
                schema, OffsetComparator::new, PrefixComparators.LONG, new UnsafeExternalRowSorter.PrefixComputer() {
                    private final Prefix prefix = new Prefix();

                    @Override
                    public Prefix computePrefix(InternalRow r) {  // the offset itself, NULL below every offset
                        prefix.isNull = r.isNullAt(offset);
                        prefix.value = prefix.isNull ? Long.MIN_VALUE : offsetOf(r);
                        return prefix;
                    }
                }, SparkEnv.get().memoryManager().pageSizeBytes(), false);
            for (int i = 0; i < size; i++) {
                sorter.insertRow(unsafe(run[i]));
                run[i] = null;
            }
            size = 0;
            sorter.insertRow(unsafe(row));
            while (input.hasNext()) {
                InternalRow more = input.next();
                if (more.getLong(gh) != hash) {
                    following = more.copy();
                    break;
                }
                sorter.insertRow(unsafe(more));
            }
            sorted = sorter.sort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private UnsafeRow unsafe(InternalRow row) {
        if (row instanceof UnsafeRow) return (UnsafeRow) row;
        if (toUnsafe == null) toUnsafe = UnsafeProjection.create(schema);
        return toUnsafe.apply(row);
    }

    private long offsetOf(InternalRow row) {
        return intOffset ? row.getInt(offset) : row.getLong(offset);
    }

    /** Two rows in the sorter's pages, by offset (NULL first): what the prefix leaves equal. */
    private final class OffsetComparator extends RecordComparator {
        private final UnsafeRow left = new UnsafeRow(schema.size()), right = new UnsafeRow(schema.size());

        @Override
        public int compare(Object leftBase, long leftOffset, int leftLength, Object rightBase, long rightOffset,
                           int rightLength) {
            left.pointTo(leftBase, leftOffset, leftLength);
            right.pointTo(rightBase, rightOffset, rightLength);
            boolean leftNull = left.isNullAt(offset), rightNull = right.isNullAt(offset);
            if (leftNull || rightNull) return Boolean.compare(!leftNull, !rightNull);
            return Long.compare(offsetOf(left), offsetOf(right));
        }
    }

    private void add(InternalRow row) {
        if (size == run.length) {
            run = Arrays.copyOf(run, size * 2);
            offsets = Arrays.copyOf(offsets, size * 2);
            nulls = Arrays.copyOf(nulls, size * 2);
        }
        boolean isNull = row.isNullAt(offset);
        nulls[size] = isNull;
        offsets[size] = isNull ? 0L : offsetOf(row);
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
