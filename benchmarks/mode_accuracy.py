"""Mode router accuracy on the labelled set, and the router's own latency.

`tests/data/mode_labelled.txt`: 944 hand-written messages (zh and en; casual, conflict, comfort,
intimacy; hard cases such as sarcasm, "算了吧", "whatever" marked #hard). The even lines tune: the
learned classifier is fitted on them by benchmarks/train_mode_classifier.py (shipped as
memsched/data/mode_classifier.npz), and the hand-set weights are re-tuned on them here (a small grid
over `ModeWeights.prototype`, `casual_bias` and `cue`). The odd lines are reported: accuracy overall,
per language, on hard cases, and a confusion matrix, for the cue lexicons alone, the hand-set router
(cues + prototypes) and the default router of a turn (hand-set evidence + the classifier); also split
into the first 304 messages (the set the earlier figures used) and the 640 added later.

Latency: per message, `Router.route` (cues, prototype similarity, carried state, signals) on the
vectors the turn has already computed (the query embedding is not the router's cost), after warm-up.

    python benchmarks/mode_accuracy.py            # default embedders (minilm, wordllama)
    python benchmarks/mode_accuracy.py --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memsched.classify import ModeClassifier
from memsched.memory import Memory
from memsched.router import DEFAULT_WEIGHTS, MODES, ModeWeights, Prototypes, Router
from memsched.text.segment import cjk_ratio

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mode_labelled.txt"


FIRST_SET = 304  # messages 0..303 are the first labelled set; later ones were added with the classifier


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The labelled messages in file order: mode, lang, text, hard, and `line` (0-based message index)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        mode, lang, text = line.split("|", 2)
        hard = text.endswith(" #hard")
        rows.append(
            {"mode": mode, "lang": lang, "text": text.removesuffix(" #hard"), "hard": hard, "line": len(rows)}
        )
    return rows


def evaluate(router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]) -> dict[str, Any]:
    weights = memory.retriever.weights
    pred = []
    for row, v in zip(rows, vecs, strict=True):
        cjk = cjk_ratio(row["text"])
        r = router.route(
            row["text"],
            vectors=v,
            embedders=memory.embedders,
            embedder_weights={n: weights.dense_weight(n, cjk) for n in v},
        )
        pred.append(r.mode)
    ok = [p == r["mode"] for p, r in zip(pred, rows, strict=True)]

    def acc(sel: list[bool]) -> float:
        chosen = [o for o, s in zip(ok, sel, strict=True) if s]
        return round(sum(chosen) / len(chosen), 3) if chosen else 0.0

    confusion = {m: dict.fromkeys(MODES, 0) for m in MODES}
    for p, r in zip(pred, rows, strict=True):
        confusion[r["mode"]][p] += 1
    return {
        "n": len(rows),
        "accuracy": acc([True] * len(rows)),
        "zh": acc([r["lang"] == "zh" for r in rows]),
        "en": acc([r["lang"] == "en" for r in rows]),
        "hard": acc([r["hard"] for r in rows]),
        "confusion": confusion,
        "errors": [(r["text"], r["mode"], p) for r, p in zip(rows, pred, strict=True) if p != r["mode"]],
    }


def report(router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]) -> dict[str, Any]:
    """`evaluate` on the held-out rows, also split into the first set (lines 1-304) and the later one."""
    full = evaluate(router, rows, memory, vecs)
    first = [i for i, r in enumerate(rows) if r["line"] < FIRST_SET]
    later = [i for i, r in enumerate(rows) if r["line"] >= FIRST_SET]
    out = {k: v for k, v in full.items() if k != "errors"}
    if later:
        for name, sel in (("first_set", first), ("later_set", later)):
            part = evaluate(router, [rows[i] for i in sel], memory, [vecs[i] for i in sel])
            out[name] = {k: v for k, v in part.items() if k not in ("errors", "confusion")}
    out["errors"] = full["errors"]
    return out


def latency(router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]) -> dict[str, float]:
    """`Router.route` per message on the vectors the turn already has, 3 passes, the first discarded."""
    weights = memory.retriever.weights
    timings, cpu = [], []
    for _ in range(3):
        for row, v in zip(rows, vecs, strict=True):
            cjk = cjk_ratio(row["text"])
            c0 = time.thread_time()
            t0 = time.perf_counter()
            router.route(
                row["text"],
                vectors=v,
                embedders=memory.embedders,
                embedder_weights={n: weights.dense_weight(n, cjk) for n in v},
                similarity=0.3,
                segment_turns=3,
            )
            timings.append((time.perf_counter() - t0) * 1000.0)
            cpu.append((time.thread_time() - c0) * 1000.0)
    timings, cpu = timings[len(rows) :], cpu[len(rows) :]
    q = statistics.quantiles(timings, n=100)
    c = statistics.quantiles(cpu, n=100)
    # Wall time includes waiting for a core on a loaded machine; thread CPU time does not.
    return {
        "p50": round(q[49], 3),
        "p99": round(q[98], 3),
        "max": round(max(timings), 3),
        "cpu_p50": round(c[49], 3),
        "cpu_p99": round(c[98], 3),
        "n": len(timings),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", default=None, help="default: the configured default")
    ap.add_argument(
        "--classifier", type=Path, default=None, help="a classifier file (default: the shipped one)"
    )
    ap.add_argument("--no-grid", action="store_true", help="skip re-tuning the hand-set weights")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = load()
    tune, test = rows[0::2], rows[1::2]
    with tempfile.TemporaryDirectory() as tmp:
        kw: dict[str, Any] = {"home": Path(tmp)}
        if args.embedders:
            kw["embedders"] = args.embedders
        memory = Memory(**kw)
        vecs = [memory.retriever.embed_query(r["text"]) for r in rows]
        tune_v, test_v = vecs[0::2], vecs[1::2]
        protos = Prototypes()
        out: dict[str, Any] = {
            "data": str(DATA.relative_to(DATA.parent.parent.parent)),
            "tune_n": len(tune),
            "test_n": len(test),
        }
        results: dict[str, dict[str, Any]] = {}
        results["cues_only"] = report(Router(), test, memory, test_v)
        results["hand_set_default"] = report(Router(prototypes=protos), test, memory, test_v)
        if not args.no_grid:
            # The hand-set weights re-tuned on the (now larger) tuning half, as before this classifier.
            grid = itertools.product([2.0, 4.0, 6.0, 8.0, 12.0], [0.2, 0.35, 0.5, 0.7], [0.6, 1.0, 1.5])
            best: tuple[float, ModeWeights] | None = None
            for proto, bias, cue in grid:
                w = replace(DEFAULT_WEIGHTS, prototype=proto, casual_bias=bias, cue=cue)
                score = evaluate(Router(prototypes=protos, weights=w), tune, memory, tune_v)["accuracy"]
                if best is None or score > best[0]:
                    best = (score, w)
            assert best is not None
            out["hand_set_tuned_weights"] = {
                "prototype": best[1].prototype,
                "casual_bias": best[1].casual_bias,
                "cue": best[1].cue,
                "tune_accuracy": best[0],
            }
            results["hand_set_tuned"] = report(
                Router(prototypes=protos, weights=best[1]), test, memory, test_v
            )
        classifier = ModeClassifier.load(args.classifier)
        default = Router(prototypes=protos, classifier=classifier)  # what a turn uses (Scheduler)
        out["classifier"] = {k: v for k, v in classifier.meta.items() if k != "dense_blocks"}
        out["classifier_tune_accuracy"] = evaluate(default, tune, memory, tune_v)["accuracy"]
        results["classifier_default"] = report(default, test, memory, test_v)
        out["router_ms"] = latency(default, test, memory, test_v)
        out["router_ms_hand_set"] = latency(Router(prototypes=protos), test, memory, test_v)
        memory.close()
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    out["held_out"] = {k: {kk: vv for kk, vv in v.items() if kk != "errors"} for k, v in results.items()}
    if args.json:
        out["held_out_errors"] = results["classifier_default"]["errors"]
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return
    print(json.dumps(out, ensure_ascii=False, indent=1))
    for text, gold, pred in results["classifier_default"]["errors"]:
        print(f"  {gold:>8} -> {pred:<8} {text}")


if __name__ == "__main__":
    main()
