"""Forgetting while a background job of the same turns is running: the job must not write back what
was forgotten. The job reads the turns, waits on the helper LLM (held by the fake), the user forgets
the turns meanwhile, then the LLM answers; the scan of the real database files must find nothing."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memsched import Config, Memory
from memsched.embed.hashing import HashEmbedder
from memsched.forget import forget
from memsched.jobs.worker import Worker
from memsched.llm.client import OpenAIChatClient
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI
from memsched.testing.fake_openai import Hold

SECRET_EN = "my cat is called Zorblaxquint and my bank pin is 48213"
SECRET_ZH = "我的猫叫琥珀麒麟，银行密码是七七九"
NEEDLES = ["Zorblaxquint", "zorblaxquint", "琥珀麒麟", "48213", "七七九"]


def db_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def left(path: Path) -> list[str]:
    raw = db_bytes(path)
    return [n for n in NEEDLES if n.encode() in raw or json.dumps(n).encode() in raw]


@pytest.fixture
def env(tmp_path: Path, fake: FakeOpenAI) -> Iterator[tuple[Memory, Scheduler, OpenAIChatClient]]:
    memory = Memory(Config.load(home=tmp_path, page_size=4), embedders={"hash": HashEmbedder()})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=30.0, retries=0)
    sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    yield memory, sched, llm
    sched.close()
    llm.close()
    memory.close()


def test_a_profile_job_held_on_the_llm_does_not_write_back_a_forgotten_turn(
    env: tuple[Memory, Scheduler, OpenAIChatClient], fake: FakeOpenAI
) -> None:
    memory, sched, llm = env
    path = Path(memory.config.db_path)
    sched.turn("u", "s1", "今天天气不错")
    planted = [sched.turn("u", "s1", SECRET_EN), sched.turn("u", "s1", SECRET_ZH)]
    ids = [i for p in planted for i in p.turn_ids]
    # The page is full: its P2 profile extraction is queued. Its LLM call waits for the gate.
    gate = threading.Event()
    facts = {
        "facts": [
            {"turn": 2, "key": "pets", "value": "cat Zorblaxquint", "op": "set"},
            {"turn": 3, "key": "pets", "value": "猫 琥珀麒麟", "op": "set"},
        ]
    }
    fake.script_for("lasting facts", Hold(gate, json.dumps(facts)))
    worker = Worker(memory, queue=sched.queue, llm=llm, kinds=["profile_extract"])
    runner = threading.Thread(target=worker.drain, kwargs={"timeout": 60})
    runner.start()
    for _ in range(600):
        if any("lasting facts" in json.dumps(b) for b in fake.chat_requests):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the profile job never asked the LLM")
    assert left(path)  # the scan sees the secret before the forget
    forget(memory, "u", turn_ids=ids)
    assert left(path) == []
    gate.set()
    runner.join(timeout=60)
    assert not runner.is_alive()
    values = [f["value"] for f in memory.store.facts_current("u")]
    assert not any("Zorblaxquint" in v or "琥珀麒麟" in v for v in values), values
    forget(memory, "u", last=1)  # any later forget purges the file again; the job must have left nothing
    assert left(path) == []


def test_a_helper_reply_in_prose_leaves_no_text_in_the_log_or_the_file(
    env: tuple[Memory, Scheduler, OpenAIChatClient], fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """A small model asked for JSON answers in prose, quoting the messages. memsched logged that
    reply at WARNING ('profile LLM extraction of page 1 failed, rules only: invalid JSON from LLM:
    ...; reply was "Sure! ... my cat is called Zorblaxquint"'): after the user deleted the messages,
    the server's log still had them. The error now says what was wrong, not what the model said."""
    memory, sched, llm = env
    sched.turn("u", "s1", "今天天气不错")
    planted = [sched.turn("u", "s1", SECRET_EN), sched.turn("u", "s1", SECRET_ZH)]
    prose = f"Sure! The user told me: {SECRET_EN}. 还有：{SECRET_ZH}"
    fake.script_for("lasting facts", prose)
    fake.script_for("keywords", prose)
    worker = Worker(memory, queue=sched.queue, llm=llm)
    with caplog.at_level(logging.INFO, logger="memsched"):
        worker.drain(timeout=60)
    assert any("invalid JSON from LLM" in r.getMessage() for r in caplog.records)  # it was asked
    forget(memory, "u", turn_ids=[i for p in planted for i in p.turn_ids])
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert [n for n in NEEDLES if n in logged] == []
    assert left(Path(memory.config.db_path)) == []
