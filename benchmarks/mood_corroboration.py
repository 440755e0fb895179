"""How far above casual an uncued conflict reading must be to count as evidence of an argument.

The router reads a message with no cue word by its learned parts alone (prototypes, classifier), which
misread neutral talk now and then ("What do you know about me?", "我现在住在成都" as conflict), so such
a reading sets no mood (memsched.mood.update). An argument without a cue word ("Seriously? You forgot
again." then "Don't even talk to me right now.") still has to carry to the next morning: the router
corroborates an uncued conflict reading that repeats the previous message's, when both stand at least
`ModeWeights.corroborate_margin` above casual on their own evidence (`ModeDecision.own_margin`).

The margin is chosen here on the labelled set's even lines, each read by a classifier that did not see
it (grouped 5-fold over the even lines, the even-lines recipe of benchmarks/mode_accuracy.py): among
the messages with no cue word that the router reads as conflict, the smallest margin above which they
are labelled conflict at least as often as the conflict readings a cue word backs are (a corroborated
reading counts as one cue word, so it must be as reliable as one). Reported on the odd lines, read by
the even-lines classifier: of the uncued conflict readings, how many are labelled conflict (precision)
above the margin, and what share of the labelled-conflict ones it keeps (recall); the cued readings'
precision beside them. The blind set is not read here. `--locomo`: how often the shipped router would
corroborate in LoCoMo dev's friendly chats (an out-of-domain check; not used to choose).

    python benchmarks/mood_corroboration.py --c 30 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from memsched.classify import ModeClassifier
from memsched.memory import Memory
from memsched.router import DEFAULT_WEIGHTS, Prototypes, Router, prototype_weights
from memsched.text.segment import cjk_ratio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_accuracy import grouped_fold_models, load

GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0)
LOCOMO = Path("/work/shared/data/locomo/locomo-dev.json")


def locomo_corroborations(router: Router, memory: Memory, margins: tuple[float, ...]) -> dict[str, Any]:
    """On LoCoMo dev (long friendly chats between two friends, English), each speaker's messages of a
    session read in order as one user's: how many messages the router reads as conflict, with and
    without a cue word, and how many would be corroborated at each margin (consecutive uncued conflict
    readings both at least that far above casual) — an estimate of how often a friendly chat would
    get an upset mood from the rule. The corroborated lines are listed, to be read."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    out: dict[str, Any] = {"messages": 0, "conflict_cued": 0, "conflict_uncued": 0, "corroborated": {}}
    lines: dict[str, list[list[str]]] = {str(m): [] for m in margins}
    counts = dict.fromkeys(margins, 0)
    for conv in data:
        c = conv["conversation"]
        sessions = sorted(
            (k for k in c if k.startswith("session_") and isinstance(c[k], list)),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in sessions:
            for speaker in {t["speaker"] for t in c[key]}:
                prev: tuple[str, float, str] | None = None
                for turn in c[key]:
                    if turn["speaker"] != speaker or not turn.get("text"):
                        continue
                    text = turn["text"]
                    v = memory.retriever.embed_query(text)
                    r = router.route(
                        text,
                        vectors=v,
                        embedders=memory.embedders,
                        embedder_weights=prototype_weights(v, cjk_ratio(text)),
                    )
                    out["messages"] += 1
                    if r.own_mode == "conflict":
                        out["conflict_cued" if r.mood_cued else "conflict_uncued"] += 1
                    now = (
                        (r.own_mode, r.own_margin, text)
                        if r.own_mode == "conflict" and not r.mood_cued
                        else None
                    )
                    if now and prev:
                        for m in margins:
                            if now[1] >= m and prev[1] >= m:
                                counts[m] += 1
                                lines[str(m)].append([prev[2], text])
                    prev = now if now else (("cued", 9.9, text) if r.own_mode == "conflict" else None)
    out["corroborated"] = {str(m): counts[m] for m in margins}
    out["corroborated_lines"] = lines
    return out


def readings(
    router: Router, rows: list[dict[str, Any]], memory: Memory, vecs: list[Any]
) -> tuple[list[tuple[float, bool]], list[bool]]:
    """(own margin, labelled conflict) of each message the router reads as conflict with no cue word,
    and (labelled conflict) of each one it reads as conflict with a cue word for the user's mood."""
    uncued, cued = [], []
    for row, v in zip(rows, vecs, strict=True):
        r = router.route(
            row["text"],
            vectors=v,
            embedders=memory.embedders,
            embedder_weights=prototype_weights(v, cjk_ratio(row["text"])),
        )
        if r.own_mode == "conflict":
            if r.mood_cued:
                cued.append(row["mode"] == "conflict")
            else:
                uncued.append((r.own_margin, row["mode"] == "conflict"))
    return uncued, cued


def summary(found: list[tuple[float, bool]], t: float) -> dict[str, Any]:
    kept = [g for m, g in found if m >= t]
    positives = sum(g for _, g in found)
    return {
        "uncued_conflict_readings": len(found),
        "trusted": len(kept),
        "precision_trusted": round(sum(kept) / len(kept), 3) if kept else None,
        "recall_of_labelled_conflict": round(sum(kept) / positives, 3) if positives else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--c", type=float, default=None, help="the even-lines classifier's C (default: its recipe's)"
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--locomo", action="store_true", help=f"also count corroborations on {LOCOMO}")
    args = ap.parse_args()
    from train_mode_classifier import features, train

    rows = load()
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(home=Path(tmp))
        vecs = [memory.retriever.embed_query(r["text"]) for r in rows]
        protos = Prototypes()
        model, meta = train(memory, rows, lines="even", c=args.c, feats=features(memory, rows, vecs))
        even, even_v = rows[0::2], vecs[0::2]
        tune: list[tuple[float, bool]] = []
        tune_cued: list[bool] = []
        for held, fold_model in grouped_fold_models(
            memory, even, even_v, float(meta["C"]), meta, (float(meta["nb_alpha"]), float(meta["nb_weight"]))
        ):
            router = Router(prototypes=protos, classifier=fold_model)
            got, got_cued = readings(router, [even[i] for i in held], memory, [even_v[i] for i in held])
            tune += got
            tune_cued += got_cued
        test, test_cued = readings(
            Router(prototypes=protos, classifier=model), rows[1::2], memory, vecs[1::2]
        )
        locomo = (
            locomo_corroborations(Router(prototypes=protos, classifier=ModeClassifier.load()), memory, GRID)
            if args.locomo and LOCOMO.exists()
            else None
        )
        memory.close()
    grid = {str(t): summary(tune, t) for t in GRID}
    # A corroborated reading counts as one cue word, so it must be as reliable as one: the smallest
    # margin whose trusted readings are labelled conflict at least as often as the cued ones are.
    cue_precision = sum(tune_cued) / len(tune_cued)
    ok = [t for t in GRID if (grid[str(t)]["precision_trusted"] or 0.0) >= cue_precision]
    chosen = min(ok) if ok else max(GRID)
    out = {
        "tuning_even_out_of_fold": {
            "cued_conflict_readings": len(tune_cued),
            "cued_precision": round(cue_precision, 3),
            "grid": grid,
        },
        "chosen_on_tuning": chosen,
        "shipped": DEFAULT_WEIGHTS.corroborate_margin,
        "odd_half": {
            "cued_conflict_readings": len(test_cued),
            "cued_precision": round(sum(test_cued) / len(test_cued), 3) if test_cued else None,
            "margin_0": summary(test, 0.0),
            "chosen": summary(test, chosen),
            "shipped": "off"
            if DEFAULT_WEIGHTS.corroborate_margin is None
            else summary(test, DEFAULT_WEIGHTS.corroborate_margin),
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if locomo is not None:
        out["locomo_dev_shipped_classifier"] = locomo
    print(json.dumps(out, ensure_ascii=False, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
