"""P0 overhead of `Scheduler.turn`: everything a turn costs except the reply LLM call.

Setup: one user with 10,000 stored turns (the bilingual memory set's zh and en histories, repeated
under new session ids), the default embedders (MiniLM + WordLlama), and P2 workers busy with a
backlog of 1,000 jobs for other users (embedding their unindexed turns, summarising their sessions).
The process is set up as `memsched serve` sets up its own: a CPU kept for the embedding dispatcher
(`memsched.affinity`; `--no-embed-core` leaves it shared). The reply LLM is the fake OpenAI server on
loopback answering at once; the scheduler times the call and its trace reports `p0_overhead_ms` =
turn total - LLM call.

Before the backlog is queued, the jobs the warm-up's turns queued (the first page's bookmark, which
gives the user the vocabulary of the soft-term layer, its profile and summaries) run to their end in
every mode, so that `--no-workers` (the control) and the default measure the same retrieval. The
report says how many P2 jobs finished per minute while the turns ran and in `--idle-seconds` after.

Between turns the driver waits for the session to go idle (the reply's embedding runs after the
turn returns, under the session's lock): a person takes longer than that to type the next message.
Lock waits are still part of the overhead.

    python benchmarks/p0_overhead.py                   # prints one JSON object
    python benchmarks/p0_overhead.py --turns 100 --torch-threads 1
    python benchmarks/p0_overhead.py --turns 240 --paired 5   # the worker held back in every other 5 turns
    python benchmarks/p0_overhead.py --no-embed-core   # the dispatcher's CPU shared (serve keeps one for it)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memsched.config import Config
from memsched.jobs.queue import Job, Priority
from memsched.llm.client import OpenAIChatClient
from memsched.memory import Memory
from memsched.model import Turn
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI
from memsched.text.segment import cjk_ratio

sys.path.insert(0, str(Path(__file__).parent))
from yardstick import minilm_query_cpu_ms

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"
USER = "bench"
SESSION = "bench-live"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return round(ordered[k], 2)


def seed_user(memory: Memory, data: dict[str, Any], n_turns: int) -> None:
    """`n_turns` turns for USER: the zh and en histories, repeated under fresh session ids."""
    base = [(lang, t) for lang in ("zh", "en") for t in data["languages"][lang]["turns"]]
    turns: list[Turn] = []
    rep = 0
    while len(turns) < n_turns:
        for lang, t in base:
            if len(turns) >= n_turns:
                break
            at = datetime.fromisoformat(t["timestamp"].replace("Z", "+00:00")) - timedelta(days=200 * rep)
            turns.append(
                Turn(
                    user_id=USER,
                    session_id=f"r{rep}-{lang}-{t['session_id']}",
                    role=t["role"],
                    content=t["content"],
                    created_at=at,
                )
            )
        rep += 1
    turns.sort(key=lambda t: t.created_at)
    memory.add_many(turns, index=False)
    memory.index(USER)


def seed_backlog(memory: Memory, data: dict[str, Any], jobs: int, users: int) -> list[Job]:
    """Other users with unindexed turns, and `jobs` P2 jobs for them: one embed job per user, the
    rest summaries of distinct sessions (so each one has real work)."""
    if jobs <= 0:
        return []
    lines = [t["content"] for lang in ("zh", "en") for t in data["languages"][lang]["turns"]]
    sessions_per_user = max(1, (jobs - users) // users + 1)
    turns: list[Turn] = []
    i = 0
    now = datetime.now(UTC) - timedelta(days=1)
    for u in range(users):
        for s in range(sessions_per_user):
            for k in range(10):
                turns.append(
                    Turn(
                        user_id=f"other{u}",
                        session_id=f"s{s}",
                        role="user" if k % 2 == 0 else "assistant",
                        content=f"{lines[i % len(lines)]} ({u}-{s}-{k})",
                        created_at=now,
                    )
                )
                i += 1
    memory.add_many(turns, index=False)
    out = [Job(kind="embed", user_id=f"other{u}", priority=Priority.P2) for u in range(users)]
    u = s = 0
    while len(out) < jobs:
        out.append(
            Job(
                kind="summary",
                user_id=f"other{u}",
                session_id=f"s{s}",
                payload={"first_seq": 0, "last_seq": 9, "reason": "topic"},
                priority=Priority.P2,
            )
        )
        u += 1
        if u == users:
            u, s = 0, s + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stored-turns", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200, help="measured turns (after --warmup)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--backlog", type=int, default=1000)
    ap.add_argument("--other-users", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--no-workers", action="store_true", help="queue the backlog but run no worker (a control)"
    )
    ap.add_argument(
        "--worker-process",
        action="store_true",
        help="run the P2 workers as a separate `memsched worker` process instead of threads in this one",
    )
    ap.add_argument(
        "--idle-seconds",
        type=float,
        default=10,
        help="after the turns: how long to count idle background progress",
    )
    ap.add_argument(
        "--paired",
        type=int,
        default=0,
        metavar="N",
        help="hold the in-process worker back in every other block of N turns; report both halves",
    )
    ap.add_argument("--embedders", default=None, help="default: the configured default (minilm,wordllama)")
    ap.add_argument("--torch-threads", type=int, default=None, help="torch.set_num_threads before the run")
    ap.add_argument(
        "--no-embed-core",
        dest="embed_core",
        action="store_false",
        help="leave the embedding dispatcher's CPU shared (`memsched serve` keeps one for it by default)",
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.embed_core:
        # The process set up as `memsched serve` sets up its own (`Config.embed_core`, default on):
        # a CPU kept for the embedding dispatcher, before any thread of the run starts.
        from memsched import affinity

        affinity.reserve()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)

    _count_background_texts()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = [q["question"] for lang in ("zh", "en") for q in data["languages"][lang]["questions"]]
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        memory = Memory(Config.load(home=Path(tmp), embedders=args.embedders))
        t0 = time.perf_counter()
        seed_user(memory, data, args.stored_turns)
        backlog = seed_backlog(memory, data, args.backlog, args.other_users)
        seed_s = time.perf_counter() - t0

        llm = OpenAIChatClient(fake.base_url, None, "fake", retries=0)
        sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
        # Warm-up before the backlog, so model loading is not measured: what `memsched serve` loads
        # at start (the bookmark jobs' jieba tables, the gloss dictionary; ~1-2 s of CPU holding the
        # GIL in the first bookmark job otherwise), then a few turns.
        from memsched import keywords
        from memsched.text import gloss

        keywords.warm_up()
        gloss.warm_up()
        minilm = memory.embedders.get("minilm")
        if minilm is not None and hasattr(minilm, "warm_up_background"):
            minilm.warm_up_background()  # the model's pieces for background calls (`memsched serve` too)
        for i in range(args.warmup):
            sched.turn(USER, SESSION, questions[i % len(questions)])
            _idle(sched)
        from memsched.jobs.worker import Worker

        # The jobs the warm-up's turns queued (the first page's bookmark, which gives the user the
        # vocabulary the soft-term layer searches; its profile and summaries) run now, in every mode:
        # otherwise the default run's worker did them first (queued before the backlog) and
        # `--no-workers` never did, so the control's turns skipped the soft-term layer (and its MiniLM
        # call for query words) and looked ~7 ms faster than the worker could explain.
        warmup_jobs = Worker(memory, queue=sched.queue, llm=None).drain(timeout=120)
        sched.queue.enqueue(backlog)

        worker: Any = None
        if args.no_workers:
            pass
        elif args.worker_process:
            import subprocess
            import sys

            cmd = [sys.executable, "-c", "from memsched.cli import main; main()", "worker"]
            cmd += ["--threads", str(args.workers), "--home", tmp, "--db", str(memory.config.db_path)]
            if args.embedders:
                cmd += ["--embedders", args.embedders]
            worker = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(8)  # let it load its models and start on the backlog
        else:
            worker = Worker(
                memory, threads=args.workers, queue=sched.queue, llm=None, gate=sched.gate
            ).start()
        depth_start = sched.queue.depth()[int(Priority.P2)]
        vectors_start = _backlog_vectors(memory, args.other_users)
        bg_texts_start = _BACKGROUND_TEXTS[0]
        done_start, t_start = _done(sched), time.perf_counter()

        overhead: list[float] = []
        stages: dict[str, list[float]] = {}
        llm_ms: list[float] = []
        worker_threads = list(getattr(worker, "_threads", None) or [])
        cpu_turn: list[float] = []
        cpu_worker: list[float] = []
        # The same figures per script of the message: a Chinese message costs a second MiniLM input
        # (its gloss) and two more dense layers, so the two halves of the run differ (and p50 falls
        # between them).
        by_script: dict[str, dict[str, list[float]]] = {"zh": {}, "en": {}}
        # --paired N: the in-process worker is held back (the foreground gate kept busy, as during a
        # turn) in every other block of N turns, so one run compares turns with and without it on
        # the same machine state (the VM's speed drifts between runs by up to 2x).
        paired: dict[str, list[float]] = {"worker": [], "held": []}
        paired_cpu: dict[str, list[float]] = {"worker": [], "held": []}
        held = False
        waits: tuple[float, Any] = (sched.gate.max_wait, None)
        for i in range(args.turns):
            if args.paired and not args.worker_process and worker is not None:
                hold = (i // args.paired) % 2 == 1
                if hold and not held:
                    waits = sched.gate.max_wait, getattr(sched.gate, "step", None)
                    sched.gate.max_wait = sched.gate.step = 60.0  # the worker waits out the whole block
                    sched.gate.enter()
                elif held and not hold:
                    sched.gate.max_wait, sched.gate.step = waits
                    sched.gate.leave()
                held = hold
            # CPU of the whole process during the turn, split into the in-process worker's threads
            # and the rest (the turn's own threads, the fake LLM server's, the lease renewal).
            w0, p0 = _thread_cpu(worker_threads), time.process_time()
            question = questions[(i + args.warmup) % len(questions)]
            result = sched.turn(USER, SESSION, question)
            p1, w1 = time.process_time(), _thread_cpu(worker_threads)
            cpu_worker.append((w1 - w0) * 1000)
            cpu_turn.append((p1 - p0 - (w1 - w0)) * 1000)
            if args.paired:
                paired["held" if held else "worker"].append(float(result.trace["p0_overhead_ms"]))
                paired_cpu["held" if held else "worker"].append(cpu_turn[-1])
            trace = result.trace
            overhead.append(float(trace["p0_overhead_ms"]))
            llm_ms.append(float(trace["timings_ms"].get("llm", 0.0)))
            for name, ms in trace["timings_ms"].items():
                if name not in ("total", "llm"):
                    stages.setdefault(name, []).append(float(ms))
            for name, ms in trace["context_timings_ms"].items():
                stages.setdefault(f"context.{name}", []).append(float(ms))
            mine = by_script["zh" if cjk_ratio(question) > 0.5 else "en"]
            mine.setdefault("p0_overhead_ms_p50_p90_p99", []).append(overhead[-1])
            mine.setdefault("cpu_turn", []).append(cpu_turn[-1])
            for name in ("embed_query", "route", "record"):
                mine.setdefault(name, []).append(float(trace["timings_ms"].get(name, 0.0)))
            for name in ("retrieval_wait", "paging_total", "load", "assemble"):
                mine.setdefault(f"context.{name}", []).append(
                    float(trace["context_timings_ms"].get(name, 0.0))
                )
            _idle(sched)
        if held:
            sched.gate.leave()
        depth_end = sched.queue.depth()[int(Priority.P2)]
        done_turns, minutes_turns = _done(sched) - done_start, (time.perf_counter() - t_start) / 60
        vectors_turns = _backlog_vectors(memory, args.other_users) - vectors_start
        bg_texts_turns = _BACKGROUND_TEXTS[0] - bg_texts_start
        # Background progress when no turn comes (the backlog drains between conversations).
        done_idle_start = _done(sched)
        time.sleep(args.idle_seconds if worker is not None else 0)
        done_idle = _done(sched) - done_idle_start
        if args.worker_process:
            worker.terminate()
            worker.wait(timeout=60)
        elif worker is not None:
            worker.stop(timeout=60)
        # The machine's speed now (yardstick.py): the same model the turns used, workers stopped.
        minilm = memory.embedders.get("minilm")
        yardstick = minilm_query_cpu_ms(minilm) if minilm is not None else None
        sched.close()
        llm.close()
        memory.close()

    result = {
        "benchmark": "p0_overhead",
        "stored_turns": args.stored_turns,
        "embedders": args.embedders or Config.load().embedders,
        "torch_threads": args.torch_threads,
        "turns": args.turns,
        "p0_overhead_ms": {
            "p50": _pct(overhead, 0.5),
            "p90": _pct(overhead, 0.9),
            "p99": _pct(overhead, 0.99),
            "mean": round(statistics.fmean(overhead), 2),
            # The slowest turn: a one-off cost (a user's first query building what later ones reuse)
            # shows here and in no percentile.
            "max": round(max(overhead), 2),
        },
        "llm_call_ms_p50": _pct(llm_ms, 0.5),
        # CPU during each turn (wall figures on a shared machine are noisy; these are steadier):
        # the process less the in-process P2 worker, and the worker alone (what it took from the turn).
        "cpu_ms_per_turn": {
            "turn_p50": _pct(cpu_turn, 0.5),
            "turn_mean": round(statistics.fmean(cpu_turn), 2),
            "worker_during_turn_p50": _pct(cpu_worker, 0.5),
            "worker_during_turn_mean": round(statistics.fmean(cpu_worker), 2),
        },
        "stage_ms_p50": {k: _pct(v, 0.5) for k, v in sorted(stages.items())},
        # p50 per script (the overhead also p90 / p99): where the run's p50 sits between the two.
        "by_script": {
            script: {
                "turns": len(figures.get("p0_overhead_ms_p50_p90_p99", [])),
                **{
                    k: [_pct(v, 0.5), _pct(v, 0.9), _pct(v, 0.99)]
                    if k.startswith("p0_overhead")
                    else _pct(v, 0.5)
                    for k, v in figures.items()
                },
            }
            for script, figures in by_script.items()
            if figures
        },
        "stage_ms_p99": {k: _pct(v, 0.99) for k, v in sorted(stages.items())},
        "stage_ms_max": {k: round(max(v), 2) for k, v in sorted(stages.items())},
        "backlog": {
            "jobs": args.backlog,
            "warmup_jobs_run_first": warmup_jobs,
            "p2_queued_at_start": depth_start,
            "p2_queued_at_end": depth_end,
            # Jobs finished per minute while the turns ran, and in --idle-seconds without turns after.
            "done_per_min_during_turns": round(done_turns / minutes_turns, 1),
            # Most of the backlog is embedding (a job per user, ~100 turns each, a few of them done
            # while the turns run): the vectors it stored per minute (every embedder) show progress
            # where jobs per minute reads 0.
            "vectors_per_min_during_turns": round(vectors_turns / minutes_turns, 1),
            # Vectors are stored a 32-turn round at a time, so that figure is lumpy over a short run;
            # the texts background MiniLM calls finished (a call is a few texts) are not.
            "minilm_texts_per_min_during_turns": round(bg_texts_turns / minutes_turns, 1),
            "done_per_min_idle": round(done_idle / (args.idle_seconds / 60), 1)
            if args.idle_seconds
            else None,
        },
        "paired": {
            name: {
                "turns": len(values),
                "p50_p90_p99_mean": [
                    _pct(values, 0.5),
                    _pct(values, 0.9),
                    _pct(values, 0.99),
                    round(statistics.fmean(values), 2),
                ],
                "turn_cpu_p50_mean": [
                    _pct(paired_cpu[name], 0.5),
                    round(statistics.fmean(paired_cpu[name]), 2),
                ],
            }
            for name, values in paired.items()
            if values
        }
        or None,
        "workers": args.workers,
        "worker_process": args.worker_process,
        "seed_seconds": round(seed_s, 1),
        "minilm_backend": os.environ.get("MEMSCHED_MINILM_BACKEND", "onnx"),
        # CPU of one MiniLM query embedding in this run: figures of runs on different days compare
        # after dividing by it (the VM's speed drifts).
        "minilm_query_cpu_ms": yardstick,
        # The machine's run queue (1, 5, 15 min) at the end: figures taken under load are slower.
        "load_average_at_end": os.getloadavg(),
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))


def _thread_cpu(threads: list[Any]) -> float:
    """CPU seconds used so far by these (live) threads."""
    total = 0.0
    for t in threads:
        if t.ident is not None and t.is_alive():
            total += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
    return total


_BACKGROUND_TEXTS = [0]  # texts whose background (P2) MiniLM call finished, in this process


def _count_background_texts() -> None:
    """Count the texts of finished background MiniLM calls (ONNX): every call ends in `_pool`,
    and background work is the thread with a pause hook (`embed.base.background`)."""
    from memsched.embed import minilm_onnx
    from memsched.embed.base import background_pause

    real = minilm_onnx._pool

    def pool(hidden: Any, mask: Any) -> Any:
        if background_pause() is not None:
            _BACKGROUND_TEXTS[0] += len(mask)
        return real(hidden, mask)

    minilm_onnx._pool = pool  # type: ignore[assignment]


def _backlog_vectors(memory: Memory, users: int) -> int:
    """Vectors stored so far for the backlog's users, under every embedder."""
    models = [e.model_id for e in memory.embedders.values()]
    return sum(memory.store.vector_count(f"other{u}", m) for u in range(users) for m in models)


def _done(sched: Scheduler) -> int:
    """Jobs finished so far (done or dead), by any worker of this database."""
    counts = sched.queue.store.jobs_counts()
    return counts.get("done", 0) + counts.get("dead", 0)


def _idle(sched: Scheduler) -> None:
    """Wait until the session's post-reply work is done (the next message of a person comes later)."""
    while sched.queued(USER, SESSION):
        time.sleep(0.001)


if __name__ == "__main__":
    main()
