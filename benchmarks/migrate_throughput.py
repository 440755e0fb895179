"""How fast `memsched migrate` copies an embedded database into PostgreSQL (BENCHMARKS.md, "Migrating").

Builds a SQLite source of `--users` × `--per-user` synthetic bilingual turns (`synth_history.py`)
with stand-in vectors under the default embedders' model ids and widths (as `scale.py` does), then
copies it into a fresh database on a private PostgreSQL (the `pgserver` wheel) or `--database-url`,
and copies it again (the idempotent re-run, which only compares). Prints rows per second.

    python benchmarks/migrate_throughput.py                          # 10 users x 2000 turns
    python benchmarks/migrate_throughput.py --users 20 --per-user 5000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from memsched import Config, Memory
from memsched.embed import base as embed_base
from memsched.store.transfer import migrate_sqlite_to_postgres
from memsched.testing.postgres import PostgresServer

sys.path.insert(0, str(Path(__file__).parent))
from scale import StandIn
from synth_history import HistorySpec, history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--per-user", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--database-url", default=None, help="an existing server (default: a private pgserver)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memsched-migrate-") as tmp:
        config = Config.load(home=Path(tmp) / "home")
        stand = {
            name: StandIn(e.model_id, e.dim)
            for name, e in ((n, embed_base.create(n, config)) for n in config.embedder_names)
        }
        memory = Memory(config, embedders=stand)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        for u in range(args.users):
            memory.add_many(list(history(HistorySpec(f"user{u:04d}", args.per_user))), index=False)
            memory.index(f"user{u:04d}")
        build_s = time.perf_counter() - t0
        memory.close()
        with PostgresServer(args.database_url, datadir=None) as pg:
            url = pg.database()
            first = migrate_sqlite_to_postgres(config.db_path, url, batch_size=args.batch_size)
            again = migrate_sqlite_to_postgres(config.db_path, url, batch_size=args.batch_size)
        rows = sum(t.source for t in first.tables.values())
        out = {
            "turns": args.users * args.per_user,
            "rows": rows,
            "vectors": first.tables["embeddings"].source,
            "source_build_s": round(build_s, 1),
            "copy_s": round(first.seconds, 1),
            "copy_rows_per_s": round(rows / first.seconds),
            "rerun_s": round(again.seconds, 1),
            "rerun_copied": sum(t.copied for t in again.tables.values()),
            "per_table_source_rows": {n: t.source for n, t in first.tables.items()},
        }
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
