"""What the proxy's recall tool loop adds on LoCoMo (issue 8): evidence recall of everything the model
has read when it answers — the scheduled context plus the pages it recalled — with paging mode `both`
(retrieval + bookmark index + `recall`) and `tools` (index + `recall` only), against `retrieve`.

Two pagers play the model, each for at most `--rounds` rounds of one `recall(page_id)` call, every
page answered by `memsched.server.proxy.answer_recall` (the proxy's own code: the page cut to
`--page-tokens`, the use counted):

* oracle: knows the evidence; recalls the pages holding evidence turns the context lacks, but only
  pages the index lists (what a perfect model could do with what it is shown). `oracle-any` may also
  call pages missing from the index: the ceiling the index's coverage leaves.
* rule: a fake model with no knowledge: it recalls the listed page whose keywords share the most
  search terms (memsched.text.segment.terms) with the question, next best each round, none without
  a shared term. It has no tuned constant, so no leave-one-out split is needed.

Equal budgets: the loop reads more than the context budget, so `retrieve` is also run at the budget
plus the average tokens the oracle loop added (`retrieve @ matched`).

    python benchmarks/recall_loop.py --data D [--budget 1000,2000] [--cache DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.eval.locomo import QUESTION_SESSION, questions_of
from memsched.eval.vcache import CachedEmbedder
from memsched.importers import read_locomo
from memsched.memory import Memory
from memsched.model import Turn
from memsched.server.proxy import answer_recall
from memsched.text.segment import terms
from memsched.tools import INDEX_HEADER

INDEX_LINE = r"\[p(\d+) [^:]*: ([^\]]*)\]"

Pager = Callable[[str, dict[int, str], set[int], set[int]], int | None]


def listed_pages(messages: list[dict[str, Any]]) -> dict[int, str]:
    """Page id -> keywords of the bookmark index in the system message."""
    import re

    system = str(messages[0].get("content") or "")
    if INDEX_HEADER not in system:
        return {}
    return {int(p): kw for p, kw in re.findall(INDEX_LINE, system.split(INDEX_HEADER, 1)[1])}


def oracle(any_page: bool) -> Pager:
    def pick(question: str, index: dict[int, str], needed: set[int], done: set[int]) -> int | None:
        for page in sorted(needed - done):
            if any_page or page in index:
                return page
        return None

    return pick


def rule(question: str, index: dict[int, str], needed: set[int], done: set[int]) -> int | None:
    q = set(terms(question))
    best, score = None, 0
    for page, keywords in index.items():
        if page in done:
            continue
        overlap = len(q & set(terms(keywords)))
        if overlap > score:
            best, score = page, overlap
    return best


def run(
    data: Path,
    budgets: list[int],
    config: Config,
    rounds: int,
    page_tokens: int,
    limit: int | None,
    cache: Path | None,
) -> dict[str, Any]:
    samples = read_locomo(data)
    embedders = None
    cached: list[CachedEmbedder] = []
    if cache is not None:
        cached = [CachedEmbedder(embed_base.create(n, config), cache) for n in config.embedder_names]
        embedders = dict(zip(config.embedder_names, cached, strict=True))
    systems: dict[str, tuple[str, Pager | None]] = {
        "retrieve": ("retrieve", None),
        "both (context only)": ("both", None),
        "both + rule": ("both", rule),
        "both + oracle": ("both", oracle(False)),
        "both + oracle-any": ("both", oracle(True)),
        "tools + rule": ("tools", rule),
        "tools + oracle": ("tools", oracle(False)),
    }
    rows: dict[str, dict[str, list[float]]] = {
        f"{b}|{s}": {"recall": [], "tokens": [], "calls": [], "ms": []} for b in budgets for s in systems
    }
    questions = 0
    asked: list[tuple[str, str, list[Turn]]] = []
    with tempfile.TemporaryDirectory(prefix="memsched-recall-") as tmp:
        mem = Memory(config.replace(db=Path(tmp) / "eval.db"), embedders=embedders)  # type: ignore[arg-type]
        base_cfg = mem.config
        # Recalls here do not count as use: otherwise one question's recalls would reorder the next
        # question's index (and favour the oracle's pages).
        mem.store.touch_pages = lambda *a, **k: None  # type: ignore[method-assign]
        try:
            for sample in samples:
                if limit is not None and questions >= limit:
                    break
                user = sample.sample_id
                mem.add_many(sample.turns, index=False)
                mem.index(user)
                generate_bookmarks(mem, user)
                for c in cached:
                    c.save()
                stored = list(mem.store.iter_turns(user))
                by_ext = {t.external_id: t for t in stored if t.external_id}
                qs = questions_of(sample.qa, set(by_ext))
                if limit is not None:
                    qs = qs[: max(0, limit - questions)]
                for q in qs:
                    questions += 1
                    evidence: list[Turn] = [by_ext[e] for e in q.evidence]
                    asked.append((user, q.text, evidence))
                    for budget in budgets:
                        for name, (mode, pager) in systems.items():
                            mem.config = base_cfg.replace(paging_mode=mode)
                            t0 = time.perf_counter()
                            messages = mem.context(
                                user, q.text, session_id=QUESTION_SESSION, budget=budget, backfill=False
                            ).messages
                            read = [str(m["content"]) for m in messages]
                            tokens = mem.counter.messages_tokens(messages)
                            calls = 0
                            if pager is not None:
                                index = listed_pages(messages)
                                done: set[int] = set()
                                for _ in range(rounds):
                                    text = "\n".join(read)
                                    needed = {
                                        t.page_id
                                        for t in evidence
                                        if t.content not in text and t.page_id is not None
                                    }
                                    page = pager(q.text, index, needed, done)
                                    if page is None:
                                        break
                                    done.add(page)
                                    call = {
                                        "id": f"c{calls}",
                                        "function": {
                                            "name": "recall",
                                            "arguments": json.dumps({"page_id": page}),
                                        },
                                    }
                                    content, _ = answer_recall(mem, user, call, page_tokens)
                                    read.append(content)
                                    tokens += mem.counter.message_tokens({"role": "tool", "content": content})
                                    calls += 1
                            ms = (time.perf_counter() - t0) * 1000.0
                            text = "\n".join(read)
                            row = rows[f"{budget}|{name}"]
                            row["recall"].append(
                                sum(1 for t in evidence if t.content in text) / len(evidence)
                            )
                            row["tokens"].append(tokens)
                            row["calls"].append(calls)
                            row["ms"].append(ms)
            # Equal tokens: retrieve at the budget plus what the oracle loop read on average.
            mem.config = base_cfg.replace(paging_mode="retrieve")
            for budget in budgets:
                extra = statistics.fmean(rows[f"{budget}|both + oracle"]["tokens"]) - budget
                wide = int(budget + max(0.0, extra))
                row = rows[f"{budget}|retrieve @ matched ({wide})"] = {
                    "recall": [],
                    "tokens": [],
                    "calls": [],
                    "ms": [],
                }
                for user, question, evidence in asked:
                    messages = mem.context(
                        user, question, session_id=QUESTION_SESSION, budget=wide, backfill=False
                    ).messages
                    text = "\n".join(str(m["content"]) for m in messages)
                    row["recall"].append(sum(1 for t in evidence if t.content in text) / len(evidence))
                    row["tokens"].append(mem.counter.messages_tokens(messages))
                    row["calls"].append(0)
                    row["ms"].append(0.0)
        finally:
            for c in cached:
                c.save()
            mem.close()
    out: dict[str, Any] = {
        "questions": questions,
        "rounds": rounds,
        "page_tokens": page_tokens,
        "results": {},
    }
    for key, row in rows.items():
        budget, name = key.split("|", 1)
        out["results"].setdefault(budget, {})[name] = {
            "evidence_recall": round(statistics.fmean(row["recall"]), 4) if row["recall"] else 0.0,
            "avg_tokens_read": round(statistics.fmean(row["tokens"]), 1) if row["tokens"] else 0.0,
            "avg_recall_calls": round(statistics.fmean(row["calls"]), 2) if row["calls"] else 0.0,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--budget", default="1000,2000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--page-tokens", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--cache", type=Path, default=None, help="keep turn vectors here between runs")
    args = ap.parse_args()
    cfg = Config.load()
    result = run(
        args.data,
        [int(b) for b in args.budget.split(",")],
        cfg,
        args.rounds,
        args.page_tokens,
        args.limit,
        args.cache,
    )
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
