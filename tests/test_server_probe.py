"""The in-server probe of benchmarks/server_probe.py: what it counts, on a real SQLite store, and when."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from memsched.model import Turn
from memsched.store import sqlite


def _load() -> ModuleType:
    path = Path(__file__).parent.parent / "benchmarks" / "server_probe.py"
    spec = importlib.util.spec_from_file_location("server_probe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


probe_mod = _load()


def _turn(i: int) -> Turn:
    return Turn(
        user_id="u1",
        session_id="s1",
        role="user",
        content=f"we went hiking by the lake, number {i}",
        created_at=datetime(2025, 3, 1, 12, i, tzinfo=UTC),
    )


def test_statements_counted_once_each_with_triggers_and_fts_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite.SQLiteStore, "_connect", sqlite.SQLiteStore._connect)  # restored after
    probe = probe_mod.Probe(tmp_path / "on", tmp_path / "out.json")
    probe.trace_sql()
    store = sqlite.SQLiteStore(tmp_path / "m.db")
    try:
        probe.on = True
        for i in range(3):
            store.add_turns([_turn(i)])  # the turns table has triggers: each insert fires them
        store.max_turn_id("u1")
        store.max_turn_id("u1")  # the same read twice in a row is two reads
        store.search_bm25("u1", "hiking lake", 10)
        probe.on = False
        store.max_turn_id("u1")  # outside the phase: not counted
    finally:
        store.close()
    inserts = sum(c for s, c in probe.sql.items() if s.startswith("INSERT INTO turns ("))
    assert inserts == 3
    assert probe.sql["SELECT max(id) FROM turns WHERE user_id = ?"] == 2
    assert sum(c for s, c in probe.sql.items() if s.startswith("BEGIN IMMEDIATE")) == 3
    assert all(not s.startswith("-") for s in probe.sql)
    assert probe.internal  # FTS5's own statements, inside the search and the inserts
    report = probe_mod.per_turn(
        {"functions": {}, "sql": dict(probe.sql.most_common()), "sql_internal": dict(probe.internal)}, turns=3
    )
    assert report["sql"]["write_transactions_per_turn"] == 1.0
    assert report["sql"]["top"]["SELECT max(id) FROM turns WHERE user_id = ?"] == round(2 / 3, 2)


class _Work:
    def spin(self, n: int) -> int:
        return sum(i * i for i in range(n))


def test_functions_counted_while_the_marker_exists_then_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Work, "spin", _Work.spin)  # restored after
    marker, out = tmp_path / "on", tmp_path / "out.json"
    probe = probe_mod.Probe(marker, out)
    probe.patch(f"{__name__}:_Work.spin")
    watcher = threading.Thread(target=probe.watch, daemon=True)
    watcher.start()
    _Work().spin(10)  # before the phase
    marker.touch()
    deadline = time.time() + 5
    while not probe.on and time.time() < deadline:
        time.sleep(0.01)
    for _ in range(4):
        _Work().spin(200_000)
    marker.unlink()
    watcher.join(timeout=5)
    _Work().spin(10)  # after it
    report = json.loads(out.read_text(encoding="utf-8"))
    entry = report["functions"][f"{__name__}:_Work.spin"]
    assert entry["calls"] == 4
    assert entry["cpu_s"] > 0
    per = probe_mod.per_turn(report, turns=2)["functions"][f"{__name__}:_Work.spin"]
    assert per["calls_per_turn"] == 2.0
    assert per["us_per_call"] == pytest.approx(1e6 * entry["cpu_s"] / 4, rel=0.01)


def test_a_spec_that_names_no_method_is_refused(tmp_path: Path) -> None:
    probe = probe_mod.Probe(tmp_path / "on", tmp_path / "out.json")
    with pytest.raises(SystemExit, match=r"module:Class\.method"):
        probe.patch("memsched.scheduler")
