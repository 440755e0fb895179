"""Everyday chat and a similarity floor: what `min_similarity` (a strategy's, `memory.found_by_message`)
recalls for everyday messages, against what it keeps out.

One English companion history (MiniLM + WordLlama + gloss, the default embedders): eleven everyday
facts ("My cat Biscuit knocked a plant off the shelf again."), a ten-line chess deep-dive and a
hundred lines of chores, each with a reply (~260 turns, more than the deep search's 200, so no noise
cut applies). Eleven everyday messages, each written for one of the facts without sharing its words
("should I get a pet?"), are asked through `Memory.context` at 2,000 tokens with each floor. Reported
per floor: how many of the eleven facts are in the context, and how many chess lines came in with
them. The pairs were written for this benchmark, not taken from any evaluation set.

    python benchmarks/everyday_floor.py                     # floors 0, 0.15, 0.2, 0.25, 0.3
    python benchmarks/everyday_floor.py --floors 0,0.3 -v   # each message's outcome too
"""

from __future__ import annotations

import argparse
import json
import tempfile
from datetime import timedelta
from pathlib import Path

from memsched.memory import Memory
from memsched.testing.histories import CHESS_LINES, FILLER_LINES, HISTORY_START, companion_history

PAIRS = [
    ("I'm so hungry", "I love spicy Sichuan food, the hotter the better."),
    ("what should I watch tonight?", "I just finished Breaking Bad, best show ever."),
    ("bored at home, any ideas?", "I've been learning guitar, my fingers hurt from the F chord."),
    ("any dinner ideas?", "My grandmother taught me how to cook her lentil stew."),
    ("what should I get my mom for her birthday?", "My mom has been really into gardening lately."),
    ("I need a weekend plan", "Went hiking at Mount Tam last month, the views were unreal."),
    ("feeling lazy today", "I've been trying to run three times a week."),
    ("what should I read next?", "Just finished Project Hail Mary, loved it."),
    ("should I get a pet?", "My cat Biscuit knocked a plant off the shelf again."),
    ("it's so cold today", "I moved to Chicago from Miami last year."),
    (
        "any ideas for lunch? I've got half an hour and an empty fridge",
        "I usually grab a sandwich from the deli near school.",
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--floors", default="0,0.15,0.2,0.25,0.3")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(home=Path(tmp) / "m")
        try:
            mem.add_many(
                companion_history(
                    "jo", [[p[1] for p in PAIRS[:5]], CHESS_LINES, [p[1] for p in PAIRS[5:]], FILLER_LINES]
                )
            )
            for floor in (float(f) for f in args.floors.split(",")):
                found, chess, each = 0, 0, []
                for message, fact in PAIRS:
                    ctx = mem.context(
                        "jo",
                        message,
                        session_id="today",
                        now=HISTORY_START + timedelta(days=10),
                        budget=2000,
                        min_similarity=floor,
                    )
                    text = "\n".join(str(m["content"]) for m in ctx.messages[:-1])
                    lines = sum(1 for line in CHESS_LINES if line in text)
                    found += fact in text
                    chess += lines
                    each.append({"message": message, "fact": fact in text, "chess_lines": lines})
                row: dict[str, object] = {"facts_recalled": f"{found}/{len(PAIRS)}", "chess_lines": chess}
                if args.verbose:
                    row["each"] = each
                out[str(floor)] = row
        finally:
            mem.close()
    print(json.dumps({"benchmark": "everyday_floor", "floors": out}, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
