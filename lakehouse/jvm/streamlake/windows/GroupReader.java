package streamlake.windows;

import java.nio.ByteBuffer;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads the fields the loops need from a sorted row: the closing group (its hash {@code __gh},
 * then the group's columns, compared exactly: two groups may share a hash), the key, the
 * timestamp and the value, and tells where a group ends. Values copied out of a row are
 * independent of the row's buffer, which the sorter reuses.
 */
final class GroupReader {
    final int gh, ts, value, key, closedFloor;
    final boolean integral;
    private final int[] groupFields;
    private final DataType[] groupTypes;
    private final DataType keyType;
    private long currentGh;
    private Object[] current;

    GroupReader(StructType schema, String[] groupCols) {
        gh = schema.fieldIndex("__gh");
        ts = schema.fieldIndex("ts");
        value = schema.fieldIndex("value");
        key = schema.fieldIndex("key");
        closedFloor = java.util.Arrays.asList(schema.fieldNames()).contains("__closed_floor")
            ? schema.fieldIndex("__closed_floor") : -1;
        DataType valueType = schema.fields()[value].dataType();
        if (!(valueType instanceof LongType) && !(valueType instanceof org.apache.spark.sql.types.DoubleType)) {
            throw new IllegalArgumentException("the window loop reads bigint or double values, got " + valueType);
        }
        integral = valueType instanceof LongType;
        groupFields = new int[groupCols.length];
        groupTypes = new DataType[groupCols.length];
        for (int i = 0; i < groupCols.length; i++) {
            groupFields[i] = schema.fieldIndex(groupCols[i]);
            groupTypes[i] = schema.fields()[groupFields[i]].dataType();
        }
        keyType = schema.fields()[key].dataType();
    }

    /** True when {@code row} starts a new group (the first row too); it becomes the current group. */
    boolean startsGroup(InternalRow row) {
        long rowGh = row.getLong(gh);
        if (current != null && rowGh == currentGh && sameGroup(row)) return false;
        currentGh = rowGh;
        current = new Object[groupFields.length];
        for (int i = 0; i < groupFields.length; i++) current[i] = copy(row, groupFields[i], groupTypes[i]);
        return true;
    }

    long groupHash() {
        return currentGh;
    }

    /** The row's key, copied; wrapped for hashing when binary (see {@link #outputKey}). */
    Object key(InternalRow row) {
        Object k = copy(row, key, keyType);
        return k instanceof byte[] ? ByteBuffer.wrap((byte[]) k) : k;
    }

    /** A key from {@link #key} as an output row holds it. */
    static Object outputKey(Object key) {
        return key instanceof ByteBuffer ? ((ByteBuffer) key).array() : key;
    }

    boolean complete(InternalRow row) {
        return !row.isNullAt(ts) && !row.isNullAt(value);
    }

    private boolean sameGroup(InternalRow row) {
        for (int i = 0; i < groupFields.length; i++) {
            int f = groupFields[i];
            DataType t = groupTypes[i];
            Object c = current[i];
            if (row.isNullAt(f) || c == null) {
                if (row.isNullAt(f) != (c == null)) return false;
            } else if (t instanceof IntegerType) {
                if (row.getInt(f) != (Integer) c) return false;
            } else if (t instanceof LongType) {
                if (row.getLong(f) != (Long) c) return false;
            } else if (t instanceof StringType) {
                if (!row.getUTF8String(f).equals(c)) return false;
            } else if (t instanceof BinaryType) {
                if (!java.util.Arrays.equals(row.getBinary(f), (byte[]) c)) return false;
            } else if (!row.get(f, t).equals(c)) {
                return false;
            }
        }
        return true;
    }

    private static Object copy(InternalRow row, int field, DataType type) {
        if (row.isNullAt(field)) return null;
        if (type instanceof StringType) return row.getUTF8String(field).clone();
        if (type instanceof BinaryType) return row.getBinary(field).clone();
        return InternalRow.copyValue(row.get(field, type));
    }

    /** Whether {@code a} (from {@link #key}) holds the same key as the row's. */
    boolean sameKey(InternalRow row, Object a) {
        if (row.isNullAt(key)) return a == null;
        if (a instanceof UTF8String) return row.getUTF8String(key).equals(a);
        if (a instanceof ByteBuffer) return java.util.Arrays.equals(row.getBinary(key), ((ByteBuffer) a).array());
        return a != null && row.get(key, keyType).equals(a);
    }
}
