"""The capacity model's arithmetic (benchmarks/capacity.py), on given unit costs: no measuring."""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest


def _load() -> ModuleType:
    path = Path(__file__).parent.parent / "benchmarks" / "capacity.py"
    spec = importlib.util.spec_from_file_location("capacity_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


cap = _load()
UNIT = cap.UnitCosts(
    turn_row_bytes=300.0,
    fts_bytes=100.0,
    vector_bytes=3000.0,
    bookmark_bytes=50.0,
    p0_cpu_ms=20.0,
    embed_per_core_s=500.0,
    bookmark_pages_per_core_s=400.0,
    vector_dims=(384, 256),
    bookmarks_per_page=1.0,
)
WORK = cap.Workload(users=1_000_000, turns_per_user_day=50, peak_factor=3.0, user_share=0.5, years=1.0)
ASSUME = cap.Assumptions()


def test_doubling_users_doubles_storage_and_load() -> None:
    one = cap.plan(UNIT, WORK, ASSUME)
    two = cap.plan(UNIT, replace(WORK, users=2 * WORK.users), ASSUME)
    for precision in ("float32", "half", "int8"):
        assert two["storage_bytes"][precision]["total"] == pytest.approx(
            2 * one["storage_bytes"][precision]["total"]
        )
    assert two["peak_p0_rps"] == pytest.approx(2 * one["peak_p0_rps"])
    assert two["embed_turns_per_s_needed"] == pytest.approx(2 * one["embed_turns_per_s_needed"])


def test_storage_is_turns_times_bytes_per_turn() -> None:
    a = replace(ASSUME, hnsw=False)
    store = cap.storage(UNIT, WORK, a, "float32")
    turns = 1_000_000 * 50 * 365
    assert store["total"] == pytest.approx(turns * (300 + 100 + 3000 + 50))
    assert store["hnsw"] == 0
    # half precision saves 2 bytes per dimension of payload, int8 3 bytes
    assert cap.storage(UNIT, WORK, a, "half")["vectors"] == pytest.approx(turns * (3000 - 640 * 2))
    assert cap.storage(UNIT, WORK, a, "int8")["vectors"] == pytest.approx(turns * (3000 - 640 * 3))
    assert cap.storage(UNIT, WORK, ASSUME, "float32")["hnsw"] > 0


def test_replicas_follow_peak_rps_cost_and_utilisation() -> None:
    p = cap.plan(UNIT, WORK, ASSUME)
    peak_rps = 1_000_000 * 50 / 86_400 * 3.0 * 0.5
    assert p["peak_p0_rps"] == pytest.approx(peak_rps)
    assert p["api_cores"] == math.ceil(peak_rps * 20.0 / 1000 / 0.6)
    assert cap.api_replicas(100, 30.0, 0.6) == 5  # 100 rps x 30 ms = 3 cores busy, 5 at 60 %
    assert cap.api_replicas(0, 30.0, 0.6) == 0


def test_workers_sized_for_the_mean_unless_asked_for_the_peak() -> None:
    mean = cap.plan(UNIT, WORK, ASSUME)
    peak = cap.plan(UNIT, WORK, replace(ASSUME, workers_for_peak=True))
    turns_s = 1_000_000 * 50 / 86_400
    pages_s = turns_s / 20
    assert mean["embed_worker_cores"] == math.ceil((turns_s + pages_s) / 500.0 / 0.7)
    assert mean["bookmark_worker_cores"] == math.ceil(pages_s / 400.0 / 0.7)
    assert peak["embed_worker_cores"] == math.ceil(3 * (turns_s + pages_s) / 500.0 / 0.7)


def test_shards_take_the_tighter_of_storage_and_writes() -> None:
    p = cap.plan(UNIT, WORK, ASSUME)
    total = p["storage_bytes"]["float32"]["total"]
    assert p["shards_for_storage"] == math.ceil(total / 2e12)
    assert p["shards_for_writes"] == math.ceil(p["peak_turns_per_s"] / 2000)
    assert p["shards"] == max(p["shards_for_storage"], p["shards_for_writes"])
    # a tiny write budget per shard makes writes the bottleneck
    w = cap.plan(UNIT, WORK, replace(ASSUME, shard_peak_turns_per_s=10))
    assert w["first_bottleneck"] == "writes" and w["shards"] == w["shards_for_writes"]
    # narrower vectors need fewer shards
    assert cap.plan(UNIT, WORK, replace(ASSUME, precision="int8"))["shards"] < p["shards"]
