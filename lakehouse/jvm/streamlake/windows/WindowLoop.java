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
 * windowed. Output columns: {@code __gh}, {@code key}, {@code window_start}, {@code window_end},
 * {@code value}; what the loop counts goes to a {@link LoopFigures}.
 */
public final class WindowLoop {
    /** Key types the loop writes: strings, binary, int and bigint keys. */
    public static final String KEY_TYPES = "string, binary, int, bigint";

    private WindowLoop() {}

    /**
     * Tumbling ({@code step == duration}) or hopping windows of {@code sorted}; {@code perKey}:
     * the group is a key within its partition (else a whole partition, keys closing together).
     * Gathers each group's window state into {@code state} while the windows are computed
     * ({@link State}; null: none) and counts into {@code figures} (null: nothing counted).
     * {@code offsetColumn}, {@code maxHeld} and {@code maxHeldBytes}: as for {@link #sliding}.
     */
    public static Dataset<Row> fixed(Dataset<Row> sorted, String[] groupCols, long duration, long step, long grace,
                                     String aggregation, boolean perKey, State state, LoopFigures figures,
                                     String offsetColumn, int maxHeld, long maxHeldBytes) {
        final int agg = Acc.kind(aggregation);
        final StructType in = sorted.schema();
        GroupReader checked = new GroupReader(in, groupCols);  // checks the columns on the driver
        if (offsetColumn != null) in.fieldIndex(offsetColumn);  // a missing column fails here, not in a task
        final WindowState.Spec spec = state == null ? null : state.spec;
        final WindowState.Rows rows = state == null ? null : state.rows;
        if (spec != null) new WindowState.Collector(spec, rows, in, groupCols, checked);  // checks them too
        return run(sorted, agg, it -> {
            GroupReader reader = new GroupReader(in, groupCols);
            WindowState.Collector collector = spec == null ? null
                : new WindowState.Collector(spec, rows, in, groupCols, reader);
            return new FixedLoop(ordered(it, in, offsetColumn, maxHeld, maxHeldBytes), reader, agg, duration, step,
                                 grace, perKey, collector, figures);
        });
    }

    /**
     * Where a fixed windows' loop puts the per-group window state of a full run
     * (lakehouse/window_state.py's {@code full_state} rows), read after the job with
     * {@link #frame}: {@code schemaJson} is the state's schema (the group's columns, then
     * {@code latest}, {@code last} (a struct of {@code orderCols}), {@code records} (an array of
     * structs of {@code recordCols})), {@code bound} the state's {@code grace + duration}; more than
     * {@code taskCap} records in a task or {@code totalCap} in all leave no rows ({@link #overflowed}).
     */
    public static final class State {
        final WindowState.Spec spec;
        final WindowState.Rows rows;
        final StructType schema;

        public State(org.apache.spark.sql.classic.SparkSession spark, String schemaJson, String[] groupCols,
                     String[] orderCols, String[] recordCols, long bound, long taskCap, long totalCap) {
            spec = new WindowState.Spec(schemaJson, orderCols, recordCols, bound, taskCap);
            rows = new WindowState.Rows(totalCap, groupCols.length);
            schema = (StructType) DataType.fromJson(schemaJson);
            spark.sparkContext().register(rows);  // unnamed: a named one's value is shown (stringified) per task
        }

        /** Whether the state was too large to collect (then {@link #frame} is null). */
        public boolean overflowed() {
            return rows.overflowed();
        }

        /** The open records of the state's rows (their {@code records}), -1 when {@link #overflowed}. */
        public long openRecords() {
            if (rows.overflowed()) return -1;
            int records = schema.fieldIndex("records");
            long open = 0;
            for (InternalRow row : rows.distinct(schema)) {
                open += row.isNullAt(records) ? 0 : row.getArray(records).numElements();
            }
            return open;
        }

        /** The state's rows, one per group, as a DataFrame (null when {@link #overflowed}). */
        public Dataset<Row> frame(org.apache.spark.sql.classic.SparkSession spark) {
            if (rows.overflowed()) return null;
            java.util.List<InternalRow> distinct = rows.distinct(schema);
            JavaRDD<InternalRow> rdd = org.apache.spark.api.java.JavaSparkContext.fromSparkContext(spark.sparkContext())
                .parallelize(distinct, 1);
            return spark.internalCreateDataFrame(rdd.rdd(), schema, false);
        }
    }

    /**
     * Sliding windows of {@code sorted} (per key), counted into {@code figures} (null: nothing
     * counted). {@code offsetColumn}: null when the rows come sorted by hash, offset and group;
     * else the rows come as shuffled, and the loop groups them by {@code __gh} and orders each
     * hash's rows by this column itself ({@link GroupBuckets}), holding up to {@code maxHeld} of a
     * task's rows and {@code maxHeldBytes} of their bytes (a larger task goes through Spark's
     * external sorter).
     */
    public static Dataset<Row> sliding(Dataset<Row> sorted, String[] groupCols, long duration, long grace,
                                       String aggregation, LoopFigures figures, String offsetColumn, int maxHeld,
                                       long maxHeldBytes) {
        final int agg = Acc.kind(aggregation);
        final StructType in = sorted.schema();
        new GroupReader(in, groupCols);
        if (offsetColumn != null) in.fieldIndex(offsetColumn);  // a missing column fails here, not in a task
        return run(sorted, agg, it -> new SlidingLoop(ordered(it, in, offsetColumn, maxHeld, maxHeldBytes),
                                                      new GroupReader(in, groupCols), agg, duration, grace, figures));
    }

    /** A task's rows in the order the loops read: as they come, or grouped by hash and put in offset order. */
    private static java.util.Iterator<InternalRow> ordered(java.util.Iterator<InternalRow> rows, StructType schema,
                                                           String offsetColumn, int maxHeld, long maxHeldBytes) {
        return offsetColumn == null ? rows : new GroupBuckets(rows, schema, offsetColumn, maxHeld, maxHeldBytes);
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
            .add("value", valueType, true);
        JavaRDD<InternalRow> rows = ds.queryExecution().toRdd().toJavaRDD().mapPartitions(loop::over);
        return ds.sparkSession().internalCreateDataFrame(rows.rdd(), out, false);
    }
}
