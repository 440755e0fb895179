"""The optional LLM labeller: a P2 job that reads the latest user message again with the helper LLM
and corrects the carried state the router's rules left, for the next turn.

The router decides mode and mood in about a millisecond from cue words, prototypes and the carried
state (`router.py`); it misreads what cues do not show ("Sure. Great. Whatever you say." is calm on
the surface). When an LLM is configured (and `MEMSCHED_MOOD_LABELLER` is not turned off), every
routed user turn queues a `mood_label` job (`label_job`). The job asks the LLM for
`{"mode", "mood", "intensity", "cause"}` about that message, with the few turns before it as context,
validates the answer with pydantic, and, when it differs from the rules' reading:

* recomputes the user's mood from the mood carried into that turn with the LLM's reading instead of
  the rules' (`mood.update`, the same rule the turn used), marked `meta["llm"]`;
* sets the session's `last_mode` to the LLM's mode, which the next turn carries into the router.

The answer and whether it corrected anything are kept in the session state (`mode_label`), and the
next turn's trace shows them (`mood.llm_label`); the LLM's `cause` goes only into the mood row (whose
`cause_turn_ids` make forgetting the turn delete it) and into the next prompt's mood section. Nothing changes when the user has written again since
(that turn has its own job), when the reply repaired the mood, or when the reply is not a valid label:
a malformed answer fails the job at once with the reason as its error (`InputError`: asking again
later would label a stale moment), and leaves the state as the rules set it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memsched import mood as moods
from memsched.errors import InputError
from memsched.jobs.queue import Job, Priority
from memsched.jobs.tasks import TaskContext, task
from memsched.llm.client import extract_json_object
from memsched.llm.prompts import load as load_prompt
from memsched.model import Turn

if TYPE_CHECKING:
    from memsched.llm.client import ChatClient
    from memsched.store import Store

log = logging.getLogger("memsched.labeller")

KIND = "mood_label"
CONTEXT_TURNS = 4  # turns before the labelled message shown to the LLM
MAX_ATTEMPTS = 3  # call failures are retried; a stale job changes nothing anyway
DEFAULT_INTENSITY = 0.6  # when the LLM names a mood but no intensity

Mode = Literal["casual", "conflict", "comfort", "intimacy"]
MoodLabel = Literal["upset", "sad", "anxious", "happy", "affectionate", "neutral"]


class Label(BaseModel):
    """The LLM's reading of one message. `mode` and `mood` must be present; null means "cannot tell"."""

    model_config = ConfigDict(extra="ignore")
    mode: Mode | None
    mood: MoodLabel | None
    intensity: float | None = Field(default=None, ge=0.0, le=1.0)
    cause: str | None = Field(default=None, max_length=200)


def label_job(
    *,
    user_id: str,
    session_id: str,
    turn_id: int,
    at: datetime,
    rule_mode: str,
    rule_mood: moods.Mood,
    before: moods.Mood,
    event: str,
) -> Job:
    """The P2 job that labels turn `turn_id` (said at `at`), given what the rules decided (`rule_mode`,
    the mood after the turn `rule_mood` and its `event`) and the mood carried into it (`before`)."""
    return Job(
        kind=KIND,
        user_id=user_id,
        session_id=session_id,
        payload={
            "turn_id": turn_id,
            "at": at.timestamp(),
            "rule": {
                "mode": rule_mode,
                "mood": rule_mood.label,
                "intensity": round(rule_mood.intensity, 4),
                "event": event,
            },
            "before": before.row() if before.updated_at is not None else None,
        },
        priority=Priority.P2,
        dedupe_key=f"{KIND}:{turn_id}",
        max_attempts=MAX_ATTEMPTS,
    )


def ask(llm: ChatClient, message: Turn, context: list[Turn]) -> Label:
    """The LLM's label for `message`. Raises `InputError` when the reply is not a valid label and
    `LLMError` when the call fails."""
    lines = "\n".join(f"{t.role}: {t.content}" for t in context) or "(none)"
    prompt = load_prompt(KIND).format(context=lines, message=message.content)
    result = llm.complete(
        [{"role": "user", "content": prompt}], purpose=KIND, response_format={"type": "json_object"}
    )
    try:
        return Label.model_validate(extract_json_object(result.content))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
        raise InputError(
            f"mood label of turn {message.id}: the LLM's reply is not a valid label ({problems});"
            f" the state is unchanged; reply was {result.content[:200]!r}"
        ) from None
    except ValueError as exc:
        raise InputError(
            f"mood label of turn {message.id}: the LLM's reply holds no JSON object ({exc});"
            f" the state is unchanged; reply was {result.content[:200]!r}"
        ) from None


def apply_label(store: Store, job: Job, turn: Turn, label: Label) -> dict[str, Any]:
    """Correct the user's mood and the session's last mode with `label` (see the module docstring);
    returns the record kept in the session state as `mode_label`. Idempotent."""
    assert turn.id is not None and job.session_id is not None
    p = job.payload
    rule = dict(p.get("rule") or {})
    at = float(p["at"])
    record: dict[str, Any] = {
        "turn_id": turn.id,
        "job_id": job.id,
        "mode": label.mode,
        "mood": label.mood,
        "intensity": label.intensity,
        # The LLM's `cause` (words about the user's message) is kept only in the mood row, whose
        # cause_turn_ids take it away when the turn is forgotten; this record is in session state.
        "rule_mode": rule.get("mode"),
        "rule_mood": rule.get("mood"),
        "corrected": [],
        "at": datetime.now(UTC).timestamp(),
    }
    last = store.last_active(turn.user_id)
    if last is not None and last > at + 1e-6:
        record["skipped"] = "the user has written since; that message has its own label"
        log.info("mood label of turn %s skipped: a newer message exists", turn.id)
        return record
    state = store.session_state(turn.user_id, job.session_id)
    updates: dict[str, Any] = {}
    routed_at = state.get("last_mode_at")
    this_turn = routed_at is not None and abs(float(routed_at) - at) < 1e-3  # the session's last routed turn
    if label.mode is not None and label.mode != rule.get("mode") and this_turn:
        updates["last_mode"] = label.mode
        updates["last_reading"] = label.mode  # what the next message may corroborate
        record["corrected"].append("mode")
    new_mood = _corrected_mood(store, turn, label, rule, p.get("before"), at)
    with store.transaction() as tx:
        if new_mood is not None:
            store.mood_put(tx, turn.user_id, new_mood.row())
            record["corrected"].append("mood")
        store.session_state_update(
            tx,
            turn.user_id,
            job.session_id,
            {**updates, "mode_label": record},
            now=datetime.now(UTC).timestamp(),
        )
    log.info(
        "mood label of turn %s: mode %s (rules %s), mood %s (rules %s), corrected %s",
        turn.id,
        label.mode,
        rule.get("mode"),
        label.mood,
        rule.get("mood"),
        record["corrected"] or "nothing",
    )
    return record


def _corrected_mood(
    store: Store,
    turn: Turn,
    label: Label,
    rule: dict[str, Any],
    before_row: dict[str, Any] | None,
    at: float,
) -> moods.Mood | None:
    """The mood the turn should have left with the LLM's reading, or None to leave it as it is."""
    if label.mood is None or rule.get("event") == "repaired":
        return None
    stored = moods.from_row(store.mood_get(turn.user_id))
    if stored.meta.get("repaired") and stored.updated_at and stored.updated_at.timestamp() >= at:
        return None  # the reply accepted an apology after the rules ran: the repair stands
    intensity = label.intensity if label.intensity is not None else DEFAULT_INTENSITY
    rule_mood = rule.get("mood")
    rule_intensity = float(rule.get("intensity") or 0.0)
    if label.mood == rule_mood and (label.mood == "neutral" or abs(intensity - rule_intensity) < 0.2):
        return None  # the rules read it the same way
    when = datetime.fromtimestamp(at, UTC)
    carried = moods.from_row(before_row).at(when) if before_row else moods.Mood()
    upd = moods.update(
        carried,
        label=label.mood,
        intensity=intensity if label.mood != "neutral" else 0.0,
        now=when,
        turn_ids=[turn.id] if turn.id is not None else [],
    )
    new = upd.mood
    llm: dict[str, Any] = {"turn_id": turn.id, "label": label.mood}
    if label.cause and turn.id in new.cause_turn_ids:  # forgetting the turn deletes the row, cause and all
        llm["cause"] = label.cause
    meta = {**new.meta, "llm": llm}
    return moods.Mood(new.label, new.intensity, new.cause_turn_ids, new.updated_at or when, meta)


@task(KIND)
def mood_label_task(ctx: TaskContext, job: Job) -> None:
    """P2: label one user turn with the helper LLM and correct the carried state (module docstring).
    Without a helper LLM in this worker, or with the labeller turned off, it does nothing."""
    if ctx.llm is None or not ctx.config.mood_labeller or job.session_id is None:
        return
    turn_id = int(job.payload["turn_id"])
    found = ctx.store.get_turns(job.user_id, [turn_id])
    if not found or found[0].seq is None:
        return  # forgotten since
    turn = found[0]
    seq = turn.seq
    assert seq is not None
    context = (
        ctx.store.session_turns_between(job.user_id, job.session_id, max(0, seq - CONTEXT_TURNS), seq - 1)
        if seq > 0
        else []
    )
    label = ask(ctx.llm, turn, context)
    apply_label(ctx.store, job, turn, label)
