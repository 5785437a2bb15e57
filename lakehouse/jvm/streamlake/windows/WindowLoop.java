package streamlake.windows;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.CollectMetrics;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The windows job's native path: the edge's {@code final()} windows computed by one loop per
 * task over rows already shuffled by their closing group and sorted in Kafka offset order
 * (lakehouse/window_loop.py builds that plan and calls these from Python).
 *
 * <p>Input columns: {@code __gh} (the group's 64-bit hash, first in the sort), the group's
 * columns, {@code key}, {@code ts} (bigint), {@code value} (bigint or double), optionally
 * {@code __closed_floor} (incremental runs); rows with a NULL timestamp or value are counted, not
 * windowed.
 */
public final class WindowLoop {
    /** What the output holds, for the Python side's docstrings and errors. */
    public static final String OUTPUT_DOC = "__gh, key, window_start, window_end, value, then per group one "
        + "summary row (__summary 1, or 2 when the group had no complete row) with __bound, __stale, __rows, "
        + "__skipped and __replayed; window rows have __summary 0";

    /** The number of output columns. */
    static final int OUTPUT_WIDTH = 11;

    /** Key types the loop writes: strings, binary, int and bigint keys. */
    public static final String KEY_TYPES = "string, binary, int, bigint";

    private WindowLoop() {}

    /**
     * Tumbling ({@code step == duration}) or hopping windows of {@code sorted}; {@code perKey}:
     * the group is a key within its partition (else a whole partition, keys closing together).
     */
    public static Dataset<Row> fixed(Dataset<Row> sorted, String[] groupCols, long duration, long step, long grace,
                                     String aggregation, boolean perKey) {
        final int agg = Acc.kind(aggregation);
        final StructType in = sorted.schema();
        new GroupReader(in, groupCols);  // checks the columns on the driver
        return run(sorted, agg, it -> new FixedLoop(it, new GroupReader(in, groupCols), agg, duration, step, grace,
            perKey));
    }

    /** Sliding windows of {@code sorted} (per key). */
    public static Dataset<Row> sliding(Dataset<Row> sorted, String[] groupCols, long duration, long grace,
                                       String aggregation) {
        final int agg = Acc.kind(aggregation);
        final StructType in = sorted.schema();
        new GroupReader(in, groupCols);
        return run(sorted, agg, it -> new SlidingLoop(it, new GroupReader(in, groupCols), agg, duration, grace));
    }

    /**
     * Whether {@code data}'s plan observes metrics ({@code DataFrame.observe}): the loop runs the
     * plan below it as an RDD of its own, so such an observation would never be filled.
     */
    public static boolean observes(Dataset<Row> data) {
        return observes(data.queryExecution().analyzed());
    }

    private static boolean observes(LogicalPlan plan) {
        if (plan instanceof CollectMetrics) return true;
        for (LogicalPlan child : scala.jdk.javaapi.CollectionConverters.asJava(plan.children())) {
            if (observes(child)) return true;
        }
        return false;
    }

    private interface Loop extends java.io.Serializable {
        java.util.Iterator<InternalRow> over(java.util.Iterator<InternalRow> rows);
    }

    private static Dataset<Row> run(Dataset<Row> sorted, int agg, Loop loop) {
        org.apache.spark.sql.classic.Dataset<Row> ds = (org.apache.spark.sql.classic.Dataset<Row>) sorted;
        StructType in = ds.schema();
        boolean integral = in.apply("value").dataType().equals(DataTypes.LongType);
        DataType valueType = Acc.longResult(agg, integral) ? DataTypes.LongType : DataTypes.DoubleType;
        StructType out = new StructType()
            .add("__gh", DataTypes.LongType, false)
            .add("key", in.apply("key").dataType(), true)
            .add("window_start", DataTypes.LongType, true)
            .add("window_end", DataTypes.LongType, true)
            .add("value", valueType, true)
            .add("__summary", DataTypes.IntegerType, false)
            .add("__bound", DataTypes.LongType, true)
            .add("__stale", DataTypes.BooleanType, true)
            .add("__rows", DataTypes.LongType, true)
            .add("__skipped", DataTypes.LongType, true)
            .add("__replayed", DataTypes.BooleanType, true);
        JavaRDD<InternalRow> rows = ds.queryExecution().toRdd().toJavaRDD().mapPartitions(loop::over);
        return ds.sparkSession().internalCreateDataFrame(rows.rdd(), out, false);
    }
}
