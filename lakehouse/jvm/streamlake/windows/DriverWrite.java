package streamlake.windows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.OverwriteFiles;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.spark.data.SparkParquetWriters;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * A small increment's writes from the driver (lakehouse/window_tail.py): the windows an increment
 * adds (collected by the loop's job instead of kept on the executors) and the window state the
 * loop gathered are each written as one Parquet file by Iceberg's own Spark row writer and
 * committed with Iceberg's API, with no Spark write (planning, a job, the write's own commit
 * path: ~0.2 s each for a few thousand rows, most of an increment's fixed cost).
 *
 * <p>Only for unpartitioned tables whose columns are the rows' (names and types, in order):
 * {@link #writable} says so, and the Python side writes through Spark otherwise. Compiled against
 * the Iceberg Spark runtime (lakehouse/window_jar.py); without it this class is left out of the jar.
 */
public final class DriverWrite {
    private DriverWrite() {}

    /** Rows collected on the driver, as Spark's internal rows, with their schema. */
    public static final class Rows {
        final List<InternalRow> rows;
        final StructType schema;

        Rows(List<InternalRow> rows, StructType schema) {
            this.rows = rows;
            this.schema = schema;
        }

        /** The number of rows. */
        public long size() {
            return rows.size();
        }

        /** The rows as a DataFrame (one partition), for a write through Spark. */
        public Dataset<Row> frame(org.apache.spark.sql.classic.SparkSession spark) {
            org.apache.spark.api.java.JavaRDD<InternalRow> rdd = org.apache.spark.api.java.JavaSparkContext
                .fromSparkContext(spark.sparkContext()).parallelize(rows, 1);
            return spark.internalCreateDataFrame(rdd.rdd(), schema, false);
        }
    }

    /** {@code data}'s rows on the driver (one Spark action: observations of its plan are filled). */
    public static Rows collect(Dataset<Row> data) {
        StructType schema = data.schema();
        List<Row> external = data.collectAsList();
        scala.Function1<Object, Object> internal = CatalystTypeConverters.createToCatalystConverter(schema);
        ArrayList<InternalRow> rows = new ArrayList<>(external.size());
        for (Row row : external) rows.add((InternalRow) internal.apply(row));
        return new Rows(rows, schema);
    }

    /** Whether rows of {@code schema} can be written to the table as they are (see the class doc). */
    public static boolean writable(SparkSession spark, String identifier, String schemaJson) throws Exception {
        return writable(load(spark, identifier),
            (StructType) org.apache.spark.sql.types.DataType.fromJson(schemaJson));
    }

    static boolean writable(Table table, StructType schema) {
        StructType columns = SparkSchemaUtil.convert(table.schema());
        if (!table.spec().isUnpartitioned() || columns.length() != schema.length()) return false;
        for (int i = 0; i < columns.length(); i++) {
            if (!columns.fields()[i].name().equals(schema.fields()[i].name())) return false;
            // catalogString leaves nullability out: a table's optional columns take required values
            if (!columns.fields()[i].dataType().catalogString().equals(schema.fields()[i].dataType().catalogString())) {
                return false;
            }
        }
        return true;
    }

    /**
     * Append {@code rows} to the table in one commit whose snapshot summary carries
     * {@code properties} (a commit without files when there are no rows); returns the rows
     * appended, or -1 without writing anything when the table does not take them ({@link #writable}).
     */
    public static long append(SparkSession spark, String identifier, Rows rows, Map<String, String> properties)
        throws Exception {
        Table table = load(spark, identifier);
        if (!writable(table, rows.schema)) return -1;
        AppendFiles append = table.newAppend();
        if (!rows.rows.isEmpty()) append.appendFile(write(table, rows.schema, rows.rows));
        commit(append, properties);
        return rows.rows.size();
    }

    /**
     * Replace every row of the table with {@code rows} in one commit carrying {@code properties};
     * false, without writing anything, when the table does not take them ({@link #writable}).
     */
    public static boolean overwrite(SparkSession spark, String identifier, StructType schema, List<InternalRow> rows,
                                    Map<String, String> properties) throws Exception {
        return overwrite(load(spark, identifier), schema, rows, properties);
    }

    private static boolean overwrite(Table table, StructType schema, List<InternalRow> rows,
                                     Map<String, String> properties) throws Exception {
        if (!writable(table, schema)) return false;
        OverwriteFiles overwrite = table.newOverwrite().overwriteByRowFilter(Expressions.alwaysTrue());
        if (!rows.isEmpty()) overwrite.addFile(write(table, schema, rows));
        commit(overwrite, properties);
        return true;
    }

    /**
     * {@link #overwrite} with the window state a loop gathered ({@link WindowLoop.State}), then
     * {@link #expireOldStates}; false when it was too large to gather or the table does not take
     * its rows.
     */
    public static boolean overwriteState(SparkSession spark, String identifier, WindowLoop.State state,
                                         Map<String, String> properties, int keep) throws Exception {
        if (state.overflowed()) return false;
        Table table = load(spark, identifier);
        if (!overwrite(table, state.schema, state.rows.distinct(state.schema), properties)) return false;
        expireOldStates(table, keep);
        return true;
    }

    /**
     * Past {@code 2 * keep} snapshots, expire all but the newest {@code keep} of the state table
     * and delete the state files only they referenced: a run reads only the newest state, and an
     * hourly schedule would otherwise add a snapshot (and a file) to it every hour, forever, each
     * one making every later commit rewrite a larger metadata file. Once in {@code keep} runs
     * (lakehouse/window_state.py calls it after a state written through Spark, too); a failure
     * is logged, not raised: the state is committed, and the next write tries again.
     */
    public static void expireOldStates(SparkSession spark, String identifier, int keep) throws Exception {
        expireOldStates(load(spark, identifier), keep);
    }

    static void expireOldStates(Table table, int keep) {
        int snapshots = 0;
        for (org.apache.iceberg.Snapshot ignored : table.snapshots()) snapshots++;
        if (keep < 1 || snapshots <= 2 * keep) return;
        try {
            table.expireSnapshots().retainLast(keep).expireOlderThan(System.currentTimeMillis()).commit();
        } catch (RuntimeException e) {
            // housekeeping: the state and the output are committed already, and the next write tries again
            org.slf4j.LoggerFactory.getLogger(DriverWrite.class).warn(
                "could not expire the old snapshots of window state table {} (the next state write retries): {}",
                table.name(), e.toString());
        }
    }

    private static Table load(SparkSession spark, String identifier) throws Exception {
        Table table = Spark3Util.loadIcebergTable(spark, identifier);
        table.refresh();  // other writers' commits (the catalog may hand out a cached table)
        return table;
    }

    private static <T extends SnapshotUpdate<T>> void commit(SnapshotUpdate<T> update, Map<String, String> properties) {
        for (Map.Entry<String, String> entry : properties.entrySet()) update.set(entry.getKey(), entry.getValue());
        update.commit();
    }

    /** One Parquet data file of {@code rows} in the table's location, with the table's write properties. */
    private static DataFile write(Table table, StructType sparkType, List<InternalRow> rows) throws IOException {
        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, 0)
            .format(FileFormat.PARQUET).operationId(UUID.randomUUID().toString()).build();
        DataWriter<InternalRow> writer = Parquet.writeData(files.newOutputFile())
            .forTable(table)
            .createWriterFunc(message -> SparkParquetWriters.buildWriter(sparkType, message))
            .overwrite()
            .build();
        try {
            for (InternalRow row : rows) writer.write(row);
        } finally {
            writer.close();
        }
        return writer.toDataFile();
    }
}
