"""The turn: lock the session, wait for P1 state, apply commands, compress on overflow, route, retrieve,
assemble, call the LLM, record — and queue the background work.

P0 path of `Scheduler.turn` (one session at a time, in arrival order; sessions run in parallel):

1. take a FIFO ticket for (user, session) and wait for it; take the session's lease in the store
   (so other processes queue too);
2. barrier: wait for the session's queued P1 jobs ("call me 大王" recorded through `record()`);
3. detect commands (regex, no LLM) and apply them inline — consistency blocking;
4. overflow check: when the session's live window (un-summarised turns + summaries + the new message)
   would pass `overflow_threshold * model_context`, summarise its oldest part first — overflow blocking;
5. embed the message once, route it (mode, signals, topic shift);
6. build the context (profile section, session summaries, recent window after the covered range,
   recalled memories) and call the reply LLM;
7. record the user turn, the reply, the message's vectors, the P2 jobs and the trace in ONE transaction;
8. return; the reply's embedding runs after the return, still under the session's lock, so the next
   turn of the session sees it but the user does not wait for it.

Decisions (see docs/design.md):

* Forget-last deletes the previous user message and the replies to it before the reply is generated;
  the command turn itself ("忘掉刚才那句话") is recorded, so the history shows that a deletion was asked
  for, without its content.
* A rename is written to the profile before the reply (other sessions see it at once); the command
  turn's id is added to the fact's lineage in the transaction that records the turn.
* When the reply LLM fails, the user turn is still recorded (marked `reply_failed`) and `ReplyError`
  (an `LLMError`) is raised. Calling `turn()` again with the same message replaces that turn instead of
  duplicating it, and does not apply a forget command twice.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memsched.assemble import assemble
from memsched.commands import (
    Applied,
    Command,
    apply_forget,
    apply_rename,
    detect,
    forget_turns,
    last_message_ids,
)
from memsched.errors import ConfigError, InputError, LLMError, StoreError
from memsched.jobs.queue import Job, JobQueue, Priority, SessionLock, default_owner
from memsched.jobs.tasks import TaskContext, task
from memsched.memory import UNSET, ContextResult, Memory
from memsched.model import Role, Turn, as_utc, content_hash, utcnow
from memsched.profile import PREFERRED_NAME, Profile
from memsched.router import Route, Router, topic_similarity
from memsched.summarize import covered_seq, create_summary, fold_summaries, render
from memsched.trace import Metrics, Stopwatch

if TYPE_CHECKING:
    from memsched.jobs.worker import Worker
    from memsched.llm.client import ChatClient

log = logging.getLogger("memsched.scheduler")

DEFAULT_BARRIER_TIMEOUT = 10.0  # seconds a turn waits for the session's P1 jobs before going on
DEFAULT_LOCK_TIMEOUT = 120.0  # seconds a turn waits for another process's lease on the session
TOPIC_WINDOW = 6  # turns of the current segment the new message is compared with
TOPIC_MIN_USER_TURNS = 2  # a segment needs this many user turns before a shift closes it
SUMMARY_SHARE = 0.3  # summaries may fill this share of the overflow limit before they are folded

# Which embedder judges topic shifts, best first (the names of `memory.embedders`).
TOPIC_EMBEDDER_PREFERENCE = ("minilm", "wordllama", "openai", "hash")


class ReplyError(LLMError):
    """The reply LLM call failed. The user's message was recorded anyway (`turn_id`); the turn's trace
    is `trace_id`. Call `turn()` again with the same message to retry: the retry replaces the turn."""

    def __init__(self, message: str, *, turn_id: int | None, trace_id: str) -> None:
        super().__init__(message)
        self.turn_id = turn_id
        self.trace_id = trace_id


@dataclass(slots=True)
class TurnResult:
    """What one turn (or `prepare`) did: the reply (None from `prepare`), the messages sent to the LLM,
    the trace, the ids of the turns recorded and of the jobs queued."""

    reply: str | None
    messages: list[dict[str, Any]]
    trace: dict[str, Any]
    turn_ids: list[int]
    jobs: list[int]

    @property
    def trace_id(self) -> str:
        return str(self.trace["id"])

    @property
    def route(self) -> dict[str, Any]:
        return dict(self.trace["route"])


@dataclass(slots=True)
class RecordResult:
    """What `record()` stored: the turn, the P1 jobs its commands queued, and the commands found."""

    turn: Turn
    jobs: list[int]
    commands: list[dict[str, Any]] = field(default_factory=list)


# -- per-session FIFO gates ------------------------------------------------------------------------


class _Gate:
    __slots__ = ("cond", "next", "refs", "serving")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.next = 0
        self.serving = 0
        self.refs = 0


@dataclass(slots=True)
class _Ticket:
    key: tuple[str, str]
    gate: _Gate
    number: int
    released: bool = False


class _Gates:
    """One FIFO queue per (user, session): tickets are served in the order they were taken.

    A plain Lock would not do: threads blocked on it wake in no particular order, and the second of
    two messages sent 10 ms apart could be answered first.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[tuple[str, str], _Gate] = {}

    def take(self, key: tuple[str, str]) -> _Ticket:
        with self._lock:
            gate = self._gates.get(key)
            if gate is None:
                gate = self._gates[key] = _Gate()
            gate.refs += 1
        with gate.cond:
            number = gate.next
            gate.next += 1
        return _Ticket(key, gate, number)

    def wait(self, ticket: _Ticket) -> None:
        # No timeout: every holder releases in a finally block, and the reply LLM call it may be
        # waiting on is itself bounded by the client's timeout.
        with ticket.gate.cond:
            ticket.gate.cond.wait_for(lambda: ticket.gate.serving == ticket.number)

    def release(self, ticket: _Ticket) -> None:
        if ticket.released:
            return
        ticket.released = True
        with ticket.gate.cond:
            ticket.gate.serving += 1
            ticket.gate.cond.notify_all()
        with self._lock:
            ticket.gate.refs -= 1
            if ticket.gate.refs == 0 and self._gates.get(ticket.key) is ticket.gate:
                del self._gates[ticket.key]

    def queued(self, key: tuple[str, str]) -> int:
        with self._lock:
            gate = self._gates.get(key)
            return gate.refs if gate is not None else 0


@dataclass(slots=True)
class _Hold:
    """A session held by one turn: its in-process ticket and its store lease."""

    ticket: _Ticket
    user_id: str
    session_id: str
    owner: str | None
    wait_ms: float


# -- the scheduler -----------------------------------------------------------------------------------


class Scheduler:
    """Runs turns for a `Memory`: ordering, blocking rules, routing, context, the reply call, recording.

    `llm` writes the replies (`turn()` needs it; `prepare()`/`record()` do not). `summary_llm` writes
    summaries on overflow (default: `llm`; None for the offline extractive summary). With
    `start_workers`, `workers` threads run queued jobs in this process; otherwise run
    `memsched worker` beside it. `cross_process_lock` also takes the session's lease in the store,
    so turns of one session are serialised across processes (FIFO order is kept within a process).
    """

    def __init__(
        self,
        memory: Memory,
        *,
        llm: ChatClient | None = None,
        summary_llm: ChatClient | None = UNSET,
        queue: JobQueue | None = None,
        start_workers: bool = True,
        workers: int = 1,
        router: Router | None = None,
        cross_process_lock: bool = True,
        barrier_timeout: float = DEFAULT_BARRIER_TIMEOUT,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        post_threads: int = 2,
    ) -> None:
        self.memory = memory
        self.store = memory.store
        self.config = memory.config
        self.llm = llm
        self.summary_llm = llm if summary_llm is UNSET else summary_llm
        self.queue = queue if queue is not None else JobQueue(self.store)
        self.locks = SessionLock(self.store)
        self.profile = Profile(self.store)
        self.router = router or Router()
        self.metrics = Metrics(depth=self.queue.depth)
        self.cross_process_lock = cross_process_lock
        self.barrier_timeout = barrier_timeout
        self.lock_timeout = lock_timeout
        # Long enough for the reply call with its retries; renewed after the call.
        self.lease_seconds = max(60.0, 4.0 * self.config.llm_timeout)
        self._gates = _Gates()
        self._post = ThreadPoolExecutor(max_workers=max(1, post_threads), thread_name_prefix="memsched-post")
        self._owner = default_owner("turn")
        params = set(inspect.signature(memory.context).parameters)
        # Memory.context grows `recent_after_seq`/`query_vectors` in a later change; until then the
        # scheduler builds the context itself with the same pieces (see `_context`).
        self._native_context = {"recent_after_seq", "query_vectors"} <= params
        self.topic_embedder = next((n for n in TOPIC_EMBEDDER_PREFERENCE if n in memory.embedders), None)
        if self.topic_embedder is None and memory.embedders:
            self.topic_embedder = next(iter(memory.embedders))
        self.worker: Worker | None = None
        if start_workers:
            from memsched.jobs.worker import Worker

            kwargs: dict[str, Any] = {"llm": self.summary_llm} if self.summary_llm is not None else {}
            self.worker = Worker(memory, threads=workers, queue=self.queue, **kwargs).start()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Finish post-reply work, stop the workers this scheduler started. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._post.shutdown(wait=True)
        if self.worker is not None:
            self.worker.stop()

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public entry points --------------------------------------------------------------------------

    def turn(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> TurnResult:
        """Answer `message` with the reply LLM and record both sides.

        Messages of one session are handled one at a time in arrival order, and each sees every
        earlier one; a rename or forget command takes effect before this very reply. Raises
        `ReplyError` (an `LLMError`) when the LLM fails — the message is recorded all the same.
        """
        if self.llm is None:
            raise ConfigError(
                "turn() needs a reply LLM: pass Scheduler(memory, llm=...), or use prepare()/record()"
            )
        _check(user_id, session_id, message)
        return self._run(
            self._gates.take((user_id, session_id)), user_id, session_id, message, now, timezone, True
        )

    def prepare(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> TurnResult:
        """Everything `turn()` does except the LLM call: returns the messages to send and records `message`.

        Record the reply the caller's own LLM produced with `record(..., "assistant", reply)`.
        """
        _check(user_id, session_id, message)
        return self._run(
            self._gates.take((user_id, session_id)), user_id, session_id, message, now, timezone, False
        )

    async def aturn(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> TurnResult:
        """`turn()` in a worker thread. The session's place in line is taken before the first await,
        so coroutines of one session are answered in the order they called `aturn`."""
        if self.llm is None:
            raise ConfigError("aturn() needs a reply LLM: pass Scheduler(memory, llm=...)")
        _check(user_id, session_id, message)
        ticket = self._gates.take((user_id, session_id))
        return await self._in_thread(ticket, user_id, session_id, message, now, timezone, True)

    async def aprepare(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> TurnResult:
        """`prepare()` in a worker thread, keeping the session's arrival order like `aturn`."""
        _check(user_id, session_id, message)
        ticket = self._gates.take((user_id, session_id))
        return await self._in_thread(ticket, user_id, session_id, message, now, timezone, False)

    async def _in_thread(self, ticket: _Ticket, *args: Any) -> TurnResult:
        started = threading.Event()

        def run() -> TurnResult:
            started.set()
            return self._run(ticket, *args)

        try:
            return await asyncio.to_thread(run)
        except BaseException:
            if not started.is_set():  # the thread never ran: give the place in line back
                self._gates.release(ticket)
            raise

    def record(
        self, user_id: str, session_id: str, role: Role, content: str, *, now: datetime | None = None
    ) -> RecordResult:
        """Record one turn outside `turn()` — e.g. the reply of a client that calls its own LLM.

        A user turn is checked for commands; each becomes a P1 job (`profile_update`, `forget_last`)
        written in the same transaction, which the session's next turn waits for.
        """
        _check(user_id, session_id, content)
        if role not in ("user", "assistant", "system"):
            raise InputError(f"role must be user, assistant or system, got {role!r}")
        hold = self._acquire(self._gates.take((user_id, session_id)), user_id, session_id)
        try:
            at = as_utc(now) if now is not None else utcnow()
            commands = detect(content) if role == "user" else []
            forget_ids: list[int] = []
            if any(c.kind == "forget_last" for c in commands):
                forget_ids = last_message_ids(self.store, user_id, session_id)
            turn = Turn(user_id=user_id, session_id=session_id, role=role, content=content, created_at=at)
            with self.store.transaction() as tx:
                self.store.insert_turns(tx, [turn])
                assert turn.id is not None
                jobs: list[Job] = []
                for cmd in commands:
                    if cmd.kind == "rename" and cmd.value:
                        payload: dict[str, Any] = {
                            "key": PREFERRED_NAME,
                            "value": cmd.value,
                            "at": at.isoformat(),
                            "source_turn_ids": [turn.id],
                            "meta": {"replaces": cmd.old} if cmd.old else {},
                        }
                        jobs.append(_p1("profile_update", user_id, session_id, payload, turn.id))
                    elif cmd.kind == "forget_last" and forget_ids:
                        payload = {"turn_ids": forget_ids, "command_turn_id": turn.id}
                        jobs.append(_p1("forget_last", user_id, session_id, payload, turn.id))
                job_ids = self.queue.enqueue(jobs, tx=tx) if jobs else []
            # Embedding here keeps the next turn's P0 path free of it; the user is not waiting on record().
            self.memory.retriever.index_user(user_id)
            self.metrics.turns.labels(entry="record", outcome="ok").inc()
            log.info(
                "record user=%s session=%s role=%s turn=%s commands=%s jobs=%s",
                user_id,
                session_id,
                role,
                turn.id,
                [c.kind for c in commands],
                job_ids,
            )
            return RecordResult(turn=turn, jobs=job_ids, commands=[c.as_dict() for c in commands])
        finally:
            self._release(hold)

    # -- reading ---------------------------------------------------------------------------------------

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """The stored trace of a turn, or None when there is none with that id."""
        return self.store.trace_get(trace_id)

    def traces(self, user_id: str, session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The user's (or one session's) latest traces, newest first."""
        return self.store.traces_list(user_id, session_id, limit)

    def queued(self, user_id: str, session_id: str) -> int:
        """Turns of the session in this process that are running or waiting for their turn."""
        return self._gates.queued((user_id, session_id))

    def summaries(self, user_id: str, session_id: str) -> list[dict[str, Any]]:
        """The session's stored summaries, in seq order."""
        return self.store.session_summaries(user_id, session_id)

    # -- the session hold -------------------------------------------------------------------------------

    def _acquire(self, ticket: _Ticket, user_id: str, session_id: str) -> _Hold:
        t0 = time.perf_counter()
        try:
            self._gates.wait(ticket)
            owner: str | None = None
            if self.cross_process_lock:
                owner = f"{self._owner}:{uuid.uuid4().hex[:8]}"
                if not self.locks.acquire(
                    user_id, session_id, owner, lease_seconds=self.lease_seconds, timeout=self.lock_timeout
                ):
                    raise StoreError(
                        f"session {user_id}/{session_id} is held by another process for over"
                        f" {self.lock_timeout:g}s; retry later"
                    )
        except BaseException:
            self._gates.release(ticket)
            raise
        return _Hold(ticket, user_id, session_id, owner, (time.perf_counter() - t0) * 1000.0)

    def _release(self, hold: _Hold) -> None:
        try:
            if hold.owner is not None:
                self.locks.release(hold.user_id, hold.session_id, hold.owner)
        except Exception:
            log.exception("releasing the lease of %s/%s failed", hold.user_id, hold.session_id)
        finally:
            self._gates.release(hold.ticket)

    # -- the turn ---------------------------------------------------------------------------------------

    def _run(
        self,
        ticket: _Ticket,
        user_id: str,
        session_id: str,
        message: str,
        now: datetime | None,
        timezone: str | None,
        call_llm: bool,
    ) -> TurnResult:
        sw = Stopwatch()
        hold = self._acquire(ticket, user_id, session_id)
        sw.add("lock_wait", hold.wait_ms)
        handed_off = False
        try:
            result, post = self._turn_locked(sw, hold, user_id, session_id, message, now, timezone, call_llm)
            if post and not self._closed:
                # The reply's vectors are computed after the caller has the reply; the session stays
                # held until they are stored, so the next turn of the session finds them.
                self._post.submit(self._post_turn, hold, user_id)
                handed_off = True
            return result
        finally:
            if not handed_off:
                self._release(hold)

    def _post_turn(self, hold: _Hold, user_id: str) -> None:
        try:
            self.memory.retriever.index_user(user_id)
        except Exception:
            log.exception("embedding the reply of %s/%s failed; the next turn will", user_id, hold.session_id)
        finally:
            self._release(hold)

    def _turn_locked(
        self,
        sw: Stopwatch,
        hold: _Hold,
        user_id: str,
        session_id: str,
        message: str,
        now: datetime | None,
        timezone: str | None,
        call_llm: bool,
    ) -> tuple[TurnResult, bool]:
        at = as_utc(now) if now is not None else utcnow()
        trace_id = uuid.uuid4().hex
        entry = "turn" if call_llm else "prepare"
        blocking: list[dict[str, Any]] = []
        counter = self.memory.counter

        # 2. the P1 barrier
        with sw.stage("barrier_wait"):
            pending = self.queue.pending(user_id, session_id)
            if pending:
                t0 = time.perf_counter()
                ok = self.queue.wait_for(user_id, session_id, Priority.P1, timeout=self.barrier_timeout)
                blocking.append({"kind": "barrier", "jobs": pending, "ok": ok, "ms": _ms(t0)})
                if not ok:
                    log.warning(
                        "P1 barrier timed out after %.1fs for %s/%s (%d jobs): is a worker running?",
                        self.barrier_timeout,
                        user_id,
                        session_id,
                        pending,
                    )

        # A retry of a turn whose reply failed replaces that turn instead of repeating it.
        with sw.stage("retry_check"):
            skip_kinds = self._take_failed_turn(user_id, session_id, message)

        # 3. consistency blocking: commands
        with sw.stage("commands"):
            commands = [c for c in detect(message) if c.kind not in skip_kinds]
        applied: list[Applied] = []
        for cmd in commands:
            t0 = time.perf_counter()
            done = self._apply_inline(cmd, user_id, session_id, at)
            applied.append(done)
            blocking.append(
                {
                    "kind": "consistency",
                    "command": cmd.kind,
                    "rule": cmd.rule,
                    "changed": done.changed,
                    "deleted_turn_ids": done.deleted_turn_ids,
                    "ms": _ms(t0),
                }
            )
        sw.add("commands", sum(e["ms"] for e in blocking if e["kind"] == "consistency"))

        # 4. overflow blocking
        with sw.stage("overflow_check"):
            sections = [s for s in (self.profile.section(user_id), *(a.note for a in applied)) if s]
            state = self.store.session_state(user_id, session_id)
            summaries = self.store.session_summaries(user_id, session_id)
            counts = self._counts(user_id, session_id, state, covered_seq(summaries))
            fixed = counter.messages_tokens(
                [
                    {"role": "system", "content": "\n\n".join([self.config.system_prompt, *sections])},
                    {"role": "user", "content": message},
                ]
            )
            limit = int(self.config.overflow_threshold * self.config.model_context)
            live = counts["live_tokens"] + sum(int(s["tokens"]) for s in summaries) + fixed
        overflow = live > limit
        overflow_info: dict[str, Any] = {"live_tokens": live, "limit": limit}
        if overflow:
            t0 = time.perf_counter()
            event = self._compress(user_id, session_id, fixed, limit, summaries)
            summaries = self.store.session_summaries(user_id, session_id)
            counts = self._counts(
                user_id, session_id, {**state, **event.pop("state")}, covered_seq(summaries)
            )
            live = counts["live_tokens"] + sum(int(s["tokens"]) for s in summaries) + fixed
            event.update(
                {
                    "kind": "overflow",
                    "live_tokens_before": overflow_info["live_tokens"],
                    "live_tokens_after": live,
                    "limit": limit,
                    "ms": _ms(t0),
                }
            )
            blocking.append(event)
            overflow_info["live_tokens_after"] = live
            sw.add("overflow", event["ms"])

        # 5. embed once, route
        with sw.stage("embed_query"):
            qvecs = self.memory.retriever.embed_query(message)
        covered = covered_seq(summaries)
        segment_start = max(int(counts.get("segment_start", 0)), covered + 1)
        with sw.stage("route"):
            similarity, segment_users = self._topic(user_id, session_id, segment_start, qvecs)
            route = self.router.route(
                message,
                now=at,
                timezone=timezone,
                similarity=similarity,
                embedder=self.topic_embedder,
                segment_turns=segment_users,
                min_segment_turns=TOPIC_MIN_USER_TURNS,
                command=bool(commands),
                overflow=overflow,
            )

        # 6. context
        with sw.stage("context"):
            summary_texts = [render(s) for s in summaries]
            ctx = self._context(user_id, session_id, message, at, sections, summary_texts, covered, qvecs)
        tokens = dict(ctx.trace["tokens"])
        used_summaries = summaries if tokens.get("summaries", 0) > 0 else []
        saved_by_summaries = sum(int(s["source_tokens"]) - int(s["tokens"]) for s in used_summaries)
        full_history = counts["history_tokens"] + counter.message_tokens({"role": "user", "content": message})
        tokens.update(
            {
                "saved_by_summaries": max(0, saved_by_summaries),
                "full_history": full_history,
                "saved_vs_full_history": max(0, full_history - int(tokens["total"])),
                "live": live,
                "overflow_limit": limit,
            }
        )
        trace: dict[str, Any] = {
            "id": trace_id,
            "entry": entry,
            "user_id": user_id,
            "session_id": session_id,
            "at": at.isoformat(),
            "ticket": hold.ticket.number,
            "route": route.as_dict(),
            "commands": [c.as_dict() for c in commands],
            "blocking": blocking,
            "overflow": overflow_info,
            "summaries": [
                {
                    k: s[k]
                    for k in ("id", "first_seq", "last_seq", "kind", "method", "tokens", "source_tokens")
                }
                for s in summaries
            ],
            "retrieval": ctx.trace.get("retrieval", {}),
            "selected": ctx.trace.get("selected", []),
            "recent": ctx.trace.get("recent", []),
            "dropped": ctx.trace.get("dropped", 0),
            "tokens": tokens,
            "context_timings_ms": ctx.trace.get("timings_ms", {}),
            "jobs": [],
            "turn_ids": [],
            "llm": None,
            "error": None,
        }

        # 7. the reply
        reply: str | None = None
        llm_ms = 0.0
        error: LLMError | None = None
        if call_llm:
            assert self.llm is not None
            t0 = time.perf_counter()
            try:
                result = self.llm.complete(ctx.messages, purpose="reply")
                reply = result.content
                trace["llm"] = {
                    "model": result.model,
                    "usage": result.usage,
                    "ms": round(result.elapsed_ms, 3),
                }
            except LLMError as exc:
                error = exc
                trace["error"] = f"{type(exc).__name__}: {exc}"
            llm_ms = (time.perf_counter() - t0) * 1000.0
            sw.add("llm", llm_ms)
            if hold.owner is not None:
                self.locks.renew(user_id, session_id, hold.owner, self.lease_seconds)

        # 8. record: the user turn, the reply, vectors, jobs, state and trace in one transaction
        with sw.stage("record"):
            user_turn = Turn(
                user_id=user_id, session_id=session_id, role="user", content=message, created_at=at
            )
            if error is not None:
                user_turn.meta = {"reply_failed": True, "applied": [c.kind for c in commands]}
            turns = [user_turn]
            if reply is not None:
                turns.append(
                    Turn(
                        user_id=user_id,
                        session_id=session_id,
                        role="assistant",
                        content=reply,
                        created_at=utcnow(),
                    )
                )
            with self.store.transaction() as tx:
                self.store.insert_turns(tx, turns)
                assert user_turn.id is not None and user_turn.seq is not None
                for name, vec in qvecs.items():
                    self.store.put_vectors_tx(
                        tx,
                        user_id,
                        self.memory.embedders[name].model_id,
                        [(content_hash(user_turn.text), vec)],
                    )
                for done in applied:
                    if done.fact_id is not None:
                        self.store.fact_add_sources(tx, done.fact_id, [user_turn.id])
                jobs: list[Job] = []
                new_state = self._next_state(counts, turns, covered)
                if route.signals["topic_shift"]:
                    first, last = segment_start, user_turn.seq - 1
                    if last > first:
                        jobs.append(
                            Job(
                                kind="summary",
                                user_id=user_id,
                                session_id=session_id,
                                payload={"first_seq": first, "last_seq": last, "reason": "topic"},
                                priority=Priority.P2,
                                dedupe_key=f"summary:{session_id}:{first}-{last}",
                            )
                        )
                    new_state["segment_start"] = user_turn.seq
                job_ids = self.queue.enqueue(jobs, tx=tx) if jobs else []
                self.store.session_state_update(tx, user_id, session_id, new_state, now=utcnow().timestamp())
                trace["jobs"] = [
                    {"id": jid, "kind": j.kind, "priority": int(j.priority), "payload": j.payload}
                    for jid, j in zip(job_ids, jobs, strict=True)
                ]
                trace["turn_ids"] = [t.id for t in turns if t.id is not None]
                timings = dict(sw.timings)
                timings["total"] = round(sw.total_ms(), 3)
                trace["timings_ms"] = timings
                trace["p0_overhead_ms"] = round(timings["total"] - llm_ms, 3)
                self.store.trace_put(
                    tx,
                    trace_id,
                    user_id,
                    session_id,
                    created_at=at.timestamp(),
                    turn_ids=trace["turn_ids"],
                    data=trace,
                )
        timings = dict(sw.timings)
        timings["total"] = round(sw.total_ms(), 3)
        trace["timings_ms"] = timings
        trace["p0_overhead_ms"] = round(timings["total"] - llm_ms, 3)

        outcome = "error" if error is not None else "ok"
        self.metrics.observe_turn(trace, entry, outcome)
        self._log(trace, route, entry, llm_ms)
        if error is not None:
            raise ReplyError(
                f"the reply LLM call failed: {error}. The user's message was recorded (turn {user_turn.id},"
                f" trace {trace_id}); call turn() again with the same message to retry — the retry replaces it",
                turn_id=user_turn.id,
                trace_id=trace_id,
            ) from error
        result_obj = TurnResult(
            reply=reply,
            messages=ctx.messages,
            trace=trace,
            turn_ids=list(trace["turn_ids"]),
            jobs=job_ids,
        )
        return result_obj, reply is not None

    # -- pieces of the turn -------------------------------------------------------------------------------

    def _take_failed_turn(self, user_id: str, session_id: str, message: str) -> set[str]:
        """If the session ends with this very message marked reply_failed, delete it (the turn will be
        recorded again) and return the command kinds already applied for it."""
        last = self.store.session_turns(user_id, session_id, last=1)
        if not last:
            return set()
        t = last[0]
        if t.role != "user" or t.content != message or not t.meta.get("reply_failed") or t.id is None:
            return set()
        self.memory.delete_turns(user_id, [t.id])
        with self.store.transaction() as tx:
            # The failed attempt's counts are recounted from the turns that remain.
            self.store.session_state_update(
                tx, user_id, session_id, dict(COUNTS_RESET), now=utcnow().timestamp()
            )
        return set(t.meta.get("applied", []))

    def _apply_inline(self, cmd: Command, user_id: str, session_id: str, at: datetime) -> Applied:
        if cmd.kind == "rename":
            return apply_rename(self.profile, user_id, cmd, at=at)
        done = apply_forget(self.memory, user_id, session_id, cmd)
        with self.store.transaction() as tx:
            self.store.session_state_update(
                tx, user_id, session_id, dict(COUNTS_RESET), now=utcnow().timestamp()
            )
        return done

    def _counts(self, user_id: str, session_id: str, state: dict[str, Any], covered: int) -> dict[str, Any]:
        """The session's token counts brought up to date by counting only turns not yet counted.

        `history_tokens` is every stored turn of the session (what sending it all would cost);
        `live_tokens` is the turns after the summarised range. Counting is incremental (state keeps
        the next seq to count), so the P0 path reads no old turns.
        """
        counter = self.memory.counter
        out = {
            "segment_start": int(state.get("segment_start", 0)),
            "history_tokens": int(state.get("history_tokens", 0)),
            "history_seq": int(state.get("history_seq", 0)),
            "live_tokens": int(state.get("live_tokens", 0)),
            "live_seq": int(state.get("live_seq", 0)),
        }
        if out["live_seq"] <= covered:  # a summary now covers turns that were counted as live
            out["live_tokens"], out["live_seq"] = 0, covered + 1
        start = min(out["history_seq"], out["live_seq"])
        for t in self.store.session_turns_after(user_id, session_id, start - 1):
            assert t.seq is not None
            cost = counter.message_tokens({"role": t.role, "content": t.content})
            if t.seq >= out["history_seq"]:
                out["history_tokens"] += cost
            if t.seq >= out["live_seq"]:
                out["live_tokens"] += cost
            out["history_seq"] = max(out["history_seq"], t.seq + 1)
            out["live_seq"] = max(out["live_seq"], t.seq + 1)
        return out

    def _next_state(self, counts: dict[str, Any], new_turns: Sequence[Turn], covered: int) -> dict[str, Any]:
        counter = self.memory.counter
        state = dict(counts)
        for t in new_turns:
            assert t.seq is not None
            cost = counter.message_tokens({"role": t.role, "content": t.content})
            if t.seq >= state["history_seq"]:
                state["history_tokens"] += cost
                state["history_seq"] = t.seq + 1
            if t.seq >= state["live_seq"] and t.seq > covered:
                state["live_tokens"] += cost
                state["live_seq"] = t.seq + 1
        return state

    def _compress(
        self, user_id: str, session_id: str, fixed: int, limit: int, summaries: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Summarise the oldest part of the live window so it falls to about half the limit."""
        counter = self.memory.counter
        covered = covered_seq(summaries)
        raw = self.store.session_turns_after(user_id, session_id, covered)
        max_summary = default_max_tokens(limit)
        target = max(0, limit // 2 - fixed - sum(int(s["tokens"]) for s in summaries) - max_summary)
        keep = 0
        used = 0
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
            self.memory,
            user_id,
            session_id,
            first,
            last,
            kind="overflow",
            llm=self.summary_llm,
            max_tokens=max_summary,
        )
        if row is not None:
            event["summary"] = {
                "id": row["id"],
                "first_seq": first,
                "last_seq": last,
                "method": row["method"],
            }
        total = sum(int(s["tokens"]) for s in self.store.session_summaries(user_id, session_id))
        if total > SUMMARY_SHARE * limit:
            merged = fold_summaries(
                self.memory, user_id, session_id, llm=self.summary_llm, max_tokens=max_summary
            )
            if merged is not None:
                event["folded_into"] = merged["id"]
        event["state"] = {"live_tokens": used, "live_seq": last + 1}
        return event

    def _topic(
        self, user_id: str, session_id: str, segment_start: int, qvecs: dict[str, np.ndarray]
    ) -> tuple[float | None, int]:
        """(similarity of the message to the current segment's last turns, user turns in that window)."""
        name = self.topic_embedder
        window = [
            t
            for t in self.store.session_turns(user_id, session_id, last=TOPIC_WINDOW)
            if (t.seq or 0) >= segment_start
        ]
        users = sum(1 for t in window if t.role == "user")
        if name is None or name not in qvecs or not window:
            return None, users
        embedder = self.memory.embedders[name]
        ids = [t.id for t in window if t.id is not None]
        stored = self.store.turn_vectors(user_id, embedder.model_id, ids)
        missing = [t for t in window if t.id not in stored]
        vectors = list(stored.values())
        if missing:
            vectors.extend(embedder.embed([t.text for t in missing]))
        return topic_similarity(qvecs[name], vectors), users

    def _context(
        self,
        user_id: str,
        session_id: str,
        message: str,
        at: datetime,
        sections: list[str],
        summaries: list[str],
        covered: int,
        qvecs: dict[str, np.ndarray],
    ) -> ContextResult:
        if self._native_context:
            return self.memory.context(
                user_id,
                message,
                session_id=session_id,
                now=at,
                system_sections=sections,
                summaries=summaries,
                recent_after_seq=covered,
                query_vectors=qvecs,
            )
        return build_context(
            self.memory,
            user_id,
            message,
            session_id=session_id,
            now=at,
            system_sections=sections,
            summaries=summaries,
            recent_after_seq=covered,
            query_vectors=qvecs,
        )

    def _log(self, trace: dict[str, Any], route: Route, entry: str, llm_ms: float) -> None:
        signals = ",".join(k for k, v in route.signals.items() if v) or "-"
        blocking = ",".join(f"{e['kind']}:{e['ms']:.1f}" for e in trace["blocking"]) or "-"
        log.info(
            "%s user=%s session=%s trace=%s mode=%s signals=%s tokens=%s p0_ms=%.1f llm_ms=%.1f blocking=%s"
            " jobs=%d outcome=%s",
            entry,
            trace["user_id"],
            trace["session_id"],
            trace["id"],
            route.mode,
            signals,
            trace["tokens"].get("total"),
            trace["p0_overhead_ms"],
            llm_ms,
            blocking,
            len(trace["jobs"]),
            "error" if trace["error"] else "ok",
            extra={"trace_id": trace["id"], "event": entry},
        )


# -- context without Memory.context's missing parameters ----------------------------------------------


def build_context(
    memory: Memory,
    user_id: str,
    message: str,
    *,
    session_id: str,
    now: datetime,
    system_sections: Sequence[str],
    summaries: Sequence[str],
    recent_after_seq: int,
    query_vectors: dict[str, np.ndarray],
) -> ContextResult:
    """`Memory.context` with two more inputs: the recent window starts after `recent_after_seq` (the
    summarised range) and the query vectors are the ones the router already computed.

    To be replaced by `Memory.context(recent_after_seq=..., query_vectors=...)`; the trace has the
    same shape.
    """
    cfg = memory.config
    timings: dict[str, float] = {}
    t_start = time.perf_counter()
    t0 = time.perf_counter()
    recent = [
        t
        for t in memory.store.session_turns(user_id, session_id, last=cfg.recent_max_turns)
        if t.seq is not None and t.seq > recent_after_seq
    ]
    timings["recent"] = _ms(t0)
    t0 = time.perf_counter()
    memory.retriever.index_user(user_id)
    timings["backfill"] = _ms(t0)
    retrieval = memory.retriever.retrieve(
        user_id, message, exclude={t.id for t in recent if t.id is not None}, query_vectors=query_vectors
    )
    timings.update(retrieval.timings_ms)
    t0 = time.perf_counter()
    top = retrieval.candidates[:200]
    by_id = {t.id: t for t in memory.store.get_turns(user_id, [c.turn_id for c in top])}
    ranked = [by_id[c.turn_id] for c in top if c.turn_id in by_id]
    timings["load"] = _ms(t0)
    t0 = time.perf_counter()
    result = assemble(
        counter=memory.counter,
        budget=cfg.budget,
        system_prompt=cfg.system_prompt,
        new_message=message,
        recalled=ranked,
        recent=recent,
        recent_share=cfg.recent_share,
        recent_max_turns=cfg.recent_max_turns,
        system_sections=system_sections,
        summaries=summaries,
    )
    timings["assemble"] = _ms(t0)
    timings["total"] = _ms(t_start)
    reasons = {c.turn_id: c for c in top}
    trace = {
        "user_id": user_id,
        "session_id": session_id,
        "at": now.isoformat(),
        "query": message,
        "budget": cfg.budget,
        "retrieval": retrieval.trace(),
        "selected": [
            {
                "turn_id": t.id,
                "session_id": t.session_id,
                "reason": reasons[t.id].reason if t.id in reasons else "",
                "fused": round(reasons[t.id].fused, 6) if t.id in reasons else None,
            }
            for t in sorted(result.recalled, key=lambda t: (t.created_at, t.id or 0))
        ],
        "recent": [t.id for t in result.recent],
        "dropped": result.dropped,
        "tokens": result.tokens,
        "timings_ms": timings,
    }
    return ContextResult(messages=result.messages, trace=trace, assembly=result)


# -- helpers ---------------------------------------------------------------------------------------------


def _p1(kind: str, user_id: str, session_id: str, payload: dict[str, Any], turn_id: int) -> Job:
    return Job(
        kind=kind,
        user_id=user_id,
        session_id=session_id,
        payload=payload,
        priority=Priority.P1,
        ordered=True,
        dedupe_key=f"{kind}:{turn_id}",
    )


def _check(user_id: str, session_id: str, message: str) -> None:
    if not user_id or not isinstance(user_id, str):
        raise InputError("user_id must be a non-empty string")
    if not session_id or not isinstance(session_id, str):
        raise InputError("session_id must be a non-empty string")
    if not isinstance(message, str) or not message.strip():
        raise InputError("the message must be a non-empty string")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
