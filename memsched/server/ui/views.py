"""What the debug UI shows, as plain dicts built from the store and the stored traces.

The UI reads; it never recomputes. A turn's trace is shown as the pipeline recorded it: every key the
trace holds is rendered, the known ones (route, retrieval, tokens, jobs ...) with their own layout and
any other key (mood, strategy, whatever a later stage adds) generically. Everything here is scoped by
user id, like the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memsched.model import Turn

if TYPE_CHECKING:
    from memsched.memory import Memory
    from memsched.scheduler import Scheduler

TIMELINE_PAGE = 50
TRACES_PER_SESSION = 2000
SNIPPET_CHARS = 160
CANDIDATES_SHOWN = 12  # rows of the candidate table before "show all"

# The parts of the token budget, in the order they sit in the context (the bar's segments).
BUDGET_PARTS = ("system", "summaries", "memory", "recent", "index", "new_message")

# Trace keys laid out by a section of their own; every other key goes to "more".
KNOWN_TRACE_KEYS = frozenset(
    {
        "id",
        "entry",
        "user_id",
        "session_id",
        "at",
        "ticket",
        "query",
        "route",
        "commands",
        "blocking",
        "overflow",
        "summaries",
        "retrieval",
        "selected",
        "recent",
        "dropped",
        "tokens",
        "context_timings_ms",
        "timings_ms",
        "jobs",
        "turn_ids",
        "llm",
        "error",
        "p0_overhead_ms",
        "paging_tools",
        "budget",
        "mood",
        "strategy",
    }
)
# Route keys with their own rendering; the rest of the route is shown generically.
KNOWN_ROUTE_KEYS = frozenset({"mode", "signals", "mood", "strategy", "cues", "mode_scores"})


class Backend(Protocol):
    """What the UI reads from: the service's memory and scheduler."""

    @property
    def memory(self) -> Memory: ...

    @property
    def scheduler(self) -> Scheduler: ...


@dataclass(slots=True)
class TurnRow:
    id: int | None
    seq: int | None
    role: str
    label: str
    content: str
    created_at: datetime
    trace_id: str | None
    mode: str | None
    meta: dict[str, Any]


def users(backend: Backend) -> list[dict[str, Any]]:
    """Every user with their number of sessions and turns."""
    store = backend.memory.store
    out = []
    for user in store.users():
        sessions = store.sessions(user)
        out.append({"id": user, "sessions": len(sessions), "turns": sum(s.turn_count for s in sessions)})
    return out


def sessions(backend: Backend, user_id: str) -> list[dict[str, Any]]:
    """The user's sessions, most recently started first."""
    found = backend.memory.store.sessions(user_id)
    return [{"id": s.id, "created_at": s.created_at, "turns": s.turn_count} for s in reversed(found)]


def timeline(
    backend: Backend, user_id: str, session_id: str, *, before: int | None = None, limit: int = TIMELINE_PAGE
) -> dict[str, Any]:
    """A window of the session's turns (the last `limit` before seq `before`), each with the id of the
    trace that recorded it, and the seq to ask for to see older turns (None at the start)."""
    store = backend.memory.store
    if before is None:
        turns = store.session_turns(user_id, session_id, last=limit)
    else:
        turns = store.session_turns_between(user_id, session_id, max(0, before - limit), before - 1)
    traces = backend.scheduler.traces(user_id, session_id, limit=TRACES_PER_SESSION)
    by_turn: dict[int, dict[str, Any]] = {}
    for trace in traces:
        for tid in trace.get("turn_ids") or []:
            by_turn.setdefault(int(tid), trace)
    rows = [_row(t, by_turn.get(t.id or -1)) for t in turns]
    first_seq = turns[0].seq if turns else None
    return {
        "turns": rows,
        "older": first_seq if first_seq else None,
        "traced": sum(1 for r in rows if r.trace_id),
    }


def _row(turn: Turn, trace: dict[str, Any] | None) -> TurnRow:
    route = (trace or {}).get("route") or {}
    return TurnRow(
        id=turn.id,
        seq=turn.seq,
        role=turn.role,
        label=turn.label,
        content=turn.content,
        created_at=turn.created_at,
        trace_id=str(trace["id"]) if trace else None,
        mode=route.get("mode") if turn.role == "user" else None,
        meta=turn.meta,
    )


def trace_view(backend: Backend, trace: dict[str, Any]) -> dict[str, Any]:
    """A stored trace arranged for display: the pipeline's stages in order, the turns it names (for
    their text), the jobs it queued with their state now, the budget bar, and every unknown key."""
    user_id = str(trace.get("user_id", ""))
    retrieval = trace.get("retrieval") or {}
    candidates = list(retrieval.get("candidates") or [])
    selected = list(trace.get("selected") or [])
    ids = {int(c["turn_id"]) for c in candidates if "turn_id" in c}
    ids |= {int(s["turn_id"]) for s in selected if s.get("turn_id") is not None}
    ids |= {int(t) for t in trace.get("turn_ids") or []}
    turns = {t.id: t for t in backend.memory.store.get_turns(user_id, sorted(ids))} if ids else {}
    selected_ids = {s.get("turn_id") for s in selected}
    layers = sorted({name for c in candidates for name in (c.get("scores") or {})})
    route = dict(trace.get("route") or {})
    query = trace.get("query")
    if query is None:
        own = [turns[i] for i in trace.get("turn_ids") or [] if i in turns and turns[i].role == "user"]
        query = own[0].content if own else ""
    reply = next(
        (
            turns[i].content
            for i in trace.get("turn_ids") or []
            if i in turns and turns[i].role == "assistant"
        ),
        None,
    )
    return {
        "trace": trace,
        "query": query,
        "reply": reply,
        "route": route,
        "mood": trace.get("mood", route.get("mood")),
        "strategy": trace.get("strategy", route.get("strategy")),
        "mood_view": mood_view(trace.get("mood", route.get("mood")), route),
        "strategy_view": strategy_view(trace.get("strategy", route.get("strategy"))),
        "route_more": {k: v for k, v in route.items() if k not in KNOWN_ROUTE_KEYS},
        "signals": route.get("signals") or {},
        "layers": layers,
        "layer_counts": {k: v for k, v in (retrieval.get("layers") or {}).items() if ":" not in k},
        "sub_layer_counts": {k: v for k, v in (retrieval.get("layers") or {}).items() if ":" in k},
        "shown": CANDIDATES_SHOWN,
        "candidates": [
            {**c, "text": _snippet(turns.get(c.get("turn_id"))), "selected": c.get("turn_id") in selected_ids}
            for c in candidates
        ],
        "selected": [{**s, "text": _snippet(turns.get(s.get("turn_id")))} for s in selected],
        "recalls": recalls(backend, user_id, trace.get("llm")),
        "llm_summary": {k: v for k, v in (trace.get("llm") or {}).items() if k not in ("calls", "recall")},
        "llm_calls": list((trace.get("llm") or {}).get("calls") or []),
        "budget": budget_bar(trace.get("tokens") or {}),
        "jobs": queued_jobs(backend, trace.get("jobs") or []),
        "timings": timing_bars(trace.get("timings_ms") or trace.get("context_timings_ms") or {}),
        "more": {k: v for k, v in trace.items() if k not in KNOWN_TRACE_KEYS},
    }


def recalls(backend: Backend, user_id: str, llm: Any) -> list[dict[str, Any]]:
    """The pages the model asked for through the `recall` tool, each with what its bookmarks say."""
    if not isinstance(llm, dict):
        return []
    out = []
    for entry in llm.get("recall") or []:
        if not isinstance(entry, dict):
            continue
        page = entry.get("page_id")
        marks = backend.memory.store.bookmarks(user_id, page_id=int(page)) if isinstance(page, int) else []
        out.append(
            {
                **entry,
                "keywords": [k for b in marks for k in b.keywords][:12],
                "summary": marks[0].summary if marks else "",
            }
        )
    return out


def _mood_state(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str) and value:
        return {"label": value, "intensity": None}
    if isinstance(value, dict) and isinstance(value.get("label"), str):
        intensity = value.get("intensity")
        return {
            "label": value["label"],
            "intensity": intensity if isinstance(intensity, int | float) else None,
        }
    return None


def mood_view(mood: Any, route: dict[str, Any]) -> dict[str, Any] | None:
    """A mood as states (carried into the turn, then after it) with labels and intensities, or None
    when the trace's mood has another shape (it is then shown as it is)."""
    if mood is None:
        return None
    states = []
    if isinstance(mood, dict) and ("after" in mood or "carried" in mood):
        for key in ("carried", "after"):
            state = _mood_state(mood.get(key))
            if state is not None:
                states.append({"when": key, **state})
        rest = {k: v for k, v in mood.items() if k not in ("carried", "after")}
    else:
        state = _mood_state(mood)
        if state is None:
            return None
        if state["intensity"] is None and isinstance(route.get("mood_intensity"), int | float):
            state["intensity"] = route["mood_intensity"]
        states.append({"when": "now", **state})
        rest = (
            {k: v for k, v in mood.items() if k not in ("label", "intensity")}
            if isinstance(mood, dict)
            else {}
        )
    if not states:
        return None
    for state in states:
        if state["intensity"] is not None:
            state["pct"] = max(0.0, min(100.0, 100.0 * float(state["intensity"])))
    return {"states": states, "rest": {k: v for k, v in rest.items() if v not in (None, "", [], {})}}


def strategy_view(strategy: Any) -> dict[str, Any] | None:
    """A strategy as its name, why it was chosen, and the budget shares it gives each memory source;
    None when the trace's strategy has another shape."""
    if isinstance(strategy, str) and strategy:
        return {"name": strategy, "reason": "", "shares": [], "rest": {}}
    if not isinstance(strategy, dict) or not isinstance(strategy.get("name"), str):
        return None
    found = strategy.get("shares")
    shares: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "name": strategy["name"],
        "reason": strategy.get("reason") or "",
        "shares": [
            {"name": k, "share": v, "pct": max(0.0, min(100.0, 100.0 * float(v)))}
            for k, v in shares.items()
            if isinstance(v, int | float)
        ],
        "rest": {
            k: v
            for k, v in strategy.items()
            if k not in ("name", "reason", "shares") and v not in (None, "", [], {})
        },
    }


def _snippet(turn: Turn | None) -> str:
    if turn is None:
        return ""
    text = f"{turn.label}: {turn.content}"
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def budget_bar(tokens: dict[str, Any]) -> dict[str, Any]:
    """The context's tokens by part as shares of the budget (or of the total when over budget)."""
    total = int(tokens.get("total") or 0)
    budget = int(tokens.get("budget") or 0)
    scale = max(budget, total, 1)
    parts: list[dict[str, Any]] = []
    for name in BUDGET_PARTS:
        n = int(tokens.get(name) or 0)
        if n > 0:
            parts.append({"name": name, "tokens": n, "pct": round(100.0 * n / scale, 2)})
    counted = sum(int(p["tokens"]) for p in parts)
    if total > counted:  # message framing and anything not broken down
        parts.append(
            {"name": "other", "tokens": total - counted, "pct": round(100.0 * (total - counted) / scale, 2)}
        )
    return {
        "parts": parts,
        "total": total,
        "budget": budget,
        "free": max(0, budget - total),
        "free_pct": round(100.0 * max(0, budget - total) / scale, 2),
        "over": budget > 0 and total > budget,
        "extra": {k: v for k, v in tokens.items() if k not in (*BUDGET_PARTS, "total", "budget")},
    }


def timing_bars(timings: dict[str, Any]) -> list[dict[str, Any]]:
    """Stage timings (ms) with their share of the total, in the order the stages ran."""
    stages = {k: float(v) for k, v in timings.items() if k != "total" and isinstance(v, int | float)}
    total = float(timings.get("total") or sum(stages.values()) or 1.0)
    return [
        {"name": k, "ms": v, "pct": min(100.0, round(100.0 * v / max(total, 1e-9), 2))}
        for k, v in stages.items()
    ]


def queued_jobs(backend: Backend, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs a turn queued, each with its state now (status, attempts, error) from the queue."""
    queue = backend.scheduler.queue
    out = []
    for job in jobs:
        now = queue.get(int(job["id"])) if job.get("id") is not None else None
        known = {"kind": now.kind, "priority": int(now.priority), "payload": now.payload} if now else {}
        out.append(
            {
                **job,
                **known,  # the queue's record of the job is complete; a trace may list only its id
                "status": now.status if now else "gone",
                "attempts": now.attempts if now else None,
                "last_error": now.last_error if now else None,
                "finished_at": now.finished_at if now else None,
            }
        )
    return out


def profile(backend: Backend, user_id: str) -> dict[str, Any]:
    """The user's profile facts: the ones in force and their whole history."""
    from memsched.profile import Profile

    prof = Profile(backend.memory.store)
    return {
        "current": list(prof.current(user_id).values()),
        "history": prof.history(user_id),
    }


def bookmarks(backend: Backend, user_id: str) -> list[Any]:
    """The user's keyword bookmarks, newest first."""
    return list(reversed(backend.memory.store.bookmarks(user_id)))


def jobs(backend: Backend, user_id: str, limit: int = 200) -> list[Any]:
    """The user's jobs, newest first."""
    return backend.scheduler.queue.list(None, limit, user_id=user_id)


def user_summary(backend: Backend, user_id: str) -> dict[str, Any]:
    """Counts shown in the user's header."""
    store = backend.memory.store
    found = store.sessions(user_id)
    return {
        "sessions": len(found),
        "turns": sum(s.turn_count for s in found),
        "bookmarks": store.bookmark_count(user_id),
    }
