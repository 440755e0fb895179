from __future__ import annotations

import itertools
import socket
from dataclasses import replace
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
    # 36 words of 3-5 tokens: a handful of calls within the budget (two words a call would be 18),
    # each run as the model's 13 pieces with a pause before each.
    assert BACKGROUND_TOKENS == 64 and len(pauses) % 13 == 0 and 2 <= len(pauses) // 13 <= 6


def test_background_minilm_calls_run_in_small_pieces_with_a_pause_before_each(no_network: None) -> None:
    """What bounds the wait of a turn behind background work: a background call is at most
    BACKGROUND_TOKENS padded tokens, run as the model's pieces (the embeddings, then half a layer
    at a time) with a pause before each piece, so no piece is a whole model call; and the pieces give
    the foreground's vectors bit for bit (stored vectors do not depend on who computed them)."""
    from memsched.embed import minilm_onnx
    from memsched.embed.minilm import BACKGROUND_TOKENS, shared_minilm

    model = shared_minilm(Config.load())
    if model.backend != "onnx":
        pytest.skip("the pieces are the ONNX backend's")
    onnx = model._load()
    stages = onnx._background_stages()
    assert len(stages) == 13  # embeddings + 6 layers x (attention, feed-forward)
    texts = [
        "ok",
        "Where did we go on our first date?",
        "我的猫叫芝麻，是只英短。我们第一次约会那家店叫什么来着？",
        *(f"turn {i}: we talked about cats, the lake, pottery and 芝麻 " * (1 + i % 3) for i in range(20)),
        "Melanie painted a sunrise over the lake; Caroline went to a pottery class. " * 30,  # truncated
    ]
    expected = model.embed(texts)
    runs: list[tuple[int, int]] = []  # (piece, padded tokens) of each model run, in order
    events: list[str] = []

    class Recording:
        def __init__(self, k: int, inner: Any) -> None:
            self.k, self.inner = k, inner

        def run(self, names: Any, feeds: Any, options: Any = None) -> Any:
            shape = next(iter(feeds.values())).shape
            runs.append((self.k, int(shape[0]) * int(shape[-1]) if len(shape) >= 2 else 0))
            events.append("run")
            return self.inner.run(names, feeds, options)

    real = list(stages)
    stages[:] = [replace(st, session=Recording(k, st.session)) for k, st in enumerate(real)]
    try:
        with base.background(lambda: events.append("pause") or True):
            out = model.embed(texts)
    finally:
        stages[:] = real
    assert np.array_equal(out, expected)
    assert events[0] == "pause" and all(a == "pause" for a, b in itertools.pairwise(events) if b == "run")
    firsts = [i for i, (k, _) in enumerate(runs) if k == 0]
    assert len(firsts) >= 3  # several calls, each run as all 13 pieces in order
    for start, end in zip(firsts, [*firsts[1:], len(runs)], strict=True):
        assert [k for k, _ in runs[start:end]] == list(range(13))
    # Every call within the token budget, but a single text longer than it (the truncated one).
    widths = sorted({tokens for k, tokens in runs if k == 0})
    assert widths[-1] == onnx.max_length and all(w <= BACKGROUND_TOKENS for w in widths[:-1])
    assert minilm_onnx.MAX_PREEMPTS >= 1


@pytest.mark.slow
def test_background_minilm_pieces_that_do_not_match_the_whole_model_are_not_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The pieces are checked against the whole model on the probe texts when first loaded; pieces
    that give other bits (here: the residual-add fusion the whole graph does not make) are not used,
    and background calls run the whole model, as they did before pieces."""
    import shutil

    from memsched.embed import minilm_onnx

    onnx_file = tmp_path / "model.onnx"
    shutil.copy(minilm_onnx.ensure_exported(), onnx_file)
    monkeypatch.setattr(minilm_onnx, "PARTS_DISABLED_OPTIMIZERS", [])
    model = minilm_onnx.OnnxMiniLM(onnx_file, minilm_onnx.model_dir())
    with caplog.at_level("WARNING", logger=minilm_onnx.__name__):
        stages = model._background_stages()
    assert len(stages) == 1 and stages[0].session is model._session
    assert "whole model in one piece" in caplog.text and "bit for bit" in caplog.text
    assert (tmp_path / f"parts-v{minilm_onnx.PARTS_VERSION}" / "parts.json").exists()
    texts = ["one background text", "and another, a little longer than the first one"]
    assert np.array_equal(model.embed(texts, pause=lambda: True, max_tokens=64), model.embed(texts))


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

    stages = onnx._background_stages()
    first = stages[0]
    real_run = first.session.run
    before = onnx.preempted
    stages[0] = replace(first, session=Session())
    try:
        t = threading.Thread(target=turn)
        t.start()
        with base.background(gate.wait_idle):
            out = model.embed(texts)
        t.join(10)
    finally:
        stages[0] = first
    assert np.array_equal(out, expected)  # the piece ran again: the same vectors, bit for bit
    assert onnx.preempted == before + 1 and seen[0] and seen[1]


def test_a_background_minilm_call_is_cut_short_a_bounded_number_of_times() -> None:
    """However often turns start, one piece of a background call is run again at most MAX_PREEMPTS
    times, then to its end; and a piece run after the pause gave up waiting (a busy foreground) is
    not cut."""
    import threading

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
            return [np.ones((n, width, minilm_onnx.DIM), dtype=np.float32)]  # the whole model, one piece

    model = minilm_onnx.OnnxMiniLM.__new__(minilm_onnx.OnnxMiniLM)
    model._tokenizer, model.max_length = minilm_onnx._tokenizer(minilm_onnx.model_dir())
    model.group, model.preempted = 16, 0
    session = model._session = Session()  # type: ignore[assignment]
    model._stages_lock = threading.Lock()
    model._stages = [minilm_onnx.Stage(session, minilm_onnx._INPUTS, (minilm_onnx.OUTPUT,))]
    out = model.embed(["one short text"], pause=lambda: True)
    assert out.shape == (1, minilm_onnx.DIM) and np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert session.calls == [True] * minilm_onnx.MAX_PREEMPTS + [False]
    assert model.preempted == minilm_onnx.MAX_PREEMPTS
    session.calls.clear()
    model.embed(["one short text"], pause=lambda: False)  # the wait for the foreground timed out
    assert session.calls == [False]
    assert base.preempt_background() == 0  # nothing left registered
