"""A companion history to test recall on: days of everyday lines, a ten-line chess deep-dive and a
hundred lines of chores, each user line with a short reply. The everyday-recall tests and
`benchmarks/everyday_floor.py` build theirs from these (the lines were written for them, not taken from
any evaluation set)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memsched.model import Turn

HISTORY_START = datetime(2026, 9, 1, 18, tzinfo=UTC)
CHESS_LINES = (
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
)
_CHORES = (
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
)
# A hundred other lines, so that the history outgrows the deep search (200 turns) and no noise cut
# applies: a long companion history, as the everyday strategy meets it.
FILLER_LINES = tuple(
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
    for c in _CHORES
)


def companion_history(
    user: str, days: Sequence[Sequence[str]], start: datetime = HISTORY_START
) -> list[Turn]:
    """One session a day (`d0`, `d1`, ...): each line of the day two minutes apart, each answered
    "I hear you." half a minute later."""
    turns: list[Turn] = []
    for day, lines in enumerate(days):
        for i, line in enumerate(lines):
            at = start + timedelta(days=day, minutes=2 * i)
            turns.append(Turn(user, f"d{day}", "user", line, created_at=at))
            turns.append(
                Turn(user, f"d{day}", "assistant", "I hear you.", created_at=at + timedelta(seconds=30))
            )
    return turns
