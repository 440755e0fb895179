"""Profile facts from what the user says: bilingual rule patterns (always, microseconds, applied with
the turn) and an LLM JSON extraction (a P2 job per page, when an LLM is configured).

Rules are conservative, like the commands in `commands.py`: a statement at the start of a clause,
never a question ("我对花生过敏" is a fact, "你对花生过敏吗？" is not), values cut at the clause's
end (punctuation, a conjunction, a relative clause, "with my …", "跟我…", "而且…": "I'm allergic to
peanuts and my sister is too" -> peanuts) and checked against stop lists (pronouns, "that", "it"). For
a key that holds several values (likes, dislikes, allergies) a list is one fact per item ("allergic to
penicillin, peanuts and latex", "我对芒果和花生过敏"), as long as each further item is a short noun
phrase ("I love hiking and my sister does too" -> hiking). A missed fact costs little (the turn is
still recalled by search); a false one would be shown on every turn.

| key | 中文 | English |
|---|---|---|
| name | 我叫X, 我的名字是X (via `commands.detect`) | my name is X, I'm Sarah(, by the way), name's Jack |
| preferred_name | 叫我X, 你可以叫我X, 别叫我X了(，…，还是叫我Y), 我更喜欢别人叫我X (a P1 command in `commands.py`) | call me X, my friends call me X, you can too, stop calling me X(, I prefer Y), I'd rather you call me X, I prefer X (a user with a known name) |
| birthday | 我的生日是X, 我是X出生的 (三月三号 too) | my birthday is / 's on X, I was born on X (1990-03-03, 3/3/1990 too) |
| location | 我住在X, 我(们)(上个月/刚)搬到了X, 搬来/搬家到X, 我在X生活; for a known place: 我现在在X, 我(现在)住X, 我在X工作 | I/we live in X, I/we (just) moved/relocated to X, I'm based in X, I'm living in X, I'm (now) in X (now/these days) for a known place |
| hometown | 我是X人, 我老家是X的, 我来自X, 我是在X长大的 (a known place) | I'm (originally) from X, I grew up in X, I was born in X (capitalised, no department) |
| timezone | 我在东八区, 我这边是北京时间, 我这边是CST | I'm on Pacific time, my timezone is PST, I'm in UTC+8, my time zone is Europe/Berlin |
| occupation | 我是一名X, 我的工作是X, 我是做X的, 我在一家游戏公司做策划 | I work as a X, my job is X, I'm a X by profession, I'm a nurse (at …), I became a X, a new job as X |
| partner_name | 我男朋友/老婆/对象…叫X | my boyfriend/wife/partner… is called X, my wife is Anna, my girlfriend Emma, I'm married to X |
| pets | 我(家)的猫叫X, 我养了一只狗, 我养了一只柯基叫豆包, 我有一只猫(叫X) | my/our dog is called X, our cat Miso, my cat is Miso (not a breed), Miso is my cat, I have a cat (called X), I have two cats, Mochi and Tofu |
| likes | 我(很/最…)喜欢X, 我爱吃X, 我最喜欢的Y是X, X我(很)喜欢 | I love/like/enjoy/adore X, my favorite Y is X, I'm a fan of X, I'm into X |
| dislikes | 我讨厌X, 我不喜欢X, 我受不了X, X我受不了 | I hate/dislike X, I can't stand X, I don't like X, I'm not into X |
| allergies | 我(也)对X过敏, 我X过敏, 我不能吃X，(会)过敏 | I'm (also) allergic to X, I have a X allergy, I can't eat X, I'm allergic |
| sleep_time | 我一般11点睡, 我平时晚上十一点半睡觉, 我通常凌晨一点才睡 | I usually go to bed at 11pm / around midnight |

A supposition states nothing: 如果/要是/假如/if/suppose/wish before the statement in its clause, or
的话 after it ("如果我叫小王的话", "if I'm allergic to nuts, …").

A like retracts the same dislike and a dislike the same like ("I don't like jazz any more"); a negated
allergy ("我其实对芒果不过敏", "I'm not allergic to walnuts after all") retracts that allergy.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from memsched.commands import detect, named, stated_name
from memsched.errors import LLMError
from memsched.jobs.tasks import TaskContext, task
from memsched.model import Turn
from memsched.profile import (
    ALLERGIES,
    BIRTHDAY,
    DIET,
    DISLIKES,
    HOMETOWN,
    KEYS,
    LIKES,
    LOCATION,
    MULTI_KEYS,
    NAME,
    OCCUPATION,
    PARTNER_NAME,
    PETS,
    PREFERRED_NAME,
    SLEEP_TIME,
    TIMEZONE,
    Profile,
)
from memsched.store import Tx
from memsched.text.places import is_place_en, is_place_zh
from memsched.text.timeexpr import spans

if TYPE_CHECKING:
    from memsched.jobs.queue import Job
    from memsched.llm.client import ChatClient

log = logging.getLogger("memsched.profile")

Op = Literal["set", "retract"]


@dataclass(frozen=True, slots=True)
class Observation:
    """One fact a message states: `op` "set" (or "retract") `key` = `value`, found by `rule`."""

    key: str
    value: str
    op: Op = "set"
    rule: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "op": self.op, "rule": self.rule}


# -- values ----------------------------------------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_STOP = r"，,。.!！?？；;、~～\n"
# A CJK value runs to the end of its clause or to a sentence particle.
# Words that start a new clause or a second thing ("我住在杭州跟我爸妈一起", "我喜欢爬山而且…"). A bare
# 和/跟 joins two values ("猫和狗") and is kept; 和我/跟我 ("with me …") starts a clause.
_ZH_CLAUSE = "的时候|因为|但是|可是|所以|而且|并且|还有|不过|然后|虽然|如果|和我|跟我|与我|陪我|一起"
_ZH_V = rf"(?P<v>[^{_STOP}\s]{{1,16}}?)(?=$|[{_STOP}\s]|了|啊|呀|吧|哦|呢|哈|嘛|{_ZH_CLAUSE})"
_ZH_NAME = rf"(?P<v>[{_CJK}·]{{1,6}}?|[A-Za-z][A-Za-z'\-]*(?: [A-Za-z][A-Za-z'\-]*)?)(?=$|[{_STOP}\s]|吧|啊|呀|哦|了)"
# An English value runs to the end of its clause: punctuation, a conjunction, a relative or
# subordinate clause ("which is cold", "while …"), a companion phrase ("with my wife"), a place or
# time phrase ("at the city hospital", "in the spring") or a time word.
_EN_CLAUSE = (
    r"and|but|or|because|so|since|though|although|when|whenever|while|if|unless|until|whereas|who|which|"
    r"where|that's|please|too|as well|with (?:my|our|his|her|their)|at (?:the|a|my|our)|in the|(?-i:in (?=[A-Z]))|"
    r"last|next|yesterday|today|tonight|this|ago|anymore|any more|now|again|recently|lately|"
    r"by the way|btw|to be honest|tbh|honestly|lol|haha|after all|these days|nowadays|at the moment|for now|"
    r"for good|originally"
)
_EN_V = rf"(?P<v>[^.,!?;:\n]{{1,60}}?)(?=$|[.,!?;:\n]|\s+(?:{_EN_CLAUSE})\b)"
# A value ending at a fixed word ("我对花生过敏"): the clause may not end there.
_ZH_W = rf"(?P<v>[^{_STOP}\s](?:[^{_STOP}\s]|、){{0,15}}?)"
_EN_DATE = (
    r"(?P<v>\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}|(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:January|February|March|April|"
    r"May|June|July|August|September|October|November|December)(?:,? \d{4})?)"
)
_EN_NAME = r"(?P<v>[A-Z][a-z'\-]+(?: [A-Z][a-z'\-]+)?)"
_EN_CAP_NAME = (
    r"(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|"
    r"June|July|August|September|October|November|December)\b)"
    r"(?-i:(?P<v>[A-Z][a-z'\-]+(?: [A-Z][a-z'\-]+)?))(?![A-Za-z'\-])"
)
_ZH_HEAD = r"(?:^|(?<=[，,。.!！?？；;~～\s]))"
# A place name in English: capitalised words ("New York", "Hong Kong"), case-sensitive, not one's
# team ("I'm from Google's team").
_EN_PLACE = (
    r"(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|"
    r"June|July|August|September|October|November|December)\b)"
    r"(?-i:(?P<v>[A-Z][A-Za-z'\-]*(?:[ \-][A-Z][A-Za-z'\-]*){0,2}))(?![A-Za-z'\-]|'s)"
)
_ZH_ADV = r"(?:真的|其实|一直|特别|非常|超级|超|很|最|好|挺|还挺|也|都|还是|比较)*"
_EN_ADV = (
    r"(?:really |absolutely |just |totally |kinda |kind of |also |still |truly |so |recently |finally |now )*"
)
# Adverbs of time and manner between 我 and the verb of a location or allergy ("我刚搬到杭州", "我也对
# 花生过敏"); relative time words ("上个月") are taken out of the text before the rules run.
_ZH_WHEN = (
    r"(?:其实|现在|目前|已经|刚刚?|才|就|终于|也|又|还|一直|从小|都|最近|前阵子|前段时间|不久前|这两天)*"
)

_ZH_NOT_VALUES = frozenset(
    "你 你们 他 她 它 他们 她们 它们 这 那 这个 那个 这样 那样 这些 那些 什么 吗 自己 我 有点 有些 好像 会 一点 上 过 是 在".split()  # noqa: SIM905 - a word list reads better as text
)
_EN_NOT_VALUES = frozenset(
    """you it that this them him her these those what which me us so much one ones doing being here there
    the a an my some to
    yourself yours mine his hers ours theirs everything anything something nothing talking chatting""".split()  # noqa: SIM905 - a word list reads better as text
)
# Capitalised words that follow "Hi, I'm" without being a name.
_EN_NOT_GREETING_NAMES = frozenset(
    """back home here fine good great okay ok sorry tired bored new free done ready english british
    american chinese japanese korean french german spanish italian indian canadian australian irish
    scottish welsh mexican russian brazilian dutch swedish vietnamese thai filipino muslim christian
    catholic jewish buddhist hindu vegan vegetarian single married""".split()  # noqa: SIM905 - a word list reads better as text
)
_PET_KINDS_ZH = "猫咪|小猫|猫|狗狗|小狗|狗|犬|兔子|仓鼠|鹦鹉|乌龟|金鱼|龙猫"
_PET_KINDS_EN = "cat|kitten|dog|puppy|rabbit|bunny|hamster|parrot|turtle|goldfish|guinea pig"
_ZH_PARTNER = "男朋友|女朋友|男友|女友|老公|老婆|丈夫|妻子|太太|先生|对象|爱人|未婚夫|未婚妻"
_EN_PARTNER = "boyfriend|girlfriend|husband|wife|partner|fiancée|fiancee|fiance|fiancé|spouse"


def _clean(value: str, *, english: bool) -> str | None:
    v = value.strip().strip("\"“”'‘’「」《》").strip()
    if english:
        v = re.sub(r"^(?:the|a|an|my|some|to)\s+", "", v, flags=re.I).strip()
        words = v.split()
        if not words or len(words) > 5 or v.lower() in _EN_NOT_VALUES or words[0].lower() in _EN_NOT_VALUES:
            return None
    else:
        v = re.sub(r"^(?:一个|一只|一条|一名|一位|一些)", "", v)
        if not v or v in _ZH_NOT_VALUES or v[0] in "你他她它这那我的":
            return None
    return v or None


# -- rules ---------------------------------------------------------------------------------------

# (rule, key, pattern, english)
_RULES: list[tuple[str, str, re.Pattern[str], bool]] = [
    # Diet first, so that "我是素食主义者" is not read as an occupation: what the user eats or avoids by
    # habit or belief ("我吃素", "我不吃猪肉和牛肉"); a one-off ("我今天不吃了") names nothing: the time
    # word is taken out and nothing but 了 is left.
    (
        "zh_vegetarian",
        DIET,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:是(?:一个|一名|个)?)?(?P<v>吃全素|吃素|纯素食?主义者|纯素食者|素食主义者|素食者)"
        ),
        False,
    ),
    # "I can't eat peanuts, I'm allergic", "我不能吃花生，会过敏": what cannot be eaten for an allergy is
    # an allergy, not a diet (before the diet rules, which would take "can't eat X" as "no X").
    (
        "zh_cant_eat_allergic",
        ALLERGIES,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:不能|不可以|没法|不敢)吃{_ZH_V}"
            r"(?=[，,。\s]*(?:因为)?(?:我)?(?:对它|对这个)?(?:会|有点|很|严重)?过敏)"
        ),
        False,
    ),
    ("zh_dont_eat", DIET, re.compile(rf"{_ZH_HEAD}我{_ZH_WHEN}{_ZH_ADV}(?:从来)?不吃{_ZH_V}"), False),
    (
        "en_vegetarian",
        DIET,
        re.compile(
            rf"\bI(?:'m| am|'ve been| have been) {_EN_ADV}(?:currently |strictly |fully |mostly )?(?:an? )?"
            r"(?P<v>vegetarian|vegan|pescatarian|pescetarian|plant-based)\b",
            re.I,
        ),
        True,
    ),
    (
        "en_went_vegetarian",
        DIET,
        re.compile(
            r"\bI (?:went|turned|became|have gone|'ve gone) (?P<v>vegetarian|vegan|pescatarian|pescetarian|plant-based)\b",
            re.I,
        ),
        True,
    ),
    (
        "en_on_a_diet",
        DIET,
        re.compile(
            r"\bI(?:'m| am) (?:now |currently |still )?on an? (?P<v>[a-z][a-z\- ]{1,20}?) diet\b", re.I
        ),
        True,
    ),
    (
        "en_keep_kosher",
        DIET,
        re.compile(r"\bI (?:keep|eat only|only eat|eat) (?P<v>kosher|halal)\b", re.I),
        True,
    ),
    (
        "en_cant_eat_allergic",
        ALLERGIES,
        re.compile(
            rf"\bI {_EN_ADV}(?:can't|cannot|can not|mustn't|shouldn't) eat {_EN_V}"
            r"(?=[^.!?\n]{0,40}?\bI(?:'m| am) (?:very |severely |deathly |highly |so )?allergic\b)",
            re.I,
        ),
        True,
    ),
    (
        "en_dont_eat",
        DIET,
        re.compile(rf"\bI {_EN_ADV}(?:don't|do not|never|can't|cannot|no longer) eat {_EN_V}", re.I),
        True,
    ),
    ("zh_birthday", BIRTHDAY, re.compile(rf"我的?生日(?:是|在)?{_ZH_V}"), False),
    (
        "zh_born_on",
        BIRTHDAY,
        re.compile(
            r"我(?:是)?(?P<v>(?:(?:\d{4}|[零〇一二三四五六七八九]{4})年)?(?:\d{1,2}|[一二三四五六七八九十]{1,3})月"
            r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})[日号])(?:出生|生)的?"
        ),
        False,
    ),
    # Where the user comes from (`hometown`), kept apart from where they live (`location`): "I'm from
    # Berlin but I live in Paris" is both. A Chinese place must be a known one (`text.places`: "我是
    # 成都人", not "我是好人"); an English one is capitalised and no department ("I'm from HR", "I'm
    # from work", "I'm from the future" name none).
    (
        "zh_hometown_ren",
        HOMETOWN,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}是(?:土生土长的|地道的|正宗的|纯正的)?(?P<v>[{_CJK}]{{2,8}}?)人"
            r"(?=$|[，,。.!！?？；;~～\s]|啊|呀|哦|呢|吧|哈|嘛|来的)"
        ),
        False,
    ),
    (
        "zh_hometown",
        HOMETOWN,
        re.compile(
            rf"{_ZH_HEAD}我(?:的)?(?:老家|家乡|故乡|祖籍|籍贯)(?:是|在)(?P<v>[{_CJK}]{{2,8}}?)(?:的|那边|那儿)?"
            r"(?=$|[，,。.!！?？；;~～\s]|啊|呀|哦|呢|吧|哈|嘛)"
        ),
        False,
    ),
    (
        "zh_come_from",
        HOMETOWN,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:来自|出生在|出生于|生在)(?P<v>[{_CJK}]{{2,8}}?)(?:的)?"
            r"(?=$|[，,。.!！?？；;~～\s]|啊|呀|哦|呢|吧|哈|嘛)"
        ),
        False,
    ),
    (
        "zh_born_in",
        HOMETOWN,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:是)?在(?P<v>[{_CJK}]{{2,8}}?)(?:出生|长大|土生土长)的?"
            r"(?=$|[，,。.!！?？；;~～\s]|啊|呀|哦|呢|吧|哈|嘛)"
        ),
        False,
    ),
    (
        "en_from",
        HOMETOWN,
        re.compile(
            r"\bI(?:'m| am| come| came) (?:originally |actually |also |all the way )?from (?:the )?"
            rf"{_EN_PLACE}",
            re.I,
        ),
        True,
    ),
    (
        "en_grew_up_in",
        HOMETOWN,
        re.compile(rf"\bI (?:grew up|was born(?: and raised)?|was raised) in (?:the )?{_EN_PLACE}", re.I),
        True,
    ),
    (
        "zh_live_in",
        LOCATION,
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}(?:住在|搬到了?|搬去了?|搬家到了?|搬来了?|搬回(?:到|了)?|定居在?){_ZH_V}"
        ),
        False,
    ),
    (
        "zh_live_in_2",
        LOCATION,
        re.compile(rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}在(?P<v>[{_CJK}]{{2,8}}?)(?:生活|定居|住)"),
        False,
    ),
    # "我现在在上海", "我现在住上海", "I'm in Shanghai now": where the user is now is where they live
    # only for a known place (`text.places`), never "我现在在公司", "I'm in the kitchen now", "I'm in
    # Starbucks now"; in English a time word says it is the new state ("now", "these days").
    (
        # "我在深圳工作": where one works, for a known place, is where one lives ("我在公司上班" is none).
        "zh_work_in",
        LOCATION,
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}在(?P<v>[{_CJK}]{{2,8}}?)(?:工作|上班|打工)"
            r"(?=$|[，,。.!！?？；;~～\s]|了|呢|啊|呀|哦|吧|哈|嘛)"
        ),
        False,
    ),
    (
        "zh_now_in",
        LOCATION,
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}(?:人)?(?:住|(?<=现在|目前|如今|已经|在人|前人|今人)在)(?P<v>[{_CJK}]{{2,8}}?)"
            r"(?:了|呢|啦)?(?=$|[，,。.!！?？；;~～\s]|啊|呀|哦|吧|哈|嘛)"
        ),
        False,
    ),
    (
        "en_now_in",
        LOCATION,
        re.compile(
            rf"\b(?:I(?:'m| am)|we(?:'re| are)) (?P<pre>now |currently |back )?(?:in|based in|living in) (?:the )?{_EN_PLACE}"
            r"(?=(?P<post>\s+(?:now|these days|nowadays|for good|permanently)\b)?)",
            re.I,
        ),
        True,
    ),
    (
        "zh_occupation",
        OCCUPATION,
        re.compile(rf"{_ZH_HEAD}我(?:现在|目前)?是(?:一名|一位|一个职业)?{_ZH_V}"),
        False,
    ),
    (
        # "我叫林晓，在上海做设计师" / "我在腾讯当产品经理": the value must end like an occupation.
        "zh_work_as",
        OCCUPATION,
        re.compile(
            rf"{_ZH_HEAD}我?(?:现在|目前)?(?:在(?P<place>[{_CJK}]{{2,8}}?))?(?:做|当)了?(?:一名|一个|一位)?"
            rf"(?P<v>[{_CJK}]{{2,8}}?)(?=$|[{_STOP}\s]|了|呢|啊|的|已经)"
        ),
        False,
    ),
    ("zh_job_is", OCCUPATION, re.compile(rf"我的?(?:工作|职业)是{_ZH_V}"), False),
    (
        "zh_do_x",
        OCCUPATION,
        re.compile(rf"{_ZH_HEAD}我(?:现在|目前)?是做(?P<v>[^{_STOP}\s]{{1,10}}?)的"),
        False,
    ),
    (
        "zh_partner",
        PARTNER_NAME,
        re.compile(rf"我(?:的)?(?:{_ZH_PARTNER})(?:的名字)?(?:叫|是){_ZH_NAME}"),
        False,
    ),
    (
        "zh_pet_named",
        PETS,
        re.compile(rf"我(?:养|家)?的?(?P<kind>{_PET_KINDS_ZH})(?:的名字)?叫{_ZH_NAME}"),
        False,
    ),
    (
        # "我养了一只橘猫叫胖虎": a kind with a word before it (橘猫, 柯基犬 is not covered) and its name.
        "zh_pet_have_named",
        PETS,
        re.compile(
            rf"我(?:家)?养了(?:一只|一条|两只|三只|只|条)?(?P<kind>[{_CJK}]{{0,2}}?(?:{_PET_KINDS_ZH}))"
            rf"[，,]?(?:它)?(?:的名字)?叫{_ZH_NAME}"
        ),
        False,
    ),
    (
        # "我养了一只柯基叫豆包": 养了 with an animal's measure word (只, 条, 头) names an animal, whatever
        # its kind (a breed: 柯基, 哈士奇), when a name follows.
        "zh_pet_measure_named",
        PETS,
        re.compile(
            rf"我(?:家)?养了(?:一|两|三|几)?(?:只|条|头)(?P<kind>[{_CJK}]{{1,4}}?)"
            rf"[，,]?(?:它|他|她)?(?:的名字)?叫{_ZH_NAME}"
        ),
        False,
    ),
    (
        # "我有一只猫叫咪咪", "我家有两条狗": 有 with an animal's measure word and a pet's kind.
        "zh_pet_have_you",
        PETS,
        re.compile(
            rf"我(?:家)?(?:也|还)?有(?:一|两|三|几)?(?:只|条)(?P<kind>[{_CJK}]{{0,2}}?(?:{_PET_KINDS_ZH}))"
            rf"(?:[，,]?(?:它|他|她)?(?:的名字)?叫{_ZH_NAME}|(?P<bare>)(?=$|[{_STOP}\s]|了|呢|啊|呀|哦))"
        ),
        False,
    ),
    (
        "zh_pet_have",
        PETS,
        re.compile(rf"我(?:家)?养了(?:一只|一条|两只|三只|只|条)?(?P<v>[{_CJK}]{{0,2}}?(?:{_PET_KINDS_ZH}))"),
        False,
    ),
    (
        "zh_pet_measure",
        PETS,
        re.compile(
            rf"我(?:家)?养了(?:一|两|三|几)?(?:只|条|头)(?P<v>[{_CJK}]{{1,4}}?)(?=$|[{_STOP}\s]|了|呢|啊|呀|哦)"
        ),
        False,
    ),
    ("zh_allergic_to", ALLERGIES, re.compile(rf"我{_ZH_WHEN}对{_ZH_W}过敏"), False),
    # "我乳糖不耐受", "我有点麸质不耐受": an intolerance, kept with the allergies (what not to serve).
    (
        "zh_intolerant",
        ALLERGIES,
        re.compile(rf"{_ZH_HEAD}我{_ZH_ADV}(?:有点|有)?(?!对)(?P<v>[{_CJK}]{{2,4}}?)不耐受?(?!烦)"),
        False,
    ),
    ("zh_x_allergic", ALLERGIES, re.compile(rf"{_ZH_HEAD}我(?P<v>[^{_STOP}\s对]{{1,6}}?)过敏"), False),
    (
        # "我最喜欢的食物是火锅", "我最爱的歌手是周杰伦": the favourite thing is a like.
        "zh_favorite",
        LIKES,
        re.compile(rf"{_ZH_HEAD}我{_ZH_ADV}(?:喜欢|爱)的(?:[{_CJK}]{{1,6}}?)?(?:是|就是){_ZH_V}"),
        False,
    ),
    (
        "zh_dislike",
        DISLIKES,
        re.compile(rf"{_ZH_HEAD}我{_ZH_ADV}(?:讨厌|不喜欢|不爱|受不了|烦){_ZH_V}"),
        False,
    ),
    # The thing first, as Chinese often says it ("香菜我受不了", "猫我很喜欢"): the clause ends on the verb.
    (
        "zh_topic_dislike",
        DISLIKES,
        re.compile(
            rf"{_ZH_HEAD}(?P<v>[^{_STOP}\s我你他她它]{{1,8}}?)我{_ZH_ADV}(?:受不了|不喜欢|讨厌|不爱)"
            rf"(?=$|[{_STOP}\s]|了|啊|呀|吧|哦|呢)"
        ),
        False,
    ),
    (
        "zh_topic_like",
        LIKES,
        re.compile(
            rf"{_ZH_HEAD}(?P<v>[^{_STOP}\s我你他她它]{{1,8}}?)我{_ZH_ADV}(?:喜欢|爱|超爱)"
            rf"(?=$|[{_STOP}\s]|了|啊|呀|吧|哦|呢)"
        ),
        False,
    ),
    (
        "zh_like",
        LIKES,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_ADV}(?:喜欢吃|喜欢喝|喜欢|爱吃|爱喝|爱看|爱听|爱玩|热爱|迷上了|超爱){_ZH_V}"
        ),
        False,
    ),
    # "Hi! I'm Sarah, …": a capitalised name right after a greeting ("hi, I'm tired" is not one).
    (
        "en_hi_im",
        NAME,
        re.compile(rf"^(?:hi|hello|hey|hiya)(?: there)?[,!.~\s]+(?:I'm|I am|this is) {_EN_CAP_NAME}", re.I),
        True,
    ),
    # "I'm Sarah, by the way", "Name's Jack": a capitalised name that ends its clause, not a state,
    # a nationality or a place ("I'm Fine.", "I'm Chinese", "I'm Paris-based" say no name).
    (
        "en_im_name",
        NAME,
        re.compile(
            rf"(?:^|(?<=[.!?]\s))(?:I'm|I am) {_EN_CAP_NAME}(?=\s*(?:,\s*(?:by the way|btw|nice to meet you)|[.!~]|$))",
            re.I,
        ),
        True,
    ),
    ("en_names", NAME, re.compile(rf"(?:^|(?<=[.!?]\s))(?:the )?name's {_EN_CAP_NAME}", re.I), True),
    (
        "en_birthday",
        BIRTHDAY,
        re.compile(rf"\bmy birthday(?: is|'s| falls) (?:on )?(?:the )?{_EN_DATE}", re.I),
        True,
    ),
    ("en_born_on", BIRTHDAY, re.compile(rf"\bI was born on (?:the )?{_EN_DATE}", re.I), True),
    (
        "en_live_in",
        LOCATION,
        re.compile(rf"\b(?:I|we) {_EN_ADV}(?:now |currently )?live in {_EN_V}", re.I),
        True,
    ),
    (
        "en_moved_to",
        LOCATION,
        re.compile(
            rf"\b(?:I|we)(?:'ve| have)? {_EN_ADV}(?:moved|relocated)(?: back| over)? to {_EN_V}", re.I
        ),
        True,
    ),
    # "I'm living in Berlin": a place name is capitalised ("I'm living in fear" names no place).
    (
        "en_living_in",
        LOCATION,
        re.compile(
            r"\b(?:I(?:'m| am)|we(?:'re| are)) (?:now |currently |still |happily )?living in (?-i:(?P<v>[A-Z][^.,!?;:\n]{0,40}?))"
            rf"(?=$|[.,!?;:\n]|\s+(?:{_EN_CLAUSE})\b)",
            re.I,
        ),
        True,
    ),
    ("en_based_in", LOCATION, re.compile(rf"\bI(?:'m| am) (?:now |currently )?based in {_EN_V}", re.I), True),
    (
        "en_work_as",
        OCCUPATION,
        re.compile(
            rf"\bI(?:'m| am)? (?:now )?work(?:ing)?(?: (?:at|for|in) [^,.!?;\n]{{1,40}}?)? as (?:an? )?{_EN_V}",
            re.I,
        ),
        True,
    ),
    (
        # "I just started a new job as a data scientist", "I got hired as a nurse", "I was promoted to
        # team lead": a job taken, named after "as"/"to".
        "en_new_job_as",
        OCCUPATION,
        re.compile(
            rf"\bI(?:'ve| have)? {_EN_ADV}(?:(?:started|got|took|landed|accepted|found|began|start|have)(?: a| my| the)?"
            rf"(?: new| first| full-time| part-time)? (?:job|position|role|gig) as|(?:got |was |been |have been |'ve been )"
            rf"(?:hired|employed|promoted) (?:as|to)) (?:an? )?{_EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_job_is",
        OCCUPATION,
        re.compile(rf"\bmy (?:job|occupation|profession) is (?:an? )?{_EN_V}", re.I),
        True,
    ),
    (
        "en_by_profession",
        OCCUPATION,
        re.compile(r"\bI(?:'m| am) an? (?P<v>[a-z][a-z ]{1,40}?) by (?:profession|trade)", re.I),
        True,
    ),
    (
        # "I'm a nurse at the city hospital", "I'm a software engineer": only when the value's last word
        # is an occupation (`_EN_OCCUPATIONS`), so "I'm a bit tired", "I'm a mess", "I'm a big fan of
        # jazz" state nothing.
        "en_im_a",
        OCCUPATION,
        re.compile(
            r"\bI(?:'m| am|'ve been| have been) (?:now |currently |actually |also |just )?an? (?P<v>[a-z][a-z\- ]{1,40}?)"
            r"(?=$|[.,!?;:\n]|\s+(?:at|in|for|with|from|on|of|and|but|so|who|which|by|since)\b)",
            re.I,
        ),
        True,
    ),
    (
        # "I became a nurse": as "I'm a X", only an occupation.
        "en_became_a",
        OCCUPATION,
        re.compile(
            r"\bI (?:just |finally |recently |eventually )?became an? (?P<v>[a-z][a-z\- ]{1,40}?)"
            r"(?=$|[.,!?;:\n]|\s+(?:at|in|for|with|from|on|of|and|but|so|who|which|by|last|this|after)\b)",
            re.I,
        ),
        True,
    ),
    (
        "en_partner",
        PARTNER_NAME,
        re.compile(rf"\bmy (?:{_EN_PARTNER})(?:'s name is| is called| is named|,) {_EN_NAME}", re.I),
        True,
    ),
    # "my girlfriend Emma", "our cat Miso": a capitalised name right after the word (case-sensitive,
    # so "my girlfriend loves jazz" names nobody).
    (
        "en_married_to",
        PARTNER_NAME,
        re.compile(rf"\bI(?:'m| am| got) {_EN_ADV}(?:happily )?(?:married|engaged) to {_EN_CAP_NAME}", re.I),
        True,
    ),
    (
        # "My wife is Anna": a capitalised name, not a nationality or a state ("my wife is Chinese").
        "en_partner_is",
        PARTNER_NAME,
        re.compile(rf"\bmy (?:{_EN_PARTNER}) is {_EN_CAP_NAME}(?=\s*$|\s*[.,!;:]|\s+and\b)", re.I),
        True,
    ),
    (
        "en_partner_apposition",
        PARTNER_NAME,
        re.compile(rf"\b(?:my|our) (?:{_EN_PARTNER}) {_EN_CAP_NAME}", re.I),
        True,
    ),
    (
        "en_pet_apposition",
        PETS,
        re.compile(rf"\b(?:my|our) (?P<kind>{_PET_KINDS_EN}) {_EN_CAP_NAME}", re.I),
        True,
    ),
    # "my cat is Miso", "our dog's Rex": a capitalised name, not a breed ("my cat is Siamese"; "my dog
    # is a Labrador" has an article and names no one).
    (
        "en_pet_is",
        PETS,
        re.compile(
            rf"\b(?:my|our) (?P<kind>{_PET_KINDS_EN})(?:'s| is) {_EN_CAP_NAME}"
            r"(?=\s*$|\s*[.,!;:~)]|\s+(?:and|but|lol|haha|btw)\b)",
            re.I,
        ),
        True,
    ),
    (
        # "Miso is my cat": the name first.
        "en_name_is_pet",
        PETS,
        re.compile(
            rf"(?:^|(?<=[.!?,]\s))(?-i:(?P<v>[A-Z][a-z'\-]+)) is (?:my|our) (?P<kind>{_PET_KINDS_EN})\b"
            r"(?=\s*$|\s*[.,!;:~)]|\s+(?:and|but|lol|haha|btw)\b)",
            re.I,
        ),
        True,
    ),
    (
        "en_pet_named",
        PETS,
        re.compile(
            rf"\b(?:my|our) (?P<kind>{_PET_KINDS_EN})(?:'s name is| is called| is named) {_EN_NAME}", re.I
        ),
        True,
    ),
    (
        # "I have a cat called Mochi", "we adopted a puppy named Rex": the kind and its name.
        "en_pet_have_named",
        PETS,
        re.compile(
            rf"\b(?:I|we)(?:'ve| have)? (?:have|got|adopted|own) an? (?P<kind>{_PET_KINDS_EN})(?: called| named|,? whose name is) {_EN_NAME}",
            re.I,
        ),
        True,
    ),
    (
        "en_pet_have",
        PETS,
        re.compile(rf"\bI (?:have|got|adopted|own) (?:an?|two|three) (?P<v>(?:{_PET_KINDS_EN})s?)\b", re.I),
        True,
    ),
    (
        "en_allergic_to",
        ALLERGIES,
        re.compile(rf"\bI(?:'m| am) {_EN_ADV}(?:very |severely |deathly |highly )?allergic to {_EN_V}", re.I),
        True,
    ),
    ("en_allergy", ALLERGIES, re.compile(r"\bI have an? (?P<v>[a-z][a-z ]{1,30}?) allergy", re.I), True),
    (
        # "my favorite food is sushi", "my all-time favourite band is Queen", "I'm a huge fan of jazz".
        "en_favorite",
        LIKES,
        re.compile(
            rf"\bmy (?:all-time |absolute |very |new )?favou?rite(?: [a-z]+){{0,2}} (?:is|are|has to be) {_EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_fan_of",
        LIKES,
        re.compile(
            rf"\bI(?:'m| am) (?:a |an )?(?:huge |big |massive |great |real |die-hard |longtime )?fan of {_EN_V}",
            re.I,
        ),
        True,
    ),
    # "I'm really into jazz" (a like), "I'm not into horror films" (a dislike); "into the second week
    # of my course" is no taste: no article or possessive may follow.
    (
        "en_into",
        LIKES,
        re.compile(
            rf"\bI(?:'m| am) {_EN_ADV}(?:very |big |totally |really )?into "
            rf"(?!(?:the|a|an|my|your|his|her|our|their|it|this|that|these|those)\b){_EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_not_into",
        DISLIKES,
        re.compile(
            rf"\bI(?:'m| am) not {_EN_ADV}(?:really |very |that |much )?into "
            rf"(?!(?:the|a|an|my|your|his|her|our|their|it|this|that|these|those)\b){_EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_dislike",
        DISLIKES,
        re.compile(
            rf"\bI {_EN_ADV}(?:hate|dislike|detest|can't stand|cannot stand|don't like|do not like){_EN_V.replace('(?P<v>', ' (?P<v>', 1)}",
            re.I,
        ),
        True,
    ),
    (
        # "I teach high school math" -> a high school math teacher; "I teach at a primary school" -> a
        # teacher. Not "I teach my son to swim", "I teach myself Spanish" (a person taught: no job).
        "en_teach",
        OCCUPATION,
        re.compile(
            r"\bI (?:now |currently |still |also )?teach (?:(?P<at>at|in) [^.,!?;:\n]{1,40}|"
            r"(?!(?:my|your|his|her|our|their|him|them|me|us|you|myself|people|someone|how|to|the kids? to)\b)"
            r"(?P<v>[a-z][a-z\- ]{1,30}?))(?=$|[.,!?;:\n]|\s+(?:at|in|for|to|on|every|once|twice|part|full|now|and|but|so|since)\b)",
            re.I,
        ),
        True,
    ),
    (
        # "I prefer tea", "I prefer cats to dogs", "I prefer Coke over Pepsi": the one preferred. A
        # capitalised value needs its comparison ("I prefer Liz" is a name, `commands.py`); "I'd prefer",
        # "I prefer to …", "I prefer not …" are requests or habits, not tastes.
        "en_prefer",
        LIKES,
        re.compile(
            r"\bI (?:much |really |generally |usually |definitely |always )?prefer "
            r"(?!(?:to|not|it|that|this|you|them|him|her|when|if|we|a|an|the)\b)"
            r"(?P<v>(?-i:[a-z][a-z\- ]{0,30}?)|[A-Za-z][A-Za-z\- ]{0,30}?(?=\s+(?:over|to|rather than)\s))"
            r"(?=$|[.,!?;:\n]|\s+(?:over|to|rather than|and|but|so|because|anyway)\b)",
            re.I,
        ),
        True,
    ),
    (
        # "I'm lactose intolerant", "I'm gluten-intolerant": kept with the allergies (what not to serve).
        "en_intolerant",
        ALLERGIES,
        re.compile(
            r"\bI(?:'m| am) (?:very |severely |a bit |slightly )?(?P<v>[a-z]{3,12})[ \-]intolerant\b", re.I
        ),
        True,
    ),
    (
        "en_like",
        LIKES,
        re.compile(rf"\bI {_EN_ADV}(?:love|like|enjoy|adore){_EN_V.replace('(?P<v>', ' (?P<v>', 1)}", re.I),
        True,
    ),
]

# A fact the user takes back ("I'm not allergic to shellfish after all", "我其实对花生不过敏"): the value
# is retracted, which ends it only where it is the fact in force, so a misread cannot remove anything else.
_RETRACT_RULES: list[tuple[str, str, re.Pattern[str], bool]] = [
    ("zh_not_allergic", ALLERGIES, re.compile(rf"我{_ZH_WHEN}(?:其实|并)?(?:不|没有?)对{_ZH_W}过敏"), False),
    ("zh_allergic_not", ALLERGIES, re.compile(rf"我{_ZH_WHEN}对{_ZH_W}(?:其实|并)?(?:不|没有?)过敏"), False),
    (
        "zh_not_vegetarian",
        DIET,
        re.compile(
            rf"我{_ZH_WHEN}(?:不再|不)(?:是(?:一个|个)?)?(?P<v>吃全素|吃素|纯素食?主义者|纯素食者|素食主义者|素食者)了"
        ),
        False,
    ),
    (
        "en_not_vegetarian",
        DIET,
        re.compile(
            r"\bI(?:'m| am) (?:not|no longer) (?:an? )?(?P<v>vegetarian|vegan|pescatarian|pescetarian|plant-based)"
            r"(?= any ?more| now|$|[.,!?;:\n])",
            re.I,
        ),
        True,
    ),
    (
        "en_not_allergic",
        ALLERGIES,
        re.compile(
            rf"\bI(?:'m| am) (?:actually |really )?(?:not|no longer) (?:actually |really )?allergic to {_EN_V}",
            re.I,
        ),
        True,
    ),
]

_ZH_NUM = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_SLEEP_ZH = re.compile(
    r"我(?:一般|通常|平时|平常|每天|每晚|基本上?|总是)*(?:都)?(?:是)?(?P<part>晚上|夜里|凌晨|半夜)?"
    r"(?P<h>\d{1,2}|[一二两三四五六七八九十]{1,3})[点:：](?P<m>\d{2}|半)?(?:左右|前|多)?(?:就|才)?(?:睡|上床)"
)
_SLEEP_EN = re.compile(
    r"\bI (?:usually |normally |always |often |typically |generally )?(?:go to bed|go to sleep|sleep|fall asleep|turn in)"
    r" (?:at |around |by |before |about )+(?:(?P<midnight>midnight)|(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?)",
    re.I,
)


def _hour(raw: str) -> int | None:
    if raw.isdigit():
        return int(raw)
    if raw == "十":
        return 10
    if raw.startswith("十"):
        return 10 + _ZH_NUM.get(raw[1:], 0)
    return _ZH_NUM.get(raw)


# Facts said in the second half of a statement whose first half a rule already read (the rules skip
# a match that starts inside another's): "I work as a nurse in Leeds" (an occupation, then where),
# "I'm vegetarian and allergic to shellfish" (a diet, then an allergy).
_EN_WORK_IN = re.compile(
    rf"\bI (?:now |currently |still )?work(?: (?:as|at|for) [^,.!?;\n]{{1,40}}?)? in (?:the )?{_EN_PLACE}",
    re.I,
)
_EN_AND_ALLERGIC = re.compile(
    rf"\bI(?:'m| am) (?:(?!not\b|never\b|no\b)[a-z\-]+ ){{1,3}}?(?:and|,) (?:also |very |severely )*allergic to {_EN_V}",
    re.I,
)


def _second_predicates(text: str, found: Sequence[Observation]) -> list[Observation]:
    out: list[Observation] = []
    m = _EN_WORK_IN.search(text)
    if (
        m is not None
        and not any(o.key == LOCATION for o in found)
        and not _is_question(text, m.end())
        and not _hypothetical(text, m.start())
        and is_place_en(m.group("v"), gazetteer=True)
    ):
        out.append(Observation(LOCATION, m.group("v"), rule="en_work_in"))
    m = _EN_AND_ALLERGIC.search(text)
    if (
        m is not None
        and not any(o.key == ALLERGIES for o in found)
        and not _is_question(text, m.end())
        and not _hypothetical(text, m.start())
        and (value := _clean(m.group("v"), english=True)) is not None
    ):
        values, _ = _list_items(text, value, m.end(), english=True)
        out += [Observation(ALLERGIES, v, rule="en_and_allergic_to") for v in values]
    return out


def _sleep_time(text: str) -> Observation | None:
    m = _SLEEP_ZH.search(text)
    if m:
        h = _hour(m.group("h"))
        if h is None or h > 24:
            return None
        minute = 30 if m.group("m") == "半" else int(m.group("m") or 0)
        part = m.group("part")
        if (part in ("晚上", "夜里") and 6 <= h < 12) or (part is None and 7 <= h < 12):
            h += 12
        if h == 12:  # 十二点睡 (晚上, 半夜, 凌晨 or none): a bedtime at twelve is midnight
            h = 0
        return Observation(SLEEP_TIME, f"{h % 24:02d}:{minute:02d}", rule="zh_sleep_time")
    m = _SLEEP_EN.search(text)
    if m and m.group("midnight"):
        return Observation(SLEEP_TIME, "00:00", rule="en_sleep_time")
    if m:
        h, minute = int(m.group("h")), int(m.group("m") or 0)
        ampm = (m.group("ampm") or "").lower().replace(".", "")
        if h > 24 or minute > 59:
            return None
        if (ampm == "pm" and h < 12) or (not ampm and 7 <= h < 12):
            h += 12
        if h == 12 and ampm != "pm":  # "at 12" / "12am": a bedtime at twelve is midnight
            h = 0
        return Observation(SLEEP_TIME, f"{h % 24:02d}:{minute:02d}", rule="en_sleep_time")
    return None


# -- the timezone in words -------------------------------------------------------------------------

# The zone a name or an abbreviation most often means (documented in docs/design.md). A US region's
# name or abbreviation is that region's zone with its daylight saving time ("PST" in July is still
# the user's Pacific time), not a fixed offset. CST is US Central time in English and China Standard
# Time in a Chinese message; IST is India's; GMT and UTC are UTC.
_ZONE_WORDS: dict[str, str] = {
    "pacific": "America/Los_Angeles",
    "pt": "America/Los_Angeles",
    "pst": "America/Los_Angeles",
    "pdt": "America/Los_Angeles",
    "mountain": "America/Denver",
    "mt": "America/Denver",
    "mst": "America/Denver",
    "mdt": "America/Denver",
    "central": "America/Chicago",
    "ct": "America/Chicago",
    "cst": "America/Chicago",
    "cdt": "America/Chicago",
    "eastern": "America/New_York",
    "et": "America/New_York",
    "est": "America/New_York",
    "edt": "America/New_York",
    "alaska": "America/Anchorage",
    "akst": "America/Anchorage",
    "hawaii": "Pacific/Honolulu",
    "hst": "Pacific/Honolulu",
    "gmt": "UTC",
    "utc": "UTC",
    "bst": "Europe/London",
    "uk": "Europe/London",
    "british": "Europe/London",
    "cet": "Europe/Berlin",
    "cest": "Europe/Berlin",
    "central european": "Europe/Berlin",
    "eet": "Europe/Athens",
    "eastern european": "Europe/Athens",
    "ist": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "indian": "Asia/Kolkata",
    "jst": "Asia/Tokyo",
    "japan": "Asia/Tokyo",
    "kst": "Asia/Seoul",
    "korea": "Asia/Seoul",
    "hkt": "Asia/Hong_Kong",
    "sgt": "Asia/Singapore",
    "aest": "Australia/Sydney",
    "aedt": "Australia/Sydney",
    "nzst": "Pacific/Auckland",
    "beijing": "Asia/Shanghai",
    "china": "Asia/Shanghai",
    "chinese": "Asia/Shanghai",
    "北京": "Asia/Shanghai",
    "中国": "Asia/Shanghai",
    "美东": "America/New_York",
    "美西": "America/Los_Angeles",
    "美中": "America/Chicago",
    "太平洋": "America/Los_Angeles",
    "东部": "America/New_York",
    "西部": "America/Los_Angeles",
    "日本": "Asia/Tokyo",
    "东京": "Asia/Tokyo",
    "韩国": "Asia/Seoul",
    "首尔": "Asia/Seoul",
    "伦敦": "Europe/London",
    "英国": "Europe/London",
    "纽约": "America/New_York",
    "洛杉矶": "America/Los_Angeles",
    "新加坡": "Asia/Singapore",
    "香港": "Asia/Hong_Kong",
    "悉尼": "Australia/Sydney",
}
_ZH_ZONE_CST = "Asia/Shanghai"
_OFFSET = r"(?:UTC|GMT)\s*(?P<sign>[+\-−])\s*(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?"
_ZONE_ABBR = "|".join(sorted((k for k in _ZONE_WORDS if k.isascii()), key=len, reverse=True))
_ZONE_ZH = "|".join(sorted((k for k in _ZONE_WORDS if not k.isascii()), key=len, reverse=True))
_IANA = r"(?P<iana>[A-Z][a-z]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)"
_TZ_EN = re.compile(
    r"\b(?:(?P<mine>my (?:time ?zone|tz) is)(?: in)?|I(?:'m| am) (?:on|in|using)(?: the)?|we(?:'re| are) (?:on|in)(?: the)?|"
    r"I live (?:on|in) the) "
    rf"(?:{_OFFSET}|{_IANA}|(?P<word>{_ZONE_ABBR})(?P<suffix>\s+(?:time|standard time|daylight time)(?:\s*zone)?|"
    r"\s*timezone)?)(?![A-Za-z+\-\d])",
    re.I,
)
_ZH_NUMERALS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_TZ_ZH = re.compile(
    r"我(?:们)?(?:这边|这里|那边|这儿)?(?:的时区)?(?:是|在|用的?是?|按|属于)?"
    rf"(?:(?P<ew>[东西])(?P<n>十[一二]?|[一二三四五六七八九十]|\d{{1,2}})区|{_OFFSET}|(?P<zh>{_ZONE_ZH})时间|"
    rf"(?P<word>{_ZONE_ABBR})(?P<suffix>时间|时区)?(?![A-Za-z]))"
    r"(?![^，,。.!！?？；;\n]*(?:吗|么|[?？]))",
    re.I,
)


def _fixed(sign: str, hours: int, minutes: int = 0) -> str | None:
    """An offset as an IANA zone: whole hours are Etc/GMT∓N (the sign is POSIX's, reversed); a
    half-hour offset has no Etc zone and is left out."""
    if minutes or hours > 14:
        return None
    if hours == 0:
        return "UTC"
    return f"Etc/GMT{'-' if sign == '+' else '+'}{hours}"


def _zh_hours(raw: str) -> int:
    if raw.isdigit():
        return int(raw)
    return 10 + _ZH_NUMERALS.get(raw[1:], 0) if raw.startswith("十") else _ZH_NUMERALS.get(raw, 0)


def _timezone(text: str) -> Observation | None:
    """The timezone a message states in words, as an IANA zone ("我在东八区" -> Etc/GMT-8, "I'm on
    Pacific time" -> America/Los_Angeles, "我这边是北京时间" -> Asia/Shanghai), or None."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    for pattern, english in ((_TZ_ZH, False), (_TZ_EN, True)):
        m = pattern.search(text)
        if m is None or _hypothetical(text, m.start()):
            continue
        g = m.groupdict()
        zone: str | None = None
        if g.get("ew"):
            n = _zh_hours(g["n"])
            zone = _fixed("+" if g["ew"] == "东" else "-", n) if 0 < n <= 12 else None
        elif g.get("h"):
            zone = _fixed("-" if g["sign"] in "-−" else "+", int(g["h"]), int(g["m"] or 0))
        elif g.get("zh"):
            zone = _ZONE_WORDS[g["zh"]]
        elif g.get("word"):
            # A bare word is a zone only as an abbreviation in capitals ("I'm on PST"), or after "my
            # timezone is": "I'm in central London", "I'm in PT" (therapy) name no zone.
            bare = not g.get("suffix") and not g.get("mine")
            if bare and not (g["word"].isupper() and len(g["word"]) >= 3):
                continue
            word = g["word"].lower()
            zone = _ZH_ZONE_CST if word == "cst" and not english else _ZONE_WORDS.get(word)
        elif g.get("iana"):
            try:
                ZoneInfo(g["iana"])
                zone = g["iana"]
            except (ZoneInfoNotFoundError, ValueError):
                zone = None
        if zone is not None:
            return Observation(TIMEZONE, zone, rule="zh_timezone" if not english else "en_timezone")
    return None


# "如果我叫小王的话", "if I'm allergic to nuts", "要是我对花生过敏": a clause that supposes states nothing.
_HYPOTHETICAL = re.compile(
    r"(?:如果|要是|假如|假设|万一|如若|倘若|若是|就算|即使|哪怕|\b(?:if|suppose|supposing|imagine|pretend|"
    r"unless|whether|even though|wish)\b)",
    re.I,
)


def _hypothetical(text: str, start: int) -> bool:
    """Whether the clause that holds text[start] supposes: a conditional word before it in the clause,
    or 的话 after it ("我叫小王的话")."""
    head = re.split(r"[，,。.!！?？；;\n]", text[:start])[-1]
    tail = re.split(r"[，,。.!！?？；;\n]", text[start:])[0]
    return bool(_HYPOTHETICAL.search(head)) or re.search(r"的话(?!题|剧|筒)", tail) is not None


# A diet reads the same whatever form said it ("素食主义者" and "吃素", "pescetarian"); what the user
# does not eat reads "no pork" / "不吃猪肉". A word after "I don't eat" that is no food ("out much",
# "before 8", "another bite") or 不吃 with nothing but 了/饭/东西 after it states no diet.
_DIET_SAME = {
    "pescetarian": "pescatarian",
    "素食者": "吃素",
    "素食主义者": "吃素",
    "纯素食者": "吃全素",
    "纯素主义者": "吃全素",
    "纯素食主义者": "吃全素",
}
_EN_NOT_FOODS = frozenset(
    "much a lot anything enough more another out late now right before after here there well properly alone at".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_NOT_FOODS = frozenset("了 饭 东西 药 这个 那个 什么".split())  # noqa: SIM905 - a word list reads better as text


def _diet_value(rule: str, value: str, *, english: bool) -> str | None:
    if rule.endswith("dont_eat"):
        if english:
            return None if value.split()[0].lower() in _EN_NOT_FOODS else f"no {value}"
        return None if value in _ZH_NOT_FOODS or value.startswith("了") else f"不吃{value}"
    if rule == "en_on_a_diet":
        return f"{value.lower()} diet"
    return _DIET_SAME.get(value.lower() if english else value, value.lower() if english else value)


# "我对海鲜过敏，而且不吃香菜", "我喜欢猫，也喜欢狗", "我又搬家了，现在住在深圳", "我跳槽了，现在是设计师"
# (是 only after 现在/目前: a new state): Chinese drops the subject of a clause that goes on
# from a clause whose subject is 我. Such a clause that begins (after 而且/也/还 …) with the verb of a
# rule gets its 我 back before the rules run; after a clause about someone else ("我妈吃素，也不吃辣")
# nothing is added.
_ZH_GOES_ON = re.compile(
    r"(?<=[，,])(?P<conn>(?:而且|并且|另外|同时|但是|但|不过)?)(?P<rest>(?:也|还|都|其实|从来|特别|很|最|现在|目前)*"
    r"(?:喜欢|不喜欢|爱吃|爱喝|讨厌|受不了|不吃|吃素|对[^，,。！？!?]{1,12}过敏|住在|搬到|搬去|搬来)|(?:现在|目前)是)"
)
_ZH_MY_CLAUSE = re.compile(
    r"(?:^|[。！？!?；;，,])\s*(?:而且|并且|另外|同时|但是|但|不过)?我(?![们妈爸哥姐弟妹])[^，,。！？!?；;]*$"
)


def _zh_implied_subject(text: str) -> str:
    out, last = [], 0
    for m in _ZH_GOES_ON.finditer(text):
        if _ZH_MY_CLAUSE.search(text, 0, m.start() - 1) is None:
            continue
        out += [text[last : m.start()], "我", m.group("rest")]
        last = m.end()
    return "".join([*out, text[last:]]) if out else text


def _is_question(text: str, end: int) -> bool:
    tail = re.match(r"[^。.!！?？，,;；\n]*([?？]|吗|么)?", text[end:])
    return bool(tail and tail.group(1))


def extract(text: str) -> list[Observation]:
    """The profile facts a user message states, by rule; [] for most messages.

    Renames ("叫我大王") are not here: they are commands applied before the reply (`commands.py`).
    A name statement ("我叫李伟", "my name is Li Wei") is also reported here as `name`.
    """
    text = text.strip()
    if not text or len(text) > 2000:
        return []
    found: list[Observation] = []
    commands = detect(text)
    given = stated_name(text)
    # "我上个月搬到杭州了", "We moved to Seattle last week": a relative time word says when, not what; the
    # rules read the statement without it (absolute dates, as in birthdays, are not relative times).
    for start, end in reversed(spans(text)):
        text = (text[:start] + text[end:]).replace("  ", " ")
    text = _zh_implied_subject(text)
    for cmd in commands:
        if (
            cmd.kind == "rename"
            and cmd.value
            and cmd.rule in ("zh_my_name_is", "en_my_name_is", "en_name_correction")
        ):
            found.append(Observation(NAME, cmd.value, rule=cmd.rule))
        elif cmd.kind == "rename" and cmd.rule in ("zh_name_but_called", "en_name_but_called") and given:
            found.append(Observation(NAME, given, rule=cmd.rule))  # "我叫李伟，不过大家都叫我小李": 李伟
    taken: list[tuple[int, int]] = []
    for rule, key, pattern, english in _RULES:
        for m in pattern.finditer(text):
            if any(s <= m.start() < e for s, e in taken) or _is_question(text, m.end()):
                continue
            if _hypothetical(text, m.start()):
                continue
            if key == PETS and "kind" in pattern.groupindex and m.group("v") is None:
                value = m.group("kind")  # "我有一只猫": the kind alone
            elif key == PETS and "kind" in pattern.groupindex:
                name = _clean(m.group("v"), english=english)
                value = f"{m.group('kind').lower()} {name}" if name else None
            elif rule == "en_teach" and m.group("v") is None:
                value = "teacher"  # "I teach at a high school"
            else:
                value = _clean(m.group("v"), english=english)
            if value is None:
                continue
            if rule == "en_teach" and m.group("v") is not None:
                value = f"{value} teacher"
            elif rule.endswith("_intolerant"):
                value = f"{value} intolerance" if english else f"{value}不耐受"
            if key == OCCUPATION and not english and not _looks_like_occupation(value, m):
                continue
            if rule in ("en_im_a", "en_became_a") and value.split()[-1].lower() not in _EN_OCCUPATIONS:
                continue
            if key in (NAME, PARTNER_NAME) and value.split()[0].lower() in _EN_NOT_GREETING_NAMES:
                continue
            if rule == "en_favorite" and value.split()[0].lower() in _EN_NOT_ITEM_WORDS:
                continue
            if rule.startswith("zh_topic_") and _ZH_NOT_TOPIC.fullmatch(value):
                continue  # "今天我很喜欢", "其实我不喜欢": a time or an adverb before 我, not a thing
            if not _place_ok(rule, key, value, m, english=english):
                continue
            if rule == "en_pet_is" and _is_breed(value):
                continue
            said = (m.group("v") or "").lower()
            if rule in ("en_im_name", "en_names", "en_name_is_pet") and (
                said in _EN_NOT_GREETING_NAMES or said in _EN_PRONOUNS or is_place_en(said)
            ):
                continue
            if key == LOCATION and not english and re.match(r"[一两几][个张只件箱台把条套]", m.group("v")):
                continue  # "我搬来一个柜子" moved a thing, not the user
            one_value = (key == PETS and "kind" in pattern.groupindex) or (
                key == DIET and not rule.endswith("dont_eat")
            )
            named_pets = _EN_PET_NAMES.match(text, m.end()) if rule == "en_pet_have" else None
            if named_pets is not None:  # "I have two cats, Mochi and Tofu": each cat by its name
                kind = re.sub(r"s$", "", value.lower()) if value.lower() != "guinea pigs" else "guinea pig"
                names = re.findall(r"[A-Z][a-z'\-]+", named_pets.group("names"))
                values, end = [f"{kind} {n}" for n in names], named_pets.end()
            elif key in MULTI_KEYS and not one_value:
                values, end = _list_items(text, value, m.end(), english=english)
            else:
                values, end = [value], m.end()
            if key == DIET:
                values = [d for v in values if (d := _diet_value(rule, v, english=english)) is not None]
            found += [Observation(key, v, rule=rule) for v in values]
            taken.append((m.start(), end))
    for rule, key, pattern, english in _RETRACT_RULES:
        for m in pattern.finditer(text):
            value = _clean(m.group("v"), english=english)
            if value is not None and not _is_question(text, m.end()) and not _hypothetical(text, m.start()):
                found = [ob for ob in found if not (ob.key == key and ob.op == "set")]
                values, _ = _list_items(text, value, m.end(), english=english)
                if key == DIET:
                    values = [d for v in values if (d := _diet_value(rule, v, english=english)) is not None]
                found += [Observation(key, v, "retract", rule=rule) for v in values]
    sleep = _sleep_time(text)
    if sleep is not None:
        found.append(sleep)
    found += _second_predicates(text, found)
    zone = _timezone(text)
    if zone is not None:
        found.append(zone)
    return found


# The names after "I have two cats": ", Mochi and Tofu", " named Mochi and Tofu", ": Mochi & Tofu".
_EN_PET_NAMES = re.compile(
    r"(?:\s*[,:(\-–]\s*|\s+)(?:(?:named|called)\s+)?(?-i:(?P<names>[A-Z][a-z'\-]+(?:\s*(?:,|and|&|,\s*and)\s*[A-Z][a-z'\-]+)*))"
    r"(?=\s*$|\s*[.,!;:~)]|\s+(?:and|but|lol|haha|btw)\b)"
)
_EN_PRONOUNS = frozenset("he she it this that there who what which everyone nobody someone".split())  # noqa: SIM905


# Capitalised words after "I'm from" that name a part of an organisation, not a place ("I'm from HR").
_EN_NOT_PLACES = frozenset(
    """hr it pr qa r&d sales marketing accounting finance legal support engineering management admin ops
    customer service headquarters hq corporate""".split()  # noqa: SIM905 - a word list reads better as text
)


def _place_ok(rule: str, key: str, value: str, m: re.Match[str], *, english: bool) -> bool:
    """Whether a place a rule read is one: a Chinese hometown or a Chinese place one is "now" in is a
    known place; an English hometown is no department; an English "I'm in X" is a known place said
    to be the new state ("now", "these days")."""
    if key not in (HOMETOWN, LOCATION) or rule in ("zh_live_in", "zh_live_in_2"):
        return True
    if not english:
        return (key == LOCATION and rule not in ("zh_now_in", "zh_work_in")) or is_place_zh(value)
    if rule == "en_now_in":
        return bool(m.group("pre") or m.group("post")) and is_place_en(value, gazetteer=True)
    if value.endswith("'s"):
        return False  # "I'm from Google's team"
    if key == HOMETOWN:
        first = value.split()[0].lower()
        if first in _EN_NOT_PLACES or value.lower() in _EN_NOT_GREETING_NAMES:
            return False
        return not (value.isupper() and not is_place_en(value))  # "IT", "HR"; "US" is a place
    return True


# Words after "my cat is" that say what breed or colour, not which name: a few common ones, and any
# word like a demonym (Siamese, Burmese, Maltese; nationalities are in `_EN_NOT_GREETING_NAMES`).
_EN_BREEDS = frozenset(
    """siamese persian bengal himalayan abyssinian ragdoll sphynx sphinx tabby calico labrador lab
    poodle beagle husky corgi chihuahua dachshund pug bulldog retriever shepherd terrier spaniel
    collie rottweiler doberman pomeranian samoyed akita shiba boxer dalmatian greyhound mastiff
    maine coon angora""".split()  # noqa: SIM905 - a word list reads better as text
)


def _is_breed(value: str) -> bool:
    word = value.split()[-1].lower()
    return word in _EN_BREEDS or word in _EN_NOT_GREETING_NAMES or word.endswith("ese")


# A list after a verb of a several-valued key ("allergic to penicillin, peanuts and latex", "我对芒果和
# 花生过敏"): one fact per item. A further English item is short and names a thing: "I love hiking
# and my sister does too" stops at hiking. A Chinese value splits at 和/、/跟 only when every part is
# a value ("猫和狗"; "和朋友聊天" stays whole).
_EN_MORE = re.compile(rf"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+){_EN_V}", re.I)
_EN_NOT_ITEM_WORDS = frozenset(
    """i i'm i've i'd you he she it it's we they my your his her its our their me him us them
    is are was were be been am do does did don't doesn't have has had will would can can't could should
    not never always especially even really very so also too just only mostly sometimes usually maybe
    probably that this there then though although because since while when whenever if unless until which
    who where yet lol haha btw anyway etc sadly unfortunately fortunately luckily unluckily thankfully
    honestly apparently obviously basically actually seriously literally personally naturally clearly
    frankly hopefully surprisingly ironically weirdly oddly admittedly""".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_LIST_SPLIT = re.compile(r"和|、|跟|与|以及")
_ZH_MORE = re.compile(rf"、{_ZH_V}")


def _list_items(text: str, first: str, end: int, *, english: bool) -> tuple[list[str], int]:
    """The items of a list whose first value was matched up to `end`, and where the list ends."""
    if not english:
        whole, stop = first, end
        while m := _ZH_MORE.match(text, stop):
            whole, stop = f"{whole}、{m.group('v')}", m.end()
        parts = [p.strip() for p in _ZH_LIST_SPLIT.split(whole)]
        cleaned = [_clean(p, english=False) if 0 < len(p) <= 8 else None for p in parts]
        items = [c for c in cleaned if c is not None]
        return (items, stop) if len(parts) > 1 and len(items) == len(parts) else ([first], end)
    items = [first]
    while m := _EN_MORE.match(text, end):
        value = _clean(m.group("v"), english=True)
        words = value.lower().split() if value else []
        if (
            not value
            or len(words) > 3
            or _EN_NOT_ITEM_WORDS.intersection(words)
            or _is_question(text, m.end())
        ):
            break
        items.append(value)
        end = m.end()
    return items, end


# Words that stand before 我 without being what the user likes ("今天我很喜欢", "其实我不喜欢").
_ZH_NOT_TOPIC = re.compile(
    r"(?:今天|明天|昨天|前天|后天|今晚|现在|最近|平时|平常|其实|反正|本来|当时|那时|这次|每次|一直|有时候?|"
    r"周末|晚上|早上|上午|下午|中午|以前|以后|后来|真的|说实话|老实说|总之|所以|但是|可是|不过|而且|"
    r"嗯|哈哈|哎|唉|好吧|算了)+"
)


# "我是一名护士" is an occupation, "我是一个很懒的人" is not: a Chinese occupation ends like one.
_ZH_OCCUPATION_END = re.compile(
    r"(?:师|员|生|家|工|手|者|长|官|医|匠|士|警|商|板|总|经理|主管|老师|护士|律师|司机|厨子|模特|主播|博主|设计|开发|运营|产品|工程|编辑|记者|会计)$"
)


# A job named by its function ("做策划", "做销售") is an occupation when a workplace is named with it
# ("我在一家游戏公司做策划"): "我做测试" alone may be a task.
_ZH_JOB_FUNCTIONS = frozenset(
    """策划 销售 客服 翻译 文案 美工 测试 运维 前端 后端 行政 人事 财务 法务 市场 公关 采购 物流 外贸
    保安 保洁 保姆 收银 咨询 审计 风控 投行 猎头 教研 剪辑 后期 配音 摄影 导游""".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_WORKPLACE = re.compile(
    r"(?:公司|单位|医院|诊所|学校|大学|中学|小学|幼儿园|银行|工厂|厂|店|餐厅|饭店|酒店|事务所|研究所|研究院|"
    r"工作室|机构|集团|企业|报社|杂志社|出版社|电视台|政府|部门|大厂|外企|国企|银行|超市|商场)$"
)


def _looks_like_occupation(value: str, m: re.Match[str] | None = None) -> bool:
    if "的" in value:
        return False
    if _ZH_OCCUPATION_END.search(value):
        return True
    place = m.groupdict().get("place") if m is not None else None
    return value in _ZH_JOB_FUNCTIONS and bool(place and _ZH_WORKPLACE.search(place))


# The last word of "I'm a X": a generic list of occupations (not fitted to any data set).
_EN_OCCUPATIONS = frozenset(
    """nurse doctor physician surgeon dentist pharmacist paramedic therapist psychologist psychiatrist
    teacher professor lecturer tutor student researcher scientist engineer developer programmer coder
    designer architect lawyer attorney solicitor paralegal judge accountant auditor banker analyst
    consultant manager director executive clerk secretary receptionist assistant cashier salesperson
    chef cook baker waiter waitress bartender barista butcher farmer gardener carpenter plumber
    electrician mechanic technician builder painter artist illustrator photographer musician singer
    actor actress dancer writer author journalist reporter editor translator interpreter librarian
    pilot driver firefighter policeman policewoman officer soldier veterinarian vet pharmacist
    entrepreneur freelancer contractor administrator marketer recruiter caregiver nanny housekeeper
    cleaner janitor miner fisherman tailor hairdresser barber beautician coach trainer athlete
    streamer vlogger blogger influencer investor broker realtor agent inspector surveyor economist
    statistician mathematician physicist chemist biologist midwife optometrist radiologist
    intern apprentice professor postdoc""".split()  # noqa: SIM905 - a word list reads better as text
)


# -- applying --------------------------------------------------------------------------------------

_OPPOSITE = {LIKES: DISLIKES, DISLIKES: LIKES}


def apply(
    profile: Profile,
    user_id: str,
    observations: Sequence[Observation],
    *,
    at: datetime,
    source_turn_ids: Sequence[int],
    tx: Tx | None = None,
) -> list[dict[str, Any]]:
    """Write observations to the profile (a like retracts the same dislike and the reverse).
    Idempotent: observing the same fact again only adds source turn ids. Returns what was applied."""
    out = []
    for ob in observations:
        if ob.op == "retract":
            profile.retract(user_id, ob.key, ob.value, at=at, tx=tx)
        else:
            if ob.key in _OPPOSITE:
                profile.retract(user_id, _OPPOSITE[ob.key], ob.value, at=at, tx=tx)
            profile.set(user_id, ob.key, ob.value, at=at, source_turn_ids=source_turn_ids, tx=tx)
        out.append(ob.as_dict())
    return out


def apply_turns(profile: Profile, turns: Sequence[Turn], *, tx: Tx | None = None) -> list[dict[str, Any]]:
    """The rule facts of stored user turns that came in without a live turn (an import), as a live turn
    would have written them: the rules of `extract`, and a rename ("叫我大王", "call me Dan") as the
    preferred name. Applied oldest first by timestamp, each fact dated by its turn, so a later
    statement supersedes an earlier one whatever the order of the file (and an import older than
    what the profile holds is filed as history). Idempotent. Returns what was applied."""
    out: list[dict[str, Any]] = []
    users = [t for t in turns if t.role == "user" and t.id is not None]
    for turn in sorted(users, key=lambda t: (t.created_at, t.seq or 0, t.id or 0)):
        assert turn.id is not None
        for cmd in detect(turn.content, named=named(profile, turn.user_id, turn.content)):
            if cmd.kind == "rename" and not cmd.value and cmd.old:
                profile.retract(turn.user_id, PREFERRED_NAME, cmd.old, at=turn.created_at, tx=tx)
                out.append(Observation(PREFERRED_NAME, cmd.old, "retract", rule=cmd.rule).as_dict())
            elif cmd.kind == "rename" and cmd.value:
                meta = {"replaces": cmd.old} if cmd.old else {}
                profile.set(
                    turn.user_id,
                    PREFERRED_NAME,
                    cmd.value,
                    at=turn.created_at,
                    source_turn_ids=[turn.id],
                    meta=meta,
                    tx=tx,
                )
                out.append(Observation(PREFERRED_NAME, cmd.value, rule=cmd.rule).as_dict())
        out += apply(
            profile, turn.user_id, extract(turn.content), at=turn.created_at, source_turn_ids=[turn.id], tx=tx
        )
    return out


# -- the LLM extraction (P2) ---------------------------------------------------------------------

# Keys the LLM may set: a rename stays a command, the timezone comes with the request.
LLM_KEYS = tuple(k for k in KEYS if k not in (PREFERRED_NAME, TIMEZONE))


class _LLMFact(BaseModel):
    turn: int = Field(ge=1, description="1-based number of the message that states it")
    key: str
    value: str = Field(min_length=1, max_length=80)
    op: Op = "set"


class _LLMFacts(BaseModel):
    facts: list[_LLMFact] = Field(default_factory=list)


def llm_extract(llm: ChatClient, turns: Sequence[Turn]) -> list[tuple[Turn, Observation]]:
    """Facts the helper LLM finds in the user's messages of one page (one call per page), validated:
    unknown keys and turn numbers are dropped. Raises `LLMError` when the reply is not valid JSON."""
    from memsched.llm.client import complete_json
    from memsched.llm.prompts import load

    users = [t for t in turns if t.role == "user"]
    if not users:
        return []
    lines = "\n".join(f"{i}. {t.content}" for i, t in enumerate(users, 1))
    prompt = load("profile_extract").format(keys=", ".join(LLM_KEYS), messages=lines)
    reply = complete_json(llm, [{"role": "user", "content": prompt}], _LLMFacts, purpose="profile")
    out = []
    for f in reply.facts:
        if f.key not in LLM_KEYS or f.turn > len(users):
            continue
        out.append((users[f.turn - 1], Observation(f.key, f.value.strip(), f.op, rule="llm")))
    return out


@task("profile_extract")
def profile_extract_task(ctx: TaskContext, job: Job) -> None:
    """P2, per page: the rules again (for turns stored without them, e.g. imports) and, with an LLM,
    the LLM extraction; each fact dated by its turn. Idempotent: re-observing adds only sources."""
    page_id = int(job.payload["page_id"])
    turns = ctx.store.page_turns(job.user_id, page_id)
    found = [(t, ob) for t in turns if t.role == "user" for ob in extract(t.content)]
    if ctx.llm is not None:
        try:
            found += llm_extract(ctx.llm, turns)
        except LLMError as exc:  # the rules' facts still count; a bad reply is not worth retrying
            log.warning("profile LLM extraction of page %s failed, rules only: %s", page_id, exc)
    profile = Profile(ctx.store)
    with ctx.store.transaction() as tx:
        for turn, ob in found:
            assert turn.id is not None
            apply(profile, job.user_id, [ob], at=turn.created_at, source_turn_ids=[turn.id], tx=tx)
    log.info("profile extraction of page %s of %s: %d facts", page_id, job.user_id, len(found))
