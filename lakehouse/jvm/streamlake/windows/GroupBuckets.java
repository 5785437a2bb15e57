package streamlake.windows;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.UnsafeExternalRowSorter;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.collection.unsafe.sort.PrefixComparators;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;

/**
 * A task's rows, as the shuffle delivers them (not sorted), handed on in the order the loops read
 * them: by the group hash {@code __gh} (ascending), and within one hash by the offset column (NULL
 * first; equal offsets keep their arrival order). Rows of groups that share a hash come interleaved
 * in offset order, as {@link LoopIterator} expects.
 *
 * <p>Why: a task's groups are few (a key's records are many), so appending each row's bytes to its
 * hash's bucket and reading the buckets out one after the other groups the rows with sequential
 * memory access only. Spark's sort by the hash radix-sorts pointers to the rows and then reads the
 * rows in that order, one cache miss per row across the task's pages; with the copy that ordered
 * each hash's rows by offset after it, that was a quarter of a sliding job's CPU samples at 10M rows
 * (bench/README.md). A group's rows usually arrive in offset order already (each map task reads the
 * offsets of its files in order), which the append checks; a bucket that did not is sorted alone.
 *
 * <p>The buckets live in the task's execution memory, asked of Spark's memory manager before they
 * grow. When it grants less, or the task holds more than {@code maxHeld} rows or
 * {@code maxHeldBytes} bytes, every row held and the rest of the input go through Spark's own
 * external sorter instead (by hash, then offset; it spills to disk when memory runs short), so a
 * task of any size fits.
 *
 * <p>Like the sorter's, the row {@link #next} returns is reused: it is valid until the next call of
 * {@link #hasNext} or {@link #next}; the loops copy what they keep.
 */
final class GroupBuckets extends MemoryConsumer implements Iterator<InternalRow> {
    /** A bucket's chunks grow from 4 KiB to 1 MiB (many small groups waste little, a large one allocates rarely). */
    private static final int FIRST_CHUNK = 4 << 10, LAST_CHUNK = 1 << 20;
    /** Execution memory asked of the memory manager at a time. */
    private static final long RESERVE = 4L << 20;

    /** One hash's rows: chunks of [length][row bytes] records, in arrival order. */
    private static final class Bucket {
        final long hash;
        byte[][] chunks = new byte[4][];
        int[] used = new int[4];
        int count, rows;
        boolean ordered = true, lastNull;
        long lastOffset;

        Bucket(long hash) {
            this.hash = hash;
        }
    }

    private final Iterator<InternalRow> input;
    private final StructType schema;
    private final int gh, offset, maxHeld;
    private final long maxHeldBytes;
    private final boolean intOffset;
    private UnsafeProjection toUnsafe;            // for input rows that are not UnsafeRows (none from a shuffle)
    // hash -> bucket: open addressing, slots hold bucket index + 1 (0: free)
    private long[] slotHashes = new long[1024];
    private int[] slots = new int[1024];
    private Bucket[] buckets = new Bucket[256];
    private int bucketCount, heldRows;
    private long heldBytes, reserved;
    private boolean filled;
    // the read-out: the current bucket, its rows' places in order
    private int current = -1, next, size;
    private byte[][] rowChunk = new byte[256][];
    private int[] rowPos = new int[256], rowLen = new int[256];
    private final UnsafeRow out;
    // past the bounds: Spark's sorter
    private UnsafeExternalRowSorter sorter;
    private scala.collection.Iterator<InternalRow> sorted;

    GroupBuckets(Iterator<InternalRow> input, StructType schema, String offsetColumn, int maxHeld, long maxHeldBytes) {
        super(TaskContext.get().taskMemoryManager(), MemoryMode.ON_HEAP);
        this.input = input;
        this.schema = schema;
        this.maxHeld = Math.max(1, maxHeld);
        this.maxHeldBytes = Math.max(1, maxHeldBytes);
        this.gh = schema.fieldIndex("__gh");
        this.offset = schema.fieldIndex(offsetColumn);
        this.intOffset = schema.fields()[offset].dataType() instanceof IntegerType;
        this.out = new UnsafeRow(schema.size());
        // a task that stops reading early (a failure, a limit) gives its memory back all the same
        TaskContext.get().addTaskCompletionListener((TaskCompletionListener) context -> release());
    }

    @Override
    public boolean hasNext() {
        if (!filled) fill();
        if (sorted != null) {
            if (sorted.hasNext()) return true;
            sorted = null;
            sorter.cleanupResources();
            return false;
        }
        while (next >= size) {
            if (current >= 0 && current < bucketCount) drop(current);
            if (current >= bucketCount - 1) {  // read out (hasNext may be asked again)
                current = bucketCount;
                release();
                return false;
            }
            readOut(buckets[++current]);
        }
        return true;
    }

    @Override
    public InternalRow next() {
        if (!hasNext()) throw new NoSuchElementException();
        if (sorted != null) return sorted.next();  // the sorter's row is reused: the loop copies what it keeps
        out.pointTo(rowChunk[next], Platform.BYTE_ARRAY_OFFSET + rowPos[next], rowLen[next]);
        next++;
        return out;
    }

    /** Never asked to give memory back mid-append: past what it is granted, the task's rows go to Spark's sorter. */
    @Override
    public long spill(long size, MemoryConsumer trigger) {
        return 0L;
    }

    /** Reads the whole input into the buckets (or, past the bounds, into Spark's sorter). */
    private void fill() {
        filled = true;
        while (input.hasNext()) {
            UnsafeRow row = unsafe(input.next());
            int length = row.getSizeInBytes();
            Bucket bucket = bucketOf(row.getLong(gh));
            int chunk = newChunk(bucket, length + 4);
            if (heldRows == maxHeld || heldBytes + chunk > maxHeldBytes || !reserve(chunk)) {
                sortExternally(row);
                return;
            }
            add(bucket, row, length, chunk);
        }
        Arrays.sort(buckets, 0, bucketCount, (a, b) -> Long.compare(a.hash, b.hash));
    }

    /** The size of the chunk the bucket needs for {@code need} more bytes, 0 when its last chunk has room. */
    private static int newChunk(Bucket bucket, int need) {
        int last = bucket.count - 1;
        if (last >= 0 && bucket.chunks[last].length - bucket.used[last] >= need) return 0;
        return Math.max(need, last < 0 ? FIRST_CHUNK : Math.min(LAST_CHUNK, bucket.chunks[last].length * 2));
    }

    /** Accounts for {@code bytes} more in the task's execution memory; false when the manager grants less. */
    private boolean reserve(long bytes) {
        while (heldBytes + bytes > reserved) {
            long granted = acquireMemory(RESERVE);
            reserved += granted;
            if (granted < RESERVE) return false;
        }
        return true;
    }

    private void release() {
        if (reserved > 0) freeMemory(reserved);
        reserved = 0;
        heldBytes = 0;
        buckets = new Bucket[0];
        bucketCount = 0;
    }

    private Bucket bucketOf(long hash) {
        int mask = slots.length - 1;
        int slot = (int) (hash ^ (hash >>> 32)) * 0x9E3779B9 & mask;
        while (slots[slot] != 0) {
            if (slotHashes[slot] == hash) return buckets[slots[slot] - 1];
            slot = (slot + 1) & mask;
        }
        if (bucketCount == buckets.length) buckets = Arrays.copyOf(buckets, bucketCount * 2);
        Bucket bucket = new Bucket(hash);
        buckets[bucketCount++] = bucket;
        slotHashes[slot] = hash;
        slots[slot] = bucketCount;
        if (bucketCount * 2 > slots.length) rehash();
        return bucket;
    }

    private void rehash() {
        long[] oldHashes = slotHashes;
        int[] oldSlots = slots;
        slotHashes = new long[oldSlots.length * 2];
        slots = new int[oldSlots.length * 2];
        int mask = slots.length - 1;
        for (int i = 0; i < oldSlots.length; i++) {
            if (oldSlots[i] == 0) continue;
            long hash = oldHashes[i];
            int slot = (int) (hash ^ (hash >>> 32)) * 0x9E3779B9 & mask;
            while (slots[slot] != 0) slot = (slot + 1) & mask;
            slotHashes[slot] = hash;
            slots[slot] = oldSlots[i];
        }
    }

    /** Appends the row's length and bytes to the bucket's last chunk, or to a new one of {@code chunk} bytes. */
    private void add(Bucket bucket, UnsafeRow row, int length, int chunk) {
        if (chunk > 0) {
            if (bucket.count == bucket.chunks.length) {
                bucket.chunks = Arrays.copyOf(bucket.chunks, bucket.count * 2);
                bucket.used = Arrays.copyOf(bucket.used, bucket.count * 2);
            }
            bucket.chunks[bucket.count++] = new byte[chunk];
            heldBytes += chunk;
        }
        int last = bucket.count - 1;
        byte[] bytes = bucket.chunks[last];
        int at = bucket.used[last];
        Platform.putInt(bytes, Platform.BYTE_ARRAY_OFFSET + at, length);
        row.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET + at + 4);
        bucket.used[last] = at + 4 + length;
        heldRows++;
        boolean isNull = row.isNullAt(offset);
        long value = isNull ? 0L : offsetOf(row);
        if (bucket.rows > 0 && bucket.ordered && !bucket.lastNull && (isNull || value < bucket.lastOffset)) {
            bucket.ordered = false;
        }
        bucket.lastNull = isNull;
        bucket.lastOffset = value;
        bucket.rows++;
    }

    /** Lists the bucket's rows (their chunk, place and length) in offset order. */
    private void readOut(Bucket bucket) {
        if (rowChunk.length < bucket.rows) {
            int capacity = Math.max(bucket.rows, rowChunk.length * 2);
            rowChunk = new byte[capacity][];
            rowPos = new int[capacity];
            rowLen = new int[capacity];
        }
        int n = 0;
        for (int c = 0; c < bucket.count; c++) {
            byte[] chunk = bucket.chunks[c];
            for (int at = 0; at < bucket.used[c]; ) {
                int length = Platform.getInt(chunk, Platform.BYTE_ARRAY_OFFSET + at);
                rowChunk[n] = chunk;
                rowPos[n] = at + 4;
                rowLen[n++] = length;
                at += length + 4;
            }
        }
        next = 0;
        size = n;
        if (!bucket.ordered) order(n);
    }

    /** A stable sort of the listed rows by offset (TimSort: the runs the map tasks left are merged, not re-sorted). */
    private void order(int n) {
        long[] offsets = new long[n];
        boolean[] nulls = new boolean[n];
        for (int i = 0; i < n; i++) {
            out.pointTo(rowChunk[i], Platform.BYTE_ARRAY_OFFSET + rowPos[i], rowLen[i]);
            nulls[i] = out.isNullAt(offset);
            offsets[i] = nulls[i] ? 0L : offsetOf(out);
        }
        Integer[] index = new Integer[n];
        for (int i = 0; i < n; i++) index[i] = i;
        Arrays.sort(index, (a, b) -> nulls[a] || nulls[b] ? Boolean.compare(!nulls[a], !nulls[b])
                                                          : Long.compare(offsets[a], offsets[b]));
        byte[][] chunks = new byte[n][];
        int[] positions = new int[n], lengths = new int[n];
        for (int i = 0; i < n; i++) {
            chunks[i] = rowChunk[index[i]];
            positions[i] = rowPos[index[i]];
            lengths[i] = rowLen[index[i]];
        }
        System.arraycopy(chunks, 0, rowChunk, 0, n);
        System.arraycopy(positions, 0, rowPos, 0, n);
        System.arraycopy(lengths, 0, rowLen, 0, n);
    }

    /** Lets go of a read bucket's chunks (and of the execution memory they held, a reserve at a time). */
    private void drop(int index) {
        Bucket bucket = buckets[index];
        buckets[index] = null;
        for (int c = 0; c < bucket.count; c++) heldBytes -= bucket.chunks[c].length;
        Arrays.fill(rowChunk, 0, size, null);
        long spare = (reserved - Math.max(0, heldBytes)) / RESERVE * RESERVE;
        if (spare > 0) {
            freeMemory(spare);
            reserved -= spare;
        }
    }

    /** Every row held, this one and the rest of the input, through Spark's sorter by (hash, offset). */
    private void sortExternally(UnsafeRow row) {
        try {
            sorter = UnsafeExternalRowSorter.createWithRecordComparator(
                schema, HashOffsetComparator::new, PrefixComparators.LONG, new UnsafeExternalRowSorter.PrefixComputer() {
                    private final Prefix prefix = new Prefix();

                    @Override
                    public Prefix computePrefix(InternalRow r) {  // the hash; the comparator orders the offsets
                        prefix.isNull = false;
                        prefix.value = r.getLong(gh);
                        return prefix;
                    }
                }, SparkEnv.get().memoryManager().pageSizeBytes(), false);
            // the held rows first, a bucket at a time in arrival order, freeing each as it goes
            UnsafeRow held = new UnsafeRow(schema.size());
            for (int b = 0; b < bucketCount; b++) {
                Bucket bucket = buckets[b];
                for (int c = 0; c < bucket.count; c++) {
                    byte[] chunk = bucket.chunks[c];
                    for (int at = 0; at < bucket.used[c]; ) {
                        int length = Platform.getInt(chunk, Platform.BYTE_ARRAY_OFFSET + at);
                        held.pointTo(chunk, Platform.BYTE_ARRAY_OFFSET + at + 4, length);
                        sorter.insertRow(held);
                        at += length + 4;
                    }
                    bucket.chunks[c] = null;
                }
                buckets[b] = null;
            }
            bucketCount = 0;
            release();
            sorter.insertRow(row);
            while (input.hasNext()) sorter.insertRow(unsafe(input.next()));
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

    /** Two rows in the sorter's pages, by hash, then offset (NULL first): what the prefix leaves equal. */
    private final class HashOffsetComparator extends RecordComparator {
        private final UnsafeRow left = new UnsafeRow(schema.size()), right = new UnsafeRow(schema.size());

        @Override
        public int compare(Object leftBase, long leftOffset, int leftLength, Object rightBase, long rightOffset,
                           int rightLength) {
            left.pointTo(leftBase, leftOffset, leftLength);
            right.pointTo(rightBase, rightOffset, rightLength);
            int byHash = Long.compare(left.getLong(gh), right.getLong(gh));
            if (byHash != 0) return byHash;
            boolean leftNull = left.isNullAt(offset), rightNull = right.isNullAt(offset);
            if (leftNull || rightNull) return Boolean.compare(!leftNull, !rightNull);
            return Long.compare(offsetOf(left), offsetOf(right));
        }
    }
}
