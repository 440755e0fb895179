"""Mode router accuracy on the labelled set, and the router's own latency.

`tests/data/mode_labelled.txt`: 304 hand-written messages (zh and en; casual, conflict, comfort,
intimacy; hard cases such as sarcasm, "算了吧", "whatever" marked #hard). The even lines tune the
router's weights (a small grid over `ModeWeights.prototype`, `casual_bias` and `cue`); the odd lines
are reported with the best tuned weights: accuracy overall, per language, on hard cases, and a
confusion matrix. The cue lexicons alone (no prototypes) are reported as the baseline.

Latency: per message, `Router.route` (cues, prototype similarity, carried state, signals) on the
vectors the turn has already computed (the query embedding is not the router's cost), after warm-up.

    python benchmarks/mode_accuracy.py            # default embedders (minilm, wordllama)
    python benchmarks/mode_accuracy.py --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memsched.memory import Memory
from memsched.router import DEFAULT_WEIGHTS, MODES, ModeWeights, Prototypes, Router
from memsched.text.segment import cjk_ratio

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mode_labelled.txt"


def load(path: Path = DATA) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        mode, lang, text = line.split("|", 2)
        hard = text.endswith(" #hard")
        rows.append({"mode": mode, "lang": lang, "text": text.removesuffix(" #hard"), "hard": hard})
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", default=None, help="default: the configured default")
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
        baseline = evaluate(Router(), test, memory, test_v)  # cue lexicons only
        grid = itertools.product([2.0, 4.0, 6.0, 8.0, 12.0], [0.2, 0.35, 0.5, 0.7], [0.6, 1.0, 1.5])
        best: tuple[float, ModeWeights] | None = None
        for proto, bias, cue in grid:
            w = replace(DEFAULT_WEIGHTS, prototype=proto, casual_bias=bias, cue=cue)
            score = evaluate(Router(prototypes=protos, weights=w), tune, memory, tune_v)["accuracy"]
            if best is None or score > best[0]:
                best = (score, w)
        assert best is not None
        tuned = Router(prototypes=protos, weights=best[1])
        default = evaluate(Router(prototypes=protos), test, memory, test_v)
        held_out = evaluate(tuned, test, memory, test_v)

        # Router latency on the held-out messages (vectors already computed by the turn).
        weights = memory.retriever.weights
        timings = []
        for _ in range(3):
            for row, v in zip(test, test_v, strict=True):
                cjk = cjk_ratio(row["text"])
                t0 = time.perf_counter()
                Router.route(
                    tuned,
                    row["text"],
                    vectors=v,
                    embedders=memory.embedders,
                    embedder_weights={n: weights.dense_weight(n, cjk) for n in v},
                    similarity=0.3,
                    segment_turns=3,
                )
                timings.append((time.perf_counter() - t0) * 1000.0)
        timings = timings[len(test) :]  # the first pass warms up
        q = statistics.quantiles(timings, n=100)
        memory.close()
    out = {
        "data": str(DATA.relative_to(DATA.parent.parent.parent)),
        "tune_n": len(tune),
        "test_n": len(test),
        "tuned_weights": {
            "prototype": best[1].prototype,
            "casual_bias": best[1].casual_bias,
            "cue": best[1].cue,
        },
        "tune_accuracy": best[0],
        "held_out_cues_only": {k: v for k, v in baseline.items() if k != "errors"},
        "held_out_default_weights": {k: v for k, v in default.items() if k != "errors"},
        "held_out_tuned": {k: v for k, v in held_out.items() if k != "errors"},
        "held_out_errors": held_out["errors"],
        "router_ms": {"p50": round(q[49], 3), "p99": round(q[98], 3), "n": len(timings)},
    }
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return
    print(json.dumps({k: v for k, v in out.items() if k != "held_out_errors"}, ensure_ascii=False, indent=1))
    for text, gold, pred in held_out["errors"]:
        print(f"  {gold:>8} -> {pred:<8} {text}")


if __name__ == "__main__":
    main()
