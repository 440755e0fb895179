"""Many processes on one PostgreSQL: two `memsched serve` and two `memsched worker` processes (real OS
processes started through the CLI) share a database and are driven concurrently over HTTP.

* Per-session order holds across servers: clients of one (user, session) alternate between the two
  servers; the stored turns are whole exchanges (a user message, then its reply) one after the
  other, nothing lost or doubled, and every reply was written with its predecessor in the context.
* Every job runs once: the jobs both servers queue are claimed by both workers (SKIP LOCKED); each
  is claimed once and done once, with no failed attempt.
* Nothing is lost when a worker is SIGKILLed mid-job: the jobs it held come back when their lease
  expires, and the other worker runs them (and everything else) to the end.
* Waiters are served in arrival order across servers: messages queued behind a held session, one on
  each server, are answered in the order they reached PostgreSQL's lock queue.
* A server SIGKILLed while it holds a session (its upstream call hanging) frees the session at once:
  the other server's message of that session, queued in PostgreSQL's lock queue, goes ahead.

The servers run no background jobs themselves (MEMSCHED_WORKERS=0: API replicas), so every job is
run by one of the two worker processes. Each process has a fake LLM of its own; the workers' fakes
answer slowly, so both workers have jobs in hand at once. Which worker ran what comes from the
workers' logs ("job claimed id=…", "job done id=…"); how each job ended, from the jobs table.

One test, because starting four Python processes is most of its time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from memsched.jobs.queue import SessionLock
from memsched.store import open_store
from memsched.testing import Delay, FakeOpenAI, Reply, echo_responder, free_port

USER = "alice"
SESSION = "s1"
PAGE_SIZE = 4
LEASE = 2.0  # seconds a worker's job lease lasts (renewed while the job runs)
WAIT = 180.0  # generous: only for waiting on processes and queues, never asserted on
MAX_ROUNDS = 20  # rounds of turns to wait for the doomed worker to take two jobs (one or two suffice)


def slow(seconds: float) -> Callable[[dict[str, Any]], Reply]:
    """A fake-LLM responder that answers like `echo_responder` after `seconds`."""

    def respond(body: dict[str, Any]) -> Reply:
        return Delay(seconds, then=echo_responder(body))

    return respond


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    url: str = ""  # a server's base URL

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def claims(self) -> list[int]:
        return [int(j) for j in re.findall(r"job claimed id=(\d+)", self.text())]

    def done(self) -> list[int]:
        return [int(j) for j in re.findall(r"job done id=(\d+)", self.text())]


@dataclass
class Cluster:
    """Processes on one database; `stop()` ends every one still running (the fixture calls it)."""

    tmp_path: Path
    database_url: str
    procs: list[Proc] = field(default_factory=list)

    def _env(self, name: str, fake: FakeOpenAI, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSCHED_")}
        # Import this tree's memsched (the one under test), wherever pytest runs from.
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
        env.update(
            MEMSCHED_HOME=str(self.tmp_path / name),
            MEMSCHED_DATABASE_URL=self.database_url,
            MEMSCHED_EMBEDDERS="hash",
            MEMSCHED_PAGE_SIZE=str(PAGE_SIZE),
            MEMSCHED_UPSTREAM_BASE_URL=fake.base_url,
            MEMSCHED_UPSTREAM_MODEL="fake-model",
            HF_HUB_OFFLINE="1",
        )
        env.update(extra)
        return env

    def _start(self, name: str, args: list[str], env: dict[str, str]) -> Proc:
        log = self.tmp_path / f"{name}.log"
        cmd = [sys.executable, "-c", "from memsched.cli import main; main()", *args]
        with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
            popen = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def serve(self, name: str, fake: FakeOpenAI) -> Proc:
        """Start a `memsched serve` that runs no background jobs (see `ready`)."""
        port = free_port()
        # A long LLM timeout: a session lease (4 x it) would outlast the lock timeout (see part 5).
        env = self._env(name, fake, MEMSCHED_WORKERS="0", MEMSCHED_LLM_TIMEOUT=str(WAIT))
        proc = self._start(name, ["serve", "--port", str(port)], env)
        proc.url = f"http://127.0.0.1:{port}"
        return proc

    def worker(self, name: str, fake: FakeOpenAI, threads: int = 1) -> Proc:
        """Start a `memsched worker` that logs its claims (see `ready`)."""
        args = ["worker", "--threads", str(threads), "--lease", str(LEASE), "--log-level", "DEBUG"]
        # A job's LLM call waits as long as its fake makes it (the killed worker's never answers).
        return self._start(name, args, self._env(name, fake, MEMSCHED_LLM_TIMEOUT=str(WAIT)))

    def ready(self) -> None:
        """Wait until every server answers /healthz and every worker's threads run."""
        for proc in self.procs:
            if proc.url:
                wait_until(lambda p=proc: healthy(p.url), f"{proc.name} to answer /healthz", proc)
            else:
                wait_until(
                    lambda p=proc: "Ctrl-C to stop" in " ".join(p.text().split()),
                    f"{proc.name} to start",
                    proc,
                )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait()


def healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def wait_until(check: Callable[[], bool], what: str, *watched: Proc, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for proc in watched:
            if proc.popen.poll() is not None:
                tail = proc.text()[-3000:]
                pytest.fail(
                    f"{proc.name} exited with {proc.popen.returncode} while waiting for {what}:\n{tail}"
                )
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str) -> Iterator[Cluster]:
    c = Cluster(tmp_path, pg_url)
    try:
        yield c
    finally:
        c.stop()


def sql(url: str, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(query, args).fetchall()]


@dataclass(frozen=True)
class JobRow:
    id: int
    kind: str
    status: str
    attempts: int
    last_error: str | None
    run_after: float


def lock_waiters(url: str) -> int:
    """Advisory lock requests of the database waiting in PostgreSQL's lock queue."""
    rows = sql(
        url,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    return int(rows[0][0])


def jobs(url: str) -> dict[int, JobRow]:
    rows = sql(url, "SELECT id, kind, status, attempts, last_error, run_after FROM jobs ORDER BY id")
    return {r[0]: JobRow(*r) for r in rows}


def due(url: str) -> dict[int, JobRow]:
    """The jobs that should have run by now: all but the per-user bookmark maintenance job, which
    waits ten minutes after a page fills."""
    soon = time.time() + 60
    return {i: j for i, j in jobs(url).items() if j.status != "queued" or j.run_after < soon}


def all_finished(url: str) -> bool:
    return all(j.status in ("done", "dead") for j in due(url).values())


def chat(url: str, message: str, *, stream: bool) -> str:
    body = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": message}],
        "user": USER,
        "metadata": {"session_id": SESSION},
        "stream": stream,
    }
    if not stream:
        r = httpx.post(url + "/v1/chat/completions", json=body, timeout=WAIT)
        assert r.status_code == 200, r.text
        return str(r.json()["choices"][0]["message"]["content"])
    text = []
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=WAIT) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:]).get("choices") or []:
                    text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text)


def drive(servers: list[Proc], clients: int, messages: int, tag: str) -> dict[str, str]:
    """`clients` threads send `messages` messages each to one session, alternating between the
    servers, each waiting for its reply before sending the next (odd clients stream); returns the
    reply to every message."""
    replies: dict[str, str] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        try:
            for m in range(messages):
                text = f"{tag} client {c} message {m}"
                reply = chat(servers[(c + m) % len(servers)].url, text, stream=c % 2 == 1)
                with lock:
                    replies[text] = reply
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT)
    assert not errors, errors
    assert len(replies) == clients * messages
    return replies


def check_session_order(url: str, replies: dict[str, str], fakes: list[FakeOpenAI]) -> None:
    """The session holds `replies`' exchanges, whole and one after another, each client's in the
    order it sent them, and each reply was asked for with the previous exchange in its context."""
    turns = [
        (str(role), str(content))
        for role, content in sql(
            url,
            "SELECT role, content FROM turns WHERE user_id = %s AND session_id = %s ORDER BY seq",
            (USER, SESSION),
        )
    ]
    assert [r for r, _ in turns] == ["user", "assistant"] * (len(turns) // 2)
    users = [c for r, c in turns if r == "user"]
    assert sorted(users) == sorted(replies)  # every message once: none lost, none doubled
    for i in range(0, len(turns), 2):
        assert turns[i + 1][1] == replies[turns[i][1]]  # the reply right after its message
    for client in {u.rsplit(" message ", 1)[0] for u in users}:
        sent = [int(u.rsplit(" ", 1)[1]) for u in users if u.startswith(client + " message ")]
        assert sent == sorted(sent)
    # What each reply was asked for with (the servers' fakes got one request per message).
    asked = {}
    for fake in fakes:
        for body in fake.chat_requests:
            *context, last = body["messages"]
            asked[last["content"]] = [str(m.get("content")) for m in context]
    for i in range(2, len(turns), 2):
        previous = [turns[i - 2][1], turns[i - 1][1]]
        assert all(p in asked[turns[i][1]] for p in previous), (turns[i][1], previous)


def test_two_servers_and_two_workers_share_one_postgres(cluster: Cluster) -> None:
    url = cluster.database_url
    with (
        FakeOpenAI(slow(0.02)) as fake_a,
        FakeOpenAI(slow(0.02)) as fake_b,
        FakeOpenAI(slow(0.3)) as fake_wa,
        FakeOpenAI(slow(0.3)) as fake_wb,
    ):
        servers = [cluster.serve("serve-a", fake_a), cluster.serve("serve-b", fake_b)]
        doomed = cluster.worker("worker-a", fake_wa, threads=2)
        survivor = cluster.worker("worker-b", fake_wb)
        cluster.ready()

        # 1. Per-session order across servers, and 2. every job run once by one of the workers.
        replies = drive(servers, clients=4, messages=6, tag="first")
        check_session_order(url, replies, [fake_a, fake_b])
        wait_until(lambda: all_finished(url), "the jobs to finish", doomed, survivor)
        ran = due(url)
        assert [j.kind for j in ran.values()].count("bookmark") == len(replies) * 2 // PAGE_SIZE
        assert all(j.status == "done" and j.attempts == 0 and j.last_error is None for j in ran.values())
        assert doomed.claims() and survivor.claims()  # both workers took jobs
        assert Counter(doomed.claims() + survivor.claims()) == Counter(list(ran))  # each job claimed once
        assert Counter(doomed.done() + survivor.done()) == Counter(list(ran))

        # 3. worker-a's LLM stops answering: the jobs it claims from now on stay in its hands.
        def hang(body: dict[str, Any]) -> Reply:
            return Delay(WAIT, then=echo_responder(body))

        fake_wa.responder = hang
        fake_wb.responder = slow(0.05)
        owner = f"%:{doomed.popen.pid}:%"

        def held() -> list[int]:
            rows = sql(url, "SELECT id FROM jobs WHERE status = 'running' AND lease_owner LIKE %s", (owner,))
            return sorted(r[0] for r in rows)

        for n in range(MAX_ROUNDS):  # worker-b takes jobs too: a round or two until worker-a has two
            replies |= drive(servers, clients=2, messages=2, tag=f"round {n}")
            if len(held()) == 2:
                break
        wait_until(lambda: len(held()) == 2, "worker-a to hold two jobs", doomed)
        lost = held()
        doomed.popen.send_signal(signal.SIGKILL)
        doomed.popen.wait(timeout=60)
        assert doomed.popen.returncode == -signal.SIGKILL

        # worker-b started while worker-a lived, so only the lease's expiry gives the jobs back.
        replies |= drive(servers, clients=4, messages=2, tag="after")
        check_session_order(url, replies, [fake_a, fake_b])
        wait_until(lambda: all_finished(url), "every job to finish", survivor)

        final = due(url)
        assert {j.status for j in final.values()} == {"done"}
        for jid in lost:  # one attempt lost with worker-a, the next one done
            assert final[jid].attempts == 1 and "expired" in (final[jid].last_error or "")
        assert all(j.attempts == 0 and j.last_error is None for i, j in final.items() if i not in lost)
        # Every job was claimed once, the lost ones twice (once by each worker), and done once.
        claimed = doomed.claims() + survivor.claims()
        assert Counter(claimed) == Counter([*final, *lost])
        assert sorted(set(doomed.claims()) - set(doomed.done())) == lost
        assert Counter(doomed.done() + survivor.done()) == Counter(list(final))

        outcome: dict[str, Any] = {}  # message -> its reply, or what the client got instead

        def send(server: Proc, text: str) -> None:
            try:
                outcome[text] = chat(server.url, text, stream=False)
            except BaseException as exc:
                outcome[text] = exc

        # 4. Arrival order across servers: while this test holds the session, a message to serve-b
        # and then one to serve-a queue in PostgreSQL's lock queue; they are answered in that order
        # (polling for a lease would answer them in either).
        store = open_store(url)
        try:
            holder = SessionLock(store).take(USER, SESSION, "test-holder", timeout=0)
            queued = []
            for n, server in enumerate([servers[1], servers[0]], start=1):
                t = threading.Thread(target=send, args=(server, f"queued {n} on {server.name}"))
                t.start()
                queued.append(t)
                wait_until(lambda n=n: lock_waiters(url) == n, f"message {n} to queue", *servers)
            holder.release()
            for t in queued:
                t.join(timeout=WAIT)
        finally:
            store.close()
        for text in ("queued 1 on serve-b", "queued 2 on serve-a"):
            assert isinstance(outcome[text], str), outcome[text]
            replies[text] = outcome[text]
        order = sql(
            url,
            "SELECT content FROM turns WHERE user_id = %s AND session_id = %s AND role = 'user'"
            " AND content LIKE 'queued %%' ORDER BY seq",
            (USER, SESSION),
        )
        assert [r[0] for r in order] == ["queued 1 on serve-b", "queued 2 on serve-a"]
        check_session_order(url, replies, [fake_a, fake_b])

        # 5. serve-a dies mid-exchange, holding the session while its upstream call hangs; serve-b's
        # message of the session waits in PostgreSQL's lock queue and goes ahead when serve-a's
        # connections close. (A lease would keep the session 4 x the LLM timeout = 12 minutes here,
        # past the lock timeout: the message would fail.)
        asked = threading.Event()

        def hang_and_tell(body: dict[str, Any]) -> Reply:
            asked.set()
            return Delay(WAIT, then=echo_responder(body))

        fake_a.responder = hang_and_tell
        # serve-a's client loses its connection: whatever it gets is not checked.
        lost_turn = threading.Thread(target=send, args=(servers[0], "cut off by the crash"))
        lost_turn.start()
        wait_until(asked.is_set, "serve-a to call its upstream", servers[0])
        waiter = threading.Thread(target=send, args=(servers[1], "after the crash"))
        waiter.start()
        wait_until(lambda: lock_waiters(url) == 1, "serve-b to queue for the session", servers[1])
        servers[0].popen.send_signal(signal.SIGKILL)
        servers[0].popen.wait(timeout=60)
        waiter.join(timeout=WAIT)
        lost_turn.join(timeout=WAIT)
        assert outcome["after the crash"] == "ok: after the crash", outcome["after the crash"]
        last = sql(
            url,
            "SELECT role, content FROM turns WHERE user_id = %s AND session_id = %s ORDER BY seq DESC LIMIT 3",
            (USER, SESSION),
        )
        # serve-a had recorded its message before calling upstream; serve-b's exchange comes after it.
        assert last[::-1] == [
            ("user", "cut off by the crash"),
            ("user", "after the crash"),
            ("assistant", "ok: after the crash"),
        ]
