"""FileSource pieces without a broker: file order, formats, errors naming file/record/field, the
replay delay (on a fake clock), and the StatefulSource state transaction (on a recording producer)."""

from __future__ import annotations

import gzip
import json

import pytest

from stream_edge.models.topics import Topic
from stream_edge.sources.base.state import CHANGELOG_HEADERS, SourceStateError, SourceStore
from stream_edge.sources.community.file.base import RecordFieldError
from stream_edge.sources.community.file.formats import JSONFormat
from stream_edge.sources.community.file.local import LocalFileSource


class RecordingProducer:
    def __init__(self):
        self.sent, self.flushes = [], 0

    def produce(self, topic, value=None, key=None, headers=None, partition=None, timestamp=None, **kwargs):
        self.sent.append((topic, key, value, headers, partition, timestamp))

    def flush(self, timeout=None):
        self.flushes += 1
        return 0


class FakeClock:
    def __init__(self):
        self.now, self.sleeps = 100.0, []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


def _source(path, **kwargs):
    source = LocalFileSource(path, **kwargs)
    producer = RecordingProducer()
    source.configure(Topic(source.name, value_serializer="json", key_serializer="bytes"), producer)
    return source, producer


def _write(path, records, compress=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data) if compress else data)


def test_files_are_read_in_lexicographic_order_with_folders_in_place(tmp_path):
    for name in ("b.jsonl", "a/z.jsonl", "a/c.jsonl", "0/x.jsonl", "c.jsonl"):
        _write(tmp_path / name, [])
    source = LocalFileSource(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in source.get_file_list(tmp_path)] == [
        "0/x.jsonl", "a/c.jsonl", "a/z.jsonl", "b.jsonl", "c.jsonl"]
    assert source.name == f"file_{tmp_path.name}"
    assert source.file_partition_counter() == 2


def test_records_become_messages_with_default_setters_and_flush_per_file(tmp_path):
    _write(tmp_path / "0" / "a.jsonl.gz", [{"_key": "k1", "_value": {"v": 1}, "_timestamp": 5}], compress=True)
    _write(tmp_path / "0" / "b.jsonl.gz", [{"_key": "k2", "_value": [2], "_timestamp": 6}], compress=True)
    source, producer = _source(tmp_path, compression="gzip", replay_speed=0)
    source.start()
    assert [(s[1], s[2], s[5]) for s in producer.sent] == [("k1", b'{"v":1}', 5), ("k2", b"[2]", 6)]
    assert producer.flushes >= 2


def test_a_missing_field_names_the_file_the_record_and_the_field(tmp_path):
    _write(tmp_path / "f.jsonl", [{"_key": "a", "_value": 1, "_timestamp": 1}, {"_key": "b", "_value": 2}])
    source, _ = _source(tmp_path, replay_speed=0)
    with pytest.raises(RecordFieldError) as info:
        source.start()
    assert str(info.value).startswith(f"{tmp_path / 'f.jsonl'}, record 2: the record has no field '_timestamp'")


def test_invalid_json_names_the_file_and_the_line(tmp_path):
    (tmp_path / "f.jsonl").write_bytes(b'{"_key": "a", "_value": 1, "_timestamp": 1}\n\n{not json\n')
    source, _ = _source(tmp_path, replay_speed=0)
    with pytest.raises(ValueError, match=r"f\.jsonl: line 3 is not valid JSON"):
        source.start()


def test_replay_speed_spaces_records_by_their_timestamps_per_partition_folder(tmp_path):
    _write(tmp_path / "0" / "a.jsonl", [{"_key": "k", "_value": i, "_timestamp": ts}
                                         for i, ts in enumerate([1000, 3000, 3500])])
    _write(tmp_path / "1" / "a.jsonl", [{"_key": "k", "_value": 9, "_timestamp": 500},
                                         {"_key": "k", "_value": 9, "_timestamp": 700}])
    source, producer = _source(tmp_path, replay_speed=0.5)
    clock = FakeClock()
    source._clock, source._sleep = clock.clock, clock.sleep
    source.start()
    assert len(producer.sent) == 5
    # 2 s and 0.5 s apart at half the delay -> 1 s (two slices of 0.5) then 0.25 s; folder 1 starts afresh
    assert clock.sleeps == [0.5, 0.5, 0.25, 0.1]


def test_replay_speed_must_not_be_negative(tmp_path):
    with pytest.raises(ValueError, match="replay_speed"):
        LocalFileSource(tmp_path, replay_speed=-1)


def test_json_format_takes_a_custom_loader():
    import io

    fmt = JSONFormat(compression=None, loads=lambda line: {"raw": line.strip()})
    assert list(fmt.read(io.BytesIO(b"a\nb\n"))) == [{"raw": b"a"}, {"raw": b"b"}]


def test_state_transaction_commits_to_the_changelog_and_expires(tmp_path):
    store = SourceStore("changelog__g--source-s")
    producer = RecordingProducer()
    tx = store.begin()
    state = tx.as_state()
    state.set("next", 3)
    state.set("gone", True)
    state.delete("gone")
    assert state.get("next") == 3 and not state.exists("gone") and store.get(b'"next"') is None
    tx.commit(producer)
    assert producer.sent == [("changelog__g--source-s", b'"next"', b"3", CHANGELOG_HEADERS, 0, None),
                             ("changelog__g--source-s", b'"gone"', None, CHANGELOG_HEADERS, 0, None)]
    assert store.get(b'"next"') == b"3"
    with pytest.raises(SourceStateError):
        state.get("next")
    assert store.begin().as_state().get("next") == 3
