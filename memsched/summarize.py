"""Session summaries: a contiguous range of a session's turns replaced, in later contexts, by a short text.

Two producers: an LLM (purpose "summary") when one is configured, else an offline extractive summary
(the most central sentences by TF-IDF cosine centrality over jieba/word terms, so Chinese and
English both work) that is labelled as extractive. The raw turns are never touched: they stay in the
store and stay retrievable; a summary only changes what the *recent window* of a context shows.

Ranges are contiguous and grow from the start of the session: a new summary always starts after the
last covered seq, so "covered" is one number per session (`covered_seq`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memsched.errors import InputError, LLMError
from memsched.jobs.tasks import TaskContext, task
from memsched.model import Turn, utcnow
from memsched.text.segment import terms
from memsched.text.tokens import TokenCounter

if TYPE_CHECKING:
    from memsched.jobs.queue import Job
    from memsched.llm.client import ChatClient
    from memsched.memory import Memory

from memsched.llm.prompts import load as load_prompt

log = logging.getLogger("memsched.summarize")


def default_max_tokens(overflow_limit: int) -> int:
    """How long a summary may be: a tenth of the overflow limit, within 48..400 tokens."""
    return max(48, min(400, overflow_limit // 10))


_SENTENCE_RE = re.compile(r"[^。！？!?.\n；;]+[。！？!?.；;]*")


@dataclass(slots=True)
class SummaryText:
    """A summary's text and how it was made (`llm` or `extractive`; `error` when the LLM failed)."""

    text: str
    method: str
    error: str | None = None


def transcript(turns: Sequence[Turn]) -> str:
    """The turns as `label: content` lines, the form both summarisers read."""
    return "\n".join(f"{t.label}: {t.content}" for t in turns)


def _sentences(turns: Sequence[Turn]) -> list[tuple[int, str, str]]:
    """(turn index, speaker label, sentence) for every sentence of the turns, in order."""
    out: list[tuple[int, str, str]] = []
    for i, t in enumerate(turns):
        for m in _SENTENCE_RE.finditer(t.content):
            s = m.group(0).strip()
            if s:
                out.append((i, t.label, s))
    return out


def extractive_summary(
    turns: Sequence[Turn], counter: TokenCounter, max_tokens: int, *, labels: bool = True
) -> str:
    """The most central sentences of `turns` (TF-IDF degree centrality), in their original order, up
    to `max_tokens` tokens, each as `speaker: sentence` (bare with `labels=False`). Deterministic."""
    sents = _sentences(turns)
    if not sents:
        return ""
    bags = [terms(s) for _, _, s in sents]
    vocab: dict[str, int] = {}
    for bag in bags:
        for w in bag:
            vocab.setdefault(w, len(vocab))
    if vocab:
        tf = np.zeros((len(sents), len(vocab)), dtype=np.float32)
        for row, bag in enumerate(bags):
            for w in bag:
                tf[row, vocab[w]] += 1.0
        df = (tf > 0).sum(axis=0)
        idf = np.log((1.0 + len(sents)) / (1.0 + df)) + 1.0
        m = tf * idf
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        m = m / norms
        sim = m @ m.T
        np.fill_diagonal(sim, 0.0)
        centrality = sim.sum(axis=1)
    else:
        centrality = np.zeros(len(sents), dtype=np.float32)
    # Facts about the user come from the user: their sentences get a head start.
    score = centrality + np.array(
        [
            (0.5 if label == "user" else 0.0) + 0.1 * min(len(b), 8)
            for (_, label, _), b in zip(sents, bags, strict=True)
        ],
        dtype=np.float32,
    )
    # Sentences with almost no content words ("哈哈", "ok") carry nothing worth keeping.
    contentful = {i for i, b in enumerate(bags) if len(b) >= 2} or set(range(len(sents)))
    chosen: list[int] = []
    used = 0
    for idx in np.argsort(-score, kind="stable"):
        i = int(idx)
        if i not in contentful:
            continue
        line = f"{sents[i][1]}: {sents[i][2]}" if labels else sents[i][2]
        cost = counter.count(line) + 1
        if used + cost > max_tokens:
            continue
        chosen.append(i)
        used += cost
    chosen.sort()
    return "\n".join(f"{sents[i][1]}: {sents[i][2]}" if labels else sents[i][2] for i in chosen)


def summarize_turns(
    turns: Sequence[Turn],
    *,
    counter: TokenCounter,
    max_tokens: int,
    llm: ChatClient | None = None,
    timeout: float | None = None,
    labels: bool = True,
) -> SummaryText:
    """Summarise `turns` in at most about `max_tokens` tokens: with `llm` if given (falling back to the
    extractive summary when the call fails, noting the error), else extractively."""
    if llm is not None:
        words = max(20, int(max_tokens * 0.6))
        messages = [
            {"role": "system", "content": load_prompt("summary").format(max_words=words)},
            {"role": "user", "content": transcript(turns)},
        ]
        try:
            result = llm.complete(messages, purpose="summary", max_tokens=max_tokens, timeout=timeout)
            text = counter.truncate(result.content.strip(), max_tokens)
            if text:
                return SummaryText(text=text, method="llm")
            error = "empty summary"
        except LLMError as exc:
            error = str(exc)
        log.warning("summary LLM failed, using the extractive summary: %s", error)
        return SummaryText(
            text=extractive_summary(turns, counter, max_tokens, labels=labels),
            method="extractive",
            error=error,
        )
    return SummaryText(
        text=extractive_summary(turns, counter, max_tokens, labels=labels), method="extractive"
    )


def covered_seq(summaries: Sequence[dict[str, Any]]) -> int:
    """The last seq any of the session's summaries covers (-1 when none)."""
    return max((int(s["last_seq"]) for s in summaries), default=-1)


def render(summary: dict[str, Any]) -> str:
    """How a summary reads in the system prompt: a header naming its range and method, then the text."""
    label = "extractive summary (selected sentences)" if summary["method"] == "extractive" else "summary"
    return (
        f"Earlier in this conversation (turns {summary['first_seq']}-{summary['last_seq']}, {label}):\n"
        f"{summary['content']}"
    )


def create_summary(
    memory: Memory,
    user_id: str,
    session_id: str,
    first_seq: int,
    last_seq: int,
    *,
    kind: str,
    llm: ChatClient | None,
    max_tokens: int,
) -> dict[str, Any] | None:
    """Summarise turns first_seq..last_seq of the session and store the summary; returns its row.

    The range is clipped to start after what is already covered, so a queued job that an overflow
    compression overtook does nothing (returns None), and running a job twice stores one summary.
    """
    store = memory.store
    existing = store.session_summaries(user_id, session_id)
    first_seq = max(first_seq, covered_seq(existing) + 1)
    if first_seq > last_seq:
        return None
    turns = store.session_turns_between(user_id, session_id, first_seq, last_seq)
    if not turns:
        return None
    counter = memory.counter
    source_tokens = sum(counter.message_tokens({"role": t.role, "content": t.content}) for t in turns)
    # A summary is there to save tokens: at most a third of what it replaces.
    max_tokens = max(24, min(max_tokens, source_tokens // 3))
    made = summarize_turns(turns, counter=counter, max_tokens=max_tokens, llm=llm)
    if not made.text:
        return None
    row: dict[str, Any] = {
        "user_id": user_id,
        "session_id": session_id,
        "first_seq": first_seq,
        "last_seq": last_seq,
        "kind": kind,
        "method": made.method,
        "content": made.text,
        "source_turn_ids": [t.id for t in turns if t.id is not None],
        "source_tokens": source_tokens,
        "created_at": utcnow().timestamp(),
    }
    row["tokens"] = counter.count(render(row))
    with store.transaction() as tx:
        # Re-check inside the write lock: another worker may have covered the range meanwhile.
        if covered_seq(store.session_summaries(user_id, session_id)) >= first_seq:
            return None
        row["id"] = store.summary_add(tx, row)
    if made.error:
        row["error"] = made.error
    return row


def fold_summaries(
    memory: Memory, user_id: str, session_id: str, *, llm: ChatClient | None, max_tokens: int
) -> dict[str, Any] | None:
    """Merge all of the session's summaries into one covering their whole range (for when the summaries
    themselves grow too long). Returns the merged row, or None when there were fewer than two."""
    store = memory.store
    rows = store.session_summaries(user_id, session_id)
    if len(rows) < 2:
        return None
    pseudo = [
        Turn(user_id=user_id, session_id=session_id, role="system", content=r["content"], speaker="summary")
        for r in rows
    ]
    made = summarize_turns(pseudo, counter=memory.counter, max_tokens=max_tokens, llm=llm, labels=False)
    row: dict[str, Any] = {
        "user_id": user_id,
        "session_id": session_id,
        "first_seq": min(r["first_seq"] for r in rows),
        "last_seq": max(r["last_seq"] for r in rows),
        "kind": "merged",
        "method": made.method,
        "content": made.text,
        "source_turn_ids": sorted({i for r in rows for i in r["source_turn_ids"]}),
        "source_tokens": sum(int(r["source_tokens"]) for r in rows),
        "created_at": utcnow().timestamp(),
    }
    row["tokens"] = memory.counter.count(render(row))
    with store.transaction() as tx:
        store.summaries_delete(tx, user_id, [r["id"] for r in rows])
        row["id"] = store.summary_add(tx, row)
    return row


# Summaries may fill this share of the overflow limit before they are folded into one.
SUMMARY_SHARE = 0.3


def compress(
    memory: Memory,
    user_id: str,
    session_id: str,
    *,
    fixed: int,
    limit: int,
    summaries: Sequence[dict[str, Any]],
    llm: ChatClient | None,
) -> dict[str, Any]:
    """Overflow compression: summarise the oldest part of the session's live window (the turns after
    the covered range) so that the live context — `fixed` tokens (system prompt and new message),
    summaries, the turns kept — comes to about half of `limit`. Folds the summaries into one when
    they pass `SUMMARY_SHARE` of the limit. Returns an event for the trace; its "state" tells the
    scheduler where the live window now starts.
    """
    counter = memory.counter
    raw = memory.store.session_turns_after(user_id, session_id, covered_seq(summaries))
    max_summary = default_max_tokens(limit)
    target = max(0, limit // 2 - fixed - sum(int(s["tokens"]) for s in summaries) - max_summary)
    keep = used = 0
    for t in reversed(raw):
        cost = counter.message_tokens({"role": t.role, "content": t.content})
        if used + cost > target:
            break
        used += cost
        keep += 1
    to_summarise = raw[: len(raw) - keep]
    event: dict[str, Any] = {"summarised_turns": len(to_summarise), "kept_turns": keep, "state": {}}
    if not to_summarise:
        event["unresolved"] = "nothing left to summarise: the new message alone is over the limit"
        return event
    first, last = to_summarise[0].seq, to_summarise[-1].seq
    assert first is not None and last is not None
    row = create_summary(
        memory, user_id, session_id, first, last, kind="overflow", llm=llm, max_tokens=max_summary
    )
    if row is not None:
        event["summary"] = {"id": row["id"], "first_seq": first, "last_seq": last, "method": row["method"]}
    total = sum(int(s["tokens"]) for s in memory.store.session_summaries(user_id, session_id))
    if total > SUMMARY_SHARE * limit:
        merged = fold_summaries(memory, user_id, session_id, llm=llm, max_tokens=max_summary)
        if merged is not None:
            event["folded_into"] = merged["id"]
    # The kept turns are counted again from the store by the scheduler.
    event["state"] = {"live_tokens": 0, "live_seq": last + 1}
    return event


def upgrade_summary(
    memory: Memory,
    user_id: str,
    session_id: str,
    first_seq: int,
    last_seq: int,
    *,
    llm: ChatClient,
    max_tokens: int,
) -> dict[str, Any] | None:
    """Replace the extractive summary of exactly first_seq..last_seq (made at once when a topic ended)
    by the LLM's summary. Does nothing when there is no such extractive summary, or when the LLM fails
    (the extractive one stays). Idempotent: an LLM summary is not replaced again."""
    store = memory.store
    old = next(
        (
            s
            for s in store.session_summaries(user_id, session_id)
            if s["first_seq"] == first_seq and s["last_seq"] == last_seq and s["method"] == "extractive"
        ),
        None,
    )
    if old is None:
        return None
    turns = store.session_turns_between(user_id, session_id, first_seq, last_seq)
    if not turns:
        return None
    counter = memory.counter
    max_tokens = max(24, min(max_tokens, int(old["source_tokens"]) // 3))
    made = summarize_turns(turns, counter=counter, max_tokens=max_tokens, llm=llm)
    if made.method != "llm" or not made.text:
        return None
    row = {**old, "method": "llm", "content": made.text, "created_at": utcnow().timestamp()}
    row["source_turn_ids"] = [t.id for t in turns if t.id is not None]
    row["tokens"] = counter.count(render(row))
    with store.transaction() as tx:
        store.summaries_delete(tx, user_id, [old["id"]])
        row.pop("id", None)
        row["id"] = store.summary_add(tx, row)
    return row


@task("summary")
def summary_task(ctx: TaskContext, job: Job) -> None:
    """Summarise a finished topic segment (P2). Idempotent: a covered range is not summarised again."""
    if job.session_id is None:
        raise InputError("a summary job needs a session_id")
    p = job.payload
    limit = int(ctx.config.overflow_threshold * ctx.config.model_context)
    if p.get("upgrade") and ctx.llm is not None:
        upgrade_summary(
            ctx.memory,
            job.user_id,
            job.session_id,
            int(p["first_seq"]),
            int(p["last_seq"]),
            llm=ctx.llm,
            max_tokens=int(p.get("max_tokens", default_max_tokens(limit))),
        )
    create_summary(
        ctx.memory,
        job.user_id,
        job.session_id,
        int(p["first_seq"]),
        int(p["last_seq"]),
        kind=str(p.get("reason", "topic")),
        llm=ctx.llm,
        max_tokens=int(p.get("max_tokens", default_max_tokens(limit))),
    )
