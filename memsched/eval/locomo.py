"""LoCoMo evaluation: how much of each question's evidence a context built under a budget contains.

For every sample: import it as one user, then for every question of categories 1-4 build a context
for the question, asked as a new message in a new session after the last one, and check which of
its evidence turns (`evidence` dia_ids) made it in. Baselines run in the same pass, same budget.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsched.assemble import assemble, format_memory
from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.eval.vcache import CachedEmbedder
from memsched.importers import read_locomo
from memsched.memory import Memory
from memsched.model import Turn
from memsched.retrieve import FusionWeights

SYSTEMS = ("memsched", "window", "bm25", "dense", "hybrid")
# `--ablation`: the paging stages of memsched.paging.STAGES, each adding one part to the one before
# ("+ soft terms" adds the soft-term layer to "+ speaker focus", "+ names out of BM25" leaves the speaker
# names a question mentions out of its BM25 search, "+ question penalty" demotes turns that only ask,
# "+ redundancy" adds the redundancy re-ranking, PagingOptions.novelty, "+ names out of the dense
# query" leaves the speaker names out of the dense query and of the bookmarks' BM25 search too,
# PagingOptions.dense_speaker_names and bookmark_speaker_names, and "full memsched" lets the
# speaker's own next turn follow a head turn, PagingOptions.thread_decay). The rows after it add, one
# at a time, methods measured and left off: feedback, contextual vectors, session diversity, and the
# units above the turn (PagingOptions.entity_units, session_units).
ABLATION = (
    "hybrid only",
    "+ bookmarks",
    "+ page expansion",
    "+ multi-hop",
    "+ speaker focus",
    "+ soft terms",
    "+ names out of BM25",
    "+ question penalty",
    "+ redundancy",
    "+ names out of the dense query",
    "full memsched",
    "+ feedback",
    "+ contextual vectors",
    "+ session diversity",
    "+ entity units",
    "+ session units",
)
_ABLATION_STAGE = dict(
    zip(
        ABLATION,
        (
            "hybrid",
            "+bookmarks",
            "+expansion",
            "+multihop",
            "+focus",
            "+terms",
            "+names",
            "+questions",
            "+novelty",
            "+densenames",
            "full",
            "+feedback",
            "+context",
            "+diversity",
            "+entityunits",
            "+sessionunits",
        ),
        strict=True,
    )
)
QUESTION_SESSION = "locomo-question"
OFFICIAL_URL = "https://github.com/snap-research/locomo/raw/main/data/locomo10.json"
# The question categories of locomo10.json (category 5, adversarial, has no answer and is skipped).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# Baselines search this many hits per layer and pack up to this many turns, so that every system
# can fill the largest budget (like for like: compare avg_tokens).
BASELINE_POOL = 400
BASELINE_HEAD = 50  # the hits per layer the baselines fuse first (as the retriever's default)


@dataclass(slots=True)
class Variant:
    """memsched with some paging options (and optionally other fusion weights): one eval system."""

    options: dict[str, Any] = field(default_factory=dict)
    weights: FusionWeights | None = None


@dataclass(slots=True)
class Question:
    text: str
    answer: str
    evidence: list[str]
    category: int


@dataclass(slots=True)
class Tally:
    recall: list[float] = field(default_factory=list)
    answer_hits: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(self, recall: float, answer_hit: float, tokens: int, ms: float) -> None:
        self.recall.append(recall)
        self.answer_hits.append(answer_hit)
        self.tokens.append(tokens)
        self.ms.append(ms)

    def summary(self) -> dict[str, float]:
        ms = sorted(self.ms) or [0.0]
        return {
            "evidence_recall": round(statistics.fmean(self.recall), 4) if self.recall else 0.0,
            "answer_in_context": round(statistics.fmean(self.answer_hits), 4) if self.answer_hits else 0.0,
            "avg_tokens": round(statistics.fmean(self.tokens), 1) if self.tokens else 0.0,
            "p50_ms": round(_percentile(ms, 50), 2),
            "p95_ms": round(_percentile(ms, 95), 2),
        }


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * pct / 100.0
    lo, hi = int(k), min(int(k) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def questions_of(qa: list[dict[str, Any]], turn_ids: set[str]) -> list[Question]:
    """Questions of categories 1-4 with at least one evidence id that names a real turn."""
    out = []
    for q in qa:
        if q.get("category") not in (1, 2, 3, 4) or "answer" not in q:
            continue
        ids = [e.strip() for raw in q.get("evidence", []) for e in str(raw).replace(";", ",").split(",")]
        ids = [e for e in ids if e in turn_ids]
        if ids:
            out.append(Question(str(q["question"]), str(q["answer"]), ids, int(q["category"])))
    return out


Progress = Callable[[str, int, int], None]


def run(
    data: Path,
    budgets: Sequence[int],
    config: Config,
    *,
    db: Path | None = None,
    systems: Sequence[str] = SYSTEMS,
    progress: Progress | None = None,
    limit: int | None = None,
    judge: Any = None,
    variants: dict[str, Variant] | None = None,
    cache_dir: Path | None = None,
    cache_queries: bool = False,
    records: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Evaluate and return `{"store", "questions", "full_context_tokens", "results": {budget: {system: {...}}}}`.

    The store is a temporary SQLite file (or `db`), or PostgreSQL when `config.database_url` is set:
    there, samples whose user the database already holds are not imported again.

    Each system's figures carry `by_category` (multi-hop, temporal, open-domain, single-hop) with the
    same fields. `variants` adds systems that are memsched with other paging options or weights (the
    leave-one-out sweep uses them). `cache_dir` keeps turn vectors across runs (and question vectors
    too with `cache_queries`, which makes the latency columns meaningless). `records`, if given,
    receives one row per (question, budget, system): sample, category, recall.
    """
    variants = dict(variants or {})
    for name in systems:
        if name in _ABLATION_STAGE and name not in variants:
            from dataclasses import asdict

            from memsched.paging import STAGES

            stage = _ABLATION_STAGE[name]
            variants[name] = Variant(
                options=asdict(STAGES[stage]),
                weights=FusionWeights(context=1.0) if stage == "+context" else None,
            )
    systems = [*systems, *(v for v in variants if v not in systems)]
    samples = read_locomo(data)
    tallies = {str(b): {s: Tally() for s in systems} for b in budgets}
    by_cat = {str(b): {s: {c: Tally() for c in CATEGORIES.values()} for s in systems} for b in budgets}
    full_tokens: list[int] = []
    n_questions = 0
    over_budget = 0
    judged: dict[str, list[float]] = {str(b): [] for b in budgets}
    cached: list[CachedEmbedder] = []
    embedders = None
    if cache_dir is not None:
        cached = [
            CachedEmbedder(embed_base.create(name, config), cache_dir) for name in config.embedder_names
        ]
        embedders = dict(zip(config.embedder_names, cached, strict=True))
    with tempfile.TemporaryDirectory(prefix="memsched-eval-") as tmp:
        path = db if db is not None else Path(tmp) / "eval.db"
        mem = Memory(config.replace(db=path), embedders=embedders)  # type: ignore[arg-type]
        store_location = mem.store.location  # the temporary SQLite file, or MEMSCHED_DATABASE_URL's
        default_pager = mem.pager
        pagers = {name: default_pager.with_options(**v.options) for name, v in variants.items()}
        default_weights = mem.retriever.weights
        try:
            for si, sample in enumerate(samples):
                if limit is not None and n_questions >= limit:
                    break  # the rest would be imported and indexed for nothing
                if progress:
                    progress(f"importing {sample.sample_id}", si, len(samples))
                for c in cached:
                    c.active = True
                if not mem.store.has_user(sample.sample_id):
                    mem.add_many(sample.turns, index=False)
                mem.index(sample.sample_id)
                # Bookmarks as the background job would make them (rule fallback: the figures are offline).
                generate_bookmarks(mem, sample.sample_id)
                for c in cached:
                    c.save()
                    c.active = cache_queries
                stored = list(mem.store.iter_turns(sample.sample_id))
                by_ext = {t.external_id: t for t in stored if t.external_id}
                qs = questions_of(sample.qa, set(by_ext))
                if limit is not None:
                    qs = qs[: max(0, limit - n_questions)]
                after = max(t.created_at for t in stored)
                for qi, q in enumerate(qs):
                    if progress:
                        progress(f"{sample.sample_id}: question {qi + 1}/{len(qs)}", si, len(samples))
                    n_questions += 1
                    full_tokens.append(
                        mem.counter.messages_tokens(
                            [
                                {
                                    "role": "system",
                                    "content": mem.config.system_prompt + "\n\n" + format_memory(stored),
                                },
                                {"role": "user", "content": q.text},
                            ]
                        )
                    )
                    evidence = [by_ext[e] for e in q.evidence]
                    category = CATEGORIES[q.category]
                    for budget in budgets:
                        for system in systems:
                            variant = variants.get(system)
                            t0 = time.perf_counter()
                            if variant is not None:
                                mem._pager = pagers[system]
                                mem.retriever.weights = variant.weights or default_weights
                                messages = _context(mem, "memsched", sample.sample_id, q.text, budget, after)
                                mem.retriever.weights = default_weights
                                mem._pager = default_pager
                            else:
                                messages = _context(mem, system, sample.sample_id, q.text, budget, after)
                            elapsed = (time.perf_counter() - t0) * 1000.0
                            text = "\n".join(str(m["content"]) for m in messages)
                            recall = sum(1 for t in evidence if t.content in text) / len(evidence)
                            hit = 1.0 if q.answer.lower() in text.lower() else 0.0
                            tokens = mem.counter.messages_tokens(messages)
                            if tokens > budget:  # the assembly's promise; counted, and reported
                                over_budget += 1
                            tallies[str(budget)][system].add(recall, hit, tokens, elapsed)
                            by_cat[str(budget)][system][category].add(recall, hit, tokens, elapsed)
                            if records is not None:
                                records.append(
                                    {
                                        "sample": sample.sample_id,
                                        "category": category,
                                        "budget": budget,
                                        "system": system,
                                        "recall": recall,
                                    }
                                )
                            if judge is not None and system == "memsched":
                                judged[str(budget)].append(judge(q, messages))
        finally:
            for c in cached:
                c.save()
            mem.close()
    results: dict[str, dict[str, Any]] = {}
    for b, per in tallies.items():
        results[b] = {}
        for s, t in per.items():
            summary: dict[str, Any] = t.summary()
            summary["by_category"] = {c: ct.summary() for c, ct in by_cat[b][s].items() if ct.recall}
            results[b][s] = summary
    result: dict[str, Any] = {
        "store": store_location,
        "questions": n_questions,
        "full_context_tokens": round(statistics.fmean(full_tokens), 1) if full_tokens else 0.0,
        "over_budget": over_budget,  # contexts above their budget, every system: must be 0
        "results": results,
    }
    if judge is not None:
        result["judge"] = {b: round(statistics.fmean(v), 4) if v else 0.0 for b, v in judged.items()}
    return result


def _context(
    mem: Memory, system: str, user_id: str, question: str, budget: int, after: Any
) -> list[dict[str, Any]]:
    """The messages one system would send for `question` under `budget`."""
    cfg = mem.config
    if system == "memsched":
        return mem.context(
            user_id, question, session_id=QUESTION_SESSION, budget=budget, backfill=False
        ).messages
    recalled: list[Turn] = []
    recent: list[Turn] = []
    if system == "window":
        recent = mem.store.recent_turns(user_id, 400)
    else:
        first_dense = next(iter(mem.embedders))
        layers = {"bm25": ["bm25"], "dense": [first_dense], "hybrid": ["bm25", first_dense]}[system]
        # The usual 50 hits per layer fused first; the deeper pool only continues the list, so a
        # baseline can fill a large budget without its head changing.
        wide = mem.retriever.retrieve(
            user_id, question, k=BASELINE_POOL, layers=layers, plain_rrf=True, expand=False
        )
        head = mem.retriever.retrieve(
            user_id, question, k=BASELINE_HEAD, plain_rrf=True, expand=False, hits=wide.layers
        ).candidates
        seen = {c.turn_id for c in head}
        pool = [*head, *(c for c in wide.candidates if c.turn_id not in seen)]
        recalled = mem.ranked_turns(user_id, pool, limit=BASELINE_POOL)
    return assemble(
        counter=mem.counter,
        budget=budget,
        system_prompt=cfg.system_prompt,
        new_message=question,
        recalled=recalled,
        recent=recent,
        recent_share=1.0 if system == "window" else 0.0,
        recent_max_turns=len(recent),
    ).messages
