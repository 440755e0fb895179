"""Workers, the task registry and the `memsched worker` / `memsched jobs` commands."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from datetime import time as dtime
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memsched.cli import app
from memsched.config import Config
from memsched.errors import ConfigError, InputError
from memsched.jobs import tasks
from memsched.jobs.queue import Job, JobQueue, Priority
from memsched.jobs.tasks import TaskContext, get_task, registered, task
from memsched.jobs.worker import Worker, in_window, parse_window
from memsched.memory import Memory

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

EFFECTS: list[tuple[str | None, int]] = []
_EFFECTS_LOCK = threading.Lock()


@task("test.append")
def _append(ctx: TaskContext, job: Job) -> None:
    with _EFFECTS_LOCK:
        EFFECTS.append((job.session_id, int(job.payload.get("n", 0))))


@task("test.boom")
def _boom(ctx: TaskContext, job: Job) -> None:
    raise RuntimeError("boom")


STEPS: dict[str, Any] = {}


@task("test.steps")
def _steps(ctx: TaskContext, job: Job) -> None:
    """Background work in small units: a pause before each (as a MiniLM call's pieces have)."""
    from memsched.embed.base import background_pause

    STEPS["started"].set()
    assert STEPS["turn_started"].wait(10)
    hook = background_pause()
    STEPS["hook_is_ctx_pause"] = hook == ctx.pause
    for _ in range(3):
        STEPS.setdefault("waits", []).append(ctx.pause())
    STEPS["done"].set()


@task("test.bad_input")
def _bad_input(ctx: TaskContext, job: Job) -> None:
    raise InputError("payload has no page id")


@pytest.fixture(autouse=True)
def _hash_embedder_and_no_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    # conftest.py isolates MEMSCHED_*; the CLI commands here must not load real models.
    monkeypatch.setenv("MEMSCHED_EMBEDDERS", "hash")
    EFFECTS.clear()


@pytest.fixture
def memory(tmp_path) -> Iterator[Memory]:
    with Memory(Config.load(home=tmp_path, embedders="hash")) as mem:
        yield mem


@pytest.fixture
def queue(memory: Memory) -> JobQueue:
    # Retries come back at once, so tests need not wait for backoff.
    return JobQueue(memory.store, backoff_base=0.0)


def make_worker(memory: Memory, queue: JobQueue, **kw) -> Worker:
    return Worker(memory, queue=queue, llm=None, poll=0.01, **kw)


# -- running one job ---------------------------------------------------------------------------------


def test_builtin_embed_task_backfills_vectors(memory: Memory, queue: JobQueue) -> None:
    memory.add("alice", "s1", "user", "My cat is called Sesame", index=False)
    memory.add("alice", "s1", "user", "我的猫叫芝麻", index=False)
    assert memory.store.vector_count("alice", "hash-256") == 0
    (jid,) = queue.enqueue([Job(kind="embed", user_id="alice")])
    worker = make_worker(memory, queue)
    assert worker.run_once() is True
    assert worker.run_once() is False
    assert memory.store.vector_count("alice", "hash-256") == 2
    done = queue.get(jid)
    assert done is not None and done.status == "done" and done.finished_at is not None


def test_a_failing_task_is_retried_then_dead_and_the_thread_survives(memory: Memory, queue: JobQueue) -> None:
    (bad,) = queue.enqueue([Job(kind="test.boom", user_id="u", max_attempts=3)])
    with make_worker(memory, queue, threads=2).start() as worker:
        (good,) = queue.enqueue([Job(kind="test.append", user_id="u", payload={"n": 1})])
        assert queue.wait_for("u", None, max_priority=Priority.P2, timeout=60)
        assert worker.running
    dead = queue.get(bad)
    assert dead is not None
    assert dead.status == "dead" and dead.attempts == 3
    assert dead.last_error == "RuntimeError: boom"
    finished = queue.get(good)
    assert finished is not None and finished.status == "done"
    assert EFFECTS == [(None, 1)]


def test_unknown_kind_fails_with_a_clear_error(memory: Memory, queue: JobQueue) -> None:
    (jid,) = queue.enqueue([Job(kind="no.such.kind", user_id="u", max_attempts=2)])
    worker = make_worker(memory, queue)
    assert worker.run_once()
    first = queue.get(jid)
    assert first is not None and first.status == "queued" and first.attempts == 1
    assert first.last_error is not None
    assert "unknown job kind 'no.such.kind'" in first.last_error
    assert "MEMSCHED_TASK_MODULES" in first.last_error
    assert worker.run_once()
    dead = queue.get(jid)
    assert dead is not None and dead.status == "dead"


def test_bad_input_is_dead_at_once(memory: Memory, queue: JobQueue) -> None:
    (jid,) = queue.enqueue([Job(kind="test.bad_input", user_id="u", max_attempts=5)])
    make_worker(memory, queue).run_once()
    dead = queue.get(jid)
    assert dead is not None and dead.status == "dead" and dead.attempts == 1
    assert dead.last_error == "InputError: payload has no page id"


# -- the P1 barrier and ordering with real threads ---------------------------------------------------


def test_wait_for_returns_once_a_worker_completes_the_p1_job(memory: Memory, queue: JobQueue) -> None:
    (jid,) = queue.enqueue([Job(kind="test.append", user_id="u", session_id="s", priority=Priority.P1)])
    assert queue.pending("u", "s") == 1
    assert queue.wait_for("u", "s", timeout=0.02) is False  # no worker yet
    with make_worker(memory, queue).start():
        assert queue.wait_for("u", "s", timeout=60) is True
        done = queue.get(jid)
        assert done is not None and done.status == "done"
        assert EFFECTS == [("s", 0)]


def test_ordered_jobs_keep_their_order_under_many_threads(memory: Memory, queue: JobQueue) -> None:
    jobs = [
        Job(kind="test.append", user_id="u", session_id=s, payload={"n": i}, ordered=True)
        for i in range(25)
        for s in ("a", "b")
    ]
    queue.enqueue(jobs)
    worker = make_worker(memory, queue, threads=4)
    with worker.start():
        assert queue.wait_for("u", None, max_priority=Priority.P2, timeout=120)
    for session in ("a", "b"):
        assert [n for s, n in EFFECTS if s == session] == list(range(25))


def test_drain_runs_everything_runnable(memory: Memory, queue: JobQueue) -> None:
    queue.enqueue([Job(kind="test.append", user_id="u", payload={"n": i}) for i in range(7)])
    worker = make_worker(memory, queue)
    assert worker.drain(timeout=60) == 7
    assert sorted(n for _, n in EFFECTS) == list(range(7))
    assert queue.stats()["status"]["done"] == 7


# -- the P2 window -----------------------------------------------------------------------------------


def test_p2_jobs_wait_for_their_window(memory: Memory, queue: JobQueue) -> None:
    p2, ordered_p2, p1 = queue.enqueue(
        [
            Job(kind="test.append", user_id="u", priority=Priority.P2),
            Job(kind="test.append", user_id="u", session_id="s", priority=Priority.P2, ordered=True),
            Job(kind="test.append", user_id="u", priority=Priority.P1),
        ]
    )
    noon = datetime(2024, 10, 15, 12, 0)
    worker = make_worker(memory, queue, p2_window=parse_window("01:00-05:00"), local_now=lambda: noon)
    assert worker.drain(timeout=60) == 2
    statuses = {j.id: j.status for j in queue.list()}
    assert statuses == {p1: "done", ordered_p2: "done", p2: "queued"}
    night = make_worker(
        memory, queue, p2_window=parse_window("01:00-05:00"), local_now=lambda: datetime(2024, 10, 16, 2, 30)
    )
    assert night.run_once()
    finished = queue.get(p2)
    assert finished is not None and finished.status == "done"


def test_window_parsing_and_midnight_wrap() -> None:
    assert parse_window("01:00-05:00") == (dtime(1), dtime(5))
    late = parse_window("23:00 - 05:30")
    assert in_window(late, dtime(23, 30)) and in_window(late, dtime(3)) and not in_window(late, dtime(12))
    day = parse_window("09:00-17:00")
    assert in_window(day, dtime(9)) and not in_window(day, dtime(17)) and not in_window(day, dtime(8, 59))
    with pytest.raises(ConfigError, match="HH:MM-HH:MM"):
        parse_window("nightly")


# -- the registry ------------------------------------------------------------------------------------


def test_registry_knows_builtin_and_test_kinds() -> None:
    kinds = registered()
    assert {"embed", "test.append"} <= set(kinds)
    assert get_task("test.append") is _append
    with pytest.raises(tasks.UnknownTaskError, match="unknown job kind 'nope'"):
        get_task("nope")


def test_registering_a_kind_twice_is_an_error() -> None:
    def other(ctx: TaskContext, job: Job) -> None:
        pass

    with pytest.raises(ConfigError, match="registered twice"):
        task("test.append")(other)
    assert task("test.append")(_append) is _append  # the same function again is fine


def test_task_modules_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / "extra_tasks_for_test.py").write_text(
        "from memsched.jobs.tasks import task\n\n"
        "@task('test.extra')\n"
        "def extra(ctx, job):\n"
        "    job.payload['ran'] = True\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MEMSCHED_TASK_MODULES", " extra_tasks_for_test ,")
    assert tasks.extra_modules() == ["extra_tasks_for_test"]
    fn = get_task("test.extra")
    j = Job(kind="test.extra", user_id="u")
    fn(None, j)  # type: ignore[arg-type]
    assert j.payload == {"ran": True}
    monkeypatch.setenv("MEMSCHED_TASK_MODULES", "no_such_module_anywhere")
    with pytest.raises(ConfigError, match="no_such_module_anywhere"):
        tasks.load_task_modules()


# -- CLI ---------------------------------------------------------------------------------------------


def _cli_queue(tmp_path) -> tuple[Memory, JobQueue]:
    mem = Memory(Config.load(home=tmp_path, embedders="hash"))
    return mem, JobQueue(mem.store)


def test_cli_jobs_failed_retry_and_worker_once(tmp_path) -> None:
    runner = CliRunner()
    mem, queue = _cli_queue(tmp_path)
    try:
        bad, good = queue.enqueue(
            [
                Job(kind="test.boom", user_id="u", session_id="s", max_attempts=1),
                Job(kind="test.append", user_id="u", session_id="s", payload={"n": 5}, priority=Priority.P1),
            ]
        )
    finally:
        mem.close()

    result = runner.invoke(app, ["worker", "--once", "--home", str(tmp_path), "--log-level", "WARNING"])
    assert result.exit_code == 0, result.output
    assert "ran 2 jobs" in result.output
    assert EFFECTS == [("s", 5)]

    result = runner.invoke(app, ["jobs", "--failed", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "test.boom" in result.output and "RuntimeError" in result.output
    assert "test.append" not in result.output

    result = runner.invoke(app, ["jobs", "--json", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    by_id = {j["id"]: j for j in data["jobs"]}
    assert by_id[bad]["status"] == "dead" and by_id[bad]["last_error"] == "RuntimeError: boom"
    assert by_id[good]["status"] == "done" and by_id[good]["priority"] == "P1"
    assert data["stats"]["status"]["dead"] == 1

    result = runner.invoke(app, ["jobs", "retry", str(bad), "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"job {bad} queued again" in result.output
    result = runner.invoke(app, ["jobs", "--status", "queued", "--json", "--home", str(tmp_path)])
    assert [j["id"] for j in json.loads(result.output)["jobs"]] == [bad]

    result = runner.invoke(app, ["jobs", "retry", str(good), "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert "done, not dead" in result.output
    result = runner.invoke(app, ["jobs", "retry", "424242", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert "no job 424242" in result.output


def test_cli_rejects_bad_options(tmp_path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["jobs", "--failed", "--status", "done", "--home", str(tmp_path)])
    assert result.exit_code == 1 and "--failed" in result.output
    result = runner.invoke(app, ["jobs", "--status", "bogus", "--home", str(tmp_path)])
    assert result.exit_code == 1 and "status must be one of" in result.output
    result = runner.invoke(app, ["worker", "--once", "--p2-window", "tonight", "--home", str(tmp_path)])
    assert result.exit_code == 1 and "HH:MM-HH:MM" in result.output


def test_cli_p2_window_from_the_environment(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem, queue = _cli_queue(tmp_path)
    try:
        queue.enqueue([Job(kind="test.append", user_id="u", priority=Priority.P2)])
    finally:
        mem.close()
    # A window that never contains the current local time: it starts two hours from now.
    start = (datetime.now().hour + 2) % 24
    monkeypatch.setenv("MEMSCHED_P2_WINDOW", f"{start:02d}:00-{(start + 1) % 24:02d}:00")
    result = CliRunner().invoke(app, ["worker", "--once", "--home", str(tmp_path), "--log-level", "WARNING"])
    assert result.exit_code == 0, result.output
    assert "ran 0 jobs; 1 queued" in result.output
    assert EFFECTS == []


def test_every_jobs_command_and_option_has_help() -> None:
    # typer >= 0.20 vendors click, so look the groups up by attribute rather than by class.
    root: Any = typer.main.get_command(app)
    jobs_group = root.commands["jobs"]
    commands = [root.commands["worker"], jobs_group, jobs_group.commands["retry"]]
    for cmd in commands:
        assert cmd.help, f"{cmd.name} has no help"
        for param in cmd.params:
            text = getattr(param, "help", None)
            assert text, f"{cmd.name} {param.name} has no help"


def test_p2_work_steps_aside_while_a_turn_is_in_flight(memory: Memory, queue: JobQueue) -> None:
    """With a turn in flight, a worker still runs P1 jobs (the turn may wait on them) but holds P2
    work until the turn is done."""
    from memsched.jobs.worker import ForegroundGate

    gate = ForegroundGate(max_wait=30.0)
    queue.enqueue([Job("test.append", "u", "s2", {"n": 2}, priority=Priority.P2)])
    queue.enqueue([Job("test.append", "u", "s1", {"n": 1}, priority=Priority.P1)])
    worker = make_worker(memory, queue, gate=gate)
    with gate.turn():
        assert worker.run_once()  # the P1 job runs at once
        assert EFFECTS == [("s1", 1)]
        waiting = threading.Thread(target=worker.run_once)
        waiting.start()
        waiting.join(timeout=0.3)
        assert waiting.is_alive()  # parked at the gate, the P2 job untouched
        assert EFFECTS == [("s1", 1)]
    waiting.join(timeout=10)
    assert not waiting.is_alive()
    assert EFFECTS == [("s1", 1), ("s2", 2)]


def test_background_units_go_on_one_step_at_a_time_while_turns_are_in_flight(
    memory: Memory, queue: JobQueue
) -> None:
    """A P2 job already running when a turn starts waits at most the gate's `step` before each of
    its small units, not until the turn ends (a long stream of turns slows it, never stops it), and
    its embedders pause with the same hook."""
    from memsched.jobs.worker import ForegroundGate

    STEPS.clear()
    STEPS.update(started=threading.Event(), turn_started=threading.Event(), done=threading.Event())
    gate = ForegroundGate(max_wait=60.0, step=0.01)
    queue.enqueue([Job("test.steps", "u", "s", {}, priority=Priority.P2)])
    worker = make_worker(memory, queue, gate=gate).start()
    try:
        assert STEPS["started"].wait(10)
        with gate.turn():
            STEPS["turn_started"].set()
            # The turn lasts until the job is done: with pauses that waited for the turn to end
            # (`wait_idle`, up to 60 s here) this would time out.
            assert STEPS["done"].wait(10)
            assert STEPS["waits"] == [False, False, False]  # each unit went on beside the turn
    finally:
        worker.stop(timeout=10)
    assert STEPS["hook_is_ctx_pause"]


def test_the_gate_wait_is_bounded_and_says_whether_the_foreground_went_idle() -> None:
    """Background work is never starved: a wait for a turn gives up after `max_wait` seconds (and
    says so: a model call made then runs to its end instead of being cut short by the turn)."""
    from memsched.jobs.worker import ForegroundGate

    gate = ForegroundGate(max_wait=0.05, step=0.01)
    assert gate.wait_idle() is True and gate.wait_step() is True and not gate.busy()
    with gate.turn():
        assert gate.busy()
        assert gate.wait_idle() is False  # a turn that does not end within max_wait
        assert gate.wait_step() is False  # ... nor within a step
    assert gate.wait_idle() is True and gate.wait_step() is True
