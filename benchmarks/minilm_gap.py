"""What one MiniLM query costs when the model was not used just before: CPU per query after a gap.

`yardstick.py` (and most MiniLM timings in BENCHMARKS.md) embeds queries back to back. A turn's
query comes after other work (the turn's SQL, other threads, other tenants of the host): this script
puts a gap of plain Python work (or a sleep) before each query and reports the query's own CPU time,
median over the bilingual set's English questions. On this VM a gap of 10 ms of anything doubles it:
the model's ~42 MB of layer weights leave the caches it was read from, and a query reads them again.

    python benchmarks/minilm_gap.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memsched.config import Config
from memsched.embed.minilm import shared_minilm

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"


def _busy(seconds: float) -> Callable[[], None]:
    def gap() -> None:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            pass

    return gap


def main() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = [q["question"] for q in data["languages"]["en"]["questions"]]
    with tempfile.TemporaryDirectory() as home:
        minilm = shared_minilm(Config.load(home=Path(home)))
        minilm.embed(["warm up"])
        gaps: list[tuple[str, Callable[[], None]]] = [
            ("none (back to back)", lambda: None),
            ("1 ms busy", _busy(0.001)),
            ("3 ms busy", _busy(0.003)),
            ("10 ms busy", _busy(0.010)),
            ("10 ms asleep", lambda: time.sleep(0.010)),
            ("50 ms asleep", lambda: time.sleep(0.050)),
        ]
        out = {}
        for label, gap in gaps:
            cpu = []
            for question in questions * 2:
                gap()
                c0 = time.thread_time()
                minilm.embed([question])
                cpu.append((time.thread_time() - c0) * 1000)
            out[label] = round(statistics.median(cpu), 2)
        print(json.dumps({"benchmark": "minilm_gap", "query_cpu_ms_p50_after_gap": out}, indent=1))


if __name__ == "__main__":
    main()
