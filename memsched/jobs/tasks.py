"""The task registry: one function per job kind, `fn(ctx, job) -> None`.

Modules register their kinds with `@task("kind")`. Registration is lazy: the first lookup imports the
known task modules of memsched (those that exist) and the modules named in `MEMSCHED_TASK_MODULES`
(comma-separated), so a worker process runs the same kinds as the process that queued the jobs.

Tasks run at least once (a worker may die after the work and before marking the job done), so every
task must be idempotent: running it twice leaves the same state as running it once.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memsched.errors import ConfigError, MemschedError

if TYPE_CHECKING:
    from memsched.config import Config
    from memsched.jobs.queue import Job, JobQueue
    from memsched.llm.client import ChatClient
    from memsched.memory import Memory
    from memsched.store import Store

log = logging.getLogger("memsched.jobs")

TASK_MODULES_ENV = "MEMSCHED_TASK_MODULES"

# memsched's own modules that define tasks. Ones that do not exist (yet) are skipped.
KNOWN_TASK_MODULES = (
    "memsched.scheduler",
    "memsched.bookmarks",
    "memsched.commands",
    "memsched.summarize",
    "memsched.profile",
    "memsched.profile_extract",
    "memsched.mood",
    "memsched.labeller",
    "memsched.routine",
    "memsched.router",
)


@dataclass(slots=True)
class TaskContext:
    """What a task may use: the embedded `Memory` and its store and config, the queue (to enqueue
    follow-up jobs) and memsched's helper LLM (None when none is configured)."""

    memory: Memory
    store: Store
    config: Config
    queue: JobQueue
    llm: ChatClient | None = None
    # Called between chunks of long background work: blocks while a P0 turn is in flight here.
    pause: Callable[[], object] = lambda: None


TaskFn = Callable[[TaskContext, "Job"], None]


class UnknownTaskError(MemschedError):
    """No task is registered for a job's kind."""

    def __init__(self, kind: str, known: list[str], import_errors: dict[str, str]) -> None:
        self.kind = kind
        msg = (
            f"unknown job kind {kind!r}: no task is registered for it in this worker"
            f" (known: {', '.join(known) or 'none'}). Start the worker with the module that defines it"
            f" importable, or list it in {TASK_MODULES_ENV}"
        )
        if import_errors:
            msg += "; task modules that failed to import: " + "; ".join(
                f"{m}: {e}" for m, e in sorted(import_errors.items())
            )
        super().__init__(msg)


_REGISTRY: dict[str, TaskFn] = {}
_IMPORT_ERRORS: dict[str, str] = {}
_known_loaded = False
_extra_loaded: set[str] = set()
# Two locks: the loader's is held while importing, the registry's only around the dict. A module being
# imported by another thread registers its tasks without waiting for the loader (no lock-order deadlock).
_load_lock = threading.RLock()
_registry_lock = threading.Lock()


def task(kind: str) -> Callable[[TaskFn], TaskFn]:
    """Register the decorated function as the task for jobs of `kind`.

    Registering a different function for a kind that already has one is an error (two modules
    claiming one kind); re-registering the same function (a module imported twice) is not.
    """

    def register(fn: TaskFn) -> TaskFn:
        with _registry_lock:
            old = _REGISTRY.get(kind)
            if old is not None and _name(old) != _name(fn):
                raise ConfigError(
                    f"job kind {kind!r} is registered twice: by {_name(old)} and by {_name(fn)}"
                )
            _REGISTRY[kind] = fn
        return fn

    return register


def _name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def extra_modules(env: dict[str, str] | None = None) -> list[str]:
    """Module names listed in MEMSCHED_TASK_MODULES (comma-separated)."""
    raw = (os.environ if env is None else env).get(TASK_MODULES_ENV, "")
    return [m.strip() for m in raw.split(",") if m.strip()]


def load_task_modules() -> None:
    """Import the known and configured task modules (each once).

    A module named in MEMSCHED_TASK_MODULES that cannot be imported is a ConfigError: a typo must not
    silently leave its jobs to fail. A known memsched module that does not exist is skipped; one that
    fails to import is logged and its error is quoted when a job of a missing kind fails.
    """
    global _known_loaded
    with _load_lock:
        if not _known_loaded:
            for name in KNOWN_TASK_MODULES:
                try:
                    importlib.import_module(name)
                except ModuleNotFoundError as exc:
                    if exc.name != name:  # the module exists but something it imports does not
                        _import_failed(name, exc)
                except Exception as exc:
                    _import_failed(name, exc)
            _known_loaded = True
        for name in extra_modules():
            if name in _extra_loaded:
                continue
            try:
                importlib.import_module(name)
            except Exception as exc:
                raise ConfigError(
                    f"{TASK_MODULES_ENV} names {name!r}, which cannot be imported: {exc}"
                ) from exc
            _extra_loaded.add(name)


def _import_failed(name: str, exc: Exception) -> None:
    _IMPORT_ERRORS[name] = f"{type(exc).__name__}: {exc}"
    log.error("task module %s failed to import: %s", name, exc)


def get_task(kind: str) -> TaskFn:
    """The function registered for `kind`; raises UnknownTaskError (with what is known) otherwise."""
    fn = _REGISTRY.get(kind)
    if fn is not None:
        return fn
    load_task_modules()
    fn = _REGISTRY.get(kind)
    if fn is None:
        raise UnknownTaskError(kind, registered(), dict(_IMPORT_ERRORS))
    return fn


def registered() -> list[str]:
    """The registered kinds, sorted (after loading the task modules)."""
    load_task_modules()
    return sorted(_REGISTRY)


# -- built-in tasks ----------------------------------------------------------------------------------


@task("embed")
def embed(ctx: TaskContext, job: Job) -> None:
    """Embed the user's turns that have no vector yet. Idempotent: vectors are keyed by content hash
    and model, so a second run finds nothing missing. Then brings the user's on-disk vector graphs
    up to date once they are past the exact-search threshold (`Memory.index`)."""
    ctx.memory.index(job.user_id, chunk=32, pause=ctx.pause)
