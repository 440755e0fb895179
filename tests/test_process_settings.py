"""Process-wide settings the server makes for throughput: serial tokenizers, a frozen start-up heap,
and the caches of per-message text work, which a hard delete must still empty."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import pytest

from memsched.config import Config
from memsched.embed.base import serial_tokenizers
from memsched.text import segment


def test_tokenizers_run_serially_unless_the_environment_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    serial_tokenizers()
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    serial_tokenizers()
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"


def test_the_script_share_of_a_message_is_cached_and_forgotten_with_the_caches() -> None:
    text = "我们周六去爬山 hiking on Saturday, canary-7f3a"
    first = segment.cjk_ratio(text)
    assert 0.0 < first < 1.0
    assert segment.cjk_ratio(text) == first
    assert segment.cjk_ratio.cache_info().currsize >= 1
    segment.clear_caches()  # what a hard delete calls: no message text may stay in a cache
    assert segment.cjk_ratio.cache_info().currsize == 0
    assert segment.cjk_ratio(text) == first


def _warm_up_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("memsched-warm-up")]


@pytest.mark.parametrize("freeze", [False, True])
def test_the_servers_start_up_heap_is_frozen_only_when_asked(tmp_path: Path, freeze: bool) -> None:
    """`memsched serve` freezes what it loaded at start out of the collector's reach; a `Service`
    embedded in another process (tests, an app) leaves that process's collector alone."""
    from memsched.server.service import Service

    service = Service(Config.load(home=tmp_path, embedders="hash", workers=0))
    gc.unfreeze()
    try:
        service.warm_up(freeze_heap=freeze)
        for t in _warm_up_threads():
            t.join(timeout=120)
        assert not _warm_up_threads()
        assert (gc.get_freeze_count() > 0) is freeze
    finally:
        gc.unfreeze()
        service.close()


def test_the_servers_event_loop_gets_its_turn_threads(tmp_path: Path) -> None:
    """`create_app(turn_threads=n)` (what `memsched serve` passes) runs the app's thread work, here
    its warm-up, on the loop's own pool of n threads instead of asyncio's default executor."""
    from memsched.server.app import create_app
    from memsched.testing import LiveServer

    app = create_app(Config.load(home=tmp_path, embedders="hash", workers=0), turn_threads=3)
    with LiveServer(app):
        names = [t.name for t in threading.enumerate()]
        assert any(n.startswith("memsched-turn") for n in names), names
