"""The user's carried mood: set by the router on each turn, decaying with time, reset by repair.

One mood per user (not per session), so an argument at 22:30 still shapes "早安" the next morning.
The stored row is the mood as last set; readers decay it to their own time (`Mood.at`). Rules:

* a message whose mode carries a feeling (conflict -> upset, comfort -> sad or anxious, intimacy ->
  affectionate, casual with happy cues -> happy) sets that mood when it is at least as strong as the
  carried one after decay; the same label adds up (capped at 1) and collects the cause turn ids; a
  reading no cue word backs (`cued=False`) changes nothing (the router can corroborate an uncued
  conflict reading that repeats the previous message's, which then counts as cued; off by default);
* an apology and its acceptance (in either order of the two speakers: the user apologises and the
  reply accepts, or the reply apologised and the user accepts) reset it to neutral, and so does a
  forgiveness the user says warmly ("好啦，不生你气了", read as affectionate or happy); an apology or
  another acceptance alone halves an upset mood, and never sets one (an apology reads as conflict);
* intensity halves every `HALF_LIFE_HOURS[label]`; below `FLOOR` it reads as neutral;
* a new sad or anxious mood set within `HARD_TIME_HOURS` of the last sad or anxious one's change keeps
  its cause turns, even when it had faded to neutral (one hard time, not a fresh one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

MOODS = ("upset", "sad", "anxious", "happy", "affectionate", "neutral")
# Hours for a mood's intensity to halve. An argument still counts the next morning (0.8 -> ~0.45 after
# 10 hours) and is gone after two days; joy and affection fade faster.
HALF_LIFE_HOURS = {"upset": 12.0, "sad": 12.0, "anxious": 10.0, "happy": 6.0, "affectionate": 8.0}
FLOOR = 0.1  # below this a mood reads as neutral
# A hard time (sad or anxious) goes on past its mood's fading: a new sad or anxious mood set within this
# many hours of the last one's change keeps its cause turns ("My grandma is in hospital" on Monday,
# "Can't sleep. Visiting hours start at ten" on Tuesday night: the sadness had faded below the floor,
# and the prompt quoted only the sleeplessness). Three days, a round figure, not fitted.
HARD_TIMES = frozenset({"sad", "anxious"})
HARD_TIME_HOURS = 72.0
MAX_CAUSES = 8  # cause turn ids kept per mood (the most recent)


@dataclass(frozen=True, slots=True)
class Mood:
    label: str = "neutral"
    intensity: float = 0.0
    cause_turn_ids: tuple[int, ...] = ()
    updated_at: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def at(self, now: datetime) -> Mood:
        """This mood decayed to `now` (neutral once below the floor)."""
        if self.label == "neutral" or self.updated_at is None:
            return self
        hours = max(0.0, (now - self.updated_at).total_seconds() / 3600.0)
        half = HALF_LIFE_HOURS.get(self.label, 12.0)
        value = self.intensity * math.pow(0.5, hours / half)
        if value < FLOOR:
            faded = {"decayed_from": self.label, "causes": list(self.cause_turn_ids)}
            return Mood("neutral", 0.0, (), self.updated_at, faded)
        return replace(self, intensity=value)

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "intensity": round(self.intensity, 3),
            "cause_turn_ids": list(self.cause_turn_ids),
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }

    def row(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "intensity": self.intensity,
            "cause_turn_ids": list(self.cause_turn_ids),
            "updated_at": (self.updated_at or datetime.now(UTC)).timestamp(),
            "meta": dict(self.meta),
        }


def from_row(row: dict[str, Any] | None) -> Mood:
    if row is None:
        return Mood()
    return Mood(
        label=str(row["label"]),
        intensity=float(row["intensity"]),
        cause_turn_ids=tuple(int(i) for i in row.get("cause_turn_ids", [])),
        updated_at=datetime.fromtimestamp(float(row["updated_at"]), UTC),
        meta=dict(row.get("meta", {})),
    )


@dataclass(frozen=True, slots=True)
class MoodUpdate:
    """The mood after a turn and what changed it (for the trace)."""

    mood: Mood
    event: str  # kept | set | reinforced | repaired | softened | decayed


def update(
    carried: Mood,
    *,
    label: str | None,
    intensity: float,
    now: datetime,
    turn_ids: Sequence[int] = (),
    apology: bool = False,
    acceptance: bool = False,
    previous_apology: bool = False,
    cued: bool = True,
) -> MoodUpdate:
    """The mood after a message. `carried` is already decayed to `now`; `label`/`intensity` is what the
    message expresses (None: nothing); `apology`/`acceptance` are the message's repair cues and
    `previous_apology` whether the turn before it (the other speaker) apologised. An uncued reading
    (`cued=False`: no cue word backs it, only the learned parts) neither sets nor strengthens a mood."""
    ids = tuple(turn_ids)
    # Repaired: the other side's apology accepted, or a forgiveness said warmly ("好啦，不生你气了",
    # read as affectionate or happy): the user themself ends the argument.
    warm = label in ("affectionate", "happy")
    if carried.label == "upset" and acceptance and (previous_apology or warm):
        return MoodUpdate(Mood("neutral", 0.0, ids, now, {"repaired": True}), "repaired")
    if carried.label == "upset" and (apology or acceptance):
        # An apology, or a forgiveness nobody asked for that does not read as warm ("It's okay, I
        # forgive you.", read as conflict), is half a repair: the message's own reading as conflict
        # must not make the mood stronger. Nor does the reason given with an apology replace it: "I'm
        # sorry I snapped at you, I was exhausted" read as comfort set a sad mood, and the reply was
        # asked to comfort, not to accept the apology (whose strategy cares about the reason too).
        softened = carried.intensity / 2
        if softened < FLOOR:
            return MoodUpdate(Mood("neutral", 0.0, ids, now, {"repaired": True}), "repaired")
        return MoodUpdate(
            replace(carried, intensity=softened, updated_at=now, meta={"apology": True}), "softened"
        )
    if label is None or label == "neutral":
        return MoodUpdate(carried, "kept")
    if label == "upset" and (apology or acceptance):
        # "I'm sorry about last night, I overreacted" reads as conflict, but whoever apologises or
        # forgives is not angry with the companion: no upset mood starts (or grows) from it.
        return MoodUpdate(carried, "kept")
    if not cued:
        # A reading no cue word backs is only noted (the trace's route.mood): the learned parts misread
        # neutral talk now and then ("What do you know about me?" as conflict), and a mood set from it
        # reached the prompt as "upset, intensity 0.15" with the misread line as its cause.
        return MoodUpdate(carried, "kept")
    if label == carried.label:
        causes = (*carried.cause_turn_ids, *ids)[-MAX_CAUSES:]
        value = min(1.0, max(carried.intensity, intensity) + 0.25 * min(carried.intensity, intensity))
        # The LLM labeller's reading of the cause (labeller.py) still describes a reinforced mood.
        kept = {k: v for k, v in carried.meta.items() if k == "llm"}
        return MoodUpdate(Mood(label, value, causes, now, kept), "reinforced")
    if intensity >= carried.intensity:
        return MoodUpdate(
            Mood(label, intensity, (*_hard_time(carried, label, now), *ids)[-MAX_CAUSES:], now), "set"
        )
    return MoodUpdate(carried, "kept")


def _hard_time(carried: Mood, label: str, now: datetime) -> tuple[int, ...]:
    """The cause turns a new `label` mood continues: those of a sad or anxious mood (carried, or faded
    to neutral) changed within `HARD_TIME_HOURS`, when `label` is one too (`HARD_TIMES`)."""
    if label not in HARD_TIMES or carried.updated_at is None:
        return ()
    if (now - carried.updated_at).total_seconds() > HARD_TIME_HOURS * 3600:
        return ()
    if carried.label in HARD_TIMES:
        return carried.cause_turn_ids
    if carried.label == "neutral" and carried.meta.get("decayed_from") in HARD_TIMES:
        return tuple(int(i) for i in carried.meta.get("causes", []))
    return ()
