"""Writes reviews.jsonl, the sample the README's quick start loads: 300 made-up reviews, one
JSON object a line, the same every run (seeded).

    python3 examples/make_reviews.py > examples/reviews.jsonl
"""

import json
import random

CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Quito", "Accra"]
WORDS = ["good", "slow", "friendly", "cold", "fresh", "loud", "cheap", "clean", "late", "tasty"]


def main() -> None:
    rng = random.Random(2024)
    for i in range(1, 301):
        city = rng.choice(CITIES)
        stars = min(5, max(1, round(rng.gauss(2.4 + CITIES.index(city) * 0.4, 1))))
        record = {
            "review_id": f"r{i:04d}",
            "city": city,
            "stars": stars,
            "user": {"id": f"u{rng.randrange(1, 61):03d}", "since": rng.randrange(2012, 2025)},
            "text": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 7))),
            # Some reviews have no vote count yet, and some no text: nulls, as real data has.
            "useful": rng.randrange(0, 20) if rng.random() < 0.8 else None,
            "date": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
        }
        if rng.random() < 0.05:
            record["text"] = None
        print(json.dumps(record))


if __name__ == "__main__":
    main()
