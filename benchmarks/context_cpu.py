"""CPU of `Memory.context` for the P0 user's questions, fusion setups alternated in one process.

Whole-turn P0 runs (`p0_overhead.py`) on a shared machine swing with the load by far more than a
millisecond of retrieval; here the setups to compare run in one process, on one user, alternated
question round by question round (the order flipped every round), so the load falls on all of them
alike. The user is `p0_overhead.py`'s: 10,000 stored turns, half Chinese, its warm-up turns and the
jobs they queue (the first bookmark, the vocabulary). Reported per setup: the calling thread's CPU
and the wall time of a context (p50, mean) and each stage's p50 (the context's own timings).

    python benchmarks/context_cpu.py                                  # English questions: layer, space, before
    python benchmarks/context_cpu.py --lang zh --setups space,space+zh

Setups are `across_languages.py`'s (`SETUPS`, `weights_of`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from memsched.config import Config
from memsched.jobs.worker import Worker
from memsched.llm.client import OpenAIChatClient
from memsched.memory import Memory
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from across_languages import SETUPS, weights_of
from p0_overhead import DATA, SESSION, USER, seed_user


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setups", default="layer,space,before", help=f"from: {', '.join(SETUPS)}")
    ap.add_argument("--lang", default="en", choices=("en", "zh"), help="which questions")
    ap.add_argument("--rounds", type=int, default=8, help="rounds of every question per setup")
    ap.add_argument("--stored-turns", type=int, default=10_000)
    args = ap.parse_args()
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        ap.error(f"--setups: unknown setup {unknown[0]!r}; choose from {', '.join(SETUPS)}")
    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = [q["question"] for q in data["languages"][args.lang]["questions"]]
    warmup = [q["question"] for lang in ("zh", "en") for q in data["languages"][lang]["questions"]][:10]
    cpu: dict[str, list[float]] = {s: [] for s in setups}
    wall: dict[str, list[float]] = {s: [] for s in setups}
    stages: dict[str, dict[str, list[float]]] = {s: {} for s in setups}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        memory = Memory(Config.load(home=Path(tmp)))
        seed_user(memory, data, args.stored_turns)
        llm = OpenAIChatClient(fake.base_url, None, "fake", retries=0)
        sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
        for question in warmup:  # as p0_overhead.py: a few turns, then the jobs they queued
            sched.turn(USER, SESSION, question)
            while sched.queued(USER, SESSION):
                time.sleep(0.001)
        Worker(memory, queue=sched.queue, llm=None).drain(timeout=120)
        for setup in setups:  # each setup's first questions untimed (its caches)
            memory.retriever.weights = weights_of(setup)
            for question in questions[:5]:
                memory.context(USER, question, session_id=SESSION, backfill=False)
        for r in range(args.rounds):
            for setup in setups if r % 2 == 0 else setups[::-1]:
                memory.retriever.weights = weights_of(setup)
                for question in questions:
                    c0, t0 = time.thread_time(), time.perf_counter()
                    ctx = memory.context(USER, question, session_id=SESSION, backfill=False)
                    wall[setup].append((time.perf_counter() - t0) * 1000)
                    cpu[setup].append((time.thread_time() - c0) * 1000)
                    for name, ms in ctx.trace["timings_ms"].items():
                        stages[setup].setdefault(name, []).append(float(ms))
        sched.close()
        llm.close()
        memory.close()
    result = {
        "benchmark": "context_cpu",
        "lang": args.lang,
        "questions_per_setup": len(questions) * args.rounds,
        "setups": {
            s: {
                "cpu_ms_p50_mean": [round(statistics.median(cpu[s]), 2), round(statistics.fmean(cpu[s]), 2)],
                "wall_ms_p50_mean": [
                    round(statistics.median(wall[s]), 2),
                    round(statistics.fmean(wall[s]), 2),
                ],
                "stage_ms_p50": {k: round(statistics.median(v), 3) for k, v in sorted(stages[s].items())},
            }
            for s in setups
        },
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
