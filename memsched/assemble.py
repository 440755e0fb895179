"""The budgeted context: system prompt, recalled memory, recent turns, the new message.

The message list that comes out never costs more tokens than the budget, counted exactly with the
configured tokenizer including the chat format's per-message overhead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memsched.errors import BudgetError
from memsched.model import Turn
from memsched.text.timeexpr import DATES_KEY, local_now
from memsched.text.tokens import TokenCounter

MEMORY_HEADER = "Memories from earlier conversations (oldest first; dates are when it was said):"


@dataclass(slots=True)
class Assembly:
    messages: list[dict[str, Any]]
    tokens: dict[str, int]
    recalled: list[Turn]
    recent: list[Turn]
    dropped: int = 0
    sections: list[str] = field(default_factory=list)


def _when(turn: Turn, timezone: str | None) -> datetime:
    """When `turn` was said, on the user's clock when their timezone is known (a turn stored at
    2024-03-02 00:00 UTC was said on 2024-03-01 in New York, and the model must read that date)."""
    return local_now(turn.created_at, timezone) if timezone else turn.created_at


def format_date(turn: Turn, timezone: str | None = None) -> str:
    return _when(turn, timezone).date().isoformat()  # YYYY-MM-DD; several times faster than strftime


def turn_line(turn: Turn) -> str:
    """How a recalled turn reads: `Caroline: I went there last week (last week = 2023-05-01)`; the
    dates its relative time means (`memsched.text.timeexpr.stamp`) travel with it."""
    dates = turn.meta.get(DATES_KEY) if turn.meta else None
    if dates:
        return f"{turn.label}: {turn.content} ({'; '.join(str(d) for d in dates)})"
    return f"{turn.label}: {turn.content}"


def format_memory(turns: Sequence[Turn], timezone: str | None = None) -> str:
    """Recalled turns grouped by session in time order, one dated header per group.

    `[2023-05-08]` then `Caroline: ...` lines; a `…` marks skipped turns inside a group. Two groups
    that start on the same day carry the time too (`[2023-05-08 13:56]`). The session's id is not
    shown: it tells the model nothing the date does not, and a long id (a UUID is ~25 tokens) in
    every header is budget that recalled turns could use. Dates and times are on the user's clock
    when `timezone` (IANA) is given, else as stored.
    """
    if not turns:
        return ""
    ordered = sorted(turns, key=lambda t: (t.created_at, t.id or 0))
    # Groups keep sessions together even when another session's turns have the same timestamp.
    groups: dict[str, list[Turn]] = {}
    for t in ordered:
        groups.setdefault(t.session_id, []).append(t)
    order = sorted(groups, key=lambda s: (groups[s][0].created_at, groups[s][0].id or 0))
    lines = [MEMORY_HEADER]
    days = Counter(format_date(groups[s][0], timezone) for s in order)
    for session_id in order:
        group = sorted(groups[session_id], key=lambda t: t.seq if t.seq is not None else 0)
        day = format_date(group[0], timezone)
        lines.append(f"[{day} {_when(group[0], timezone):%H:%M}]" if days[day] > 1 else f"[{day}]")
        prev_seq: int | None = None
        for t in group:
            if prev_seq is not None and t.seq is not None and t.seq > prev_seq + 1:
                lines.append("…")
            date = format_date(t, timezone)
            prefix = f"({date}) " if date != day else ""
            lines.append(f"{prefix}{turn_line(t)}")
            prev_seq = t.seq
    return "\n".join(lines)


def base_tokens(counter: TokenCounter, system_text: str, new_message: str) -> int:
    """What the system prompt and the new message alone cost: the part of a context no budget cuts."""
    return counter.messages_tokens(
        [{"role": "system", "content": system_text}, {"role": "user", "content": new_message}]
    )


def check_budget(budget: int, base: int) -> None:
    """`BudgetError` when `budget` cannot hold `base` (`base_tokens`)."""
    if base > budget:
        raise BudgetError(
            f"budget of {budget} tokens cannot hold the system prompt and the new message ({base} tokens);"
            " raise the budget or shorten the message"
        )


def assemble(
    *,
    counter: TokenCounter,
    budget: int,
    system_prompt: str,
    new_message: str,
    recalled: Sequence[Turn],
    recent: Sequence[Turn],
    recent_share: float,
    recent_max_turns: int,
    system_sections: Sequence[str] = (),
    summaries: Sequence[str] = (),
    shares: Mapping[str, float] | None = None,
    timezone: str | None = None,
    grow: bool = False,
) -> Assembly:
    """Pack the context under `budget`.

    When the system prompt and the new message alone cost more than `budget`, it is an error unless
    `grow` (the budget is the configured default, not one the caller asked for): then the message is
    sent whole with the system prompt and no memory (`tokens["over_budget"]` says by how much). A
    user who pastes a long email must not get an error for the size of memsched's memory budget.

    `recalled` is in priority order (most important first); `recent` is in time order. The recent
    window gets up to `recent_share` of what is left after the system prompt and the new message,
    recall gets the rest, and whatever recall leaves unused flows back to the recent window.

    With `shares` (a strategy's `recent`, `recalled`, `summaries` fractions of that room) the recent
    window gets at most its share, summaries and recalled turns together at most theirs (summaries
    first: they stand for this session's own past), and only the recent window takes up what the
    others leave. Recalled turns are dated on the user's clock when `timezone` is given.
    """
    system_text = "\n\n".join(s for s in (system_prompt, *system_sections) if s)
    base = base_tokens(counter, system_text, new_message)
    over = 0
    if base > budget and grow:
        over, budget = base - budget, base
    check_budget(budget, base)
    available = budget - base

    def turn_message(t: Turn) -> dict[str, Any]:
        return {"role": t.role if t.role != "system" else "user", "content": t.content}

    recent_newest_first = list(reversed(recent[-recent_max_turns:] if recent_max_turns > 0 else []))
    recall_cap: int | None = None
    if shares is not None:
        recent_share = float(shares.get("recent", recent_share))
        recall_cap = int(
            available * (float(shares.get("recalled", 0.0)) + float(shares.get("summaries", 0.0)))
        )
        summaries = _fit_summaries(counter, summaries, recall_cap)
    window_cap = int(available * recent_share)
    window: list[Turn] = []
    used_recent = 0
    for t in recent_newest_first:
        cost = counter.message_tokens(turn_message(t))
        if used_recent + cost > window_cap:
            break
        window.append(t)
        used_recent += cost

    summary_text = "\n".join(summaries)
    recall_room = available - used_recent
    if recall_cap is not None:
        recall_room = min(recall_room, recall_cap)
    chosen, summary_text, dropped = _pack_recall(counter, recalled, recall_room, system_text, summary_text)
    recall_cost = _memory_cost(counter, system_text, chosen, summary_text, timezone)

    # Unused recall room goes back to the recent window, still newest first.
    room = available - recall_cost - used_recent
    for t in recent_newest_first[len(window) :]:
        cost = counter.message_tokens(turn_message(t))
        if cost > room:
            break
        window.append(t)
        used_recent += cost
        room -= cost
    window.reverse()

    memory_text = format_memory(chosen, timezone)
    parts = [system_text, summary_text, memory_text]
    messages = [{"role": "system", "content": "\n\n".join(p for p in parts if p)}]
    messages.extend(turn_message(t) for t in window)
    messages.append({"role": "user", "content": new_message})

    total = counter.messages_tokens(messages)
    # The pieces were costed one by one; token merges at their joins can differ by a token or two,
    # so the whole is checked and trimmed, which keeps the promise exact.
    while total > budget and (chosen or window):
        if chosen:
            chosen = chosen[:-1]
        else:
            window = window[1:]
        memory_text = format_memory(chosen, timezone)
        messages = [
            {
                "role": "system",
                "content": "\n\n".join(p for p in (system_text, summary_text, memory_text) if p),
            }
        ]
        messages.extend(turn_message(t) for t in window)
        messages.append({"role": "user", "content": new_message})
        total = counter.messages_tokens(messages)
        dropped += 1
    if total > budget:  # only summaries are left to blame
        messages[0]["content"] = system_text
        summary_text = ""
        total = counter.messages_tokens(messages)

    tokens = {
        "system": counter.count(system_text),
        "summaries": counter.count(summary_text) if summary_text else 0,
        "memory": counter.count(memory_text) if memory_text else 0,
        "recent": sum(counter.message_tokens(turn_message(t)) for t in window),
        "new_message": counter.count(new_message),
        "total": total,
        "budget": budget - over,
    }
    if over:
        tokens["over_budget"] = over
    return Assembly(messages=messages, tokens=tokens, recalled=list(chosen), recent=window, dropped=dropped)


def _fit_summaries(counter: TokenCounter, summaries: Sequence[str], cap: int) -> list[str]:
    """The newest summaries that fit in `cap` tokens together (they are listed oldest first)."""
    kept: list[str] = []
    used = 0
    for text in reversed(summaries):
        cost = counter.count(text) + 1
        if used + cost > cap:
            break
        kept.append(text)
        used += cost
    kept.reverse()
    return kept


def _memory_cost(
    counter: TokenCounter, system_text: str, turns: Sequence[Turn], summary_text: str, timezone: str | None
) -> int:
    """Extra tokens the system message costs once the summaries and memory block are appended."""
    parts = [p for p in (summary_text, format_memory(turns, timezone)) if p]
    if not parts:
        return 0
    full = "\n\n".join([system_text, *parts]) if system_text else "\n\n".join(parts)
    return counter.count(full) - counter.count(system_text)


def _pack_recall(
    counter: TokenCounter, recalled: Sequence[Turn], room: int, system_text: str, summary_text: str
) -> tuple[list[Turn], str, int]:
    """Greedy packing in priority order, costing each turn's line plus its group header if new."""
    if summary_text and counter.count(summary_text) + 2 > room:
        summary_text = ""
    used = counter.count(summary_text) + 2 if summary_text else 0
    chosen: list[Turn] = []
    sessions: set[str] = set()
    dropped = 0
    header_cost = counter.count(MEMORY_HEADER) + 2
    for t in recalled:
        line = counter.count(turn_line(t)) + 2  # +1 newline, +1 for a possible "…"/date
        if t.session_id not in sessions:
            line += counter.count(f"[{format_date(t)}]") + 1  # "[date hh:mm]" is checked at the end
        cost = line + (header_cost if not chosen else 0)
        if used + cost > room:
            dropped += 1
            continue
        chosen.append(t)
        sessions.add(t.session_id)
        used += cost
    return chosen, summary_text, dropped
