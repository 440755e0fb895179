"""Proxied turns of one (user, session) run one at a time, in arrival order, within this process.

A message of a session waits here until the previous message's reply is recorded, and so sees it;
`asyncio.Lock` wakes its waiters first come, first served, and keeps them off threads while they
wait. Sessions are independent. Across processes the scheduler's session lock orders the whole
exchange: the proxy holds it (`Scheduler.ahold_session`) from preparing the context until the reply
is recorded.
"""

from __future__ import annotations

import asyncio

Key = tuple[str, str]


class SessionOrder:
    def __init__(self) -> None:
        self._locks: dict[Key, tuple[asyncio.Lock, int]] = {}

    async def acquire(self, key: Key) -> None:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            await lock.acquire()
        except BaseException:
            self._drop(key)
            raise

    def release(self, key: Key) -> None:
        lock, _ = self._locks[key]
        lock.release()
        self._drop(key)

    def waiting(self, key: Key) -> int:
        """Turns of the session waiting behind the one in flight."""
        lock, users = self._locks.get(key, (None, 0))
        return max(0, users - 1) if lock is not None and lock.locked() else users

    def _drop(self, key: Key) -> None:
        lock, users = self._locks[key]
        if users <= 1:
            del self._locks[key]
        else:
            self._locks[key] = (lock, users - 1)
