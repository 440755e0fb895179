"""The turn: lock the session, wait for P1 state, apply commands, compress on overflow, route, retrieve,
assemble, call the LLM, record — and queue the background work.

P0 path of `Scheduler.turn` (one session at a time, in arrival order; sessions run in parallel):

1. take a FIFO ticket for (user, session) and wait for it; take the session's lock in the store
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
import contextlib
import functools
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from memsched.assemble import base_tokens, check_budget
from memsched.busy import done, one_thread
from memsched.classify import ModeClassifier
from memsched.client_history import FIRST_SEQ, unseen_prefix
from memsched.client_history import META_KEY as CLIENT_HISTORY
from memsched.commands import (
    COUNTS_RESET,
    Applied,
    Command,
    apply_forget,
    apply_forget_all,
    apply_forget_topic,
    apply_rename,
    detect,
    keeps_turn,
    last_message_ids,
    mark_forget_command,
    named,
    next_seq,
)
from memsched.companion import Before, Companion, Plan
from memsched.embed.base import keeps_vector
from memsched.embed.batch import after_reply
from memsched.errors import ConfigError, InputError, LLMError
from memsched.jobs.queue import Job, JobQueue, Priority, SessionLock, recover_dead_owners
from memsched.jobs.worker import ForegroundGate
from memsched.memory import UNSET, ContextResult, Memory
from memsched.model import Role, Turn, as_utc, content_hash, utcnow
from memsched.profile import DEFAULT_PROFILE_SHARE, PREFERRED_NAME, TIMEZONE, Profile
from memsched.profile_extract import apply as apply_facts
from memsched.profile_extract import extract as extract_facts
from memsched.router import NO_PROTOTYPES, Prototypes, Route, Router, prototype_weights
from memsched.sessions import SessionHold, SessionLine, Ticket
from memsched.strategy import StrategyTable
from memsched.summarize import compress, covered_seq, create_summary, default_max_tokens, render
from memsched.text.segment import cjk_ratio
from memsched.text.timeexpr import clock_line, local_now, stamp
from memsched.topic import TopicJudgement, advance, contentful, judge, topic_params_for
from memsched.trace import Metrics, Stopwatch
from memsched.vision import (
    NOT_DESCRIBED,
    Caption,
    Captioner,
    Image,
    captioner_from_config,
    describe_all,
    with_captions,
)
from memsched.zones import is_fixed, zone_for

if TYPE_CHECKING:
    from memsched.jobs.worker import Worker
    from memsched.llm.client import ChatClient
    from memsched.paging import Paging
    from memsched.retrieve import Retrieval

log = logging.getLogger("memsched.scheduler")

# Bookmark maintenance (merging, alias updates) waits for a quiet moment after a page fills.
MAINTENANCE_DELAY = timedelta(minutes=10)
DEFAULT_BARRIER_TIMEOUT = 10.0  # seconds a turn waits for the session's P1 jobs before going on
DEFAULT_LOCK_TIMEOUT = 120.0  # seconds a turn waits for another process's hold on the session
# Stored turns read back to find the current segment's last user turns (`memsched.topic`).
TOPIC_LOOKBACK = 48
TOPIC_MIN_USER_TURNS = 2  # a segment needs this many user turns before a topic cue closes it


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


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a caller asks of one turn (`Scheduler.turn`, `prepare` and their async forms)."""

    user_id: str
    session_id: str
    message: str  # with its images' captions once they are described
    now: datetime | None = None  # the message's time (default: now)
    timezone: str | None = None  # the user's IANA timezone, else their profile's
    call_llm: bool = True  # False: `prepare` (the caller's own LLM writes the reply)
    system_prompt: str | None = None  # the client's persona, else the configured default
    images: Sequence[Image] = ()
    history: Sequence[tuple[str, str]] = ()  # the client's earlier (role, content) messages
    budget: int | None = None  # the context's token budget (None: the configured one)


@dataclass(slots=True)
class _TurnState:
    """What the stages of one turn hand each other."""

    user_id: str
    session_id: str
    message: str
    at: datetime
    entry: str
    sw: Stopwatch
    hold: SessionHold
    persona: str = ""  # the system prompt: the client's own, or the configured default
    timezone: str | None = None  # the user's IANA timezone: sent with the turn, else their profile's
    captions: list[Caption] = field(default_factory=list)  # the message's images, described
    budget: int | None = None  # the context's token budget the caller asked for (None: the configured one)
    profile_text: str = ""  # the profile section in this turn's system prompt
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    blocking: list[dict[str, Any]] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    overflow: dict[str, Any] = field(default_factory=dict)
    live: int = 0
    limit: int = 0
    covered: int = -1
    segment_start: int = 0
    # The message's vectors by embedder (some may still be computing: read where needed), and the
    # ones the router reads, which it waits for.
    qvecs: Mapping[str, np.ndarray] = field(default_factory=dict)
    route_vecs: dict[str, np.ndarray] = field(default_factory=dict)
    topic_vecs: dict[str, np.ndarray] = field(default_factory=dict)  # the topic judge's
    topic: TopicJudgement | None = None
    pending_seq: int = -1  # the session's pending topic candidate (a user turn's seq), -1: none
    topic_summary: dict[str, Any] | None = None  # the summary a late-confirmed shift made before the context
    retrieval: Future[Retrieval | Paging] | None = None  # started beside routing (Memory.retrieval)
    retrieved_inline: bool = False  # ... or run before it, on the turn's thread (the process was busy)
    route: Route | None = None
    job_ids: list[int] = field(default_factory=list)
    llm_ms: float = 0.0
    before: Before | None = None
    plan: Plan | None = None
    finished: tuple[int, int] | None = None  # a topic segment that this turn closed (first, last seq)
    # The session's state as the overflow check read it (None: read it again).
    state: dict[str, Any] | None = None
    # The session's last turns (read once the turn's commands and compression are done, before
    # retrieval starts): the recent window, the topic lookback and the last turn are cut from it.
    tail: list[Turn] = field(default_factory=list)
    # The client's earlier messages memsched never recorded (`client_history.unseen_prefix`), shown
    # as the oldest part of the recent window; how many earlier messages the client sent.
    unseen: list[Turn] = field(default_factory=list)
    history_sent: int = 0
    # What routing reads that needs none of the message's vectors, read while the model computes
    # them (`Scheduler._route_inputs`): the topic segment's user turns (how many, and the stored
    # vectors of the window the judge compares the message with).
    segment_users: int = 0
    topic_names: list[str] = field(default_factory=list)
    topic_old: list[dict[str, np.ndarray]] = field(default_factory=list)
    topic_pending: list[dict[str, np.ndarray]] = field(default_factory=list)
    topic_old_texts: list[str] = field(default_factory=list)
    topic_pending_texts: list[str] = field(default_factory=list)


# -- the scheduler -----------------------------------------------------------------------------------


class Scheduler:
    """Runs turns for a `Memory`: ordering, blocking rules, routing, context, the reply call, recording.

    `llm` writes the replies (`turn()` needs it; `prepare()`/`record()` do not). `summary_llm` writes
    summaries, on overflow and in the in-process workers (default: `llm`; None for the offline
    extractive summary; pass `client_from_config(config)` for memsched's helper LLM). With
    `start_workers`, `workers` threads run queued jobs in this process; otherwise run
    `memsched worker` beside it. `cross_process_lock` also takes the session's lock in the store,
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
        post_threads: int = 32,
        retrieve_threads: int = 8,
        captioner: Captioner | None = UNSET,
    ) -> None:
        self.memory = memory
        self.store = memory.store
        self.config = memory.config
        self.llm = llm
        self.summary_llm = llm if summary_llm is UNSET else summary_llm
        self.queue = queue if queue is not None else JobQueue(self.store)
        self.locks = SessionLock(self.store)
        recover_dead_owners(self.store)  # session locks of a killed predecessor are free at once
        self.profile = Profile(self.store)
        self.router = router or Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
        # What each moment of the conversation gets: strategies.toml or MEMSCHED_STRATEGIES.
        self.strategies = StrategyTable.load(self.config.strategies)
        # The LLM labeller runs in the workers with the helper LLM (`labeller.py`).
        self.companion = Companion(
            memory,
            self.router,
            self.strategies,
            labeller=self.config.mood_labeller and self.summary_llm is not None,
        )
        # Describes images in messages (None: they are stored as "[image: not described]").
        self.captioner: Captioner | None = (
            captioner_from_config(self.config) if captioner is UNSET else captioner
        )
        self.metrics = Metrics(depth=self.queue.depth, embed=memory.embed_stats)
        self.cross_process_lock = cross_process_lock
        self.barrier_timeout = barrier_timeout
        self.lock_timeout = lock_timeout
        # Long enough for the reply call with its retries; renewed after the call.
        self.lease_seconds = max(60.0, 4.0 * self.config.llm_timeout)
        # Each session's line in this process, and its store lock across processes.
        self.sessions = SessionLine(
            self.locks if cross_process_lock else None,
            lease_seconds=self.lease_seconds,
            lock_timeout=lock_timeout,
        )
        self.gate = ForegroundGate()  # P2 workers of this process wait while a turn is in flight
        # A reply's vectors are computed on one of these after the client has the reply, and the
        # session stays held until they are stored. The thread mostly waits for the batched model:
        # with 8 of them, 50 concurrent sessions kept all busy and a session's next message waited
        # ~0.3 s for its lock on average; with 32, ~0.2 s (BENCHMARKS.md "Proxy in session 18").
        self._post = ThreadPoolExecutor(max_workers=max(1, post_threads), thread_name_prefix="memsched-post")
        # Cores this process's turns may run on (in `memsched serve`, those left beside the embedding
        # dispatcher's: `memsched.affinity`): with more turns in flight, a turn keeps its work on its
        # own thread (`_busy`, `memsched.busy`).
        self.cores = (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        )
        # Each turn's retrieval runs on one of these while the turn's own thread routes (not busy).
        self._fore = ThreadPoolExecutor(
            max_workers=max(1, retrieve_threads), thread_name_prefix="memsched-retrieve"
        )
        self.topic_params = topic_params_for(memory.embedders)
        self.worker: Worker | None = None
        if start_workers:
            from memsched.jobs.worker import Worker, parse_window

            # The workers summarise with the same LLM as overflow compression (None: extractive).
            window = parse_window(self.config.p2_window) if self.config.p2_window else None
            self.worker = Worker(
                memory,
                threads=workers,
                queue=self.queue,
                llm=self.summary_llm,
                p2_window=window,
                gate=self.gate,
            ).start()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Finish post-reply work, stop the workers this scheduler started. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._post.shutdown(wait=True)
        self._fore.shutdown(wait=True)
        self.sessions.close()
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
        system_prompt: str | None = None,
        images: Sequence[Image] = (),
        history: Sequence[tuple[str, str]] = (),
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
        _check(user_id, session_id, message or _image_only(images))
        request = TurnRequest(
            user_id, session_id, message, now, timezone, True, system_prompt, images, history
        )
        return self._run(request, self.sessions.take(user_id, session_id))

    def prepare(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        images: Sequence[Image] = (),
        hold: SessionHold | None = None,
        history: Sequence[tuple[str, str]] = (),
        budget: int | None = None,
    ) -> TurnResult:
        """Everything `turn()` does except the LLM call: returns the messages to send and records `message`.

        Record the reply the caller's own LLM produced with `record(..., "assistant", reply)`. With
        `hold` (from `hold_session`), the session stays held after the call, so pass the same hold
        to that `record` and no other turn of the session comes between the message and its reply.
        `budget`: the context's token budget (default: the configured one), kept as `preview` keeps it.
        """
        _check(user_id, session_id, message or _image_only(images))
        _check_hold(hold, user_id, session_id)
        request = TurnRequest(
            user_id, session_id, message, now, timezone, False, system_prompt, images, history, budget
        )
        if hold is not None:
            return self._run(request, None, hold)
        return self._run(request, self.sessions.take(user_id, session_id))

    async def aturn(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        images: Sequence[Image] = (),
        history: Sequence[tuple[str, str]] = (),
    ) -> TurnResult:
        """`turn()` in a worker thread. The session's place in line is taken before the first await,
        so coroutines of one session are answered in the order they called `aturn`."""
        if self.llm is None:
            raise ConfigError("aturn() needs a reply LLM: pass Scheduler(memory, llm=...)")
        _check(user_id, session_id, message or _image_only(images))
        request = TurnRequest(
            user_id, session_id, message, now, timezone, True, system_prompt, images, history
        )
        return await self._in_thread(request, self.sessions.take(user_id, session_id), None)

    async def aprepare(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        images: Sequence[Image] = (),
        hold: SessionHold | None = None,
        history: Sequence[tuple[str, str]] = (),
        budget: int | None = None,
    ) -> TurnResult:
        """`prepare()` in a worker thread, keeping the session's arrival order like `aturn`."""
        _check(user_id, session_id, message or _image_only(images))
        _check_hold(hold, user_id, session_id)
        request = TurnRequest(
            user_id, session_id, message, now, timezone, False, system_prompt, images, history, budget
        )
        ticket = None if hold is not None else self.sessions.take(user_id, session_id)
        return await self._in_thread(request, ticket, hold)

    async def aprepare_held(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        images: Sequence[Image] = (),
        history: Sequence[tuple[str, str]] = (),
    ) -> tuple[SessionHold, TurnResult]:
        """`ahold_session` then `aprepare` with that hold, in one trip to a worker thread: returns
        the hold (give it to `record` and `release_session`) and the prepared turn. The place in
        line is taken at the call. If preparing fails the session is released; if the caller is
        cancelled meanwhile, the session is released once the thread is done with it."""
        _check(user_id, session_id, message or _image_only(images))
        request = TurnRequest(
            user_id, session_id, message, now, timezone, False, system_prompt, images, history
        )
        ticket = self.sessions.take(user_id, session_id)

        def run() -> tuple[SessionHold, TurnResult]:
            hold = self.sessions.keep(self.sessions.acquire(ticket))
            try:
                return hold, self._run(request, None, hold)
            except BaseException:
                self.sessions.release(hold)
                raise

        task = asyncio.ensure_future(asyncio.to_thread(run))
        try:
            # Shielded: a cancelled caller must not leave the session held by a thread's result.
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._release_abandoned_prepare)
            raise

    def _release_abandoned_prepare(self, task: asyncio.Future[tuple[SessionHold, TurnResult]]) -> None:
        if not task.cancelled() and task.exception() is None:
            self.release_session(task.result()[0])

    async def _in_thread(
        self, request: TurnRequest, ticket: Ticket | None, held: SessionHold | None
    ) -> TurnResult:
        started = threading.Event()

        def run() -> TurnResult:
            started.set()
            return self._run(request, ticket, held)

        try:
            return await asyncio.to_thread(run)
        except BaseException:
            if not started.is_set() and ticket is not None:  # the thread never ran: give the place back
                self.sessions.give_back(ticket)
            raise

    def record(
        self,
        user_id: str,
        session_id: str,
        role: Role,
        content: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        meta: dict[str, Any] | None = None,
        index_after: bool = False,
        hold: SessionHold | None = None,
        trace: dict[str, Any] | None = None,
    ) -> RecordResult:
        """Record one turn outside `turn()` — e.g. the reply of a client that calls its own LLM.

        A user turn is checked for commands; each becomes a P1 job (`profile_update`, `forget_last`)
        written in the same transaction, which the session's next turn waits for. `meta` is stored
        with the turn (e.g. the proxy's tool exchange, or that a streamed reply was cut off).

        The turn's vectors are computed before returning, or with `index_after` after it (the proxy
        answers its client meanwhile; in a busy process, more turns in flight than cores, before it
        all the same: `memsched.busy`): the turn is stored either way, and the session stays held
        until its vectors are, so the session's next turn finds them. With `hold` (from
        `hold_session`) the session is already held; it stays held after the call, or with
        `index_after` until the vectors are stored (then `release_session` leaves it to that).
        `trace` (the trace of the turn this one completes, e.g. the proxy's reply to a prepared
        message) gets this turn's id and jobs and is stored in the same transaction.
        """
        _check(user_id, session_id, content)
        _check_hold(hold, user_id, session_id)
        if role not in ("user", "assistant", "system"):
            raise InputError(f"role must be user, assistant or system, got {role!r}")
        held = hold
        if hold is None:
            hold = self.sessions.acquire(self.sessions.take(user_id, session_id))
        handed_off = False
        try:
            at = as_utc(now) if now is not None else utcnow()
            commands = detect(content, named=named(self.profile, user_id, content)) if role == "user" else []
            forget_ids: list[int] = []
            if any(c.kind == "forget_last" for c in commands):
                forget_ids = last_message_ids(self.store, user_id, session_id)
            turn = Turn(
                user_id=user_id,
                session_id=session_id,
                role=role,
                content=content,
                created_at=at,
                meta=dict(meta or {}),
            )
            timezone = timezone or zone_for(None, self._timezone(user_id), now)
            stamp([turn], timezone)
            with self.store.transaction() as tx:
                self.store.insert_turns(tx, [turn])
                if role == "assistant":  # a reply that accepts the user's apology repairs the mood
                    self.companion.on_reply(tx, user_id, session_id, turn)
                assert turn.id is not None
                jobs: list[Job] = []
                for cmd in commands:
                    if cmd.kind == "rename" and (cmd.value or cmd.old):
                        payload: dict[str, Any] = {
                            "key": PREFERRED_NAME,
                            "value": cmd.value or cmd.old,
                            "at": at.isoformat(),
                            "source_turn_ids": [turn.id],
                            "meta": {"replaces": cmd.old} if cmd.old and cmd.value else {},
                        }
                        if not cmd.value:  # "别叫我X了": X ends, if it is the name in force
                            payload["op"] = "retract"
                        jobs.append(_p1("profile_update", user_id, session_id, payload, turn.id))
                    elif cmd.kind == "forget_last" and forget_ids:
                        payload = {"turn_ids": forget_ids, "command_turn_id": turn.id}
                        jobs.append(_p1("forget_last", user_id, session_id, payload, turn.id))
                    elif cmd.kind in ("forget_topic", "forget_all"):
                        # The payload names only the command turn: no job row keeps the topic.
                        payload = {"command_turn_id": turn.id}
                        jobs.append(_p1(cmd.kind, user_id, session_id, payload, turn.id))
                if role == "user":
                    apply_facts(
                        self.profile, user_id, extract_facts(content), at=at, source_turn_ids=[turn.id], tx=tx
                    )
                if _remembered(timezone, at) and self._timezone(user_id) != timezone:
                    # Sent with the turn: remembered for the user's turns and records that come without.
                    # Only a change is written: a client sends it with every turn, and each would add
                    # its turn id to the fact's sources (a list as long as the history).
                    self.profile.set(user_id, TIMEZONE, timezone, at=at, source_turn_ids=[turn.id], tx=tx)
                jobs.extend(page_jobs([turn], self.store.page_size))
                job_ids = self.queue.enqueue(jobs, tx=tx) if jobs else []
                if trace is not None:
                    trace["turn_ids"] = [*trace.get("turn_ids", []), turn.id]
                    trace["jobs"] = [
                        *trace.get("jobs", []),
                        *(
                            {"id": jid, "kind": j.kind, "priority": int(j.priority), "payload": j.payload}
                            for jid, j in zip(job_ids, jobs, strict=True)
                        ),
                    ]
                    self.store.trace_put(
                        tx,
                        str(trace["id"]),
                        user_id,
                        session_id,
                        created_at=datetime.fromisoformat(str(trace["at"])).timestamp(),
                        turn_ids=trace["turn_ids"],
                        data=trace,
                    )
            # Embedding here keeps the next turn's P0 path free of it; the user is not waiting on record().
            if index_after:
                handed_off = self._index_after(hold, user_id)
            if not handed_off:
                self._index(user_id)
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
            if not handed_off and held is None:
                self.sessions.release(hold)

    def preview(
        self,
        user_id: str,
        message: str,
        *,
        session_id: str | None = None,
        now: datetime | None = None,
        timezone: str | None = None,
        budget: int = UNSET,
        system_prompt: str | None = None,
    ) -> ContextResult:
        """The context for `message` with nothing recorded: what `prepare` would give the user's LLM
        of their memory (the profile and their local time in the system prompt, the session's
        summaries and recent window, recalled memories), for an app that records its turns itself
        (`POST /v1/context` without `record`). Nothing is routed: no strategy section, and commands in
        `message` act only when it is recorded. `system_prompt`: the app's persona (default: the
        configured one), as `prepare` takes it."""
        at = as_utc(now) if now is not None else utcnow()
        zone = timezone or zone_for(None, self._timezone(user_id), now)
        new_zone = timezone if _remembered(timezone, at) else None
        asked = None if budget is UNSET else budget
        sections = [
            clock_line(at, zone),
            self._profile_section(
                user_id, DEFAULT_PROFILE_SHARE, new_zone, zone, budget=asked, message=message, now=at
            ),
        ]
        kwargs: dict[str, Any] = {
            "now": at,
            "timezone": zone,
            "system_sections": [s for s in sections if s],
            "budget": budget,
            "system_prompt": system_prompt or self.config.system_prompt,
        }
        if session_id:
            summaries = self.store.session_summaries(user_id, session_id)
            kwargs["session_id"] = session_id
            kwargs["summaries"] = [render(s) for s in summaries]
            kwargs["recent_after_seq"] = covered_seq(summaries)
        return self.memory.context(user_id, message, **kwargs)

    def _profile_section(
        self,
        user_id: str,
        share: float,
        timezone: str | None = None,
        clock: str | None = None,
        *,
        budget: int | None = None,
        message: str = "",
        now: datetime | None = None,
    ) -> str:
        """The profile's system-prompt section within `share` of the budget (the configured one unless
        `budget`; most important keys first, and what `message` asks about); `timezone` is the one the
        turn came with, shown as the user's timezone already; `clock` the one its dates are read in (the
        turn's)."""
        limit = int((budget if budget is not None else self.config.budget) * share)
        return (
            self.profile.section(
                user_id,
                max_tokens=limit,
                count=self.memory.counter.count,
                timezone=timezone,
                clock=clock,
                message=message,
                now=now,
            )
            if limit > 0
            else ""
        )

    @staticmethod
    def _new_zone(t: _TurnState) -> str | None:
        """The timezone the turn came with when it will be remembered (a real zone, not UTC)."""
        if _remembered(t.timezone, t.at):
            return t.timezone
        return None

    def _timezone(self, user_id: str) -> str | None:
        """The user's timezone as last sent with a turn (the `timezone` profile fact), or None."""
        fact = self.profile.get(user_id, TIMEZONE)
        return fact.value if fact is not None else None

    # -- reading ---------------------------------------------------------------------------------------

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """The stored trace of a turn, or None when there is none with that id."""
        return self.store.trace_get(trace_id)

    def traces(self, user_id: str, session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The user's (or one session's) latest traces, newest first."""
        return self.store.traces_list(user_id, session_id, limit)

    def queued(self, user_id: str, session_id: str) -> int:
        """Turns of the session in this process that are running or waiting for their turn."""
        return self.sessions.queued(user_id, session_id)

    def summaries(self, user_id: str, session_id: str) -> list[dict[str, Any]]:
        """The session's stored summaries, in seq order."""
        return self.store.session_summaries(user_id, session_id)

    # -- the session hold -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def holding(self, user_id: str, session_id: str) -> Iterator[None]:
        """Hold the session as a turn does (in arrival order, across processes), e.g. to delete it
        without a turn of it writing meanwhile."""
        hold = self.sessions.acquire(self.sessions.take(user_id, session_id))
        try:
            yield
        finally:
            self.sessions.release(hold)

    def hold_session(self, user_id: str, session_id: str) -> SessionHold:
        """Take the session (in arrival order, across processes) until `release_session(hold)`.

        For a turn made of several calls: pass the hold to `prepare`/`aprepare` and `record`, and no
        other turn of the session, in this process or another, comes between them (the proxy holds
        the session from preparing the context until the reply is recorded). The store lock is
        renewed meanwhile; if this process dies, the session is free again (at once on PostgreSQL,
        when its lease runs out on SQLite).
        """
        return self.sessions.keep(self.sessions.acquire(self.sessions.take(user_id, session_id)))

    async def ahold_session(self, user_id: str, session_id: str) -> SessionHold:
        """`hold_session` without blocking the event loop; the place in line is taken at the call."""
        ticket = self.sessions.take(user_id, session_id)
        task = asyncio.ensure_future(asyncio.to_thread(self.sessions.acquire, ticket))
        try:
            # Shielded: a cancelled caller must not leave a thread that takes the session for no one.
            hold = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._release_abandoned)
            raise
        return self.sessions.keep(hold)

    def release_session(self, hold: SessionHold) -> None:
        """Give back a session taken with `hold_session` (idempotent). After `record(...,
        index_after=True)` the session is released when the reply's vectors are stored instead."""
        if not hold.handed_off:
            self.sessions.release(hold)

    def _release_abandoned(self, task: asyncio.Future[SessionHold]) -> None:
        if not task.cancelled() and task.exception() is None:
            self.sessions.release(task.result())

    # -- the turn ---------------------------------------------------------------------------------------

    def _run(
        self, request: TurnRequest, ticket: Ticket | None = None, held: SessionHold | None = None
    ) -> TurnResult:
        """One turn; with `held`, in a session the caller holds (and keeps holding), else `ticket`'s."""
        with self.gate.turn():  # background work in this process steps aside meanwhile
            return self._run_gated(request, ticket, held)

    def _run_gated(self, request: TurnRequest, ticket: Ticket | None, held: SessionHold | None) -> TurnResult:
        """One turn; with `held`, in a session the caller holds (and keeps holding), else `ticket`'s."""
        sw = Stopwatch()
        captions: list[Caption] = []
        if request.images:
            # Described before the message is embedded: the caption is part of what the turn says.
            # The session's place in line is already taken, so a slow vision call keeps the order.
            t0 = time.perf_counter()
            captions = describe_all(self.captioner, request.images, hint=request.message)
            request = replace(request, message=with_captions(request.message, captions))
            sw.add("caption", _ms(t0))
        # The message's embedding starts now and runs (in the embedder's dispatcher) while this
        # thread waits for the session and runs the barrier, commands and overflow check.
        with sw.stage("embed_start"):  # a Chinese message's gloss and WordLlama vector: this thread's
            pending = self.memory.query_vectors(request.message)
        if held is not None:
            hold = held
        else:
            assert ticket is not None
            hold = self.sessions.acquire(ticket)
        sw.add("lock_wait", hold.wait_ms)
        handed_off = held is not None  # the caller releases it
        try:
            result, post = self._turn_locked(sw, hold, request, pending, captions)
            if post and not handed_off:
                # The reply's vectors are computed after the caller has the reply; the session stays
                # held until they are stored, so the next turn of the session finds them.
                handed_off = self._index_after(hold, request.user_id)
            return result
        finally:
            if not handed_off:
                self.sessions.release(hold)

    @property
    def _route_names(self) -> frozenset[str]:
        """The embedders whose vectors the router reads: mode prototypes (all but `NO_PROTOTYPES`),
        the classifier's vector blocks. The topic judge's embedders depend on the message's script
        (`TopicParams.embedders`: the gloss vector for Chinese) and are added per turn; any other
        vector changes no routing decision, so the turn does not wait for it before routing."""
        names = {n for n in self.memory.embedders if n not in NO_PROTOTYPES}
        if self.router.classifier is not None:
            names.update(name for name, _, _ in self.router.classifier.dense_blocks)
        return frozenset(names)

    def _index(self, user_id: str) -> None:
        """Embed the user's turns that lack vectors (cheap when none do: the retriever keeps a watermark)."""
        self.memory.retriever.index_user(user_id)

    def _busy(self) -> bool:
        """More turns in flight in this process (their post-reply work included) than it has cores:
        a turn's work stays on its own thread (`memsched.busy`)."""
        return self.gate.active > self.cores

    def _index_after(self, hold: SessionHold, user_id: str) -> bool:
        """Hand `hold` to a post-reply thread that embeds the user's new turns, then releases it.
        In a busy process that work runs here instead, before the caller answers (the session's next
        turn waits for it either way, and a hand-off buys nothing when every core is busy). False
        when closing (the caller keeps the hold; the next turn's backfill embeds them)."""
        # Entered before the hand-off so background work gets no gap to start in.
        self.gate.enter()
        if self._busy():
            hold.handed_off = True
            self._post_turn(hold, user_id)  # releases the hold and leaves the gate
            return True
        try:
            self._post.submit(self._post_turn, hold, user_id)
        except RuntimeError:
            self.gate.leave()
            return False
        hold.handed_off = True
        return True

    def _post_turn(self, hold: SessionHold, user_id: str) -> None:
        try:
            with after_reply():  # nobody waits on these vectors: they may share a later model call
                self._index(user_id)
            # The turn's and the reply's vectors into the in-memory indexes now, not at the next
            # turn's dense search (the session is still held: the next turn waits for this).
            self.memory.refresh(user_id)
        except Exception:
            log.exception("embedding the reply of %s/%s failed; the next turn will", user_id, hold.session_id)
        finally:
            self.sessions.release(hold)
            self.gate.leave()

    def _turn_locked(
        self,
        sw: Stopwatch,
        hold: SessionHold,
        request: TurnRequest,
        pending: Mapping[str, np.ndarray] | None = None,
        captions: Sequence[Caption] = (),
    ) -> tuple[TurnResult, bool]:
        user_id, session_id, message = request.user_id, request.session_id, request.message
        now, call_llm, history = request.now, request.call_llm, request.history
        timezone, system_prompt = request.timezone, request.system_prompt
        t = _TurnState(
            user_id=user_id,
            session_id=session_id,
            message=message,
            at=as_utc(now) if now is not None else utcnow(),
            entry="turn" if call_llm else "prepare",
            sw=sw,
            hold=hold,
            persona=system_prompt or self.config.system_prompt,
            # Sent with the turn, else remembered, else the offset of its timestamp (`memsched.zones`).
            timezone=timezone or zone_for(None, self._timezone(user_id), now),
            captions=list(captions),
            budget=request.budget,
        )
        if t.budget is not None:
            # A budget the caller asked for is kept or refused (as `preview` does), and refused before
            # the message's commands change anything: the persona, the clock and the message must fit.
            system = f"{t.persona}\n\n{clock_line(t.at, t.timezone)}"
            check_budget(t.budget, base_tokens(self.memory.counter, system, message))
        self._barrier(t)
        tail_size = max(TOPIC_LOOKBACK, self.config.recent_max_turns)
        with sw.stage("retry_check"):
            # The session's last turns: the recent window and the topic window (below), and the
            # last turn, which a retry of a turn whose reply failed replaces instead of repeating it.
            tail = self.store.session_turns(user_id, session_id, last=tail_size)
            skip_kinds = self._take_failed_turn(user_id, session_id, message, tail[-2:])
        self._commands(t, skip_kinds or set())
        self._overflow(t)
        with sw.stage("backfill"):
            # Only turns stored outside the scheduler lack vectors here (an import, another client):
            # the check is one indexed query, the embedding runs only when there is work.
            self._index(user_id)
        t.qvecs = pending if pending is not None else self.memory.query_vectors(message)
        t.covered = covered_seq(t.summaries)
        with sw.stage("tail"):
            # Read again only when this turn changed the session's turns: a retry took its failed
            # turn, a command forgot turns, the live window was compressed (`t.blocking`).
            changed = skip_kinds is not None or any(b["kind"] != "barrier" for b in t.blocking)
            t.tail = self.store.session_turns(user_id, session_id, last=tail_size) if changed else tail
            recent = self.memory.recent_turns(user_id, session_id, t.covered, tail=t.tail)
        if history and t.covered < 0:
            # The client's history from before memsched recorded this session: context, never stored.
            first_seq = int((t.state or {}).get(FIRST_SEQ, 0))
            t.unseen = unseen_prefix(self.store, user_id, session_id, history, t.tail, t.at, first_seq)
            t.history_sent = len(history)
            recent = [*t.unseen, *recent]
        # Retrieval needs only the message, its vectors and the recent window, all known now. With a
        # core to spare it runs on another thread (BM25, bookmarks and the soft layer's pool first, the
        # dense layers when the vectors are in) while this one waits for the vectors the router reads
        # and routes: a turn's latency. With more turns in flight than cores, every core is busy
        # anyway and the hand-off to another thread only adds work: it runs here, before routing
        # (`memsched.busy`; +10% turns/s at 50 clients, BENCHMARKS.md "Proxy in session 33").
        retrieve = functools.partial(
            self.memory.retrieval,
            user_id,
            message,
            session_id=session_id,
            recent_after_seq=t.covered,
            query_vectors=t.qvecs,
            recent=recent,
            now=t.at,
            timezone=t.timezone,
        )
        if not self._busy():
            t.retrieval = self._fore.submit(retrieve)
        else:
            with one_thread():  # and the soft-term layer beside the turn layers (`memsched.busy`)
                t.retrieval = done(retrieve)
            t.retrieved_inline = True
        self._route_inputs(t)
        with sw.stage("embed_query"):  # what is left of it after the stages above
            # Only the vectors the router reads are waited for here; the others (the gloss layer's)
            # are read by their dense layer.
            reads = self._route_names
            t.route_vecs = {n: t.qvecs[n] for n in t.qvecs if n in reads}
            # The topic judge's (for Chinese, the gloss vector: the one that separates topics there).
            judges = self.topic_params.embedders(message)
            t.topic_vecs = {
                n: t.route_vecs[n] if n in t.route_vecs else t.qvecs[n] for n in t.qvecs if n in judges
            }
        self._route(t, t.timezone)
        with sw.stage("context"):
            ctx = self._context(t)
        trace = self._trace(t, ctx)
        if t.captions:  # what each image became, and why one was not described
            trace["images"] = [{**c.as_dict(), "ms": c.ms} for c in t.captions]
        if t.history_sent:  # earlier messages the client sent, and how many memsched had not recorded
            trace["client_history"] = {
                "sent": t.history_sent,
                "unseen": len(t.unseen),
                "unseen_in_context": sum(
                    1 for r in (ctx.assembly.recent if ctx.assembly else []) if r.meta.get(CLIENT_HISTORY)
                ),
            }

        reply: str | None = None
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
            t.llm_ms = (time.perf_counter() - t0) * 1000.0
            sw.add("llm", t.llm_ms)
            self.sessions.renew(hold)

        user_turn: Turn | None = None
        if keeps_turn(t.applied):
            user_turn = self._record(t, trace, reply, failed=error is not None)
            if t.finished is not None:
                self._finish_segment(t, trace)
        else:
            # "forget everything about my ex" / "delete everything you know about me": the message
            # names what was forgotten, so neither it, its reply nor its trace is stored.
            self._finish_timings(t, trace)
        self.metrics.observe_turn(trace, t.entry, "error" if error is not None else "ok")
        self._log(trace, t)
        if error is not None:
            raise ReplyError(
                f"the reply LLM call failed: {error}. The user's message was recorded"
                f" (turn {user_turn.id if user_turn else None},"
                f" trace {t.trace_id}); call turn() again with the same message to retry: it replaces it",
                turn_id=user_turn.id if user_turn else None,
                trace_id=t.trace_id,
            ) from error
        out = TurnResult(
            reply=reply, messages=ctx.messages, trace=trace, turn_ids=list(trace["turn_ids"]), jobs=t.job_ids
        )
        return out, reply is not None

    # -- pieces of the turn -------------------------------------------------------------------------------

    def _barrier(self, t: _TurnState) -> None:
        """Wait for the session's queued P1 jobs (state the next turn must see)."""
        with t.sw.stage("barrier_wait"):
            pending = self.queue.pending(t.user_id, t.session_id)
            if not pending:
                return
            t0 = time.perf_counter()
            ok = self.queue.wait_for(t.user_id, t.session_id, Priority.P1, timeout=self.barrier_timeout)
            t.blocking.append({"kind": "barrier", "jobs": pending, "ok": ok, "ms": _ms(t0)})
            if not ok:
                log.warning(
                    "P1 barrier timed out after %.1fs for %s/%s (%d jobs): is a worker running?",
                    self.barrier_timeout,
                    t.user_id,
                    t.session_id,
                    pending,
                )

    def _commands(self, t: _TurnState, skip_kinds: set[str]) -> None:
        """Detect commands and apply them before the reply (consistency blocking)."""
        with t.sw.stage("commands"):
            said = detect(t.message, named=named(self.profile, t.user_id, t.message))
            t.commands = [c for c in said if c.kind not in skip_kinds]
            for cmd in t.commands:
                t0 = time.perf_counter()
                if cmd.kind == "rename":
                    done = apply_rename(self.profile, t.user_id, cmd, at=t.at)
                elif cmd.kind == "forget_topic":
                    done = apply_forget_topic(self.memory, t.user_id, cmd)
                    # Not stored: the session's next turn gets the seq this message would have had.
                    seq = next_seq(self.store, t.user_id, t.session_id)
                    if seq is not None:
                        mark_forget_command(self.store, t.user_id, t.session_id, seq)
                elif cmd.kind == "forget_all":
                    done = apply_forget_all(self.memory, t.user_id, cmd)
                else:
                    done = apply_forget(self.memory, t.user_id, t.session_id, cmd)
                t.applied.append(done)
                t.blocking.append(
                    {
                        "kind": "consistency",
                        "command": cmd.kind,
                        "rule": cmd.rule,
                        "changed": done.changed,
                        "deleted_turn_ids": done.deleted_turn_ids,
                        "ms": _ms(t0),
                    }
                )

    def _overflow(self, t: _TurnState) -> None:
        """Compress the session's live window first when it would pass the overflow limit."""
        counter = self.memory.counter
        with t.sw.stage("overflow_check"):
            # The profile's share until the strategy is chosen (then the strategy's own share).
            t.profile_text = self._profile_section(
                t.user_id,
                DEFAULT_PROFILE_SHARE,
                self._new_zone(t),
                t.timezone,
                message=t.message,
                budget=t.budget,
                now=t.at,
            )
            sections = (clock_line(t.at, t.timezone), t.profile_text, *(a.note for a in t.applied))
            t.sections = [s for s in sections if s]
            state = t.state = self.store.session_state(t.user_id, t.session_id)
            t.summaries = self.store.session_summaries(t.user_id, t.session_id)
            t.counts = self._counts(t.user_id, t.session_id, state, covered_seq(t.summaries))
            system = "\n\n".join([t.persona, *t.sections])
            fixed = counter.messages_tokens(
                [{"role": "system", "content": system}, {"role": "user", "content": t.message}]
            )
            t.limit = int(self.config.overflow_threshold * self.config.model_context)
            t.live = t.counts["live_tokens"] + sum(int(s["tokens"]) for s in t.summaries) + fixed
            t.overflow = {"live_tokens": t.live, "limit": t.limit}
        if t.live <= t.limit:
            return
        t0 = time.perf_counter()
        t.state = None  # compressing writes the state: routing reads it again
        event = compress(
            self.memory,
            t.user_id,
            t.session_id,
            fixed=fixed,
            limit=t.limit,
            summaries=t.summaries,
            llm=self.summary_llm,
        )
        t.summaries = self.store.session_summaries(t.user_id, t.session_id)
        state = {**state, **event.pop("state")}
        t.counts = self._counts(t.user_id, t.session_id, state, covered_seq(t.summaries))
        before, t.live = t.live, t.counts["live_tokens"] + sum(int(s["tokens"]) for s in t.summaries) + fixed
        event.update(
            {"kind": "overflow", "live_tokens_before": before, "live_tokens_after": t.live, "limit": t.limit}
        )
        event["ms"] = _ms(t0)
        t.blocking.append(event)
        t.overflow["live_tokens_after"] = t.live
        t.sw.add("overflow", event["ms"])

    def _route_inputs(self, t: _TurnState) -> None:
        """The part of routing that needs none of the message's vectors (the session state, what the
        companion carries over, the topic segment's turns and stored vectors), done while the model
        computes them: the turn then waits for the vectors only to judge and route."""
        t.segment_start = max(int(t.counts.get("segment_start", 0)), t.covered + 1)
        with t.sw.stage("route"):
            # Nothing writes the session's state between the overflow check and here (but compressing).
            state = t.state if t.state is not None else self.store.session_state(t.user_id, t.session_id)
            t.before = self.companion.carried(
                t.user_id, t.session_id, t.at, state, last=t.tail[-1:], timezone=t.timezone
            )
            t.segment_users = self._topic_segment(t, int(state.get("topic_pending", -1)))

    def _route(self, t: _TurnState, timezone: str | None) -> None:
        with t.sw.stage("route"):
            before = t.before
            assert before is not None
            self._topic(t)
            segment_users = t.segment_users
            cjk = cjk_ratio(t.message)
            t.route = self.router.route(
                t.message,
                now=t.at,
                timezone=timezone,
                topic=t.topic,
                segment_turns=segment_users,
                min_segment_turns=TOPIC_MIN_USER_TURNS,
                command=bool(t.commands),
                overflow=any(e["kind"] == "overflow" for e in t.blocking),
                vectors=t.route_vecs,
                embedders=self.memory.embedders,
                embedder_weights=prototype_weights(t.route_vecs, cjk),
                carried=before.carried,
                late_window=before.late_window,
                late_source=before.late_source,
            )
        if t.route.signals["topic_shift"] and t.topic is not None and t.topic.late:
            # The new topic began at the pending candidate: the segment before it is summarised now,
            # before this turn's context, so that this message (the new topic's second) gets no raw
            # turns of the old one.
            with t.sw.stage("topic_summary"):
                t.topic_summary = self._summarise_segment(t, t.segment_start, t.pending_seq - 1)
                t.summaries = self.store.session_summaries(t.user_id, t.session_id)
                t.covered = covered_seq(t.summaries)
        with t.sw.stage("strategy"):
            t.plan = self.companion.plan(
                t.user_id,
                t.route,
                before,
                at=t.at,
                timezone=timezone,
                budget=self.config.budget if t.budget is None else t.budget,
            )
            t.sections = [*t.sections, *t.plan.sections]
            share = t.plan.shares.get("profile") if t.plan.shares else None
            if share is not None and t.profile_text:
                text = self._profile_section(
                    t.user_id,
                    float(share),
                    self._new_zone(t),
                    t.timezone,
                    message=t.message,
                    budget=t.budget,
                    now=t.at,
                )
                t.sections = [text if x == t.profile_text else x for x in t.sections if x]
                t.sections = [x for x in t.sections if x]
                t.profile_text = text

    def _trace(self, t: _TurnState, ctx: ContextResult) -> dict[str, Any]:
        """The turn's trace so far (jobs, turn ids and final timings are added when it is recorded)."""
        counter = self.memory.counter
        tokens = dict(ctx.trace["tokens"])
        used = t.summaries if tokens.get("summaries", 0) > 0 else []
        full_history = t.counts["history_tokens"] + counter.message_tokens(
            {"role": "user", "content": t.message}
        )
        tokens.update(
            {
                "saved_by_summaries": max(0, sum(int(s["source_tokens"]) - int(s["tokens"]) for s in used)),
                "full_history": full_history,
                "saved_vs_full_history": max(0, full_history - int(tokens["total"])),
                "live": t.live,
                "overflow_limit": t.limit,
            }
        )
        assert t.route is not None
        return {
            "id": t.trace_id,
            "entry": t.entry,
            "user_id": t.user_id,
            "session_id": t.session_id,
            "at": t.at.isoformat(),
            "ticket": t.hold.ticket.number,
            "route": t.route.as_dict(),
            **(t.plan.trace(t.before) if t.plan is not None and t.before is not None else {}),
            "commands": [c.as_dict() for c in t.commands],
            "blocking": t.blocking,
            "overflow": t.overflow,
            "summaries": [
                {
                    k: s[k]
                    for k in ("id", "first_seq", "last_seq", "kind", "method", "tokens", "source_tokens")
                }
                for s in t.summaries
            ],
            "retrieval": ctx.trace.get("retrieval", {}),
            "paging_tools": ctx.trace.get("paging_tools"),
            "selected": ctx.trace.get("selected", []),
            "recent": ctx.trace.get("recent", []),
            "dropped": ctx.trace.get("dropped", 0),
            "tokens": tokens,
            # The summary a late-confirmed topic shift made before this context (`_route`); an
            # immediate shift's is made after the reply (`_finish_segment`).
            "topic_summary": t.topic_summary,
            "context_timings_ms": ctx.trace.get("timings_ms", {}),
            # Where retrieval ran: "beside" routing on another thread, or "before" it on the turn's own
            # (more turns in flight than cores).
            "retrieval_thread": "before" if t.retrieved_inline else "beside",
            "jobs": [],
            "turn_ids": [],
            "llm": None,
            "error": None,
        }

    def _record(self, t: _TurnState, trace: dict[str, Any], reply: str | None, *, failed: bool) -> Turn:
        """Store the user turn, the reply, the message's vectors, the P2 jobs, the session state and the
        trace in one transaction. Returns the user turn."""
        with t.sw.stage("record"):
            user_turn = Turn(
                user_id=t.user_id, session_id=t.session_id, role="user", content=t.message, created_at=t.at
            )
            if failed:
                user_turn.meta = {"reply_failed": True, "applied": [c.kind for c in t.commands]}
            if t.captions:  # the captions live in the turn: forgetting it forgets them
                user_turn.meta["images"] = [c.as_dict() for c in t.captions]
            turns = [user_turn]
            if reply is not None:
                turns.append(
                    Turn(
                        user_id=t.user_id,
                        session_id=t.session_id,
                        role="assistant",
                        content=reply,
                        created_at=utcnow(),
                    )
                )
            stamp(turns, t.timezone)
            with self.store.transaction() as tx:
                self.store.insert_turns(tx, turns)
                assert user_turn.id is not None and user_turn.seq is not None
                key = content_hash(user_turn.text)
                for name, vec in t.qvecs.items():
                    embedder = self.memory.embedders[name]
                    if not keeps_vector(embedder, t.message) or not np.any(vec):
                        continue  # nothing to store (embed.gloss on a message with no Chinese)
                    model_id = embedder.model_id
                    self.store.put_vectors_tx(tx, t.user_id, model_id, [(key, vec)])
                for done in t.applied:
                    if done.fact_id is not None:
                        self.store.fact_add_sources(tx, done.fact_id, [user_turn.id])
                # Facts the message states (rules; microseconds) hold from the next turn on.
                trace["facts"] = apply_facts(
                    self.profile,
                    t.user_id,
                    extract_facts(t.message),
                    at=t.at,
                    source_turn_ids=[user_turn.id],
                    tx=tx,
                )
                if _remembered(t.timezone, t.at) and self._timezone(t.user_id) != t.timezone:
                    # A timezone sent with a turn is remembered for turns and records that come without;
                    # only a change is written (see `record`).
                    self.profile.set(
                        t.user_id, TIMEZONE, t.timezone, at=t.at, source_turn_ids=[user_turn.id], tx=tx
                    )
                jobs: list[Job] = []
                state = self._next_state(t.counts, turns, t.covered)
                assert t.route is not None
                # Where a new segment starts (this message, or the pending candidate when the shift
                # was confirmed late), and the pending candidate after this message (`topic.advance`).
                start, state["topic_pending"] = advance(
                    t.topic, shift=t.route.signals["topic_shift"], index=user_turn.seq, pending=t.pending_seq
                )
                if start is not None:
                    first, last = t.segment_start, start - 1
                    if last > first:  # a segment of one turn is not worth a summary
                        # An extractive summary is made at once (`_finish_segment` as soon as the
                        # reply is out; before the context when the shift was confirmed late), so the
                        # next turn already sees the segment as a summary; this P2 job replaces it
                        # with the helper LLM's summary when one is configured.
                        if start == user_turn.seq:
                            t.finished = (first, last)
                        jobs.append(
                            Job(
                                kind="summary",
                                user_id=t.user_id,
                                session_id=t.session_id,
                                payload={
                                    "first_seq": first,
                                    "last_seq": last,
                                    "reason": "topic",
                                    "upgrade": True,
                                },
                                priority=Priority.P2,
                                dedupe_key=f"summary:{t.session_id}:{first}-{last}",
                            )
                        )
                    state["segment_start"] = start
                jobs.extend(page_jobs(turns, self.store.page_size))
                if t.plan is not None and t.before is not None:
                    values, more = self.companion.record(
                        tx,
                        t.plan,
                        t.before,
                        t.route,
                        user_id=t.user_id,
                        session_id=t.session_id,
                        user_turn_id=user_turn.id,
                        reply=reply,
                        at=t.at,
                        timezone=t.timezone,
                    )
                    state.update(values)
                    jobs.extend(more)
                    trace.update(t.plan.trace(t.before))
                t.job_ids = self.queue.enqueue(jobs, tx=tx) if jobs else []
                self.store.session_state_update(tx, t.user_id, t.session_id, state, now=utcnow().timestamp())
                trace["jobs"] = [
                    {"id": jid, "kind": j.kind, "priority": int(j.priority), "payload": j.payload}
                    for jid, j in zip(t.job_ids, jobs, strict=True)
                ]
                trace["turn_ids"] = [x.id for x in turns if x.id is not None]
                self._finish_timings(t, trace)
                self.store.trace_put(
                    tx,
                    t.trace_id,
                    t.user_id,
                    t.session_id,
                    created_at=t.at.timestamp(),
                    turn_ids=trace["turn_ids"],
                    data=trace,
                )
        # The stored trace ends just before its own write; the returned one includes the commit.
        self._finish_timings(t, trace)
        return user_turn

    def _finish_segment(self, t: _TurnState, trace: dict[str, Any]) -> None:
        """Summarise the topic segment this turn closed, extractively and at once, so that from the next
        turn on it leaves the recent window and its summary stands for it."""
        assert t.finished is not None
        trace["topic_summary"] = self._summarise_segment(t, *t.finished)

    def _summarise_segment(self, t: _TurnState, first: int, last: int) -> dict[str, Any] | None:
        """The extractive summary of turns first..last of the session, stored (its id, range and time
        for the trace); None when there was nothing to summarise or it failed (the P2 job makes it)."""
        t0 = time.perf_counter()
        limit = int(self.config.overflow_threshold * self.config.model_context)
        try:
            row = create_summary(
                self.memory,
                t.user_id,
                t.session_id,
                first,
                last,
                kind="topic",
                llm=None,
                max_tokens=default_max_tokens(limit),
            )
        except Exception:  # the P2 job will make it
            log.exception("extractive topic summary of %s/%s failed", t.user_id, t.session_id)
            row = None
        if row is None:
            return None
        return {"id": row["id"], "first_seq": row["first_seq"], "last_seq": row["last_seq"], "ms": _ms(t0)}

    def _finish_timings(self, t: _TurnState, trace: dict[str, Any]) -> None:
        timings = dict(t.sw.timings)
        timings["total"] = round(t.sw.total_ms(), 3)
        trace["timings_ms"] = timings
        trace["p0_overhead_ms"] = round(timings["total"] - t.llm_ms, 3)

    def _take_failed_turn(
        self, user_id: str, session_id: str, message: str, last: Sequence[Turn]
    ) -> set[str] | None:
        """If the session ends (`last`: its last two turns, or fewer) with this very message marked
        reply_failed, or with it and a reply marked undelivered (the client hung up before the reply
        was sent: an SDK's timeout, which it retries), delete them (the turn will be recorded again)
        and return the command kinds already applied for it; None when there is no such turn."""
        if not last:
            return None
        t = last[-1]
        drop = [t]
        if t.role == "assistant" and t.meta.get("undelivered") and len(last) > 1:
            t = last[-2]
            drop.insert(0, t)
            pending = True
        else:
            # `awaiting_tools`: the proxy returned the model's tool calls to the client, whose
            # follow-up (the same message plus the tool results) completes this very turn.
            pending = bool(t.meta.get("reply_failed") or t.meta.get("awaiting_tools"))
        ids = [d.id for d in drop if d.id is not None]
        if t.role != "user" or t.content != message or not pending or len(ids) != len(drop):
            return None
        first_seq = int(self.store.session_state(user_id, session_id).get(FIRST_SEQ, 0))
        self.memory.delete_turns(user_id, ids)
        values: dict[str, Any] = dict(COUNTS_RESET)  # the failed attempt's counts are recounted
        if t.seq == first_seq:
            # It was the session's first recorded turn: the retry, next in line, takes its place
            # (the client's history from before it is still told from a forgotten start).
            values[FIRST_SEQ] = first_seq + len(drop)
        with self.store.transaction() as tx:
            self.store.session_state_update(tx, user_id, session_id, values, now=utcnow().timestamp())
        return set(t.meta.get("applied", []))

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

    def _topic_segment(self, t: _TurnState, pending_seq: int) -> int:
        """Read what the topic judge compares the message with (`_topic`): the segment's last user
        turns and their stored vectors (the reply is the LLM's echo of the user's topic, so only the
        user's own turns are compared), into `t`; `t.pending_seq` is the candidate the message may
        confirm. Returns how many contentful user turns the segment has."""
        params = self.topic_params
        t.pending_seq = pending_seq if pending_seq >= t.segment_start else -1
        turns = [
            x
            for x in t.tail[max(0, len(t.tail) - TOPIC_LOOKBACK) :]
            if x.role == "user" and (x.seq or 0) >= t.segment_start and contentful(x.content, params)
        ]
        if t.pending_seq >= 0:
            old = [x for x in turns if (x.seq or 0) < t.pending_seq]
            pending = [x for x in turns if (x.seq or 0) >= t.pending_seq]
        else:
            old, pending = turns, []
        old = old[-params.window :]
        # The judge's embedders that the message is embedded with (`t.topic_vecs` will hold them).
        t.topic_names = names = [n for n in params.embedders(t.message) if n in t.qvecs]
        if not names:
            return len(turns)
        vecs: list[dict[str, np.ndarray]] = [{} for _ in (*old, *pending)]
        both = [*old, *pending]
        for name in names:
            embedder = self.memory.embedders[name]
            ids = [x.id for x in both if x.id is not None]
            stored = self.store.turn_vectors(t.user_id, embedder.model_id, ids)
            missing = [i for i, x in enumerate(both) if x.id not in stored]
            if missing:
                made = embedder.embed([both[i].text for i in missing])
                for i, v in zip(missing, made, strict=True):
                    vecs[i][name] = v
            for i, x in enumerate(both):
                if x.id in stored:
                    vecs[i][name] = stored[x.id]
        t.topic_old, t.topic_pending = vecs[: len(old)], vecs[len(old) :]
        t.topic_old_texts, t.topic_pending_texts = [x.content for x in old], [x.content for x in pending]
        return len(turns)

    def _topic(self, t: _TurnState) -> None:
        """Judge whether `t.message` leaves the current topic segment (`memsched.topic.judge`, into
        `t.topic`), against what `_topic_segment` read."""
        if not t.topic_names:
            t.topic = None
            return
        t.topic = judge(
            t.message,
            t.topic_vecs,
            t.topic_old,
            t.topic_pending,
            params=self.topic_params,
            segment_texts=t.topic_old_texts,
            pending_texts=t.topic_pending_texts,
        )

    def _context(self, t: _TurnState) -> ContextResult:
        """The context: profile + command notes as system sections, the session's summaries, the recent
        window after the summarised range, and recalled memories — built with the router's vectors."""
        kwargs: dict[str, Any] = {
            "backfill": False,
            "session_id": t.session_id,
            "now": t.at,
            "timezone": t.timezone,
            "system_prompt": t.persona,
            "system_sections": t.sections,
            "summaries": [render(s) for s in t.summaries],
            "recent_after_seq": t.covered,
            "query_vectors": t.qvecs,
            "retrieval": t.retrieval,
            "recent": [*t.unseen, *self.memory.recent_turns(t.user_id, t.session_id, t.covered, tail=t.tail)],
            # A finished topic is represented by its summary: its raw turns come back only when the
            # message names them (a keyword hit), not by mere embedding similarity.
            "lexical_only_turn_ids": [
                i for s in t.summaries if s.get("kind") == "topic" for i in s.get("source_turn_ids", [])
            ],
        }
        if t.budget is not None:
            kwargs["budget"] = t.budget
        if t.plan is not None:
            kwargs["shares"] = t.plan.shares
            kwargs["recall_hint"] = t.plan.recall_hint
            kwargs["min_similarity"] = t.plan.min_similarity
        return self.memory.context(t.user_id, t.message, **kwargs)

    def _log(self, trace: dict[str, Any], t: _TurnState) -> None:
        assert t.route is not None
        signals = ",".join(k for k, v in t.route.signals.items() if v) or "-"
        blocking = ",".join(f"{e['kind']}:{e['ms']:.1f}" for e in trace["blocking"]) or "-"
        log.info(
            "%s user=%s session=%s trace=%s mode=%s signals=%s tokens=%s p0_ms=%.1f llm_ms=%.1f blocking=%s"
            " jobs=%d outcome=%s",
            t.entry,
            t.user_id,
            t.session_id,
            t.trace_id,
            t.route.mode,
            signals,
            trace["tokens"].get("total"),
            trace["p0_overhead_ms"],
            t.llm_ms,
            blocking,
            len(trace["jobs"]),
            "error" if trace["error"] else "ok",
            extra={"trace_id": t.trace_id, "event": t.entry},
        )


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


def page_jobs(turns: list[Turn], page_size: int) -> list[Job]:
    """P2 jobs for pages these turns completed: bookmark the page, and (later, once per user) tidy
    the user's bookmarks. Deduplicated, so a page is bookmarked once however it is reached."""
    jobs: list[Job] = []
    for turn in turns:
        if turn.seq is None or turn.page_id is None or (turn.seq + 1) % page_size:
            continue
        jobs.append(
            Job(
                kind="bookmark",
                user_id=turn.user_id,
                session_id=turn.session_id,
                payload={"page_id": turn.page_id},
                priority=Priority.P2,
                dedupe_key=f"page:{turn.page_id}",
            )
        )
        jobs.append(
            Job(
                kind="profile_extract",
                user_id=turn.user_id,
                session_id=turn.session_id,
                payload={"page_id": turn.page_id},
                priority=Priority.P2,
                dedupe_key=f"profile:{turn.page_id}",
            )
        )
        jobs.append(
            Job(
                kind="bookmark_maintenance",
                user_id=turn.user_id,
                session_id=None,
                payload={},
                priority=Priority.P2,
                dedupe_key="maintenance",
                run_after=utcnow() + MAINTENANCE_DELAY,
            )
        )
    return jobs


def _remembered(zone: str | None, at: datetime) -> TypeGuard[str]:
    """Whether a turn's zone becomes the user's remembered one: a real zone (not UTC, not a fixed
    offset, which says nothing of next month's clock: `memsched.zones`)."""
    return bool(zone) and not is_fixed(zone) and local_now(at, zone).tzinfo is not UTC


def _check_hold(hold: SessionHold | None, user_id: str, session_id: str) -> None:
    if hold is not None and (hold.user_id, hold.session_id) != (user_id, session_id):
        raise InputError(
            f"the hold is on session {hold.user_id}/{hold.session_id}, not {user_id}/{session_id}"
        )
    if hold is not None and hold.ticket.released:
        raise InputError(f"the hold on session {user_id}/{session_id} was released: take a new one")


def _image_only(images: Sequence[Image]) -> str:
    """A stand-in text for `_check` when a message is only images (they become its text)."""
    return NOT_DESCRIBED if images else ""


def _check(user_id: str, session_id: str, message: str) -> None:
    if not user_id or not isinstance(user_id, str):
        raise InputError("user_id must be a non-empty string")
    if not session_id or not isinstance(session_id, str):
        raise InputError("session_id must be a non-empty string")
    if not isinstance(message, str) or not message.strip():
        raise InputError("the message must be a non-empty string")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
