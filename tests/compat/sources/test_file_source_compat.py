"""LocalFileSource on quixstreams 3.28.1 and on stream_edge (real broker, outputs compared byte for
byte): gzip JSON lines in FileSink partition folders with the default setters, and Parquet files in
nested folders with the default and with custom setters; file order, keys, values, timestamps,
partitions and the default topic."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.compat.sources.arrow_read_table import READ_TABLE_WITHOUT_THREADS

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json
import multiprocessing
import tempfile
import time
import uuid
from multiprocessing.connection import wait

from confluent_kafka.admin import AdminClient
from quixstreams import Application
from quixstreams.sources.community.file.local import LocalFileSource


def key_from_value(record):
    return "k-" + str(record["_value"]["x"])


def whole_record(record):
    return {"record": record}


def shifted_timestamp(record):
    return record["_timestamp"] + 1


def wait_for_sources_to_end():
    # Both packages run a source in a child process that ends by itself after its last file; the
    # app's stop (count reached) would terminate one still running. Waiting for the natural end on
    # the last row makes both packages stop their sources the same way: already done.
    deadline = time.monotonic() + 60
    while (children := multiprocessing.active_children()) and time.monotonic() < deadline:
        wait([child.sentinel for child in children], timeout=deadline - time.monotonic())


def consume(source, count):
    app = Application(broker_address=BROKER, consumer_group="files-" + uuid.uuid4().hex[:8],
                      auto_offset_reset="earliest", loglevel=None, state_dir=tempfile.mkdtemp())
    rows_seen = []

    def after_each_row(value):
        rows_seen.append(1)
        if len(rows_seen) == count:
            wait_for_sources_to_end()

    app.dataframe(source=source).update(after_each_row)
    rows = app.run(count=count, timeout=60, metadata=True)
    rows.sort(key=lambda r: (r["_partition"], r["_offset"]))
    for r in rows:
        meta = [r.pop(k) for k in ("_key", "_timestamp", "_partition", "_offset")]
        r.pop("_topic"), r.pop("_headers")
        print(json.dumps([meta[0].decode(), *meta[1:], r], sort_keys=True))
    return app


def main():
    suffix = uuid.uuid4().hex[:8]
    json_source = LocalFileSource(JSON_DIR, file_format="json", compression="gzip", has_partition_folders=True,
                                  replay_speed=0.0)
    print("name", json_source.name, json_source.default_topic().name)
    json_source.name = json_source.name + "-" + suffix
    consume(json_source, JSON_COUNT)
    topics = AdminClient({"bootstrap.servers": BROKER}).list_topics(timeout=30).topics
    print("partitions", {t.replace(suffix, "S"): len(m.partitions) for t, m in topics.items() if suffix in t})

    consume(LocalFileSource(PARQUET_DIR, file_format="parquet", replay_speed=0, name="pq-" + suffix), PARQUET_COUNT)
    consume(LocalFileSource(PARQUET_DIR, file_format="parquet", replay_speed=0, name="pqc-" + suffix,
                            key_setter=key_from_value, value_setter=whole_record,
                            timestamp_setter=shifted_timestamp), PARQUET_COUNT)


if __name__ == "__main__":
    main()
'''


def _write_json_gz(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def _records(start, count):
    return [{"_key": f"sensor-{i % 4}", "_value": {"i": i, "temp": 20.5 + i}, "_timestamp": 1_700_000_000_000 + i * 10}
            for i in range(start, start + count)]


def test_local_file_source_json_gzip_and_parquet_match_quixstreams(run_both, kafka_bootstrap, tmp_path):
    topic_dir = tmp_path / "files" / "readings"
    _write_json_gz(topic_dir / "1" / "0000000000.jsonl.gz", _records(100, 4))
    _write_json_gz(topic_dir / "0" / "0000000010.jsonl.gz", _records(10, 3))
    _write_json_gz(topic_dir / "0" / "0000000000.jsonl.gz", _records(0, 5))
    parquet_dir = tmp_path / "files" / "pq"
    (parquet_dir / "a").mkdir(parents=True)
    table = pa.table({"_key": ["a", "b", "c"], "_timestamp": [1_700_000_000_000, 1_700_000_000_005, 1_700_000_000_009],
                      "x": [1, 2, 3], "label": ["p", None, "r"], "ratio": [0.5, 1.25, -2.0]})
    pq.write_table(table, parquet_dir / "b.parquet")
    pq.write_table(table.slice(1, 2), parquet_dir / "a" / "z.parquet")

    header = (f"BROKER = {kafka_bootstrap!r}\nJSON_DIR = {str(topic_dir)!r}\nPARQUET_DIR = {str(parquet_dir)!r}\n"
              f"JSON_COUNT = 12\nPARQUET_COUNT = 5\n")
    out = run_both(header + READ_TABLE_WITHOUT_THREADS + PROGRAM, timeout=240)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    lines = out.edge.splitlines()
    assert lines[0] == "name file_readings file_readings"
    assert len(lines) == 1 + 12 + 1 + 5 + 5
    # the files of partition folder 0 come in file-name order
    values = [json.loads(line)[4]["i"] for line in lines[1:13]]
    assert sorted(values) == [0, 1, 2, 3, 4, 10, 11, 12, 100, 101, 102, 103]
    assert lines[14] == '["b", 1700000000005, 0, 0, {"label": null, "ratio": 1.25, "x": 2}]'
