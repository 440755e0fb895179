"""`memsched worker` and `memsched jobs`: running background jobs and looking at the queue."""

from __future__ import annotations

import json
import logging
import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

import typer
from rich.table import Table

from memsched.cli.common import (
    EmbeddersOption,
    HomeOption,
    StoreOption,
    app,
    console,
    err_console,
    fail,
    load_config,
    no_blank_id,
    reports_errors,
)
from memsched.errors import InputError
from memsched.jobs.queue import STATUSES, Job, JobQueue
from memsched.jobs.worker import P2_WINDOW_ENV, Worker, parse_window
from memsched.store import Store, open_store

jobs_app = typer.Typer(
    name="jobs",
    help="Show the background job queue; `jobs retry ID` re-queues a dead job.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(jobs_app, name="jobs")


@contextmanager
def _logging_to_stderr(level: str) -> Iterator[None]:
    """Send memsched's log records to stderr for the duration of the command."""
    logger = logging.getLogger("memsched")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    old_level = logger.level
    try:
        logger.setLevel(level.upper())
    except ValueError:
        raise InputError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {level!r}") from None
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@app.command()
@reports_errors
def worker(
    threads: int = typer.Option(1, "--threads", "-t", help="Worker threads in this process."),
    once: bool = typer.Option(False, "--once", help="Run until the queue is empty, then exit."),
    lease: float = typer.Option(
        60.0,
        "--lease",
        help="Seconds a claimed job stays leased (renewed while it runs) before others retake it.",
    ),
    poll: float = typer.Option(0.05, "--poll", help="Seconds to wait when the queue is empty."),
    kinds: str | None = typer.Option(
        None, "--kinds", help="Comma-separated job kinds to run (default: all)."
    ),
    p2_window: str | None = typer.Option(
        None,
        "--p2-window",
        help=f"Local-time window HH:MM-HH:MM for unordered P2 jobs; default any time (env {P2_WINDOW_ENV}).",
    ),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Run background jobs against the database until SIGTERM or Ctrl-C (the current job finishes first)."""
    from memsched.memory import Memory

    # Refused here, by the flag's name: a negative --poll made the worker spin a core, a NaN --lease
    # a lease that never ran out, and -1 named the library's `lease_seconds`.
    if not 0 < lease < math.inf:
        raise InputError(f"--lease must be a positive number of seconds, got {lease}")
    if not 0 <= poll < math.inf:
        raise InputError(f"--poll must be zero or more seconds, got {poll}")
    cfg = load_config(home=home, db=db, embedders=embedders, p2_window=p2_window)
    window_text = cfg.p2_window or ""
    window = parse_window(window_text) if window_text.strip() else None
    kind_list = [k.strip() for k in kinds.split(",") if k.strip()] if kinds else None
    if kind_list:
        from memsched.jobs.tasks import registered

        known = registered()
        unknown = [k for k in kind_list if k not in known]
        if unknown:  # it would wait forever for jobs no task can run
            raise InputError(f"--kinds: unknown job kind {unknown[0]!r}; known: {', '.join(known)}")
    with _logging_to_stderr(log_level), Memory(cfg) as mem:
        w = Worker(mem, threads=threads, poll=poll, lease_seconds=lease, kinds=kind_list, p2_window=window)
        try:
            if once:
                ran = w.drain()
                left = w.queue.stats()["status"]
                console.print(f"ran {ran} jobs; {left['queued']} queued, {left['dead']} dead")
                return
            _run_until_signalled(w, cfg.store_location)
        finally:
            w.close()


def _run_until_signalled(w: Worker, db_path: str) -> None:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # a second signal: stop now; leases bring the jobs back
        err_console.print("stopping after the current jobs (signal again to stop now)")
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        w.start()
        err_console.print(f"worker {w.worker_id}: {w.threads} thread(s) on {db_path}; Ctrl-C to stop")
        while not stop.wait(0.5):
            pass
        w.stop()
        err_console.print(f"worker stopped after {w.processed} jobs")
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _open_queue(home: Path | None, db: str | None) -> tuple[Store, JobQueue]:
    cfg = load_config(home=home, db=db)
    store = open_store(cfg)
    return store, JobQueue(store)


def _iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.isoformat()


def _job_dict(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "priority": job.priority_name,
        "kind": job.kind,
        "user_id": job.user_id,
        "session_id": job.session_id,
        "status": job.status,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "ordered": job.ordered,
        "dedupe_key": job.dedupe_key,
        "run_after": _iso(job.run_after),
        "created_at": _iso(job.created_at),
        "finished_at": _iso(job.finished_at),
        "lease_owner": job.lease_owner,
        "lease_until": _iso(job.lease_until),
        "last_error": job.last_error,
        "payload": job.payload,
    }


@jobs_app.callback()
@reports_errors
def jobs(
    ctx: typer.Context,
    failed: bool = typer.Option(False, "--failed", help="Only dead jobs (failed on every attempt)."),
    status: str | None = typer.Option(
        None, "--status", help=f"Only jobs of this status: {', '.join(STATUSES)}."
    ),
    user: str | None = typer.Option(
        None, "--user", "-u", callback=no_blank_id, help="Only this user's jobs."
    ),
    limit: int = typer.Option(100, "--limit", "-n", help="How many jobs, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """Show the job queue, newest first: priority, kind, user/session, status, attempts, last error."""
    if ctx.invoked_subcommand is not None:
        return
    if failed and status not in (None, "dead"):
        raise InputError("--failed shows dead jobs; it cannot be combined with another --status")
    store, queue = _open_queue(home, db)
    try:
        found = queue.list("dead" if failed else status, limit=limit, user_id=user)
        stats = queue.stats()
    finally:
        store.close()
    if as_json:
        console.print_json(
            json.dumps({"jobs": [_job_dict(j) for j in found], "stats": stats}, ensure_ascii=False)
        )
        return
    table = Table(title="dead jobs" if failed else "jobs")
    # Short columns never wrap; the error text takes what width is left.
    show_run_after = any(j.status == "queued" for j in found)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("pri", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("user/session", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("attempts", justify="right", no_wrap=True)
    if show_run_after:
        table.add_column("run after", no_wrap=True)
    table.add_column("last error", overflow="fold", ratio=1, min_width=12)
    for j in found:
        cells = [
            str(j.id),
            j.priority_name + ("+o" if j.ordered else ""),
            j.kind,
            f"{j.user_id}/{j.session_id or '*'}",
            j.status,
            f"{j.attempts}/{j.max_attempts}",
        ]
        if show_run_after:
            cells.append(
                f"{j.run_after.astimezone():%m-%d %H:%M:%S}" if j.run_after and j.status == "queued" else ""
            )
        cells.append((j.last_error or "")[:300])
        table.add_row(*cells)
    if found:
        console.print(table)
    else:
        console.print("no dead jobs" if failed else "no jobs")
    counts = stats["status"]
    depth = ", ".join(f"{p} {n}" for p, n in stats["depth"].items())
    console.print(
        f"queued {counts['queued']} ({depth}), running {counts['running']}, done {counts['done']},"
        f" dead {counts['dead']}",
        highlight=False,
    )


@jobs_app.command("retry")
@reports_errors
def retry(
    job_id: int = typer.Argument(..., help="The id of a dead job (see `memsched jobs --failed`)."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """Put a dead job back in the queue with its attempts reset."""
    store, queue = _open_queue(home, db)
    try:
        if queue.retry(job_id):
            console.print(f"job {job_id} queued again")
            return
        job = queue.get(job_id)
    finally:
        store.close()
    if job is None:
        fail(f"no job {job_id}: see `memsched jobs` for ids")
    else:
        fail(f"job {job_id} is {job.status}, not dead: only dead jobs can be retried")
