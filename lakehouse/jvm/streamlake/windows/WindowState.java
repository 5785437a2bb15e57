package streamlake.windows;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.AccumulatorV2;

/**
 * The per-group window state of a full run (lakehouse/window_state.py), gathered by the fixed
 * windows' loop while it computes the windows, instead of a scan of its own after the output's
 * commit: per group {@code latest} (its event time at the end, from 0), {@code last} (its last
 * complete record's order columns) and {@code records} (its complete records with
 * {@code ts > latest - bound}, the prepared columns), the rows of {@code full_state}.
 *
 * <p>A group keeps its records newer than its running {@code event time - bound} while it is
 * read (older ones can never be in its state: the event time only grows). Each task adds its
 * groups' state rows (UnsafeRows) to an {@link Rows} accumulator; a task whose state grows past
 * {@code taskCap} records, or a merge past {@code totalCap}, marks the accumulator overflowed (no
 * rows: the job then scans for the state as before), so the driver never collects more than that.
 */
final class WindowState {
    private WindowState() {}

    /** Where each field of the state comes from in the loop's input. */
    static final class Spec implements java.io.Serializable {
        final String schemaJson;
        final String[] orderCols, recordCols;
        final long bound, taskCap;

        Spec(String schemaJson, String[] orderCols, String[] recordCols, long bound, long taskCap) {
            this.schemaJson = schemaJson;
            this.orderCols = orderCols;
            this.recordCols = recordCols;
            this.bound = bound;
            this.taskCap = taskCap;
        }
    }

    /** The state rows of every task; {@link #overflowed()} when they were too many to collect. */
    static final class Rows extends AccumulatorV2<InternalRow, List<InternalRow>> {
        private final long totalCap;
        private final int groupFields;
        private ArrayList<InternalRow> rows = new ArrayList<>();
        private long records;
        private boolean overflow;

        Rows(long totalCap, int groupFields) {
            this.totalCap = totalCap;
            this.groupFields = groupFields;
        }

        @Override
        public boolean isZero() {
            return rows.isEmpty() && !overflow;
        }

        @Override
        public AccumulatorV2<InternalRow, List<InternalRow>> copy() {
            Rows out = new Rows(totalCap, groupFields);
            out.rows = new ArrayList<>(rows);
            out.records = records;
            out.overflow = overflow;
            return out;
        }

        @Override
        public void reset() {
            rows = new ArrayList<>();
            records = 0;
            overflow = false;
        }

        @Override
        public void add(InternalRow row) {
            if (overflow) return;
            int last = row.numFields() - 1;
            records += row.isNullAt(last) ? 0 : row.getArray(last).numElements();
            rows.add(row);
            if (records > totalCap) overflow();
        }

        void overflow() {
            overflow = true;
            rows = new ArrayList<>();
        }

        boolean overflowed() {
            return overflow;
        }

        @Override
        public void merge(AccumulatorV2<InternalRow, List<InternalRow>> other) {
            Rows o = (Rows) other;
            if (o.overflow) overflow();
            for (InternalRow row : o.rows) add(row);
        }

        @Override
        public List<InternalRow> value() {
            return rows;
        }

        /** The rows, one per group (a task run twice, e.g. speculatively, adds its groups twice). */
        List<InternalRow> distinct(StructType schema) {
            HashSet<List<Object>> seen = new HashSet<>();
            ArrayList<InternalRow> out = new ArrayList<>();
            for (InternalRow row : rows) {
                ArrayList<Object> key = new ArrayList<>(groupFields);
                for (int i = 0; i < groupFields; i++) {
                    DataType type = schema.fields()[i].dataType();
                    Object v = row.isNullAt(i) ? null : row.get(i, type);
                    key.add(v instanceof byte[] ? java.nio.ByteBuffer.wrap((byte[]) v) : v);
                }
                if (seen.add(key)) out.add(row);
            }
            return out;
        }
    }

    /** A group's buffered records and last order values (see {@link Collector}). */
    static final class Buffer {
        long maxTs = Long.MIN_VALUE;
        int size;
        long[] ts = new long[16];
        long[] lv;
        double[] dv;
        long[][] longs;        // per varying int/bigint field
        boolean[][] nulls;     // per varying int/bigint field
        Object[][] objects;    // per varying field of another type
        final long[] lastLongs;
        final boolean[] lastNulls;
        final Object[] lastObjects;
        // an increment's old state of the group (LoopIterator): its latest and last
        boolean hasOld, hasOldLast;
        long oldLatest = Long.MIN_VALUE;
        final long[] oldLastLongs;
        final boolean[] oldLastNulls;

        Buffer(boolean integral, int longFields, int objectFields) {
            if (integral) lv = new long[16]; else dv = new double[16];
            longs = new long[longFields][16];
            nulls = new boolean[longFields][16];
            objects = new Object[objectFields][16];
            lastLongs = new long[longFields];
            lastNulls = new boolean[longFields];
            lastObjects = new Object[objectFields];
            oldLastLongs = new long[longFields];
            oldLastNulls = new boolean[longFields];
        }
    }

    /**
     * One task's collector: reads each complete row's fields into its group's {@link Buffer}
     * and, at the group's end, adds the group's state row to the accumulator. Fields of the
     * group's own columns are taken from the group's values, the others from the rows
     * (int/bigint ones into primitive arrays).
     */
    static final class Collector {
        private static final int GROUP = 0, TS = 1, VALUE = 2, LONG = 3, INT = 4, OBJECT = 5;
        private final Spec spec;
        private final Rows out;
        private final GroupReader reader;
        private final StructType schema;
        private final UnsafeProjection project;
        private final int groupFields;
        // per record field: its kind and slot (group value index, or buffer column)
        private final int[] recordKind, recordSlot;
        private final int[] lastKind, lastSlot;
        private final int[] longField;             // input field of each long slot
        private final boolean[] longIsInt;
        private final int[] objectField;           // input field of each object slot
        private final DataType[] objectType;
        private long collected;
        private boolean stopped;

        Collector(Spec spec, Rows out, StructType input, String[] groupCols, GroupReader reader) {
            this.spec = spec;
            this.out = out;
            this.reader = reader;
            this.schema = (StructType) DataType.fromJson(spec.schemaJson);
            this.project = UnsafeProjection.create(schema);
            this.groupFields = groupCols.length;
            List<String> groups = java.util.Arrays.asList(groupCols);
            ArrayList<Integer> longs = new ArrayList<>(), objects = new ArrayList<>();
            ArrayList<Boolean> ints = new ArrayList<>();
            HashMap<String, int[]> slotNames = new HashMap<>();
            recordKind = new int[spec.recordCols.length];
            recordSlot = new int[spec.recordCols.length];
            for (int i = 0; i < spec.recordCols.length; i++) {
                String name = spec.recordCols[i];
                int[] kindSlot = place(name, input, groups, longs, ints, objects, slotNames);
                recordKind[i] = kindSlot[0];
                recordSlot[i] = kindSlot[1];
            }
            lastKind = new int[spec.orderCols.length];
            lastSlot = new int[spec.orderCols.length];
            for (int i = 0; i < spec.orderCols.length; i++) {
                int[] kindSlot = place(spec.orderCols[i], input, groups, longs, ints, objects, slotNames);
                lastKind[i] = kindSlot[0];
                lastSlot[i] = kindSlot[1];
            }
            longField = longs.stream().mapToInt(Integer::intValue).toArray();
            longIsInt = new boolean[ints.size()];
            for (int i = 0; i < longIsInt.length; i++) longIsInt[i] = ints.get(i);
            objectField = objects.stream().mapToInt(Integer::intValue).toArray();
            objectType = new DataType[objectField.length];
            for (int i = 0; i < objectField.length; i++) objectType[i] = input.fields()[objectField[i]].dataType();
            if (reader.isNew >= 0) {
                for (int kind : lastKind) {
                    if (kind == OBJECT) {
                        throw new IllegalArgumentException("an increment's loop orders by int and bigint columns only");
                    }
                }
            }
        }

        /** (kind, slot) of an input column; a varying column gets a buffer slot (once per name). */
        private int[] place(String name, StructType input, List<String> groups, ArrayList<Integer> longs,
                            ArrayList<Boolean> ints, ArrayList<Integer> objects, HashMap<String, int[]> placed) {
            if (groups.contains(name)) return new int[] {GROUP, groups.indexOf(name)};
            if (name.equals("ts")) return new int[] {TS, 0};
            if (name.equals("value")) return new int[] {VALUE, 0};
            int[] known = placed.get(name);
            if (known != null) return known;
            int field = input.fieldIndex(name);
            DataType type = input.fields()[field].dataType();
            int[] kindSlot;
            if (type instanceof LongType || type instanceof IntegerType) {
                longs.add(field);
                ints.add(type instanceof IntegerType);
                kindSlot = new int[] {type instanceof IntegerType ? INT : LONG, longs.size() - 1};
            } else {
                objects.add(field);
                kindSlot = new int[] {OBJECT, objects.size() - 1};
            }
            placed.put(name, kindSlot);
            return kindSlot;
        }

        Buffer newBuffer() {
            return new Buffer(reader.integral, longField.length, objectField.length);
        }

        /** An increment's old row: the group's old {@code latest} and {@code last}. */
        void old(Buffer b, InternalRow row) {
            b.hasOld = true;
            if (!row.isNullAt(reader.oldLatest)) b.oldLatest = Math.max(b.oldLatest, row.getLong(reader.oldLatest));
            if (b.hasOldLast || row.isNullAt(reader.oldLast)) return;
            InternalRow last = row.getStruct(reader.oldLast, lastKind.length);
            b.hasOldLast = true;
            for (int j = 0; j < lastKind.length; j++) {
                if (lastKind[j] == GROUP) continue;
                int slot = lastSlot[j];
                b.oldLastNulls[slot] = last.isNullAt(j);
                b.oldLastLongs[slot] = last.isNullAt(j) ? 0L : lastKind[j] == INT ? last.getInt(j) : last.getLong(j);
            }
        }

        /** Whether an increment's new row lies at or before its group's old last record in offset order. */
        boolean atOrBeforeOldLast(Buffer b, InternalRow row) {
            if (!b.hasOldLast) return false;
            for (int j = 0; j < lastKind.length; j++) {
                if (lastKind[j] == GROUP) continue;
                int f = longField[lastSlot[j]];
                boolean isNull = row.isNullAt(f);
                long v = isNull ? 0L : lastKind[j] == INT ? row.getInt(f) : row.getLong(f);
                int c = compare(isNull, v, b.oldLastNulls[lastSlot[j]], b.oldLastLongs[lastSlot[j]]);
                if (c != 0) return c < 0;
            }
            return true;
        }

        /** Nulls first, as Spark orders them. */
        private static int compare(boolean aNull, long a, boolean bNull, long b) {
            if (aNull || bNull) return aNull == bNull ? 0 : aNull ? -1 : 1;
            return Long.compare(a, b);
        }

        /** Whether the group's old last record comes after the last complete row the loop read. */
        private boolean oldLastIsLater(Buffer b) {
            if (!b.hasOldLast) return false;
            if (b.maxTs == Long.MIN_VALUE) return true;  // no complete row read
            for (int j = 0; j < lastKind.length; j++) {
                if (lastKind[j] == GROUP) continue;
                int slot = lastSlot[j];
                int c = compare(b.oldLastNulls[slot], b.oldLastLongs[slot], b.lastNulls[slot], b.lastLongs[slot]);
                if (c != 0) return c > 0;
            }
            return false;
        }

        /** One complete row of the group that owns {@code b}. */
        void add(Buffer b, InternalRow row) {
            if (b == null) return;
            if (stopped) {  // no records kept; the event time still counts
                long t = row.getLong(reader.ts);
                if (t > b.maxTs) b.maxTs = t;
                return;
            }
            long t = row.getLong(reader.ts);
            if (t > b.maxTs) b.maxTs = t;
            if (b.size == b.ts.length) compact(b);
            int i = b.size++;
            b.ts[i] = t;
            if (reader.integral) b.lv[i] = row.getLong(reader.value); else b.dv[i] = row.getDouble(reader.value);
            for (int s = 0; s < longField.length; s++) {
                int f = longField[s];
                boolean isNull = row.isNullAt(f);
                long v = isNull ? 0L : longIsInt[s] ? row.getInt(f) : row.getLong(f);
                b.longs[s][i] = v;
                b.nulls[s][i] = isNull;
                b.lastLongs[s] = v;
                b.lastNulls[s] = isNull;
            }
            for (int s = 0; s < objectField.length; s++) {
                Object v = GroupReader.copy(row, objectField[s], objectType[s]);
                b.objects[s][i] = v;
                b.lastObjects[s] = v;
            }
        }

        private long threshold(Buffer b) {
            return Math.max(b.oldLatest, Math.max(0L, b.maxTs)) - spec.bound;
        }

        /** Drops the records at or below the running threshold; grows the arrays when still half full. */
        private void compact(Buffer b) {
            long below = threshold(b);
            int kept = 0;
            for (int i = 0; i < b.size; i++) {
                if (b.ts[i] <= below) continue;
                move(b, i, kept++);
            }
            b.size = kept;
            if (kept * 2 >= b.ts.length) {
                int n = b.ts.length * 2;
                b.ts = java.util.Arrays.copyOf(b.ts, n);
                if (b.lv != null) b.lv = java.util.Arrays.copyOf(b.lv, n);
                if (b.dv != null) b.dv = java.util.Arrays.copyOf(b.dv, n);
                for (int s = 0; s < b.longs.length; s++) {
                    b.longs[s] = java.util.Arrays.copyOf(b.longs[s], n);
                    b.nulls[s] = java.util.Arrays.copyOf(b.nulls[s], n);
                }
                for (int s = 0; s < b.objects.length; s++) b.objects[s] = java.util.Arrays.copyOf(b.objects[s], n);
            }
        }

        private static void move(Buffer b, int from, int to) {
            if (from == to) return;
            b.ts[to] = b.ts[from];
            if (b.lv != null) b.lv[to] = b.lv[from]; else b.dv[to] = b.dv[from];
            for (int s = 0; s < b.longs.length; s++) {
                b.longs[s][to] = b.longs[s][from];
                b.nulls[s][to] = b.nulls[s][from];
            }
            for (int s = 0; s < b.objects.length; s++) b.objects[s][to] = b.objects[s][from];
        }

        /** The group's state row, added to the accumulator (none for a group without complete rows). */
        void finish(Buffer b, Object[] groupValues) {
            if (b == null || stopped || (b.maxTs == Long.MIN_VALUE && !b.hasOld)) return;
            long latest = Math.max(b.oldLatest, b.maxTs == Long.MIN_VALUE ? Long.MIN_VALUE : Math.max(0L, b.maxTs));
            long below = latest - spec.bound;
            ArrayList<Object> records = new ArrayList<>();
            for (int i = 0; i < b.size; i++) {
                if (b.ts[i] <= below) continue;
                Object[] fields = new Object[recordKind.length];
                for (int j = 0; j < fields.length; j++) fields[j] = field(b, i, recordKind[j], recordSlot[j], groupValues);
                records.add(new GenericInternalRow(fields));
            }
            boolean oldLast = oldLastIsLater(b);
            Object[] last = new Object[lastKind.length];
            for (int j = 0; j < last.length; j++) {
                last[j] = oldLast ? oldLastField(b, lastKind[j], lastSlot[j], groupValues)
                    : lastField(b, lastKind[j], lastSlot[j], groupValues);
            }
            Object[] row = new Object[groupFields + 3];
            System.arraycopy(groupValues, 0, row, 0, groupFields);
            row[groupFields] = latest;
            row[groupFields + 1] = new GenericInternalRow(last);
            row[groupFields + 2] = records.isEmpty() ? null : new GenericArrayData(records.toArray());
            collected += records.size();
            if (collected > spec.taskCap) {  // too many to collect: the job scans for the state
                stopped = true;
                out.overflow();
                return;
            }
            out.add(project.apply(new GenericInternalRow(row)).copy());
        }

        private Object field(Buffer b, int i, int kind, int slot, Object[] groupValues) {
            switch (kind) {
                case GROUP: return groupValues[slot];
                case TS: return b.ts[i];
                case VALUE: return b.lv != null ? (Object) b.lv[i] : (Object) b.dv[i];
                case LONG: return b.nulls[slot][i] ? null : (Object) b.longs[slot][i];
                case INT: return b.nulls[slot][i] ? null : (Object) (int) b.longs[slot][i];
                default: return b.objects[slot][i];
            }
        }

        private Object oldLastField(Buffer b, int kind, int slot, Object[] groupValues) {
            switch (kind) {
                case GROUP: return groupValues[slot];
                case LONG: return b.oldLastNulls[slot] ? null : (Object) b.oldLastLongs[slot];
                case INT: return b.oldLastNulls[slot] ? null : (Object) (int) b.oldLastLongs[slot];
                default: throw new IllegalArgumentException("order column of kind " + kind);
            }
        }

        private Object lastField(Buffer b, int kind, int slot, Object[] groupValues) {
            switch (kind) {
                case GROUP: return groupValues[slot];
                case LONG: return b.lastNulls[slot] ? null : (Object) b.lastLongs[slot];
                case INT: return b.lastNulls[slot] ? null : (Object) (int) b.lastLongs[slot];
                case OBJECT: return b.lastObjects[slot];
                default: throw new IllegalArgumentException("order column of kind " + kind);
            }
        }
    }
}
