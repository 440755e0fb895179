"""Leave-one-conversation-out sweeps of memsched's tuned constants on LoCoMo (issue 10).

For each constant, a few values (the shipped one among them) are evaluated on every question; then
for each conversation the value that does best on the other conversations is measured on it
(memsched.eval.loo). Prints, per sweep: each value's in-sample recall, the leave-one-out figure,
and which value each fold chose. Vectors (turns and questions) are cached in --cache between runs.

    python benchmarks/locomo_loo.py --data D [--sweep rrf_k,page_weight] [--budget 1000,2000]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memsched.config import Config
from memsched.eval import locomo
from memsched.eval.locomo import Variant
from memsched.eval.loo import leave_one_out, spread
from memsched.paging import STAGES
from memsched.retrieve import FusionWeights

DEFAULT = "default"


def _opts(**changes: Any) -> Variant:
    return Variant(options=changes)


def _weights(**changes: Any) -> Variant:
    w = FusionWeights()
    for k, v in changes.items():
        setattr(w, k, v)
    return Variant(weights=w)


def sweeps() -> dict[str, dict[str, Variant]]:
    """name -> {value label -> variant}; the shipped configuration is always the variant "default"."""
    out: dict[str, dict[str, Variant]] = {
        "stages": {
            **{name: Variant(options=asdict(STAGES[stage])) for name, stage in _STAGE_NAMES.items()},
            "+ contextual vectors": _weights(context=1.0),
            DEFAULT: Variant(),
        },
        "rrf_k": {f"k={k:g}": _weights(rrf_k=float(k)) for k in (5, 20, 60)},
        "context": {f"context={v:g}": _weights(context=v) for v in (0.5, 1.0, 2.0)},
        "bm25_weight": {f"bm25={v:g}": _weights(bm25=v) for v in (1.0, 2.0)},
        "page_weight": {f"page={v:g}": _opts(page_weight=v) for v in (0.0, 1.0, 3.0, 4.0, 6.0)},
        "bookmark_weight": {f"bookmark={v:g}": _opts(bookmark_weight=v) for v in (0.0, 0.5)},
        "speaker_boost": {f"speaker={v:g}": _opts(speaker_boost=v) for v in (0.0, 0.5, 2.0)},
        "neighbour_decay": {f"neighbour={v:g}": _opts(neighbour_decay=v) for v in (0.0, 0.6)},
        "subquery_weight": {f"subquery={v:g}": _opts(subquery_weight=v) for v in (0.0, 1.0)},
        "diversity": {f"diversity={v:g}": _opts(diversity=v) for v in (0.1, 0.2, 0.35, 0.5)},
        "feedback": {f"feedback={v:g}": _opts(feedback=v) for v in (0.5, 1.0, 2.0)},
        "page_top_turns": {f"page_top={v}": _opts(page_top_turns=v) for v in (15, 60)},
        "turn_k": {f"turn_k={v}": _opts(turn_k=v) for v in (25, 100)},
        "deep_k": {f"deep_k={v}": _opts(deep_k=v) for v in (100, 400)},
        "bookmark_k": {f"bookmark_k={v}": _opts(bookmark_k=v) for v in (10, 40)},
        "graph_weight": {f"graph={v:g}": _opts(graph_weight=v) for v in (0.25, 0.5)},
        # The soft-term layer (memsched.vocab): off, and a grid of threshold x fusion weight.
        "terms": {
            "terms off": _opts(terms=False),
            **{
                f"terms>={t:g} w={w:g}": Variant(
                    options={"terms_threshold": t}, weights=FusionWeights(terms=w)
                )
                for t in (0.5, 0.6, 0.7)
                for w in (0.5, 0.75, 1.0, 2.0)
                if (t, w) != (0.5, 0.75)
            },
        },
        # Issue 10 part 2: the question penalty, and speaker names in the BM25 query or not.
        "question_penalty": {f"questions={v:g}": _opts(question_penalty=v) for v in (0.0, 0.5, 0.75)},
        "bm25_speaker_names": {"names in bm25": _opts(bm25_speaker_names=True)},
        "names_questions": {
            "names in bm25, questions=0": _opts(bm25_speaker_names=True, question_penalty=0.0),
            "names in bm25": _opts(bm25_speaker_names=True),
            "questions=0": _opts(question_penalty=0.0),
        },
        "terms_weight": {f"terms w={w:g}": _weights(terms=w) for w in (0.25, 0.5, 1.0)},
        # Speaker names a question mentions in its dense query (PagingOptions.dense_speaker_names):
        # kept (the earlier behaviour), or the vector of the text without them summed with the
        # message's at dense_name_weight (0: without them alone).
        "dense_names": {
            "names in dense": _opts(dense_speaker_names=True),
            **{f"name weight={v:g}": _opts(dense_name_weight=v) for v in (0.0, 0.5, 2.0)},
        },
        "dense_names_weight": {f"name weight={v:g}": _opts(dense_name_weight=v) for v in (0.75, 1.5)},
        "bookmark_names": {"names in bookmark bm25": _opts(bookmark_speaker_names=True)},
        # Budget per token (PagingOptions.length_penalty): the head re-scored x tokens ** -penalty.
        "length_penalty": {f"length={v:g}": _opts(length_penalty=v) for v in (0.1, 0.2, 0.3, 0.4)},
        "floor": {f"floor={v:g}": _opts(floor=v) for v in (0.0, 0.005, 0.02)},
        # The `when` layer (session 28): the turns said on the day a question names ("on 7 July, 2023").
        "when": {f"when={v:g}": _weights(when=v) for v in (0.0, 0.5, 2.0)},
        "time_boost": {f"time_boost={v:g}": _opts(time_boost=v) for v in (0.0, 0.5, 2.0)},
        # Common words out of the lexical layers (session 29; 0: off), and the soft-term layer with
        # its time words (False) as before.
        "common": {
            **{f"common>={v:g}": _opts(common_zipf=v) for v in (0.0, 5.5, 6.5)},
            "terms keep time words": _opts(terms_timeless=False),
            "off, terms keep time words": _opts(common_zipf=0.0, terms_timeless=False),
        },
        # A dense layer's noise cut on histories the deep search covers (0: off).
        "dense_noise": {f"noise z={v:g}": _opts(dense_noise_z=v) for v in (0.0, 1.0, 2.0)},
        # The shipping decision alone: the default against what it replaced.
        "common_ship": {"before (off, terms keep time words)": _opts(common_zipf=0.0, terms_timeless=False)},
        # Issue 10 open-domain: the same speaker's next/previous turn follows a head turn
        # (PagingOptions.thread_decay), and how many head turns bring their neighbours.
        "thread": {f"thread={v:g}": _opts(thread_decay=v) for v in (0.0, 0.15, 0.2, 0.25, 0.35, 0.4, 0.5)},
        # Session 34: a neighbour's share of a head turn's score without the head's focus multipliers
        # (PagingOptions.neighbour_own_focus); "before" is the earlier behaviour.
        "own_focus": {"before (neighbours inherit the focus)": _opts(neighbour_own_focus=False)},
        # The neighbour and thread shares and the speaker boost re-checked on top of it.
        "own_focus_shares": {
            **{f"neighbour={v:g}": _opts(neighbour_decay=v) for v in (0.1, 0.2, 0.4)},
            **{f"thread={v:g}": _opts(thread_decay=v) for v in (0.2, 0.4, 0.5)},
            **{f"speaker={v:g}": _opts(speaker_boost=v) for v in (0.5, 2.0)},
        },
        "neighbour_top": {f"neighbour_top={v}": _opts(neighbour_top=v) for v in (10, 40)},
        # Redundancy: maximal marginal relevance over turn vectors (PagingOptions.novelty).
        "novelty": {f"novelty={v:g}": _opts(novelty=v) for v in (0.0, 0.1, 0.2, 0.3, 0.7, 1.0)},
        # Issue 10 units above the turn (session 18): entity-centred groups and extractive session
        # summaries, each lifting its best turns (PagingOptions.entity_units, session_units).
        "entity_units": {f"entity={v:g}": _opts(entity_units=v) for v in (0.25, 0.5, 1.0, 2.0)},
        "entity_units_shape": {
            "entity=0.5 speakers only": _opts(entity_units=0.5, entity_names=False),
            "entity=0.5 names only": _opts(entity_units=0.5, entity_speakers=False),
            **{f"entity=0.5 turns={n}": _opts(entity_units=0.5, unit_turns=n) for n in (3, 10)},
        },
        # Weight x turns per unit together, so the pair is chosen out of sample in one grid.
        "entity_units_grid": {
            f"entity={w:g} turns={n}": _opts(entity_units=w, unit_turns=n)
            for w in (0.25, 0.5, 1.0)
            for n in (3, 5)
        },
        "session_units": {f"session={v:g}": _opts(session_units=v) for v in (0.25, 0.5, 1.0, 2.0)},
        # Their shape at weight 1: how many sessions a query hits, how many turns make a summary
        # (and how many a hit lifts); 1,000 turns = the whole session's centroid.
        "session_units_shape": {
            f"session=1 top={top} turns={n}": _opts(session_units=1.0, session_top=top, unit_turns=n)
            for top, n in ((1, 5), (5, 5), (3, 3), (3, 1000))
        },
    }
    for grid in out.values():
        grid.setdefault(DEFAULT, Variant())
    return out


_STAGE_NAMES = {
    "hybrid only": "hybrid",
    "+ bookmarks": "+bookmarks",
    "+ page expansion": "+expansion",
    "+ multi-hop": "+multihop",
    "+ feedback": "+feedback",
    "+ session diversity": "+diversity",
    "+ speaker focus": "+focus",
    "+ soft terms": "+terms",
    "+ names out of BM25": "+names",
    "+ question penalty": "+questions",
    "+ redundancy": "+novelty",
    "+ names out of the dense query": "+densenames",
    "+ entity units": "+entityunits",
    "+ session units": "+sessionunits",
}


def _by_category(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """variant -> {"<budget> <category>": mean recall}."""
    acc: dict[str, dict[str, list[float]]] = {}
    for r in records:
        acc.setdefault(r["system"], {}).setdefault(f"{r['budget']} {r['category']}", []).append(r["recall"])
    return {s: {k: sum(v) / len(v) for k, v in sorted(per.items())} for s, per in sorted(acc.items())}


def _loo_by_category(records: list[dict[str, Any]], folds: list[dict[str, str]]) -> dict[str, float]:
    """ "<budget> <category>" -> held-out recall: each conversation's questions under the variant its
    fold chose (the leave-one-out figure per category)."""
    chosen = {f["held_out"]: f["chosen"] for f in folds}
    acc: dict[str, list[float]] = {}
    for r in records:
        if chosen.get(r["sample"]) == r["system"]:
            acc.setdefault(f"{r['budget']} {r['category']}", []).append(r["recall"])
    return {k: round(sum(v) / len(v), 4) for k, v in sorted(acc.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--budget", default="1000,2000")
    ap.add_argument("--sweep", default="", help="comma-separated sweep names (default: all)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "memsched-eval")
    ap.add_argument("--embedders", default=None)
    ap.add_argument("--json", action="store_true", help="print one JSON object per sweep")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budget.split(",")]
    all_sweeps = sweeps()
    names = [n for n in args.sweep.split(",") if n] or list(all_sweeps)
    unknown = [n for n in names if n not in all_sweeps]
    if unknown:
        raise SystemExit(f"unknown sweep(s) {unknown}; choose from {', '.join(all_sweeps)}")
    overrides = {"embedders": args.embedders} if args.embedders else {}
    cfg = Config.load(**overrides)
    for name in names:
        grid = all_sweeps[name]
        records: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        locomo.run(
            args.data,
            budgets,
            cfg,
            systems=(),
            variants=grid,
            cache_dir=args.cache,
            cache_queries=True,
            records=records,
        )
        out = leave_one_out(records, budgets, default=DEFAULT)
        out["sweep"] = name
        out["seconds"] = round(time.perf_counter() - t0, 1)
        out["spread"] = {str(b): spread([v[str(b)] for v in out["variants"].values()]) for b in budgets}
        out["by_category"] = _by_category(records)
        out["loo_by_category"] = _loo_by_category(records, out["folds"])
        if args.json:
            print(json.dumps(out), flush=True)
            continue
        print(f"== {name} ({out['seconds']} s)")
        for variant, per in out["variants"].items():
            print(f"  {variant:<18} " + "  ".join(f"{b}: {v:.4f}" for b, v in per.items()))
        print(
            "  in-sample best: "
            + out["in_sample"]["chosen"]
            + "  "
            + "  ".join(f"{b}: {out['in_sample'][str(b)]:.4f}" for b in budgets)
        )
        for variant, per in out["by_category"].items():
            print(f"  {variant:<18} " + "  ".join(f"{k} {v:.3f}" for k, v in per.items()))
        print("  leave-one-out:  " + "  ".join(f"{b}: {v:.4f}" for b, v in out["loo"].items()))
        print(
            "  leave-one-out by category: "
            + "  ".join(f"{k} {v:.3f}" for k, v in out["loo_by_category"].items())
        )
        print("  folds: " + ", ".join(f"{f['held_out']} -> {f['chosen']}" for f in out["folds"]), flush=True)


if __name__ == "__main__":
    main()
