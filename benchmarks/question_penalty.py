"""Cost of the question penalty (`Pager._penalise_questions`) at 10,000 stored turns.

One user with 10,000 turns (the bilingual memory set's texts, repeated), SQLite. Each call
re-scores a head of 200 candidates drawn at random from those turns: "cold" empties the per-user
share cache before every call (every text read from the store), "warm" keeps it (a conversation's
later queries). Reports CPU time of the calling thread and wall time, p50 / p99, in ms.

    python benchmarks/question_penalty.py            # prints one JSON object
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.model import Candidate, Turn
from memsched.paging import Pager, PagingOptions

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"


def _texts(node: Any, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        for v in node.values():
            _texts(v, out)
    elif isinstance(node, list):
        for v in node:
            _texts(v, out)
    elif isinstance(node, str) and len(node) > 20:
        out.append(node)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def main() -> None:
    texts = _texts(json.loads(DATA.read_text(encoding="utf-8")), [])
    rng = random.Random(1)
    out: dict[str, Any] = {"benchmark": "question_penalty", "stored_turns": 10_000, "head": 200}
    with tempfile.TemporaryDirectory() as home:
        mem = Memory(home=Path(home), embedders={"hash": HashEmbedder()})
        t0 = datetime(2024, 1, 1, tzinfo=UTC)
        mem.add_many(
            [
                Turn("u", f"s{i // 20}", "user", texts[i % len(texts)], created_at=t0 + timedelta(minutes=i))
                for i in range(10_000)
            ],
            index=False,
        )
        ids = [t.id for t in mem.store.iter_turns("u") if t.id is not None]
        pager = Pager(mem, PagingOptions())
        for mode in ("cold", "warm"):
            cpu: list[float] = []
            wall: list[float] = []
            for _ in range(300):
                head = [Candidate(turn_id=i, fused=rng.random()) for i in rng.sample(ids, 200)]
                head.sort(key=lambda c: -c.fused)
                if mode == "cold":
                    pager.forget("u")
                c0, w0 = time.thread_time(), time.perf_counter()
                pager._penalise_questions("u", head)
                cpu.append((time.thread_time() - c0) * 1000.0)
                wall.append((time.perf_counter() - w0) * 1000.0)
            out[mode] = {
                "cpu_ms_p50": round(statistics.median(cpu), 3),
                "cpu_ms_p99": _pct(cpu, 0.99),
                "wall_ms_p50": round(statistics.median(wall), 3),
                "wall_ms_p99": _pct(wall, 0.99),
            }
        mem.close()
    out["load_average_at_end"] = list(os.getloadavg())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
