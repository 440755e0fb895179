"""The scheduler's P0 path: ordering, the P1 barrier, consistency commands, traces, LLM failures.

Real SQLite in tmp_path, the fake OpenAI server on loopback, the hashing embedder. No timing
assertions: concurrency is proven with events and barriers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import raw_sql

from memsched import Config, LLMError, Memory
from memsched.embed.hashing import HashEmbedder
from memsched.errors import InputError
from memsched.jobs.queue import Priority
from memsched.jobs.worker import Worker
from memsched.llm.client import OpenAIChatClient, llm_calls
from memsched.model import content_hash
from memsched.profile import PREFERRED_NAME
from memsched.scheduler import TOPIC_LOOKBACK, ReplyError, Scheduler
from memsched.testing import Delay, Fail, FakeOpenAI

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

Factory = Callable[..., tuple[Memory, Scheduler]]


@pytest.fixture
def make(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Factory]:
    opened: list[tuple[Memory, Scheduler, OpenAIChatClient]] = []

    def factory(*, retries: int = 0, timeout: float = 10.0, **kwargs: Any) -> tuple[Memory, Scheduler]:
        cfg_keys = {"recent_max_turns", "budget", "model_context", "overflow_threshold"}
        cfg = {k: kwargs.pop(k) for k in list(kwargs) if k in cfg_keys}
        memory = Memory(Config.load(home=tmp_path, **cfg), embedders={"hash": HashEmbedder()})
        llm = OpenAIChatClient(
            fake.base_url, "key", "fake-model", timeout=timeout, retries=retries, backoff=0.01
        )
        kwargs.setdefault("summary_llm", None)
        scheduler = Scheduler(memory, llm=llm, **kwargs)
        opened.append((memory, scheduler, llm))
        return memory, scheduler

    yield factory
    for memory, scheduler, llm in opened:
        scheduler.close()
        llm.close()
        memory.close()


def system_text(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def all_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"])


# -- the basic turn ---------------------------------------------------------------------------------------


def test_turn_records_both_sides_and_makes_only_the_reply_call(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make()
    before = llm_calls()
    result = sched.turn("u", "s", "My cat is called Sesame")
    after = llm_calls()
    assert result.reply == "ok: My cat is called Sesame"
    assert {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)} == {
        "reply": 1
    }
    turns = memory.store.session_turns("u", "s")
    assert [(t.role, t.content) for t in turns] == [
        ("user", "My cat is called Sesame"),
        ("assistant", "ok: My cat is called Sesame"),
    ]
    assert result.turn_ids == [t.id for t in turns]
    assert fake.chat_requests[-1]["messages"] == result.messages
    second = sched.turn("u", "s", "what is my cat called?")
    assert "Sesame" in all_text(fake.chat_requests[-1])
    assert second.trace["recent"] == result.turn_ids


def test_prepare_records_the_message_and_record_adds_the_reply(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make()
    prepared = sched.prepare("u", "s", "我出门了")
    assert prepared.reply is None
    assert prepared.messages[-1] == {"role": "user", "content": "我出门了"}
    assert fake.chat_requests == []  # prepare() never calls an LLM
    sched.record("u", "s", "assistant", "路上小心")
    nxt = sched.prepare("u", "s", "啊忘了带钥匙")
    contents = [m["content"] for m in nxt.messages]
    assert contents[-3:] == ["我出门了", "路上小心", "啊忘了带钥匙"]
    assert [t.content for t in memory.store.session_turns("u", "s")] == [
        "我出门了",
        "路上小心",
        "啊忘了带钥匙",
    ]


def test_record_index_after_answers_first_and_holds_the_session_until_embedded(
    make: Factory, fake: FakeOpenAI
) -> None:
    """`record(..., index_after=True)` (the proxy's reply) returns once the turn is stored; its vectors
    come after, and the session stays held until they are stored."""
    memory, sched = make()
    sched.prepare("u", "s", "hello there")
    embedder = memory.embedders["hash"]
    plain = embedder.embed
    started, go = threading.Event(), threading.Event()

    def gated(texts: Any) -> Any:
        started.set()
        go.wait(30)
        return plain(texts)

    embedder.embed = gated  # type: ignore[method-assign]
    rec = sched.record("u", "s", "assistant", "the reply", index_after=True)
    assert started.wait(30)  # record() returned while the reply's embedding waits
    stored = memory.store.session_turns("u", "s")
    assert [t.content for t in stored] == ["hello there", "the reply"]
    missing = memory.store.turns_missing_vectors("u", embedder.model_id, limit=10, after_id=0)
    assert [turn_id for turn_id, _ in missing] == [rec.turn.id]
    seen: list[list[Any]] = []

    def next_turn() -> None:
        with sched.holding("u", "s"):
            seen.append(memory.store.turns_missing_vectors("u", embedder.model_id, limit=10, after_id=0))

    th = threading.Thread(target=next_turn)
    th.start()
    time.sleep(0.2)  # let it queue for the session (a scheduling aid, not a measured time)
    go.set()
    th.join(30)
    assert seen == [[]]


# -- ordering ---------------------------------------------------------------------------------------------


def test_one_session_is_served_in_arrival_order(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make(recent_max_turns=100, budget=8000)
    entered = threading.Event()
    release = threading.Event()
    first = {"seen": False}
    lock = threading.Lock()

    def responder(body: dict[str, Any]) -> str:
        with lock:
            is_first = not first["seen"]
            first["seen"] = True
        if is_first:
            entered.set()
            assert release.wait(30)
        return "re: " + str(body["messages"][-1]["content"])

    fake.responder = responder
    n = 20
    errors: list[BaseException] = []

    def send(i: int) -> None:
        try:
            sched.turn("u", "s", f"message number {i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(n)]
    threads[0].start()
    assert entered.wait(30)  # message 0 is inside its LLM call, holding the session
    for i in range(1, n):
        threads[i].start()
        # Wait until message i has taken its place in line before sending the next one, so the
        # arrival order is known.
        for _ in range(3000):
            if sched.queued("u", "s") >= i + 1:
                break
            threading.Event().wait(0.01)
        assert sched.queued("u", "s") >= i + 1
    release.set()
    for t in threads:
        t.join(60)
    assert not errors

    turns = memory.store.session_turns("u", "s")
    assert len(turns) == 2 * n  # none lost
    assert [t.role for t in turns] == ["user", "assistant"] * n
    assert [t.content for t in turns[0::2]] == [f"message number {i}" for i in range(n)]
    assert [t.content for t in turns[1::2]] == [f"re: message number {i}" for i in range(n)]
    requests = fake.chat_requests
    assert len(requests) == n
    for i, req in enumerate(requests):
        sent = [m["content"] for m in req["messages"][1:]]
        expected: list[str] = []
        for j in range(i):
            expected += [f"message number {j}", f"re: message number {j}"]
        assert sent == [*expected, f"message number {i}"]


def test_different_sessions_run_in_parallel(make: Factory, fake: FakeOpenAI) -> None:
    _, sched = make()
    # Both LLM calls must be in flight at once for the barrier to open; one at a time would break it.
    meet = threading.Barrier(2, timeout=20)

    def responder(body: dict[str, Any]) -> str:
        try:
            meet.wait()
        except threading.BrokenBarrierError:
            return "serialised"
        return "overlapped"

    fake.responder = responder
    replies: dict[str, str | None] = {}

    def send(session: str) -> None:
        replies[session] = sched.turn("u", session, "hello").reply

    threads = [threading.Thread(target=send, args=(s,)) for s in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert replies == {"a": "overlapped", "b": "overlapped"}


def test_aturn_keeps_the_order_coroutines_arrived_in(make: Factory) -> None:
    memory, sched = make(recent_max_turns=50)

    async def main() -> list[str | None]:
        results = await asyncio.gather(*(sched.aturn("u", "s", f"m{i}") for i in range(6)))
        return [r.reply for r in results]

    replies = asyncio.run(main())
    assert replies == [f"ok: m{i}" for i in range(6)]
    assert [t.content for t in memory.store.session_turns("u", "s")][0::2] == [f"m{i}" for i in range(6)]


# -- P1: the barrier and consistency commands ----------------------------------------------------------------


def test_p1_job_from_record_is_applied_before_the_next_turn(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make(start_workers=False, barrier_timeout=30)
    sched.turn("u", "s", "hi, I'm new here")
    rec = sched.record("u", "s", "user", "以后叫我大王")
    assert rec.commands and rec.commands[0]["kind"] == "rename"
    assert len(rec.jobs) == 1 and sched.queue.pending("u", "s") == 1
    assert sched.profile.get("u", PREFERRED_NAME) is None  # queued, not applied yet

    # The worker starts only once the turn waits at the barrier (the session lease is taken earlier:
    # a worker started on seeing the lease could run the job before the turn counted it, under load).
    waiting = threading.Event()
    wait_for = sched.queue.wait_for

    def spy(*args: Any, **kwargs: Any) -> bool:
        waiting.set()
        return wait_for(*args, **kwargs)

    sched.queue.wait_for = spy  # type: ignore[method-assign]
    result: dict[str, Any] = {}
    t = threading.Thread(target=lambda: result.update(r=sched.turn("u", "s", "早上好")))
    t.start()
    assert waiting.wait(60)
    assert sched.locks.holder("u", "s") is not None
    assert len(fake.chat_requests) == 1  # the new turn has not called the LLM: it is waiting
    worker = Worker(memory, llm=None).start()
    try:
        t.join(60)
    finally:
        worker.stop()
    turn = result["r"]
    barrier = [e for e in turn.trace["blocking"] if e["kind"] == "barrier"]
    assert barrier and barrier[0]["ok"] and barrier[0]["jobs"] == 1
    assert "大王" in system_text(fake.chat_requests[-1])
    fact = sched.profile.get("u", PREFERRED_NAME)
    assert fact is not None and fact.value == "大王" and fact.source_turn_ids == (rec.turn.id,)


def test_rename_in_a_turn_is_in_that_turns_context(make: Factory, fake: FakeOpenAI) -> None:
    _, sched = make()
    sched.turn("u", "s", "以后叫我小王")
    result = sched.turn("u", "s", "别叫我小王了，叫我大王")
    system = system_text(fake.chat_requests[-1])
    assert "preferred name (call the user this): 大王" in system
    assert ": 小王 (" not in system  # the old name is history, never the current value
    event = next(e for e in result.trace["blocking"] if e["kind"] == "consistency")
    assert event["command"] == "rename" and event["changed"] == {PREFERRED_NAME: "大王"}
    fact = sched.profile.get("u", PREFERRED_NAME)
    assert fact is not None and fact.source_turn_ids == (result.turn_ids[0],)
    # And it lasts: a later turn in another session still uses it.
    sched.turn("u", "other", "你还记得我叫什么吗？")
    assert "preferred name (call the user this): 大王" in system_text(fake.chat_requests[-1])


def _vector_rows(memory: Memory, user_id: str, text: str) -> int:
    rows = raw_sql(
        memory.store,
        "SELECT count(*) FROM embeddings WHERE user_id = ? AND content_hash = ?",
        (user_id, content_hash(text)),
    )
    return int(rows[0][0])


def test_forget_last_hard_deletes_before_the_reply(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make()
    sched.turn("u", "s", "hello there")
    secret = sched.turn("u", "s", "my bank pin is pineapple4242")
    secret_user_id, secret_reply_id = secret.turn_ids
    sched.turn("u", "s", "what a day")  # lets the post-reply embedding of the secret's reply finish
    assert memory.store.search_bm25("u", "pineapple4242")
    assert _vector_rows(memory, "u", "user: my bank pin is pineapple4242") == 1

    # "what a day" is now the last message: forget it, then check the secret survives that...
    sched.turn("u", "s", "forget what I just said")
    assert "what a day" not in [t.content for t in memory.store.session_turns("u", "s")]
    # ...and forget a message right after the secret: set it up again.
    sched.turn("u", "s", "my bank pin is pineapple4242 really")
    result = sched.turn("u", "s", "忘掉刚才那句话")
    event = next(e for e in result.trace["blocking"] if e["kind"] == "consistency")
    assert event["command"] == "forget_last" and len(event["deleted_turn_ids"]) == 2
    contents = [t.content for t in memory.store.session_turns("u", "s")]
    assert "my bank pin is pineapple4242 really" not in contents
    assert "忘掉刚才那句话" in contents  # the request itself is kept, without what it removed
    assert _vector_rows(memory, "u", "user: my bank pin is pineapple4242 really") == 0
    assert "pineapple4242 really" not in all_text(fake.chat_requests[-1])
    sched.turn("u", "s", "ok what next")
    assert "pineapple4242 really" not in all_text(fake.chat_requests[-1])
    # The first secret was never asked to be forgotten.
    assert {t.id for t in memory.store.get_turns("u", [secret_user_id, secret_reply_id])} == {
        secret_user_id,
        secret_reply_id,
    }
    hits = memory.store.search_bm25("u", "really pineapple4242")
    assert all("really" not in t.content for t in memory.store.get_turns("u", [h.turn_id for h in hits]))


def test_forget_removes_derived_facts_and_traces(make: Factory) -> None:
    _, sched = make()
    sched.turn("u", "s", "以后叫我小王")
    renamed = sched.turn("u", "s", "叫我大王吧")
    assert sched.profile.get("u", PREFERRED_NAME).value == "大王"  # type: ignore[union-attr]
    sched.turn("u", "s", "忘掉刚才那句话")
    # The fact came from the forgotten turn: it goes, and the name it had replaced is back.
    fact = sched.profile.get("u", PREFERRED_NAME)
    assert fact is not None and fact.value == "小王"
    assert sched.trace(renamed.trace_id) is None  # the trace quoted the forgotten message


def test_forget_via_record_is_a_p1_job_the_next_turn_waits_for(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make()
    sched.turn("u", "s", "my locker code is mango777")
    rec = sched.record("u", "s", "user", "delete my last message")
    assert len(rec.jobs) == 1
    sched.turn("u", "s", "anyway")
    assert "mango777" not in all_text(fake.chat_requests[-1])
    assert not any("mango777" in t.content for t in memory.store.session_turns("u", "s"))
    assert memory.store.search_bm25("u", "mango777") == []


def test_forget_last_via_record_after_a_topic_forget_deletes_nothing_older(make: Factory) -> None:
    """Through `record()` the topic command is stored and deleted with its topic by a P1 job; a
    "scratch what I just said" recorded after that job ran refers to the command, not to the message
    before it."""
    memory, sched = make()
    for text in (
        "My ex Marcus texted me again",
        "Anyway, pizza tonight.",
        "please forget everything about Marcus",
    ):
        sched.record("u", "s", "user", text)
        sched.record("u", "s", "assistant", "ok")
    assert sched.queue.wait_for("u", "s", Priority.P1, timeout=30)
    rec = sched.record("u", "s", "user", "Actually, scratch what I just said.")
    assert rec.jobs == [] or sched.queue.wait_for("u", "s", Priority.P1, timeout=30)
    contents = [t.content for t in memory.store.session_turns("u", "s")]
    assert "Anyway, pizza tonight." in contents and not any("Marcus" in c for c in contents)


# -- traces, metrics, failures ---------------------------------------------------------------------------------


def test_trace_is_stored_and_retrievable_by_id(make: Factory, fake: FakeOpenAI) -> None:
    _, sched = make()
    sched.turn("u", "s", "I love hiking in the Alps")
    result = sched.turn("u", "s", "call me Dave from now on", timezone="Asia/Shanghai")
    stored = sched.trace(result.trace_id)
    assert stored is not None
    assert stored["id"] == result.trace_id and stored["turn_ids"] == result.turn_ids
    assert stored["route"]["signals"]["command"] is True
    assert stored["route"]["local_time"] is not None
    blocking = stored["blocking"]
    assert blocking[0]["kind"] == "consistency" and blocking[0]["command"] == "rename"
    assert isinstance(blocking[0]["ms"], float)
    stages = (
        "embed_start",
        "lock_wait",
        "barrier_wait",
        "commands",
        "tail",
        "embed_query",
        "route",
        "context",
        "llm",
    )
    for stage in stages:
        assert stage in stored["timings_ms"], stage
    assert {"system", "memory", "recent", "total"} <= set(stored["tokens"])
    assert "candidates" in stored["retrieval"]
    assert stored["llm"]["model"] == "fake-model"
    assert sched.trace("no-such-trace") is None
    assert sched.traces("u", "s")[0]["id"] == result.trace_id

    metrics = sched.metrics.render().decode()
    assert 'memsched_turns_total{entry="turn",outcome="ok"} 2.0' in metrics
    assert 'memsched_commands_total{kind="rename"} 1.0' in metrics
    assert "memsched_p0_overhead_seconds_count 2.0" in metrics
    assert 'memsched_queue_depth{priority="P1"}' in metrics
    assert 'memsched_llm_calls_total{purpose="reply"}' in metrics


def test_llm_500_raises_and_keeps_the_message(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make(retries=0)
    fake.script(Fail(500))
    with pytest.raises(ReplyError) as info:
        sched.turn("u", "s", "are you there?")
    err = info.value
    assert isinstance(err, LLMError)
    assert "HTTP 500" in str(err) and "recorded" in str(err)
    turns = memory.store.session_turns("u", "s")
    assert [(t.role, t.content, t.meta.get("reply_failed")) for t in turns] == [
        ("user", "are you there?", True)
    ]
    assert err.turn_id == turns[0].id
    trace = sched.trace(err.trace_id)
    assert trace is not None and "HTTP 500" in trace["error"]
    assert 'memsched_turns_total{entry="turn",outcome="error"} 1.0' in sched.metrics.render().decode()

    # Retrying the same message replaces the failed turn: no duplicate, and the reply follows it.
    result = sched.turn("u", "s", "are you there?")
    assert result.reply == "ok: are you there?"
    turns = memory.store.session_turns("u", "s")
    assert [(t.role, t.content) for t in turns] == [
        ("user", "are you there?"),
        ("assistant", "ok: are you there?"),
    ]
    assert [m["content"] for m in fake.chat_requests[-1]["messages"][1:]] == ["are you there?"]


def test_llm_timeout_raises_a_clear_error(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make(retries=0, timeout=0.2)
    fake.script(Delay(3.0, then="too late"))
    with pytest.raises(ReplyError, match="timed out"):
        sched.turn("u", "s", "hello?")
    assert [t.content for t in memory.store.session_turns("u", "s")] == ["hello?"]


def test_retry_does_not_apply_forget_twice(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make(retries=0)
    sched.turn("u", "s", "keep this one")
    sched.turn("u", "s", "drop this one")
    fake.script(Fail(503))
    with pytest.raises(ReplyError):
        sched.turn("u", "s", "forget that")
    sched.turn("u", "s", "forget that")
    contents = [t.content for t in memory.store.session_turns("u", "s")]
    assert contents == ["keep this one", "ok: keep this one", "forget that", "ok: forget that"]


def test_a_held_session_keeps_another_process_out_until_the_reply_is_recorded(
    make: Factory, fake: FakeOpenAI
) -> None:
    """The proxy's split turn (prepare, the caller's own LLM call, record) under one `hold_session`:
    a turn of the same session from another process (here a second scheduler on the same store:
    its own line, the same leases) waits for the reply and has it in its context."""
    memory, a = make(recent_max_turns=50)
    _, b = make(recent_max_turns=50)
    hold = a.hold_session("u", "s")
    a.prepare("u", "s", "first message", hold=hold)
    result: dict[str, Any] = {}
    other = threading.Thread(target=lambda: result.update(turn=b.turn("u", "s", "second message")))
    other.start()
    for _ in range(3000):  # b has taken its place in its own line and waits for the lease
        if b.queued("u", "s"):
            break
        threading.Event().wait(0.01)
    other.join(0.5)  # time for a wrong lock to let b through first (the outcome is checked below)
    a.record("u", "s", "assistant", "first reply", hold=hold)
    with pytest.raises(InputError, match="not u/other"):
        a.record("u", "other", "assistant", "x", hold=hold)
    a.release_session(hold)
    other.join(60)
    turns = memory.store.session_turns("u", "s")
    assert [t.content for t in turns] == [
        "first message",
        "first reply",
        "second message",
        "ok: second message",
    ]
    sent = [m["content"] for m in fake.chat_requests[-1]["messages"]]
    assert "first message" in sent and "first reply" in sent
    with pytest.raises(InputError, match="released"):
        a.prepare("u", "s", "third", hold=hold)


def test_aprepare_held_holds_the_session_until_released_and_lets_go_on_failure_or_cancel(
    make: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy's hold + prepare in one worker-thread trip: the session stays held (store lease
    included) until `release_session`; a preparation that fails, or whose caller is cancelled,
    leaves the session free."""
    memory, a = make(recent_max_turns=50)

    async def prepared() -> None:
        hold, result = await a.aprepare_held("u", "s", "first message")
        assert hold.owner is not None and a.locks.holder("u", "s") == hold.owner
        assert [t.content for t in memory.store.session_turns("u", "s")] == ["first message"]
        assert any("first message" in str(m.get("content")) for m in result.messages)
        a.record("u", "s", "assistant", "first reply", hold=hold)
        a.release_session(hold)
        assert a.locks.holder("u", "s") is None and a.queued("u", "s") == 0

    asyncio.run(prepared())

    real = a._run
    monkeypatch.setattr(a, "_run", lambda *args: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(a.aprepare_held("u", "s", "fails"))
    assert a.locks.holder("u", "s") is None and a.queued("u", "s") == 0

    gate = threading.Event()

    def slow(*args: Any) -> Any:
        gate.wait(30)
        return real(*args)

    monkeypatch.setattr(a, "_run", slow)

    async def cancelled() -> None:
        task = asyncio.ensure_future(a.aprepare_held("u", "s", "abandoned"))
        while not a.queued("u", "s"):  # the thread has the session and prepares
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()
        for _ in range(3000):  # the thread finishes, then gives the session back
            if not a.queued("u", "s"):
                break
            await asyncio.sleep(0.01)

    asyncio.run(cancelled())
    assert a.locks.holder("u", "s") is None and a.queued("u", "s") == 0
    monkeypatch.setattr(a, "_run", real)
    hold, _ = asyncio.run(a.aprepare_held("u", "s", "next message"))  # free: taken at once
    a.release_session(hold)


def test_a_turn_reads_the_sessions_last_turns_once(make: Factory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recent window (retrieval and context), the topic window and the last turn (the retry
    check's) are cut from one read of the session's tail."""
    memory, scheduler = make(recent_max_turns=4)
    for i in range(6):
        scheduler.turn("u", "s", f"message number {i} about hiking")
    reads: list[int | None] = []
    real = memory.store.session_turns
    monkeypatch.setattr(
        memory.store, "session_turns", lambda u, s, last=None: reads.append(last) or real(u, s, last=last)
    )
    result = scheduler.prepare("u", "s", "and what about the mountains")
    assert reads == [TOPIC_LOOKBACK]
    sent = [str(m["content"]) for m in result.messages]
    # the recent window: the last four stored turns, then the new message
    assert sent[-5:] == [t.content for t in real("u", "s")[-5:-1]] + ["and what about the mountains"]


def test_a_turn_that_forgets_or_retries_reads_the_sessions_tail_after_it(
    make: Factory, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail read before the commands run is read again when the turn changed it: a retry took
    its failed turn, a command forgot turns. Neither shows up in the recent window."""
    memory, scheduler = make(recent_max_turns=8, retries=0)
    scheduler.turn("u", "s", "my locker code is 4417")
    fake.script(Fail(500))
    with pytest.raises(ReplyError):
        scheduler.turn("u", "s", "what else should I pack for the hike")
    reads: list[int | None] = []
    real = memory.store.session_turns
    monkeypatch.setattr(
        memory.store, "session_turns", lambda u, s, last=None: reads.append(last) or real(u, s, last=last)
    )
    result = scheduler.turn("u", "s", "what else should I pack for the hike")  # the retry
    assert reads == [TOPIC_LOOKBACK, TOPIC_LOOKBACK]
    sent = [str(m["content"]) for m in result.messages]
    assert sent.count("what else should I pack for the hike") == 1
    reads.clear()
    result = scheduler.prepare("u", "s", "forget that")
    assert reads.count(TOPIC_LOOKBACK) == 2  # (the forget reads the last message itself)
    assert not any("pack for the hike" in str(m["content"]) for m in result.messages[1:])


def test_routing_reads_its_vector_free_inputs_while_the_message_is_embedded(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """The session state, what the companion carries and the topic segment's stored vectors are read
    while the model computes the message's vectors; the turn waits for them only to judge and route."""
    from memsched.embed.batch import MicroBatcher

    class Gated(HashEmbedder):
        model_id = "gated-hash"
        micro_batch = True

        def __init__(self) -> None:
            super().__init__()
            self.gate = threading.Event()
            self.calls = 0

        def embed(self, texts: Any) -> Any:
            self.gate.wait(10)
            self.calls += 1
            return super().embed(texts)

    model = Gated()
    model.gate.set()
    memory = Memory(Config.load(home=tmp_path), embedders={"hash": MicroBatcher(model, threads=1)})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", retries=0)
    scheduler = Scheduler(memory, llm=llm, summary_llm=None)
    try:
        scheduler.turn("u", "s", "we planned a hiking trip to the mountains")
        while scheduler.queued("u", "s"):  # the reply's vectors are stored after the turn returns
            time.sleep(0.01)
        model.gate.clear()
        calls = model.calls
        carried = threading.Event()
        real = scheduler.companion.carried

        def carried_now(*args: Any, **kwargs: Any) -> Any:
            carried.set()
            return real(*args, **kwargs)

        scheduler.companion.carried = carried_now  # type: ignore[method-assign]
        done: list[Any] = []
        turn = threading.Thread(
            target=lambda: done.append(scheduler.turn("u", "s", "what boots should I pack"))
        )
        turn.start()
        assert carried.wait(10)  # routing's reads ran while the model was held...
        assert model.calls == calls and not done  # ...before the message's vector existed
        model.gate.set()
        turn.join(10)
        assert done and done[0].reply is not None and model.calls > calls
    finally:
        model.gate.set()
        scheduler.close()
        llm.close()
        memory.close()


def test_with_more_turns_in_flight_than_cores_a_turn_retrieves_on_its_own_thread(
    make: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One turn in flight: retrieval runs beside routing, on the retrieval pool, the soft-term layer
    beside the turn layers, the reply's vectors on a post-reply thread after the turn returned (the
    turn's latency). More turns in flight than cores: all on the turn's own thread, retrieval before
    routing, the reply's vectors before it returns (no hand-off when every core is busy anyway).
    Either way the model is given the same context."""
    from datetime import UTC, datetime, timedelta

    memory, sched = make()
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    history = [
        "My cat is called Sesame and she sleeps on the piano",
        "I work night shifts as a nurse in Leeds",
        "We went to Lisbon last spring and ate far too many pastries",
        "My sister plays the cello in an orchestra",
    ]
    for user in ("quiet", "busy"):
        for i, text in enumerate(history):
            sched.turn(user, "s", text, now=start + timedelta(minutes=i))
    while sched.queued("quiet", "s") or sched.queued("busy", "s"):
        time.sleep(0.01)
    from memsched.bookmarks import generate_bookmarks

    for user in ("quiet", "busy"):
        generate_bookmarks(memory, user, llm=None)  # the vocabulary: the soft-term layer searches too
    ran_on: dict[str, str] = {}
    real = memory.retrieval

    def spy(user_id: str, *args: Any, **kwargs: Any) -> Any:
        ran_on[user_id] = threading.current_thread().name
        return real(user_id, *args, **kwargs)

    monkeypatch.setattr(memory, "retrieval", spy)
    from memsched.paging import Pager

    soft_on: dict[str, str] = {}
    real_soft = Pager._timed_soft_layer

    def soft_spy(self: Pager, user_id: str, *args: Any, **kwargs: Any) -> Any:
        soft_on[user_id] = threading.current_thread().name
        return real_soft(self, user_id, *args, **kwargs)

    monkeypatch.setattr(Pager, "_timed_soft_layer", soft_spy)
    refreshed_on: dict[str, str] = {}
    real_refresh = memory.refresh

    def refresh_spy(user_id: str) -> None:  # the post-reply work's last step
        refreshed_on[user_id] = threading.current_thread().name
        real_refresh(user_id)

    monkeypatch.setattr(memory, "refresh", refresh_spy)
    asked = start + timedelta(days=3)
    quiet = sched.turn("quiet", "s", "what is my cat called again?", now=asked)
    others = sched.cores + 1 - sched.gate.active  # other turns in flight, as 50 clients would make
    for _ in range(others):
        sched.gate.enter()
    try:
        busy = sched.turn("busy", "s", "what is my cat called again?", now=asked)
    finally:
        for _ in range(others):
            sched.gate.leave()
    assert ran_on["quiet"].startswith("memsched-retrieve") and quiet.trace["retrieval_thread"] == "beside"
    assert ran_on["busy"] == threading.current_thread().name and busy.trace["retrieval_thread"] == "before"
    assert soft_on["quiet"].startswith("memsched-soft")  # beside the turn layers
    assert soft_on["busy"] == threading.current_thread().name  # in place, on the turn's thread
    # The reply's vectors: after the turn returned, on a post-reply thread; when busy, before it
    # returned, on the turn's own thread.
    assert refreshed_on["busy"] == threading.current_thread().name
    while sched.queued("quiet", "s"):
        time.sleep(0.01)
    assert refreshed_on["quiet"].startswith("memsched-post")
    assert "Sesame" in system_text({"messages": busy.messages})
    assert busy.messages == quiet.messages


def test_turn_needs_an_llm_and_valid_ids(tmp_path: Path) -> None:
    from memsched.errors import ConfigError, InputError

    memory = Memory(Config.load(home=tmp_path), embedders={"hash": HashEmbedder()})
    sched = Scheduler(memory, start_workers=False)
    try:
        with pytest.raises(ConfigError, match="reply LLM"):
            sched.turn("u", "s", "hi")
        with pytest.raises(InputError):
            sched.prepare("", "s", "hi")
        with pytest.raises(InputError):
            sched.prepare("u", "s", "   ")
        assert sched.prepare("u", "s", "hi").messages[-1]["content"] == "hi"
    finally:
        sched.close()
        memory.close()


def test_turns_stored_outside_the_scheduler_are_embedded_before_retrieval(make: Factory) -> None:
    from memsched.model import Turn

    memory, sched = make()
    sched.turn("u", "s", "hello")
    with sched.holding("u", "s"):
        pass  # the reply's embedding (after the return) is done: it would embed the import too
    memory.add_many(
        [Turn(user_id="u", session_id="import", role="user", content="I grew up in Lanzhou")], index=False
    )
    assert memory.store.turns_missing_vectors("u", "hash-256")
    result = sched.turn("u", "s", "where did I grow up, Lanzhou?")
    assert "backfill" in result.trace["timings_ms"]
    assert _vector_rows(memory, "u", "user: I grew up in Lanzhou") == 1
    assert "I grew up in Lanzhou" in result.messages[0]["content"]


def test_a_filled_page_queues_its_bookmark_job(tmp_path: Path) -> None:
    """Bookmarks are P2 work: each completed page queues one bookmark job, written with the turn."""
    memory = Memory(Config.load(home=tmp_path / "pages", page_size=4), embedders={"hash": HashEmbedder()})
    sched = Scheduler(memory, start_workers=False)
    try:
        for i in range(9):
            sched.record("u", "s", "user" if i % 2 == 0 else "assistant", f"message {i} about Kyoto")
        jobs = sched.queue.list(None, 100)
        pages = sorted(j.payload["page_id"] for j in jobs if j.kind == "bookmark")
        assert pages == [p.id for p in memory.store.pages("u")][:2]  # pages 1 and 2 are full, 3 is not
        assert sum(1 for j in jobs if j.kind == "bookmark_maintenance") == 1  # deduplicated per user
        from memsched.jobs.worker import Worker

        worker = Worker(memory, queue=sched.queue, kinds=["bookmark"])
        worker.drain(timeout=30)
        assert memory.store.bookmark_count("u") >= 2
    finally:
        sched.close()
        memory.close()


def test_rerank_outcomes_are_counted_in_metrics() -> None:
    from memsched.trace import Metrics

    metrics = Metrics()
    for coop in ({"called": True}, {"skipped": "confident"}, {"called": True, "fallback": "fused order"}):
        metrics.observe_turn({"retrieval": {"paging": {"cooperative": coop}}, "tokens": {}}, "turn", "ok")
    text = metrics.render().decode()
    assert 'memsched_rerank_total{outcome="called"} 1.0' in text
    assert 'memsched_rerank_total{outcome="skipped:confident"} 1.0' in text
    assert 'memsched_rerank_total{outcome="failed"} 1.0' in text


def test_the_turn_and_its_reply_are_in_the_in_memory_index_before_the_next_turn(make: Factory) -> None:
    """After the reply's vectors are stored (post-reply, the session still held), the user's
    in-memory index takes them in at once, so the next turn's dense search reads nothing in."""
    memory, sched = make()
    if memory.store.serves_vector_search:
        pytest.skip("PostgreSQL searches its own index: nothing is held in memory")
    sched.turn("u", "s", "we planned a hiking trip to the mountains")
    while sched.queued("u", "s"):
        time.sleep(0.01)
    stored = {t.id for t in memory.store.session_turns("u", "s")}
    assert len(stored) == 2
    index = memory.retriever._indexes.get(("u", memory.embedders["hash"].model_id))
    assert index is not None
    assert stored <= set(index.ids.tolist())
    # and the next turn's search finds the index current: no vectors read from the store
    reads: list[int] = []
    real = memory.store.vectors_since

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return real(*args, **kwargs)

    memory.store.vectors_since = counted  # type: ignore[method-assign]
    sched.turn("u", "s", "which mountains was it again?")
    assert reads == []
