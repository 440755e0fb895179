"""A clock that moves only when told to, for leases, backoffs and decay without sleeping."""

from __future__ import annotations


class FakeClock:
    """Callable like `time.time`; starts at a fixed epoch second and moves by `advance`."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
