"""Crash and restart: `memsched serve` is SIGKILLed mid-traffic and started again on the same data.

Every turn the server acknowledged is there after the restart, every queued job (P2 bookmarks of the
pages the turns filled) completes exactly once, no session lock of the dead process stays held (a new
turn of each session goes through at once), and the database passes SQLite's integrity check.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import httpx

from memsched.testing.live_server import free_port

USERS = ("u0", "u1", "u2")


def _start(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSCHED_")}
    env.update(
        {
            "MEMSCHED_HOME": str(home),
            "MEMSCHED_EMBEDDERS": "hash",
            "MEMSCHED_PAGE_SIZE": "4",
            "MEMSCHED_PORT": str(port),
            "MEMSCHED_WORKERS": "1",
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", "from memsched.cli import main; main()", "serve", "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert proc.poll() is None, "the server exited during start-up"
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the server did not come up")


def test_sigkill_mid_traffic_loses_no_acknowledged_turn_and_no_job(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    first = _start(home, port)
    acked: list[tuple[str, str]] = []
    stop = threading.Event()

    def traffic() -> None:
        i = 0
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                user = USERS[i % len(USERS)]
                text = f"message {i} about the garden and the violin lesson"
                body = {
                    "user": user,
                    "session_id": "s",
                    "role": "user" if i % 2 else "assistant",
                    "content": text,
                }
                try:
                    r = client.post(f"{base}/v1/turns", json=body)
                except httpx.TransportError:
                    return  # the server is gone
                if r.status_code == 201:
                    acked.append((user, text))
                i += 1

    sender = threading.Thread(target=traffic, daemon=True)
    sender.start()
    deadline = time.monotonic() + 120
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    stop.set()
    sender.join(timeout=30)
    assert len(acked) >= 40

    second = _start(home, port)
    try:
        # The dead server's session locks are free at once: a turn of every session goes through.
        for user in USERS:
            r = httpx.post(
                f"{base}/v1/turns",
                json={"user": user, "session_id": "s", "role": "user", "content": "back again"},
                timeout=20,
            )
            assert r.status_code == 201, r.text
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            jobs = [
                j
                for j in httpx.get(f"{base}/v1/jobs", params={"limit": 1000}, timeout=10).json()
                # bookmark maintenance waits for a quiet moment (MAINTENANCE_DELAY): not due yet
                if not (
                    j["status"] == "queued" and datetime.fromisoformat(j["run_after"]) > datetime.now(UTC)
                )
            ]
            if jobs and all(j["status"] in ("done", "dead") for j in jobs):
                break
            time.sleep(0.2)
        assert jobs and all(j["status"] == "done" for j in jobs), [j for j in jobs if j["status"] != "done"]
        for user in USERS:
            turns = httpx.get(
                f"{base}/v1/users/{user}/sessions/s/turns", params={"limit": 500}, timeout=10
            ).json()["turns"]
            stored = [t["content"] for t in turns]
            for who, text in acked:
                if who == user:
                    assert stored.count(text) == 1, text  # there, and once
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()

    with closing(sqlite3.connect(home / "memsched.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM session_locks").fetchone()[0] == 0
        pages = [
            r[0]
            for r in db.execute("SELECT json_extract(payload, '$.page_id') FROM jobs WHERE kind = 'bookmark'")
        ]
        assert pages and len(pages) == len(set(pages))  # each page's job exists once...
        done = db.execute(
            "SELECT count(DISTINCT bp.page_id) FROM bookmark_pages bp JOIN bookmarks b ON b.id = bp.bookmark_id"
        ).fetchone()[0]
        assert done >= len(set(pages))  # ...and its effect, the page's bookmarks, is there


def test_a_restart_takes_back_what_a_dead_process_of_this_host_held(tmp_path: Path) -> None:
    import socket

    from memsched.config import Config
    from memsched.jobs.queue import Job, JobQueue, owner_is_dead
    from memsched.memory import Memory
    from memsched.scheduler import Scheduler

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = f"turn-{socket.gethostname()}:{gone.pid}:0123abcd:89ef"
    alive = f"w-{socket.gethostname()}:{os.getpid()}:0123abcd"
    elsewhere = f"w-some-other-host:{gone.pid}:0123abcd"
    assert owner_is_dead(dead) and not owner_is_dead(alive) and not owner_is_dead(elsewhere)

    memory = Memory(Config.load(home=tmp_path), embedders="hash")
    store = memory.store
    queue = JobQueue(store)
    (jid,) = queue.enqueue([Job(kind="embed", user_id="u", session_id="s", payload={})])
    now = time.time()
    store.session_hold("u", "s", dead, timeout=0, lease_seconds=3600)  # never released: it "died"
    assert store.jobs_claim(dead, now=now, lease_until=now + 3600) is not None
    sched = Scheduler(memory, start_workers=False)
    try:
        assert store.lock_holder("u", "s") is None  # not held until the lease's end in an hour
        assert queue.get(jid).status in ("queued", "done")  # type: ignore[union-attr]
    finally:
        sched.close()
        memory.close()
