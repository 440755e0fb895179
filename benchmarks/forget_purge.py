"""What forgetting costs: the cascade delete, the FTS5 merge (`optimize`) and the WAL checkpoint.

Fills a SQLite store with N turns spread over U users (a mixed English/Chinese vocabulary; no
embedders: vectors do not change the purge), then forgets one turn at a time R times and reports the
median and worst milliseconds of each step, and the database size. Also reports the delete alone
(`purge=False`) for comparison: that is what the forget would cost without the byte purge.

    python benchmarks/forget_purge.py --turns 10000 --users 20
    python benchmarks/forget_purge.py --turns 100000 --users 100
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memsched.model import Turn
from memsched.store import open_store

EN = "coffee train garden violin market river doctor sister weekend movie lunch office rain winter laptop".split()  # noqa: SIM905
ZH = "咖啡 火车 花园 小提琴 市场 河边 医生 姐姐 周末 电影 午饭 办公室 下雨 冬天 电脑 自行车 博物馆 音乐会".split()  # noqa: SIM905


def _text(rng: random.Random, i: int) -> str:
    if i % 3 == 0:
        return "我" + "".join(rng.choice(ZH) for _ in range(6)) + f"，第{i}次"
    return " ".join(rng.choice(EN) for _ in range(12)) + f" note{i}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=15, help="forgets measured (each of one turn)")
    args = ap.parse_args()
    rng = random.Random(7)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        store = open_store(path)
        batch: list[Turn] = []
        started = time.perf_counter()
        for i in range(args.turns):
            user = f"user{i % args.users}"
            batch.append(Turn(user, "s1", "user", _text(rng, i), created_at=t0 + timedelta(seconds=i)))
            if len(batch) == 2000:
                store.add_turns(batch)
                batch = []
        if batch:
            store.add_turns(batch)
        fill_s = time.perf_counter() - started
        store.purge_deleted()  # start from one merged index, as a running store is after a forget
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())

        def run(purge: bool) -> dict[str, list[float]]:
            out: dict[str, list[float]] = {"total": [], "fts": [], "checkpoint": []}
            for _ in range(args.repeat):
                user = f"user{rng.randrange(args.users)}"
                victim = rng.choice(store.session_turns(user, "s1", last=50))
                assert victim.id is not None
                t = time.perf_counter()
                done = store.forget_turns(user, [victim.id], purge=purge)
                out["total"].append((time.perf_counter() - t) * 1000.0)
                if purge:
                    out["fts"].append(float(done.purge["fts_ms"]))  # type: ignore[arg-type]
                    out["checkpoint"].append(float(done.purge["checkpoint_ms"]))  # type: ignore[arg-type]
            return out

        without = run(False)
        store.purge_deleted()
        with_purge = run(True)
        store.close()

    def summary(values: list[float]) -> dict[str, float]:
        return {"p50": round(statistics.median(values), 1), "max": round(max(values), 1)} if values else {}

    print(
        json.dumps(
            {
                "turns": args.turns,
                "users": args.users,
                "db_mb": round(size / 1e6, 1),
                "fill_s": round(fill_s, 1),
                "forget_without_purge_ms": summary(without["total"]),
                "forget_with_purge_ms": summary(with_purge["total"]),
                "fts_optimize_ms": summary(with_purge["fts"]),
                "wal_checkpoint_truncate_ms": summary(with_purge["checkpoint"]),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
