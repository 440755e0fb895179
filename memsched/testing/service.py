"""`memsched serve`'s app on loopback in front of a fake upstream: the set-up most service tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memsched.config import Config
from memsched.server import create_app
from memsched.testing.fake_openai import FakeOpenAI
from memsched.testing.live_server import LiveServer


def proxy_server(home: Path, fake: FakeOpenAI, **overrides: Any) -> LiveServer:
    """A `LiveServer` of memsched with the hash embedder, proxying to `fake` (model "fake-model").
    `overrides` are further `Config` settings."""
    cfg = Config.load(
        home=home,
        embedders="hash",
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        llm_timeout=5.0,
        **overrides,
    )
    return LiveServer(create_app(cfg))
