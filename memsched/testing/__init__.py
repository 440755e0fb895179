"""Test helpers that ship with memsched, for its own tests and for users' tests."""

from __future__ import annotations

from memsched.testing.clock import FakeClock
from memsched.testing.fake_openai import (
    Cut,
    Delay,
    Fail,
    FakeOpenAI,
    Hold,
    Malformed,
    RecordedRequest,
    Reply,
    echo_responder,
    fake_embedding,
)
from memsched.testing.live_server import LiveServer, free_port

__all__ = [
    "Cut",
    "Delay",
    "Fail",
    "FakeClock",
    "FakeOpenAI",
    "Hold",
    "LiveServer",
    "Malformed",
    "RecordedRequest",
    "Reply",
    "echo_responder",
    "fake_embedding",
    "free_port",
]
