"""The companion side of a turn: carried state in, a strategy out, mood and routine kept up to date.

`Scheduler` calls three methods and nothing else here:

* `carried(user, session, at)` — before routing: the user's mood decayed to now, the session's
  previous mode, the learned late-night window, whether the last reply apologised;
* `plan(route, carried, ...)` — after routing: the P0 mood update, the strategy chosen from the
  table (`strategy.py`) with its reason, and the system-prompt sections it adds (style, mood);
* `record(tx, plan, ...)` — in the turn's transaction: the mood (repaired when the reply accepts the
  user's apology), the session's last mode, and the routine-learning job when it is due.

Also the read side used by the REST endpoints and the CLI: `state(user)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memsched import mood as moods
from memsched import routine as routines
from memsched.jobs.queue import Job, Priority
from memsched.labeller import label_job
from memsched.model import Turn
from memsched.mood import Mood, MoodUpdate
from memsched.nudges import Nudge, follow_ups_since
from memsched.router import Carried, Route, Router, hhmm, local_time
from memsched.strategy import Choice, StrategyTable

if TYPE_CHECKING:
    from memsched.memory import Memory

MOOD_HEADER = "The user's current mood (carried across conversations; it fades with time):"
FOLLOW_UP_HEADER = "Since the user last wrote, something they said was coming has happened:"


def follow_up_section(nudges: Sequence[Nudge], at: datetime, timezone: str | None) -> str:
    """The follow-ups due for the system prompt: each event's day (and how long ago, on the user's
    clock) with the user's own words, and what to do with it."""
    today = local_time(at, timezone)[0].date()
    lines = [FOLLOW_UP_HEADER]
    for n in nudges:
        ago = (today - datetime.fromisoformat(n.event_date).date()).days if n.event_date else None
        when = {0: "today", 1: "yesterday"}.get(ago, f"{ago} days ago") if ago is not None else ""
        quote = n.quote if len(n.quote) <= 160 else n.quote[:157].rstrip() + "…"
        lines.append(f"- {n.event_date} ({when}): “{quote}”")
    lines.append(
        "If the message leaves room for it, ask how it went (once, naturally); if the user already"
        " says how it went, respond to that instead."
    )
    return "\n".join(lines)


# From how many days without a message a companion remarks on the absence: a day or two is the
# ordinary rhythm of a chat, from three on a friend says "it's been a while".
ABSENCE_DAYS = 3


def absence_line(previous: float | None, at: datetime, timezone: str | None) -> str:
    """A system-prompt line when the user writes after `ABSENCE_DAYS` or more calendar days (on their
    clock) without a message: how long it has been and since which day, so "I'm back!" after three
    weeks is met as a return; "" otherwise."""
    if previous is None:
        return ""
    now = local_time(at, timezone)[0]
    then = local_time(datetime.fromtimestamp(previous, UTC), timezone)[0]
    days = (now.date() - then.date()).days
    if days < ABSENCE_DAYS:
        return ""
    weeks = f", about {round(days / 7)} weeks" if days >= 14 else ""
    return (
        f"The user's previous message was {days} days ago{weeks} ({then:%Y-%m-%d %A}); this is the first"
        " since. Acknowledge the time apart if it fits, without reproach."
    )


@dataclass(slots=True)
class Before:
    """What a turn carries in."""

    mood: Mood
    routine: routines.Routine
    carried: Carried
    previous_apology: bool = False
    late_window: tuple[int, int] = routines.DEFAULT_WINDOW
    late_source: str = "default"
    llm_label: dict[str, Any] | None = None  # the LLM labeller's reading of the session's last message
    previous_reading_turn: int | None = None  # the user turn `carried.previous_reading` was read from
    follow_ups: list[Nudge] = field(default_factory=list)  # fell due since the user's previous message
    previous_at: float | None = None  # when the user last wrote (epoch seconds), before this message


@dataclass(slots=True)
class Plan:
    """The companion decisions of one turn."""

    choice: Choice
    mood: MoodUpdate
    sections: list[str] = field(default_factory=list)
    shares: dict[str, float] = field(default_factory=dict)
    recall_hint: str = ""
    min_similarity: float = 0.0
    jobs: list[Job] = field(default_factory=list)

    def trace(self, before: Before) -> dict[str, Any]:
        return {
            "strategy": self.choice.as_dict(),
            "mood": {
                "carried": {
                    **before.mood.as_dict(),
                    **({"corrected_by": "llm"} if "llm" in before.mood.meta else {}),
                },
                "after": self.mood.mood.as_dict(),
                "event": self.mood.event,
                "llm_label": before.llm_label,
            },
            "routine": {**before.routine.as_dict(), "late_window_source": before.late_source},
            "follow_ups": [
                {"event_date": n.event_date, "reason": n.reason, "source_turn_ids": list(n.source_turn_ids)}
                for n in before.follow_ups
            ],
        }


class Companion:
    """Mood, routine and strategy for the turns of one store."""

    def __init__(
        self, memory: Memory, router: Router, table: StrategyTable, *, labeller: bool = False
    ) -> None:
        self.memory = memory
        self.store = memory.store
        self.router = router
        self.table = table
        # Queue the LLM labeller's job after each routed turn (a helper LLM is configured).
        self.labeller = labeller

    # -- before routing ---------------------------------------------------------------------------

    def carried(
        self,
        user_id: str,
        session_id: str,
        at: datetime,
        state: dict[str, Any],
        last: Sequence[Turn] | None = None,
        timezone: str | None = None,
    ) -> Before:
        """What the turn starts from: the user's mood and routine, the session's last mode, whether
        the last turn was an apology, the follow-ups that fell due since the user last wrote. `last`:
        the session's last turn (a list of at most one), when the caller has read it."""
        mood = moods.from_row(self.store.mood_get(user_id)).at(at)
        routine = routines.from_row(self.store.routine_get(user_id))
        window, source = routine.late_window()
        prev_mode = state.get("last_mode")
        prev_at = state.get("last_mode_at")
        age = at.timestamp() - float(prev_at) if prev_at is not None else None
        if last is None:
            last = self.store.session_turns(user_id, session_id, last=1)
        previous_apology = bool(
            last and last[0].role == "assistant" and self.router.repair_cues(last[0].content)[0]
        )
        previous = self.store.last_active(user_id)
        follow_ups = follow_ups_since(
            self.memory,
            user_id,
            datetime.fromtimestamp(previous, UTC) if previous is not None else None,
            at,
            timezone=timezone,
            routine=routine,
        )
        return Before(
            mood=mood,
            routine=routine,
            carried=Carried(mood.label, mood.intensity, prev_mode, age, state.get("last_reading")),
            previous_apology=previous_apology,
            late_window=window,
            late_source=source,
            llm_label=state.get("mode_label"),
            previous_reading_turn=state.get("last_reading_turn"),
            follow_ups=follow_ups,
            previous_at=previous,
        )

    # -- after routing -----------------------------------------------------------------------------

    def plan(
        self, user_id: str, route: Route, before: Before, *, at: datetime, timezone: str | None, budget: int
    ) -> Plan:
        upd = moods.update(
            before.mood,
            label=route.mood,
            intensity=route.mood_intensity,
            now=at,
            apology=route.apology,
            acceptance=route.acceptance,
            previous_apology=before.previous_apology,
            cued=route.mood_cued,
        )
        choice = self.table.select(
            route.mode, upd.mood.label, upd.mood.intensity, route.signals, backed=route.backed
        )
        strategy = choice.strategy
        counter = self.memory.counter
        sections: list[str] = []
        if strategy.style:
            style = f"Conversation strategy: {strategy.name}. {strategy.style}"
            if route.signals.get("late_night"):
                local = local_time(at, timezone)[0]
                bedtime = (
                    f"usually goes to sleep around {hhmm(before.routine.sleep_minute)}"
                    if before.routine.learned and before.routine.sleep_minute is not None
                    else "no usual bedtime learned yet"
                )
                style += f"\nUser's local time: {local.strftime('%H:%M')}; {bedtime}."
            sections.append(style)
        mood_text = self.mood_section(user_id, upd.mood, timezone)
        cap = int(budget * strategy.share("mood"))
        if mood_text and cap > 0:
            sections.append(counter.truncate(mood_text, cap))
        absence = absence_line(before.previous_at, at, timezone)
        if absence:
            sections.append(absence)
        cap = int(budget * strategy.share("follow_ups"))
        if before.follow_ups and cap > 0:
            sections.append(counter.truncate(follow_up_section(before.follow_ups, at, timezone), cap))
        return Plan(
            choice=choice,
            mood=upd,
            sections=sections,
            shares=dict(strategy.shares),
            recall_hint=strategy.recall_hint,
            min_similarity=strategy.min_similarity,
        )

    def mood_section(self, user_id: str, mood: Mood, timezone: str | None = None) -> str:
        """The mood as a system-prompt section, quoting the user's words that caused it."""
        if mood.label == "neutral":
            return ""
        head = f"{MOOD_HEADER} {mood.label}, intensity {mood.intensity:.2f}"
        if mood.updated_at is not None:
            # On the user's clock, as the prompt's "Now" line is (a UTC time read as local is hours off).
            when = local_time(mood.updated_at, timezone)[0] if timezone else mood.updated_at
            head += f", last changed {when.isoformat(timespec='minutes')}"
        llm = mood.meta.get("llm") or {}
        if llm.get("cause"):  # the LLM labeller's reading (labeller.py)
            head += f"\nWhat it is about (as a helper model read it): {llm['cause']}"
        ids = list(mood.cause_turn_ids)[-3:]
        causes = [t for t in self.store.get_turns(user_id, ids) if t.role == "user"] if ids else []
        if not causes:
            return head
        return head + "\nBecause of: " + " / ".join(f"“{t.content}”" for t in causes)

    # -- recording -----------------------------------------------------------------------------------

    def record(
        self,
        tx: Any,
        plan: Plan,
        before: Before,
        route: Route,
        *,
        user_id: str,
        session_id: str,
        user_turn_id: int,
        reply: str | None,
        at: datetime,
        timezone: str | None,
    ) -> tuple[dict[str, Any], list[Job]]:
        """Write the turn's mood and session mode inside `tx`; returns the session-state values to merge
        and the jobs to queue."""
        upd = plan.mood
        new = upd.mood
        # The reply to an apology repairs the mood when it accepts in so many words ("It's okay"), and
        # whenever the apology softened it: that turn's strategy told the model to accept it
        # (`accept_apology`), and one that did so in its own words left the user "upset" in every
        # prompt of the day after their apology.
        if (
            reply
            and ((route.apology and self.router.repair_cues(reply)[1]) or upd.event == "softened")
            and new.label in ("upset", "neutral")
        ):
            new = Mood("neutral", 0.0, (user_turn_id,), at, {"repaired": True})
            plan.mood = MoodUpdate(new, "repaired")
        elif upd.event in ("set", "reinforced", "softened", "repaired"):
            ids = (*tuple(i for i in new.cause_turn_ids if i), user_turn_id)
            previous = before.previous_reading_turn
            if route.mood_corroborated and previous is not None and previous not in ids:
                ids = (*ids[:-1], previous, user_turn_id)  # the line it repeats is a cause too
            new = Mood(new.label, new.intensity, ids[-moods.MAX_CAUSES :], at, new.meta)
            plan.mood = MoodUpdate(new, upd.event)
        if plan.mood.event != "kept":
            self.store.mood_put(tx, user_id, new.row())
        jobs: list[Job] = []
        if before.routine.due(at):
            spec = routines.routine_job(user_id, timezone, at)
            jobs.append(
                Job(
                    kind=spec["kind"],
                    user_id=user_id,
                    session_id=None,
                    payload=spec["payload"],
                    priority=Priority.P2,
                    dedupe_key=spec["dedupe_key"],
                )
            )
        if self.labeller:
            jobs.append(
                label_job(
                    user_id=user_id,
                    session_id=session_id,
                    turn_id=user_turn_id,
                    at=at,
                    rule_mode=route.mode,
                    rule_mood=plan.mood.mood,
                    before=before.mood,
                    event=plan.mood.event,
                )
            )
        values = {
            "last_mode": route.next_mode,
            "last_mode_at": at.timestamp(),
            # The message's own reading, cued or not, and its turn: the next one may corroborate it.
            "last_reading": route.reading,
            "last_reading_turn": user_turn_id,
            "mode_label": None,
        }
        return values, jobs

    def on_reply(self, tx: Any, user_id: str, session_id: str, reply: Turn) -> bool:
        """A reply recorded on its own (a client calling its own LLM, the proxy): when it answers the
        apology of the user's message just before it, the carried upset mood is reset. Returns
        whether it was.

        The reply that says so ("It's okay", 没关系) resets it; so does any reply to an apology that
        already softened the mood (`Mood.meta["apology"]`): that turn's strategy told the model to
        accept it (`accept_apology`), and a model that does so in its own words ("Thank you for
        saying that, I missed you") left the user "upset" in every prompt of the day after their
        apology."""
        accepts = self.router.repair_cues(reply.content)[1]
        mood = moods.from_row(self.store.mood_get(user_id)).at(reply.created_at)
        if mood.label != "upset" or not (accepts or mood.meta.get("apology")):
            return False
        before = [t for t in self.store.session_turns(user_id, session_id, last=3) if t.id != reply.id]
        last_user = next((t for t in reversed(before) if t.role == "user"), None)
        if last_user is None or not self.router.repair_cues(last_user.content)[0]:
            return False
        ids = tuple(i for i in (last_user.id, reply.id) if i is not None)
        self.store.mood_put(
            tx, user_id, Mood("neutral", 0.0, ids, reply.created_at, {"repaired": True}).row()
        )
        return True


def user_state(memory: Memory, user_id: str, now: datetime | None = None) -> dict[str, Any]:
    """{"mood": {label, intensity, cause_turn_ids, updated_at}, "routine": {sleep_time, wake_time,
    confidence}, "last_active", "as_of"} — the mood decayed to `now`; by default to the user's last
    message: the state as they left it, on the clock their messages state (a client that replays a
    conversation with its own timestamps sees the argument it just sent, not two years of decay).
    Pass the current time for the mood decayed to it."""
    store = memory.store
    last = store.last_active(user_id)
    last_at = datetime.fromtimestamp(last, UTC) if last is not None else None
    now = now or last_at or datetime.now(UTC)
    mood = moods.from_row(store.mood_get(user_id)).at(now)
    routine = routines.from_row(store.routine_get(user_id))
    return {
        "mood": mood.as_dict(),
        "routine": routine.as_dict(),
        "last_active": last_at.isoformat() if last_at is not None else None,
        "as_of": now.isoformat(),
    }
