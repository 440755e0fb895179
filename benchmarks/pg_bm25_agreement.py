"""How close PostgresStore's full-text ranking is to SQLite's FTS5 BM25, question by question
(BENCHMARKS.md, "PostgreSQL full-text ranking"; `memsched eval locomo --database-url` gives the recall).

Imports a LoCoMo file into a SQLite store and into a PostgreSQL store (a private `pgserver` or
`--database-url`), the turns only (no vectors, no bookmarks: full-text search needs neither), then
asks both `search_bm25` every question and compares the rankings: how many hits each returns, the
overlap of their top 10 and top 50, and how often the first hit is the same turn.

    python benchmarks/pg_bm25_agreement.py --data ../shared/data/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from memsched import Config, Memory
from memsched.embed.hashing import HashEmbedder
from memsched.eval.locomo import questions_of
from memsched.importers import read_locomo
from memsched.store import open_store
from memsched.testing.postgres import PostgresServer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--limit", type=int, default=400, help="hits asked of each store per question")
    ap.add_argument("--database-url", default=None, help="an existing server (default: a private pgserver)")
    args = ap.parse_args()
    samples = read_locomo(args.data)
    with tempfile.TemporaryDirectory(prefix="memsched-bm25-") as tmp, PostgresServer(args.database_url) as pg:
        url = pg.database()
        stores = {"sqlite": open_store(Path(tmp) / "a.db"), "postgres": open_store(url)}
        counts: dict[str, list[int]] = {"sqlite": [], "postgres": []}
        top1: list[float] = []
        overlap: dict[int, list[float]] = {10: [], 50: []}
        try:
            # Through Memory, as `eval locomo` imports: relative dates are resolved into the index too.
            memories = [
                Memory(Config.load(home=Path(tmp)), store=s, embedders={"hash": HashEmbedder()})
                for s in stores.values()
            ]
            for sample in samples:
                memories[0].add_many(sample.turns, index=False)
                memories[1].add_many(_fresh(sample.turns), index=False)
                stored = list(stores["sqlite"].iter_turns(sample.sample_id))
                for q in questions_of(sample.qa, {t.external_id for t in stored if t.external_id}):
                    hits = {
                        name: [h.turn_id for h in s.search_bm25(sample.sample_id, q.text, args.limit)]
                        for name, s in stores.items()
                    }
                    for name, ids in hits.items():
                        counts[name].append(len(ids))
                    a, b = hits["sqlite"], hits["postgres"]
                    if not a and not b:
                        continue
                    top1.append(1.0 if a[:1] == b[:1] else 0.0)
                    for k in overlap:
                        ka, kb = set(a[:k]), set(b[:k])
                        overlap[k].append(len(ka & kb) / max(len(ka | kb), 1))
        finally:
            for s in stores.values():
                s.close()
    out = {
        "questions": len(counts["sqlite"]),
        "mean_hits": {n: round(statistics.fmean(c), 1) for n, c in counts.items()},
        "same_first_hit": round(statistics.fmean(top1), 3),
        "jaccard_top10": round(statistics.fmean(overlap[10]), 3),
        "jaccard_top50": round(statistics.fmean(overlap[50]), 3),
    }
    print(json.dumps(out, indent=1))


def _fresh(turns: list) -> list:  # type: ignore[type-arg]
    """Copies without the ids the first store gave (both stores then number the turns alike)."""
    from dataclasses import replace

    return [replace(t, id=None, seq=None, page_id=None) for t in turns]


if __name__ == "__main__":
    main()
