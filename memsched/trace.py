"""Observability of turns: a per-stage stopwatch for the trace, and Prometheus metrics.

Each turn produces one structured trace (stored by the scheduler, read by the UI and the metrics);
the metrics here are counters and histograms fed from that trace, in a `CollectorRegistry` of their
own so two schedulers in one process (tests, a server with two stores) never collide.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from memsched.llm.client import llm_calls

# P0 overhead is milliseconds; the buckets are fine-grained where the targets are (20 ms p50, 60 ms p99).
P0_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5)


class Stopwatch:
    """Named stage timings in milliseconds, in the order the stages ran."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the `with` block as stage `name` (accumulates if the stage runs twice)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - t0) * 1000.0)

    def add(self, name: str, ms: float) -> None:
        self.timings[name] = round(self.timings.get(name, 0.0) + ms, 3)

    def total_ms(self) -> float:
        return (time.perf_counter() - self._start) * 1000.0


class _LiveCollector(Collector):
    """Gauges and counters read at scrape time: queue depth per priority, LLM calls per purpose, and
    the batched embedding models' calls, texts and CPU seconds (`Memory.embed_stats`)."""

    def __init__(
        self,
        depth: Callable[[], dict[int, int]] | None,
        embed: Callable[[], dict[str, dict[str, float]]] | None = None,
    ) -> None:
        self._depth = depth
        self._embed = embed

    def collect(self) -> Iterator[Any]:
        if self._depth is not None:
            gauge = GaugeMetricFamily("memsched_queue_depth", "Queued jobs per priority", labels=["priority"])
            try:
                depth = self._depth()
            except Exception:  # a closed store must not break /metrics
                depth = {}
            for priority, n in sorted(depth.items()):
                gauge.add_metric([f"P{priority}"], float(n))
            yield gauge
        calls = CounterMetricFamily("memsched_llm_calls", "LLM calls per purpose", labels=["purpose"])
        for purpose, n in sorted(llm_calls().items()):
            calls.add_metric([purpose], float(n))
        yield calls
        if self._embed is not None:
            stats = self._embed()
            for key, help_text in (
                ("calls", "Model calls of the embedding micro-batcher, per model"),
                ("texts", "Texts embedded in those calls, per model"),
                ("cpu_seconds", "CPU seconds of the embedding dispatcher in those calls, per model"),
            ):
                family = CounterMetricFamily(f"memsched_embed_{key}", help_text, labels=["model"])
                for model, values in sorted(stats.items()):
                    family.add_metric([model], float(values[key]))
                yield family


class Metrics:
    """The scheduler's Prometheus metrics, in a dedicated registry (`registry`, `render()`)."""

    def __init__(
        self,
        depth: Callable[[], dict[int, int]] | None = None,
        embed: Callable[[], dict[str, dict[str, float]]] | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.turns = Counter(
            "memsched_turns",
            "Turns handled, by entry point and outcome",
            ["entry", "outcome"],
            registry=self.registry,
        )
        self.p0_seconds = Histogram(
            "memsched_p0_overhead_seconds",
            "Scheduler time of a turn excluding the reply LLM call (lock wait included)",
            buckets=P0_BUCKETS,
            registry=self.registry,
        )
        self.blocking_seconds = Histogram(
            "memsched_blocking_seconds",
            "Time turns spent blocked, by reason (barrier, consistency, overflow)",
            ["reason"],
            buckets=P0_BUCKETS,
            registry=self.registry,
        )
        self.tokens_saved = Counter(
            "memsched_tokens_saved",
            "Tokens not sent compared with sending the whole session history",
            registry=self.registry,
        )
        self.summary_tokens_saved = Counter(
            "memsched_summary_tokens_saved",
            "Tokens saved by sending summaries instead of the raw turns they cover",
            registry=self.registry,
        )
        self.commands = Counter(
            "memsched_commands", "Consistency commands applied", ["kind"], registry=self.registry
        )
        self.rerank = Counter(
            "memsched_rerank",
            "Paging decisions of the cooperative layer: called, failed, or skipped and why",
            ["outcome"],
            registry=self.registry,
        )
        self.registry.register(_LiveCollector(depth, embed))

    def observe_turn(self, trace: dict[str, Any], entry: str, outcome: str) -> None:
        """Feed one turn's trace into the metrics."""
        self.turns.labels(entry=entry, outcome=outcome).inc()
        p0 = trace.get("p0_overhead_ms")
        if isinstance(p0, int | float):
            self.p0_seconds.observe(p0 / 1000.0)
        for event in trace.get("blocking", []):
            self.blocking_seconds.labels(reason=event.get("kind", "other")).observe(
                event.get("ms", 0.0) / 1000.0
            )
            if event.get("kind") == "consistency":
                self.commands.labels(kind=event.get("command", "?")).inc()
        tokens = trace.get("tokens", {})
        saved = tokens.get("saved_vs_full_history")
        if isinstance(saved, int | float) and saved > 0:
            self.tokens_saved.inc(saved)
        coop = (trace.get("retrieval") or {}).get("paging", {}).get("cooperative") or {}
        if coop:
            outcome = "called" if coop.get("called") else f"skipped:{coop.get('skipped') or 'off'}"
            self.rerank.labels(outcome="failed" if coop.get("fallback") else outcome).inc()
        by_summaries = tokens.get("saved_by_summaries")
        if isinstance(by_summaries, int | float) and by_summaries > 0:
            self.summary_tokens_saved.inc(by_summaries)

    def render(self) -> bytes:
        """The metrics in the Prometheus text exposition format."""
        return generate_latest(self.registry)
