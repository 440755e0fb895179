"""Command detection (rename, forget-last) in Chinese and English, and the profile's fact history."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memsched.commands import detect
from memsched.profile import PREFERRED_NAME, Profile
from memsched.store import Store

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("MEMSCHED_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMSCHED_HOME", str(tmp_path))


RENAMES = [
    ("别叫我小王了，叫我大王", "大王", "小王"),
    ("不要叫我小王，以后叫我大王吧", "大王", "小王"),
    ("以后叫我大王", "大王", None),
    ("从现在起你就叫我老李吧", "老李", None),
    ("叫我大王吧", "大王", None),
    ("请叫我“小甜甜”", "小甜甜", None),
    ("我叫李伟", "李伟", None),
    ("你好，我叫李伟，你叫什么名字？", "李伟", None),
    ("我的名字是李伟。", "李伟", None),
    ("我改名叫李大伟了", "李大伟", None),
    ("call me Da Wang from now on", "Da Wang", None),
    ("You can call me Dave", "Dave", None),
    ("please call me Dave when I'm sad", "Dave", None),
    ("my name is Li Wei", "Li Wei", None),
    ("My name's Alice, nice to meet you", "Alice", None),
    ("don't call me Xiao Wang, call me Da Wang", "Da Wang", "Xiao Wang"),
    ("Don't call me Bob anymore. Call me Robert.", "Robert", "Bob"),
    ("I changed my name to Alex", "Alex", None),
    ("From now on, call me 大王", "大王", None),
    ("别再喊我阿毛了，听着像小狗，还是叫我毛毛", "毛毛", "阿毛"),
    ("Stop calling me Bobby, I'd rather be called Rob.", "Rob", "Bobby"),
    # The wanted name as "my real name, X" / 全名X: the words before it are no part of it.
    ("Okay, stop calling me Jojo, it's getting old. Use my real name, Joanna.", "Joanna", "Jojo"),
    ("stop calling me Jojo… use my full name: Joanna", "Joanna", "Jojo"),
    ("Please call me by my real name, Joanna.", "Joanna", None),
    ("别叫我阿杰了，还是叫我全名周明杰吧。", "周明杰", "阿杰"),
    ("别再叫我小杰了，叫我真名李杰", "李杰", "小杰"),
    # A greeting, then 我是 and a full name.
    ("嗨，我是周明杰", "周明杰", None),
    ("大家好，我是李伟。", "李伟", None),
    ("你好，我是欧阳娜娜", "欧阳娜娜", None),
    # Only the old name: it is retracted (applied only if it is the name in force).
    ("不许再叫我胖子了！", None, "胖子"),
    ("Please don't call me Bobby any more.", None, "Bobby"),
    ("stop calling me Jojo, use Slack instead", None, "Jojo"),  # no "my … name": Slack is no name
]

FORGETS = [
    "忘掉刚才那句话",
    # 别记了 / 不要记 / 不用记: asks that it not be kept; 刚才说的那件事 / 上面那件事 name the last message
    "刚才说的那件事别记了",
    "刚才那句别记了",
    "上面那件事你就别记了",
    "我刚才说的不用记了",
    "别记住我刚才说的",
    "刚刚说的那些话不要记下来",
    "上面说的别记了吧",
    "就当我没说",
    "忘记我刚才说的",
    "请忘掉刚才那句",
    "把刚才那句话忘掉",
    "刚才说的删了吧",
    "删除上一条",
    "就当我没说",
    "forget that",
    "Forget what I just said.",
    "please forget what I just said",
    "delete my last message",
    "Could you forget what I said?",
    "scratch that",
    "刚才那句你删了吧",
    "刚刚说我妈的那条消息忘掉吧",
]

ORDINARY = [
    "I forget things a lot",
    # 记 that is no request to delete: a memory complaint, "remember it right", a grudge, consolation
    "我总是记不住",
    "别记错了",
    "刚才说的那件事你别记错了",
    "刚才说的别放在心上",
    "刚才那件事别记恨我",
    "刚才说的那件事记住了吗",
    "don't forget to call me tomorrow",
    "Can you call me later?",
    "call me when you get home",
    "Call me crazy, but I like it",
    "what's my name?",
    "Is my name Li Wei?",
    "My name is not important",
    "I'm called to serve",
    "forget that movie, let's watch another one",
    "你叫什么",
    "你叫什么名字？",
    "我叫什么名字？",
    "我叫李伟吗？",
    "我叫了外卖",
    "他叫我去吃饭",
    "明天早上叫我起床",
    "以后早上叫我起床",
    "叫我一声哥",
    "啊忘了带钥匙",
    "我出门了",
    # 我是 after a greeting names the user only with a full name; 全名 alone is none.
    "嗨，我是医生",
    "你好，我是杭州人",
    "嗨，我是高中生",
    "Hi, I'm tired",
    "叫我全名",
    "叫我大名吧",
    "don't call me late at night",
    "stop calling me that",
    "别叫我起床",
    "我忘记刚才说什么了",
    "别忘了刚才说的",
    "刚才那句话我忘了",
    "刚才那句你别忘了",
    "不要忘记我刚才说的话",
    "",
]


@pytest.mark.parametrize(("text", "name", "old"), RENAMES)
def test_rename_detected(text: str, name: str | None, old: str | None) -> None:
    found = [c for c in detect(text) if c.kind == "rename"]
    assert len(found) == 1, f"no rename found in {text!r}"
    assert found[0].value == name
    assert found[0].old == old


@pytest.mark.parametrize("text", FORGETS)
def test_forget_last_detected(text: str) -> None:
    assert [c.kind for c in detect(text)] == ["forget_last"]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_chat_is_not_a_command(text: str) -> None:
    assert detect(text) == []


def test_forget_comes_before_rename_in_one_message() -> None:
    kinds = [c.kind for c in detect("忘掉刚才那句话，以后叫我大王")]
    assert kinds == ["forget_last", "rename"]


def test_profile_keeps_history_and_renders_current_value(store: Store) -> None:
    profile = Profile(store)
    t1 = datetime(2024, 10, 1, tzinfo=UTC)
    t2 = datetime(2024, 10, 15, tzinfo=UTC)
    first = profile.set("u", PREFERRED_NAME, "小王", at=t1, source_turn_ids=[1])
    second = profile.set("u", PREFERRED_NAME, "大王", at=t2, source_turn_ids=[7])
    assert first != second
    # Repeating the value in force adds lineage, not history.
    assert profile.set("u", PREFERRED_NAME, "大王", at=t2, source_turn_ids=[9]) == second

    history = profile.history("u", PREFERRED_NAME)
    assert [f.value for f in history] == ["小王", "大王"]
    assert history[0].superseded_at == t2 and history[1].current
    assert history[1].source_turn_ids == (7, 9)
    current = profile.get("u", PREFERRED_NAME)
    assert current is not None and current.value == "大王"

    section = profile.section("u")
    assert ": 大王 (since 2024-10-15; formerly 小王)" in section
    assert ": 小王 (" not in section
    assert profile.section("nobody") == ""
    store.close()


FORGET_WIDER = [
    ("把关于我前任的事都忘了", "forget_topic", "前任"),
    ("请删除关于我前任的所有记忆", "forget_topic", "前任"),
    ("忘记所有关于猫的事", "forget_topic", "猫"),
    ("forget everything about my ex", "forget_topic", "ex"),
    ("Please forget everything I said about my boss", "forget_topic", "boss"),
    ("Forget what I said about the concert.", "forget_topic", "concert"),
    ("Could you delete what I told you about my ex?", "forget_topic", "ex"),
    ("把演唱会的事都忘了吧", "forget_topic", "演唱会"),
    ("把我和前任有关的事情全删了", "forget_topic", "前任"),
    ("把我前任的事都忘了", "forget_topic", "前任"),
    ("删除所有关于我的数据", "forget_all", None),
    ("把我的数据全部删掉", "forget_all", None),
    ("忘掉关于我的一切", "forget_all", None),
    ("delete everything you know about me", "forget_all", None),
    ("Can you forget everything about me?", "forget_all", None),
    ("delete all my data", "forget_all", None),
]


@pytest.mark.parametrize(("text", "kind", "topic"), FORGET_WIDER)
def test_forget_topic_and_everything_detected(text: str, kind: str, topic: str | None) -> None:
    (cmd,) = detect(text)
    assert (cmd.kind, cmd.value) == (kind, topic)


@pytest.mark.parametrize(
    "text",
    [
        "I forget everything about math class",
        "我忘了关于他的事情",
        "我删除了关于他的记录",
        "我们聊聊关于旅行的事吧",
        "我把演唱会的事忘了",
        "Forget about work, let's have fun tonight",
        "I forget what I said about the concert",
    ],
)
def test_statements_about_forgetting_are_not_commands(text: str) -> None:
    assert detect(text) == []


@pytest.mark.parametrize("text", ["把刚才的事忘了", "把昨天的事都忘了吧", "把我说的事都忘了"])
def test_a_time_word_is_not_a_topic_to_forget(text: str) -> None:
    assert all(c.kind != "forget_topic" for c in detect(text))


def test_topic_matches_its_variants_and_whole_words() -> None:
    from memsched.commands import topic_pattern

    zh, en = topic_pattern("前任"), topic_pattern("ex")
    assert zh.search("我前男友昨天打电话了") and not zh.search("我男朋友昨天打电话了")
    assert en.search("My Ex called") and en.search("my ex-girlfriend") and not en.search("the next exam")
