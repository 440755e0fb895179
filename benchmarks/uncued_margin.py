"""How far above casual a mode read with no cue word for it would have to stand to route the turn
(issue 7, BENCHMARKS.md "Conversation mode", session 22: measured, not shipped; the router has no
such rule, it is applied here to each line's scores).

The learned parts (prototypes, classifier) read some neutral lines as a mode by a hair ("What do you
know about me?", "我现在住在成都" as conflict by 0.02-0.4 over casual), and the turn then got that
mode's strategy (conflict: the repair voice). The rule: such a reading routes the turn only when it
stands at least M above casual; below M it is not eligible and the turn goes to the best mode that
is (casual, unless another mode passes). One margin per mode, each chosen alone (the other two off) on
tuning lines only:

- the labelled set's even lines (tests/data/mode_labelled.txt), each routed by a classifier that did
  not see it (grouped 5-fold over the even lines with the even-lines recipe, as
  benchmarks/mode_accuracy.py's `short_replies` does), pooled with
- the even lines of the warm probe (tests/data/mode_warm.txt: warm casual "you" lines the labelled
  set lacks, and hostile or sarcastic lines with no cue word), routed by the even-lines classifier
  (which never saw a probe line).

The value with the best pooled accuracy wins (ties: the smaller). Reported, never tuned on: the odd
lines of both (the even-lines classifier), the short replies' odd lines (tests/data/mode_short.txt),
and how many of LoCoMo dev's messages (friendly chats, English; every message, no carried state) the
shipped router routes to conflict with no conflict cue word (nearly all of them false). The blind set
is not read. Each line is routed once by the router as it is (no carried state) and the rule is
applied to its scores (`routed`). Also printed: the margins of the lines a walk through `memsched
serve` found routed to conflict by a hair (shipped model), and two rules without a constant that need
the prototypes to lean to conflict too (`VARIANTS`).

    python benchmarks/uncued_margin.py --c 30 [--json] [--models DIR]   # DIR: keep the fitted models
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memsched.classify import ModeClassifier
from memsched.memory import Memory
from memsched.router import MODES, Prototypes, Router, prototype_weights
from memsched.text.segment import cjk_ratio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_accuracy import DATA, SHORT, grouped_fold_models, load

WARM = DATA.parent / "mode_warm.txt"
LOCOMO = Path("/work/shared/data/locomo/locomo-dev.json")
GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)
Margins = dict[str, float]  # mode -> the margin an uncued reading of it needs (absent: none)
OFF: Margins = {}
# The lines of the walk through `memsched serve` that were routed to conflict by a hair.
WALK = (
    "What do you know about me?",
    "我现在住在成都",
    "he never listens to me",
    "I'm allergic to cats, sadly. And I don't eat shellfish.",
)


def reading(router: Router, text: str, memory: Memory, v: dict[str, Any]) -> dict[str, Any]:
    """The message's scores with the rule off (no carried state: the message's own evidence) and the
    modes a cue word names."""
    r = router.route(
        text, vectors=v, embedders=memory.embedders, embedder_weights=prototype_weights(v, cjk_ratio(text))
    )
    return {
        "scores": dict(r.mode_scores),
        "cues": {m: r.cues.get(m, []) for m in MODES},
        "mode": r.mode,
        # How far each learned source puts each mode above casual.
        "sources": {
            src: {m: r.evidence[src].get(m, 0.0) - r.evidence[src].get("casual", 0.0) for m in MODES[1:]}
            for src in ("prototypes", "classifier")
        },
    }


def held_back(rd: dict[str, Any], w: Margins) -> set[str]:
    """The modes the message's scores put above casual with no cue word for them, by less than their
    margin in `w`."""
    out = set()
    for mode, need in w.items():
        lead = rd["scores"][mode] - rd["scores"]["casual"]
        if not rd["cues"][mode] and 0.0 < lead < need:
            out.add(mode)
    return out


def routed(rd: dict[str, Any], w: Margins) -> str:
    """The mode for a reading under margins `w` (no carried state): the best one not held back, ties
    to the earlier in MODES (the router's order; with no margins, the router's own mode)."""
    held = held_back(rd, w)
    return max((m for m in MODES if m not in held), key=lambda m: (rd["scores"][m], -MODES.index(m)))


def agreeing(rd: dict[str, Any], floor: float) -> str:
    """A rule with no margin: an uncued conflict reading needs the prototypes, not only the
    classifier, to put conflict more than `floor` above casual."""
    scores = rd["scores"]
    bad = (
        {"conflict"}
        if not rd["cues"]["conflict"] and rd["sources"]["prototypes"]["conflict"] <= floor
        else set()
    )
    return max((m for m in MODES if m not in bad), key=lambda m: (scores[m], -MODES.index(m)))


VARIANTS = {"prototypes lean to conflict (> 0)": 0.0, "prototypes lean to conflict (> 0.1)": 0.1}


def figures(rows: list[dict[str, Any]], rds: list[dict[str, Any]], w: Margins | float) -> dict[str, Any]:
    """Accuracy overall, per language, on hard cases; lines routed to conflict not labelled so (false
    conflict), casual lines among them, conflict lines routed elsewhere (missed). `w`: margins, or a
    float: the `agreeing` rule with that floor."""
    pred = [agreeing(rd, w) if isinstance(w, float) else routed(rd, w) for rd in rds]
    ok = [p == r["mode"] for p, r in zip(pred, rows, strict=True)]

    def acc(sel: list[bool]) -> float | None:
        got = [o for o, s in zip(ok, sel, strict=True) if s]
        return round(sum(got) / len(got), 4) if got else None

    return {
        "n": len(rows),
        "right": sum(ok),
        "accuracy": acc([True] * len(rows)),
        "zh": acc([r["lang"] == "zh" for r in rows]),
        "en": acc([r["lang"] == "en" for r in rows]),
        "hard": acc([r["hard"] for r in rows]),
        "false_conflict": sum(p == "conflict" != r["mode"] for p, r in zip(pred, rows, strict=True)),
        "casual_to_conflict": sum(
            (r["mode"], p) == ("casual", "conflict") for p, r in zip(pred, rows, strict=True)
        ),
        "conflict_missed": sum(r["mode"] == "conflict" != p for p, r in zip(pred, rows, strict=True)),
    }


def locomo_readings(router: Router, memory: Memory) -> list[dict[str, Any]]:
    """Every LoCoMo dev message read on its own evidence (its text only; images' captions left out)."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    out = []
    for conv in data:
        c = conv["conversation"]
        for key in sorted(k for k in c if k.startswith("session_") and isinstance(c[k], list)):
            for turn in c[key]:
                if turn.get("text"):
                    v = memory.retriever.embed_query(turn["text"])
                    out.append(reading(router, turn["text"], memory, v) | {"text": turn["text"]})
    return out


def uncued_counts(rds: list[dict[str, Any]], w: Margins | float) -> dict[str, int]:
    """Per mode, the messages routed to it with no cue word of it."""
    out = dict.fromkeys(MODES[1:], 0)
    for rd in rds:
        m = agreeing(rd, w) if isinstance(w, float) else routed(rd, w)
        if m != "casual" and not rd["cues"][m]:
            out[m] += 1
    return out


def fitted_models(
    memory: Memory, rows: list[dict[str, Any]], vecs: list[Any], c: float | None, keep: Path | None
) -> tuple[ModeClassifier, list[tuple[list[int], ModeClassifier]]]:
    """The even-lines classifier and the grouped-fold ones over the even lines (kept in `keep`, if
    given, and loaded from there when present: the fits take minutes)."""
    from train_mode_classifier import features, train

    if keep is not None and (keep / "even.npz").exists():
        even_model = ModeClassifier.load(keep / "even.npz")
        held = json.loads((keep / "folds.json").read_text())
        folds = [(h, ModeClassifier.load(keep / f"fold{i}.npz")) for i, h in enumerate(held)]
        return even_model, folds
    even_model, meta = train(memory, rows, lines="even", c=c, feats=features(memory, rows, vecs))
    folds = grouped_fold_models(
        memory,
        rows[0::2],
        vecs[0::2],
        float(meta["C"]),
        meta,
        (float(meta["nb_alpha"]), float(meta["nb_weight"])),
    )
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        even_model.save(keep / "even.npz")
        for i, (_, model) in enumerate(folds):
            model.save(keep / f"fold{i}.npz")
        (keep / "folds.json").write_text(json.dumps([h for h, _ in folds]))
    return even_model, folds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--c", type=float, default=None, help="the even-lines classifier's C (default: its recipe's)"
    )
    ap.add_argument("--models", type=Path, default=None, help="keep / reuse the fitted models in this folder")
    ap.add_argument("--no-locomo", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    rows, warm, short = load(), load(WARM), load(SHORT)
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(home=Path(tmp))
        vecs = [memory.retriever.embed_query(r["text"]) for r in rows]
        warm_v = [memory.retriever.embed_query(r["text"]) for r in warm]
        short_v = [memory.retriever.embed_query(r["text"]) for r in short]
        protos = Prototypes()
        even_model, folds = fitted_models(memory, rows, vecs, args.c, args.models)
        even, even_v = rows[0::2], vecs[0::2]
        # Tuning readings: each labelled even line by the fold model that did not see it.
        tune_rds: list[dict[str, Any]] = [{}] * len(even)
        for held, model in folds:
            router = Router(prototypes=protos, classifier=model)
            for i in held:
                tune_rds[i] = reading(router, even[i]["text"], memory, even_v[i])
        router = Router(prototypes=protos, classifier=even_model)
        odd_rds = [reading(router, r["text"], memory, v) for r, v in zip(rows[1::2], vecs[1::2], strict=True)]
        warm_rds = [reading(router, r["text"], memory, v) for r, v in zip(warm, warm_v, strict=True)]
        short_rds = [reading(router, r["text"], memory, v) for r, v in zip(short, short_v, strict=True)]
        shipped = Router(prototypes=protos, classifier=ModeClassifier.load())
        walk = [(t, reading(shipped, t, memory, memory.retriever.embed_query(t))) for t in WALK]
        loco = [] if args.no_locomo or not LOCOMO.exists() else locomo_readings(shipped, memory)
        sets = {
            "labelled_even_out_of_fold": (even, tune_rds),
            "warm_even": (warm[0::2], warm_rds[0::2]),
            "labelled_odd": (rows[1::2], odd_rds),
            "warm_odd": (warm[1::2], warm_rds[1::2]),
            "short_odd": (short[1::2], short_rds[1::2]),
        }
        out: dict[str, Any] = {"grid": {}, "chosen_on_tuning": {}}
        for mode in MODES[1:]:
            grid = {}
            for m in GRID:
                w = {mode: m}
                row = {name: figures(rs, rds, w) for name, (rs, rds) in sets.items()}
                tuned = row["labelled_even_out_of_fold"]["right"] + row["warm_even"]["right"]
                row["pooled_tuning"] = round(tuned / (len(even) + len(warm[0::2])), 4)
                if loco:
                    row["locomo_uncued"] = uncued_counts(loco, w)
                grid[str(m)] = row
            out["grid"][mode] = grid
            # The best pooled tuning accuracy; ties to the smaller margin.
            best = max(grid.items(), key=lambda kv: (kv[1]["pooled_tuning"], -float(kv[0])))
            out["chosen_on_tuning"][mode] = float(best[0])
        chosen = {m: v for m, v in out["chosen_on_tuning"].items() if v}
        out["together"] = {
            "margins": chosen,
            **{name: figures(rs, rds, chosen) for name, (rs, rds) in sets.items()},
        }
        out["variants"] = {
            name: {
                **{k: figures(rs, rds, floor) for k, (rs, rds) in sets.items()},
                **({"locomo_uncued": uncued_counts(loco, floor)} if loco else {}),
            }
            for name, floor in VARIANTS.items()
        }
        if loco:
            out["locomo_dev"] = {
                "messages": len(loco),
                "uncued_routings_now": uncued_counts(loco, OFF),
            }
        out["walk_shipped_model"] = {
            t: {
                "mode": rd["mode"],
                "lead_over_casual": {
                    m: round(rd["scores"][m] - rd["scores"]["casual"], 3) for m in MODES[1:]
                },
            }
            for t, rd in walk
        }
        memory.close()
    out["seconds"] = round(time.time() - t0)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return
    for mode in MODES[1:]:
        print(f"uncued_{mode}: chosen on tuning {out['chosen_on_tuning'][mode]}")
        print(
            "  M     | lab even oof | warm even (fc) | pooled | lab odd (zh/en/hard) | warm odd (fc) | short odd | locomo"
        )
        for m, row in out["grid"][mode].items():
            lo, wo = row["labelled_odd"], row["warm_odd"]
            print(
                f"  {m:5} | {row['labelled_even_out_of_fold']['accuracy']:.4f}       "
                f"| {row['warm_even']['accuracy']:.3f} ({row['warm_even']['false_conflict']:2d})     "
                f"| {row['pooled_tuning']:.4f} | {lo['accuracy']:.4f} ({lo['zh']}/{lo['en']}/{lo['hard']}) "
                f"| {wo['accuracy']:.3f} ({wo['false_conflict']:2d})    | {row['short_odd']['accuracy']:.3f}     "
                f"| {row.get('locomo_uncued', {}).get(mode, '-')}"
            )
    for name in VARIANTS:
        v = out["variants"][name]
        print(
            f"{name}: labelled even oof {v['labelled_even_out_of_fold']['accuracy']}, warm even "
            f"{v['warm_even']['accuracy']} ({v['warm_even']['false_conflict']}), labelled odd "
            f"{v['labelled_odd']['accuracy']}, warm odd {v['warm_odd']['accuracy']} "
            f"({v['warm_odd']['false_conflict']}), short odd {v['short_odd']['accuracy']}, "
            f"locomo {v.get('locomo_uncued', {}).get('conflict', '-')}"
        )
    rest = {k: v for k, v in out.items() if k not in ("grid", "variants")}
    print(json.dumps(rest, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
