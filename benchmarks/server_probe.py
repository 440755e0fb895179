"""Inside a `memsched serve` process under a benchmark: CPU by function and SQL statements, per turn.

A sampling profiler tells which lines hold the GIL, but on this 2-core machine it pins a wait for the
GIL on the line before it; a hot-loop microbenchmark runs with warm caches and no other thread, and
measured 40 µs for a WordLlama embedding that costs ~300 µs inside the loaded server. This probe
counts inside the server itself, while the benchmark's turns run:

- `functions`: each named method or function is wrapped; a call adds its calling thread's CPU time
  (`time.thread_time`, so waits for the GIL, a lock or a future cost nothing) and one to its count.
  Inclusive of what it calls; `module:Class.method` or `module:function` (a function that another
  module imported by name before the probe was installed is not seen through that name).
- `sql`: every statement SQLite runs on the store's connections, through `set_trace_callback`, its
  text with literals folded; statements FTS5 runs inside another are counted apart (`internal`), as
  they run in C within the outer statement (the GIL is released around the outer one only). Each
  statement the store runs releases the GIL and takes it back at least once (once per row fetched),
  and under contention each release hands the GIL to another thread.

Counting runs only while the marker file exists: the driver creates it when a phase starts and
removes it when the phase ends; the probe then writes its counts (JSON) and stops counting. The
wrappers cost ~1 µs a call and the trace callback a few µs a statement: turns/s of a probed run are
not figures.

The driver starts the server with `launch_code()` as its `python -c` program and the settings in the
environment (`env(...)`); `benchmarks/proxy_throughput.py --probe-functions ... --probe-sql`.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_FUNCTIONS = "MEMSCHED_PROBE_FUNCTIONS"
ENV_SQL = "MEMSCHED_PROBE_SQL"
ENV_MARKER = "MEMSCHED_PROBE_MARKER"
ENV_OUT = "MEMSCHED_PROBE_OUT"
POLL_S = 0.02  # how often the marker file is looked at


def env(functions: list[str], sql: bool, marker: Path, out: Path) -> dict[str, str]:
    """The environment that turns the probe on in a server started with `launch_code()`."""
    return {
        ENV_FUNCTIONS: ",".join(functions),
        ENV_SQL: "1" if sql else "",
        ENV_MARKER: str(marker),
        ENV_OUT: str(out),
    }


def launch_code(argv: list[str]) -> str:
    """A `python -c` program: install the probe (from this directory), then run `memsched` with `argv`."""
    here = str(Path(__file__).parent)
    return (
        f"import sys; sys.path.insert(0, {here!r}); import server_probe; server_probe.install_from_env(); "
        f"sys.argv = ['memsched', *{argv!r}]; from memsched.cli import main; main()"
    )


class Probe:
    def __init__(self, marker: Path, out: Path) -> None:
        self.marker = marker
        self.out = out
        self.on = False
        self.lock = threading.Lock()
        self.cpu: dict[str, list[float]] = {}  # spec -> [calls, CPU seconds]
        self.sql: Counter[str] = Counter()
        self.internal: Counter[str] = Counter()
        self.last = threading.local()  # the statement the thread last reported

    # -- functions -------------------------------------------------------------------------------------

    def wrap(self, spec: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def probed(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return fn(*args, **kwargs)
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - t0
                with self.lock:
                    entry = self.cpu.setdefault(spec, [0, 0.0])
                    entry[0] += 1
                    entry[1] += spent

        return probed

    def patch(self, spec: str) -> None:
        module_name, _, path = spec.partition(":")
        if not path:
            raise SystemExit(f"probe: {spec!r} is not module:Class.method or module:function")
        owner: Any = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        # The class's own attribute (a staticmethod or classmethod stays what it was).
        raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        if isinstance(raw, staticmethod | classmethod):
            setattr(owner, name, type(raw)(self.wrap(spec, raw.__func__)))
        else:
            setattr(owner, name, self.wrap(spec, raw))

    # -- SQL -------------------------------------------------------------------------------------------

    _LITERAL = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")
    _SPACE = re.compile(r"\s+")

    def statement(self, sql: str) -> None:
        if not self.on:
            return
        # SQLite reports a statement again at the start of each trigger program it fires, with the
        # same text: a write counted once (its expanded text holds the bound values, so only the same
        # write with the same values twice in a row is missed; a read fires no trigger).
        if getattr(self.last, "sql", None) == sql and not sql.lstrip().upper().startswith("SELECT"):
            return
        self.last.sql = sql
        internal = sql.startswith("--")  # FTS5's own statements, run inside an outer one
        text = self._SPACE.sub(" ", self._LITERAL.sub("?", sql.lstrip("- "))).strip()
        key = text[:120]
        with self.lock:
            (self.internal if internal else self.sql)[key] += 1

    def trace_sql(self) -> None:
        from memsched.store import sqlite

        connect = sqlite.SQLiteStore._connect

        def traced(store: sqlite.SQLiteStore) -> Any:
            conn = connect(store)
            conn.set_trace_callback(self.statement)
            return conn

        sqlite.SQLiteStore._connect = traced  # type: ignore[method-assign]

    # -- phases ----------------------------------------------------------------------------------------

    def watch(self) -> None:
        while not self.marker.exists():
            time.sleep(POLL_S)
        self.on = True
        while self.marker.exists():
            time.sleep(POLL_S)
        self.on = False
        time.sleep(0.2)  # calls that were inside a wrapper when the phase ended
        with self.lock:
            report = {
                "functions": {
                    spec: {"calls": int(c), "cpu_s": round(s, 6)} for spec, (c, s) in self.cpu.items()
                },
                "sql": dict(self.sql.most_common()),
                "sql_internal": dict(self.internal.most_common()),
            }
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.out)


def install_from_env() -> None:
    """Patch what the environment names and start watching the marker (no-op without a marker)."""
    marker = os.environ.get(ENV_MARKER)
    if not marker:
        return
    probe = Probe(Path(marker), Path(os.environ[ENV_OUT]))
    for spec in filter(None, os.environ.get(ENV_FUNCTIONS, "").split(",")):
        probe.patch(spec.strip())
    if os.environ.get(ENV_SQL):
        probe.trace_sql()
    threading.Thread(target=probe.watch, name="memsched-probe", daemon=True).start()


def per_turn(report: dict[str, Any], turns: int, top: int = 40) -> dict[str, Any]:
    """The probe's counts divided by the phase's turns: ms of CPU and calls a turn, µs a call, and the
    statements a turn (the most frequent `top`), with their totals."""
    n = max(1, turns)
    functions = {
        spec: {
            "ms_per_turn": round(1000.0 * v["cpu_s"] / n, 3),
            "calls_per_turn": round(v["calls"] / n, 2),
            "us_per_call": round(1e6 * v["cpu_s"] / max(1, v["calls"]), 1),
        }
        for spec, v in sorted(report["functions"].items(), key=lambda kv: -kv[1]["cpu_s"])
    }
    out: dict[str, Any] = {"functions": functions}
    if report["sql"] or report["sql_internal"]:
        sql: dict[str, int] = report["sql"]
        internal: dict[str, int] = report["sql_internal"]
        out["sql"] = {
            "statements_per_turn": round(sum(sql.values()) / n, 1),
            "transactions_per_turn": round(sum(c for s, c in sql.items() if s.startswith("BEGIN")) / n, 2),
            "write_transactions_per_turn": round(
                sum(c for s, c in sql.items() if s.startswith("BEGIN IMMEDIATE")) / n, 2
            ),
            "internal_per_turn": round(sum(internal.values()) / n, 1),
            "top": {s: round(c / n, 2) for s, c in list(sql.items())[:top]},
            "internal_top": {s: round(c / n, 2) for s, c in list(internal.items())[:5]},
        }
    return out
