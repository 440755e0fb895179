"""CPU of the soft-term layer per query on a big user, and what its candidate search costs.

Setup: `p0_overhead.py`'s user (10,000 stored turns of the bilingual set, repeated) with every page
bookmarked, so the user has a full vocabulary (~4,000 terms) as a long-lived user would. For each of
the set's 82 questions (two passes; the second has every query word cached), on one thread:

- `layer`: the whole layer as the pager runs it (`Pager._soft_layer`: the vocabulary product, the
  candidates from the user's term postings, the scoring);
- `pool_search`: what the layer did for its candidates until session 15, for comparison: one
  full-text search ORing the expansions, 400 hits, then the hits' texts read and segmented again;
- `postings_build`: building the user's postings from nothing (once per user and process).

Thread CPU, so a loaded machine inflates the figures less than wall time (about 2x at load ~12).

    python benchmarks/soft_layer_cost.py                 # seeds a temporary home first (minutes)
    python benchmarks/soft_layer_cost.py --home DIR      # reuse a seeded home (copied, not changed)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import p0_overhead as P  # the benchmark's seed

from memsched.bookmarks import maintain_bookmarks
from memsched.config import Config
from memsched.memory import Memory
from memsched.text import segment
from memsched.vocab import MAX_EXPANSIONS, TermVectors, query_terms

try:  # absent before session 15: the script also measures the older code's layer
    from memsched.vocab import TermPostings
except ImportError:  # pragma: no cover
    TermPostings = None  # type: ignore[assignment,misc]


def _cpu_ms(f: object) -> tuple[object, float]:
    t0 = time.thread_time()
    out = f()  # type: ignore[operator]
    return out, (time.thread_time() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=None, help="a home seeded by an earlier run (copied)")
    ap.add_argument("--stored-turns", type=int, default=10_000)
    ap.add_argument("--keep", type=Path, default=None, help="keep the seeded home here for later runs")
    args = ap.parse_args()
    data = json.loads(P.DATA.read_text(encoding="utf-8"))
    questions = [q["question"] for lang in ("zh", "en") for q in data["languages"][lang]["questions"]]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        if args.home is not None:
            shutil.copytree(args.home, home)
        memory = Memory(Config.load(home=home))
        if args.home is None:
            P.seed_user(memory, data, args.stored_turns)
            maintain_bookmarks(memory, P.USER)
            if args.keep is not None:
                memory.close()
                shutil.copytree(home, args.keep)
                memory = Memory(Config.load(home=home))
        pager, store = memory.pager, memory.store
        embedder = memory.embedders["minilm"]
        vocab = pager._vocabulary(P.USER, embedder.model_id)
        skip = pager._term_skip(P.USER)
        segment._jieba()
        segment.clear_caches()
        build_cold = build_warm = float("nan")
        if TermPostings is not None:
            _, build_cold = _cpu_ms(lambda: TermPostings(P.USER).refresh(store))
            _, build_warm = _cpu_ms(lambda: TermPostings(P.USER).refresh(store))
        layer: list[float] = []
        pool: list[float] = []
        for _ in range(2):
            for q in questions:
                vectors = TermVectors(embedder)
                _, ms = _cpu_ms(lambda q=q, v=vectors: pager._soft_layer(P.USER, q, set(), v))  # type: ignore[misc]
                layer.append(ms)
                pool.append(_pool_search(memory, vocab, vectors, q, skip))
        memory.close()
    n = len(questions)
    out = {
        "benchmark": "soft_layer_cost",
        "stored_turns": store_turns(args),
        "vocabulary_terms": len(vocab.terms),
        "layer_cpu_ms": _stats(layer[:n], layer[n:]),
        "pool_search_cpu_ms (before session 15)": _stats(pool[:n], pool[n:]),
        "postings_build_cpu_ms": {"cold": round(build_cold, 1), "terms_cached": round(build_warm, 1)},
        "load_average_at_end": os.getloadavg(),
    }
    print(json.dumps(out, indent=2))


def store_turns(args: argparse.Namespace) -> int | None:
    return None if args.home is not None else args.stored_turns


def _stats(first: list[float], second: list[float]) -> dict[str, float]:
    return {
        "first_pass_p50": round(statistics.median(first), 2),
        "second_pass_p50": round(statistics.median(second), 2),
        "mean": round(statistics.fmean(first + second), 2),
    }


def _pool_search(memory: Memory, vocab: object, vectors: TermVectors, query: str, skip: set[str]) -> float:
    """CPU ms of the pre-session-15 candidate search for `query` (expansions as the layer makes them)."""
    v = vocab  # a Vocabulary
    q_terms = query_terms(query, skip)
    if not q_terms:
        return 0.0
    matrix = np.stack(
        [v.matrix[v.index[t]] if t in v.index else vectors([t])[0] for t in q_terms]  # type: ignore[attr-defined]
    )
    sims = np.einsum("qd,vd->qv", matrix, v.matrix)  # type: ignore[attr-defined]
    expanded: set[str] = set(q_terms)
    for i in range(len(q_terms)):
        row = sims[i]
        idx = np.flatnonzero(row >= memory.pager.options.terms_threshold)
        if len(idx) > MAX_EXPANSIONS:
            idx = idx[np.argsort(-row[idx], kind="stable")[:MAX_EXPANSIONS]]
        expanded.update(v.terms[j] for j in idx)  # type: ignore[attr-defined]
    store = memory.store

    def search() -> None:
        found = store.search_bm25(P.USER, " ".join(sorted(expanded)), 400)
        for content in store.turn_contents(P.USER, [h.turn_id for h in found]).values():
            segment.terms(content)

    return _cpu_ms(search)[1]


if __name__ == "__main__":
    main()
