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
 * and the group's columns, compared exactly: two groups may share a hash), the key, the
 * timestamp and the value. Values copied out of a row are
 * independent of the row's buffer, which the sorter reuses.
 */
final class GroupReader {
    final int gh, ts, value, key, closedFloor;
    /** An increment's columns (LoopIterator), -1 without them. */
    final int isNew, oldLatest, oldLast;
    final boolean integral;
    private final int[] groupFields;
    private final DataType[] groupTypes;
    private final DataType keyType;

    GroupReader(StructType schema, String[] groupCols) {
        gh = schema.fieldIndex("__gh");
        ts = schema.fieldIndex("ts");
        value = schema.fieldIndex("value");
        key = schema.fieldIndex("key");
        java.util.List<String> names = java.util.Arrays.asList(schema.fieldNames());
        closedFloor = names.indexOf("__closed_floor");
        isNew = names.indexOf("__new");
        oldLatest = names.indexOf("__old_latest");
        oldLast = names.indexOf("__old_last");
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
        if (!(keyType instanceof StringType || keyType instanceof BinaryType || keyType instanceof IntegerType
              || keyType instanceof LongType)) {
            throw new IllegalArgumentException("the window loop takes keys of type " + WindowLoop.KEY_TYPES
                + ", not " + keyType.simpleString());
        }
    }

    /** The row's group columns, copied (to compare later rows with, {@link #matches}). */
    Object[] values(InternalRow row) {
        Object[] values = new Object[groupFields.length];
        for (int i = 0; i < groupFields.length; i++) values[i] = copy(row, groupFields[i], groupTypes[i]);
        return values;
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

    /** Whether {@code row} belongs to the group of {@code values} (from {@link #values}). */
    boolean matches(InternalRow row, Object[] values) {
        for (int i = 0; i < groupFields.length; i++) {
            int f = groupFields[i];
            DataType t = groupTypes[i];
            Object c = values[i];
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

    static Object copy(InternalRow row, int field, DataType type) {
        if (row.isNullAt(field)) return null;
        if (type instanceof StringType) return row.getUTF8String(field).clone();
        if (type instanceof BinaryType) return row.getBinary(field).clone();
        return InternalRow.copyValue(row.get(field, type));
    }
}
