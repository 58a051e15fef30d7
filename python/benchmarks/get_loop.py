"""Gets in a Python loop against the Rust BlockingClient, through the same device, on the
same data.

Starts a device (release build of `cerberus`), fills it once with `cerberus-bench
fillrandom --engine device --threads 1` (namespace `bench`), then for --rounds rounds, in
turns: the Rust client (`cerberus-bench readrandom`, BlockingClient, one thread) and this
package (`ns.get(key)` in a loop over as many random keys of the same format, in the same
namespace). Prints each round's gets/s and the median of the per-round ratios Python / Rust.

    cargo build --release -p cerberus-cli -p cerberus-bench
    pip install ./python
    python python/benchmarks/get_loop.py --num 100000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cerberus

ROOT = Path(__file__).resolve().parents[2]
SECRET = "python-benchmark-admin-secret-000000"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_device(binary: str, data: str) -> tuple[subprocess.Popen, str]:
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [binary, "serve", "--data-dir", data, "--listen", address, "--admin-secret", SECRET],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    host, port = address.split(":")
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return proc, address
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the device did not start")
            time.sleep(0.05)


def bench(bench: str, workload: str, address: str, num: int, value_size: int, db: str) -> str:
    return subprocess.run(
        [bench, workload, "--engine", "device", "--device", address,
         "--admin-secret", SECRET, "--num", str(num), "--threads", "1",
         "--value-size", str(value_size), "--db", db],
        check=True, capture_output=True, text=True,
    ).stdout


def rust_round(path: str, address: str, num: int, value_size: int, db: str) -> float:
    out = bench(path, "readrandom", address, num, value_size, db)
    m = re.search(r"^readrandom\s*:.*?([0-9]+) ops/sec", out, re.M)
    if not m:
        raise RuntimeError(f"no readrandom line in cerberus-bench's output:\n{out}")
    return float(m.group(1))


def bench_namespace(device: cerberus.Device, db: str) -> cerberus.Namespace:
    """The namespace cerberus-bench filled, opened with the secret it keeps in its --db."""
    path = next(Path(db).rglob("bench-secrets.json"))
    nsid, secret = json.loads(path.read_text())["bench"]
    return device.namespace(nsid, secret)


def python_round(ns: cerberus.Namespace, num: int, seed: int) -> float:
    rng = random.Random(seed)
    # The bench's keys: the index in zero-padded decimal, 16 bytes.
    probes = [b"%016d" % rng.randrange(num) for _ in range(num)]
    get = ns.get
    start = time.perf_counter()
    for k in probes:
        get(k)
    elapsed = time.perf_counter() - start
    return num / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num", type=int, default=100_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cerberus", default=str(ROOT / "target/release/cerberus"))
    p.add_argument("--bench", default=str(ROOT / "target/release/cerberus-bench"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, address = start_device(args.cerberus, os.path.join(tmp, "device"))
        try:
            db = os.path.join(tmp, "bench")
            bench(args.bench, "fillrandom", address, args.num, args.value_size, db)
            device = cerberus.connect(address, admin_secret=SECRET)
            ns = bench_namespace(device, db)
            ratios = []
            for r in range(args.rounds):
                rust = rust_round(args.bench, address, args.num, args.value_size, db)
                py = python_round(ns, args.num, r)
                ratios.append(py / rust)
                print(f"round {r + 1}: rust {rust:,.0f} gets/s, python {py:,.0f} gets/s, "
                      f"python/rust {py / rust:.3f}", flush=True)
            print(f"median python/rust over {args.rounds} rounds: {statistics.median(ratios):.3f} "
                  f"(range {min(ratios):.3f}-{max(ratios):.3f})")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
