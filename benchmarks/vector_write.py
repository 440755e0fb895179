"""What the embedding pass's write costs with the forget check (`put_vector_batches` writes only
vectors whose turn still exists, read in its transaction) against the same write without it.

Fills a store with N turns of one user, then writes vectors for K of its turns under M models (the
pass's chunk: one transaction) R times each way, alternating, and reports median milliseconds per
write. SQLite by default; `--postgres` runs it on a private PostgreSQL (the test suite's pgserver).

    python benchmarks/vector_write.py --turns 10000 --texts 1 --models 3
    python benchmarks/vector_write.py --turns 10000 --texts 256 --models 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memsched.model import Turn, content_hash
from memsched.store import open_store

Batches = Sequence[tuple[str, Sequence[tuple[str, np.ndarray]]]]


def unchecked(store: Any, user: str, batches: Batches) -> None:
    """The write as it was before the check: every vector, whether or not its turn still exists."""
    with store.transaction() as tx:
        for model_id, items in batches:
            store.put_vectors_tx(tx, user, model_id, items)
            if hasattr(store, "_repack"):
                store._repack(tx, user, model_id)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--texts", type=int, default=1, help="vectors per model in one write")
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--postgres", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if args.postgres:
            from memsched.testing.postgres import PostgresServer

            server = PostgresServer(datadir=Path(tmp) / "pg").start()
            location = server.database()
        else:
            location = str(Path(tmp) / "bench.db")
        store = open_store(location)
        turns = [
            Turn(
                user_id="u",
                session_id=f"s{i // 200}",
                role="user" if i % 2 else "assistant",
                content=f"turn {i} about the garden, the train and the weekend",
                created_at=t0 + timedelta(minutes=i),
            )
            for i in range(args.turns)
        ]
        for start in range(0, len(turns), 1000):
            store.add_turns(turns[start : start + 1000])
        texts = [text for _, text in store.turns_missing_vectors("u", "m0", limit=args.turns)]
        models = [f"m{j}" for j in range(args.models)]

        def batches() -> Batches:
            picked = rng.choice(len(texts), size=args.texts, replace=False)
            return [
                (
                    m,
                    [
                        (content_hash(texts[i]), rng.standard_normal(args.dim).astype(np.float32))
                        for i in picked
                    ],
                )
                for m in models
            ]

        store.put_vector_batches("u", batches())  # the models' indexes (PostgreSQL) exist before timing
        ms: dict[str, list[float]] = {"checked": [], "unchecked": []}
        for _ in range(args.repeat):
            for name in ("checked", "unchecked"):
                b = batches()
                t = time.perf_counter()
                if name == "checked":
                    store.put_vector_batches("u", b)
                else:
                    unchecked(store, "u", b)
                ms[name].append((time.perf_counter() - t) * 1000.0)
        store.close()
        if server is not None:
            server.stop()
    out = {
        "backend": "postgres" if args.postgres else "sqlite",
        "turns": args.turns,
        "texts": args.texts,
        "models": args.models,
        **{f"{k}_p50_ms": round(statistics.median(v), 3) for k, v in ms.items()},
        **{f"{k}_p90_ms": round(statistics.quantiles(v, n=10)[-1], 3) for k, v in ms.items()},
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
