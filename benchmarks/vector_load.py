"""What a cache miss costs on SQLite: loading one user's vectors by joining turns to vectors (one
indexed lookup per turn, the only way before packs) against reading the user's packed chunks.

Users' turns are written interleaved, a few at a time per user, as a live service writes them, so a
user's rows are scattered over the file (the scale benchmark writes each user in one go, which is
kinder to the join). Vectors are random unit vectors under MiniLM's width; each user's vectors are
written through `put_vectors` as the embedding worker writes them, which keeps the packs current.

    python benchmarks/vector_load.py                    # 60 users x 1,000 turns
    python benchmarks/vector_load.py --users 200 --turns 1000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memsched.model import Turn, content_hash
from memsched.store.sqlite import SQLiteStore

MODEL, DIM = "all-MiniLM-L6-v2", 384


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=60)
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--step", type=int, default=50, help="turns written per user at a time")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    users = [f"user{i:04d}" for i in range(args.users)]
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "load.db")
        t0 = time.perf_counter()
        for start in range(0, args.turns, args.step):
            for u in users:
                turns = store.add_turns(
                    [
                        Turn(u, f"s{i // 100}", "user", f"{u} says thing {i}")
                        for i in range(start, start + args.step)
                    ]
                )
                m = rng.standard_normal((len(turns), DIM)).astype(np.float32)
                m /= np.linalg.norm(m, axis=1, keepdims=True)
                store.put_vectors(
                    u, MODEL, [(content_hash(t.text), v) for t, v in zip(turns, m, strict=True)]
                )
        ingest_s = time.perf_counter() - t0
        out: dict[str, Any] = {
            "users": args.users,
            "turns_per_user": args.turns,
            "ingest_s": round(ingest_s, 1),
            "db_mb": round(os.path.getsize(Path(tmp) / "load.db") / 2**20),
        }
        for name, load in (
            ("join", lambda u: store.vectors_since(u, MODEL, 0, 0)),
            ("pack", lambda u: store.load_vectors(u, MODEL)),
        ):
            wall, cpu = [], []
            for u in users:
                t0, c0 = time.perf_counter(), time.thread_time()
                got = load(u)
                cpu.append((time.thread_time() - c0) * 1000)
                wall.append((time.perf_counter() - t0) * 1000)
                assert len(set(got[0].tolist())) == args.turns
            out[name] = {
                "cpu_p50_ms": round(statistics.median(cpu), 2),
                "cpu_max_ms": round(max(cpu), 2),
                "wall_p50_ms": round(statistics.median(wall), 2),
                "wall_max_ms": round(max(wall), 2),
            }
        out["load_avg"] = round(os.getloadavg()[0], 2)
        store.close()
    print(json.dumps(out, indent=None if not args.json else 2))


if __name__ == "__main__":
    main()
