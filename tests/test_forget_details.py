"""A personal detail named bare: "Please forget my address." / 把我的住址忘了吧 / "delete my phone
number". Such a message was no command at all (only "forget what I said about X", "forget everything
about X" were), so the address stayed in the turns and the database file while the user believed it
gone. A detail (`TopicField.detail`) is forgotten with the turns that state it; the user's other
facts stay; "forget my job" (may mean "stop thinking about it"), "don't forget my address" and "I
forgot my address" stay no command. Through the scheduler, the reply LLM a FakeOpenAI."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memsched import Config, Memory
from memsched.commands import detect, topic_field
from memsched.embed.hashing import HashEmbedder
from memsched.llm.client import OpenAIChatClient
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI


@dataclass
class Setup:
    memory: Memory
    sched: Scheduler

    def say(self, text: str, session: str = "s1") -> None:
        self.sched.turn("u", session, text)

    def contents(self) -> list[str]:
        return [t.content for t in self.memory.store.iter_turns("u")]

    def db_bytes(self) -> bytes:
        path = Path(self.memory.config.db_path)
        files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
        return b"".join(p.read_bytes() for p in files if p.exists())


@pytest.fixture
def setup(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Setup]:
    memory = Memory(Config.load(home=tmp_path, page_size=4), embedders={"hash": HashEmbedder()})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=10.0, retries=0)
    sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    yield Setup(memory, sched)
    sched.close()
    llm.close()
    memory.close()


@pytest.mark.parametrize(
    ("stated", "kept", "command", "secret"),
    [
        (
            "My address is 1418 Alder Street, apartment 3B, in case you ever need it.",
            ["My birthday is August 9th.", "I'm a graphic designer in Portland."],
            "Please forget my address.",
            "1418 Alder",
        ),
        (
            "我家住在玉林路18号3栋2单元，以后寄东西可以寄这儿。",
            ["我生日是十一月二十号。", "我在成都开了一家小花店。"],
            "把我的住址忘了吧。",
            "玉林路18号",
        ),
        (
            "My cell number is 503-555-0142 if you ever need it.",
            ["I love hiking on weekends."],
            "Can you delete my phone number?",
            "555-0142",
        ),
    ],
)
def test_forget_a_detail_deletes_it_and_keeps_the_rest(
    setup: Setup, stated: str, kept: list[str], command: str, secret: str
) -> None:
    setup.say(stated, session="s1")
    for text in kept:
        setup.say(text, session="s2")
    assert secret.encode() in setup.db_bytes()
    setup.say(command, session="s3")
    left = setup.contents()
    assert not [t for t in left if secret in t], left
    assert all(k in left for k in kept), left
    assert secret.encode() not in setup.db_bytes()


@pytest.mark.parametrize(
    "text",
    [
        "Don't forget my address!",
        "Did you forget my address?",
        "I forgot my address at the front desk form.",
        "forget my job, let's talk about something fun",
        "Just forget my problems for tonight.",
        "我把我的住址忘了",
        "别忘了我的地址",
    ],
)
def test_not_a_detail_forget(text: str) -> None:
    assert not [c for c in detect(text) if c.kind == "forget_topic"]


def test_details_are_fields() -> None:
    assert topic_field("address") is not None and topic_field("address").detail  # type: ignore[union-attr]
    assert topic_field("住址") is not None and topic_field("手机号") is not None
    assert not topic_field("job").detail  # type: ignore[union-attr]
