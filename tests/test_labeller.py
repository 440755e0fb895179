"""The optional LLM labeller (P2 job `mood_label`) through the HTTP service with a fake upstream on
loopback: a sarcastic message the rules read as casual is labelled conflict by the LLM, and the next
morning's turn carries the corrected mood; a malformed label fails the job and changes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from memsched.config import Config
from memsched.labeller import Label
from memsched.llm.prompts import load
from memsched.server.app import TRACE_HEADER
from memsched.store import open_store
from memsched.testing import FakeOpenAI, LiveServer
from memsched.testing.fake_openai import LABEL_MARK
from memsched.testing.service import proxy_server

SH = ZoneInfo("Asia/Shanghai")
NIGHT = datetime(2024, 10, 14, 22, 30, tzinfo=SH)
MORNING = datetime(2024, 10, 15, 8, 0, tzinfo=SH)
# Sarcasm without a cue word: the rules read both as casual.
# A terse reply the P0 router reads as casual (nothing in the words is upset; the learned classifier
# reads open sarcasm such as "Fine. Do what you want." as conflict by now), which the LLM, reading
# the night's exchange, labels conflict.
SARCASM = {"zh": ("嗯，知道了。", "早安。"), "en": ("Okay then.", "Good morning.")}
CONFLICT = '{"mode": "conflict", "mood": "upset", "intensity": 0.8, "cause": "feels ignored"}'


def _server(tmp_path: Path, fake: FakeOpenAI, **overrides: Any) -> LiveServer:
    return proxy_server(tmp_path / "srv", fake, **{"mood_labeller": True, **overrides})


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    with _server(tmp_path, fake) as base:
        yield base


def chat(base: str, user: str, text: str, at: datetime) -> dict[str, Any]:
    body = {
        "model": "m",
        "user": user,
        "metadata": {"session_id": "s", "timestamp": at.isoformat(), "timezone": "Asia/Shanghai"},
        "messages": [{"role": "system", "content": "You are Xiaoyu."}, {"role": "user", "content": text}],
    }
    r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{base}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
    assert isinstance(trace, dict)
    return trace


def label_jobs(base: str, user: str) -> list[dict[str, Any]]:
    """The user's mood_label jobs, once none of them is queued or running any more."""
    deadline = time.monotonic() + 30
    while True:
        jobs = httpx.get(f"{base}/v1/jobs", params={"user": user}, timeout=10).json()
        mine = [j for j in jobs if j["kind"] == "mood_label"]
        if mine and all(j["status"] in ("done", "dead") for j in mine):
            return mine
        assert time.monotonic() < deadline, f"mood_label jobs still pending: {mine}"
        time.sleep(0.05)


def reply_system(fake: FakeOpenAI) -> str:
    """The system prompt of the last reply request (background requests carry no persona)."""
    return next(
        str(b["messages"][0]["content"])
        for b in reversed(fake.chat_requests)
        if str(b["messages"][0]["content"]).startswith("You are Xiaoyu")
    )


def test_the_prompt_carries_the_mark_the_fake_knows() -> None:
    assert LABEL_MARK in load("mood_label")


# On SQLite and on PostgreSQL (conftest.py, `backend`): the correction goes through the store protocols.
@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_llm_label_corrects_the_state_the_next_turn_carries(
    server: str, fake: FakeOpenAI, lang: str
) -> None:
    sarcasm, morning = SARCASM[lang]
    fake.script_labels(CONFLICT)
    first = chat(server, "lin", sarcasm, NIGHT)
    assert first["route"]["mode"] == "casual" and first["mood"]["after"]["label"] != "upset"
    (job,) = label_jobs(server, "lin")
    assert job["status"] == "done" and job["payload"]["turn_id"] == first["turn_ids"][0]
    assert job["payload"]["rule"]["mode"] == "casual"
    (asked,) = fake.label_requests
    assert sarcasm in asked["messages"][0]["content"]

    state = httpx.get(f"{server}/v1/users/lin/state", params={"at": NIGHT.isoformat()}).json()
    assert state["mood"]["label"] == "upset" and state["mood"]["cause_turn_ids"] == [first["turn_ids"][0]]

    # The next morning: the corrected mood is carried in, shown as the LLM's, and decides the mode.
    second = chat(server, "lin", morning, MORNING)
    carried = second["mood"]["carried"]
    assert carried["label"] == "upset" and carried["corrected_by"] == "llm"
    label = second["mood"]["llm_label"]
    assert label["mode"] == "conflict" and label["rule_mode"] == "casual"
    assert set(label["corrected"]) == {"mode", "mood"} and "cause" not in label
    assert "feels ignored" in reply_system(fake)  # the LLM's cause reaches the next prompt only
    assert second["route"]["mode"] == "conflict" and second["route"]["evidence"]["carried"]["conflict"] > 0
    assert "conflict" in second["strategy"]["name"]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_without_a_label_the_rules_reading_stands(server: str, fake: FakeOpenAI, lang: str) -> None:
    sarcasm, morning = SARCASM[lang]
    chat(server, "mo", sarcasm, NIGHT)  # the fake's labeller has no opinion (NO_LABEL)
    (job,) = label_jobs(server, "mo")
    assert job["status"] == "done"
    second = chat(server, "mo", morning, MORNING)
    assert second["mood"]["carried"]["label"] != "upset" and "corrected_by" not in second["mood"]["carried"]
    assert second["mood"]["llm_label"]["corrected"] == [] and second["route"]["mode"] == "casual"


@pytest.mark.parametrize(
    "bad",
    [
        "I think they are upset.",  # no JSON at all
        '{"mode": "furious", "mood": "upset", "intensity": 0.8}',  # not a mode
        '{"mode": "conflict", "mood": "upset", "intensity": 7}',  # out of range
        '{"mood": "upset"}',  # mode missing
    ],
)
def test_a_malformed_label_fails_the_job_and_changes_nothing(server: str, fake: FakeOpenAI, bad: str) -> None:
    fake.script_labels(bad)
    first = chat(server, "ann", SARCASM["en"][0], NIGHT)
    (job,) = label_jobs(server, "ann")
    assert job["status"] == "dead" and job["attempts"] == 1  # not retried: a later label would be stale
    assert "mood label of turn" in job["last_error"] and "the state is unchanged" in job["last_error"]
    state = httpx.get(f"{server}/v1/users/ann/state", params={"at": NIGHT.isoformat()}).json()
    assert state["mood"]["label"] == "neutral"
    second = chat(server, "ann", "Good morning.", MORNING)
    assert second["mood"]["llm_label"] is None and second["route"]["mode"] == "casual"
    assert second["mood"]["carried"]["label"] == "neutral"
    assert first["turn_ids"][0] == job["payload"]["turn_id"]


def test_a_stale_label_changes_nothing(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A label that arrives after the user wrote again is not applied: that message has its own job."""
    from memsched import Memory
    from memsched.jobs.worker import Worker
    from memsched.llm.client import OpenAIChatClient
    from memsched.scheduler import Scheduler

    fake.script_labels(CONFLICT, CONFLICT)
    with (
        OpenAIChatClient(fake.base_url, "k", "m", retries=0) as llm,
        Scheduler(
            Memory(home=tmp_path, embedders="hash", mood_labeller=True), llm=llm, start_workers=False
        ) as sched,
    ):
        first = sched.prepare("bo", "s", "Fine. Do what you want.", now=NIGHT)
        sched.prepare("bo", "s", "Good morning.", now=MORNING)  # written before the first label ran
        worker = Worker(sched.memory, queue=sched.queue, llm=llm, poll=0.01)
        worker.drain(timeout=30)
        jobs = [j for j in sched.queue.list(None, 100) if j.kind == "mood_label"]
        assert sorted(j.status for j in jobs) == ["done", "done"]
        state = sched.store.session_state("bo", "s")
        # Only the newest message's label was applied; the first one's was skipped as stale.
        assert state["mode_label"]["turn_id"] != first.turn_ids[0]
        assert state["mode_label"]["turn_id"] == max(
            t.id for t in sched.store.session_turns("bo", "s") if t.id
        )
        assert sched.store.mood_get("bo")["meta"]["llm"]["turn_id"] == state["mode_label"]["turn_id"]


def test_the_labeller_can_be_turned_off(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.script_labels(CONFLICT)
    with _server(tmp_path, fake, mood_labeller=False) as base:
        trace = chat(base, "off", "Fine. Do what you want.", NIGHT)
        assert "mood_label" not in [j["kind"] for j in trace["jobs"]]
        assert fake.label_requests == []


def test_a_label_needs_mode_and_mood_and_accepts_null() -> None:
    assert Label.model_validate({"mode": None, "mood": None}).mode is None
    with pytest.raises(ValueError):
        Label.model_validate({"mode": "conflict"})


def test_forgetting_the_turn_forgets_the_llm_cause(tmp_path: Path, fake: FakeOpenAI) -> None:
    canary = "zebracanary"
    fake.script_labels(CONFLICT.replace("feels ignored", f"the {canary} fight"))
    with _server(tmp_path, fake) as base:
        first = chat(base, "fo", "Fine. Do what you want.", NIGHT)
        label_jobs(base, "fo")
        assert (
            httpx.get(f"{base}/v1/users/fo/state", params={"at": NIGHT.isoformat()}).json()["mood"]["label"]
            == "upset"
        )
        r = httpx.delete(f"{base}/v1/users/fo/turns/{first['turn_ids'][0]}")
        assert r.status_code == 200, r.text
        assert (
            httpx.get(f"{base}/v1/users/fo/state", params={"at": NIGHT.isoformat()}).json()["mood"]["label"]
            == "neutral"
        )
        second = chat(base, "fo", "Good morning.", MORNING)
        assert canary not in str(second) and canary not in reply_system(fake)
    store = open_store(Config.load(home=tmp_path / "srv"))
    try:
        assert store.mood_get("fo") is None or canary not in str(store.mood_get("fo"))
        assert canary not in str(store.session_state("fo", "s"))
    finally:
        store.close()
