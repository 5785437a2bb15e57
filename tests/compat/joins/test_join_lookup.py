"""join_lookup with SQLiteLookup against quixstreams 3.28.1: fields, query fields, defaults, the
``on`` variants, identifier checks and cache statistics (ttl=0: no cache), through ``sdf.test()`` (byte for byte)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import os, sqlite3, tempfile, uuid
from quixstreams import Application
from quixstreams.dataframe.joins.lookups import SQLiteLookup, SQLiteLookupField, SQLiteLookupQueryField

db = os.path.join(tempfile.mkdtemp(), "devices.db")
with sqlite3.connect(db) as conn:
    conn.execute("create table dev (id text, name text, level integer, w real)")
    conn.executemany("insert into dev values (?, ?, ?, ?)",
                     [("a", "alpha", 1, 1.5), ("a", "alpha2", 2, None), ("b", "beta", 3, 0.5)])
app = Application(broker_address=BROKER, consumer_group="g", loglevel=None, state_dir=tempfile.mkdtemp())
topic = lambda: app.topic("compat-lookup-" + uuid.uuid4().hex[:8])
lookup = SQLiteLookup(path=db)
fields = {"dev": SQLiteLookupField(table="dev", columns=["name", "level"], on="id"),
          "all": SQLiteLookupField(table="dev", columns=["name", "w"], on="id", first_match_only=False,
                                   order_by="level", order_by_direction="DESC"),
          "q": SQLiteLookupQueryField("SELECT name, level FROM dev WHERE level >= :min"),
          "qa": SQLiteLookupQueryField("SELECT name FROM dev WHERE level >= :min", first_match_only=False, default="-"),
          "miss": SQLiteLookupField(table="dev", columns=["name"], on="name", default={"d": 1})}
sdf = app.dataframe(topic()).join_lookup(lookup, fields, on="dev_id")
for value in [{"dev_id": "a", "min": 2}, {"dev_id": "b", "min": 9}, {"dev_id": "zz", "min": 0}, {"dev_id": "a", "min": 0}]:
    print(sdf.test(value, key=b"k"))
print(lookup.cache_info())
no_ttl = SQLiteLookup(path=db)
uncached = app.dataframe(topic()).join_lookup(no_ttl, {"dev": SQLiteLookupField(table="dev", columns=["name"], on="id", ttl=0)},
                                              on="dev_id")
print(uncached.test({"dev_id": "a"}, key=b"k"), uncached.test({"dev_id": "a"}, key=b"k"), no_ttl.cache_info())
by_key = app.dataframe(topic()).join_lookup(SQLiteLookup(path=db), {"dev": SQLiteLookupField(table="dev", columns=["name"], on="id")})
print(by_key.test({"x": 1}, key="a"), by_key.test({"x": 1}, key="b"))
by_func = app.dataframe(topic()).join_lookup(SQLiteLookup(path=db), {"dev": SQLiteLookupField(table="dev", columns=["name"], on="id")},
                                             on=lambda value, key: value["d"])
print(by_func.test({"d": "b"}, key="a"))
for bad in [dict(table="de v", columns=["name"], on="id"), dict(table="dev", columns=["na;me"], on="id"),
            dict(table="dev", columns=["name"], on="i d"), dict(table="dev", columns=["name"], on="id", order_by="x y")]:
    try:
        SQLiteLookupField(**bad)
    except Exception as exc:
        print(type(exc).__name__, exc)
'''


def test_sqlite_lookup_join_matches_quixstreams(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM)
    assert out.edge == out.quix
    assert "'dev': {'name': 'alpha', 'level': 1}" in out.edge and "Invalid SQL identifier" in out.edge
