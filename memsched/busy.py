"""A turn's stages on its own thread when the process is busy.

With a core to spare, a turn runs some stages beside each other on other threads (retrieval beside
routing, the soft-term layer beside the turn layers): the turn's wall time is the longer of the two,
not their sum. With more turns in flight than cores every core is busy anyway, and a hand-off only
adds work: the task's submission and its future, a thread woken to run it on a cold cache, the GIL
passed back and forth. Then the scheduler runs the turn's retrieval on the turn's own thread inside
`one_thread()`, the stages below it that would hand work off run it in place (`beside`), and the
reply's vectors are stored before the turn answers instead of on a post-reply thread.
Measured in BENCHMARKS.md ("Proxy in session 33").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_ONE_THREAD: ContextVar[bool] = ContextVar("memsched_one_thread", default=False)


@contextmanager
def one_thread() -> Iterator[None]:
    """Within: `beside` runs its work in place."""
    token = _ONE_THREAD.set(True)
    try:
        yield
    finally:
        _ONE_THREAD.reset(token)


def done(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """`fn(*args, **kwargs)` run here, as a finished future: its exception is kept for `result()`,
    as a pool's future would keep it."""
    future: Future[T] = Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except Exception as exc:
        future.set_exception(exc)
    return future


def beside(pool: Executor, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """`pool.submit(fn, ...)`, or `fn` run in place inside `one_thread()`."""
    if _ONE_THREAD.get():
        return done(fn, *args, **kwargs)
    return pool.submit(fn, *args, **kwargs)
