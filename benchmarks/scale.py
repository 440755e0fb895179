"""Costs as history grows: P0 assembly latency, ingest throughput and resident memory at 10k, 100k
and 1M stored turns, on the embedded SQLite store or on PostgreSQL (`--database-url`).

Two shapes, both from `synth_history.py` (deterministic bilingual chat):
- many users: users of `--per-user` turns each are added until the store holds each of `--totals`
  turns; at each checkpoint, `--queries` contexts are assembled for random users (most of them
  cold: their first query loads what they need). The target is that p99 grows < 2x from the first
  checkpoint to the last at the same per-user history.
- one user: a single user grown to each of `--one-user` turns (target: p99 < 2x from 10k to 100k).

Stored vectors are stand-ins (random unit vectors under the real models' ids and widths) because
embedding a million turns with MiniLM on two cores takes hours and is the P2 worker's cost, not
P0's; queries use the real models. Ingest throughput is reported for the store path (segmenting,
FTS, rows) and, separately, for MiniLM embedding on a sample. RSS is this process's, which holds
what a `memsched serve` process holds (models, stores, indexes, caches).

    python benchmarks/scale.py                                   # 10k, 100k, 1M; one user 10k, 100k
    python benchmarks/scale.py --totals 10000,100000 --one-user 10000 --queries 100
    python benchmarks/scale.py --database-url postgresql://...   # the same on PostgreSQL
    python benchmarks/scale.py --postgres --home /tmp/scale-pg       # on a private pgserver

On PostgreSQL the histories are bulk-loaded: written to a SQLite file first (the fast store path
above) and copied in with `memsched migrate`'s binary COPY (`store.transfer`), so loading a million
turns does not take the service's per-turn ingest path (43 turns/s under load, BENCHMARKS.md). The
copy's rows per second are reported as `bulk`.

On SQLite, the loader's `Memory.index` also runs the worker's graph step (`Retriever.update_graphs`):
users past the exact-search threshold (20,000 vectors) get their on-disk HNSW graph, as a worker
would build it, before the measured process opens the store.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from synth_history import HistorySpec, history

from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.memory import Memory

QUESTIONS = [
    "What did I say about my sister moving?",
    "Where did we have dumplings?",
    "How is the marathon training going?",
    "What was the weather like in Lisbon?",
    "你还记得我朋友搬去哪里了吗？",
    "我们上次聊天文聊了什么？",
    "我想养的猫叫什么名字？",
    "火锅那家店在哪里？",
]


class StandIn:
    """Random unit vectors under a real embedder's model id and width (for bulk loading only)."""

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id, self.dim, self.batch_size = model_id, dim, 4096
        self._rng = np.random.default_rng(0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        m = self._rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class ServerCPU:
    """CPU seconds used so far by a local PostgreSQL (the postmaster in `datadir` and its backends),
    read from /proc, so a context's cost on PostgreSQL counts the database's work too."""

    def __init__(self, datadir: Path | None) -> None:
        self.pid = int((datadir / "postmaster.pid").read_text().split()[0]) if datadir else 0
        self.tick = os.sysconf("SC_CLK_TCK")

    def __call__(self) -> float:
        if not self.pid:
            return 0.0
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # after the command: state, ppid, ..., utime (14th field of the line), stime (15th)
            if int(fields[1]) == self.pid or stat.parent.name == str(self.pid):
                total += int(fields[11]) + int(fields[12])
        return total / self.tick

    def pss_mb(self) -> float:
        """Proportional set size of the local PostgreSQL (postmaster and backends; shared buffers
        counted once across them), in MB."""
        total = 0
        for status in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = status.read_text().rsplit(")", 1)[1].split()
                if not (int(fields[1]) == self.pid or status.parent.name == str(self.pid)):
                    continue
                for line in (status.parent / "smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
            except OSError:
                continue
        return total / 1024


SERVER_CPU = ServerCPU(None)


def warm_up(memory: Memory) -> None:
    """What `memsched serve` loads at start (`Service.warm_up`: dateparser's tables, the embedders,
    jieba's dictionary and tagger, the gloss table), done here before anything is measured so that
    the first Chinese question does not carry a once-per-process cost (~3 s) into the figures."""
    from memsched import keywords
    from memsched.text import gloss, timeexpr

    timeexpr.warm_up()
    memory.retriever.embed_query("warm up", only_weighted=False)
    memory.retriever.embed_query("预热", only_weighted=False)
    keywords.warm_up()
    if "gloss" in memory.embedders:
        gloss.warm_up()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))], 2)


def load(loader: Memory, users: Sequence[str], per_user: int) -> dict[str, Any]:
    """Add `per_user` synthetic turns for each user (store path), then stand-in vectors."""
    t0 = time.perf_counter()
    n = 0
    for u in users:
        turns = list(history(HistorySpec(u, per_user)))
        for i in range(0, len(turns), 5000):
            loader.add_many(turns[i : i + 5000], index=False)
        n += len(turns)
    store_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for u in users:
        loader.index(u)
    vec_s = time.perf_counter() - t0
    return {"turns": n, "store_turns_per_s": round(n / store_s), "vector_rows_per_s": round(n / vec_s)}


def measure(memory: Memory, users: Sequence[str], queries: int, budget: int, seed: int) -> dict[str, Any]:
    """Contexts for random users (the first pass: mostly a user's first query since start), then
    the same users again (the second pass: a returning user, whose vectors are cached)."""
    rng = random.Random(seed)
    picks = [rng.choice(users) for _ in range(queries)]
    out: dict[str, Any] = {"queries": queries, "users": len(users)}
    for name in ("first", "again"):
        ms: list[float] = []
        cpu: list[float] = []
        db_cpu: list[float] = []
        for i, user in enumerate(picks):
            d0 = SERVER_CPU()
            t0, c0 = time.perf_counter(), time.process_time()
            memory.context(user, QUESTIONS[i % len(QUESTIONS)], budget=budget)
            ms.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            db_cpu.append((SERVER_CPU() - d0) * 1000)
        out[name] = {
            "p50_ms": pct(ms, 0.5),
            "p99_ms": pct(ms, 0.99),
            "mean_ms": round(statistics.fmean(ms), 2),
            # CPU time of this process (every thread) per context: what the request costs, less
            # sensitive than wall time to other work on a shared machine. A database server's
            # CPU (PostgreSQL) is not in it.
            "cpu_p50_ms": pct(cpu, 0.5),
            "cpu_p99_ms": pct(cpu, 0.99),
            # the three dearest contexts by CPU: [ms, query number, question number]
            "cpu_worst": [
                [round(cpu[i], 1), i, i % len(QUESTIONS)]
                for i in sorted(range(len(cpu)), key=cpu.__getitem__)[-3:]
            ],
        }
        if SERVER_CPU.pid:
            # memsched's CPU plus the local PostgreSQL's (its backends' CPU, clock-tick resolution)
            both = [a + b for a, b in zip(cpu, db_cpu, strict=True)]
            out[name].update(with_db_cpu_p50_ms=pct(both, 0.5), with_db_cpu_p99_ms=pct(both, 0.99))
    gc.collect()
    rss, peak = rss_mb()
    out.update(rss_mb=round(rss), peak_rss_mb=round(peak), load_avg=round(os.getloadavg()[0], 2))
    if SERVER_CPU.pid:
        out["postgres_pss_mb"] = round(SERVER_CPU.pss_mb())
    return out


def growth(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Last checkpoint's p99 over the first's, wall and CPU, for first and returning queries."""
    return {
        f"{k}{'_cpu' if m.startswith('cpu') else ''}": round(rows[-1][k][m] / max(rows[0][k][m], 1e-9), 2)
        for k in ("first", "again")
        for m in ("p99_ms", "cpu_p99_ms")
    }


def embed_throughput(memory: Memory, n: int = 2000) -> dict[str, float]:
    texts = [t.content for t in history(HistorySpec("embed-sample", n))]
    out = {}
    for name, embedder in memory.embedders.items():
        embedder.embed(texts[:64])  # load and warm
        t0 = time.perf_counter()
        embedder.embed(texts)
        out[name] = round(n / (time.perf_counter() - t0))
    return out


def open_pair(home: Path, database_url: str | None, measured: bool = True) -> tuple[Memory, Memory | None]:
    """(loader, measured): the loader writes synthetic turns with stand-in vectors; on PostgreSQL it
    writes them to a SQLite file under `home` that `bulk_copy` copies into the database."""
    overrides: dict[str, Any] = {"home": home}
    source = Config.load(**overrides)
    if database_url:
        overrides["database_url"] = database_url
    config = Config.load(**overrides)
    real = {name: embed_base.create(name, config) for name in config.embedder_names}
    stand = {name: StandIn(e.model_id, e.dim) for name, e in real.items()}
    loader = Memory(source, embedders=stand)
    if database_url:
        loader.retriever.ann_threshold = 1 << 62  # graphs are SQLite's; PostgreSQL has HNSW
    return loader, Memory(config, embedders=real) if measured else None


def open_measured(home: Path, database_url: str | None) -> Memory:
    """A measured Memory (real embedders) on `database_url`."""
    overrides: dict[str, Any] = {"home": home}
    if database_url:
        overrides["database_url"] = database_url
    config = Config.load(**overrides)
    return Memory(config, embedders={name: embed_base.create(name, config) for name in config.embedder_names})


def bulk_copy(loader: Memory, database_url: str | None) -> dict[str, float]:
    """Copy what the loader wrote into PostgreSQL (binary COPY; rows already there are compared and
    skipped, so each checkpoint copies what is new). Nothing on SQLite."""
    if not database_url:
        return {}
    from memsched.store.transfer import migrate_sqlite_to_postgres

    report = migrate_sqlite_to_postgres(loader.config.db_path, database_url, batch_size=5000)
    copied = sum(t.copied for t in report.tables.values())
    return {"rows": copied, "seconds": round(report.seconds, 1), "rows_per_s": round(copied / report.seconds)}


def load_checkpoints(home: Path, totals: Sequence[int], per_user: int) -> None:
    """Load the many-users store checkpoint by checkpoint (resuming after the users it holds) and
    keep a copy of it at each (`HOME/many-<total>/memsched.db`, SQLite's online backup), printing the
    ingest figures. A later `--from-checkpoints` run measures the copies."""

    loader, _ = open_pair(home / "many", None, measured=False)
    have = len(loader.store.users())
    for total in totals:
        done = home / f"many-{total}" / "memsched.db"
        want = total // per_user
        if done.exists():
            continue
        done.parent.mkdir(parents=True, exist_ok=True)
        new = [f"u{i:06d}" for i in range(have, want)]
        ingest = load(loader, new, per_user) if new else {}
        have = max(have, want)
        t0 = time.perf_counter()
        keep_copy(loader.config.db_path, done)
        row = {"total_turns": total, "ingest": ingest, "backup_s": round(time.perf_counter() - t0, 1)}
        row.update(load_avg=round(os.getloadavg()[0], 2), rss_mb=round(rss_mb()[0]))
        print(json.dumps(row), file=sys.stderr, flush=True)
    loader.close()


def keep_copy(db: Path, done: Path) -> None:
    """A consistent copy of the SQLite store at `db` (online backup), renamed to `done` only once
    complete, so a checkpoint that exists is whole."""
    import sqlite3

    part = done.with_suffix(".part")
    dst = sqlite3.connect(part)
    src = sqlite3.connect(db)
    src.backup(dst)
    src.close()
    dst.close()
    part.rename(done)


def grow_solo(loader: Memory, have: int, n: int) -> tuple[list[Any], float, float]:
    """Grow the one user "solo" from `have` to `n` turns: the new turns, the seconds storing them
    took and the seconds indexing them (stand-in vectors, and on SQLite the worker's graph step)."""
    turns = list(history(HistorySpec("solo", n)))[have:]
    t0 = time.perf_counter()
    for i in range(0, len(turns), 5000):
        loader.add_many(turns[i : i + 5000], index=False)
    store_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    loader.index("solo")
    return turns, store_s, time.perf_counter() - t0


def load_one_checkpoints(home: Path, singles: Sequence[int]) -> None:
    """The one user grown to each of `singles` turns (stand-in vectors, and the worker's graph step),
    with a copy of the store and its graphs kept at each (`HOME/one-<n>/`) for `--from-checkpoints`."""
    import shutil

    loader, _ = open_pair(home / "one", None, measured=False)
    have = loader.store.turn_count("solo") if "solo" in loader.store.users() else 0
    for n in singles:
        done = home / f"one-{n}" / "memsched.db"
        if done.exists():
            continue
        if n < have:
            raise SystemExit(f"{home / 'one'} already holds {have} turns: cannot keep a copy at {n}")
        turns, store_s, index_s = grow_solo(loader, have, n)
        have = n
        done.parent.mkdir(parents=True, exist_ok=True)
        graphs = Path(f"{loader.config.db_path}.graphs")
        if graphs.exists():
            shutil.copytree(graphs, Path(f"{done}.graphs"), dirs_exist_ok=True)
        keep_copy(loader.config.db_path, done)
        row = {
            "user_turns": n,
            "store_turns_per_s": round(len(turns) / max(store_s, 1e-9)),
            "index_and_graph_s": round(index_s, 1),
            "load_avg": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(row), file=sys.stderr, flush=True)
    loader.close()


def copy_checkpoint(db: Path, database_url: str, vector_indexes: bool) -> dict[str, float]:
    """Bulk-copy a kept checkpoint (`load_checkpoints`) into an empty PostgreSQL database;
    without `vector_indexes` the HNSW indexes are left unbuilt (`--no-hnsw`)."""
    from memsched.store.transfer import migrate_sqlite_to_postgres

    report = migrate_sqlite_to_postgres(db, database_url, batch_size=5000, vector_indexes=vector_indexes)
    copied = sum(t.copied for t in report.tables.values())
    return {"rows": copied, "seconds": round(report.seconds, 1), "rows_per_s": round(copied / report.seconds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--totals", default="10000,100000,1000000")
    ap.add_argument("--per-user", type=int, default=1000)
    ap.add_argument("--one-user", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--database-url", default=None, help="postgresql://… (default: SQLite in a temp dir)")
    ap.add_argument(
        "--postgres",
        action="store_true",
        help="start a private PostgreSQL with pgvector (the pgserver wheel) under --home and use it",
    )
    ap.add_argument("--home", default=None, help="keep the data here instead of a temp dir")
    ap.add_argument(
        "--load-only",
        action="store_true",
        help="many users: load each checkpoint and keep a copy of the SQLite store at it"
        " (HOME/many-<total>/memsched.db), measure nothing (with --home; measure later with --from-checkpoints)",
    )
    ap.add_argument(
        "--from-checkpoints",
        action="store_true",
        help="many users: measure the copies a --load-only run kept under --home instead of loading"
        " (on PostgreSQL each is bulk-copied into a fresh database)",
    )
    ap.add_argument(
        "--no-hnsw",
        action="store_true",
        help="--from-checkpoints on PostgreSQL: copy without building the HNSW indexes (no user of"
        " fewer than postgres_vectors.HNSW_MIN_VECTORS vectors reads them: each is searched exactly)",
    )
    ap.add_argument(
        "--checkpoints", default=None, help="where --load-only keeps its copies (default: --home)"
    )
    args = ap.parse_args()
    if (args.load_only or args.from_checkpoints) and not args.home:
        ap.error("--load-only and --from-checkpoints need --home")
    totals = [int(x) for x in args.totals.split(",") if x]
    singles = [int(x) for x in args.one_user.split(",") if x]
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        home = Path(args.home or tmp)
        server = None
        if args.postgres and not args.database_url:
            from memsched.testing.postgres import PostgresServer

            home.mkdir(parents=True, exist_ok=True)
            server = stack.enter_context(PostgresServer(datadir=home / "pgdata"))
            SERVER_CPU.pid = ServerCPU(home / "pgdata").pid
            args.database_url = server.database()
            one_url = server.database()  # the one user gets a database of their own, as on SQLite
        else:
            one_url = args.database_url
        result: dict[str, Any] = {
            "benchmark": "scale",
            "store": "postgres" if args.database_url else "sqlite",
        }
        kept = Path(args.checkpoints) if args.checkpoints else home
        if args.load_only:
            if totals:
                load_checkpoints(kept, totals, args.per_user)
            if singles:
                load_one_checkpoints(kept, singles)
            return
        loader: Memory | None
        if args.from_checkpoints:
            first = f"many-{totals[0]}" if totals else f"one-{singles[0]}"
            loader, memory = None, open_measured(kept / first, None)
        else:
            loader, memory = open_pair(home / "many", args.database_url)
        assert memory is not None
        result["embed_texts_per_s"] = embed_throughput(memory)
        users: list[str] = []
        rows = []
        for total in totals:
            new = [f"u{i:06d}" for i in range(len(users), total // args.per_user)]
            if args.from_checkpoints:
                ingest = {"turns": total - len(users) * args.per_user, "checkpoint": True}
                memory.close()
                if server is not None:
                    url = server.database()  # a fresh database per checkpoint, copied in whole
                    ingest["bulk"] = copy_checkpoint(
                        kept / f"many-{total}" / "memsched.db", url, vector_indexes=not args.no_hnsw
                    )
                    memory = open_measured(home / "many", url)
                else:
                    memory = open_measured(kept / f"many-{total}", None)
            else:
                assert loader is not None
                ingest = load(loader, new, args.per_user)
                ingest["bulk"] = bulk_copy(loader, args.database_url)
            users += new
            # warm the process as the server does at start and the models on one user, then measure
            # on random users (mostly cold)
            warm_up(memory)
            memory.context(users[0], QUESTIONS[0], budget=args.budget)
            row = {"total_turns": total, "users": len(users), "ingest": ingest}
            row.update(measure(memory, users, args.queries, args.budget, seed=total))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        result["many_users"] = rows
        if rows:
            result["many_users_p99_growth"] = growth(rows)
        if loader is not None:
            loader.close()
        memory.close()

        if singles and args.from_checkpoints:
            rows = []
            for n in singles:
                bulk = {}
                if server is not None:
                    one_url = server.database()
                    bulk = copy_checkpoint(kept / f"one-{n}" / "memsched.db", one_url, vector_indexes=True)
                    memory = open_measured(home / "one", one_url)
                else:
                    memory = open_measured(kept / f"one-{n}", None)  # its graphs beside it
                warm_up(memory)
                memory.context("solo", QUESTIONS[0], budget=args.budget)
                row = {"user_turns": n, "checkpoint": True, "bulk": bulk}
                row.update(measure(memory, ["solo"], args.queries, args.budget, seed=n))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
                memory.close()
            result["one_user"] = rows
            if rows:
                result["one_user_p99_growth"] = growth(rows)
        elif singles:
            loader, measured = open_pair(home / "one", one_url)
            assert measured is not None
            memory = measured
            rows = []
            have = 0
            for n in singles:
                turns, store_s, index_s = grow_solo(loader, have, n)
                if server is not None and have:
                    # A fresh database per checkpoint: the grown history continues the last session,
                    # whose row the copy would find changed (it copies, never updates).
                    memory.close()
                    one_url = server.database()
                    memory = open_measured(home / "one", one_url)
                bulk = bulk_copy(loader, one_url)
                have = n
                warm_up(memory)
                memory.context("solo", QUESTIONS[0], budget=args.budget)
                row = {
                    "user_turns": n,
                    "store_turns_per_s": round(len(turns) / store_s),
                    "index_and_graph_s": round(index_s, 1),
                    "bulk": bulk,
                }
                row.update(measure(memory, ["solo"], args.queries, args.budget, seed=n))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
            result["one_user"] = rows
            if rows:
                result["one_user_p99_growth"] = growth(rows)
            loader.close()
            memory.close()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
