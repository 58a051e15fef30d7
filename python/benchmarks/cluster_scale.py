"""Throughput of a tenant spread over 1, 2 and 3 devices (``cerberus.cluster``), on loopback.

Starts three devices (release build of ``cerberus``), then for each round and, within it,
for 1, 2 and 3 devices in turn (alternated, as this machine's speed drifts by the minute):
makes a tenant over the first N devices, loads ``--num`` JSON records in write batches of
1,000 (puts/s), reads ``--num`` random keys with ``get_many`` of 1,000 (gets/s), and runs a
find on an indexed attribute that matches a tenth of the records through Dask
(``.compute()``, rows/s). Prints each round and the medians over the rounds.

    cargo build --release -p cerberus-cli
    pip install './python[cluster]'
    python python/benchmarks/cluster_scale.py --num 100000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import cerberus

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary: str, data: Path, secret: str) -> tuple:
    port = free_port()
    address = f"127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "serve", "--data-dir", str(data), "--listen", address,
                             "--admin-secret", secret],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, address
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"device at {address} did not start")
            time.sleep(0.05)


def record(i: int) -> bytes:
    return json.dumps({"n": i, "g": i % 10, "pad": "x" * 150}).encode()


def one(devices: dict, root: Path, n: int, num: int, tag: str) -> dict:
    """One measurement over the first ``n`` devices; the tenant is destroyed after."""
    names = sorted(devices)[:n]
    tenant = f"scale-{tag}"
    parts = {}
    for name in names:
        address, secret = devices[name]
        secret_file = root / f"{tenant}.{name}.secret"
        with cerberus.connect(address, admin_secret=secret) as d:
            d.create_namespace(tenant, secret_file=str(secret_file))
        parts[name] = {"namespace": tenant, "secret_file": str(secret_file)}
    desc = {
        "devices": {name: {"address": devices[name][0],
                           "admin_secret_file": str(root / f"{name}.admin")}
                    for name in names},
        "tenants": {tenant: {"devices": names, "generation": 1, "parts": parts}},
    }
    keys = [f"k{i:09d}".encode() for i in range(num)]
    with cerberus.connect_cluster(desc) as cluster:
        ns = cluster.namespace(tenant)
        ns.create_index("g", kind="classic")
        t = time.perf_counter()
        for at in range(0, num, 1000):
            ns.write_batch(puts=[(k, record(at + j)) for j, k in enumerate(keys[at:at + 1000])])
        puts = num / (time.perf_counter() - t)
        rng = random.Random(7)
        wanted = [keys[rng.randrange(num)] for _ in range(num)]
        t = time.perf_counter()
        for at in range(0, num, 1000):
            got = ns.get_many(wanted[at:at + 1000])
            assert all(v is not None for v in got)
        gets = num / (time.perf_counter() - t)
        ns.find({"g": 4}).compute()  # Dask's first graph pays its imports and set-up
        t = time.perf_counter()
        rows = len(ns.find({"g": 3}).compute())
        find = rows / (time.perf_counter() - t)
        assert rows == num // 10
    for name in names:
        address, secret = devices[name]
        with cerberus.connect(address, admin_secret=secret) as d:
            d.destroy_namespace(parts_nsid(d, tenant))
    return {"devices": n, "puts": puts, "gets": gets, "find_rows": find}


def parts_nsid(d: cerberus.Device, name: str) -> int:
    return next(n["nsid"] for n in d.list_namespaces() if n["name"] == name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "cerberus"))
    ap.add_argument("--json", help="write every round's figures here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        devices, procs = {}, []
        for i in range(3):
            secret = f"scale-admin-{i}-0123456789abcdef"
            (root / f"d{i}.admin").write_text(secret + "\n")
            proc, address = start(args.binary, root / f"d{i}", secret)
            procs.append(proc)
            devices[f"d{i}"] = (address, secret)
        results = []
        try:
            for r in range(args.rounds):
                for n in (1, 2, 3):
                    res = one(devices, root, n, args.num, f"{r}-{n}")
                    res["round"] = r + 1
                    results.append(res)
                    print(f"round {r + 1} devices {n}: puts {res['puts']:,.0f}/s "
                          f"gets {res['gets']:,.0f}/s find {res['find_rows']:,.0f} rows/s",
                          flush=True)
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=20)
    for n in (1, 2, 3):
        mine = [r for r in results if r["devices"] == n]
        med = {k: statistics.median(r[k] for r in mine) for k in ("puts", "gets", "find_rows")}
        print(f"median devices {n}: puts {med['puts']:,.0f}/s gets {med['gets']:,.0f}/s "
              f"find {med['find_rows']:,.0f} rows/s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
