"""Forgetting a topic across languages and names: "忘掉关于三体的一切" reaches English turns about
"Three-Body" through the other names the bookmark LLM gave it (aliases, translations included),
"forget everything about my ex" reaches the turns that only name the ex ("my ex Marcus", then
"Marcus ..."), and a turn about something else stays. The preview endpoint lists what a topic
forget would delete without deleting it. Through the HTTP service, the upstream a FakeOpenAI."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.bookmarks import generate_bookmarks
from memsched.commands import apposed_names, match_topic
from memsched.config import Config
from memsched.embed.hashing import HashEmbedder
from memsched.llm.client import OpenAIChatClient
from memsched.memory import Memory
from memsched.profile import OCCUPATION, Profile
from memsched.scheduler import Scheduler
from memsched.server.app import create_app
from memsched.server.service import Service
from memsched.testing import FakeOpenAI, LiveServer

BOOK_EN = [
    "I started The Three-Body Problem on the train",
    "The countdown in Three-Body gave me chills",
    "Ye Wenjie's choice still haunts me",
]
BOOK_ZH = ["三体第二部我看完了", "面壁者这个设定太妙了", "黑暗森林法则细想很可怕"]
OTHER = ["Pizza with my sister tonight", "明天要早起去健身房", "My cat knocked over a plant"]


def bookmark_llm(body: dict[str, Any]) -> str:
    """The bookmark LLM: for each segment it is asked about, keywords with their other names (the
    prompt asks for translations among the aliases); anything else gets an echo."""
    text = str(body["messages"][-1]["content"])
    if "You index a long conversation" not in text:
        users = [m for m in body["messages"] if m.get("role") == "user"]
        return "ok: " + str(users[-1]["content"])[:40]
    out = []
    for key, segment in re.findall(r"### \[(p\d+)\][^\n]*\n(.*?)(?=\n### \[|\Z)", text, re.S):
        if "Three-Body" in segment or "三体" in segment:
            marks = {"keywords": ["三体"], "aliases": {"三体": ["The Three-Body Problem", "Three-Body"]}}
        else:
            marks = {"keywords": ["sister"], "aliases": {}}
        out.append({"id": key, **marks, "summary": "talk", "kind": "fact"})
    return json.dumps({"bookmarks": out}, ensure_ascii=False)


class Env:
    def __init__(self, memory: Memory, sched: Scheduler, base: str, fake: FakeOpenAI) -> None:
        self.memory, self.sched, self.base, self.fake = memory, sched, base, fake

    def say(self, text: str, session: str = "s1") -> httpx.Response:
        body = {
            "model": "m",
            "user": "u",
            "metadata": {"session_id": session},
            "messages": [{"role": "user", "content": text}],
        }
        r = httpx.post(f"{self.base}/v1/chat/completions", json=body, timeout=30)
        assert r.status_code == 200, r.text
        return r

    def contents(self) -> list[str]:
        return [t.content for t in self.memory.store.iter_turns("u")]


@pytest.fixture
def env(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Env]:
    fake.responder = bookmark_llm
    memory = Memory(Config.load(home=tmp_path, page_size=2), embedders={"hash": HashEmbedder()})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=10.0, retries=0)
    sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    cfg = Config.load(
        home=tmp_path, page_size=2, upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    service = Service(cfg, memory=memory, scheduler=sched)
    try:
        with LiveServer(create_app(service=service, warm_up=False)) as base:
            yield Env(memory, sched, base, fake)
    finally:
        sched.close()
        llm.close()
        memory.close()


def _book_talk(env: Env, english: list[str], chinese: list[str]) -> None:
    for i, text in enumerate([*english, OTHER[0], *chinese, OTHER[1]]):
        env.say(text, session="s1" if i % 2 == 0 else "s2")
    run = generate_bookmarks(env.memory, "u", llm=OpenAIChatClient(env.fake.base_url, "k", "fake-model"))
    assert run.bookmarks  # the bookmark LLM's aliases are what links 三体 and Three-Body


@pytest.mark.parametrize(
    ("command", "topic"),
    [("忘掉关于三体的一切", "三体"), ("forget everything about Three-Body", "Three-Body")],
)
def test_a_topic_forget_reaches_the_other_language_through_bookmark_aliases(
    env: Env, command: str, topic: str
) -> None:
    # The topic is named in one language; the turns that must go are in the other (and in its own).
    _book_talk(env, BOOK_EN, BOOK_ZH)
    preview = httpx.get(f"{env.base}/v1/users/u/topics/{topic}/turns")
    assert preview.status_code == 200, preview.text
    listed = [t["content"] for t in preview.json()["turns"]]
    assert BOOK_EN[0] in listed and BOOK_ZH[0] in listed  # both languages listed ...
    assert not any(o in listed for o in OTHER)  # ... and nothing else
    assert set(preview.json()["via"].values()) == {"bookmark alias"}
    assert all(t in env.contents() for t in listed)  # a preview deletes nothing

    env.say(command)
    left = env.contents()
    assert not any("Three-Body" in c or "三体" in c for c in left), left
    # The lines without the topic's name in either language stay unless they are replies to it:
    # "Ye Wenjie's choice…" and "面壁者…" name neither, so the forget cannot know them (said plainly).
    assert BOOK_EN[2] in left and BOOK_ZH[1] in left
    assert all(o in left for o in OTHER[:2])  # unrelated turns stay


def test_a_forget_without_bookmarks_stays_literal(env: Env) -> None:
    """Before any bookmark names it in the other language, nothing links the two: only literal matches go
    (precision first; CC-CEDICT glosses 三体 as "trisomy")."""
    for text in (*BOOK_EN[:2], *BOOK_ZH[:1], OTHER[0]):
        env.say(text)
    env.say("忘掉关于三体的一切")
    left = env.contents()
    assert BOOK_ZH[0] not in left and BOOK_EN[0] in left and OTHER[0] in left


@pytest.mark.parametrize(
    ("lines", "command", "gone", "kept"),
    [
        (
            [
                "My ex Marcus texted me again, ugh.",
                "Marcus says he wants his hoodie back",
                "My coworker Dana brought cake today",
            ],
            "please forget everything about my ex",
            ["My ex Marcus texted me again, ugh.", "Marcus says he wants his hoodie back"],
            ["My coworker Dana brought cake today"],
        ),
        (
            ["我前男友叫王磊，昨天又给我发消息", "王磊说想把他的吉他拿回去", "同事小美今天请大家喝奶茶"],
            "把关于前任的事都忘了",
            ["我前男友叫王磊，昨天又给我发消息", "王磊说想把他的吉他拿回去"],
            ["同事小美今天请大家喝奶茶"],
        ),
        (
            ["My ex-girlfriend moved to Lisbon", "前女友又换了头像", "My ex-boss retired"],
            "把关于前任的事都忘了",  # Chinese command, English turn about an ex: the variants are bilingual
            ["My ex-girlfriend moved to Lisbon", "前女友又换了头像"],
            ["My ex-boss retired"],
        ),
    ],
)
def test_a_topic_forget_follows_the_name_given_to_it(
    env: Env, lines: list[str], command: str, gone: list[str], kept: list[str]
) -> None:
    for text in lines:
        env.say(text)
    env.say(command)
    left = env.contents()
    assert not [g for g in gone if g in left]
    assert all(k in left for k in kept)


@pytest.mark.parametrize(
    ("lines", "command", "gone", "kept"),
    [
        (
            [
                "ugh my brother borrowed my car again without asking",
                "he never listens to me",
                "and he left the tank empty",
                "Tom said he would fix my bike",  # names someone else: the chain stops
                "he never does though",
            ],
            "forget what I said about my brother",
            [
                "ugh my brother borrowed my car again without asking",
                "he never listens to me",
                "and he left the tank empty",
            ],
            ["Tom said he would fix my bike", "he never does though"],
        ),
        (
            ["我弟又没打招呼就开走了我的车", "他从来不听我说话", "我妈说他还小", "他都二十五了"],
            "忘掉关于我弟的事",
            ["我弟又没打招呼就开走了我的车", "他从来不听我说话"],
            ["我妈说他还小", "他都二十五了"],
        ),
    ],
)
def test_a_topic_forget_takes_the_next_messages_that_say_only_he(
    env: Env, lines: list[str], command: str, gone: list[str], kept: list[str]
) -> None:
    """A walk-through's "forget what I said about my brother" deleted the message naming him and left
    "he never listens to me" right after it. The next messages that refer back by a pronoun and name
    no one else go too; one that names someone else ends the chain. The preview says why."""
    for text in lines:
        env.say(text)
    topic = command.removeprefix("forget what I said about my ").removeprefix("忘掉关于").removesuffix("的事")
    preview = httpx.get(f"{env.base}/v1/users/u/topics/{topic}/turns").json()["turns"]
    backs = [t for t in preview if t["refers_back_to"] is not None]
    assert [t["content"] for t in backs] == [g for g in gone[1:]]
    env.say(command)
    left = env.contents()
    assert not [g for g in gone if g in left]
    assert all(k in left for k in kept)


def test_apposed_names_are_names_only() -> None:
    assert apposed_names("My ex Marcus texted me", ["ex"]) == ["Marcus"]
    assert apposed_names("my ex is called Marcus", ["ex"]) == ["Marcus"]
    assert apposed_names("My ex. Then I left", ["ex"]) == []
    assert apposed_names("my ex And his dog", ["ex"]) == []
    assert apposed_names("my ex texted", ["ex"]) == []
    assert apposed_names("我前男友小凯又来了", ["前男友"]) == ["小凯"]
    assert apposed_names("我前男友叫王磊", ["前男友"]) == ["王磊"]
    assert apposed_names("我前男友又来了", ["前男友"]) == []


def test_preview_of_a_topic_nothing_mentions_and_a_bad_topic(env: Env) -> None:
    env.say(OTHER[0])
    r = httpx.get(f"{env.base}/v1/users/u/topics/volcanoes/turns")
    assert r.status_code == 200 and r.json()["turns"] == []
    assert httpx.delete(f"{env.base}/v1/users/u/topics/volcanoes").status_code == 404
    assert httpx.get(f"{env.base}/v1/users/u/topics/%20/turns").status_code == 400
    assert httpx.get(f"{env.base}/v1/users/nobody/topics/x/turns").status_code == 404
    done = httpx.delete(f"{env.base}/v1/users/u/topics/pizza")
    assert done.status_code == 200 and done.json()["turns"] >= 1
    assert OTHER[0] not in env.contents()


def test_match_topic_names_why(env: Env) -> None:
    env.say("My ex Marcus texted me again")
    env.say("Marcus wants the hoodie")
    m = match_topic(env.memory.store, "u", "ex")
    assert m.via == {"Marcus": m.via["Marcus"]} and m.via["Marcus"].startswith("named after it")
    assert len(m.turn_ids) >= 3  # both user turns and the replies right after them


def test_cli_topic_forget_previews_then_deletes(env: Env) -> None:
    from typer.testing import CliRunner

    from memsched.cli import app

    env.say("My ex Marcus texted me again")
    env.say("Marcus wants the hoodie back")
    env.say(OTHER[2])
    db = ["--db", str(env.memory.config.db_path)]
    run = CliRunner().invoke
    preview = run(app, ["forget", "--user", "u", "--topic", "ex", "--dry-run", "--json", *db])
    assert preview.exit_code == 0, preview.output
    body = json.loads(preview.output)
    assert "Marcus" in body["via"] and {t["content"] for t in body["turns"]} >= {
        "My ex Marcus texted me again",
        "Marcus wants the hoodie back",
    }
    assert "Marcus wants the hoodie back" in env.contents()  # the dry run deleted nothing
    assert run(app, ["forget", "--user", "u", "--dry-run", *db]).exit_code != 0  # a dry run of what?
    assert run(app, ["forget", "--user", "u", "--topic", "ex", "--all", *db]).exit_code != 0
    assert run(app, ["forget", "--user", "u", "--topic", "volcanoes", *db]).exit_code != 0
    done = run(app, ["forget", "--user", "u", "--topic", "ex", *db])
    assert done.exit_code == 0, done.output
    left = env.contents()
    assert not any("Marcus" in c for c in left) and OTHER[2] in left


JOB = [
    "Between us: I'm secretly interviewing at a biotech startup called Quillfeather Labs.",
    "Nobody here knows yet, the final round is next Friday.",
]
NOT_JOB = [
    "My sister Leah is pregnant, I'm going to be an aunt!",
    "The climbing gym was packed, I finally sent a V3.",
    "We had the final round of the chess tournament at the club tonight.",
]


@pytest.mark.parametrize(
    "command",
    [
        "Actually, forget what I said about my job.",
        # A word or two before the topic's head: "new job" searched the words "new job" and found nothing.
        "Actually, forget what I said about my new job.",
    ],
)
def test_forget_what_i_said_about_my_job_takes_the_turns_about_it(env: Env, command: str) -> None:
    """An outside run's "Actually, forget what I said about my job." searched for the word "job", and the
    turns about an interview at a startup (which never say it) stayed. A general topic counts the
    user's turns in its words (interviewing, hired, 面试), the next message that goes on from one of
    them ("the final round is next Friday"), and the turn its profile fact came from; turns about
    anything else stay, a "final round" of chess in another session too. The preview lists why."""
    env.say("I teach chemistry to high schoolers here in Denver.", session="s0")
    taught = next(t for t in env.memory.store.iter_turns("u") if t.content.startswith("I teach"))
    Profile(env.memory.store).set("u", OCCUPATION, "chemistry teacher", source_turn_ids=[taught.id or 0])
    env.say(NOT_JOB[0], session="s0")
    for text in JOB:
        env.say(text, session="s1")
    for text in NOT_JOB[1:]:
        env.say(text, session="s2")
    preview = httpx.get(f"{env.base}/v1/users/u/topics/job/turns").json()
    users = {t["content"]: t["found_by"] for t in preview["turns"] if t["role"] == "user"}
    assert set(users) == {*JOB, taught.content}
    assert "final round" in JOB[1] and users[JOB[1]] and users[taught.content]  # said why
    assert "words about work" in preview["terms"]

    env.say(command, session="s1")
    left = env.contents()
    assert not any("Quillfeather" in c or "final round is next" in c or "I teach" in c for c in left), left
    assert all(k in left for k in NOT_JOB)
    assert not Profile(env.memory.store).current("u").get(OCCUPATION)
    env.say("So what's new with you?", session="s1")
    shown = json.dumps(env.fake.chat_requests[-1]["messages"])
    assert "Quillfeather" not in shown and "final round is next" not in shown


def test_bie_ji_le_deletes_the_message_before_it(env: Env) -> None:
    """ "刚才说的那件事别记了" was not read as a command: the flat hunt in 滨江 stayed and was shown again."""
    env.say("我最近在偷偷看房，想在滨江买一套两居室，首付还差四十万。")
    env.say("刚才说的那件事别记了")
    env.say("你觉得我最近在忙什么？")
    assert not any("滨江" in c for c in env.contents())
    shown = json.dumps(env.fake.chat_requests[-1]["messages"], ensure_ascii=False)
    assert "滨江" not in shown and "四十万" not in shown
