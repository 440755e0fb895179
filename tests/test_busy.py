"""`memsched.busy`: work handed to a pool, or run in place on the caller's thread inside `one_thread()`."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from memsched.busy import beside, done, one_thread


def _where(x: int) -> tuple[str, int]:
    return threading.current_thread().name, x * 2


def _fails() -> None:
    raise ValueError("no such turn")


def test_beside_hands_off_outside_one_thread_and_runs_in_place_within() -> None:
    here = threading.current_thread().name
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as pool:
        name, value = beside(pool, _where, 21).result()
        assert name.startswith("pool") and value == 42
        with one_thread():
            future = beside(pool, _where, 5)
            assert future.done()  # run before beside returned
            assert future.result() == (here, 10)
        assert beside(pool, _where, 1).result()[0].startswith("pool")  # the context ended


def test_one_thread_is_the_callers_alone() -> None:
    seen: list[bool] = []

    def other() -> None:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as pool:
            seen.append(beside(pool, _where, 1).result()[0].startswith("pool"))

    with one_thread():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [True]  # another thread's work is not pulled in place


def test_done_keeps_the_exception_for_result() -> None:
    future = done(_fails)
    assert future.done()
    with pytest.raises(ValueError, match="no such turn"):
        future.result()
