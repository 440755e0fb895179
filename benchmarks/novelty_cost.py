"""Cost of the redundancy re-ranking (`Pager._novelty`, maximal marginal relevance) at 10,000 turns.

One user with 10,000 turns (the bilingual memory set's texts, repeated), SQLite, a 384-dimension
embedder (MiniLM's width; hashed vectors, so no model is loaded). Each call re-ranks a head of
`novelty_top` (120) candidates drawn at random from those turns, reading their vectors from the
user's in-memory index. Reports CPU time of the calling thread and wall time, p50 / p99, in ms.

    python benchmarks/novelty_cost.py            # prints one JSON object
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.model import Candidate, Turn
from memsched.paging import Pager, PagingOptions

sys.path.insert(0, str(Path(__file__).parent))
from question_penalty import DATA, _pct, _texts  # the same 10k-turn seed and percentile


def main() -> None:
    texts = _texts(json.loads(DATA.read_text(encoding="utf-8")), [])
    rng = random.Random(1)
    options = PagingOptions(novelty=PagingOptions().novelty or 0.2)
    out: dict[str, Any] = {
        "benchmark": "novelty",
        "stored_turns": 10_000,
        "head": options.novelty_top,
        "novelty": options.novelty,
    }
    with tempfile.TemporaryDirectory() as home:
        mem = Memory(home=Path(home), embedders={"hash": HashEmbedder(dim=384)})
        t0 = datetime(2024, 1, 1, tzinfo=UTC)
        mem.add_many(
            [
                Turn(
                    "u",
                    f"s{i // 20}",
                    "user",
                    f"{texts[i % len(texts)]} #{i}",
                    created_at=t0 + timedelta(minutes=i),
                )
                for i in range(10_000)
            ]
        )
        ids = [t.id for t in mem.store.iter_turns("u") if t.id is not None]
        pager = Pager(mem, options)
        cpu: list[float] = []
        wall: list[float] = []
        for n in range(330):
            head = [Candidate(turn_id=i, fused=rng.random()) for i in rng.sample(ids, 200)]
            head.sort(key=lambda c: -c.fused)
            c0, w0 = time.thread_time(), time.perf_counter()
            pager._novelty("u", head)
            if n >= 30:  # the first calls load the user's vector index
                cpu.append((time.thread_time() - c0) * 1000.0)
                wall.append((time.perf_counter() - w0) * 1000.0)
        out["cpu_ms_p50"] = round(statistics.median(cpu), 3)
        out["cpu_ms_p99"] = _pct(cpu, 0.99)
        out["wall_ms_p50"] = round(statistics.median(wall), 3)
        out["wall_ms_p99"] = _pct(wall, 0.99)
        mem.close()
    out["load_average_at_end"] = list(os.getloadavg())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
