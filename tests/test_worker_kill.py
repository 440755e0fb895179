"""No job lost: SIGKILL a `memsched worker` process mid-backlog, restart it, and every job is done with
its effect recorded exactly once.

This module is also the task module of the worker subprocesses (MEMSCHED_TASK_MODULES names it): the
`test.kill.record` task below writes to a separate SQLite file, so the test can see what ran.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from memsched.jobs.queue import Job, JobQueue
from memsched.jobs.tasks import TaskContext, task
from memsched.store.sqlite import SQLiteStore

EFFECTS_ENV = "MEMSCHED_TEST_EFFECTS"
BLOCK_ENV = "MEMSCHED_TEST_BLOCK"


@task("test.kill.record")
def record(ctx: TaskContext, job: Job) -> None:
    """Append to `runs` (one row per execution) and INSERT OR IGNORE into `effects` (one row per job).

    `runs` is the non-idempotent log that shows how often the task ran; `effects` is the idempotent
    effect a real task would have (a vector keyed by content hash, a bookmark keyed by page).
    """
    with closing(sqlite3.connect(os.environ[EFFECTS_ENV], timeout=60)) as db, db:
        db.execute("INSERT INTO runs (job_id, pid) VALUES (?, ?)", (job.id, os.getpid()))
        db.execute(
            "INSERT OR IGNORE INTO effects (job_id, session_id) VALUES (?, ?)", (job.id, job.session_id)
        )
    if job.payload.get("block") and os.environ.get(BLOCK_ENV) == "1":
        while True:  # hold the job until the process is killed
            time.sleep(0.05)
    release = job.payload.get("wait_for_file")
    if release:
        while not Path(release).exists():
            time.sleep(0.01)


def _effects_db(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(
            "CREATE TABLE runs (seq INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, pid INTEGER NOT NULL)"
        )
        db.execute("CREATE TABLE effects (seq INTEGER PRIMARY KEY, job_id INTEGER UNIQUE, session_id TEXT)")


def _query(path: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(path, timeout=60)) as db:
        return db.execute(sql).fetchall()


def _env(tmp_path: Path, effects: Path, *, block: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSCHED_")}
    # The directory from which this module imports under its current name (tests/ or the repo root).
    base = Path(__file__).resolve().parent
    for _ in range(__name__.count(".")):
        base = base.parent
    env["PYTHONPATH"] = os.pathsep.join([str(base), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["MEMSCHED_TASK_MODULES"] = __name__
    env["MEMSCHED_HOME"] = str(tmp_path)
    env["MEMSCHED_EMBEDDERS"] = "hash"
    env[EFFECTS_ENV] = str(effects)
    if block:
        env[BLOCK_ENV] = "1"
    return env


def _worker(tmp_path: Path, db: Path, effects: Path, *args: str, block: bool) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", "from memsched.cli import main; main()", "worker", "--db", str(db), *args]
    with open(tmp_path / f"worker-{time.monotonic_ns()}.log", "wb") as log:  # the child keeps its own copy
        return subprocess.Popen(
            cmd, env=_env(tmp_path, effects, block=block), stdout=log, stderr=subprocess.STDOUT
        )


def _wait_until(check, proc: subprocess.Popen[bytes], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None:
            pytest.fail(f"worker exited with {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_sigkill_mid_backlog_loses_no_job(tmp_path: Path) -> None:
    """At-least-once execution + idempotent effects = exactly-once effects.

    300 jobs are queued (every fifth one in an ordered chain of one session, #100 among them). A
    worker process with two threads runs them; jobs #100 and #101 hold their threads, so at the kill
    exactly jobs 1-99 are done, #100 and #101 are mid-flight (their effect written, the job not yet
    marked done) and 102-300 are queued. After SIGKILL, a new worker waits for the dead worker's
    leases to expire, takes #100/#101 back and drains the rest. Every job ends done, every effect
    exists once, #100/#101 ran twice (the at-least-once part) and nothing else ran twice; the ordered
    chain's effects are in order.
    """
    db = tmp_path / "memsched.db"
    effects = tmp_path / "effects.db"
    _effects_db(effects)
    store = SQLiteStore(db)
    queue = JobQueue(store)
    jobs = []
    for n in range(1, 301):
        session = "chain" if n % 5 == 0 else f"s{n % 3}"
        jobs.append(
            Job(
                kind="test.kill.record",
                user_id="u",
                session_id=session,
                ordered=session == "chain",
                payload={"n": n, "block": n in (100, 101)},
            )
        )
    ids = queue.enqueue(jobs)
    assert ids == list(range(1, 301))  # a fresh database: job id n is the n-th job
    store.close()

    first = _worker(tmp_path, db, effects, "--threads", "2", "--lease", "2", "--poll", "0.01", block=True)
    try:
        _wait_until(
            lambda: len(_query(effects, "SELECT 1 FROM effects WHERE job_id IN (100, 101)")) == 2,
            first,
            "jobs 100 and 101 to start",
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL

    store = SQLiteStore(db)
    queue = JobQueue(store)
    at_kill = {j.id: j.status for j in queue.list(limit=1000)}
    store.close()
    assert [i for i, s in sorted(at_kill.items()) if s == "done"] == list(range(1, 100))
    assert at_kill[100] == at_kill[101] == "running"
    assert all(at_kill[i] == "queued" for i in range(102, 301))

    second = _worker(
        tmp_path, db, effects, "--once", "--threads", "2", "--lease", "2", "--poll", "0.02", block=False
    )
    assert second.wait(timeout=300) == 0

    store = SQLiteStore(db)
    queue = JobQueue(store)
    final = {j.id: j for j in queue.list(limit=1000)}
    store.close()
    assert len(final) == 300
    assert {j.status for j in final.values()} == {"done"}
    for jid in (100, 101):
        assert final[jid].attempts == 1  # the lost lease counted as one failed attempt
        assert "expired" in (final[jid].last_error or "")

    effect_ids = [r[0] for r in _query(effects, "SELECT job_id FROM effects ORDER BY seq")]
    assert sorted(effect_ids) == list(range(1, 301))  # every job's effect, once
    runs = Counter(r[0] for r in _query(effects, "SELECT job_id FROM runs"))
    assert runs[100] == runs[101] == 2
    assert {jid: n for jid, n in runs.items() if n != 1} == {100: 2, 101: 2}
    assert set(runs) == set(range(1, 301))
    chain = [
        r[0] for r in _query(effects, "SELECT job_id FROM effects WHERE session_id = 'chain' ORDER BY seq")
    ]
    assert chain == sorted(chain) and len(chain) == 60


def test_sigterm_finishes_the_current_job_then_exits(tmp_path: Path) -> None:
    """A graceful stop: SIGTERM while a job runs; the worker finishes it, marks it done and exits 0."""
    db = tmp_path / "memsched.db"
    effects = tmp_path / "effects.db"
    release = tmp_path / "release"
    _effects_db(effects)
    store = SQLiteStore(db)
    (jid,) = JobQueue(store).enqueue(
        [Job(kind="test.kill.record", user_id="u", payload={"wait_for_file": str(release)})]
    )
    store.close()

    proc = _worker(tmp_path, db, effects, "--poll", "0.01", block=False)
    try:
        _wait_until(lambda: len(_query(effects, "SELECT 1 FROM runs")) == 1, proc, "the job to start")
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.6)  # let the main thread see the signal while the job still runs (not asserted)
        release.touch()
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    store = SQLiteStore(db)
    job = JobQueue(store).get(jid)
    store.close()
    assert job is not None and job.status == "done" and job.attempts == 0
    assert len(_query(effects, "SELECT 1 FROM runs")) == 1
