"""A core of its own for the embedding dispatcher, in `memsched serve` (Linux).

Every proxied turn waits twice on one thread: the batched MiniLM dispatcher
(`embed.batch.MicroBatcher`), which runs the model for each turn's message and then its reply. Under
the proxy benchmark's 50 clients it was inside a model call ~91% of the wall time but on a CPU only
~76% of it: the turn threads (each SQLite statement and GIL hand-off wakes one) were scheduled onto
its core and shared it, so the one thread every turn queues on ran at three quarters of its speed
while the machine still had a third of a core idle. With the dispatcher alone on one core and every
other thread of the process on the others, turns/s rose ~20% on 2 cores (BENCHMARKS.md, "Proxy in
session 34"). A thread's affinity is its own to set: no privilege is needed.

Only `memsched serve` reserves the core (`Config.embed_core`, default on; `MEMSCHED_EMBED_CORE=false`
turns it off): that process is the server's own, while a program that embeds `Memory` keeps its
threads where it put them. Nothing happens off Linux or with fewer than two CPUs allowed. Other
processes on the machine may still use the reserved core; only this process's threads keep off it.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_lock = threading.Lock()
_core: int | None = None  # the reserved CPU, once `reserve()` ran
_dispatchers: set[int] = set()  # native ids of the threads that run on the reserved core


def reserve() -> int | None:
    """Keep the highest CPU this process may use for the dispatchers: every thread of the process
    now moves off it, the dispatchers (those running and those started later, `join`) onto it.
    Returns the CPU, or None where there is none to spare (not Linux, fewer than two CPUs allowed)."""
    global _core
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    core = max(allowed)
    rest = allowed - {core}
    with _lock:
        _core = core
        for tid in _threads():
            _pin(tid, {core} if tid in _dispatchers else rest)
    log.info("embedding dispatcher on CPU %d, the process's other threads on %s", core, sorted(rest))
    return core


def join() -> None:
    """Called by a dispatcher thread as it starts: it runs on the reserved core (once there is one)."""
    tid = threading.get_native_id()
    with _lock:
        _dispatchers.add(tid)
        if _core is not None:
            _pin(tid, {_core})


def leave() -> None:
    """Called by a dispatcher thread as it ends."""
    with _lock:
        _dispatchers.discard(threading.get_native_id())


def _threads() -> list[int]:
    try:
        return [int(name) for name in os.listdir(Path("/proc/self/task"))]
    except OSError:
        return [threading.get_native_id()]


def _pin(tid: int, cpus: set[int]) -> None:
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError:  # a thread that ended meanwhile, or a CPU set the system refuses: left as it is
        pass
