"""Where a turn's time goes, thread by thread: the median start and end of its main steps.

`p0_overhead.py` reports each stage's duration; stages run on three threads at once (the turn's
own, the retrieval thread, the embedding dispatcher), so durations alone do not say which of them
the turn waited for. This script wraps the steps below with a recorder (thread, start, end, relative
to the turn's start), runs turns on the same 10,000-turn user as `p0_overhead.py` (no P2 backlog:
the layout, not the load) and prints, per step, on which thread it ran, how often, and the median
start and end in ms. The critical path is what ends last before the turn does.

    python benchmarks/p0_timeline.py --turns 100
    python benchmarks/p0_timeline.py --turns 100 --lang zh
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from memsched.config import Config
from memsched.llm.client import OpenAIChatClient
from memsched.memory import Memory
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from p0_overhead import DATA, SESSION, USER, _idle, seed_user

# module:Class.method of the steps to record (one line each in the report).
STEPS = (
    "memsched.scheduler:Scheduler._run_gated",
    "memsched.memory:Memory.query_vectors",
    "memsched.embed.batch:PendingVectors.__getitem__",
    "memsched.embed.minilm_onnx:OnnxMiniLM.embed",
    "memsched.scheduler:Scheduler._barrier",
    "memsched.scheduler:Scheduler._commands",
    "memsched.scheduler:Scheduler._overflow",
    "memsched.scheduler:Scheduler._route_inputs",
    "memsched.scheduler:Scheduler._route",
    "memsched.scheduler:Scheduler._topic",
    "memsched.router:Router.route",
    "memsched.companion:Companion.plan",
    "memsched.scheduler:Scheduler._context",
    "memsched.memory:Memory._hint_hits",
    "memsched.memory:Memory.ranked_turns",
    "memsched.assemble:assemble",
    "memsched.scheduler:Scheduler._trace",
    "memsched.scheduler:Scheduler._record",
    "memsched.memory:Memory.retrieval",
    "memsched.paging:Pager._rank",
    "memsched.retrieve:Retriever.bm25",
    "memsched.retrieve:Retriever.dense",
    "memsched.paging:Pager._bookmark_layers",
    "memsched.paging:Pager._timed_soft_layer",
    "memsched.paging:Pager._novelty",
    "memsched.paging:Pager._turn_meta",
    "memsched.retrieve:Retriever._index",
    "memsched.retrieve:Retriever.retrieve",
    "memsched.retrieve:Retriever.fused_scores",
    "memsched.vectors:VectorIndex.similarities",
    "memsched.vectors:top_hits",
    "memsched.store.sqlite:SQLiteStore.vector_version",
    "memsched.store.sqlite:SQLiteStore.vectors_since",
    "memsched.paging:Pager._without_noise",
    "memsched.paging:Pager._term_vectors",
    "memsched.paging:Pager._said_then",
    "memsched.paging:Pager._dense_vectors",
    "memsched.paging:Pager._penalise_questions",
    "memsched.paging:Pager._units",
    "memsched.vocab:TermPostings.refresh",
    "memsched.paging:Pager._vocabulary",
    "memsched.paging:Pager._soft_layer",
    "memsched.store.sqlite:SQLiteStore.get_turns",
    "memsched.store.sqlite:SQLiteStore.turn_count",
    "memsched.scheduler:Scheduler._index",
    "memsched.scheduler:Scheduler._take_failed_turn",
    "memsched.paging:Pager._session_hits",
    "memsched.paging:Pager._entity_groups",
)

_spans: list[tuple[str, str, float, float, float]] = []
_turn_start = [0.0]


def _wrap(owner: Any, attr: str, label: str) -> None:
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            cpu = time.thread_time() - c0
            _spans.append((label, threading.current_thread().name, t0, time.perf_counter(), cpu))

    setattr(owner, attr, timed)


def _install() -> None:
    for step in STEPS:
        module_name, _, path = step.partition(":")
        module = importlib.import_module(module_name)
        *owners, attr = path.split(".")
        owner: Any = module
        for name in owners:
            owner = getattr(owner, name)
        _wrap(owner, attr, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stored-turns", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--lang", choices=("zh", "en", "both"), default="both")
    args = ap.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    langs = ("zh", "en") if args.lang == "both" else (args.lang,)
    questions = [q["question"] for lang in langs for q in data["languages"][lang]["questions"]]
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        memory = Memory(Config.load(home=Path(tmp)))
        seed_user(memory, data, args.stored_turns)
        llm = OpenAIChatClient(fake.base_url, None, "fake", retries=0)
        sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
        from memsched import keywords
        from memsched.jobs.worker import Worker
        from memsched.text import gloss

        keywords.warm_up()
        gloss.warm_up()
        for i in range(10):
            sched.turn(USER, SESSION, questions[i % len(questions)])
            _idle(sched)
        Worker(memory, queue=sched.queue, llm=None).drain(timeout=120)
        _install()
        per_step: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"start": [], "end": [], "cpu": [], "threads": set()}
        )
        totals: list[float] = []
        for i in range(args.turns):
            question = questions[i % len(questions)]
            _spans.clear()
            t0 = time.perf_counter()
            result = sched.turn(USER, SESSION, question)
            t1 = time.perf_counter()
            llm_ms = float(result.trace["timings_ms"].get("llm", 0.0))
            totals.append((t1 - t0) * 1000 - llm_ms)
            _idle(sched)
            seen: set[str] = set()
            for label, thread, s, e, cpu in list(_spans):
                if s < t0 or s > t1 or label in seen:  # the first call within the turn only
                    continue
                seen.add(label)
                step = per_step[label]
                step["start"].append((s - t0) * 1000)
                step["end"].append((e - t0) * 1000)
                step["cpu"].append(cpu * 1000)
                step["threads"].add(thread.replace("memsched-", ""))
        sched.close()
        llm.close()
        memory.close()
    print(f"turns {args.turns} ({args.lang}); turn minus LLM call p50 {statistics.median(totals):.2f} ms")
    print(f"{'step':44} {'thread':14} {'share':>5} {'start':>7} {'end':>7} {'dur':>6} {'cpu':>6}")
    rows = sorted(per_step.items(), key=lambda kv: statistics.median(kv[1]["start"]))
    for label, step in rows:
        start, end = statistics.median(step["start"]), statistics.median(step["end"])
        dur = statistics.median(e - s for s, e in zip(step["start"], step["end"], strict=True))
        share = len(step["start"]) / args.turns
        cpu = statistics.median(step["cpu"])
        print(
            f"{label:44} {','.join(sorted(step['threads']))[:14]:14} {share:5.2f} {start:7.2f} {end:7.2f} {dur:6.2f} {cpu:6.2f}"
        )


if __name__ == "__main__":
    main()
