"""A machine yardstick for latency and CPU figures taken on different days.

This VM's speed drifts (the same code measured P0 p50 19 ms one session and 43-53 ms later, while
one MiniLM query embedding went from 3.5 to ~9 ms of CPU), so a benchmark reports, next to its
figures, the CPU of one ONNX MiniLM query embedding measured in the same run: figures from two
runs compare after dividing by it.

    python benchmarks/yardstick.py        # {"minilm_query_cpu_ms": ...}
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

# A typical chat message (~15 tokens): what a turn's query embedding costs.
QUERY = "Where did we go on our first date, and what did I order there?"


def minilm_query_cpu_ms(embedder: Any | None = None, repeats: int = 21) -> float:
    """Median CPU (this thread's, ms) of one MiniLM query embedding, on `embedder` (a MiniLM
    embedder, unwrapped from its batcher; default: a new ONNX one, loaded first and not timed)."""
    if embedder is None:
        from memsched.embed.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder(backend="onnx")
    embedder = getattr(embedder, "inner", embedder)  # a MicroBatcher's model runs in its own thread
    embedder.embed([QUERY])  # load and warm
    cpu: list[float] = []
    for _ in range(repeats):
        t0 = time.thread_time()
        embedder.embed([QUERY])
        cpu.append((time.thread_time() - t0) * 1000.0)
    return round(statistics.median(cpu), 2)


if __name__ == "__main__":
    print(json.dumps({"minilm_query_cpu_ms": minilm_query_cpu_ms()}))
