"""What reading a user's messages for follow-ups costs (`nudges.due_nudges`), by how far back it reads.

One user on a fresh SQLite home with PER_DAY user messages a day (and as many replies) over DAYS days,
one in ten naming an event with a date ("dentist appointment on the 12th"); times `due_nudges` at the
end with `nudges.LOOKBACK` set to each window. In conversation the read runs at most once a day per
user (`follow_ups_since`: only when a local midnight lies between two messages).

    python benchmarks/follow_up_scan.py [--per-day 50] [--days 120] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memsched import Memory, nudges
from memsched.model import Turn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-day", type=int, default=50)
    ap.add_argument("--days", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    start = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp, Memory(home=Path(tmp), embedders="hash") as memory:
        for day in range(args.days):
            turns = []
            for i in range(args.per_day):
                at = start + timedelta(days=day, minutes=10 * i)
                text = (
                    f"dentist appointment on the {(day + 10) % 28 + 1}th, ugh"
                    if i % 10 == 0
                    else f"just a normal message number {i} about the day"
                )
                turns.append(Turn("u", f"d{day}", "user", text, created_at=at))
                turns.append(Turn("u", f"d{day}", "assistant", "ok", created_at=at + timedelta(seconds=5)))
            memory.add_many(turns, index=False, timezone="UTC")
        now = start + timedelta(days=args.days)
        for days in (14, 30, 92):
            nudges.LOOKBACK = timedelta(days=days)
            took = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                found = nudges.due_nudges(memory, "u", now, timezone="UTC", include_upcoming=True)
                took.append(time.perf_counter() - t0)
            print(
                f"LOOKBACK {days:3d} days: {days * args.per_day:6d} user messages read, "
                f"median {statistics.median(took) * 1000:7.1f} ms, {len(found)} follow-ups"
            )


if __name__ == "__main__":
    main()
