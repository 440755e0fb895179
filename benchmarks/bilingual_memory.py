"""Which embedding setup serves Chinese and English memory? Recall of facts said once, asked later.

The data (benchmarks/data/bilingual_memory.json, made by make_bilingual_memory.py; not from any
benchmark): per language ~1,350 turns of companion chat over six months with 40 personal facts said
once each, and 40 questions asked afterwards in other words. A fact counts as recalled when its turn
is in the context built for its question under the budget (default 1,000 tokens), asked in a new
session after the last one.

    python benchmarks/bilingual_memory.py [--budget 1000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from memsched.assemble import assemble
from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.importers import parse_timestamp
from memsched.memory import Memory
from memsched.model import Turn
from memsched.retrieve import FusionWeights

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"


@dataclass
class Setup:
    name: str
    layers: list[str]
    weights: FusionWeights = field(default_factory=FusionWeights)
    expand: bool = True


def setups(extra: list[str] | None = None) -> list[Setup]:
    """The offline setups, plus for each `extra` embedder (e.g. "openai" with bge-m3 behind it) that
    model alone, with BM25, and added to the default fusion."""
    only = {"minilm": 0.0, "wordllama": 0.0}
    more: list[Setup] = []
    for name in extra or []:
        zero = {**only, name: 0.0}
        more += [
            Setup(name, [name], expand=False),
            Setup(
                f"bm25+{name}",
                ["bm25", name],
                FusionWeights(dense={**zero, name: 1.0}, dense_cjk={**zero, name: 1.0}),
            ),
            Setup(f"memsched default + {name}", ["bm25", "minilm", "wordllama", name], FusionWeights()),
        ]
    return [
        *more,
        Setup("bm25 (jieba)", ["bm25"], expand=False),
        Setup("minilm", ["minilm"], expand=False),
        Setup("wordllama", ["wordllama"], expand=False),
        Setup(
            "bm25+minilm",
            ["bm25", "minilm"],
            FusionWeights(dense={**only, "minilm": 1.0}, dense_cjk={**only, "minilm": 1.0}),
        ),
        Setup(
            "bm25+wordllama",
            ["bm25", "wordllama"],
            FusionWeights(dense={**only, "wordllama": 1.0}, dense_cjk={**only, "wordllama": 1.0}),
        ),
        Setup(
            "bm25+minilm+wordllama (equal)",
            ["bm25", "minilm", "wordllama"],
            FusionWeights(
                dense={"minilm": 1.0, "wordllama": 1.0}, dense_cjk={"minilm": 1.0, "wordllama": 1.0}
            ),
        ),
        Setup("memsched default (by script)", ["bm25", "minilm", "wordllama"], FusionWeights()),
    ]


def run(
    budget: int,
    embedders: str = "minilm,wordllama",
    ranks: dict[str, dict[str, dict[str, float]]] | None = None,
) -> dict[str, dict[str, float]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    out: dict[str, dict[str, float]] = {}
    names = [n.strip() for n in embedders.split(",") if n.strip()]
    extra = [n for n in names if n not in ("minilm", "wordllama")]
    with tempfile.TemporaryDirectory() as tmp:
        # The MEMSCHED_EMBED_* settings (base URL, model, key) apply to an extra `openai` embedder.
        mem = Memory(
            Config.load(home=Path(tmp), embedders=",".join(dict.fromkeys(["minilm", "wordllama", *names])))
        )
        for lang, block in data["languages"].items():
            turns = [
                Turn(
                    user_id=lang,
                    session_id=t["session_id"],
                    role=t["role"],
                    content=t["content"],
                    created_at=parse_timestamp(t["timestamp"], "timestamp"),
                )
                for t in block["turns"]
            ]
            stored = mem.add_many(turns, index=False)
            mem.index(lang)
            if ranks is not None:  # where the fact ranks in each setup's list, budget aside
                for setup in setups(extra):
                    mem.retriever.weights = setup.weights
                    found = []
                    for q in block["questions"]:
                        fact = stored[q["fact_turn_index"]]
                        r = mem.retriever.retrieve(
                            lang, q["question"], k=200, layers=setup.layers, expand=False
                        )
                        order = [c.turn_id for c in r.candidates]
                        found.append(order.index(fact.id) + 1 if fact.id in order else 10**6)
                    ranks.setdefault(setup.name, {})[lang] = {
                        f"top{n}": round(sum(1 for f in found if f <= n) / len(found), 3)
                        for n in (5, 10, 20, 50, 200)
                    }
            for setup in setups(extra):
                mem.retriever.weights = setup.weights
                hits = 0
                for q in block["questions"]:
                    fact = stored[q["fact_turn_index"]]
                    retrieval = mem.retriever.retrieve(
                        lang, q["question"], layers=setup.layers, expand=setup.expand
                    )
                    ranked = mem.ranked_turns(lang, retrieval.candidates)
                    result = assemble(
                        counter=mem.counter,
                        budget=budget,
                        system_prompt=mem.config.system_prompt,
                        new_message=q["question"],
                        recalled=ranked,
                        recent=[],
                        recent_share=0.0,
                        recent_max_turns=0,
                    )
                    hits += any(t.id == fact.id for t in result.recalled)
                out.setdefault(setup.name, {})[lang] = round(hits / len(block["questions"]), 3)
            # What a user gets: Memory.context with the pager (bookmarks as the background job makes
            # them, page priors, decomposition, feedback), asked in a new session.
            mem.retriever.weights = FusionWeights()
            generate_bookmarks(mem, lang)
            hits = 0
            for q in block["questions"]:
                fact = stored[q["fact_turn_index"]]
                ctx = mem.context(lang, q["question"], session_id="question", budget=budget, backfill=False)
                assert ctx.assembly is not None
                hits += any(t.id == fact.id for t in ctx.assembly.recalled)
            out.setdefault("memsched context (pager)", {})[lang] = round(hits / len(block["questions"]), 3)
        mem.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument(
        "--embedders",
        default="minilm,wordllama",
        help="add e.g. openai (MEMSCHED_EMBED_BASE_URL / _MODEL: a multilingual model such as bge-m3)",
    )
    ap.add_argument(
        "--ranks", action="store_true", help="also: share of facts in each setup's top 5/10/20/50/200"
    )
    args = ap.parse_args()
    ranks: dict[str, dict[str, dict[str, float]]] | None = {} if args.ranks else None
    result = run(args.budget, args.embedders, ranks)
    if ranks:
        print(json.dumps({"ranks": ranks}, ensure_ascii=False))
    print(
        json.dumps(
            {"benchmark": "bilingual_memory", "budget": args.budget, "recall": result}, ensure_ascii=False
        )
    )
    width = max(len(n) for n in result)
    for name, per in result.items():
        print(f"{name:<{width}}  zh {per.get('zh', 0):.3f}  en {per.get('en', 0):.3f}")


if __name__ == "__main__":
    main()
