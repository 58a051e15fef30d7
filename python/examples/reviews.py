"""Load a JSON-lines file into an embedded Cerberus database, index an attribute, query it
and plot the result.

    pip install ./python matplotlib
    python python/examples/reviews.py                       # the repository's sample
    python python/examples/reviews.py my.jsonl --key id --group city --value stars

Every line of the file is one JSON object; `--key` names the attribute used as the record's
key, `--group` the attribute indexed and grouped by, `--value` a numeric attribute averaged
per group. The plot is written to reviews.png in the system's temporary directory (or --out),
not into the directory it is run from.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

import cerberus

# The sample the README's device quick start loads too (read only: nothing is written into
# the repository).
SHIPPED = Path(__file__).resolve().parents[2] / "examples" / "reviews.jsonl"


def sample(path: Path, n: int = 5000) -> None:
    """Writes n made-up reviews, one JSON object per line."""
    rng = random.Random(7)
    cities = ["Oslo", "Lima", "Pune", "Kyiv", "Quito", "Accra"]
    with path.open("w") as f:
        for i in range(n):
            city = rng.choice(cities)
            stars = min(5, max(1, round(rng.gauss(2.5 + cities.index(city) * 0.4, 1))))
            f.write(json.dumps({"review_id": f"r{i:06d}", "city": city, "stars": stars}) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", help="JSON-lines file (default: examples/reviews.jsonl "
                   "of the repository, else a generated sample)")
    p.add_argument("--key", default="review_id")
    p.add_argument("--group", default="city")
    p.add_argument("--value", default="stars")
    p.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "reviews.png"))
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(args.file) if args.file else SHIPPED
        if not args.file and not SHIPPED.exists():
            src = Path(tmp) / "reviews.jsonl"
            sample(src)
        with cerberus.open(str(Path(tmp) / "db")) as db:
            ns = db.create_namespace("reviews")
            loaded = 0
            with src.open() as f, ns.batch() as batch:
                for line in f:
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    batch.put(str(record[args.key]), line.strip())
                    loaded += 1
            print(f"loaded {loaded} records from {src}")

            # A VAS index: its entries point at the values, so a find reads them directly.
            ns.create_index(args.group, kind="vas")
            groups = sorted({r[args.group] for r in ns.find(project=[args.group])})
            means = []
            for g in groups:
                count = ns.aggregate("count", filter={args.group: g})
                mean = ns.aggregate("avg", args.value, filter={args.group: g})
                means.append(mean)
                print(f"{args.group}={g}: {count} records, mean {args.value} {mean:.2f}")

            best = ns.top(args.value, 3, desc=True, project=[args.group])
            print("top 3 by", args.value, [(r["_pk"], r[args.group], r[args.value]) for r in best])

            frame = ns.find({args.group: groups[0]}).to_pandas()
            print(f"{len(frame)} records of {args.group}={groups[0]} as a DataFrame:")
            print(frame.head())

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([str(g) for g in groups], means, color="#4c72b0")
    ax.set_xlabel(args.group)
    ax.set_ylabel(f"mean {args.value}")
    ax.set_title(f"mean {args.value} per {args.group} (Cerberus aggregate)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"plot written to {args.out}")


if __name__ == "__main__":
    main()
