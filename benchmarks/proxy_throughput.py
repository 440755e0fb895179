"""Proxy throughput and latency: `memsched serve` answering POST /v1/chat/completions on loopback.

Three processes, all on 127.0.0.1: a fake upstream that answers at once (`memsched.testing.FakeOpenAI`,
echoing "ok: " + the message), `memsched serve` with the default configuration (MiniLM + WordLlama,
in-process workers) on a fresh data directory, and this driver (asyncio + aiohttp: the driver and the
upstream share the machine's cores with the server, so both are kept cheap; each one's CPU per turn is
reported). The measured phases start once the server is idle after its warm-up turns.

1. Closed loop: `--clients` clients, each its own user and session, send `--messages` messages one
   after the other (the next when the reply is back). Reported: turns/s over the phase, latency,
   and the server's CPU per turn: during the phase, with the post-reply work (the replies'
   embeddings), and with the background jobs the turns queued (P2 jobs lag behind the turns and
   run once they let up: the time the queue took to drain is reported). With 8 messages (16 turns)
   a user fills no page (20 turns), so no bookmark job runs; `--messages 12` makes one per user.
2. Open loop: `--rate` turns/s offered for `--seconds` (evenly spaced, spread over `--sessions`
   sessions of new users; a session never has two messages in flight), latency p50/p95/p99.
3. Order check: every session's stored turns (read from the SQLite file after the server stopped)
   must be exactly its messages in the order sent, each followed by the reply to that message.

Also reported: how many cores the server kept busy during the closed loop (`server_cores_busy`) and
its resident memory after the phases (`server_memory_mb`). `--server-processes N` is an experiment,
not a mode of `memsched serve`: N server processes on one port (SO_REUSEPORT) and one SQLite file,
their CPU, threads and memory summed (BENCHMARKS.md "Proxy in session 21").

Every loop is bounded (count and a timeout per request); nothing leaves loopback.

    python benchmarks/proxy_throughput.py                      # prints one JSON object
    python benchmarks/proxy_throughput.py --clients 50 --messages 8 --rate 20 --seconds 15
    python benchmarks/proxy_throughput.py --server-processes 2     # the experiment
    python benchmarks/proxy_throughput.py --rate 0 --probe-sql \
        --probe-functions memsched.scheduler:Scheduler._turn_locked,memsched.paging:Pager.retrieve

`--probe-functions` / `--probe-sql` start the server through `server_probe.py`, which counts inside
it over the closed loop: the CPU and calls a turn of the named methods (the calling thread's CPU
time, so waits cost nothing), and the SQL statements and transactions a turn. Reported under
`closed_loop.probe`; the probe slows the server, so a probed run's turns/s is not a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).parent))
import server_probe  # beside this script

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"
UPSTREAM = """
import sys
from memsched.testing import FakeOpenAI, fake_openai
# Keep-alive, as real upstreams do (the fake speaks HTTP/1.0 for its streaming replies, which end
# by closing; this benchmark sends no streaming request).
fake_openai._Handler.protocol_version = "HTTP/1.1"
fake_openai._Server.request_queue_size = 256  # 50 clients connect at once
with FakeOpenAI() as fake:
    print(fake.base_url, flush=True)
    sys.stdin.read()  # until the driver closes our stdin
"""
# `--server-processes N` (an experiment, not a mode of `memsched serve`): N processes, each what
# `memsched serve` runs (the default configuration, its turn threads, its frozen start-up heap, an
# in-process P2 worker), on the same SQLite file and the same port (SO_REUSEPORT: the kernel spreads
# the connections over them). Each says "ready" once its models are loaded and it listens.
SHARED_SERVER = """
import socket
import uvicorn
from memsched.config import Config
from memsched.server.app import TURN_THREADS, create_app
from memsched.server.service import Service
cfg = Config.load()
svc = Service(cfg)
svc.warm_up(freeze_heap=True)
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
sock.bind(("127.0.0.1", cfg.port))
sock.listen(2048)
print("ready", flush=True)
app = create_app(service=svc, warm_up=False, turn_threads=TURN_THREADS)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return round(ordered[k], 1)


Pids = tuple[int, ...]  # a role's processes: the server may be several (--server-processes)


def _cpu_s(pids: Pids) -> float:
    """User + system CPU seconds of processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _memory_mb(pids: Pids) -> dict[str, float]:
    """Processes' resident memory now and at each one's peak, summed, in MB (/proc: VmRSS, VmHWM)."""
    out = {"rss": 0.0, "peak": 0.0}
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss" if key == "VmRSS" else "peak"] += int(value.split()[0]) / 1024
    return {k: round(v, 1) for k, v in out.items()}


def _thread_cpu_s(pids: Pids) -> dict[int, float]:
    """CPU seconds so far of each of the processes' threads, by thread id (Linux /proc)."""
    out: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in (t for pid in pids for t in Path(f"/proc/{pid}/task").iterdir()):
        with contextlib.suppress(OSError):
            fields = task.joinpath("stat").read_text().rsplit(")", 1)[1].split()
            out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _thread_names(pids: Pids) -> dict[int, str]:
    """Python's names of the processes' threads by thread id, without their numbers ("asyncio_3" ->
    "asyncio"), read by `py-spy dump` if it is on PATH (else none: the OS names are all "python")."""
    try:
        dump = "".join(
            subprocess.run(
                ["py-spy", "dump", "--pid", str(pid), "--nonblocking"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
            for pid in pids
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = re.findall(r'^Thread (\d+) \([^)]*\): "([^"]*)"', dump, flags=re.M)
    return {int(tid): name.rstrip("_-0123456789") for tid, name in found}


async def _until_idle(pid: Pids, *, quiet: float = 0.05, timeout: float = 60.0) -> float:
    """The process's CPU seconds once it has been idle (under `quiet` of a core) for half a second,
    or after `timeout` seconds."""
    deadline = time.perf_counter() + timeout
    before = _cpu_s(pid)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0.5)
        now = _cpu_s(pid)
        if now - before < quiet * 0.5:
            return now
        before = now
    return before


def _runnable_jobs(db: Path) -> int:
    """Jobs queued or running that may run now (not those scheduled for later, e.g. the bookmark
    maintenance that waits ten minutes for a quiet moment), read from the server's SQLite file."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
        row = conn.execute(
            "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running') AND run_after <= ?",
            (time.time(),),
        ).fetchone()
    return int(row[0])


async def _until_drained(pid: Pids, db: Path, *, timeout: float = 300.0) -> tuple[float, float, int]:
    """(the server's CPU seconds, seconds waited, jobs left) once no job the turns queued can run
    and the server is idle: what the turns cost in the background (P2 jobs lag behind the turns
    while they come, and are worked off afterwards)."""
    t0 = time.perf_counter()
    cpu = await _until_idle(pid, timeout=timeout)
    while (left := _runnable_jobs(db)) and time.perf_counter() - t0 < timeout:
        await asyncio.sleep(0.5)
        cpu = await _until_idle(pid, timeout=timeout)
    return cpu, time.perf_counter() - t0, left


async def _embed_stats(http: aiohttp.ClientSession, base: str) -> dict[str, float]:
    """The server's embedding micro-batcher counters (`/metrics`: memsched_embed_*), summed over
    models: model calls, texts, and the dispatcher's CPU seconds."""
    out = {"calls": 0.0, "texts": 0.0, "cpu_seconds": 0.0}
    async with http.get(f"{base}/metrics") as r:
        text = await r.text()
    for line in text.splitlines():
        for key in out:
            if line.startswith(f"memsched_embed_{key}_total{{"):
                out[key] += float(line.rsplit(" ", 1)[1])
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _messages() -> list[str]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    lines = [
        t["content"] for lang in ("en", "zh") for t in data["languages"][lang]["turns"] if t["role"] == "user"
    ]
    questions = [q["question"] for lang in ("en", "zh") for q in data["languages"][lang]["questions"]]
    # Interleave statements and questions, English and Chinese.
    out: list[str] = []
    for i in range(max(len(lines), len(questions))):
        if i < len(lines):
            out.append(lines[i])
        if i < len(questions):
            out.append(questions[i])
    return out


class Driver:
    def __init__(self, base: str, texts: list[str], timeout: float, db: Path) -> None:
        self.base = base
        self.db = db
        self.texts = texts
        self.sent: dict[tuple[str, str], list[str]] = {}
        self.errors: list[str] = []
        # Made inside the running loop (`run`). aiohttp, not httpx: at 50 concurrent requests httpx's
        # connection pool cost ~2 ms of this process's CPU per request, taken from the server's cores.
        # Idle connections are dropped after 2 s, before the server's keep-alive timeout (uvicorn: 5 s)
        # closes them under a request reusing one (a "server disconnected" after an idle wait).
        self.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=timeout),
            connector=aiohttp.TCPConnector(limit=200, keepalive_timeout=2.0),
        )
        self._n = 0
        self.last_trace: str | None = None  # the trace id of the last reply
        # The open loop's turns by latency: (ms, trace id), read back after the server stopped.
        self.open_turns: list[tuple[float, str | None]] = []
        self.pids: dict[str, Pids] = {"driver": (os.getpid(),)}

    def next_text(self, user: str, session: str) -> str:
        self._n += 1
        # A number makes each message unique, so the order check can tell them apart.
        text = f"{self.texts[self._n % len(self.texts)]} #{self._n}"
        self.sent.setdefault((user, session), []).append(text)
        return text

    async def turn(self, user: str, session: str) -> float:
        text = self.next_text(user, session)
        body = {
            "model": "fake",
            "user": user,
            "metadata": {"session_id": session},
            "messages": [
                {"role": "system", "content": "You are a companion."},
                {"role": "user", "content": text},
            ],
        }
        t0 = time.perf_counter()
        try:
            async with self.http.post(f"{self.base}/v1/chat/completions", json=body) as r:
                status, raw = r.status, await r.read()
                self.last_trace = r.headers.get("X-Memsched-Trace-Id")
            ms = (time.perf_counter() - t0) * 1000.0
            if status != 200:
                self.errors.append(f"{status}: {raw[:200]!r}")
            elif not json.loads(raw)["choices"][0]["message"]["content"].startswith("ok: "):
                self.errors.append(f"unexpected reply {raw[:200]!r}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            ms = (time.perf_counter() - t0) * 1000.0
            self.errors.append(f"{type(exc).__name__}: {exc}")
        return ms

    async def closed_loop(self, clients: int, messages: int, tag: str) -> dict[str, Any]:
        latencies: list[float] = []
        embed0 = await _embed_stats(self.http, self.base)
        cpu0 = {name: _cpu_s(pid) for name, pid in self.pids.items()}
        threads0 = _thread_cpu_s(self.pids["server"])

        async def client(c: int) -> None:
            for _ in range(messages):
                latencies.append(await self.turn(f"{tag}-u{c}", "s1"))

        t0 = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(clients)))
        wall = time.perf_counter() - t0
        cpu = {name: _cpu_s(pid) - cpu0[name] for name, pid in self.pids.items()}
        # What the server still does for these turns after the last reply (the replies' embeddings):
        # wait until it is idle, so the per-turn CPU counts the whole turn; then until the jobs the
        # turns queued have run (P2 work lags behind the turns and is worked off afterwards).
        server = self.pids["server"]
        post = await _until_idle(server) - cpu0["server"]
        names = _thread_names(server)
        threads: dict[str, float] = {}
        for tid, seconds in _thread_cpu_s(server).items():
            name = names.get(tid, "other")
            threads[name] = threads.get(name, 0.0) + seconds - threads0.get(tid, 0.0)
        embed = {k: v - embed0[k] for k, v in (await _embed_stats(self.http, self.base)).items()}
        drained, drain_s, left = await _until_drained(server, self.db)
        n = max(1, len(latencies))
        return {
            "clients": clients,
            "turns": len(latencies),
            # CPU per turn of each process: steadier than wall-clock figures on a shared machine.
            "cpu_ms_per_turn": {name: round(1000.0 * c / n, 2) for name, c in cpu.items()},
            "server_cpu_ms_per_turn_with_post_work": round(1000.0 * post / n, 2),
            # ... and with the background jobs the turns queued, once the queue has drained.
            "server_cpu_ms_per_turn_with_jobs": round(1000.0 * (drained - cpu0["server"]) / n, 2),
            # The server's CPU per turn (with the post-reply work) by thread, named if py-spy is on
            # PATH: MainThread is the event loop (HTTP, the upstream client), memsched-turn the turns'
            # worker threads, memsched-embed the MiniLM dispatcher, memsched-retrieve / -post /
            # -worker retrieval, post-reply work and jobs ("other": unnamed; threads that ended are
            # missing).
            "server_threads_cpu_ms_per_turn": {
                k: round(1000.0 * v / n, 2)
                for k, v in sorted(threads.items(), key=lambda kv: -kv[1])
                if v > 0
            },
            # The batched embedding model (MiniLM) over the turns and their post-reply work: model
            # calls and texts per turn, texts per call, and its dispatcher's CPU per turn (thread CPU
            # time, so less moved by other processes than the wall-clock figures).
            "embed": {
                # With --server-processes N the counters are those of the one process that answered
                # /metrics, divided by all turns: texts_per_call and the per-turn figures times N.
                "processes_counted": 1,
                "calls_per_turn": round(embed["calls"] / n, 3),
                "texts_per_turn": round(embed["texts"] / n, 3),
                "texts_per_call": round(embed["texts"] / max(1.0, embed["calls"]), 2),
                "model_cpu_ms_per_turn": round(1000.0 * embed["cpu_seconds"] / n, 2),
            },
            "jobs_drained_in_s": round(drain_s, 1),
            "jobs_left": left,
            "seconds": round(wall, 2),
            "turns_per_s": round(len(latencies) / wall, 1),
            # How many of the machine's cores the server kept busy while the turns came (its CPU
            # seconds over the phase's wall seconds): under 2 on this 2-core machine when something
            # other than the CPU (the GIL, one model thread, waits) bounds the turns, or when other
            # processes take their share of the cores.
            "server_cores_busy": round(cpu["server"] / wall, 2),
            "latency_ms": {q: _pct(latencies, p) for q, p in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))},
        }

    async def open_loop(self, rate: float, seconds: float, sessions: int) -> dict[str, Any]:
        latencies: list[float] = []
        busy: dict[int, asyncio.Lock] = {s: asyncio.Lock() for s in range(sessions)}
        total = int(rate * seconds)
        late = 0

        async def one(i: int) -> None:
            s = i % sessions
            async with busy[s]:  # one message in flight per session, as a person types
                latencies.append(await self.turn(f"open-u{s}", "s1"))
                self.open_turns.append((latencies[-1], self.last_trace))

        tasks = []
        t0 = time.perf_counter()
        for i in range(total):
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.05:
                late += 1
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - t0
        return {
            "offered_per_s": rate,
            "sessions": sessions,
            "turns": len(latencies),
            "achieved_per_s": round(len(latencies) / wall, 1),
            "sent_late": late,
            "latency_ms": {
                q: _pct(latencies, p) for q, p in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
            },
            "mean_ms": round(statistics.fmean(latencies), 1),
        }


def slowest_turns(
    db: Path, turns: list[tuple[float, str | None]], share: float = 0.01
) -> list[dict[str, Any]]:
    """The open loop's slowest turns (`share` of them, at least 3): the latency the driver saw, the
    server's own time in the turn's stages before the upstream call (its trace's `timings_ms`: what
    the rest of the latency is not), and its largest stages. The rest is waiting outside the
    stages (the event loop, a worker thread, the session lock), the upstream call and the reply's
    recording."""
    from memsched.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    out: list[dict[str, Any]] = []
    try:
        for ms, trace_id in sorted(turns, key=lambda x: -x[0])[: max(3, round(share * len(turns)))]:
            trace = (store.trace_get(trace_id) if trace_id else None) or {}
            timings = dict(trace.get("timings_ms") or {})
            total = timings.pop("total", None)
            top = sorted(timings.items(), key=lambda kv: -kv[1])[:4]
            out.append(
                {
                    "ms": round(ms, 1),
                    "stages_ms": total,
                    "llm_ms": (trace.get("llm") or {}).get("ms"),
                    "largest": {k: round(v, 1) for k, v in top},
                }
            )
    finally:
        store.close()
    return out


def check_order(db: Path, sent: dict[tuple[str, str], list[str]]) -> dict[str, Any]:
    """Each session holds exactly its messages in the order sent, each followed by its own reply."""
    from memsched.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    violations: list[str] = []
    try:
        for (user, session), texts in sent.items():
            turns = store.session_turns(user, session)
            users = [t.content for t in turns if t.role == "user"]
            if users != texts:
                violations.append(f"{user}/{session}: user turns out of order or missing")
                continue
            for i, t in enumerate(turns):
                if t.role == "user":
                    nxt = turns[i + 1] if i + 1 < len(turns) else None
                    if nxt is None or nxt.role != "assistant" or nxt.content != f"ok: {t.content[:40]}":
                        violations.append(f"{user}/{session}: turn {t.seq} not followed by its reply")
    finally:
        store.close()
    return {"sessions": len(sent), "violations": len(violations), "examples": violations[:5]}


async def run(
    args: argparse.Namespace, base: str, pids: dict[str, Pids], db: Path
) -> tuple[dict[str, Any], Driver]:
    driver = Driver(base, _messages(), timeout=args.timeout, db=db)
    driver.pids.update(pids)
    out: dict[str, Any] = {}
    await driver.closed_loop(clients=10, messages=2, tag="warm")  # models, JIT, pools
    await _until_idle(pids["server"])  # and what the server loads in the background at start
    if args.clients:
        spy = None
        if args.py_spy:  # a profile of the server over the closed loop (py-spy must be on PATH)
            spy = subprocess.Popen(
                ["py-spy", "record", "--pid", str(pids["server"][0]), "--format", "raw", "--rate", "250"]
                + ["--threads", "--nonblocking", "-o", args.py_spy]
                + (["--gil"] if args.py_spy_gil else []),
                stdout=subprocess.DEVNULL,
            )
            await asyncio.sleep(1.0)
        if args.probe_marker is not None:
            args.probe_marker.touch()  # the in-server probe counts from here (server_probe.py)
        out["closed_loop"] = await driver.closed_loop(args.clients, args.messages, tag="closed")
        if args.probe_marker is not None:
            args.probe_marker.unlink()  # ... to here: the turns, their post-reply work and their jobs
            # The probe writes its counts ~0.2 s later; the server must not be stopped before that.
            await _until_written(args.probe_marker.with_name("probe.json"))
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=30)
    if args.rate > 0 and args.seconds > 0:
        await _until_drained(pids["server"], db)  # the closed loop's post-reply work and jobs drain
        out["open_loop"] = await driver.open_loop(args.rate, args.seconds, args.sessions)
    await driver.http.close()
    return out, driver


async def _until_written(path: Path, timeout: float = 10.0) -> None:
    deadline = time.time() + timeout
    while not path.exists() and time.time() < deadline:
        await asyncio.sleep(0.05)


def _probe_report(path: Path, turns: int) -> dict[str, Any]:
    """The in-server probe's counts over the closed loop, per turn (it writes them when the phase ends)."""
    if not path.exists():
        return {"error": "the probe wrote nothing (did the server start through server_probe?)"}
    return server_probe.per_turn(json.loads(path.read_text(encoding="utf-8")), turns)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--messages", type=int, default=8, help="per client in the closed loop")
    ap.add_argument("--rate", type=float, default=20.0, help="offered turns/s in the open loop (0: skip)")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--sessions", type=int, default=40, help="sessions the open loop spreads over")
    ap.add_argument("--timeout", type=float, default=30.0, help="per request")
    ap.add_argument("--py-spy", default=None, metavar="OUT", help="record the server with py-spy (raw)")
    ap.add_argument("--py-spy-gil", action="store_true", help="only samples holding the GIL")
    ap.add_argument(
        "--probe-functions",
        default="",
        metavar="SPECS",
        help="comma-separated module:Class.method: CPU and calls a turn inside the server (server_probe.py)",
    )
    ap.add_argument("--probe-sql", action="store_true", help="SQL statements a turn inside the server")
    ap.add_argument("--embedders", default=None, help="default: the configured default (minilm,wordllama)")
    ap.add_argument(
        "--server-processes",
        type=int,
        default=1,
        help="experiment: N server processes on one port (SO_REUSEPORT) and one SQLite file",
    )
    args = ap.parse_args()
    probing = bool(args.probe_functions or args.probe_sql)
    if probing and args.server_processes > 1:
        ap.error("--probe-functions/--probe-sql probe one server process")

    with tempfile.TemporaryDirectory() as tmp:
        args.probe_marker = Path(tmp) / "probe.on" if probing else None
        upstream = subprocess.Popen(
            [sys.executable, "-c", UPSTREAM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert upstream.stdout is not None and upstream.stdin is not None
        upstream_url = upstream.stdout.readline().strip()
        port = _free_port()
        # Settings such as MEMSCHED_MINILM_BACKEND pass through; where data and models live does not.
        own = ("HOME", "DB", "HOST", "PORT", "UPSTREAM_", "LLM_", "EMBED_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(tuple("MEMSCHED_" + o for o in own))}
        env.update(
            MEMSCHED_HOME=tmp,
            MEMSCHED_UPSTREAM_BASE_URL=upstream_url,
            MEMSCHED_UPSTREAM_MODEL="fake",
            MEMSCHED_PORT=str(port),
        )
        if args.embedders:
            env["MEMSCHED_EMBEDDERS"] = args.embedders
        cmd = [
            sys.executable,
            "-c",
            "from memsched.cli import main; main()",
            "serve",
            "--log-level",
            "warning",
        ]
        if args.server_processes > 1:
            cmd = [sys.executable, "-c", SHARED_SERVER]
        if args.probe_marker is not None:
            functions = [f.strip() for f in args.probe_functions.split(",") if f.strip()]
            env.update(
                server_probe.env(functions, args.probe_sql, args.probe_marker, Path(tmp) / "probe.json")
            )
            cmd = [sys.executable, "-c", server_probe.launch_code(cmd[3:])]
        servers = [
            subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(args.server_processes)
        ]
        server = servers[0]
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 180
            if args.server_processes > 1:  # every one listening (each answers only its connections)
                for proc in servers:
                    assert proc.stdout is not None
                    if proc.stdout.readline().strip() != "ready":
                        raise SystemExit(
                            f"a server process did not start: {proc.stderr.read() if proc.stderr else ''}"
                        )
            while True:
                try:
                    health = httpx.get(f"{base}/healthz", timeout=2)
                    # Ours, not another process that took the port while ours was loading its models
                    # (a test server of another session answered the warm-up turns once).
                    if health.status_code == 200 and tmp in str(health.json().get("db")):
                        break
                except (httpx.HTTPError, ValueError):
                    pass
                if server.poll() is not None or time.time() > deadline:
                    raise SystemExit(
                        f"memsched serve did not start: {server.stderr.read() if server.stderr else ''}"
                    )
                time.sleep(0.2)
            pids = {"server": tuple(proc.pid for proc in servers), "upstream": (upstream.pid,)}
            result, driver = asyncio.run(run(args, base, pids, Path(tmp) / "memsched.db"))
            result["server_processes"] = len(servers)
            result["server_memory_mb"] = _memory_mb(pids["server"])  # after every phase, all processes
        finally:
            for proc in servers:
                proc.terminate()
            for proc in servers:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
            upstream.stdin.close()
            upstream.wait(timeout=10)
        if args.probe_marker is not None and "closed_loop" in result:
            result["closed_loop"]["probe"] = _probe_report(
                Path(tmp) / "probe.json", result["closed_loop"]["turns"]
            )
        result["order"] = check_order(Path(tmp) / "memsched.db", driver.sent)
        if driver.open_turns and "open_loop" in result:
            result["open_loop"]["slowest"] = slowest_turns(Path(tmp) / "memsched.db", driver.open_turns)
        result["errors"] = {"count": len(driver.errors), "examples": driver.errors[:5]}
    from yardstick import minilm_query_cpu_ms

    out = {
        "benchmark": "proxy_throughput",
        "embedders": args.embedders or "default",
        "minilm_backend": os.environ.get("MEMSCHED_MINILM_BACKEND", "onnx"),
        # CPU of one ONNX MiniLM query embedding, measured here after the server stopped: figures of
        # runs on different days compare after dividing by it (the VM's speed drifts).
        "minilm_query_cpu_ms": minilm_query_cpu_ms(),
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
    }
    out.update(result)
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
