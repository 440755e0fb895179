from __future__ import annotations

import socket
from typing import Any

import numpy as np
import pytest

from memsched.config import Config
from memsched.embed import base
from memsched.embed.hashing import HashEmbedder
from memsched.errors import ConfigError


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a non-loopback connection fails the test: models must load offline."""
    real = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (host.startswith("127.") or host in ("localhost", "::1")):
            raise AssertionError(f"network access to {address!r} during model loading")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    e = HashEmbedder()
    a, b = e.embed(["番茄炒蛋 tomato", "番茄炒蛋 tomato"])
    assert np.allclose(a, b)
    assert np.isclose(np.linalg.norm(a), 1.0)
    assert e.embed([]).shape == (0, e.dim)


def test_unknown_embedder_names_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown embedder 'nope'.*minilm"):
        base.create("nope", Config.load())


def test_wordllama_loads_offline(no_network: None) -> None:
    e = base.create("wordllama", Config.load())
    v = e.embed(["我喜欢吃番茄炒蛋", "I like tomato and eggs", "明天下雨"])
    assert v.shape == (3, e.dim) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_minilm_loads_offline_and_ranks_sensibly(no_network: None) -> None:
    e = base.create("minilm", Config.load())
    q, good, bad = e.embed(
        [
            "Where did we go on our first date?",
            "Our first date was at a jazz bar downtown",
            "The quarterly tax report is due",
        ]
    )
    assert e.model_id == "all-MiniLM-L6-v2" and q.shape == (384,)
    assert float(q @ good) > float(q @ bad) + 0.1


def test_loading_wordllama_leaves_the_apps_logging_alone() -> None:
    import logging

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    base.create("wordllama", Config.load()).embed(["hi"])
    assert (list(root.handlers), root.level) == before


@pytest.mark.slow
def test_minilm_int8_is_its_own_model_and_still_ranks(no_network: None) -> None:
    e = base.create("minilm", Config.load(minilm_int8=True))
    assert e.model_id == "all-MiniLM-L6-v2-int8"  # stored fp32 vectors are not mixed with these
    q, good, bad = e.embed(
        [
            "Where did we go on our first date?",
            "Our first date was at a jazz bar downtown",
            "The quarterly tax report is due",
        ]
    )
    assert float(q @ good) > float(q @ bad) + 0.1


@pytest.mark.slow
def test_minilm_onnx_gives_the_pytorch_vectors_in_english_and_chinese(no_network: None) -> None:
    texts = [
        "Where did we go on our first date?",
        "我们第一次约会那家店叫什么来着？",
        "",
        "ok",
        "Melanie painted a sunrise over the lake; Caroline went to a pottery class. " * 30,  # truncated
        *(f"turn {i}: we talked about cats and 芝麻" for i in range(70)),  # more than one batch
    ]
    onnx = base.create("minilm", Config.load())
    torch = base.create("minilm", Config.load(minilm_backend="torch"))
    assert getattr(onnx, "backend", None) == "onnx" and getattr(torch, "backend", None) == "torch"
    assert onnx.model_id == torch.model_id  # stored vectors stay valid across backends
    a, b = onnx.embed(texts), torch.embed(texts)
    assert a.shape == b.shape == (len(texts), 384) and a.dtype == np.float32
    assert float(np.abs(a - b).max()) < 1e-4


def test_minilm_backend_is_validated() -> None:
    with pytest.raises(ConfigError, match="minilm_backend must be onnx or torch"):
        Config.load(minilm_backend="tensorflow")


@pytest.mark.slow
def test_minilm_onnx_export_is_made_once_offline_and_reused(tmp_path: Any, no_network: None) -> None:
    from memsched.embed import minilm_onnx

    cache = tmp_path / "cache"
    first = minilm_onnx.ensure_exported(cache)
    assert first.exists() and first.is_relative_to(cache)
    assert not list(first.parent.glob("*.part"))  # only the finished file is left
    stamp = first.stat().st_mtime_ns
    e = base.create("minilm", Config.load(model_cache=cache))
    q, good, bad = e.embed(["我的猫叫什么名字？", "我的猫叫芝麻，是只英短", "明天的会议改到下午三点"])
    assert float(q @ good) > float(q @ bad)
    assert minilm_onnx.ensure_exported(cache).stat().st_mtime_ns == stamp  # not exported again


@pytest.mark.slow
def test_minilm_onnx_export_that_does_not_match_is_refused(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsched.embed import minilm_onnx
    from memsched.errors import EmbedderError

    monkeypatch.setattr(minilm_onnx, "TOLERANCE", -1.0)  # no export can pass
    with pytest.raises(EmbedderError, match="differs from PyTorch"):
        minilm_onnx.ensure_exported(tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.onnx*"))  # nothing half-made is left to be loaded


def test_minilm_onnx_calls_are_cut_where_padding_costs_more_than_a_call() -> None:
    from memsched.embed.minilm_onnx import plan_calls

    assert plan_calls([]) == []
    assert plan_calls([12] * 10, max_rows=16, call_tokens=20) == [10]  # no padding: one call
    assert len(plan_calls([12] * 40, max_rows=16, call_tokens=20)) == 3  # as few calls as max_rows allows
    # Short texts are not padded to a long one's length when a call costs less than that padding.
    assert plan_calls([5, 5, 5, 5, 100, 100], max_rows=16, call_tokens=20) == [4, 6]
    # ... and are when it does not: padding 4 texts by 2 tokens is cheaper than a second call.
    assert plan_calls([10, 10, 10, 10, 12, 12], max_rows=16, call_tokens=20) == [6]
    for lengths in ([3, 7, 7, 9, 30, 31, 64, 200], list(range(1, 50))):
        ends = plan_calls(lengths, max_rows=16, call_tokens=20)
        assert ends[-1] == len(lengths) and ends == sorted(set(ends))
        assert all(b - a <= 16 for a, b in zip([0, *ends], ends, strict=False))


def test_minilm_onnx_background_calls_stay_within_a_token_budget() -> None:
    from memsched.embed.minilm_onnx import plan_calls

    # Short texts (the vocabulary's words) share calls up to the budget, not two at a time.
    assert plan_calls([4] * 32, max_rows=16, call_tokens=20, max_tokens=64) == [16, 32]
    # Long texts: one or two a call; a text longer than the budget is a call of its own.
    ends = plan_calls([20, 30, 30, 40, 90], max_rows=16, call_tokens=20, max_tokens=64)
    widths = [
        (b - a) * [20, 30, 30, 40, 90][b - 1] for a, b in zip([0, *ends], ends, strict=False) if b - a > 1
    ]
    assert ends[-1] == 5 and all(w <= 64 for w in widths) and ends[-2] == 4


def test_minilm_background_work_pauses_before_each_short_call(no_network: None) -> None:
    from memsched.config import Config
    from memsched.embed.minilm import BACKGROUND_TOKENS, shared_minilm

    model = shared_minilm(Config.load())
    if model.backend != "onnx":
        pytest.skip("the token budget is the ONNX backend's")
    words = [f"word{i}" if i % 3 else w for i, w in enumerate(["tennis", "yoga", "pottery"] * 12)]
    pauses: list[int] = []
    with base.background(lambda: pauses.append(1)):
        background = model.embed(words)
    foreground = model.embed(words)
    assert np.allclose(background, foreground, atol=1e-5)  # same vectors, cut differently
    # 36 words of 3-5 tokens: a handful of calls within the budget (two words a call would be 18).
    assert BACKGROUND_TOKENS == 64 and 2 <= len(pauses) <= 6


def test_a_turn_cuts_short_background_minilm_calls_which_run_again(no_network: None) -> None:
    """A background call started while no turn ran is stopped when a turn starts (the gate's
    `enter`), then waits for the turn and runs again: same vectors, the turn never shares the
    cores with it."""
    import threading

    from memsched.embed.minilm import shared_minilm
    from memsched.jobs.worker import ForegroundGate

    model = shared_minilm(Config.load())
    if model.backend != "onnx":
        pytest.skip("cutting calls short is the ONNX backend's")
    onnx = model._load()
    texts = [f"background text number {i} about tennis, pottery and the sea" for i in range(16)]
    expected = model.embed(texts)
    gate = ForegroundGate(max_wait=30.0)
    started, turn_done = threading.Event(), threading.Event()
    real_run = onnx._session.run
    seen: list[bool] = []

    class Session:
        def run(self, names: Any, feeds: Any, options: Any = None) -> Any:
            seen.append(options is not None)
            if len(seen) == 1:
                started.set()  # the first call is in flight: a turn starts now and cuts it short
                assert turn_done.wait(10)
                assert options is not None and options.terminate
                raise RuntimeError("Exiting due to terminate flag being set to true.")
            return real_run(names, feeds, options)

    def turn() -> None:
        assert started.wait(10)
        with gate.turn():
            turn_done.set()

    real_session, before = onnx._session, onnx.preempted
    onnx._session = Session()
    try:
        t = threading.Thread(target=turn)
        t.start()
        with base.background(gate.wait_idle):
            out = model.embed(texts)
        t.join(10)
    finally:
        onnx._session = real_session
    assert np.allclose(out, expected, atol=1e-6)
    assert onnx.preempted == before + 1 and seen[0] and seen[1]


def test_a_background_minilm_call_is_cut_short_a_bounded_number_of_times() -> None:
    """However often turns start, one background call is run again at most MAX_PREEMPTS times, then
    to its end; and a call made after the pause gave up waiting (a busy foreground) is not cut."""
    from memsched.embed import minilm_onnx

    class Session:
        def __init__(self) -> None:
            self.calls: list[bool] = []

        def run(self, names: Any, feeds: Any, options: Any = None) -> Any:
            self.calls.append(options is not None)
            if options is not None:  # a turn starts during every preemptible call
                assert base.preempt_background() == 1
                raise RuntimeError("Exiting due to terminate flag being set to true.")
            n, width = feeds["input_ids"].shape
            return [np.ones((n, width, minilm_onnx.DIM), dtype=np.float32)]

    model = minilm_onnx.OnnxMiniLM.__new__(minilm_onnx.OnnxMiniLM)
    model._tokenizer, model.max_length = minilm_onnx._tokenizer(minilm_onnx.model_dir())
    model.group, model.preempted = 16, 0
    session = model._session = Session()  # type: ignore[assignment]
    out = model.embed(["one short text"], pause=lambda: True)
    assert out.shape == (1, minilm_onnx.DIM) and np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert session.calls == [True] * minilm_onnx.MAX_PREEMPTS + [False]
    assert model.preempted == minilm_onnx.MAX_PREEMPTS
    session.calls.clear()
    model.embed(["one short text"], pause=lambda: False)  # the wait for the foreground timed out
    assert session.calls == [False]
    assert base.preempt_background() == 0  # nothing left registered
