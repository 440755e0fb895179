"""Mode router accuracy on the labelled set and on the blind set, and the router's own latency.

`tests/data/mode_labelled.txt`: 2988 hand-written messages (zh and en; casual, conflict, comfort,
intimacy; hard cases such as sarcasm, "算了吧", "whatever" marked #hard; the first 944 written before
session 15, the 1200 after them in it, the 844 after those in session 16: topical chatter and
emotional messages that mention a topic). Three figures:

1. **odd half**: the even lines tune (the hand-set weights are re-tuned on them here, a small grid
   over `ModeWeights.prototype`, `casual_bias` and `cue`; a classifier is fitted here on them by
   the recipe of benchmarks/train_mode_classifier.py, its C and weights chosen on them), the odd
   lines are reported: accuracy overall, per language, on hard cases, a confusion matrix, for the
   cue lexicons alone, the hand-set router (cues + prototypes) and the router with that classifier;
   also split into the first 304 messages (the set the earlier figures used) and the ones added later,
   and into the lines before session 16 and the ones it added.
2. **k-fold**: 5 folds over all 2988 lines, grouped so that a message and its translation stay in
   the same fold, each fold's classifier fitted on the other four with the shipped model's C and
   weight (those were chosen on the even lines, so this figure is not fully independent of them);
   also split into the first 944 lines (the earlier k-fold figures), the 1200 added in session 15,
   the 2144 before session 16 and the 844 it added.
3. **blind**: `tests/data/mode_blind.txt`, 200 messages written before the shipped classifier
   existed and never tuned on, routed by the default router of a turn (the shipped classifier,
   fitted on all labelled lines) and, for comparison, by the even-lines classifier. Only its
   figures are printed, never its lines or errors (reading them would make it a tuning set).

Latency: per message, `Router.route` (cues, prototype similarity, classifier, carried state,
signals) on the vectors the turn has already computed (the query embedding is not the router's
cost), after warm-up.

    python benchmarks/mode_accuracy.py            # default embedders (minilm, wordllama, gloss)
    python benchmarks/mode_accuracy.py --json
    python benchmarks/mode_accuracy.py --no-grid --no-blind   # while developing: the blind set untouched
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memsched.classify import ModeClassifier
from memsched.memory import Memory
from memsched.router import DEFAULT_WEIGHTS, MODES, ModeWeights, Prototypes, Router, prototype_weights
from memsched.text.segment import cjk_ratio

sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_mode_classifier, beside this file
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mode_labelled.txt"
BLIND = DATA.parent / "mode_blind.txt"
SHORT = DATA.parent / "mode_short.txt"
SHORT_UNITS_GRID = (0.0, 5.0, 10.0, 15.0, 20.0, 30.0, 50.0)


FIRST_SET = 304  # messages 0..303 are the first labelled set; later ones were added with the classifier
BEFORE_SESSION_15 = 944  # messages 0..943 existed before session 15 added 1200 more
BEFORE_SESSION_16 = 2144  # messages 0..2143 existed before session 16 added topical chatter
BEFORE_SESSION_17 = (
    2988  # messages 0..2987 existed before session 17 added more (characters, facts, memories)
)


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


def predict(router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]) -> list[str]:
    """The router's mode for each message, on the vectors a turn computes for it."""
    pred = []
    for row, v in zip(rows, vecs, strict=True):
        cjk = cjk_ratio(row["text"])
        r = router.route(
            row["text"],
            vectors=v,
            embedders=memory.embedders,
            embedder_weights=prototype_weights(v, cjk),
        )
        pred.append(r.mode)
    return pred


def evaluate(router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]) -> dict[str, Any]:
    return summarise(rows, predict(router, rows, memory, vecs))


def summarise(rows: list[dict[str, Any]], pred: list[str]) -> dict[str, Any]:
    """Accuracy overall, per language and on hard cases, the confusion matrix and the errors."""
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
    """`evaluate` on the held-out rows, also split into the first set (lines 1-304) and the later one,
    and into the lines before session 16 and the topical ones it added."""
    full = evaluate(router, rows, memory, vecs)
    first = [i for i, r in enumerate(rows) if r["line"] < FIRST_SET]
    later = [i for i, r in enumerate(rows) if r["line"] >= FIRST_SET]
    before_16 = [i for i, r in enumerate(rows) if r["line"] < BEFORE_SESSION_16]
    added_16 = [i for i, r in enumerate(rows) if BEFORE_SESSION_16 <= r["line"] < BEFORE_SESSION_17]
    added_17 = [i for i, r in enumerate(rows) if r["line"] >= BEFORE_SESSION_17]
    out = {k: v for k, v in full.items() if k != "errors"}
    if later:
        for name, sel in (
            ("first_set", first),
            ("later_set", later),
            ("before_session_16", before_16),
            ("added_session_16", added_16),
            ("added_session_17", added_17),
        ):
            part = evaluate(router, [rows[i] for i in sel], memory, [vecs[i] for i in sel])
            out[name] = {k: v for k, v in part.items() if k not in ("errors", "confusion")}
    out["errors"] = full["errors"]
    return out


def latency(router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]) -> dict[str, float]:
    """`Router.route` per message on the vectors the turn already has, 3 passes, the first discarded."""
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
                embedder_weights=prototype_weights(v, cjk),
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


def grouped_fold_models(
    memory: Memory,
    rows: list[dict[str, Any]],
    vecs: list[Any],
    c: float,
    meta: dict[str, Any],
    nb: tuple[float, float],
) -> list[tuple[list[int], ModeClassifier]]:
    """One classifier per grouped fold of `rows` (a message and its translation on the same side),
    each fitted on the other folds with C `c`, stacking weight in `meta` and naive Bayes (alpha,
    weight) `nb`: (positions held out, model)."""
    from train_mode_classifier import embedder_ids, features, fit, folds, groups

    feats = features(memory, rows, vecs)
    model_ids, dims = embedder_ids(memory)
    out: list[tuple[list[int], ModeClassifier]] = []
    for held in folds(groups(rows)):
        held_set = set(held)
        tr = [i for i in range(len(rows)) if i not in held_set]
        model = fit(
            [rows[i]["text"] for i in tr],
            [rows[i]["mode"] for i in tr],
            [feats[i] for i in tr],
            model_ids,
            dims,
            c,
            meta,
            nb=nb,
        )
        out.append((held, model))
    return out


def short_replies(
    memory: Memory,
    rows: list[dict[str, Any]],
    vecs: list[Any],
    classifier: ModeClassifier,
    protos: Prototypes,
    recipe: dict[str, Any],
) -> dict[str, Any]:
    """`ModeWeights.short_units` chosen on tuning lines only and reported on held-out ones.

    Tuning: the labelled set's even lines, each routed by a classifier that did not see it (grouped
    5-fold over the even lines with the even-lines recipe), pooled with tests/data/mode_short.txt's
    even lines (routed by the even-lines classifier `classifier`); the value with the best pooled
    accuracy wins (ties: the smaller). Reported: the short set's odd lines; the labelled odd half is
    reported by the caller with the shipped value and with 0 (off)."""
    short = load(SHORT)
    short_v = [memory.retriever.embed_query(r["text"]) for r in short]
    even, even_v = rows[0::2], vecs[0::2]
    fold_models = grouped_fold_models(
        memory,
        even,
        even_v,
        float(recipe["C"]),
        recipe,
        (float(recipe["nb_alpha"]), float(recipe["nb_weight"])),
    )
    out: dict[str, Any] = {"data": str(SHORT.relative_to(DATA.parent.parent.parent)), "grid": {}}
    for units in SHORT_UNITS_GRID:
        w = replace(DEFAULT_WEIGHTS, short_units=units)
        right = 0
        for held, model in fold_models:
            got = predict(
                Router(prototypes=protos, classifier=model, weights=w),
                [even[i] for i in held],
                memory,
                [even_v[i] for i in held],
            )
            right += sum(g == even[i]["mode"] for g, i in zip(got, held, strict=True))
        router = Router(prototypes=protos, classifier=classifier, weights=w)
        s_even = evaluate(router, short[0::2], memory, short_v[0::2])["accuracy"]
        pooled = (right + s_even * len(short[0::2])) / (len(even) + len(short[0::2]))
        out["grid"][str(units)] = {
            "labelled_even_out_of_fold": round(right / len(even), 4),
            "short_even": s_even,
            "pooled_tuning": round(pooled, 4),
            "short_odd": evaluate(router, short[1::2], memory, short_v[1::2])["accuracy"],
        }
    out["chosen_on_tuning"] = max(SHORT_UNITS_GRID, key=lambda u: (out["grid"][str(u)]["pooled_tuning"], -u))
    out["shipped"] = DEFAULT_WEIGHTS.short_units
    return out


def kfold(
    memory: Memory, rows: list[dict[str, Any]], vecs: list[Any], shipped: ModeClassifier, protos: Prototypes
) -> dict[str, Any]:
    """Grouped 5-fold cross-validation over every labelled line, with the shipped model's C, naive
    Bayes weight and stacking weight."""
    pred: list[str] = [""] * len(rows)
    nb = (float(shipped.meta.get("nb_alpha", 1.0)), float(shipped.meta.get("nb_weight", 0.0)))
    for held, model in grouped_fold_models(
        memory, rows, vecs, float(shipped.meta["C"]), {"weight": shipped.weight}, nb
    ):
        got = predict(
            Router(prototypes=protos, classifier=model),
            [rows[i] for i in held],
            memory,
            [vecs[i] for i in held],
        )
        for i, p in zip(held, got, strict=True):
            pred[i] = p
    out = summarise(rows, pred)
    out.pop("errors")
    for name, sel in (
        ("first_944", slice(0, BEFORE_SESSION_15)),
        ("added_session_15", slice(BEFORE_SESSION_15, BEFORE_SESSION_16)),
        ("before_session_16", slice(0, BEFORE_SESSION_16)),
        ("added_session_16", slice(BEFORE_SESSION_16, BEFORE_SESSION_17)),
        ("added_session_17", slice(BEFORE_SESSION_17, None)),
    ):
        part = summarise(rows[sel], pred[sel])
        out[name] = {k: v for k, v in part.items() if k not in ("errors", "confusion")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", default=None, help="default: the configured default")
    ap.add_argument(
        "--classifier", type=Path, default=None, help="a classifier file (default: the shipped one)"
    )
    ap.add_argument("--no-grid", action="store_true", help="skip re-tuning the hand-set weights")
    ap.add_argument("--no-kfold", action="store_true", help="skip the k-fold figure")
    ap.add_argument(
        "--c", type=float, default=None, help="the even-lines classifier's C (default: chosen by its recipe)"
    )
    ap.add_argument(
        "--no-blind",
        action="store_true",
        help="do not score the blind set (while developing: each scoring of it is counted in BENCHMARKS.md)",
    )
    ap.add_argument(
        "--no-odd",
        action="store_true",
        help="skip the odd half (the even-lines classifier): only the shipped model's k-fold and blind figures",
    )
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
        from train_mode_classifier import features, train

        classifier = ModeClassifier.load(args.classifier)  # the shipped one: fitted on all lines
        default = Router(prototypes=protos, classifier=classifier)  # what a turn uses (Scheduler)
        out["classifier"] = {k: v for k, v in classifier.meta.items() if k != "dense_blocks"}
        # The odd half needs a classifier that never saw it: the same recipe on the even lines.
        even: Router | None = None
        if not args.no_odd:
            even_model, even_meta = train(
                memory, rows, lines="even", c=args.c, feats=features(memory, rows, vecs)
            )
            even = Router(prototypes=protos, classifier=even_model)
            out["classifier_even"] = {k: v for k, v in even_meta.items() if k != "dense_blocks"}
            out["classifier_even_tune_accuracy"] = evaluate(even, tune, memory, tune_v)["accuracy"]
            results["classifier_even_lines"] = report(even, test, memory, test_v)
            off = replace(DEFAULT_WEIGHTS, short_units=0.0)  # before session 18
            results["classifier_even_lines_short_units_off"] = report(
                Router(prototypes=protos, classifier=even_model, weights=off), test, memory, test_v
            )
            out["short_replies"] = short_replies(memory, rows, vecs, even_model, protos, even_meta)
        if not args.no_kfold:
            out["kfold"] = kfold(memory, rows, vecs, classifier, protos)
        if not args.no_blind:
            blind = load(BLIND)
            blind_v = [memory.retriever.embed_query(r["text"]) for r in blind]
            out["blind"] = {
                "data": str(BLIND.relative_to(DATA.parent.parent.parent)),
                "hand_set_default": evaluate(Router(prototypes=protos), blind, memory, blind_v),
                "default": evaluate(default, blind, memory, blind_v),
            }
            if even is not None:
                out["blind"]["classifier_even_lines"] = evaluate(even, blind, memory, blind_v)
        out["router_ms"] = latency(default, test, memory, test_v)
        out["router_ms_hand_set"] = latency(Router(prototypes=protos), test, memory, test_v)
        memory.close()
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    out["held_out"] = {k: {kk: vv for kk, vv in v.items() if kk != "errors"} for k, v in results.items()}
    # The blind set's own lines are never printed: reading its errors would make it a tuning set.
    errors = {"odd": results["classifier_even_lines"]["errors"]} if "classifier_even_lines" in results else {}
    for v in out.get("blind", {}).values():
        if isinstance(v, dict):
            v.pop("errors", None)
    if args.json:
        out["errors"] = errors
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return
    print(json.dumps(out, ensure_ascii=False, indent=1))
    for name, errs in errors.items():
        print(f"{name} errors:")
        for text, gold, pred in errs:
            print(f"  {gold:>8} -> {pred:<8} {text}")


if __name__ == "__main__":
    main()
