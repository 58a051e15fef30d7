#!/usr/bin/env python3
"""Find results into Python: dicts, the old Arrow path (pages as bytes, pyarrow's JSON reader),
the new one (pages decoded in Rust), and the raw pages alone; medians of 5 alternated rounds."""
import io, json, random, statistics, sys, tempfile, time
import pyarrow, pyarrow.json as pajson
import cerberus

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
rnd = random.Random(7)
d = tempfile.mkdtemp()
db = cerberus.open(d)
ns = db.create_namespace("flights")
carriers = ["UA", "AA", "B6", "DL", "EV", "MQ", "US", "WN", "VX", "FL"]
with ns.batch() as b:
    for i in range(n):
        row = {"year": 2013, "month": rnd.randint(1, 12), "day": rnd.randint(1, 28),
               "dep_time": None if rnd.random() < 0.03 else rnd.randint(1, 2400),
               "sched_dep_time": rnd.randint(500, 2359),
               "dep_delay": None if rnd.random() < 0.03 else rnd.randint(-20, 300) * 1.0,
               "arr_time": None if rnd.random() < 0.03 else rnd.randint(1, 2400),
               "sched_arr_time": rnd.randint(1, 2359),
               "arr_delay": None if rnd.random() < 0.03 else rnd.randint(-60, 300) * 1.0,
               "carrier": "UA", "flight": rnd.randint(1, 6000),
               "tailnum": None if rnd.random() < 0.01 else "N%05d" % rnd.randint(0, 4000),
               "origin": rnd.choice(["EWR", "JFK", "LGA"]), "dest": "IAH",
               "air_time": None if rnd.random() < 0.03 else rnd.randint(20, 600) * 1.0,
               "distance": rnd.randint(80, 4983) * 1.0, "hour": rnd.randint(5, 23),
               "minute": rnd.randint(0, 59), "time_hour": "2013-01-01T05:00:00Z"}
        b.put(b"%06d" % i, json.dumps(row).encode())
ns.create_index("carrier")
flt = {"carrier": "UA"}

def raw():
    doc = {"op": "find", "filter": flt}
    out = []
    while True:
        recs, summary = ns._query(doc)
        out.extend(recs)
        c = summary.get("continuation")
        if not c:
            return out
        doc["continuation"] = c

def old_arrow():
    recs = raw()
    pks = [k.decode() for k, _ in recs]
    t = pajson.read_json(io.BytesIO(b"\n".join(v for _, v in recs)))
    return t.add_column(0, "_pk", pyarrow.array(pks))

ways = {"raw pages": raw, "dicts": lambda: ns.find(flt).to_list(),
        "arrow (old: pyarrow JSON reader)": old_arrow,
        "arrow (Rust)": lambda: ns.find(flt).to_arrow(),
        "pandas (Rust arrow)": lambda: ns.find(flt).to_pandas()}
times = {k: [] for k in ways}
for r in range(5):
    for k, f in ways.items():
        t0 = time.perf_counter(); res = f(); times[k].append(time.perf_counter() - t0)
        rows = len(res) if not hasattr(res, "num_rows") else res.num_rows
assert ns.find(flt).to_arrow().num_rows == n
for k, v in times.items():
    print(f"{k:36s} median {statistics.median(v)*1e3:8.1f} ms  (range {min(v)*1e3:.1f}-{max(v)*1e3:.1f})  {n} records")
