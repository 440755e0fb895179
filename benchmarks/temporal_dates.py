"""LoCoMo temporal questions with and without resolved dates, same code, same budget, same retrieval.

`memsched eval locomo` scores whether the evidence turns and the gold answer string reach the context.
Resolving relative time ("yesterday" said on 8 May 2023 -> 2023-05-07) adds the date beside the turn
and to its full-text index, so this script also counts, for the temporal category (LoCoMo category 2),
whether the gold answer's date reaches the context in any written form (the answer's own words, or
the ISO date), and how many recalled evidence turns carry a resolved date. The only difference between
the two runs is whether turns are stamped (`memsched.text.timeexpr.stamp`) when they are stored.

    PYTHONPATH=. .venv/bin/python benchmarks/temporal_dates.py --data /work/shared/data/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import dateparser

from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.eval.locomo import QUESTION_SESSION, questions_of
from memsched.eval.vcache import CachedEmbedder
from memsched.importers import read_locomo
from memsched.memory import Memory
from memsched.text.timeexpr import DATES_KEY


def _gold_date(answer: str) -> str | None:
    """The ISO date of a gold answer that names a full day ("7 May 2023"), else None."""
    found = dateparser.parse(answer, languages=["en"], settings={"STRICT_PARSING": True})
    return found.date().isoformat() if found else None


def run(data: Path, budgets: list[int], stamped: bool, cache: Path) -> dict[str, Any]:
    config = Config.load()
    cached = [CachedEmbedder(embed_base.create(n, config), cache) for n in config.embedder_names]
    embedders = dict(zip(config.embedder_names, cached, strict=True))
    out: dict[str, dict[str, list[float]]] = {
        str(b): {"evidence_recall": [], "answer_in_context": [], "date_in_context": [], "evidence_dated": []}
        for b in budgets
    }
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(config.replace(db=Path(tmp) / "t.db"), embedders=embedders)  # type: ignore[arg-type]
        try:
            for sample in read_locomo(data):
                if not stamped:
                    for t in sample.turns:
                        t.meta[DATES_KEY] = []  # marks the turn as stamped, with nothing: no dates
                for c in cached:
                    c.active = True
                mem.add_many(sample.turns, index=False)
                mem.index(sample.sample_id)
                generate_bookmarks(mem, sample.sample_id)
                for c in cached:
                    c.save()
                stored = list(mem.store.iter_turns(sample.sample_id))
                by_ext = {t.external_id: t for t in stored if t.external_id}
                for q in questions_of(sample.qa, set(by_ext)):
                    if q.category != 2:
                        continue
                    evidence = [by_ext[e] for e in q.evidence]
                    gold = _gold_date(q.answer)
                    for b in budgets:
                        ctx = mem.context(
                            sample.sample_id, q.text, session_id=QUESTION_SESSION, budget=b, backfill=False
                        )
                        text = "\n".join(str(m["content"]) for m in ctx.messages)
                        got = [t for t in evidence if t.content in text]
                        row = out[str(b)]
                        row["evidence_recall"].append(len(got) / len(evidence))
                        row["answer_in_context"].append(float(q.answer.lower() in text.lower()))
                        if gold is not None:
                            row["date_in_context"].append(
                                float(gold in text or q.answer.lower() in text.lower())
                            )
                        if got:
                            row["evidence_dated"].append(float(any(t.meta.get(DATES_KEY) for t in got)))
        finally:
            mem.close()
    return {
        b: {k: {"value": round(statistics.fmean(v), 4) if v else 0.0, "n": len(v)} for k, v in row.items()}
        for b, row in out.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--budgets", default="1000,2000")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memsched-temporal-cache")
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    budgets = [int(x) for x in args.budgets.split(",")]
    result = {
        "without dates": run(args.data, budgets, False, args.cache),
        "with dates": run(args.data, budgets, True, args.cache),
    }
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
