"""Which voice (strategy) each message would get, with and without `backed` in the strategy table.

The strong voices (repair, comfort, intimacy: "There is tension in the conversation...", "The user is
having a hard time...") need a mode that more than the learned parts' reading of the message backs
(`Route.backed`: a cue word, a corroborated reading, the carried state); a mode read by the learned
parts alone gets an `attentive_*` voice that leans the way of the reading without assuming the feeling
(memsched/strategies.toml). This counts, one message at a time with no carried state (the strategy as
the message's own turn would choose it with a neutral mood), the strategies chosen by the shipped
table and by the same table with every `backed` condition dropped (the session-21 behaviour), on:

* LoCoMo dev (`--locomo`, default path below): long friendly chats between two friends, English,
  read with the shipped classifier; there are next to no arguments, sorrows or romance in them, so a
  strong voice there is almost always wrong;
* tests/data/mode_warm.txt, the warm second-person probe (never training data), shipped classifier;
* the labelled odd half (tests/data/mode_labelled.txt), read by a classifier fitted on the even lines
  (the held-out protocol of benchmarks/mode_accuracy.py): what the true arguments, sorrows and
  affection lose (they get the attentive voice instead of the strong one when no cue word backs them).

    python benchmarks/strategy_voice.py [--json] [--no-labelled] [--locomo PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from memsched.classify import ModeClassifier
from memsched.memory import Memory
from memsched.router import Prototypes, Router, prototype_weights
from memsched.strategy import Strategy, StrategyTable
from memsched.text.segment import cjk_ratio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_accuracy import load

HERE = Path(__file__).resolve().parent
WARM = HERE.parent / "tests" / "data" / "mode_warm.txt"
LOCOMO = Path("/work/shared/data/locomo/locomo-dev.json")  # ../shared from the project root
STRONG = ("repair", "comfort", "intimacy")


def unbacked_table(table: StrategyTable) -> StrategyTable:
    """The same table with every `backed` condition dropped (and the strategies that need an unbacked
    mode removed): what a turn chose before `backed` existed."""
    kept = [
        Strategy(s.name, s.shares, s.style, s.recall_hint, {k: v for k, v in s.when.items() if k != "backed"})
        for s in table.strategies
        if s.when.get("backed") is not False
    ]
    return StrategyTable(kept, "without backed")


def voices(
    router: Router, memory: Memory, texts: list[str], labels: list[str] | None = None
) -> dict[str, Any]:
    new = StrategyTable.load()
    old = unbacked_table(new)
    counts: dict[str, Counter[str]] = {"now": Counter(), "before": Counter()}
    by_label: dict[str, dict[str, Counter[str]]] = {}
    for i, text in enumerate(texts):
        v = memory.retriever.embed_query(text)
        r = router.route(
            text,
            vectors=v,
            embedders=memory.embedders,
            embedder_weights=prototype_weights(v, cjk_ratio(text)),
        )
        now = new.select(r.mode, "neutral", 0.0, r.signals, backed=r.backed).strategy.name
        before = old.select(r.mode, "neutral", 0.0, r.signals).strategy.name
        counts["now"][now] += 1
        counts["before"][before] += 1
        if labels is not None:
            per = by_label.setdefault(labels[i], {"now": Counter(), "before": Counter()})
            per["now"][now] += 1
            per["before"][before] += 1
    out: dict[str, Any] = {
        "messages": len(texts),
        "strong_voice": {k: sum(c[s] for s in STRONG) for k, c in counts.items()},
        "strategies": {k: dict(c.most_common()) for k, c in counts.items()},
    }
    if labels is not None:
        out["by_label"] = {
            lab: {k: dict(c.most_common()) for k, c in per.items()} for lab, per in sorted(by_label.items())
        }
    return out


def locomo_messages(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        t["text"]
        for conv in data
        for key, turns in conv["conversation"].items()
        if key.startswith("session_") and isinstance(turns, list)
        for t in turns
        if t.get("text")
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--no-labelled", action="store_true", help="skip the labelled odd half (fits a model)")
    args = ap.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(home=Path(tmp))
        shipped = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
        if args.locomo.exists():
            out["locomo_dev"] = voices(shipped, memory, locomo_messages(args.locomo))
        warm = load(WARM)
        out["warm_probe"] = voices(shipped, memory, [r["text"] for r in warm], [r["mode"] for r in warm])
        if not args.no_labelled:
            from train_mode_classifier import features, train

            rows = load()
            vecs = [memory.retriever.embed_query(r["text"]) for r in rows]
            model, _ = train(memory, rows, lines="even", feats=features(memory, rows, vecs))
            odd = rows[1::2]
            out["labelled_odd_half"] = voices(
                Router(prototypes=Prototypes(), classifier=model),
                memory,
                [r["text"] for r in odd],
                [r["mode"] for r in odd],
            )
        memory.close()
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return
    for name, res in out.items():
        print(
            f"{name}: {res['messages']} messages; strong voice before {res['strong_voice']['before']}, now {res['strong_voice']['now']}"
        )
        for lab, per in res.get("by_label", {}).items():
            print(f"  labelled {lab}: before {per['before']}  now {per['now']}")
        if "by_label" not in res:
            print(f"  before {res['strategies']['before']}\n  now    {res['strategies']['now']}")
    sys.stdout.flush()
    os._exit(0)  # skip the interpreter's teardown of the model threads


if __name__ == "__main__":
    main()
