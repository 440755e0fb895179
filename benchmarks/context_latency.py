"""Context assembly latency with the default embedding setup, query embedding included.

For every LoCoMo question of categories 1-4 in the data file: one `Memory.context` call at the given
budget, timed end to end (wall clock). The first 10 calls warm caches and are not counted.

    python benchmarks/context_latency.py --data ../shared/data/locomo/locomo-dev.json --budget 2000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from memsched.config import Config
from memsched.eval.locomo import QUESTION_SESSION, questions_of
from memsched.importers import read_locomo
from memsched.memory import Memory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--embedders", default=None, help="default: the configured default")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(Config.load(home=Path(tmp), embedders=args.embedders))
        work = []
        for sample in read_locomo(args.data):
            mem.add_many(sample.turns, index=False)
            mem.index(sample.sample_id)
            ext = {t.external_id for t in sample.turns}
            work += [(sample.sample_id, q.text) for q in questions_of(sample.qa, ext)]
        times = []
        for i, (user, question) in enumerate(work):
            t0 = time.perf_counter()
            mem.context(user, question, session_id=QUESTION_SESSION, budget=args.budget, backfill=False)
            if i >= 10:
                times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        result = {
            "benchmark": "context_latency",
            "embedders": mem.config.embedders,
            "budget": args.budget,
            "questions": len(times),
            "p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
            "p99_ms": round(times[int(0.99 * (len(times) - 1))], 2),
            "mean_ms": round(statistics.fmean(times), 2),
        }
        mem.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
