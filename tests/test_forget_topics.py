"""The general topics a companion's user asks to forget besides their job: their health, their money,
their love life, their family. "Forget what I told you about my health" searched the word "health",
and "the doctor said my blood pressure is high" or "我最近失眠很严重，医生给我开了药" stayed in memory
(and in the database file) while the user believed them deleted. Each topic's field of words
(`commands.TOPIC_FIELDS`) takes the turns about it in either language, the next message that goes
on from one of them, and the turns its profile facts came from; turns that only share an incidental
word ("I'm sick of this weather", "a money-back guarantee", 回家, 家庭作业) stay. Through the
scheduler, the reply LLM a FakeOpenAI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memsched import Config, Memory
from memsched.commands import TOPIC_FIELDS, detect, topic_field, topic_pattern
from memsched.embed.hashing import HashEmbedder
from memsched.llm.client import OpenAIChatClient
from memsched.profile import ALLERGIES, DIET, PEOPLE, Profile
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI


@dataclass
class Setup:
    memory: Memory
    sched: Scheduler
    fake: FakeOpenAI

    def say(self, text: str, session: str = "s1") -> None:
        self.sched.turn("u", session, text)

    def contents(self) -> list[str]:
        return [t.content for t in self.memory.store.iter_turns("u")]

    def turn_id(self, text: str) -> int:
        return next(t.id or 0 for t in self.memory.store.iter_turns("u") if t.content == text)

    def db_bytes(self) -> bytes:
        """The raw bytes of the database file, its WAL and its shared-memory file."""
        path = Path(self.memory.config.db_path)
        files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
        return b"".join(p.read_bytes() for p in files if p.exists())


@pytest.fixture
def setup(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Setup]:
    memory = Memory(Config.load(home=tmp_path, page_size=4), embedders={"hash": HashEmbedder()})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=10.0, retries=0)
    sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    yield Setup(memory, sched, fake)
    sched.close()
    llm.close()
    memory.close()


# Per topic and language: the user's turns about it, said in one session in this order (a line
# without a word of the topic goes on from the line before it: the field's `near` words), the turns
# that stay (said in another session: some share an incidental word with the topic), the command.
CASES = {
    "health_en": (
        [
            "The doctor said my blood pressure is high",
            "I've been on antidepressants since March",
            "the side effects make me so tired in the mornings",
        ],
        [
            "I'm sick of this weather",
            "I'm dying to see that film",
            "Any healthy recipes for a quick dinner?",
        ],
        "Forget what I told you about my health.",
    ),
    "health_zh": (
        ["我最近失眠很严重，医生给我开了药", "上周去医院做了体检", "检查结果下周才出来"],
        ["这件事真让我头疼", "你是不是吃错药了，哈哈", "周末想去看一场电影"],
        "把关于我身体的事都忘了",
    ),
    "money_en": (
        [
            "I'm drowning in credit card debt",
            "I had to borrow money from my brother to make rent",
            "the interest alone is killing me",
        ],
        [
            "The blender came with a money-back guarantee",
            "My car broke down on the highway",
            "I owe you one for the playlist",
        ],
        "forget everything I said about my money problems",
    ),
    "money_zh": (
        ["我欠了朋友两万块钱，还没还", "房贷每个月压力好大", "利息也越来越高"],
        ["钱塘江的潮水很壮观", "这个活动免费，不要钱", "明天要早起去健身房"],
        "把关于我经济状况的事都忘了",
    ),
    "love_en": (
        [
            "My girlfriend and I broke up last night",
            "I went on a first date with a guy from Tinder",
            "we met at a little wine bar downtown",
        ],
        [
            "The fossils are dating back to the Bronze Age",
            "Save the date for the book club on Friday",
            "My coworker Dana brought cake today",
        ],
        "forget everything I told you about my love life",
    ),
    "love_zh": (
        ["我和男朋友分手了，心里好难受", "周末去相亲了，感觉一般", "已读不回，不想理了"],
        ["面向对象编程好难学", "我哥们请我吃了顿火锅", "晚饭吃了番茄炒蛋"],
        "把关于我感情的事都忘了",
    ),
    "family_en": (
        [
            "My mom and I had a huge fight about Christmas",
            "my little brother is moving back in with our parents",
            "the argument went on for hours",
        ],
        [
            "Heading home now, the traffic is awful",
            "Dad jokes are the best kind of jokes",
            "The train was late again this morning",
        ],
        "forget what I said about my family",
    ),
    "family_zh": (
        ["我爸妈又催婚了，烦死了", "我妈说我太瘦了", "吵了一架，谁也不理谁"],
        ["回家路上好堵", "今天的家庭作业好多", "小姐姐推荐的奶茶很好喝", "我的妈呀，这雨太大了"],
        "把我家里的事都忘了",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forgetting_a_general_topic_takes_the_turns_about_it(setup: Setup, case: str) -> None:
    gone, kept, command = CASES[case]
    s = setup
    for text in gone:
        s.say(text, session="s1")
    for text in kept:
        s.say(text, session="s2")
    raw = s.db_bytes()
    assert all(g.encode() in raw for g in gone)  # the scan finds them before the forget

    s.say(command, session="s1")
    left = s.contents()
    assert not [g for g in gone if g in left], left  # the messages and the replies echoing them
    assert not [t for t in left if any(g in t for g in gone)], left
    assert all(k in left for k in kept), left
    raw = s.db_bytes()
    assert not [g for g in gone if g.encode() in raw]  # not in the file, the WAL or the shm either

    s.say("So what do you remember about me?", session="s1")
    shown = json.dumps(s.fake.chat_requests[-1]["messages"], ensure_ascii=False)
    assert not [g for g in gone if g in shown]


def test_the_facts_of_a_topic_go_with_it_and_only_those(setup: Setup) -> None:
    """A turn about the topic that says none of its words is found by the profile fact it gave: an
    allergy is health, a sister is family; a best friend is not family, a vegetarian diet not health."""
    s = setup
    lines = {
        ALLERGIES: ("Peanuts are a hard no for me", "peanuts"),
        DIET: ("I stopped eating meat two years ago", "vegetarian"),
    }
    people = {"Leah is visiting next week": "sister Leah", "Anna is coming along too": "best friend Anna"}
    for i, (key, (text, value)) in enumerate(lines.items()):
        s.say(text, session=f"a{i}")
        Profile(s.memory.store).set("u", key, value, source_turn_ids=[s.turn_id(text)])
    for i, (text, value) in enumerate(people.items()):
        s.say(text, session=f"b{i}")
        Profile(s.memory.store).set("u", PEOPLE, value, source_turn_ids=[s.turn_id(text)])

    s.say("forget what I told you about my health", session="c")
    s.say("forget what I said about my family", session="c")
    left = s.contents()
    assert "Peanuts are a hard no for me" not in left and "Leah is visiting next week" not in left
    assert "I stopped eating meat two years ago" in left and "Anna is coming along too" in left
    profile = Profile(s.memory.store).current("u")
    assert not profile.get(ALLERGIES) and profile.get(DIET)
    assert Profile(s.memory.store).values("u", PEOPLE) == ["best friend Anna"]


@pytest.mark.parametrize(
    ("topic", "label"),
    [
        ("health", "health"),
        ("my health", "health"),
        ("health stuff", "health"),
        ("mental health", "health"),
        ("medical history", "health"),
        ("身体", "health"),
        ("健康", "health"),
        ("健康状况", "health"),
        ("身体方面", "health"),
        ("病情", "health"),
        ("money", "money"),
        ("finances", "money"),
        ("money problems", "money"),
        ("钱", "money"),
        ("经济状况", "money"),
        ("借钱", "money"),
        ("love life", "love life"),
        ("dating", "love life"),
        ("relationship stuff", "love life"),
        ("感情", "love life"),
        ("感情问题", "love life"),
        ("family", "family"),
        ("family drama", "family"),
        ("家里", "family"),
        ("家人", "family"),
        ("家庭问题", "family"),
        ("家", "family"),
        ("工作上", "work"),
        ("感情上", "love life"),
        ("晚上", None),
        ("身上", None),
        ("job", "work"),
        ("work stuff", "work"),
        # Not a general topic: searched for by its own words.
        ("healthy recipes", None),
        ("healthy", None),
        ("health insurance", None),
        ("sick", None),
        ("毛病", None),
        ("经济", None),  # the economy as often as the user's money
        # A person, not a topic: the ex, the boyfriend, the parents keep the person path.
        ("ex", None),
        ("前任", None),
        ("boyfriend", None),
        ("parents", None),
        ("我妈", None),
    ],
)
def test_topic_field_names(topic: str, label: str | None) -> None:
    field = topic_field(topic)
    assert (field.label if field else None) == label


def test_a_name_names_one_topic() -> None:
    names = [n for f in TOPIC_FIELDS for n in f.names]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("label", "text", "about"),
    [
        ("health", "I'm so sick of this weather", False),
        ("health", "I've been sick all week", True),
        ("health", "Ill call you later", False),
        ("health", "retail therapy at the mall", False),
        ("health", "I'm a Cancer, so I feel everything", False),
        ("health", "你是不是吃错药了", False),
        ("health", "我怀孕了，还没告诉别人", True),
        ("money", "we broke up last year", False),
        ("money", "I'm so broke this month", True),
        ("money", "daylight savings time again", False),
        ("money", "I owe my sister 500 bucks", True),
        ("love life", "carbon dating is neat", False),
        ("love life", "I hooked up the new TV", False),
        ("love life", "he fell for it", False),
        ("love life", "我找了个对象", True),
        ("family", "家人们谁懂啊", False),
        ("family", "我哥们请我吃饭", False),
        ("family", "一位老奶奶在卖花", False),
        ("family", "我奶奶住院了", True),
        ("family", "my grandma is in town", True),
    ],
)
def test_field_words_are_the_topic_not_an_incidental_word(label: str, text: str, about: bool) -> None:
    field = next(f for f in TOPIC_FIELDS if f.label == label)
    assert bool(field.words.search(text)) is about


# "别记我工作的事了" / "我家里的事你别记了": 别记 / 不要记 / 不用记 with a topic, before or after it, is a
# topic forget; before, it was no command at all and nothing was deleted while the user believed it
# was. A one-character topic (钱, 家, 猫) is a whole word, not a substring: "把关于钱的事都忘了" took
# "钱塘江的潮水很壮观" and "不要钱", "把我家的事都忘了" took "回家路上好堵".
WORK_ZH = (
    ["我下周要去一家新公司面试", "老板今天又让我加班到十点"],
    ["周末想去爬山", "这本小说写得真好", "做了一个很奇怪的梦"],
)
EX_ZH = (
    ["我前男友昨天又给我发消息了", "前任送的东西我都扔了"],
    ["我男朋友今天给我做了饭", "前面的路口左转就到了"],
)
CAT_ZH = (
    ["我的猫昨天生病了", "猫又把杯子打翻了"],
    ["熊猫宝宝太可爱了", "这只猫头鹰好可爱"],
)
DONT_KEEP = [
    ("别记我工作的事了", WORK_ZH),
    ("别记我身体的事了", CASES["health_zh"][:2]),
    ("别再记着我前任的事了", EX_ZH),
    ("不要记我借钱的事", CASES["money_zh"][:2]),
    ("我家里的事你别记了", CASES["family_zh"][:2]),
    ("关于我感情的事别记了", CASES["love_zh"][:2]),
    ("不用记我工作上的事了", WORK_ZH),
    # One character: a general topic's field words (钱: not 钱塘江, not 不要钱; 家: not 回家, 家庭作业),
    # any other one a whole word of the segmentation (猫: not 熊猫, 猫头鹰).
    ("把关于钱的事都忘了", CASES["money_zh"][:2]),
    ("别记钱的事了", CASES["money_zh"][:2]),
    ("把我家的事都忘了", CASES["family_zh"][:2]),
    ("把关于猫的事都忘了", CAT_ZH),
    # Words that open the clause before the topic, and whose the topic is (我们公司, 咱家): the topic
    # read was "觉得前任", "们公司", or no command at all, and nothing was deleted.
    ("我觉得前任的事你就别记了", EX_ZH),
    ("其实前任的事情还是别记着了", EX_ZH),
    ("算了，工作的事还是别记了", WORK_ZH),
    ("把我们公司的事都忘掉吧", WORK_ZH),
    ("把咱家的事忘了", CASES["family_zh"][:2]),
]


@pytest.mark.parametrize(("command", "turns"), DONT_KEEP, ids=[c for c, _ in DONT_KEEP])
def test_dont_keep_a_topic_forgets_it(setup: Setup, command: str, turns: tuple[list[str], list[str]]) -> None:
    gone, kept = turns
    s = setup
    for text in gone:
        s.say(text, session="s1")
    for text in kept:
        s.say(text, session="s2")
    assert all(g.encode() in s.db_bytes() for g in gone)

    s.say(command, session="s1")
    left = s.contents()
    assert not [t for t in left if any(g in t for g in gone)], left
    assert all(k in left for k in kept), left
    assert command not in left  # a topic forget is not recorded itself
    raw = s.db_bytes()
    assert not [g for g in gone if g.encode() in raw]
    assert all(k.encode() in raw for k in kept)


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("别记我工作的事了", "工作"),
        ("别记我身体的事了", "身体"),
        ("别再记着我前任的事了", "前任"),
        ("不要记我借钱的事", "借钱"),
        ("我家里的事你别记了", "家里"),
        ("关于我感情的事别记了", "感情"),
        ("请不要再记着我前任的事情了", "前任"),
        ("你就别记住我工作那些事了", "工作"),
        ("不用记我家里那些事", "家里"),
        ("前任的事情就不用再记着了", "前任"),
        ("我们家的事你别记了吧", "家"),
        ("演唱会的事不用记了", "演唱会"),
    ],
)
def test_dont_keep_a_topic_is_a_topic_forget(text: str, topic: str) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == [("forget_topic", topic)]


# Whose the topic is, said before it: the user's household or group (我们家, 咱(们)家, 俺家, 我们公司) is
# the family or the job, not a topic "们家" cut from 我们; and what may open the clause before a topic
# named first: a discourse marker (算了, 其实, 好吧, 说真的, 以后) or the user's stance (我觉得, 我想了想,
# 我决定了), not part of the topic ("觉得工作").
@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("把我们家的事都忘了", "家"),
        ("把咱家的事忘了", "家"),
        ("把咱们家的事都删了吧", "家"),
        ("把俺家的事忘了吧", "家"),
        ("把我们公司的事都忘掉吧", "公司"),
        ("把咱们单位的事都删了", "单位"),
        ("把我和我前任的事都删了", "前任"),
        ("忘掉我们家的事吧", "家"),
        ("关于我们家的事都忘了吧", "家"),
        ("别记我们公司的事了", "公司"),
        ("咱家的事你别记了", "家"),
        ("我觉得工作的事你就别记了", "工作"),
        ("工作的事你就别记了", "工作"),
        ("算了，工作的事别记了", "工作"),
        ("算了工作的事别记了", "工作"),
        ("其实工作的事别记了", "工作"),
        ("我想了想，工作的事还是别记了", "工作"),
        ("好吧，前任的事就别记着了", "前任"),
        ("说真的，我家里的事你不用记", "家里"),
        ("以后工作的事就别记了", "工作"),
        ("我觉得你别记我工作的事了", "工作"),
        ("算了忘掉工作的事吧", "工作"),
        ("我决定了，把前任的事都忘了", "前任"),
        ("我觉得还是把我们家的事都忘了吧", "家"),
    ],
)
def test_whose_topic_and_the_words_before_it(text: str, topic: str) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == [("forget_topic", topic)]


def test_a_household_or_workplace_is_its_general_topic() -> None:
    assert [topic_field(t).label for t in ("家", "公司", "单位")] == ["family", "work", "work"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        "别记错了",
        "我工作的事你别记错了",
        "别记错我生日的事",
        "别记恨我",
        "工作的事别记恨我",
        "你别记仇",
        "别忘了记得吃药",
        "记得别迟到",
        # "Don't take it to heart": consolation, nothing to delete.
        "别记在心上",
        "工作的事别记在心上",
        "刚才那件事别记在心上",
        "不用记笔记",
        "我工作的事你别记了吗",  # a question
        "他的事你别记了",  # someone else's: no topic of the user's
        "她工作的事不用记了",
        "我的事你别记了",  # the user, not a topic (and no "delete everything")
        "那些事别记了",
        # someone else did the forgetting, or it is someone else's, or the two people's
        "我把我们家的事都忘了",
        "他把我们家的事都忘了",
        "我们把公司的事都忘了",
        "把他的事都忘了",
        "把她工作的事忘了",
        "忘掉她工作的事吧",
        "把我们俩的事都忘了",
        "把咱俩的事忘了吧",
        # an opening word or stance before what asks nothing or names no topic of the user's
        "我觉得他工作的事你别记了",
        "她觉得工作的事你别记了",
        "其实他的事你别记了",
        "我觉得工作的事你别记错了",
        "算了，工作的事别记在心上",
        "其实我的事你别记了",
        "我觉得那些事别记了",
        "我觉得工作的事挺烦的",
        "其实工作的事你还记得吗",
        "别忘了我们家的事",
        "不要忘掉我们公司的事",
    ],
)
def test_remember_phrases_that_ask_no_forget(text: str) -> None:
    assert detect(text) == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("刚才说的那件事别记了", "forget_last"),
        ("别记刚才的事了", "forget_last"),
        ("别记住我刚才说的", "forget_last"),
    ],
)
def test_dont_keep_the_last_message_stays_forget_last(text: str, kind: str) -> None:
    assert [c.kind for c in detect(text)] == [kind]


def test_a_one_character_topic_is_a_whole_word() -> None:
    cat = topic_pattern("猫")
    assert cat.search("我的猫昨天生病了") and not cat.search("熊猫宝宝太可爱了")
    money = topic_pattern("钱")  # the money field's words, not the character: see match_topic
    assert not money.search("钱塘江的潮水很壮观") and not money.search("这个活动免费，不要钱")
    assert topic_pattern("弟").search("我弟又开走了我的车")  # jieba's one word 我弟
    assert not topic_pattern("弟").search("徒弟出师了")
    assert topic_pattern("前任").search("我前男友昨天打电话了")
