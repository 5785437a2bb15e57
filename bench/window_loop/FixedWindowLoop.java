package streamlake.bench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Prototype (bench only, not used by the jobs): the tumbling and hopping final() windows of
 * records already shuffled by their closing group and sorted by (group hash, partition, key,
 * offset), in one pass over each task's rows. Per group it keeps the running maximum timestamp
 * (the edge's event time) and the open windows' partial aggregates; a record is dropped from a
 * window that closed before it arrived (start <= event time - grace - duration), and at the
 * group's end the windows that final() emits are written out. Spark's window operator does the
 * same with three interpreted window functions over every record; this loop reads each row's five
 * fields once. See bench/README.md ("A JVM loop per sorted group").
 */
public final class FixedWindowLoop {
    private FixedWindowLoop() {}

    /**
     * The final() windows (__gh, __order_0, key, window_start, window_end, value) of {@code sorted}:
     * the columns __gh, __order_0 (Kafka partition), key, ts, value, partitioned by the group and
     * sorted by (__gh, __order_0, key, offset) within each task. {@code step == duration}: tumbling.
     */
    public static Dataset<Row> apply(Dataset<Row> sorted, long duration, long step, long grace, String agg) {
        org.apache.spark.sql.classic.Dataset<Row> ds = (org.apache.spark.sql.classic.Dataset<Row>) sorted;
        StructType in = ds.schema();
        final int iGh = in.fieldIndex("__gh"), iPart = in.fieldIndex("__order_0"), iKey = in.fieldIndex("key");
        final int iTs = in.fieldIndex("ts"), iValue = in.fieldIndex("value");
        final int kind = java.util.Arrays.asList("sum", "count", "mean", "min", "max").indexOf(agg);
        StructType out = new StructType().add("__gh", DataTypes.LongType).add("__order_0", DataTypes.IntegerType)
            .add("key", DataTypes.StringType).add("window_start", DataTypes.LongType)
            .add("window_end", DataTypes.LongType).add("value", DataTypes.DoubleType);
        JavaRDD<InternalRow> rows = ds.queryExecution().toRdd().toJavaRDD().mapPartitions(it -> {
            List<InternalRow> result = new ArrayList<>();  // a task's windows, buffered (a prototype)
            Map<Long, double[]> windows = new HashMap<>();
            long gh = 0; int part = 0; UTF8String key = null; long maxTs = Long.MIN_VALUE;
            while (it.hasNext()) {
                InternalRow r = it.next();
                long rGh = r.getLong(iGh); int rPart = r.getInt(iPart); UTF8String rKey = r.getUTF8String(iKey);
                if (key == null || rGh != gh || rPart != part || !rKey.equals(key)) {
                    if (key != null) flush(result, windows, gh, part, key, maxTs, duration, grace, kind);
                    gh = rGh; part = rPart; key = rKey.clone(); maxTs = Long.MIN_VALUE; windows.clear();
                }
                long ts = r.getLong(iTs);
                double v = r.getDouble(iValue);
                if (ts > maxTs) maxTs = ts;
                long closedUpto = Math.max(0L, maxTs) - grace - duration;
                long newest = ts - Math.floorMod(ts, step);
                long oldest = step == duration ? newest : Math.max(0L, (ts - duration) - Math.floorMod(ts - duration, step) + step);
                for (long start = Math.max(oldest, closedUpto - Math.floorMod(closedUpto, step) + step); start <= newest; start += step) {
                    double[] a = windows.get(start);
                    if (a == null) { windows.put(start, new double[] {v, 1, v, v}); }
                    else { a[0] += v; a[1] += 1; if (v < a[2]) a[2] = v; if (v > a[3]) a[3] = v; }
                }
            }
            if (key != null) flush(result, windows, gh, part, key, maxTs, duration, grace, kind);
            return result.iterator();
        });
        return ds.sparkSession().internalCreateDataFrame(rows.rdd(), out, false);
    }

    private static void flush(List<InternalRow> result, Map<Long, double[]> windows, long gh, int part, UTF8String key,
                              long maxTs, long duration, long grace, int kind) {
        long finalClosed = Math.max(0L, maxTs) - grace - duration;
        for (Map.Entry<Long, double[]> e : windows.entrySet()) {
            long start = e.getKey();
            if (start <= finalClosed) {
                double[] a = e.getValue();
                result.add(new GenericInternalRow(new Object[] {gh, part, key, start, start + duration, kind == 0 ? a[0] : kind == 1 ? a[1] : kind == 2 ? a[0] / a[1] : kind == 3 ? a[2] : a[3]}));
            }
        }
    }
}
