"""Which embedding setup serves Chinese and English memory? Recall of facts said once, asked later.

The data (benchmarks/data/bilingual_memory.json, made by make_bilingual_memory.py; not from any
benchmark): per language ~1,350 turns of companion chat over six months with 40 personal facts said
once each, and 40 questions asked afterwards in other words. A fact counts as recalled when its turn
is in the context built for its question under the budget (default 1,000 tokens), asked in a new
session after the last one.

    python benchmarks/bilingual_memory.py [--budget 1000]
    python benchmarks/bilingual_memory.py --cjk-weights minilm=0.5 --cjk-weights wordllama=0   # pager ablations
    python benchmarks/make_bilingual_memory.py --seed 7 --out /tmp/b7.json && \
        python benchmarks/bilingual_memory.py --data /tmp/b7.json        # the same facts in another haystack
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
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
OFFLINE = "minilm,wordllama,gloss"  # the embedders that ship with memsched


@dataclass
class Setup:
    name: str
    layers: list[str]
    weights: FusionWeights = field(default_factory=FusionWeights)
    expand: bool = True


def with_gloss(weight: float) -> FusionWeights:
    """The default fusion with the gloss layer at `weight` for Chinese queries (0: without it)."""
    return with_cjk(gloss=weight)


def with_cjk(**weights: float) -> FusionWeights:
    """The default fusion with these dense layer weights for Chinese queries."""
    w = FusionWeights()
    w.dense_cjk = {**w.dense_cjk, **weights}
    return w


def setups(extra: list[str] | None = None, gloss_weights: Sequence[float] = ()) -> list[Setup]:
    """The offline setups, plus for each `extra` embedder (e.g. "openai" with bge-m3 behind it) that
    model alone, with BM25, and added to the default fusion; plus the default with the gloss layer
    at each of `gloss_weights` (the grid its weight was chosen on)."""
    only = {"minilm": 0.0, "wordllama": 0.0, "gloss": 0.0}

    def alone(name: str) -> FusionWeights:  # one layer at weight 1 for both scripts
        return FusionWeights(dense={**only, name: 1.0}, dense_cjk={**only, name: 1.0})

    more: list[Setup] = []
    for name in extra or []:
        zero = {**only, name: 0.0}
        more += [
            Setup(name, [name], alone(name), expand=False),
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
        Setup("minilm", ["minilm"], alone("minilm"), expand=False),
        Setup("wordllama", ["wordllama"], alone("wordllama"), expand=False),
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
        Setup("gloss (MiniLM over CC-CEDICT glosses)", ["gloss"], alone("gloss"), expand=False),
        Setup(
            "bm25+gloss",
            ["bm25", "gloss"],
            FusionWeights(dense={**only, "gloss": 1.0}, dense_cjk={**only, "gloss": 1.0}),
        ),
        Setup(
            "default without gloss (before)",
            ["bm25", "minilm", "wordllama"],
            with_cjk(gloss=0.0, minilm=0.5),
        ),
        *(
            Setup(f"default, gloss weight {w:g}", ["bm25", "minilm", "wordllama", "gloss"], with_gloss(w))
            for w in gloss_weights
        ),
        Setup(
            "default with MiniLM on Chinese at 0.5 (before session 19)",
            ["bm25", "minilm", "wordllama", "gloss"],
            with_cjk(minilm=0.5),
        ),
        Setup("memsched default (by script)", ["bm25", "minilm", "wordllama", "gloss"], FusionWeights()),
    ]


def run(
    budget: int,
    embedders: str = OFFLINE,
    ranks: dict[str, dict[str, dict[str, float]]] | None = None,
    gloss_weights: Sequence[float] = (),
    paging: Sequence[dict[str, float | int]] = (),
    cjk_weights: Sequence[dict[str, float]] = (),
    data_path: Path = DATA,
) -> dict[str, dict[str, float]]:
    """Recall per setup and language; for Chinese also per half of the questions ("zh even", "zh
    odd"): a weight chosen on one half is checked on the other. `paging`: pager option changes
    (`PagingOptions`) to measure beside the default pager, one row each; `cjk_weights`: changes to
    the Chinese queries' dense layer weights (`FusionWeights.dense_cjk`; 0 drops a layer), one pager
    row each. `data_path`: another set of the same shape (e.g. made with another --seed)."""
    data = json.loads(data_path.read_text(encoding="utf-8"))
    out: dict[str, dict[str, float]] = {}
    names = [n.strip() for n in embedders.split(",") if n.strip()]
    extra = [n for n in names if n not in OFFLINE.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        # The MEMSCHED_EMBED_* settings (base URL, model, key) apply to an extra `openai` embedder.
        mem = Memory(
            Config.load(home=Path(tmp), embedders=",".join(dict.fromkeys([*OFFLINE.split(","), *names])))
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
                for setup in setups(extra, gloss_weights):
                    mem.retriever.weights = setup.weights
                    positions = []
                    for q in block["questions"]:
                        fact = stored[q["fact_turn_index"]]
                        r = mem.retriever.retrieve(
                            lang, q["question"], k=200, layers=setup.layers, expand=False
                        )
                        order = [c.turn_id for c in r.candidates]
                        positions.append(order.index(fact.id) + 1 if fact.id in order else 10**6)
                    ranks.setdefault(setup.name, {})[lang] = {
                        f"top{n}": round(sum(1 for p in positions if p <= n) / len(positions), 3)
                        for n in (5, 10, 20, 50, 200)
                    }
            for setup in setups(extra, gloss_weights):
                mem.retriever.weights = setup.weights
                found = []
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
                    found.append(any(t.id == fact.id for t in result.recalled))
                out.setdefault(setup.name, {}).update(shares(lang, found))
            # What a user gets: Memory.context with the pager (bookmarks as the background job makes
            # them, page priors, decomposition, feedback), asked in a new session.
            mem.retriever.weights = FusionWeights()
            generate_bookmarks(mem, lang)
            default_pager = mem.pager
            rows: list[tuple[str, dict[str, float | int], dict[str, float]]] = [
                ("", {}, {}),
                *((", ".join(f"{k}={v:g}" for k, v in c.items()), c, {}) for c in paging),
                *((", ".join(f"zh {k}={v:g}" for k, v in w.items()), {}, w) for w in cjk_weights),
            ]
            for label, changes, dense_cjk in rows:
                mem._pager = default_pager.with_options(**changes) if changes else default_pager
                weights = FusionWeights()
                weights.dense_cjk = {**weights.dense_cjk, **dense_cjk}
                mem.retriever.weights = weights
                found = []
                for q in block["questions"]:
                    fact = stored[q["fact_turn_index"]]
                    ctx = mem.context(
                        lang, q["question"], session_id="question", budget=budget, backfill=False
                    )
                    assert ctx.assembly is not None
                    found.append(any(t.id == fact.id for t in ctx.assembly.recalled))
                row = f"memsched context (pager, {label})" if label else "memsched context (pager)"
                out.setdefault(row, {}).update(shares(lang, found))
            mem._pager = default_pager
            mem.retriever.weights = FusionWeights()
        mem.close()
    return out


def shares(lang: str, found: list[bool]) -> dict[str, float]:
    out = {lang: round(sum(found) / len(found), 3)}
    if lang == "zh":
        out["zh even"] = round(sum(found[0::2]) / len(found[0::2]), 3)
        out["zh odd"] = round(sum(found[1::2]) / len(found[1::2]), 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument(
        "--gloss-weights",
        default="",
        help="also the default fusion with the gloss layer at each of these weights, e.g. 1,1.5,2,3",
    )
    ap.add_argument(
        "--embedders",
        default=OFFLINE,
        help="add e.g. openai (MEMSCHED_EMBED_BASE_URL / _MODEL: a multilingual model such as bge-m3)",
    )
    ap.add_argument(
        "--paging",
        action="append",
        default=[],
        help="also the pager with these PagingOptions changes, e.g. entity_units=1,unit_turns=5 (repeatable)",
    )
    ap.add_argument(
        "--cjk-weights",
        action="append",
        default=[],
        help="also the pager with these Chinese dense weights, e.g. minilm=0.5 or wordllama=0 (repeatable)",
    )
    ap.add_argument("--data", type=Path, default=DATA, help="another set made by make_bilingual_memory.py")
    ap.add_argument(
        "--ranks", action="store_true", help="also: share of facts in each setup's top 5/10/20/50/200"
    )
    args = ap.parse_args()
    ranks: dict[str, dict[str, dict[str, float]]] | None = {} if args.ranks else None
    grid = [float(w) for w in args.gloss_weights.split(",") if w.strip()]
    paging = [
        {
            k.strip(): int(v) if v.strip().isdigit() else float(v)
            for k, v in (kv.split("=", 1) for kv in spec.split(",") if kv.strip())
        }
        for spec in args.paging
    ]
    cjk = [
        {k.strip(): float(v) for k, v in (kv.split("=", 1) for kv in spec.split(",") if kv.strip())}
        for spec in args.cjk_weights
    ]
    result = run(args.budget, args.embedders, ranks, grid, paging, cjk, args.data)
    if ranks:
        print(json.dumps({"ranks": ranks}, ensure_ascii=False))
    print(
        json.dumps(
            {"benchmark": "bilingual_memory", "budget": args.budget, "recall": result}, ensure_ascii=False
        )
    )
    width = max(len(n) for n in result)
    for name, per in result.items():
        print(
            f"{name:<{width}}  zh {per.get('zh', 0):.3f} (even {per.get('zh even', 0):.3f},"
            f" odd {per.get('zh odd', 0):.3f})  en {per.get('en', 0):.3f}"
        )


if __name__ == "__main__":
    main()
