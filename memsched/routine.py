"""Each user's usual end of day, learned from when they write, and the late-night window it implies.

Learning runs as a P2 job (`routine`) over the user's own messages of the last `HISTORY_DAYS` days in
their timezone. The day is cut at the user's quietest hour (the middle of the longest run of the
least active hours of the day), so a night owl's 02:00 message counts for the evening before; the
last message of each day is a bedtime sample and the first one a wake-up sample. The median after
dropping samples more than `OUTLIER_MINUTES` away from a first median is robust to the odd all-nighter.
With fewer than `MIN_DAYS` days the routine is not learned and the fixed default window applies.

`late_night` then means: later than `sleep_time + GRACE_MINUTES` and before the usual wake-up time
(01:00 is late for someone who stops at 23:00, not for someone who stops at 02:30), and never before
`EARLIEST_LATE` (22:00) in the evening: an early last message is not an early bedtime.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memsched.jobs.tasks import TaskContext, task
from memsched.router import LATE_NIGHT, hhmm, local_time

if TYPE_CHECKING:
    from memsched.jobs.queue import Job

MIN_DAYS = 5  # days with messages before a routine is trusted
HISTORY_DAYS = 45
OUTLIER_MINUTES = 180
GRACE_MINUTES = 30  # past the usual bedtime before it counts as late
DEFAULT_NIGHT_MINUTES = 6 * 60  # the late window's length when no wake-up time is known
MIN_CONFIDENCE = 0.3
RELEARN_AFTER = timedelta(hours=12)
DEFAULT_WINDOW = (LATE_NIGHT[0] * 60, LATE_NIGHT[1] * 60)
NIGHT_HOURS = range(2, 6)  # local hours nearly everyone sleeps through: where the day is cut
NIGHT_END = NIGHT_HOURS.stop * 60
MIN_DAY_SPAN_MINUTES = 120  # a day's first message is a wake-up sample only if the day spans this
MAX_NIGHT_MINUTES = 9 * 60  # a "wake-up" later than this after bedtime is just the first chat of the day
# The evening is not late night, whatever a user's habits: the last message of a day is when they stop
# writing to the companion, not when they sleep. A learned window that would open between noon and
# this local minute opens here instead (a user who stops at 19:00 most days, and writes at 23:25 and
# 01:30 on others, had 20:15 read as late night). A night owl's later window is left as learned.
EARLIEST_LATE = 22 * 60


@dataclass(frozen=True, slots=True)
class Routine:
    sleep_minute: int | None = None  # local minute of the day (0..1439)
    wake_minute: int | None = None
    confidence: float = 0.0
    days: int = 0
    timezone: str | None = None
    source_turn_ids: tuple[int, ...] = ()
    updated_at: datetime | None = None
    stale: bool = False

    @property
    def learned(self) -> bool:
        return self.sleep_minute is not None and self.confidence >= MIN_CONFIDENCE

    def late_window(self) -> tuple[tuple[int, int], str]:
        """((start, end) local minutes of the day, "learned" | "default")."""
        if not self.learned or self.sleep_minute is None:
            return DEFAULT_WINDOW, "default"
        start = (self.sleep_minute + GRACE_MINUTES) % 1440
        if 12 * 60 <= start < EARLIEST_LATE:
            start = EARLIEST_LATE
        end = (start + DEFAULT_NIGHT_MINUTES) % 1440
        if self.wake_minute is not None and (self.wake_minute - start) % 1440 <= MAX_NIGHT_MINUTES:
            end = self.wake_minute
        elif DEFAULT_NIGHT_MINUTES < (NIGHT_END - start) % 1440 <= 12 * 60:
            # A window that opens in the evening runs through the hours nearly everyone sleeps: a
            # user whose last message of the day is usually at 18:00 (and first at 08:10, too long a
            # night to be one) had the window 18:34-00:34, and 02:40 was no late night.
            end = NIGHT_END
        return (start, end), "learned"

    def due(self, now: datetime) -> bool:
        """Whether the learning job should run again."""
        return self.updated_at is None or self.stale or now - self.updated_at >= RELEARN_AFTER

    def as_dict(self) -> dict[str, Any]:
        return {
            "sleep_time": hhmm(self.sleep_minute) if self.sleep_minute is not None else None,
            "wake_time": hhmm(self.wake_minute) if self.wake_minute is not None else None,
            "confidence": round(self.confidence, 3),
        }

    def row(self) -> dict[str, Any]:
        return {
            "sleep_minute": self.sleep_minute,
            "wake_minute": self.wake_minute,
            "confidence": self.confidence,
            "days": self.days,
            "timezone": self.timezone,
            "source_turn_ids": list(self.source_turn_ids),
            "updated_at": (self.updated_at or datetime.now(UTC)).timestamp(),
            "meta": {},
        }


def from_row(row: dict[str, Any] | None) -> Routine:
    if row is None:
        return Routine()
    return Routine(
        sleep_minute=row["sleep_minute"],
        wake_minute=row["wake_minute"],
        confidence=float(row["confidence"]),
        days=int(row["days"]),
        timezone=row["timezone"],
        source_turn_ids=tuple(row["source_turn_ids"]),
        updated_at=datetime.fromtimestamp(float(row["updated_at"]), UTC),
        stale=bool(row.get("meta", {}).get("stale")),
    )


def quietest_hour(hours: Sequence[int]) -> int:
    """Where to cut the user's day: the middle of the longest circular run of their least active
    hours, preferring runs that cover part of NIGHT_HOURS (a long quiet afternoon at work is not the
    night)."""
    hist = [0] * 24
    for h in hours:
        hist[h] += 1
    low = min(hist)
    runs: list[tuple[int, int]] = []
    for start in range(24):
        if hist[start] != low or (hist[(start - 1) % 24] == low and len([h for h in hist if h == low]) < 24):
            continue
        n = 0
        while n < 24 and hist[(start + n) % 24] == low:
            n += 1
        runs.append((start, n))
    if not runs:
        return NIGHT_HOURS[0]
    nightly = [r for r in runs if any((r[0] + i) % 24 in NIGHT_HOURS for i in range(r[1]))]
    start, n = max(nightly or runs, key=lambda r: r[1])
    return (start + n // 2) % 24


def _robust_median(samples: Sequence[int]) -> tuple[float, list[int]]:
    first = statistics.median(samples)
    kept = [s for s in samples if abs(s - first) <= OUTLIER_MINUTES] or list(samples)
    return statistics.median(kept), kept


def learn(
    times: Sequence[tuple[int, float]], timezone: str | None, now: datetime, *, min_days: int = MIN_DAYS
) -> Routine:
    """The routine from (turn id, epoch seconds) of the user's messages; unlearned (confidence 0) with
    fewer than `min_days` complete days of history."""
    local = [(tid, local_time(datetime.fromtimestamp(ts, UTC), timezone)[0]) for tid, ts in times]
    if not local:
        return Routine(timezone=timezone, updated_at=now)
    cut = quietest_hour([t.hour for _, t in local])
    today = (local_time(now, timezone)[0] - timedelta(hours=cut)).date()
    days: dict[Any, list[tuple[int, int]]] = {}
    for tid, t in local:
        shifted = t - timedelta(hours=cut)
        if shifted.date() >= today:  # the day in progress has no known end yet
            continue
        days.setdefault(shifted.date(), []).append((tid, shifted.hour * 60 + shifted.minute))
    if len(days) < min_days:
        return Routine(timezone=timezone, days=len(days), updated_at=now)
    last = [max(v, key=lambda x: x[1]) for v in days.values()]
    # A day's first message tells when the user woke only if the day has more in it: on a day with
    # one message (or a short burst) it is the bedtime sample too, and would put wake-up at bedtime.
    first = [
        min(v, key=lambda x: x[1])[1]
        for v in days.values()
        if max(m for _, m in v) - min(m for _, m in v) >= MIN_DAY_SPAN_MINUTES
    ]
    sleep, kept = _robust_median([m for _, m in last])
    wake = _robust_median(first)[0] if first else None
    spread = statistics.pstdev(kept) if len(kept) > 1 else 0.0
    confidence = min(1.0, len(days) / 14.0) * max(0.0, 1.0 - spread / 240.0)
    confidence = max(confidence, 0.0)
    return Routine(
        sleep_minute=round(sleep + cut * 60) % 1440,
        wake_minute=None if wake is None else round(wake + cut * 60) % 1440,
        confidence=confidence,
        days=len(days),
        timezone=timezone,
        source_turn_ids=tuple(sorted(tid for tid, _ in last))[-60:],
        updated_at=now,
    )


def routine_job(user_id: str, timezone: str | None, now: datetime) -> dict[str, Any]:
    """The fields of the P2 job that (re)learns a user's routine (deduplicated per user and day)."""
    return {
        "kind": "routine",
        "user_id": user_id,
        "payload": {"timezone": timezone},
        "dedupe_key": f"routine:{now.date().isoformat()}",
    }


@task("routine")
def routine_task(ctx: TaskContext, job: Job) -> None:
    """Learn the user's routine from their messages (P2). Idempotent: recomputed from the turns."""
    store = ctx.store
    # Anchored at the user's last message, not the wall clock, so imported history learns too.
    last = store.last_active(job.user_id)
    now = datetime.fromtimestamp(last, UTC) if last is not None else datetime.now(UTC)
    tz = job.payload.get("timezone") or (store.routine_get(job.user_id) or {}).get("timezone")
    since = (now - timedelta(days=HISTORY_DAYS)).timestamp()
    routine = learn(store.user_turn_times(job.user_id, since), tz, now)
    with store.transaction() as tx:
        store.routine_put(tx, job.user_id, routine.row())
