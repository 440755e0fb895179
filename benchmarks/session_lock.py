"""What a turn's session lock costs, on SQLite (lease rows) and PostgreSQL (advisory locks).

Two figures per store: an uncontended hold (take, then release, of a session nobody else wants: what
every turn pays on its P0 path), and contention (T threads taking one session in a loop: holds per
second, how often the lock passes to another thread, the longest run of one thread, and how long the
lock sits free between one thread's release and another's grant). PostgreSQL runs on a private `pgserver`
server (or `--database-url`), so its figures are loopback round trips, not a network's.

    python benchmarks/session_lock.py --holds 500 --threads 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from memsched.jobs.queue import SessionLock
from memsched.store import Store, open_store


def _ms(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "p50_ms": round(statistics.median(values) * 1000, 3),
        "p99_ms": round(values[min(len(values) - 1, int(len(values) * 0.99))] * 1000, 3),
    }


def uncontended(store: Store, holds: int) -> dict[str, float]:
    lock = SessionLock(store)
    took: list[float] = []
    for i in range(holds):
        t0 = time.perf_counter()
        lease = lock.take("bench", f"s{i % 50}", timeout=10)
        lease.release()
        took.append(time.perf_counter() - t0)
    return _ms(took)


def contended(store: Store, holds: int, threads: int) -> dict[str, Any]:
    """`threads` threads take one session in a loop. A hand-off is a grant to another thread than
    the last holder; its latency runs from that holder's release to the grant. With FIFO waiters
    every grant is a hand-off; with polling the thread that just released often takes it again."""
    lock = SessionLock(store)
    last: list[tuple[int, float]] = []  # (holder, when it released)
    gaps: list[float] = []
    grants: list[int] = []
    mutex = threading.Lock()

    def run(me: int) -> None:
        while True:
            lease = lock.take("bench", "shared", timeout=60)
            got = time.perf_counter()
            with mutex:
                if len(grants) >= holds:  # every thread stops at once: no lone thread at the end
                    lease.release()
                    return
                grants.append(me)
                if last and last[-1][0] != me:
                    gaps.append(got - last[-1][1])
                last.append((me, time.perf_counter()))
            lease.release()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    runs, longest, current = 0, 0, 0
    for prev, cur in zip([None, *grants], grants, strict=False):
        current = current + 1 if prev == cur else 1
        longest = max(longest, current)
        runs += prev != cur
    return {
        "holds_per_s": round(len(grants) / elapsed, 1),
        "handoff_share": round((runs - 1) / max(1, len(grants) - 1), 3),
        "longest_run_by_one_thread": longest,
        "handoff": _ms(gaps) if gaps else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--holds", type=int, default=500)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--database-url", help="an existing PostgreSQL (default: a private pgserver)")
    args = ap.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stores: dict[str, Any] = {"sqlite": lambda: open_store(Path(tmp) / "bench.db")}
        server = None
        if args.database_url:
            stores["postgres"] = lambda: open_store(args.database_url)
        else:
            from memsched.testing.postgres import PostgresServer

            server = PostgresServer().start()
            url = server.database()
            stores["postgres"] = lambda: open_store(url)
        try:
            for name, make in stores.items():
                store = make()
                try:
                    # Warm up: enough connections open for every thread (PostgreSQL's lock pool
                    # opens them on demand), so contention is measured, not connection set-up.
                    leases = [SessionLock(store).take("bench", f"warm{i}") for i in range(args.threads + 1)]
                    for lease in leases:
                        lease.release()
                    uncontended(store, 20)
                    out[name] = {
                        "uncontended": uncontended(store, args.holds),
                        "contended": contended(store, args.holds, args.threads),
                    }
                finally:
                    store.close()
        finally:
            if server is not None:
                server.stop()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
