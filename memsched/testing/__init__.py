"""Test helpers that ship with memsched, for its own tests and for users' tests."""

from __future__ import annotations

from memsched.testing.fake_openai import (
    Delay,
    Fail,
    FakeOpenAI,
    Malformed,
    RecordedRequest,
    Reply,
    echo_responder,
    fake_embedding,
)

__all__ = [
    "Delay",
    "Fail",
    "FakeOpenAI",
    "Malformed",
    "RecordedRequest",
    "Reply",
    "echo_responder",
    "fake_embedding",
]
