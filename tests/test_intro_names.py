"""The user's name, however they introduce themselves, in Chinese and English: the forms that name the
user (and what they are then called), and the ones that only look like an introduction ("我是医生",
"我是新来的", "I'm tired", "This is amazing"). Then, through the HTTP service, the name a first
message gives is still in the model's system prompt many turns and days later."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memsched.commands import detect, zh_full_name
from memsched.config import Config
from memsched.profile import NAME, OCCUPATION, PARTNER_NAME, PREFERRED_NAME
from memsched.profile_extract import extract
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer


def _names(text: str) -> tuple[set[str], set[str]]:
    """(the names, the preferred names) a message gives: the facts `extract` reads and the renames
    `detect` finds (applied as the preferred name before the reply). A name is never also read as
    the user's occupation ("我是王海生" was occupation 王海生)."""
    found = extract(text)
    names_as_jobs = {ob.value for ob in found if ob.key == OCCUPATION} & {
        ob.value for ob in found if ob.key == NAME
    }
    assert not names_as_jobs, found
    names = {ob.value for ob in found if ob.key == NAME and ob.op == "set"}
    preferred = {ob.value for ob in found if ob.key == PREFERRED_NAME and ob.op == "set"}
    preferred |= {c.value for c in detect(text) if c.kind == "rename" and c.value}
    return names, preferred


# (what the user says, the name, what they are called or None)
INTRODUCTIONS = [
    # A name ending in a character that also ends occupations (学生, 医生, 画家, 歌手, 员工): the whole
    # token is a surname and a given name, no word before the ending.
    ("我是王海生，朋友们叫我海生", "王海生", "海生"),
    ("我是王海生", "王海生", None),
    ("我是王海生。今天第一次来", "王海生", None),
    ("你好，我是王海生", "王海生", None),
    ("我叫王海生", "王海生", None),
    ("我是李建生，大家都叫我建生", "李建生", "建生"),
    ("嗨，我是李建生", "李建生", None),
    ("我是陈一手", "陈一手", None),
    ("我是张思远", "张思远", None),
    ("我是刘家明", "刘家明", None),
    ("我是李华，很高兴认识你", "李华", None),
    ("本人张伟", "张伟", None),
    ("我的名字是陈静", "陈静", None),
    ("我姓王，叫海生", "王海生", None),
    ("我姓李，叫李明", "李明", None),
    ("我姓王，名海生", "王海生", None),
    ("我姓欧阳，单名一个娜", "欧阳娜", None),
    ("我是欧阳娜娜", "欧阳娜娜", None),
    ("我叫李明，你可以叫我小明", "李明", "小明"),
    # A surname and a title: the user is named as they introduce themselves.
    ("我是王医生", "王医生", None),
    ("我是李老师，教数学的", "李老师", None),
    ("I'm Sam", "Sam", None),
    ("Hi, I'm Sam", "Sam", None),
    ("I'm Samuel but everyone calls me Sam", "Samuel", "Sam"),
    ("Name's Jo", "Jo", None),
    ("It's Priya here", "Priya", None),
    ("Hey there, it's Priya", "Priya", None),
    ("This is Tom", "Tom", None),
    ("This is Tom speaking", "Tom", None),
    ("My name is Ana María", "Ana María", None),
    ("I'm José", "José", None),
    ("I'm Dr. Patel", "Dr. Patel", None),
    ("I'm Sam and I'm 30", "Sam", None),
    ("I'm Sam, 28, from Boston", "Sam", None),
    ("I'm Mike, a nurse from Ohio", "Mike", None),
    # After a discourse marker that turns to something new, in the middle of the message too: the
    # marker opens the clause as a sentence's start does.
    ("对了，我是王海生", "王海生", None),
    ("哦对了，我叫李明", "李明", None),
    ("忘了说，我是张伟", "张伟", None),
    ("今天好累。对了，我是周明杰", "周明杰", None),
    ("顺便说一下，我是李华", "李华", None),
    ("先自我介绍一下，我是陈静", "陈静", None),
    ("嗯对了，我是王海生，朋友们叫我海生", "王海生", "海生"),
    ("忘了说，我是王医生", "王医生", None),
    ("by the way, I'm Priya", "Priya", None),
    ("Oh and I'm Sam by the way", "Sam", None),
    ("oh, before I forget, I'm Dana", "Dana", None),
    ("Anyway, I'm Tom, nice to meet you", "Tom", None),
    ("I'm Sam btw", "Sam", None),
    # Full names jieba cuts as words: the surname read as another word (张, 刘, 何), or joined to 家 as
    # "the Wang family".
    ("我是王家明", "王家明", None),
    ("对了，我是周家伟", "周家伟", None),
    ("我是张俊杰", "张俊杰", None),
    ("我是刘建平", "刘建平", None),
]


@pytest.mark.parametrize(("text", "name", "called"), INTRODUCTIONS)
def test_an_introduction_names_the_user(text: str, name: str, called: str | None) -> None:
    names, preferred = _names(text)
    assert names == {name}
    if called is not None:
        assert called in preferred


@pytest.mark.parametrize(
    ("text", "called"),
    [("you can call me T", "T"), ("叫我阿杰就行", "阿杰"), ("大家都叫我老张", "老张")],
)
def test_what_to_call_the_user_without_a_name(text: str, called: str) -> None:
    names, preferred = _names(text)
    assert names == set() and preferred == {called}


@pytest.mark.parametrize(
    "text",
    [
        # occupations, roles, places: a role ending on a word ("高中" + 生), or no surname at all
        "我是学生",
        "我是医生",
        "我是老师",
        "我是高中生",
        "我是留学生",
        "我是毕业生",
        "我是程序员",
        "我是钢琴家",
        "我是史学家",
        "我是白领",
        "我是文员",
        "我是杭州人",
        "我是江南人",
        "我是一名医生",
        # states, stances, questions, words with a surname's first character
        "我是新来的",
        "我是认真的",
        "我是认真的，别闹",
        "我是说你最近太忙了",
        "我是不是太敏感了",
        "我是王海生吗",
        "他说我是王海生",
        "我是王海生的妈妈",
        "我是高手",
        "我是单身",
        "我是万能的",
        "我是明星",
        "我是程序猿",
        "我姓王",
        "I'm tired",
        "I'm Brazilian",
        "I'm new here",
        "I'm Christian",
        "I'm Christian and I pray every day",
        "I'm single",
        "I'm okay",
        "I'm Sorry",
        "I'm Dr.",
        "This is amazing",
        "This is Tom, my brother",
        "It's Monday here",
        "It's raining here",
        "It's Christmas here",
        "Same here!",
        "Frankly speaking, no",
        "It's Sam's birthday",
        "i'm sam and you?",
        # a discourse marker before 我是 / "I'm" and no name after it
        "对了，我是学生",
        "对了，我是说明天",
        "对了，我是明天到",
        "忘了说，我是新来的",
        "顺便说一下，我是认真的",
        "其实我是明星",
        "对了，我是王海生吗",
        "对了，他是王海生",
        "我是王家的人",
        "我是王家人",
        "对了，我是王家村的",
        "我是钱不够",
        "I'm by the way tired",
        "By the way, I'm Tired.",
        "Anyway, I'm Done.",
        "So I'm Catholic.",
        "oh and i'm sam by the way",
    ],
)
def test_what_only_looks_like_an_introduction_names_no_one(text: str) -> None:
    assert _names(text) == (set(), set())


@pytest.mark.parametrize(
    ("text", "occupation"),
    [("我是高中生", "高中生"), ("我是程序员", "程序员"), ("我是一名医生", "医生"), ("我是钢琴家", "钢琴家")],
)
def test_an_occupation_is_still_one(text: str, occupation: str) -> None:
    assert [(ob.key, ob.value) for ob in extract(text)] == [(OCCUPATION, occupation)]


@pytest.mark.parametrize(
    ("name", "full"),
    [
        ("王海生", True),
        ("李建生", True),
        ("周明杰", True),
        ("欧阳娜娜", True),
        ("高中生", False),  # 高中 is a word: a high-school student
        ("王医生", False),  # a title, not a full name
        ("杭州人", False),
        # jieba reads 王家 (the Wang family) 明, 张 (a measure word) 俊杰: still a surname and a given name
        ("王家明", True),
        ("周家伟", True),
        ("张俊杰", True),
        ("刘建平", True),
        # a surname's character before a verb, an adverb or a number, or starting another word; a
        # village named after a family; the family's people
        ("钱不够", False),
        ("马不停", False),
        ("钱多多", False),
        ("程序猿", False),
        ("周一到", False),
        ("马上到", False),
        ("王家村", False),
        ("李家庄", False),
        ("王家人", False),
        ("王家", False),
    ],
)
def test_a_full_chinese_name_may_end_as_a_role_does(name: str, full: bool) -> None:
    assert zh_full_name(name) is full


def test_loading_the_keyword_tables_leaves_the_tag_table_in_place() -> None:
    """The server loads the keyword tables in the background at start: that reloaded jieba's tag
    table, and a part-of-speech cut meanwhile read no tag at all ("王海生" was no person's name)."""
    from jieba import posseg

    from memsched import keywords
    from memsched.text.postag import lcut

    lcut("王海生")
    table = posseg.dt.word_tag_tab
    keywords._jieba_tags.cache_clear()
    keywords.warm_up()
    assert posseg.dt.word_tag_tab is table and table.get("王") == "nr"


# A word after "I'm" / "我是" that is a word before it is a name: a nationality, a state, a nickname
# for what the user is ("I'm Portuguese.", "I'm Lost.", 我是马大哈 were stored as the name, 马大 with
# 哈 read as a particle), while a name that is also a word ("Grace", "Hope", "Will") is the name when
# the sentence clearly introduces the user (a greeting, "nice to meet you", an age, what they do).
WORDS_AS_NAMES = [
    ("I'm Grace, nice to meet you", "Grace"),
    ("Hi, I'm Hope!", "Hope"),
    ("Hello, I'm Faith", "Faith"),
    ("Hey, I'm Grace!", "Grace"),
    ("Hey, I'm Will, nice to meet you", "Will"),
    ("I'm Will, 28", "Will"),
    ("I'm Sky, 24, from Leeds", "Sky"),
    ("Hi, I'm Sky from Leeds", "Sky"),
    ("I'm Grace from Denver", "Grace"),
    ("Hi, I'm Hope.", "Hope"),
    ("I'm Sky, a student from Leeds", "Sky"),
    ("I'm Faith, a nurse from Ohio", "Faith"),
    ("I'm Joy and I'm 25", "Joy"),
    ("I'm Hope, pleased to meet you", "Hope"),
    ("Hi there, I'm Summer", "Summer"),
    ("Hey there, it's Hope", "Hope"),
    ("Hello! I'm Rose", "Rose"),
    # a word CC-CEDICT also gives as a person's name, said alone
    ("I'm Rose.", "Rose"),
    ("I'm Mark.", "Mark"),
    ("I'm Frank, nice to meet you", "Frank"),
    # a given name and a surname
    ("I'm Grace Kelly", "Grace Kelly"),
    # names that are no English word, however they are said
    ("I'm Dylan.", "Dylan"),
    ("Btw I'm Priya.", "Priya"),
    ("I'm Ryan btw", "Ryan"),
    ("I'm Jordan", "Jordan"),
    # Chinese: a surname and a given name, a particle after it still a particle
    ("我是马丽", "马丽"),
    ("我是马大卫", "马大卫"),
    ("嗨，我是马丽", "马丽"),
    ("大家好，我是马丽", "马丽"),
    ("我是马丽呀", "马丽"),
    ("我是马大卫呀", "马大卫"),
    ("对了，我是马大卫", "马大卫"),
    ("我是李明哈", "李明"),
    ("我是王海生呀", "王海生"),
    # a word-name after a greeting, ending its clause, said as no state is ("to be lost" is one)
    ("Hey, I'm Hunter!", "Hunter"),
    ("Hi, I'm Dawn", "Dawn"),
    ("Hello, I'm Autumn.", "Autumn"),
    ("Hi there, I'm Storm", "Storm"),
    # a people that is also a person's first name (Norman Bethune): the name; a nation's demonym is not
    ("I'm Norman", "Norman"),
    ("Hi, I'm Norman", "Norman"),
    ("I'm Norman, nice to meet you", "Norman"),
]


@pytest.mark.parametrize(("text", "name"), WORDS_AS_NAMES)
def test_a_name_that_is_also_a_word_names_the_user_when_introduced(text: str, name: str) -> None:
    assert _names(text)[0] == {name}


WHAT_THE_USER_IS = [
    # nationalities, peoples, languages: never a name, whatever surrounds them
    "I'm Portuguese.",
    "Btw I'm Portuguese.",
    "I'm Portuguese, nice to meet you",
    "Hi, I'm Portuguese",
    "I'm Kenyan.",
    "Hi, I'm Israeli",
    "I'm Pakistani.",
    "I'm Nepali.",
    "I'm Swiss.",
    "I'm Finnish.",
    "I'm Dutch.",
    "I'm Burmese.",
    # states: a participle or an adjective by its ending never is; another common word not said
    # alone
    "I'm Lost.",
    "I'm Hungry.",
    "I'm Exhausted.",
    "Hi, I'm Exhausted",
    "I'm Starving!",
    "I'm Sick.",
    "I'm Stuck.",
    "I'm Ready.",
    "I'm Free.",
    "I'm Busy.",
    "Anyway, I'm Lonely.",
    # after a greeting a name ends its clause; a state goes on
    "Hi, I'm Happy today",
    "Hey, I'm Hungry lol",
    "Hi, I'm Tired from work",
    "Hello, I'm Bored out of my mind",
    "So I'm Pregnant.",
    "I'm Retired.",
    "嗨，我是Portuguese",
    # Chinese: a word for what the user is, even one a surname starts (马大哈, 马后炮, 高富帅)
    "我是马大哈",
    "我是马大哈呀",
    "我是马大哈哈",
    "嗨，我是马大哈！",
    "对了，我是马大哈",
    "我是吃货",
    "其实我是吃货",
    "我是夜猫子",
    "我是马后炮",
    "我是高富帅",
    "我是路痴",
    "我是万人迷",
    # a state after a greeting, ending its clause: a word CC-CEDICT says as one ("to be lost",
    # "completely broke", "to feel sick"), whatever its ending
    "Hi, I'm Lost",
    "Hey, I'm Lost!",
    "Hi, I'm Lost.",
    "I'm Broke.",
    "I'm Broke",
    "Hi, I'm Broke",
    "Hey, I'm Stuck!",
    "Hello, I'm Sick.",
    "Hi, I'm Angry",
    "Hey, I'm Drunk lol",
    "Hi there, I'm Scared",
    # an irregular demonym (Norway: "Norwegian"), a country's regular one
    "I'm Norwegian",
    "Hi, I'm Norwegian",
    "I'm Swedish.",
    "I'm Cuban",
    # slang for what the user is, glossed as an epithet ("Ms Perfect"), with or without a greeting
    "我是白富美",
    "嗨，我是白富美",
    "大家好，我是白富美呀",
    "对了，我是白富美",
    "大家好，我是夜猫子",
]


@pytest.mark.parametrize("text", WHAT_THE_USER_IS)
def test_what_the_user_is_is_no_name(text: str) -> None:
    assert _names(text)[0] == set()


def test_a_nationality_before_what_others_call_the_user_is_no_name() -> None:
    """ "I'm Portuguese, but everyone calls me Jo": Jo is what the user is called, Portuguese no name."""
    assert _names("I'm Portuguese, but everyone calls me Jo") == (set(), {"Jo"})


@pytest.mark.parametrize(
    ("text", "called"), [("叫我哈哈", "哈哈"), ("以后叫我可乐吧", "可乐"), ("叫我小李吧", "小李")]
)
def test_a_particle_is_one_unless_a_word_runs_through_it(text: str, called: str) -> None:
    assert _names(text)[1] == {called}


@pytest.mark.parametrize(
    ("text", "partner"),
    [
        ("我老公叫马大哈", "马大哈"),
        ("我男朋友叫马大哈呢", "马大哈"),
        ("我老公叫马大哈哈", "马大哈"),
        ("我老公叫李明哈", "李明"),
        ("我女朋友叫小美呢", "小美"),
        ("我老婆叫王芳啦", "王芳"),
        ("我男朋友叫可乐吧", "可乐"),
        ("我老公叫哈利", "哈利"),
    ],
)
def test_a_partners_name_ends_before_a_particle_unless_a_word_runs_through_it(
    text: str, partner: str
) -> None:
    """ "我老公叫马大哈" was 马大 once 哈 ended a name, and "我老公叫李明哈" was 李明哈 before: the partner's
    name ends as the user's own does, at a particle that no word CC-CEDICT knows runs through."""
    assert [ob.value for ob in extract(text) if ob.key == PARTNER_NAME] == [partner]


# -- through the HTTP service ---------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(base: str, user: str, text: str, at: datetime, session: str) -> None:
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": user,
            "metadata": {"session_id": session, "timestamp": at.isoformat()},
            "messages": [{"role": "system", "content": "You are Xiaoyu."}, {"role": "user", "content": text}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text


_SMALL_TALK = {
    "zh": ["今天好累啊", "晚饭吃了面条", "下雨了，不想出门", "最近在看一部剧", "周末想去爬山", "睡不着"],
    "en": [
        "long day today",
        "had pasta for dinner",
        "it's raining again",
        "watching a new show",
        "can't sleep",
    ],
}


@pytest.mark.parametrize("intro", ["I'm Portuguese.", "我是马大哈", "Btw I'm Lost."])
def test_http_what_the_user_is_is_never_their_name(server: str, fake: FakeOpenAI, intro: str) -> None:
    """ "I'm Portuguese." was stored as the name, and the model was told to call the user Portuguese."""
    day0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    _chat(server, "u", intro, day0, "s0")
    _chat(server, "u", "do you remember me?", day0 + timedelta(days=1), "s1")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert not re.search(r"^- (?:name|preferred name)\b", system, re.M), system


def _system_prompt_100_days_on(server: str, fake: FakeOpenAI, lang: str, intro: str, small_talk: int) -> str:
    """The system prompt of a turn 100 days after `intro`, with `small_talk` turns over days between."""
    day0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    _chat(server, "u", intro, day0, "s0")
    talk = _SMALL_TALK[lang]
    for i in range(small_talk):
        _chat(
            server, "u", talk[i % len(talk)], day0 + timedelta(days=1 + i // 3, hours=i % 3), f"s{1 + i // 3}"
        )
    _chat(
        server,
        "u",
        "还记得我吗？" if lang == "zh" else "do you remember me?",
        day0 + timedelta(days=100),
        "s99",
    )
    return str(fake.chat_requests[-1]["messages"][0]["content"])


@pytest.mark.parametrize(
    ("lang", "intro", "name", "called"),
    [
        ("zh", "我是王海生，朋友们叫我海生", "王海生", "海生"),
        ("zh", "我姓王，叫海生。", "王海生", None),
        ("en", "I'm Sam, 28, from Boston", "Sam", None),
        ("en", "Hey there, it's Priya", "Priya", None),
        # A name after a discourse marker, and one jieba cuts as words (王家 "the Wang family" 明): no
        # name was stored, and the user was a stranger 100 days later.
        ("zh", "对了，我是王海生", "王海生", None),
        ("zh", "我是王家明", "王家明", None),
        ("en", "Oh and I'm Sam by the way", "Sam", None),
        # a people that is also a first name: Norman was read as a demonym, and no name was kept
        ("en", "Hi, I'm Norman", "Norman", None),
    ],
)
def test_http_the_introduced_name_is_shown_many_turns_later(
    server: str, fake: FakeOpenAI, lang: str, intro: str, name: str, called: str | None
) -> None:
    """The name a first message gives reaches the system prompt every turn after, across sessions and
    days (a name taken for an occupation, "王海生", or an introduction not read, was never there)."""
    system = _system_prompt_100_days_on(server, fake, lang, intro, small_talk=24)
    assert re.search(rf"^- name: {re.escape(name)}(?:$| \()", system, re.M), system
    if called is not None:
        assert re.search(rf"^- preferred name \(call the user this\): {called}(?:$| \()", system, re.M), (
            system
        )


@pytest.mark.parametrize(
    ("lang", "intro"), [("en", "Hi, I'm Lost"), ("en", "Hey, I'm Broke!"), ("zh", "嗨，我是白富美")]
)
def test_http_a_state_after_a_greeting_is_no_name_many_turns_later(
    server: str, fake: FakeOpenAI, lang: str, intro: str
) -> None:
    """ "Hi, I'm Lost" was stored as the name (a greeting before a word that ends its clause read as an
    introduction), and 100 days later the model was still told to call the user Lost."""
    system = _system_prompt_100_days_on(server, fake, lang, intro, small_talk=9)
    assert not re.search(r"^- (?:name|preferred name)\b", system, re.M), system
    said = intro.split()[-1].strip("!") if lang == "en" else "白富美"
    assert not re.search(rf"name[^\n]*{said}", system), system
