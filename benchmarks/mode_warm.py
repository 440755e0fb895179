"""How the mode router reads warm and neutral second-person talk (tests/data/mode_warm.txt).

The session-20 classifier read warm "you" sentences ("thanks, you saved me loads of time", "你讲东西真的
太清楚了") as conflict, which keeps corroboration of uncued conflict readings off
(`ModeWeights.corroborate_margin`, BENCHMARKS.md "Conversation mode", sessions 20 and 21). This routes
the probe's lines, one message at a time with no carried state, on the vectors a turn computes, with
the shipped classifier (or `--classifier`), and prints the confusion per language: rows the labelled
mode, columns the router's. The lines are not training data; do not tune on them without saying so.

    python benchmarks/mode_warm.py [--classifier FILE] [--json]
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
from memsched.router import MODES, Prototypes, Router

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_accuracy import load, predict

WARM = Path(__file__).resolve().parent.parent / "tests" / "data" / "mode_warm.txt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classifier", type=Path, default=None, help="default: the shipped one")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = load(WARM)
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(home=Path(tmp))
        vecs = [memory.retriever.embed_query(r["text"]) for r in rows]
        router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load(args.classifier))
        pred = predict(router, rows, memory, vecs)
        memory.close()
    out: dict[str, Any] = {"data": str(WARM.relative_to(WARM.parent.parent.parent)), "n": len(rows)}
    for lang in ("zh", "en"):
        confusion = {m: dict.fromkeys(MODES, 0) for m in MODES}
        for r, p in zip(rows, pred, strict=True):
            if r["lang"] == lang:
                confusion[r["mode"]][p] += 1
        sel = [p == r["mode"] for r, p in zip(rows, pred, strict=True) if r["lang"] == lang]
        out[lang] = {"accuracy": round(sum(sel) / len(sel), 3), "confusion": confusion}
    out["accuracy"] = round(sum(p == r["mode"] for r, p in zip(rows, pred, strict=True)) / len(rows), 3)
    out["casual_read_as_conflict"] = {
        lang: sum(
            1
            for r, p in zip(rows, pred, strict=True)
            if (r["mode"], r["lang"], p) == ("casual", lang, "conflict")
        )
        for lang in ("zh", "en")
    }
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, ensure_ascii=False, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
