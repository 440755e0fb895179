"""Recall across languages: a question in one language about a fact said in the other.

A bilingual user asks in English about something they told the companion in Chinese ("Who's my
manager again?" about "我老板叫 Grace"), or the other way round. The bilingual memory set
(benchmarks/data/bilingual_memory.json) has the same 40 kinds of personal fact in both languages
(fact i of the Chinese history and fact i of the English one are the same fact, localised: a
beagle called Biscuit, a dog called 豆豆), so each language's questions can be asked of the other's
history. Four askings, each through `Memory.context` (the pager, bookmarks made as the background
job makes them), in a new session after the last one; a fact counts when its turn is in the context:

* `en->zh`: the English questions, the Chinese history (1,350 turns) alone;
* `zh->en`: the Chinese questions, the English history alone;
* `mix en`, `mix zh`: one user holding both histories (2,700 turns), each language's questions
  about its own facts (what the bridge must not spoil).

    python benchmarks/across_languages.py                       # today's default
    python benchmarks/across_languages.py --setups before,layer,space,space+zh
    python benchmarks/across_languages.py --english-gloss 0,1,2 # the gloss layer on its own for English
                                                                # queries at these weights (0: before)

Setups (`FusionWeights`): `before` no bridge; `layer` session 26's bridge, the gloss layer searched
on its own by English queries (weight 1); `space` MiniLM's layer searched as one space with the
gloss layer's rows, each turn by its nearer row (`FusionWeights.space_model`: English queries);
`space+zh` the gloss layer of Chinese queries searched the same way (`space_gloss`: the other
direction).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.importers import parse_timestamp
from memsched.memory import Memory
from memsched.model import Turn
from memsched.retrieve import FusionWeights

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"
ASKINGS = (
    ("en->zh", "zh", "en", "zh"),
    ("zh->en", "en", "zh", "en"),
    ("mix en", "mix", "en", "en"),
    ("mix zh", "mix", "zh", "zh"),
)


SETUPS: dict[str, dict[str, Any]] = {
    "default": {},
    "before": {"gloss": 0.0, "space_model": False, "space_gloss": False},
    "layer": {"gloss": 1.0, "space_model": False, "space_gloss": False},
    "space": {"gloss": 0.0, "space_model": True, "space_gloss": False},
    "space+zh": {"gloss": 0.0, "space_model": True, "space_gloss": True},
}


def weights_of(setup: str) -> FusionWeights:
    """The fusion weights of a named setup (SETUPS), or 'english gloss W': the gloss layer searched
    on its own by English queries at weight W, no shared space."""
    weights = FusionWeights()
    if setup.startswith("english gloss "):
        change: dict[str, Any] = {"gloss": float(setup.rsplit(" ", 1)[1]), "space_model": False}
    else:
        change = SETUPS[setup]
    if "gloss" in change:
        weights.dense = {**weights.dense, "gloss": change["gloss"]}
    for key in ("space_model", "space_gloss"):
        if key in change:
            setattr(weights, key, change[key])
    return weights


def run(budgets: list[int], setups: list[str], data_path: Path = DATA) -> dict[str, dict[str, float]]:
    """Recall per asking, budget and setup (`weights_of`)."""
    data = json.loads(data_path.read_text(encoding="utf-8"))
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(Config.load(home=Path(tmp)))
        facts: dict[str, dict[str, list[int]]] = {}
        for user, langs in (("zh", ["zh"]), ("en", ["en"]), ("mix", ["zh", "en"])):
            turns = [
                (
                    lang,
                    Turn(
                        user_id=user,
                        session_id=f"{lang}-{t['session_id']}",
                        role=t["role"],
                        content=t["content"],
                        created_at=parse_timestamp(t["timestamp"], "timestamp"),
                    ),
                )
                for lang in langs
                for t in data["languages"][lang]["turns"]
            ]
            stored = mem.add_many([t for _, t in turns], index=False)
            facts[user] = {}
            for (lang, _), turn in zip(turns, stored, strict=True):
                assert turn.id is not None
                facts[user].setdefault(lang, []).append(turn.id)
            mem.index(user)
            generate_bookmarks(mem, user)
        for label in setups:
            mem.retriever.weights = weights_of(label)
            for budget in budgets:
                for name, user, asked, said in ASKINGS:
                    found = []
                    for q in data["languages"][asked]["questions"]:
                        fact = facts[user][said][q["fact_turn_index"]]
                        ctx = mem.context(
                            user, q["question"], session_id="question", budget=budget, backfill=False
                        )
                        assert ctx.assembly is not None
                        found.append(any(t.id == fact for t in ctx.assembly.recalled))
                    out.setdefault(f"{label}, {budget}", {})[name] = round(sum(found) / len(found), 3)
        mem.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budgets", default="1000,2000")
    ap.add_argument(
        "--english-gloss",
        default="",
        help="gloss layer weights for English queries to compare, e.g. 0,1,2 (default: the default's only)",
    )
    ap.add_argument("--setups", default="", help=f"named setups to compare: {', '.join(SETUPS)}")
    ap.add_argument("--data", type=Path, default=DATA, help="another set made by make_bilingual_memory.py")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    grid = [f"english gloss {float(w):g}" for w in args.english_gloss.split(",") if w.strip()]
    grid += [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = [s for s in grid if not s.startswith("english gloss ") and s not in SETUPS]
    if unknown:
        ap.error(f"--setups: unknown setup {unknown[0]!r}; choose from {', '.join(SETUPS)}")
    result = run(budgets, grid or ["default"], args.data)
    print(json.dumps({"benchmark": "across_languages", "recall": result}, ensure_ascii=False))
    for row, per in result.items():
        print(f"{row:<24}  " + "  ".join(f"{k} {v:.3f}" for k, v in per.items()))


if __name__ == "__main__":
    main()
