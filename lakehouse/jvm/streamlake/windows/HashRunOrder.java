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
import org.apache.spark.unsafe.Platform;
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
 * 1-2 s less (bench/README.md). The price is memory: one hash's rows are held at a time, their
 * bytes copied one after the other into one reused array (~100 bytes a row for the loop's six
 * columns; no object per row: at 10M sliding rows the copy's share of the job's CPU samples went
 * from 6.0% to 5.1% and the collector's from 1.2% to 0.7%; what is left is mostly the first read
 * of rows the sort scattered). A hash with more than {@code maxHeld} rows, or more than
 * {@code maxHeldBytes} of row bytes, goes to Spark's own external sorter instead (by offset, in the
 * task's managed memory, spilling to disk when it runs short), so a key of any size fits.
 *
 * <p>Like the sorter's, the row {@link #next} returns is reused: it is valid until the next call
 * of {@link #hasNext} or {@link #next}; the loops copy what they keep.
 */
final class HashRunOrder implements Iterator<InternalRow> {
    /** The largest array kept from one hash to the next (a larger one is dropped once its hash is read out). */
    private static final int KEPT_BYTES = 16 << 20;

    private final Iterator<InternalRow> input;
    private final StructType schema;
    private final int gh, offset, maxHeld, maxHeldBytes;
    private final boolean intOffset;
    private UnsafeProjection toUnsafe;           // for input rows that are not UnsafeRows (none from a sort)
    private UnsafeExternalRowSorter sorter;       // a hash past maxHeld rows or maxHeldBytes, while it is read out
    private scala.collection.Iterator<InternalRow> sorted;
    private byte[] held = new byte[1 << 16];      // the run's rows' bytes, one after the other
    private int heldBytes;
    private int[] starts = new int[256], sizes = new int[256];
    private long[] offsets = new long[256];
    private boolean[] nulls = new boolean[256];
    private int size, next;
    private final UnsafeRow out, scratch;         // pointed at the held bytes
    private byte[] following = new byte[256];     // the first row of the next hash, copied
    private int followingSize = -1;               // -1: none

    HashRunOrder(Iterator<InternalRow> input, StructType schema, String offsetColumn, int maxHeld, int maxHeldBytes) {
        this.input = input;
        this.schema = schema;
        this.maxHeld = Math.max(1, maxHeld);
        this.maxHeldBytes = Math.min(Math.max(1, maxHeldBytes), 1 << 30);  // the held array's int offsets
        this.gh = schema.fieldIndex("__gh");
        this.offset = schema.fieldIndex(offsetColumn);
        this.intOffset = schema.fields()[offset].dataType() instanceof IntegerType;
        this.out = new UnsafeRow(schema.size());
        this.scratch = new UnsafeRow(schema.size());
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
        out.pointTo(held, Platform.BYTE_ARRAY_OFFSET + starts[next], sizes[next]);
        next++;
        return out;
    }

    /** Reads the next hash's rows (the sorter reuses its row objects: their bytes are copied) and orders them. */
    private void fill() {
        size = 0;
        next = 0;
        heldBytes = 0;
        if (held.length > KEPT_BYTES) held = new byte[1 << 16];  // a large hash's array is not kept for the task
        UnsafeRow first;
        if (followingSize >= 0) {
            scratch.pointTo(following, Platform.BYTE_ARRAY_OFFSET, followingSize);
            followingSize = -1;
            first = scratch;
        } else if (input.hasNext()) {
            first = unsafe(input.next());
        } else {
            return;
        }
        long hash = first.getLong(gh);
        add(first);
        while (input.hasNext()) {
            UnsafeRow row = unsafe(input.next());
            if (row.getLong(gh) != hash) {
                keepFollowing(row);
                break;
            }
            if (size == maxHeld || (long) heldBytes + row.getSizeInBytes() > maxHeldBytes) {
                sortExternally(hash, row);
                return;
            }
            add(row);
        }
        if (!inOrder()) order();
    }

    private void keepFollowing(UnsafeRow row) {
        int length = row.getSizeInBytes();
        if (following.length < length) following = new byte[Math.max(length, following.length * 2)];
        row.writeToMemory(following, Platform.BYTE_ARRAY_OFFSET);
        followingSize = length;
    }

    /** The rest of a hash too large to hold, with the rows held so far, through Spark's sorter. */
    private void sortExternally(long hash, UnsafeRow row) {
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
                scratch.pointTo(held, Platform.BYTE_ARRAY_OFFSET + starts[i], sizes[i]);
                sorter.insertRow(scratch);
            }
            size = 0;
            heldBytes = 0;
            sorter.insertRow(row);
            while (input.hasNext()) {
                UnsafeRow more = unsafe(input.next());
                if (more.getLong(gh) != hash) {
                    keepFollowing(more);
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

    /** Appends the row's bytes to the held array (which grows as needed). */
    private void add(UnsafeRow row) {
        if (size == starts.length) {
            starts = Arrays.copyOf(starts, size * 2);
            sizes = Arrays.copyOf(sizes, size * 2);
            offsets = Arrays.copyOf(offsets, size * 2);
            nulls = Arrays.copyOf(nulls, size * 2);
        }
        int length = row.getSizeInBytes();
        if (held.length - heldBytes < length) {
            held = Arrays.copyOf(held, (int) Math.min(Integer.MAX_VALUE - 16, Math.max((long) held.length * 2,
                                                                                        (long) heldBytes + length)));
        }
        row.writeToMemory(held, Platform.BYTE_ARRAY_OFFSET + heldBytes);
        boolean isNull = row.isNullAt(offset);
        nulls[size] = isNull;
        offsets[size] = isNull ? 0L : offsetOf(row);
        starts[size] = heldBytes;
        sizes[size++] = length;
        heldBytes += length;
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
        int[] orderedStarts = new int[starts.length], orderedSizes = new int[sizes.length];
        for (int i = 0; i < size; i++) {
            orderedStarts[i] = starts[index[i]];
            orderedSizes[i] = sizes[index[i]];
        }
        starts = orderedStarts;  // offsets and nulls are not read again for this run
        sizes = orderedSizes;
    }
}
