"""Workers: threads that claim jobs from the queue and run their tasks.

Embedded by default (threads inside the process that serves turns); `memsched worker` runs the same
class in a separate process against the same database. A task that raises never kills its thread:
the job is failed with the error text and retried with backoff, dead after its last attempt.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from datetime import time as dtime
from typing import TYPE_CHECKING, Any

from memsched.embed.base import preempt_background
from memsched.errors import ConfigError, InputError, MemschedError
from memsched.jobs.queue import Job, JobQueue, Priority, default_owner
from memsched.jobs.tasks import TaskContext, UnknownTaskError, get_task, load_task_modules

if TYPE_CHECKING:
    from memsched.llm.client import ChatClient
    from memsched.memory import Memory

log = logging.getLogger("memsched.jobs")

P2_WINDOW_ENV = "MEMSCHED_P2_WINDOW"

Window = tuple[dtime, dtime]

_FROM_CONFIG: Any = object()  # `llm` default: build the helper LLM client from the memory's config


def parse_window(text: str) -> Window:
    """Parse "HH:MM-HH:MM" (local time; may wrap midnight, e.g. "23:00-05:00")."""
    try:
        start, end = (part.strip() for part in text.split("-"))
        return dtime.fromisoformat(start), dtime.fromisoformat(end)
    except ValueError:
        raise ConfigError(
            f"{P2_WINDOW_ENV}={text!r} is not a time window; write it as HH:MM-HH:MM, e.g. 01:00-05:00"
        ) from None


def in_window(window: Window, at: dtime) -> bool:
    """Whether `at` falls in [start, end); a window whose end is before its start wraps midnight."""
    start, end = window
    if start <= end:
        return start <= at < end
    return at >= start or at < end


# While turns are in flight, background work runs one small unit (a piece of a MiniLM call, one
# text's gloss: ~0.1-1.5 ms of CPU) at most every this many seconds (`ForegroundGate.wait_step`).
BACKGROUND_STEP = 0.005


class ForegroundGate:
    """Counts the P0 turns in flight in one process; background (P2) work waits while there are any.

    Background work waits at its safe points. Before claiming a P2 job it waits for the turns to
    end (`wait_idle`, at most `max_wait` seconds, ~20 turns of a busy session). Between the small
    units of a job (the pieces of its MiniLM calls, its chunks, each text it glosses: the pause hook
    of `embed.base.background`) it waits for them at most `step` seconds (`wait_step`): a stream of
    turns slows P2 work to a unit every `step` but never starves it, and a turn shares the cores
    with a few units of ~1 ms, spread out, instead of a whole model call. A turn that starts also
    cuts short the background model calls in flight (`embed.base.preempt_background`): they wait
    for the turn (or `step`) and run again, three times a call at most.
    """

    def __init__(self, max_wait: float = 2.0, step: float = BACKGROUND_STEP) -> None:
        self.max_wait = max_wait
        self.step = step
        self._active = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()

    def busy(self) -> bool:
        return not self._idle.is_set()

    @property
    def active(self) -> int:
        """Turns in flight in this process, their post-reply work included."""
        return self._active

    def enter(self) -> None:
        with self._lock:
            self._active += 1
            self._idle.clear()
        preempt_background()

    def leave(self) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    @contextmanager
    def turn(self) -> Iterator[None]:
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def wait_idle(self) -> bool:
        """Wait until no turn is in flight (True), or `max_wait` seconds at most (False)."""
        return self._idle.wait(self.max_wait)

    def wait_step(self) -> bool:
        """Background work's pause between small units: until no turn is in flight (True), or
        `step` seconds at most (False: the next unit runs beside the turn, to its end)."""
        return self._idle.wait(self.step)


class Worker:
    """Runs queued jobs for `memory`'s store.

    `threads` worker threads (after `start()`); `kinds` limits the kinds this worker takes; with
    `p2_window`, unordered P2 jobs are only claimed inside that local-time window (P0/P1 any time).
    `llm` is the tasks' helper LLM; by default it is built from the config (None if not configured).
    While a job runs its lease is renewed every third of `lease_seconds`, so only a dead or frozen
    worker loses a job.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        threads: int = 1,
        poll: float = 0.05,
        lease_seconds: float = 60,
        kinds: Sequence[str] | None = None,
        worker_id: str | None = None,
        p2_window: Window | None = None,
        queue: JobQueue | None = None,
        llm: ChatClient | None = _FROM_CONFIG,
        local_now: Callable[[], datetime] = datetime.now,
        gate: ForegroundGate | None = None,
    ) -> None:
        if threads < 1:
            raise ConfigError(f"a worker needs at least 1 thread, got {threads}")
        if not 0 < lease_seconds < math.inf:
            raise ConfigError(f"lease_seconds must be > 0, got {lease_seconds}")
        if not 0 <= poll < math.inf:
            raise ConfigError(f"poll must be >= 0 seconds, got {poll}")
        self.memory = memory
        self.queue = queue if queue is not None else JobQueue(memory.store)
        self.threads = threads
        self.poll = poll
        self.lease_seconds = lease_seconds
        self.kinds = list(kinds) if kinds is not None else None
        self.worker_id = worker_id or default_owner("worker")
        self.p2_window = p2_window
        self._local_now = local_now
        self._owns_llm = llm is _FROM_CONFIG
        if llm is _FROM_CONFIG:
            from memsched.llm.client import client_from_config

            llm = client_from_config(memory.config)
        self.gate = gate
        self.context = TaskContext(
            memory=memory,
            store=memory.store,
            config=memory.config,
            queue=self.queue,
            llm=llm,
            pause=gate.wait_step if gate is not None else (lambda: None),
        )
        # Fail at start, not on the first job, when MEMSCHED_TASK_MODULES names a missing module.
        load_task_modules()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[int, Job] = {}
        self._running_lock = threading.Lock()
        self._beat_stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.processed = 0  # jobs finished (done or failed) by this worker, for reports

    # -- one job -------------------------------------------------------------------------------------

    def _owner(self) -> str:
        # One lease owner per thread, so a job reclaimed by a sibling thread is not failed by this one.
        return f"{self.worker_id}/{threading.current_thread().name}"

    def _max_priority(self) -> int | None:
        if self.p2_window is None or in_window(self.p2_window, self._local_now().time()):
            return None
        return int(Priority.P1)

    def run_once(self) -> bool:
        """Claim one job and run it; True when a job was run (whatever its outcome), False when none
        was runnable. A task's exception fails the job (with the error text) and is not raised."""
        max_priority = self._max_priority()
        if self.gate is not None and self.gate.busy():
            # A turn is in flight in this process: P1 jobs still run (the turn may be waiting on
            # them), P2 work waits until the turn is done so it does not slow it down.
            job = self.queue.claim(
                self._owner(),
                lease_seconds=self.lease_seconds,
                kinds=self.kinds,
                max_priority=int(Priority.P1),
            )
            if job is None:
                self.gate.wait_idle()
        else:
            job = None
        if job is None:
            job = self.queue.claim(
                self._owner(), lease_seconds=self.lease_seconds, kinds=self.kinds, max_priority=max_priority
            )
        if job is None:
            return False
        assert job.id is not None
        self._ensure_heartbeat()
        log.debug(
            "job claimed id=%s kind=%s priority=P%s attempt=%s",
            job.id,
            job.kind,
            job.priority,
            job.attempts + 1,
            extra={"job_id": job.id, "kind": job.kind, "event": "claim"},
        )
        with self._running_lock:
            self._running[job.id] = job
        t0 = time.perf_counter()
        try:
            get_task(job.kind)(self.context, job)
        except Exception as exc:
            ms = (time.perf_counter() - t0) * 1000.0
            self._failed(job, exc, ms)
        else:
            ms = (time.perf_counter() - t0) * 1000.0
            self.queue.complete(job)
            log.info(
                "job done id=%s kind=%s user=%s ms=%.1f",
                job.id,
                job.kind,
                job.user_id,
                ms,
                extra={"job_id": job.id, "kind": job.kind, "event": "done", "ms": ms},
            )
        finally:
            with self._running_lock:
                self._running.pop(job.id, None)
            self.processed += 1
        return True

    def _failed(self, job: Job, exc: Exception, ms: float) -> None:
        # Unknown kinds are retried: a newer worker that knows the kind may be running elsewhere.
        # Bad input will be just as bad next time, so it goes dead at once.
        permanent = isinstance(exc, InputError) and not isinstance(exc, UnknownTaskError)
        error = str(exc) if isinstance(exc, UnknownTaskError) else f"{type(exc).__name__}: {exc}"
        updated = self.queue.fail(job, error, permanent=permanent)
        extra = {"job_id": job.id, "kind": job.kind, "ms": ms}
        if updated is None:
            log.warning(
                "job failed after its lease was lost id=%s kind=%s ms=%.1f: %s",
                job.id,
                job.kind,
                ms,
                error,
                extra={**extra, "event": "fail"},
            )
        elif updated.status == "dead":
            log.error(
                "job dead id=%s kind=%s attempts=%s ms=%.1f: %s",
                job.id,
                job.kind,
                updated.attempts,
                ms,
                error,
                # A traceback helps with a bug in a task, not with an error memsched raised on purpose.
                exc_info=None if isinstance(exc, MemschedError) else exc,
                extra={**extra, "event": "dead"},
            )
        else:
            log.warning(
                "job failed id=%s kind=%s attempt=%s/%s retry_at=%s ms=%.1f: %s",
                job.id,
                job.kind,
                updated.attempts,
                updated.max_attempts,
                updated.run_after.isoformat() if updated.run_after else "-",
                ms,
                error,
                extra={**extra, "event": "fail"},
            )

    # -- lease renewal -------------------------------------------------------------------------------

    def _ensure_heartbeat(self) -> None:
        with self._running_lock:
            if self._beat is not None and self._beat.is_alive():
                return
            self._beat_stop.clear()
            self._beat = threading.Thread(target=self._heartbeat, name="memsched-lease-renewal", daemon=True)
            self._beat.start()

    def _heartbeat(self) -> None:
        while not self._beat_stop.wait(self.lease_seconds / 3):
            with self._running_lock:
                jobs = list(self._running.values())
            for job in jobs:
                try:
                    if not self.queue.renew(job, self.lease_seconds):
                        log.warning("job lease lost id=%s kind=%s", job.id, job.kind)
                except Exception:
                    log.exception("renewing the lease of job %s failed", job.id)

    def _stop_heartbeat(self) -> None:
        self._beat_stop.set()
        beat = self._beat
        if beat is not None:
            beat.join()
        self._beat = None

    # -- threads -------------------------------------------------------------------------------------

    def start(self) -> Worker:
        """Start the worker threads (daemons) and return self."""
        if self._threads:
            return self
        from memsched.jobs.queue import recover_dead_owners

        recover_dead_owners(self.queue.store)  # a killed predecessor's jobs run now, not at lease end
        self._stop.clear()
        for i in range(self.threads):
            t = threading.Thread(target=self._loop, name=f"memsched-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _loop(self) -> None:
        from memsched.embed.base import background

        with background(self.gate.wait_step if self.gate is not None else None):
            self._run_until_stopped()

    def _run_until_stopped(self) -> None:
        while not self._stop.is_set():
            try:
                ran = self.run_once()
            except Exception:
                # A store error (disk full, database locked past the busy timeout) must not end the
                # thread; the job, if one was claimed, comes back when its lease expires.
                log.exception("worker loop error")
                ran = False
            if not ran and not self._stop.is_set():
                # Woken early when a job is queued (in this process; on PostgreSQL, in any).
                self.queue.store.jobs_wait(self.poll)

    def stop(self, timeout: float | None = None) -> bool:
        """Ask the threads to stop after their current job and wait up to `timeout` seconds.

        True when every thread has stopped. Jobs of threads still running keep their lease until it
        expires, then another worker takes them.
        """
        self._stop.set()
        self.queue.store.jobs_wake()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        alive = [t for t in self._threads if t.is_alive()]
        self._threads = alive
        if not alive:
            self._stop_heartbeat()
        return not alive

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def drain(self, timeout: float | None = None) -> int:
        """Run jobs in this thread until none is runnable and none is running anywhere; returns how many
        ran. Jobs waiting for their backoff, outside the P2 window or of other kinds do not hold it
        open; jobs running elsewhere do (a dead worker's come back when their lease expires)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ran = 0
        try:
            while deadline is None or time.monotonic() < deadline:
                if self.run_once():
                    ran += 1
                    continue
                if self.queue.store.jobs_counts().get("running", 0) == 0:
                    break
                time.sleep(self.poll)
        finally:
            if not self._threads:
                self._stop_heartbeat()
        return ran

    def close(self) -> None:
        """Stop the threads and close the LLM client if this worker opened it."""
        self.stop()
        close = getattr(self.context.llm, "close", None)
        if self._owns_llm and callable(close):
            close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
