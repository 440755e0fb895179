"""A question about a day: is what was said that day in the context?

"What did we talk about yesterday?", "10月10号我们聊了什么？": the answer is the turns said on that
day, which need not share a word with the question. For every day of the bilingual memory set's
histories (benchmarks/data/bilingual_memory.json: ~1,350 turns per language over 55 days; not from
any benchmark) the question is asked in four forms (the day by its date, asked after the last
session, and "yesterday", asked the next evening; each in English of the English history and in
Chinese of the Chinese one), in a new session, and the share of that day's turns in the context is
measured under each budget, with the pager's `when` layer (the default) and without it
(`FusionWeights.when = 0`), alternated in one process.

    python benchmarks/said_then.py [--budget 1000,2000]
"""

from __future__ import annotations

import argparse
import calendar
import json
import statistics
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.importers import parse_timestamp
from memsched.memory import Memory
from memsched.model import Turn

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"
SESSION = "asking"


def forms(lang: str, day: datetime, asked: datetime) -> list[tuple[str, str, datetime]]:
    """(form, question, when asked) for one day of the history."""
    evening = (day + timedelta(days=1)).replace(hour=20, minute=0, second=0)
    if lang == "en":
        return [
            ("date", f"What did we talk about on {calendar.month_name[day.month]} {day.day}?", asked),
            ("yesterday", "What did we talk about yesterday?", evening),
        ]
    return [
        ("date", f"{day.month}月{day.day}号我们聊了什么？", asked),
        ("yesterday", "昨天我们聊了什么？", evening),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", default="1000,2000")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budget.split(",")]
    data = json.loads(args.data.read_text(encoding="utf-8"))
    shares: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(Config.load(home=Path(tmp)))
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
            generate_bookmarks(mem, lang)
            days: dict[str, list[Turn]] = defaultdict(list)
            for t in stored:
                days[t.created_at.date().isoformat()].append(t)
            last = max(t.created_at for t in stored)
            asked = (last + timedelta(days=7)).replace(hour=12, minute=0, second=0)
            for key in sorted(days):
                said = days[key]
                day = said[0].created_at
                for form, question, at in forms(lang, day, asked):
                    for budget in budgets:
                        for setup, weight in (("when", 1.0), ("without", 0.0)):
                            mem.retriever.weights.when = weight
                            ctx = mem.context(
                                lang, question, session_id=SESSION, now=at, timezone="UTC", budget=budget
                            )
                            text = "\n".join(str(m["content"]) for m in ctx.messages)
                            got = sum(1 for t in said if t.content in text) / len(said)
                            shares[f"{budget} {lang} {form} {setup}"].append(got)
        mem.retriever.weights.when = 1.0
        mem.close()
    out = {
        "benchmark": "said_then",
        "days_per_language": {
            lang: len({t["timestamp"][:10] for t in b["turns"]}) for lang, b in data["languages"].items()
        },
        "share_of_the_day_in_context": {k: round(statistics.fmean(v), 3) for k, v in sorted(shares.items())},
        "days_half_or_more_in_context": {
            k: round(sum(1 for x in v if x >= 0.5) / len(v), 3) for k, v in sorted(shares.items())
        },
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
