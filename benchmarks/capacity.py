"""Capacity model: this machine's unit costs, measured with the real code, turned into what a workload
(default: 10 million users x 50 turns a day) needs in storage, cores and Postgres shards.

Unit costs (measured in about a minute unless given as arguments):
- bytes per stored turn in SQLite, split by `dbstat` into turn rows + their B-tree indexes, full-text
  index, vectors (per default embedder) and bookmarks (rows, FTS, vectors), on synthetic bilingual
  history from `synth_history.py`. Stored vectors are stand-ins (random unit vectors under the real
  models' ids and widths: the same bytes, without hours of MiniLM on two cores);
- P0 CPU ms per request: `Memory.context` on a warm user, the default embedders embedding the query
  (CPU time of this process, so "per core", whatever else runs on the machine);
- embedding texts per core-second for each default embedder (a batch of synthetic turns);
- bookmark pages per core-second (rule fallback, as `bookmark_throughput.py`).

The model (`plan`) is pure arithmetic on those figures; `tests/test_capacity.py` checks it.

    python benchmarks/capacity.py                         # measure, then the default workload
    python benchmarks/capacity.py --json
    python benchmarks/capacity.py --turn-bytes 900 --vector-bytes 2600 --p0-ms 25 \\
        --embed-per-s 900 --bookmark-pages-per-s 60 --users 1e6          # no measuring
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

DAY_S = 86_400
TB = 1e12


@dataclass(frozen=True, slots=True)
class UnitCosts:
    """What one turn / one request costs on one core and on disk."""

    turn_row_bytes: float  # turn row + its B-tree indexes (+ users/sessions/pages, amortised)
    fts_bytes: float  # full-text index of the turn
    vector_bytes: float  # all default embedders' vectors of one turn, float32, with their row/index
    bookmark_bytes: float  # bookmarks per turn (rows, FTS, vectors), amortised over the page
    p0_cpu_ms: float  # CPU ms of one context assembly (query embedding included)
    embed_per_core_s: float  # turns per core-second embedded by ALL default embedders together
    bookmark_pages_per_core_s: float  # rule-fallback bookmark generation
    vector_dims: tuple[int, ...] = (384, 256)  # widths of the default embedders (MiniLM, WordLlama)
    bookmarks_per_page: float = 1.0  # each bookmark is embedded too (by every embedder)


@dataclass(frozen=True, slots=True)
class Workload:
    users: float = 10_000_000
    turns_per_user_day: float = 50
    peak_factor: float = 3.0  # peak hour rate / daily mean rate
    user_share: float = 0.5  # turns that are user messages: each asks for one P0 context
    years: float = 1.0
    page_size: int = 20  # turns per page (one bookmark job per page)


@dataclass(frozen=True, slots=True)
class Assumptions:
    api_utilisation: float = 0.6  # target CPU use of API cores at peak (headroom for p99)
    worker_utilisation: float = 0.7  # of worker cores over the day
    workers_for_peak: bool = False  # size workers for the peak instead of the daily mean
    shard_storage_tb: float = 2.0  # data per Postgres primary
    shard_peak_turns_per_s: float = 2_000  # turns written per second per primary at peak
    hnsw: bool = True  # pgvector HNSW index on each vector column (an extra copy of the vectors)
    hnsw_m: int = 16  # pgvector's default: 2*m neighbours at layer 0
    precision: str = "float32"  # float32 (today) | half (pgvector halfvec) | int8 (projection)


PRECISION_BYTES = {"float32": 4.0, "half": 2.0, "int8": 1.0}


def vector_bytes_at(unit: UnitCosts, precision: str) -> float:
    """Vector bytes per turn at `precision`: the measured float32 bytes minus what the narrower type
    saves on the payload (row overhead and index entries stay)."""
    saved = sum(unit.vector_dims) * (4.0 - PRECISION_BYTES[precision])
    return max(0.0, unit.vector_bytes - saved)


def hnsw_bytes(unit: UnitCosts, a: Assumptions, precision: str) -> float:
    """pgvector HNSW index per turn (estimate): per vector, a copy of it, 2*m neighbour TIDs of 6
    bytes at layer 0, ~1/m of that again for upper layers, and a 32-byte tuple header."""
    if not a.hnsw:
        return 0.0
    per_neighbours = 2 * a.hnsw_m * 6 * (1 + 1 / a.hnsw_m)
    return sum(d * PRECISION_BYTES[precision] + per_neighbours + 32 for d in unit.vector_dims)


def turns_per_day(w: Workload) -> float:
    return w.users * w.turns_per_user_day


def storage(unit: UnitCosts, w: Workload, a: Assumptions, precision: str | None = None) -> dict[str, float]:
    """Bytes stored after `w.years`, by kind."""
    p = precision or a.precision
    turns = turns_per_day(w) * 365 * w.years
    parts = {
        "turns": unit.turn_row_bytes * turns,
        "fts": unit.fts_bytes * turns,
        "vectors": vector_bytes_at(unit, p) * turns,
        "hnsw": hnsw_bytes(unit, a, p) * turns,
        "bookmarks": unit.bookmark_bytes * turns,
    }
    parts["total"] = sum(parts.values())
    return parts


def cores(rate_per_s: float, cost_per_core_s: float, utilisation: float) -> int:
    """Cores that serve `rate_per_s` when one core does `cost_per_core_s` per second at `utilisation`."""
    if rate_per_s <= 0:
        return 0
    return math.ceil(rate_per_s / cost_per_core_s / utilisation)


def api_replicas(peak_rps: float, p0_ms: float, utilisation: float) -> int:
    """API cores (one-core replicas): ceil(peak rps x ms / 1000 / utilisation)."""
    return cores(peak_rps, 1000.0 / p0_ms, utilisation)


def plan(unit: UnitCosts, w: Workload, a: Assumptions) -> dict[str, Any]:
    mean_turns_s = turns_per_day(w) / DAY_S
    peak_turns_s = mean_turns_s * w.peak_factor
    peak_p0_rps = peak_turns_s * w.user_share
    # Background work is queued: sized for the daily mean (the queue absorbs the peak and drains
    # off-peak) unless `workers_for_peak`.
    bg_turns_s = peak_turns_s if a.workers_for_peak else mean_turns_s
    pages_s = bg_turns_s / w.page_size
    # Each bookmark is embedded by every embedder: it costs one more "turn" of embedding.
    embed_s = bg_turns_s + pages_s * unit.bookmarks_per_page
    embed_cores = cores(embed_s, unit.embed_per_core_s, a.worker_utilisation)
    bookmark_cores = cores(pages_s, unit.bookmark_pages_per_core_s, a.worker_utilisation)
    store = {p: storage(unit, w, a, p) for p in PRECISION_BYTES}
    chosen = store[a.precision]
    shards_storage = math.ceil(chosen["total"] / (a.shard_storage_tb * TB))
    shards_writes = math.ceil(peak_turns_s / a.shard_peak_turns_per_s)
    return {
        "turns_per_day": turns_per_day(w),
        "mean_turns_per_s": mean_turns_s,
        "peak_turns_per_s": peak_turns_s,
        "peak_p0_rps": peak_p0_rps,
        "embed_turns_per_s_needed": embed_s,
        "bookmark_pages_per_s_needed": pages_s,
        "storage_bytes": store,
        "api_cores": api_replicas(peak_p0_rps, unit.p0_cpu_ms, a.api_utilisation),
        "embed_worker_cores": embed_cores,
        "bookmark_worker_cores": bookmark_cores,
        "worker_cores": embed_cores + bookmark_cores,
        "shards_for_storage": shards_storage,
        "shards_for_writes": shards_writes,
        "shards": max(shards_storage, shards_writes, 1),
        "first_bottleneck": "storage" if shards_storage >= shards_writes else "writes",
    }


# -- measuring ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Measured:
    units: UnitCosts
    details: dict[str, Any] = field(default_factory=dict)


def _classify(name: str) -> str:
    if name.startswith("bookmark"):
        return "bookmarks"
    if name.startswith("embeddings") or name == "sqlite_autoindex_embeddings_1":
        return "vectors"
    if "fts" in name:
        return "fts"
    if name.startswith(("turns", "sqlite_autoindex_turns", "pages", "sessions", "users")):
        return "turns"
    if name.startswith(("sqlite_autoindex_pages", "sqlite_autoindex_sessions", "sqlite_autoindex_users")):
        return "turns"
    return "other"


def measure(users: int, per_user: int, queries: int, embed_texts: int) -> Measured:
    sys.path.insert(0, str(Path(__file__).parent))
    from scale import QUESTIONS, StandIn
    from synth_history import HistorySpec, history

    from memsched import bookmarks
    from memsched.bookmarks import generate_bookmarks
    from memsched.config import Config
    from memsched.embed import base as embed_base
    from memsched.keywords import extract_keywords
    from memsched.memory import Memory

    details: dict[str, Any] = {"users": users, "turns_per_user": per_user}
    with tempfile.TemporaryDirectory() as tmp:
        config = Config.load(home=Path(tmp))
        real = {name: embed_base.create(name, config) for name in config.embedder_names}
        stand = {name: StandIn(e.model_id, e.dim) for name, e in real.items()}
        loader = Memory(config, embedders=stand)  # type: ignore[arg-type]
        names = [f"cap{u:03d}" for u in range(users)]
        for u in names:
            loader.add_many(list(history(HistorySpec(u, per_user))), index=False)
            loader.index(u)
        n_turns = users * per_user

        # bookmarks: rule fallback, CPU time of this process; stand-in vectors for their bytes
        extract_keywords(["预热 jieba 分词 warm up"])
        bookmarks._stats_cache.clear()
        t0 = time.process_time()
        pages = n_bookmarks = 0
        for u in names:
            run = generate_bookmarks(loader, u, embed=True)
            pages += run.trace["pages"]
            n_bookmarks += loader.store.bookmark_count(u)
        bm_s = time.process_time() - t0
        loader.close()

        db_path = config.db or Path(tmp) / "memsched.db"
        db = sqlite3.connect(db_path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        by_kind: dict[str, int] = {}
        by_name: dict[str, int] = {}
        for name, size in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            kind = _classify(name)
            by_kind[kind] = by_kind.get(kind, 0) + int(size)
            by_name[name] = int(size)
        vec_rows = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        db.close()
        details.update(
            bytes_by_kind=by_kind,
            bytes_by_table=dict(sorted(by_name.items(), key=lambda kv: -kv[1])[:12]),
            file_bytes=db_path.stat().st_size,
            vector_rows=vec_rows,
            pages=pages,
            bookmarks=n_bookmarks,
        )
        # Synthetic text repeats (templates): a user's identical texts share one vector (keyed by
        # content hash). Real chat repeats far less, so count one vector per turn per embedder.
        vector_bytes = by_kind.get("vectors", 0) / max(vec_rows, 1) * len(real)

        # P0: the default Memory (real models behind their micro-batchers), on a warm user
        memory = Memory(config)
        user = names[0]
        for q in QUESTIONS:
            memory.context(user, q)
        wall: list[float] = []
        c0 = time.process_time()
        for i in range(queries):
            t = time.perf_counter()
            memory.context(user, QUESTIONS[i % len(QUESTIONS)])
            wall.append((time.perf_counter() - t) * 1000)
        p0_cpu_ms = (time.process_time() - c0) * 1000 / queries
        memory.close()
        wall.sort()
        details["p0_wall_ms"] = {
            "p50": round(wall[len(wall) // 2], 1),
            "p99": round(wall[-1 - len(wall) // 100], 1),
        }

        # embedding throughput per core, each default embedder on the same batch
        texts = [t.content for t in history(HistorySpec("embed-sample", embed_texts))]
        per_model: dict[str, float] = {}
        for name, embedder in real.items():
            embedder.embed(texts[:64])  # load and warm
            c0 = time.process_time()
            embedder.embed(texts)
            per_model[name] = len(texts) / (time.process_time() - c0)
        details["embed_texts_per_core_s"] = {k: round(v, 1) for k, v in per_model.items()}
        embed_all = 1.0 / sum(1.0 / v for v in per_model.values())

    units = UnitCosts(
        turn_row_bytes=by_kind.get("turns", 0) / n_turns,
        fts_bytes=by_kind.get("fts", 0) / n_turns,
        vector_bytes=vector_bytes,
        bookmark_bytes=by_kind.get("bookmarks", 0) / n_turns,
        p0_cpu_ms=p0_cpu_ms,
        embed_per_core_s=embed_all,
        bookmark_pages_per_core_s=pages / bm_s,
        vector_dims=tuple(e.dim for e in real.values()),
        bookmarks_per_page=n_bookmarks / max(pages, 1),
    )
    return Measured(units, details)


# -- output ---------------------------------------------------------------------------------------------


def _tb(n: float) -> str:
    return f"{n / TB:,.1f} TB"


def render(unit: UnitCosts, w: Workload, a: Assumptions, p: dict[str, Any]) -> str:
    rows = [
        ("unit costs", ""),
        ("  turn row + indexes", f"{unit.turn_row_bytes:,.0f} B/turn"),
        ("  full-text index", f"{unit.fts_bytes:,.0f} B/turn"),
        (
            f"  vectors float32 {'+'.join(map(str, unit.vector_dims))} dims",
            f"{unit.vector_bytes:,.0f} B/turn",
        ),
        ("  bookmarks", f"{unit.bookmark_bytes:,.0f} B/turn"),
        ("  P0 context assembly", f"{unit.p0_cpu_ms:,.1f} CPU ms/request"),
        ("  embedding (all default models)", f"{unit.embed_per_core_s:,.0f} turns/core-s"),
        ("  bookmarks (rule fallback)", f"{unit.bookmark_pages_per_core_s:,.0f} pages/core-s"),
        ("workload", ""),
        ("  users x turns/day", f"{w.users:,.0f} x {w.turns_per_user_day:g} = {p['turns_per_day']:,.0f}/day"),
        (
            "  mean / peak turns/s",
            f"{p['mean_turns_per_s']:,.0f} / {p['peak_turns_per_s']:,.0f} (x{w.peak_factor:g})",
        ),
        ("  P0 requests/s at peak", f"{p['peak_p0_rps']:,.0f} ({w.user_share:.0%} of turns)"),
        ("  embedding needed", f"{p['embed_turns_per_s_needed']:,.0f} turns/s (+ bookmarks)"),
        ("  bookmark pages needed", f"{p['bookmark_pages_per_s_needed']:,.0f} pages/s"),
        (f"storage after {w.years:g} year(s)", "float32 | half | int8"),
    ]
    store = p["storage_bytes"]
    for kind in ("turns", "fts", "vectors", "hnsw", "bookmarks", "total"):
        rows.append((f"  {kind}", " | ".join(_tb(store[q][kind]) for q in PRECISION_BYTES)))
    rows += [
        ("what it takes", ""),
        ("  API cores (replicas)", f"{p['api_cores']:,} at {a.api_utilisation:.0%} CPU"),
        ("  worker cores: embedding", f"{p['embed_worker_cores']:,}"),
        ("  worker cores: bookmarks", f"{p['bookmark_worker_cores']:,}"),
        (
            f"  Postgres shards ({a.precision})",
            f"{p['shards']:,} (storage {p['shards_for_storage']:,} at {a.shard_storage_tb:g} TB each; "
            f"writes {p['shards_for_writes']:,} at {a.shard_peak_turns_per_s:,.0f} turns/s each)",
        ),
    ]
    width = max(len(k) for k, _ in rows) + 2
    return "\n".join(f"{k:<{width}}{v}" for k, v in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    m = ap.add_argument_group("measuring")
    m.add_argument("--measure-users", type=int, default=1)
    m.add_argument(
        "--measure-turns",
        type=int,
        default=18_250,
        help="synthetic turns per measured user (a year at 50 a day)",
    )
    m.add_argument("--queries", type=int, default=100, help="timed P0 context assemblies")
    m.add_argument("--embed-texts", type=int, default=1000)
    u = ap.add_argument_group("unit costs (skip measuring the ones given)")
    u.add_argument("--turn-bytes", type=float, help="turn row + indexes + FTS, B/turn")
    u.add_argument("--vector-bytes", type=float, help="float32 vectors of all default embedders, B/turn")
    u.add_argument("--bookmark-bytes", type=float, default=None, help="B/turn")
    u.add_argument("--p0-ms", type=float, help="CPU ms per context assembly")
    u.add_argument("--embed-per-s", type=float, help="turns per core-second, all default embedders")
    u.add_argument("--bookmark-pages-per-s", type=float, help="pages per core-second")
    d = Workload()
    wl = ap.add_argument_group("workload")
    wl.add_argument("--users", type=float, default=d.users)
    wl.add_argument("--turns-per-day", type=float, default=d.turns_per_user_day, help="per user")
    wl.add_argument("--peak-factor", type=float, default=d.peak_factor)
    wl.add_argument("--user-share", type=float, default=d.user_share)
    wl.add_argument("--years", type=float, default=d.years)
    da = Assumptions()
    asm = ap.add_argument_group("assumptions")
    asm.add_argument("--api-utilisation", type=float, default=da.api_utilisation)
    asm.add_argument("--worker-utilisation", type=float, default=da.worker_utilisation)
    asm.add_argument("--workers-for-peak", action="store_true")
    asm.add_argument("--shard-tb", type=float, default=da.shard_storage_tb)
    asm.add_argument("--shard-turns-per-s", type=float, default=da.shard_peak_turns_per_s)
    asm.add_argument("--no-hnsw", action="store_true")
    asm.add_argument("--precision", choices=list(PRECISION_BYTES), default=da.precision)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    given = {
        "turn": args.turn_bytes,
        "vector": args.vector_bytes,
        "p0": args.p0_ms,
        "embed": args.embed_per_s,
        "bookmarks": args.bookmark_pages_per_s,
    }
    details: dict[str, Any] = {}
    if all(v is not None for v in given.values()):
        unit = UnitCosts(
            turn_row_bytes=args.turn_bytes,
            fts_bytes=0.0,  # --turn-bytes includes the full-text index
            vector_bytes=args.vector_bytes,
            bookmark_bytes=args.bookmark_bytes or 0.0,
            p0_cpu_ms=args.p0_ms,
            embed_per_core_s=args.embed_per_s,
            bookmark_pages_per_core_s=args.bookmark_pages_per_s,
        )
    else:
        t0 = time.perf_counter()
        measured = measure(args.measure_users, args.measure_turns, args.queries, args.embed_texts)
        unit, details = measured.units, measured.details
        details["measure_seconds"] = round(time.perf_counter() - t0, 1)
        if args.turn_bytes is not None:
            unit = replace(unit, turn_row_bytes=args.turn_bytes, fts_bytes=0.0)
        if args.vector_bytes is not None:
            unit = replace(unit, vector_bytes=args.vector_bytes)
        if args.p0_ms is not None:
            unit = replace(unit, p0_cpu_ms=args.p0_ms)
        if args.embed_per_s is not None:
            unit = replace(unit, embed_per_core_s=args.embed_per_s)
        if args.bookmark_pages_per_s is not None:
            unit = replace(unit, bookmark_pages_per_core_s=args.bookmark_pages_per_s)
    if args.bookmark_bytes is not None:
        unit = replace(unit, bookmark_bytes=args.bookmark_bytes)
    w = Workload(args.users, args.turns_per_day, args.peak_factor, args.user_share, args.years)
    a = Assumptions(
        api_utilisation=args.api_utilisation,
        worker_utilisation=args.worker_utilisation,
        workers_for_peak=args.workers_for_peak,
        shard_storage_tb=args.shard_tb,
        shard_peak_turns_per_s=args.shard_turns_per_s,
        hnsw=not args.no_hnsw,
        precision=args.precision,
    )
    p = plan(unit, w, a)
    if args.json:
        out = {"benchmark": "capacity", "unit_costs": asdict(unit), "measured": details}
        out.update(workload=asdict(w), assumptions=asdict(a), plan=p)
        print(json.dumps(out, indent=2))
    else:
        if details:
            print(json.dumps(details), file=sys.stderr)
        print(render(unit, w, a, p))


if __name__ == "__main__":
    main()
