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
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memsched.memory import Memory
from memsched.model import Turn

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
CHESS = [
    "I've been deep in chess openings all week.",
    "The Sicilian Najdorf is so sharp, one wrong move and you're lost.",
    "I also tried the London System for a month, it's boring but it works at my level.",
    "The Caro-Kann has a solid pawn structure and fewer traps.",
    "Kasparov and Fischer both loved the Najdorf.",
    "The Queen's Gambit Declined teaches the minority attack nicely.",
    "The Catalan bishop on g2 stares down the long diagonal.",
    "In the King's Indian both sides race on opposite wings, pure chaos.",
    "The Berlin endgame with queens off early is called the Berlin Wall.",
    "Rook endgames matter more than openings, my friend keeps saying.",
]
CHORES = [
    "graded lab reports",
    "fixed the bike's chain",
    "called the landlord about the heating",
    "sorted the recycling",
    "watched a documentary about volcanoes",
    "cleaned the bathroom",
    "planned next week's quiz",
    "went for a run by the river",
    "paid the electricity bill",
    "replied to parents' emails",
]
FILLER = [
    f"Today I {c}, {w}."
    for w in (
        "nothing special",
        "finally",
        "it took forever",
        "as usual",
        "before dark",
        "with music on",
        "in one go",
        "barely awake",
        "while it rained",
        "at last",
    )
    for c in CHORES
]
T0 = datetime(2026, 9, 1, 18, tzinfo=UTC)


def history() -> list[Turn]:
    blocks = [[p[1] for p in PAIRS[:5]], CHESS, [p[1] for p in PAIRS[5:]], FILLER]
    turns: list[Turn] = []
    for day, block in enumerate(blocks):
        for i, line in enumerate(block):
            at = T0 + timedelta(days=day, minutes=2 * i)
            turns.append(Turn("jo", f"d{day}", "user", line, created_at=at))
            turns.append(
                Turn("jo", f"d{day}", "assistant", "I hear you.", created_at=at + timedelta(seconds=30))
            )
    return turns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--floors", default="0,0.15,0.2,0.25,0.3")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(home=Path(tmp) / "m")
        try:
            mem.add_many(history())
            for floor in (float(f) for f in args.floors.split(",")):
                found, chess, each = 0, 0, []
                for message, fact in PAIRS:
                    ctx = mem.context(
                        "jo",
                        message,
                        session_id="today",
                        now=T0 + timedelta(days=10),
                        budget=2000,
                        min_similarity=floor,
                    )
                    text = "\n".join(str(m["content"]) for m in ctx.messages[:-1])
                    lines = sum(1 for line in CHESS if line in text)
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
