"""Consistency commands: "call me 大王" (rename) and "忘掉刚才那句话" (forget the last message).

Detection is regular expressions plus a few rules, in Chinese and English, with no LLM, so it costs
microseconds on the P0 path. It is deliberately conservative: a missed command is a one-off
annoyance, a false positive (renaming the user "tomorrow" after "don't forget to call me tomorrow")
corrupts state. Each pattern is anchored at the start of a clause and guarded by a stop list.

Applying a command (`apply_rename`, `forget_last`) is shared by the two paths that need it: a turn
applies it inline before the reply (consistency blocking), and `record()` queues it as a P1 job that
the next turn's barrier waits for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from memsched.errors import InputError
from memsched.forget import COUNTS_RESET as COUNTS_RESET  # re-exported for the scheduler
from memsched.forget import after_forget
from memsched.jobs.tasks import TaskContext, task
from memsched.model import utcnow
from memsched.profile import (
    ALLERGIES,
    DATES,
    HABITS,
    LOSSES,
    NAME,
    OCCUPATION,
    PARTNER_NAME,
    PEOPLE,
    PREFERRED_NAME,
    Profile,
)
from memsched.profile_rules import EN_NOT_GREETING_NAMES, ZH_PARTICLES
from memsched.text.en_names import intro_name
from memsched.text.places import is_place_en, is_place_zh
from memsched.text.scripts import ByScript, present
from memsched.text.segment import ENGLISH_STOP_WORDS, has_cjk
from memsched.text.segment import terms as segment_terms

if TYPE_CHECKING:
    from memsched.jobs.queue import Job
    from memsched.memory import Memory
    from memsched.store import Store

CommandKind = Literal["rename", "forget_last", "forget_topic", "forget_all"]


@dataclass(frozen=True, slots=True)
class Command:
    """A detected command: `kind`, the new `value` (a name) and the `old` one when the user named it."""

    kind: CommandKind
    value: str | None = None
    old: str | None = None
    matched: str = ""
    rule: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "old": self.old, "rule": self.rule}


# -- names -------------------------------------------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A CJK name is short and ends before a particle or punctuation ("叫我大王吧" -> 大王).
_CJK_END = r"(?=$|[，,。.!！?？~～、；;\s]|吧|就好|就行|就可以|好了|好吗|吗|啊|呀|哦|嘛|了|哈|呢)"
_CJK_NAME = rf"[{_CJK}·]{{1,6}}?{_CJK_END}"
# Latin letters, accented ones too ("Ana María", "Zoë", "Łukasz").
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017f"
_LATIN_NAME = rf"[{_LATIN}][{_LATIN}'\-]*(?:\s+[{_LATIN}][{_LATIN}'\-]*){{0,3}}"
_QUOTED = r"[\"“'‘「『](?P<q>[^\"”'’」』]{1,30})[\"”'’」』]"


# What may stand before a name without being part of it: "call me by my real name, Joanna", "use my
# full name: Joanna", "叫我全名周明杰", "叫我大名".
_NAME_LEAD = (
    r"(?:(?:by\s+)?my\s+(?:real|full|actual|proper|given|legal|first|own)\s+name\s*(?:[,:\u2014\u2013-]\s*|\s+)|"
    r"(?:我的)?(?:全名|真名|本名|大名|原名|真实姓名)(?:[，,:：]\s*)?)?"
)


def _name(group: str) -> str:
    return rf"{_NAME_LEAD}(?:{_QUOTED.replace('?P<q>', f'?P<{group}_q>')}|(?P<{group}>{_CJK_NAME}|{_LATIN_NAME}))"


# Words that follow "call me"/"叫我" without being a name: times, idioms, verbs, pronouns.
_EN_NOT_NAMES = frozenset(
    """tomorrow tonight today later back when whenever if at on in after before sometime sometimes
    anytime again now soon maybe crazy please asap up out to a an the that this it what whatever by
    over not never old-fashioned old naive paranoid lazy stupid silly weird names anything
    something nothing anyone someone anymore any more so because and or but with for from about
    just then there here your you him her them us me my his its our their ok okay sure yes no fine
    alright good great cool right wrong correct true important funny""".split()  # noqa: SIM905 - a word list reads better as text
)
# Trailing words cut from an English name ("call me Da Wang from now on" -> "Da Wang").
_EN_NAME_TAIL = frozenset(
    """from now on please pls instead okay ok thanks thank you and because since but anymore then haha
    lol going forward henceforth today starting too also again""".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_NOT_NAMES = frozenset(
    """什么 啥 外卖 车 出租车 救护车 滴滴 醒 起床 一声 一下 吃饭
    人 谁 名字 哪位 哪个 宝 你 他 她 它 我 大家 全名 真名 本名 大名 原名 真实姓名""".split()  # noqa: SIM905 - a word list reads better as text
)
# A CJK "name" starting with one of these is a verb phrase or pronoun ("叫我起床", "我叫了外卖").
_ZH_NOT_FIRST = frozenset("一了你他她它我起去吃回出来做帮过睡醒干别不没怎什啥哪谁几这那吧吗呢啊呀嘛哦")


ZH_NOT_NAME_FIRST = _ZH_NOT_FIRST


def _clean_name(raw: str | None) -> str | None:
    if not raw:
        return None
    name = raw.strip().strip(".,!?;:，。！？；：~～")
    if not name:
        return None
    if re.match(rf"[{_CJK}]", name):
        # A name holds no pronoun ("你可以叫我妈来接我" asks for a mother) and does not end in a
        # question's particle ("叫我小李吗").
        if name in _ZH_NOT_NAMES or name[0] in _ZH_NOT_FIRST or re.search("[我你他她它]", name[1:]):
            return None
        if name[-1] in "吗么":
            return None
        return name
    words = name.split()
    while words and words[-1].lower() in _EN_NAME_TAIL:
        words.pop()
    if not words or words[0].lower() in _EN_NOT_NAMES:
        return None
    # Keep the name up to the first non-name word ("Dave when I'm sad" -> "Dave").
    kept: list[str] = []
    for w in words:
        if w.lower() in _EN_NOT_NAMES or w.lower() in _EN_NAME_TAIL:
            break
        kept.append(w)
    return " ".join(kept) or None


def _whole_name(raw: str | None, name: str) -> bool:
    """Whether `name` is all of `raw` but for trailing words ("Danny anymore" -> "Danny" is)."""
    text = re.sub(r"\s+any\s?more$", "", (raw or "").strip().strip(".,!?;:，。！？；：~～"), flags=re.I)
    words = text.split()
    while words and words[-1].lower() in _EN_NAME_TAIL:
        words.pop()
    return " ".join(words) == name or not re.match(r"[A-Za-z]", name)


# The sentence-final particles a CJK name may stand before (`_CJK_END`).
_ZH_PARTICLES = ZH_PARTICLES


def _group(m: re.Match[str], group: str) -> str | None:
    d = m.groupdict()
    quoted = d.get(f"{group}_q")
    if quoted:
        return quoted
    value = d.get(group)
    if value and re.match(rf"[{_CJK}]", value):
        return through_word(m.string, m.start(group), value)
    return value


def through_word(text: str, start: int, name: str) -> str:
    """`name` (at `start` in `text`), or the word it begins when that word, one CC-CEDICT knows, runs on
    over what `_CJK_END` took for a particle: "我是马大哈(哈)" is 马大哈 (a scatterbrain), not 马大 and a
    哈; "叫我哈哈" is 哈哈. "以后叫我可乐吧" is 可乐 and a 吧 (可乐吧 is no word)."""
    end = start + len(name)
    run = re.match(f"[{_ZH_PARTICLES}]{{1,3}}", text[end:])
    if run is None:
        return name
    from memsched.text.gloss import lookup

    for k in range(len(run.group()), 0, -1):
        if len(name) + k <= 6 and lookup(name + run.group()[:k]):
            return name + run.group()[:k]
    return name


# -- the rules, as data --------------------------------------------------------------------------------

_CLAUSE = r"(?:^|(?<=[，,。.!！?？；;~～\s]))"
_ZH_FROM_NOW = r"(?:以后|今后|往后|从现在起|从现在开始|从今天起|从今天开始|从今以后)"
_ZH_CALL = r"(?:叫我|喊我|称呼我|管我叫)(?:为|做)?"
_EN_LEAD = r"(?:(?:please|pls|just|so|ok|okay|and|actually|instead|you can|you may|you should|"
_EN_LEAD += r"i'd like you to|i want you to|could you|can you|would you)\s+)*"
_EN_FROM_NOW = r"(?:from now on|from today(?: on)?|going forward|henceforth|starting today)"

# Between "别叫我X了" and "叫我Y" the user may say why, in a clause or two ("别再叫我雨哥了，听着好土，
# 还是叫我小雨"); such a clause holds no 叫 (it would be a call of its own).
_ZH_ASIDE = r"(?:[，,、。!！\s]+[^叫，,、。!！?？\n]{1,12}){0,2}"
_EN_ASIDE = r"(?:\s*[,;.!\u2026]\s*(?!call\b)[^,;.!?\u2026\n]{1,40}?){0,2}?"
# "use my real name, Joanna", "go by my full name: Joanna": the name after "my … name" (`_NAME_LEAD`).
_EN_USE_NAME = r"(?:use|go\s+by|go\s+back\s+to|stick\s+(?:to|with))(?=\s+my\s+(?:\w+\s+)?name\b)"
# What names the wanted name after "stop calling me X": "I prefer Dan", "I'd rather be called Dan", "I go by Dan".
_EN_PREFER = (
    r"I(?:'d|\s+would)?\s+(?:much\s+)?(?:prefer|rather)(?:\s+(?:to\s+be\s+called|being\s+called|"
    r"you\s+call\s+me|be\s+called))?|I\s+go\s+by"
)

# A discourse marker that turns to something new, before the user says who they are ("对了，我是王海生",
# "哦对了，我叫李明", "忘了说，我是张伟", "顺便说一下，我是李华", "先自我介绍一下，我是周明杰"). What follows
# is read as if it began the sentence (a bare "我是X": `zh_full_name(bare=True)`), not as after a greeting.
_ZH_ASIDE_LEAD = (
    r"(?:(?:哦|噢|喔|啊|嗯|哎|诶)[，,\s]*)?(?:对了|对啦|对了对了|顺便说(?:一下|一句)?|顺便提一下|顺带一提|"
    r"忘了(?:说|讲|告诉你|跟你说)(?:了)?|(?:忘了|先|我先)?(?:做个|做一下)?(?:自我介绍|介绍一下(?:我自己|自己)?)(?:一下)?|"
    r"话说|说起来|另外|还有|其实)"
)

RENAME_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    # (rule name, pattern, is_statement). Statements ("我叫李伟") are skipped in questions.
    (
        "zh_not_x_but_y",
        re.compile(
            rf"(?:别|不要|不准|不许)(?:再)?{_ZH_CALL}{_name('old')}(?:了)?{_ZH_ASIDE}[，,、。!！\s]*(?:而是|你)?"
            rf"{_ZH_FROM_NOW}?[，,\s]*(?:请|你)?(?:还是|改|就|要|应该|直接)*(?:可以)?{_ZH_CALL}{_name('new')}"
        ),
        False,
    ),
    (
        "zh_from_now_on",
        re.compile(rf"{_ZH_FROM_NOW}[，,\s]*(?:请|你)?(?:就|要)?(?:可以)?{_ZH_CALL}{_name('new')}"),
        False,
    ),
    (
        "zh_call_me_suffix",
        re.compile(
            rf"{_CLAUSE}(?:请|你可以|你就|就|你|还是|你还是)?{_ZH_CALL}{_name('new')}(?:吧|就好|就行|就可以|好了|好吗)"
        ),
        False,
    ),
    ("zh_call_me_alone", re.compile(rf"^\s*(?:请)?{_ZH_CALL}{_name('new')}[。.!！~～]*\s*$"), False),
    # "你可以叫我小雨", "那你就叫我老李", "你直接叫我阿杰吗？": a permission (可以, 就, 直接) makes 叫我X a
    # request wherever the clause ends; the name stops before the next clause.
    (
        "zh_may_call_me",
        re.compile(
            rf"{_CLAUSE}(?:那|那么|所以)?(?:你|您)?(?:也)?(?:可以|就|直接)+{_ZH_CALL}{_name('new')}"
            r"(?:吧|吗|嘛|就好|就行|好了)?(?=[。.!！~～?？]*\s*$|[，,；;])"
        ),
        False,
    ),
    # "大家都叫我阿杰，你也可以这么叫": what others call the user, offered in the next clause.
    (
        "zh_others_call_me",
        re.compile(
            rf"{_ZH_CALL}{_name('new')}[，,。！!\s]+(?:所以|那)?(?:你|您)(?:也)(?:可以|就)?(?:这么|这样)?(?:叫|喊|称呼)"
        ),
        False,
    ),
    # "我叫李伟，不过大家都叫我小李", "My name's Elizabeth but everyone calls me Liz": the name, and then
    # what people call the user, set against it: the latter is the name to use (the name itself is
    # the profile's `name`). Before the plain "我叫X" / "my name is X", which would take the first.
    (
        "zh_name_but_called",
        re.compile(
            rf"{_CLAUSE}(?:(?:你好|嗨|哈喽|大家好|您好)[呀啊！!，,～~\s]*)?(?P<is>我(?:的)?名字(?:叫|是)|我叫|我是)"
            rf"(?P<given>[^，,。.!！?？\s]{{1,12}})[，,\s]*(?P<but>不过|但是|但|可是|可)?"
            rf"(?:大家|朋友们?|身边的人|别人|他们|家里人|同事们?|熟人)(?:都|一般|通常|平时)*{_ZH_CALL}{_name('new')}"
            r"(?=$|[，,。.!！~～;；\s])"
        ),
        True,
    ),
    (
        "zh_rename",
        re.compile(rf"(?:我(?:已经)?|把我的名字|我的名字)(?:改名|改)(?:叫|为|成|作)了?{_name('new')}"),
        False,
    ),
    (
        "zh_my_name_is",
        re.compile(
            rf"{_CLAUSE}(?:你好|嗨|哈喽)?[，,\s]*(?:我(?:的)?名字(?:叫|是)|我叫){_name('new')}"
            r"(?=(?:吧|啊|呀|哦|嘛|哈|呢|啦)*(?:$|[，,。.!！~～;；\s]))"
        ),
        True,
    ),
    # "嗨，我是周明杰", "大家好，我是李伟", "我是王海生", "本人张伟", "对了，我是王海生": after a greeting,
    # starting a sentence, or after a discourse marker that turns to something new (`_ZH_ASIDE_LEAD`: 对了,
    # 忘了说, 顺便说一下, 自我介绍一下), "我是" / "本人" names the user when a person's full name follows
    # and ends the clause (`zh_full_name`: "嗨，我是医生", "你好，我是杭州人", "对了，我是学生", "我是新来
    # 的" name no one).
    (
        "zh_hi_im",
        re.compile(
            rf"(?:(?:^|(?<=[。.!！?？\n]))\s*|{_CLAUSE}(?P<hi>你好|嗨|哈喽|大家好|您好|hi|hello|hey)[呀啊！!，,。.～~\s]*|"
            rf"{_CLAUSE}{_ZH_ASIDE_LEAD}[，,。.!！～~\s]*)"
            rf"(?:我是|本人(?:是|叫)?){_name('new')}"
            r"(?=(?:吧|啊|呀|哦|嘛|哈|呢|啦)*(?:$|[，,。.!！~～;；\s]))",
            re.I,
        ),
        True,
    ),
    # "我姓王，叫海生", "我姓李，叫李明", "我姓欧阳，单名一个娜": the surname, then the given name (or the
    # whole name) after 叫: the name is both.
    (
        "zh_surname_given",
        re.compile(
            rf"{_CLAUSE}(?:(?:你好|嗨|哈喽|大家好|您好)[呀啊！!，,。.～~\s]*)?我姓(?P<surname>[{_CJK}]{{1,2}}?)[，,、\s]*"
            rf"(?:名字?叫|名字是|叫|单名一个|单名|名){_name('new')}"
            r"(?=(?:吧|啊|呀|哦|嘛|哈|呢|啦)*(?:$|[，,。.!！~～;；\s]))"
        ),
        True,
    ),
    (
        "en_not_x_but_y",
        re.compile(
            rf"\b(?:don'?t|do not|stop|quit|no more)\s+call(?:ing)?\s+me\s+{_name('old')}"
            rf"(?:\s+any\s?more)?{_EN_ASIDE}\s*[,;.!\u2026]*\s*(?:and\s+|but\s+)?{_EN_LEAD}(?:{_EN_FROM_NOW}[,\s]+)?"
            rf"(?:call\s+me|{_EN_PREFER}|{_EN_USE_NAME})\s+{_name('new')}",
            re.I,
        ),
        False,
    ),
    # "I'd rather you call me Liz", "I'd prefer to be called Liz", "I prefer going by Liz": a wish
    # about how to be called, wherever it stands in the message.
    (
        "en_prefer_called",
        re.compile(
            r"\bI(?:'d|\s+would)?\s+(?:much\s+|really\s+|actually\s+|still\s+)?(?:prefer|rather|like)\s+(?:it\s+if\s+)?"
            r"(?:you\s+(?:to\s+)?call(?:ed)?\s+me|(?:to\s+)?be(?:ing)?\s+called|(?:to\s+)?go(?:ing)?\s+by)\s+"
            rf"{_name('new')}",
            re.I,
        ),
        False,
    ),
    # "我更喜欢别人叫我小李", "我比较希望你叫我阿杰", "我更喜欢被叫做小李": what the user would rather
    # be called.
    (
        "zh_prefer_called",
        re.compile(
            rf"{_CLAUSE}我(?:更|比较|还是|其实|倒是|会)*(?:喜欢|希望|想让|想要|愿意)(?:你|您|别人|大家|人家)?"
            rf"(?:{_ZH_CALL}|被(?:叫做?|称为|称作|喊作?))(?:为|做)?{_name('new')}"
        ),
        False,
    ),
    # "I prefer Liz" said alone, by a user whose name the profile holds (the only context in which a
    # bare capitalised word after "prefer" is a name rather than a taste: "I prefer Coke"): see
    # `detect(named=...)`. Applied only then.
    (
        "en_prefer_bare",
        re.compile(
            r"^\s*(?:(?:well|actually|oh|no|hmm|um|sorry|haha|lol|hey)[,.!\s]+)*I(?:'d|\s+would)?\s+"
            r"(?:much\s+|actually\s+|really\s+)?prefer\s+(?P<new>(?-i:[A-Z][a-z'\-]+))"
            r"(?:\s*,?\s*(?:please|actually|instead|thanks|thank you|if you don't mind|tbh))*\s*[.!~]*\s*$",
            re.I,
        ),
        False,
    ),
    (
        "en_call_me",
        re.compile(
            rf"(?:^|(?<=[.!?;,\u2026]\s)|(?<=[.!?;,\u2026])|{_EN_FROM_NOW}[,\s]+){_EN_LEAD}(?:call\s+me|{_EN_USE_NAME})\s+"
            rf"{_name('new')}",
            re.I,
        ),
        False,
    ),
    # "my friends call me Dave, you can too", "everyone calls me Dave, so you may as well": what others
    # call the user, offered in the next clause ("they call me Dave at work" alone offers nothing).
    (
        "en_others_call_me",
        re.compile(
            rf"\bcalls?\s+me\s+{_name('new')}\s*[,;.!]\s*(?:so\s+|and\s+)?you\s+(?:can|could|may|might|should)"
            r"(?:\s+(?:too|as\s+well|also|do\s+the\s+same)|\s+call\s+me\s+that)",
            re.I,
        ),
        False,
    ),
    (
        "en_name_but_called",
        re.compile(
            r"(?:\bmy\s+name(?:'s|\s+is)\s+(?P<given>[A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*)?)|"
            # "I'm Joanna Whitfield, though most people call me Jo": a capitalised name (`_given_ok`).
            r"(?:^|(?<=[.!?;,]\s)|(?<=[.!?;,]))(?P<is>I'm|I\s+am)\s+(?-i:(?P<given2>[A-Z][a-z'\-]+(?:\s+[A-Z][a-z'\-]+){0,2})))"
            r"\s*(?:,?\s+(?P<but>but|though|although)\s+|,\s*(?:and\s+)?|\s+and\s+)"
            r"(?:(?:everyone|everybody|people|most people|(?:all\s+)?my friends|friends|they(?:\s+all)?|"
            r"my family)\s+(?:just\s+|usually\s+|all\s+)?calls?\s+me|"
            # "my name is Robert but please call me Bob": a request, as "call me Bob" is.
            r"(?:please\s+|you\s+can\s+|you\s+may\s+|just\s+)*call\s+me)\s+"
            rf"{_name('new')}",
            re.I,
        ),
        True,
    ),
    # "my name is not Tom, it's Tim", "my name isn't Tom — it's Tim", "you got my name wrong, it's Tim",
    # "that's not my name, it's Tim": a correction names the wanted name after "it's" / "it is".
    (
        "en_name_correction",
        re.compile(
            rf"\b(?:my\s+name(?:\s+is\s+not|\s+isn'?t|'s\s+not)\s+{_name('old')}|"
            r"(?:you\s+(?:got|have|spelled|spelt)\s+my\s+name\s+wrong|that'?s\s+not\s+my\s+name|"
            r"that\s+is\s+not\s+my\s+name|wrong\s+name))\s*[,;.!:\u2014\u2013-]*\s*(?:actually\s+|but\s+)?"
            rf"(?:it'?s|it\s+is|my\s+name\s+is|i'?m)\s+(?:actually\s+)?{_name('new')}",
            re.I,
        ),
        True,
    ),
    (
        "en_my_name_is",
        re.compile(rf"(?<!what's )(?<!what is )\bmy\s+name(?:'s|\s+is)\s+(?!not\b){_name('new')}", re.I),
        True,
    ),
    # "别叫我雨哥了", "stop calling me Danny": the old name alone. Applied, it ends that preferred name
    # if it is the one in force (the user's name, if known, is used again) and does nothing otherwise,
    # so a misread ("别叫我起床" is not one: 起 cannot start a name) cannot set anything.
    (
        "zh_not_x",
        re.compile(
            rf"{_CLAUSE}(?:你|请你?)?(?:别|不要|不准|不许)(?:再)?{_ZH_CALL}{_name('old')}(?:了)?"
            r"(?=$|[，,。.!！~～、；;\s])"
        ),
        False,
    ),
    (
        "en_not_x",
        re.compile(
            rf"(?:^|(?<=[.!?;,]\s)|(?<=[.!?;,])){_EN_LEAD}(?:please\s+)?(?:don'?t|do not|stop|quit)\s+"
            rf"call(?:ing)?\s+me\s+{_name('old')}(?:\s+any\s?more)?\s*(?=$|[,;.!\u2026])",
            re.I,
        ),
        False,
    ),
    (
        "en_called",
        re.compile(
            rf"\b(?:i'?m called|i am called|i go by|i changed my name to|rename me to|change my name to)\s+"
            rf"{_name('new')}",
            re.I,
        ),
        False,
    ),
]

# "别记了", "不要记住", "不用记下来": asks that it not be kept, at the end of the clause only ("别记错了"
# asks to remember it right, "别记恨我" not to hold a grudge, "我总是记不住" is no request).
_ZH_DONT_KEEP = r"(?:别|不要|不用|不必|甭)(?:再)?记(?:住|下来|下|着)?(?:了|吧|啦)*(?=$|[。！!，,~～\s])"
_ZH_FORGET_VERB = (
    rf"(?:忘掉(?!了)|忘了吧|忘记吧|忘记(?=$|[。！!，,])|删掉(?!了)|删了吧|删除|撤回|{_ZH_DONT_KEEP})"
)
# 刚 alone only before what was said ("删掉我刚说的", "把我刚发的删了"); 上面 only before what it points
# at ("上面那件事", "上面说的").
_ZH_LAST = r"(?:刚才|刚刚|刚(?=(?:说|发|讲)的)|上面(?=(?:我)?(?:说的|发的|那|这))|上一句|上一条|前一句|前一条|那句|这句)"
# What was said, after 刚才 / 上面: "那句话", "那条消息", "那件事", "的话".
_ZH_LAST_WHAT = r"(?:那句话?|那条(?:消息)?|这句话?|那件事情?|这件事情?|那个事情?|那些话|的事情?|的话|的)"
_ZH_ASK = r"(?:请|麻烦你?|帮我|你|拜托|求你)?"
_EN_FORGET_OBJ = (
    r"(?:that|this|what i (?:just )?(?:said|wrote|typed|told you|sent)|my (?:last|previous) "
    r"(?:message|msg|sentence|text|question)|the (?:last|previous) (?:message|thing i said)|"
    r"everything i just said|i said that)"
)

FORGET_RULES: list[tuple[str, re.Pattern[str]]] = [
    # "忘掉刚才那句话", "忘记我刚才说的", "删除上一条"
    (
        "zh_forget_last",
        re.compile(
            rf"{_CLAUSE}{_ZH_ASK}(?:忘掉|忘记|删掉|删除|撤回|(?:别|不要|不用)记(?:住|下)?)(?:我)?{_ZH_LAST}"
        ),
    ),
    # "把刚才那句话忘掉", "刚才说的删了吧"
    (
        "zh_last_forget",
        re.compile(
            rf"{_CLAUSE}{_ZH_ASK}(?:把)?(?:我)?{_ZH_LAST}(?:我)?(?:说的|发的)?{_ZH_LAST_WHAT}?"
            rf"(?:给我|你|请你|你就|就|帮我)?{_ZH_FORGET_VERB}"
        ),
    ),
    # "把刚刚那句删了", "把我刚说的忘了": a bare 删了/忘了 ends a request only after a 把 that starts the
    # clause ("我把刚才那句删了" says what the speaker did).
    (
        "zh_ba_last_done",
        re.compile(
            rf"{_CLAUSE}{_ZH_ASK}把(?:我)?{_ZH_LAST}(?:我)?(?:说的|发的)?{_ZH_LAST_WHAT}?"
            r"(?:给我|你|请你|你就|就|帮我)?(?:删了|忘了)(?:吧)?(?=$|[。！!~～\s])"
        ),
    ),
    # "刚才提到我前男友的那句你忘掉吧": a few words say which message, then 那句/那条 and the verb.
    (
        "zh_last_which_forget",
        re.compile(
            rf"{_CLAUSE}{_ZH_ASK}(?:把)?{_ZH_LAST}[^，,。.!！?？\s]{{1,12}}?(?:那句话?|那条(?:消息)?|这句话?)"
            rf"(?:给我|你|请你|你就|就|帮我)?{_ZH_FORGET_VERB}"
        ),
    ),
    ("zh_pretend", re.compile(rf"{_CLAUSE}(?:就)?当我(?:刚才)?没说(?:过)?")),
    (
        "en_forget_last",
        re.compile(
            r"(?:^|(?<=[.!?;,]\s)|(?<=[.!?;,]))(?:(?:please|pls|can you|could you|would you|just|oh|actually|"
            r"ok|okay|hey|and|no|wait)[,\s]+)*(?:forget|delete|erase|remove|scratch|disregard|ignore|unsee)\s+"
            rf"{_EN_FORGET_OBJ}(?:\s*(?:please|pls))?\s*(?=$|[.!?,;])",
            re.I,
        ),
    ),
]


# Imperatives only: at the start of a clause, after polite words ("I forget everything about
# math" is not a request; "please forget everything about my ex" is).
_EN_ASK = (
    r"(?:^|(?<=[.!?;,]\s)|(?<=[.!?;,]))\s*(?:(?:please|pls|can you|could you|would you|will you|just|"
    r"ok|okay|hey|and|now|actually|also|so|oh|well|i want you to|i'd like you to|i need you to)[,\s]+)*"
)
_ZH_NOT_SUBJECT = r"(?<![我他她它])"

# "删除所有关于我的数据", "delete everything you know about me": the whole user.
_ZH_ALL_VERB = r"(?:删除|删掉|删了|清除|清空|抹掉|抹去|忘掉|忘了|忘记)"
_ZH_ALL_WHAT = r"(?:数据|信息|记忆|记录|资料|东西|事情?|内容|一切|聊天记录)"
_ZH_ABOUT_ME = r"(?:关于我|有关我|我)的"
FORGET_ALL_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "zh_delete_all_about_me",
        re.compile(
            rf"{_ZH_ALL_VERB}(?:你)?(?:所有|全部|一切)?{_ZH_ABOUT_ME}(?:所有|全部|一切)?{_ZH_ALL_WHAT}"
        ),
    ),
    (
        "zh_all_about_me_delete",
        re.compile(
            rf"(?:把|将)?{_ZH_ABOUT_ME}(?:所有|全部|一切)?{_ZH_ALL_WHAT}(?:都|全部|全都|统统|全)?(?:给我)?{_ZH_ALL_VERB}"
        ),
    ),
    (
        "en_everything_about_me",
        re.compile(
            _EN_ASK + r"(?:delete|erase|forget|remove|wipe|purge|clear)\s+(?:all|everything|anything)\s+"
            r"(?:(?:that\s+)?you\s+(?:know|have|remember|stored?|keep)\s+)?(?:about|of|on)\s+me\b",
            re.I,
        ),
    ),
    (
        "en_all_my_data",
        re.compile(
            _EN_ASK + r"(?:delete|erase|remove|wipe|purge|clear)\s+(?:all\s+(?:of\s+)?)?my\s+"
            r"(?:data|information|info|memories|history|records|personal data)\b",
            re.I,
        ),
    ),
]

# "把关于我前任的事都忘了", "forget everything about my ex": every turn that mentions a topic.
_ZH_TOPIC_WHAT = r"(?:聊天记录|事|事情|一切|内容|记忆|话|东西|消息|记录|部分)"
_ZH_TOPIC = r"(?P<topic>[^，,。！!？?、；;\s的]{1,20})"
# The verb of "别记我工作的事了": 别 / 不要 / 不用 (再) 记 (着 / 住 / 下).
_ZH_DONT_KEEP_VERB = r"(?:别|不要|不用|不必|甭)(?:再)?记(?:着|住|下)?"
# What after 别记 makes it another verb (记错, 记恨, 记仇, 记在心上, 记得, 记笔记) or names no topic.
_ZH_KEEP_NOT_OBJECT = r"[错恨仇得性忆录账笔号载在挂]"
# Whose the topic is, said before it: the user's (我, 我的) or their household's or group's (我们家, 咱家,
# 咱们公司, 俺家): "把我们家的事都忘了" is the family, "把我们公司的事忘掉" the job, never a topic "们家".
_ZH_MINE = r"(?:我们|咱们|俺们|我|咱|俺)"
# What may open the clause before a topic named first: a discourse marker (算了, 其实, 好吧, 说真的, 以后)
# or the user's own stance (我觉得, 我想了想, 我决定): "我觉得工作的事你就别记了", "算了工作的事别记了",
# "其实我们家的事不用记". Never someone else's ("他觉得…": no lead, and 他 starts no topic).
_ZH_LEAD_WORDS = (
    r"(?:算了|好吧|好了|嗯|唉|哎|其实|说真的|老实说|说实话|对了|还有|另外|不过|所以|总之|反正|要不然?|还是|"
    r"以后|今后|往后|从现在起|从今以后)"
)
_ZH_STANCE_VERB = r"(?:觉得|感觉|认为|想了想|想了一下|考虑了一下|决定了?|希望)"
_ZH_LEAD = rf"(?:(?:{_ZH_LEAD_WORDS}|我(?:还是|其实|真的|现在)?{_ZH_STANCE_VERB})[，,\s]*)*"
# The topic of a "don't keep it" command: no one else's ("他的事你别记了", "她工作的事别记了" name no
# topic of the user's to search for) and not the user alone ("我的事" is no topic), no time or message
# word (刚才 / 上面 / 那件: the last message, `zh_last_forget`), nothing said ("我说的事": what was said,
# not a topic), and no opening word (`_ZH_LEAD`: "我觉得工作" is no topic).
_ZH_KEEP_TOPIC = (
    rf"(?P<topic>(?![你您他她它们]|{_ZH_MINE}(?:自己)?(?:的|那)|我?[说讲提]|我?{_ZH_STANCE_VERB}|{_ZH_LEAD_WORDS}|"
    r"刚|上面|之前|以前|昨天|今天|前天|那|这)"
    r"[^，,。！!？?、；;\s的]{1,20}?)(?:有关|相关)?"
)
_ZH_KEEP_WHAT = r"(?:的(?:事情?|那些(?:事情?)?)|那些(?:事情?)?)"
FORGET_TOPIC_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "zh_about_x_forget",
        re.compile(
            rf"(?:把|将)?(?:关于|有关)(?:我的)?{_ZH_TOPIC}的{_ZH_TOPIC_WHAT}?(?:都|全部|全都|统统|全)?"
            rf"(?:给我)?{_ZH_ALL_VERB}"
        ),
    ),
    (
        "zh_forget_about_x",
        re.compile(
            rf"{_ZH_NOT_SUBJECT}(?:忘掉|忘记|删除|删掉|清除|清空|抹掉)(?:我(?:说|讲|提)过的)?(?:所有|全部|一切)?(?:关于|有关)(?:我的)?"
            rf"{_ZH_TOPIC}的(?:所有|全部|一切)?{_ZH_TOPIC_WHAT}"
        ),
    ),
    # "把演唱会的事都忘了": no 关于, so only after 把/将 with no subject before it ("我把演唱会的事忘了"
    # says the speaker forgot), and never a time word ("把刚才的事忘了" is about the last message).
    (
        "zh_ba_x_forget",
        re.compile(
            rf"(?<![我他她它们])(?:把|将)(?:我(?:说|讲|提|聊)过的(?:(?:关于|有关)(?:{_ZH_MINE}的?)?)?|{_ZH_MINE}(?:和|跟|的)?)?"
            rf"(?P<topic>(?![你您他她它们]|我?[说讲])[^，,。！!？?、；;\s的]{{1,20}}?)(?:有关|相关)?的"
            rf"{_ZH_TOPIC_WHAT}(?:都|全部|全都|统统|全)?(?:给我)?{_ZH_ALL_VERB}"
        ),
    ),
    # "忘掉我前任的事吧", "删掉我说过的演唱会的事": no 关于 and no 把, so only as a request at the start of a
    # clause with a verb that asks (忘记 also tells: "忘记交作业的事了"), never after a negation ("不要忘掉…"
    # asks to remember), and no feeling or demonstrative as the topic ("忘掉那些不开心的事吧" is consolation).
    (
        "zh_forget_x_thing",
        re.compile(
            rf"{_CLAUSE}{_ZH_LEAD}{_ZH_ASK}(?:忘掉|删掉|删除|清除|抹掉)(?:我(?:说|讲|提|聊)过的)?(?:所有|全部|一切)?"
            rf"(?:{_ZH_MINE}的?)?(?P<topic>(?!我?[说讲]|[那这不你您他她它们])[^，,。！!？?、；;\s的]{{1,20}}?)(?:有关|相关)?的"
            rf"{_ZH_TOPIC_WHAT}(?!了)"
        ),
    ),
    # "别记我工作的事了", "别再记着我前任的事了", "不要记我借钱的事", "不用记我家里那些事": 别记 / 不要记 /
    # 不用记 (the session-29 rule for the last message, `_ZH_DONT_KEEP`) with a topic named as 的事 /
    # 的事情 / 那些, at the start of a clause and ending it. 记 that asks for something else is no
    # such verb: 记错, 记恨, 记仇, 记在心上 (consolation), 记笔记, 记得.
    (
        "zh_dont_keep_x",
        re.compile(
            rf"{_CLAUSE}{_ZH_LEAD}{_ZH_ASK}(?:你)?(?:就|也|可以)?{_ZH_DONT_KEEP_VERB}(?:关于|有关)?(?:{_ZH_MINE}的?)?"
            rf"(?!{_ZH_KEEP_NOT_OBJECT}){_ZH_KEEP_TOPIC}{_ZH_KEEP_WHAT}(?:了|吧|啦)*(?=$|[。！!，,~～\s])"
        ),
    ),
    # "我家里的事你别记了", "关于我感情的事别记了", "前任的事情就不用再记着了": the topic first, then the
    # clause ends with 别记了 / 不要记 / 不用记 (`_ZH_DONT_KEEP`: "我工作的事你别记错了" asks nothing).
    (
        "zh_x_dont_keep",
        re.compile(
            rf"{_CLAUSE}{_ZH_LEAD}(?:把|将)?(?:关于|有关)?(?:{_ZH_MINE}的?)?{_ZH_KEEP_TOPIC}{_ZH_KEEP_WHAT}"
            rf"(?:你|您|就|也|都|还是|以后|可以)*{_ZH_DONT_KEEP}"
        ),
    ),
    # "erase all memories of my ex", "delete every message about the wedding", "wipe your memory of
    # Jake": what is to go is named as memories or messages.
    (
        "en_memories_of_x",
        re.compile(
            _EN_ASK
            + r"(?:forget|delete|erase|remove|wipe|clear|purge)\s+(?:(?:all|any|every|each)\s+)?(?:(?:of\s+)?"
            r"(?:the|your|my|our)\s+)?(?:memories|memory|messages?|conversations?|chats?|mentions?|records?|"
            r"notes?)\s+(?:(?:that\s+)?(?:i\s+(?:said|wrote|sent|shared)|we\s+had)\s+)?(?:of|about|regarding|"
            r"involving|mentioning|on|with)\s+(?P<topic>[^.!?,;]{1,40})",
            re.I,
        ),
    ),
    # "forget everything I said about my boss", "forget what I told you about the concert"; a bare
    # "forget about work" is left alone (it usually means "stop thinking about it").
    (
        "en_everything_about_x",
        re.compile(
            _EN_ASK + r"(?:forget|delete|erase|remove)\s+(?:(?:all|everything|anything)\s+(?:(?:that\s+)?i\s+"
            r"(?:just\s+)?(?:said|told you|mentioned|wrote|shared)\s+|you\s+know\s+)?|what\s+i\s+(?:just\s+)?"
            r"(?:said|told you|mentioned|wrote|shared)\s+)(?:about|regarding|related\s+to|to\s+do\s+with)\s+"
            r"(?P<topic>[^.!?,;]{1,40})",
            re.I,
        ),
    ),
    # "forget my address", "please delete my phone number", "forget where I live": a personal detail
    # named bare (`TopicField.detail`; "forget my job" is left alone, `_detect_forget`).
    (
        "en_forget_my_detail",
        re.compile(
            _EN_ASK
            + r"(?:forget|delete|erase|remove|wipe)\s+(?P<topic>(?:my|our)\s+[a-z][a-z ]{1,30}?|where i live)"
            r"(?:\s*,?\s*(?:please|pls|too|as well|for me|for good))?\s*(?=$|[.!?,;])",
            re.I,
        ),
    ),
    # "把我的住址忘了吧", "将我的手机号删掉" (never "我把我的住址忘了": the speaker forgot it).
    (
        "zh_ba_my_detail",
        re.compile(
            rf"(?<![我他她它们])(?:把|将){_ZH_MINE}的?(?P<topic>[^，,。！!？?、；;\s的]{{1,8}}?)(?:都|也|全|给我|你)*"
            r"(?:忘掉|忘了|忘记|删掉|删了|删除|清除|抹掉)(?:吧|啦|哈)?(?=$|[。！!~～\s，,])"
        ),
    ),
    # "忘掉我的地址", "删掉我的手机号吧".
    (
        "zh_forget_my_detail",
        re.compile(
            rf"{_CLAUSE}{_ZH_LEAD}{_ZH_ASK}(?:忘掉|删掉|删除|清除|抹掉){_ZH_MINE}的?"
            r"(?P<topic>[^，,。！!？?、；;\s的]{1,8}?)(?:吧|啦|哈)?(?=$|[。！!~～\s，,])"
        ),
    ),
]

# Words that name a time or a message rather than a topic: "把刚才的事忘了" asks to forget the last
# message (a `forget_last` rule), "把昨天的事都忘了" names no topic to search for; nor do "我们俩" / "我们
# 之间" (the two people, not a topic).
_NOT_TOPICS = frozenset(
    "it that this them 那 这 那些 这些 刚才 刚刚 之前 以前 上次 上一条 那句 这句 昨天 今天 前天 那天 我说 你说 俩 两个 之间".split()  # noqa: SIM905 - a word list reads better as text
)

# A topic also matches its common variants, in both languages (data, not fitted to any dataset:
# kinship words and their plain translations). CC-CEDICT's senses are not used here: they are too
# ambiguous to delete by (前任's first sense is "predecessor", 老板's a brand name, 三体's "trisomy").
_VARIANT_GROUPS: tuple[tuple[str, ...], ...] = (
    (
        "前任",
        "前男友",
        "前女友",
        "前夫",
        "前妻",
        "ex",
        "ex-boyfriend",
        "ex-girlfriend",
        "ex-husband",
        "ex-wife",
        "ex boyfriend",
        "ex girlfriend",
        "ex husband",
        "ex wife",
    ),
)
TOPIC_VARIANTS: dict[str, tuple[str, ...]] = {w.lower(): g for g in _VARIANT_GROUPS for w in g}
_EX = "ex"  # the topic of a former partner (`_VARIANT_GROUPS`)

_ME = {"我", "我自己", "自己", "me", "myself"}


def _clean_topic(raw: str) -> str:
    topic = raw.strip().strip("\"“”'‘’「」").strip()
    topic = re.sub(r"^(?:my|our|the|your)\s+", "", topic, flags=re.I)
    topic = re.sub(rf"^{_ZH_MINE}的?(?=.)", "", topic)
    return topic.strip()


def topic_terms(topic: str) -> list[str]:
    """The words whose mention puts a turn under `topic`: the topic and its known variants."""
    return list(TOPIC_VARIANTS.get(topic.lower(), (topic,)))


@dataclass(frozen=True, slots=True)
class TopicPattern:
    """What finds a topic's words in a message (`topic_pattern`): a regex for the words of two
    characters or more, and the one-character Han words, found only as whole words of the message's
    segmentation (`segment.terms`): 猫 is in "我的猫生病了", not in "熊猫"; 钱 not in "钱塘江". jieba
    keeps the user's own kin as one word ("我弟", "我妹"): that is the word 弟, 妹 too."""

    regex: re.Pattern[str] | None
    chars: frozenset[str] = frozenset()

    def search(self, text: str) -> bool:
        if self.regex is not None and self.regex.search(text):
            return True
        if not self.chars or not any(c in text for c in self.chars):
            return False
        return any(w in self.chars or w.removeprefix("我") in self.chars for w in segment_terms(text))


def topic_pattern(topic: str, also: Sequence[str] = ()) -> TopicPattern:
    """What finds any of the topic's words and of `also`: Latin words whole, case-insensitive; CJK
    words of two characters or more as substrings, one Han character only as a whole word. A general
    topic named by one character (钱: `topic_field`) is not searched for itself: its field's words
    say what it means ("不要钱" is free, not the user's money)."""
    parts = []
    chars: set[str] = set()
    words = dict.fromkeys([*topic_terms(topic), *also])
    if _ONE_HAN.fullmatch(topic.strip()) and topic_field(topic) is not None:
        words.pop(topic.strip(), None)
    for term in sorted(words, key=len, reverse=True):
        if _ONE_HAN.fullmatch(term):
            chars.add(term)
            continue
        esc = re.escape(term)
        # A Latin word whole, and not the first part of a hyphenated one ("ex" is not "ex-boss").
        parts.append(esc if re.search(rf"[{_CJK}]", term) else rf"(?<![A-Za-z]){esc}(?![A-Za-z]|-[A-Za-z])")
    return TopicPattern(re.compile("|".join(parts), re.I) if parts else None, frozenset(chars))


_ONE_HAN = re.compile(rf"[{_CJK}]")

# The rule lists as the rules that can match a text of each script (`scripts.needs`).
_FORGET_ALL_RULES = ByScript(FORGET_ALL_RULES, lambda r: r[1])
_FORGET_TOPIC_RULES = ByScript(FORGET_TOPIC_RULES, lambda r: r[1])
_FORGET_RULES = ByScript(FORGET_RULES, lambda r: r[1])
_RENAME_RULES = ByScript(RENAME_RULES, lambda r: r[1])


def _detect_forget(text: str) -> Command | None:
    scripts = present(text)
    for rule, pattern in _FORGET_ALL_RULES.at(scripts):
        m = pattern.search(text)
        if m:
            return Command(kind="forget_all", matched=m.group(0), rule=rule)
    for rule, pattern in _FORGET_TOPIC_RULES.at(scripts):
        m = pattern.search(text)
        if m:
            topic = _clean_topic(m.group("topic"))
            if rule.endswith("_detail"):
                field = topic_field(topic)
                if field is None or not field.detail:
                    continue  # "forget my job" may mean "stop thinking about it"; a detail is a request
            if topic.lower() in _ME:
                return Command(kind="forget_all", matched=m.group(0), rule=rule)
            if topic and topic.lower() not in _NOT_TOPICS:
                return Command(kind="forget_topic", value=topic, matched=m.group(0), rule=rule)
    for rule, pattern in _FORGET_RULES.at(scripts):
        m = pattern.search(text)
        if m:
            return Command(kind="forget_last", matched=m.group(0), rule=rule)
    return None


_QUOTE_MARKS = re.compile(r"[\"“”「」『』]")


def in_quote(text: str, pos: int) -> bool:
    """Whether text[pos] stands inside a quotation ('My friend said "my name is Bob"', '他说“我叫小王”'):
    words quoted are someone's words, not the user's statement or request."""
    if _QUOTE_MARKS.search(text, 0, pos) is None:
        return False
    head = text[:pos]
    if head.count('"') % 2:
        return True
    return any(head.rfind(o) > head.rfind(c) for o, c in (("“", "”"), ("「", "」"), ("『", "』")))


_CLAUSE_END = re.compile(r"[。.!！?？，,;；\n]")
_ZH_ASKS = re.compile(r"(?:吗|(?<![什怎那这多])么)[啊呀呢啦哈]*\s*$")


def ends_as_question(text: str, end: int) -> bool:
    """Whether the clause that goes on at text[end] ends as a question: a question mark, or 吗 at its
    end (the last word read may hold it: "我住在上海吗"), whether or not a question mark follows."""
    stop = _CLAUSE_END.search(text, end)
    if stop is not None and stop.group() in "?？":
        return True
    return _ZH_ASKS.search(text, max(0, end - 1), stop.start() if stop else len(text)) is not None


# Someone else's words right before a statement ("he said my name is Bob", "my mom says").
_REPORTED = re.compile(
    r"\b(?!I\b)[A-Za-z']+\s+(?:said|says|told\s+(?:me|him|her|them|us)|tells\s+(?:me|him|her|them|us)|thinks|thought|"
    r"asked|claims|claimed)\s*(?:that\s*)?[:,]?\s*$",
    re.I,
)


def _clause_is_question(text: str, start: int, end: int) -> bool:
    """Whether the clause around text[start:end] is a question ("my name is Li Wei?", "我叫李伟吗") or
    someone else's words ("he said my name is Bob").

    Only that clause counts: "我叫李伟，你叫什么？" states a name and then asks one.
    """
    if ends_as_question(text, end):
        return True
    if _REPORTED.search(text, 0, start) is not None:
        return True  # "He said my name is Bob": someone else's words
    head = text[:start].rstrip()
    return head.lower().endswith(("is", "was", "did", "do", "does", "remember"))


def detect(message: str, *, named: bool = False) -> list[Command]:
    """The commands in `message`, a forget before a rename (the order they must be applied in).

    At most one forget (the widest asked for: everything about the user, a topic, or the last
    message) and one rename; an empty list for ordinary chat. `named`: the user's profile holds a
    name, so a bare "I prefer Liz" corrects it (without a name it is a taste: "I prefer Coke").
    """
    text = message.strip()
    if not text or len(text) > 500:  # commands are short; a pasted essay that quotes one is not one
        return []
    return list(_detect(text, named))


# A turn reads its message's commands before the reply and again when it records the message
# (`profile_extract.extract`): the second time is a lookup. `_detect` is a pure function of its
# arguments (patterns and word lists fixed at import) and returns frozen `Command`s in a tuple.
@lru_cache(maxsize=64)
def _detect(text: str, named: bool) -> tuple[Command, ...]:
    found: list[Command] = []
    forget = _detect_forget(text)
    if forget is not None:
        found.append(forget)
        if forget.kind == "forget_all":
            return tuple(found)  # nothing of the user is kept, a new name included
    for rule, pattern, statement in _RENAME_RULES.at(text):
        if rule == "en_prefer_bare" and not (named and _prefer_a_name(text)):
            continue
        for m in pattern.finditer(text):
            if (statement and _clause_is_question(text, m.start(), m.end())) or in_quote(text, m.start()):
                continue
            old = _clean_name(_group(m, "old")) if "old" in pattern.groupindex else None
            if "new" in pattern.groupindex:
                new = _clean_name(_group(m, "new"))
                if new is None:
                    continue
            elif old is None or not _whole_name(_group(m, "old"), old):
                continue  # "don't call me late at night": "late" is cut from a phrase, not a name
            else:
                new = None  # "别叫我X了": the old name is retracted, no new one given
            if rule.endswith("_name_but_called"):
                given = _given(m, new)
                if given is None:
                    continue  # "I'm Chinese, but everyone calls me Lily", "我是医生，大家都叫我…": no name given
                if not m.group("but") and not (new and (nickname(new) or _short_for(new, given))):
                    continue  # "我叫李伟，大家都叫我加油" sets nothing against the name: no contrast, no nickname
            elif rule == "zh_hi_im" and not (new and _introduced(new, greeted=bool(m.group("hi")))):
                continue  # "嗨，我是医生", "你好，我是杭州人": no name
            elif rule == "zh_surname_given":
                new = _surname_given(m.group("surname"), new)
                if new is None:
                    continue
            found.append(Command(kind="rename", value=new, old=old, matched=m.group(0), rule=rule))
            break
        if any(c.kind == "rename" for c in found):
            break
    return tuple(found)


# Capitalised words after "I prefer" that are no one's name: days, months, languages and drinks
# people name with a capital.
_EN_NOT_PREFERRED = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december english chinese mandarin cantonese spanish french
    german japanese korean italian coke pepsi sprite""".split()  # noqa: SIM905 - a word list reads better as text
)


def _prefer_a_name(text: str) -> bool:
    """Whether "I prefer X" names a person: X is no day, language, drink or known place."""
    m = re.search(r"prefer\s+([A-Za-z'\-]+)", text)
    word = m.group(1) if m else ""
    return bool(word) and word.lower() not in _EN_NOT_PREFERRED and not is_place_en(word)


# "大家都叫我小明", "my friends call me Bobby": what others call the user, said alone. No command (the
# user asks for nothing): `profile_extract` reads it as the preferred name while the user has asked
# for none. Only a group ("大家", "my friends", "everyone", not "my mom" or "they ... at work") at the
# start of a clause, in the present (not "以前大家都叫我小胖", "my friends used to call me Bobby", "nobody
# calls me Bobby"), ending its clause, and no nickname the user then sets against ("…, but I hate it",
# "…，但我不喜欢").
_ZH_OTHERS = r"(?:大家|朋友们?|好朋友们?|我朋友们?|我的朋友们?|身边的人|周围的人|所有人|熟人|认识我的人)"
_OTHERS_CALL_ZH = re.compile(
    rf"{_CLAUSE}(?:其实|平时|现在)?{_ZH_OTHERS}(?:都|一般|通常|平时|也|现在)*{_ZH_CALL}{_name('new')}"
    r"(?:吧|啊|呀|哦|嘛|哈|呢|啦)*(?=$|[，,。.!！~～;；\s])"
)
_OTHERS_CALL_EN = re.compile(
    r"(?:^|(?<=[.!?;,]\s))(?:(?:well|actually|oh|haha|lol|btw|so|and|but)[,\s]+)*"
    r"(?:everyone|everybody|people|most people|(?:all\s+|most\s+of\s+)?my\s+(?:friends|mates|buddies|pals)|"
    r"friends|folks)(?:\s+here|\s+back\s+home)?\s+(?:usually\s+|just\s+|all\s+|mostly\s+|always\s+)?calls?\s+me\s+"
    r"[\"“']?(?-i:(?P<new>[A-Z][a-z'\-]+(?:\s[A-Z][a-z'\-]+)?))[\"”']?"
    r"(?=\s*$|\s*[.!,;~]|\s+(?:for\s+short|lol|haha)\b)",
    re.I,
)
# A nickname the user states ("my nickname is Bee", "我小名叫豆豆", "我的外号是大熊") is what others call
# them too, in the present: "my nickname was Bee", "我以前的外号是…", "小时候我的小名叫…" are past.
_NICKNAME_ZH = re.compile(
    rf"{_CLAUSE}(?:其实|对了)?我(?:的)?(?:小名|乳名|昵称|外号|绰号|花名)(?:一般|通常|平时|也|都|就)*(?:叫|是|叫做)"
    rf"{_name('new')}(?:吧|啊|呀|哦|嘛|哈|呢|啦)*(?=$|[，,。.!！~～;；\s])"
)
_NICKNAME_EN = re.compile(
    r"(?:^|(?<=[.!?;,]\s))(?:(?:well|actually|oh|haha|lol|btw|so|and|but)[,\s]+)*"
    r"my\s+(?:nickname|nick|pet name)(?:'s|\s+is)\s+"
    r"[\"“']?(?-i:(?P<new>[A-Z][a-z'\-]+(?:\s[A-Z][a-z'\-]+)?))[\"”']?"
    r"(?=\s*$|\s*[.!,;~]|\s+(?:for\s+short|lol|haha)\b)",
    re.I,
)
_OTHERS_CALL_AGAINST = re.compile(
    r"但|可是|不过|讨厌|不喜欢|受不了|烦|\b(?:but|though|although|hate|dislike|don't like|can't stand|annoying)\b",
    re.I,
)
# A Chinese nickname has a nickname's shape: 小X / 老X / 阿X / 大X, X哥 / X姐 / X仔 …, or a doubled
# character (芳芳, 小明明); "大家都叫我加油", "大家都叫我小心点" name no one.
_ZH_NICKNAME = re.compile(
    rf"[小老阿大][{_CJK}]{{1,2}}|[{_CJK}]{{1,2}}(?:哥|姐|仔|妹|宝|总|酱|儿)|[{_CJK}]?([{_CJK}])\1"
)
_NOT_NICKNAMES = frozenset(
    """小心 小心点 小声 小声点 小点 小点声 大胆 大胆点 大声 大声点 大点 大方 老实 老实点 老是 阿姨 叔叔 大叔
    大爷 大妈 大姐 大哥 老师 老板 老公 老婆 大人 大家 老人 mom mum mommy mummy mama dad daddy papa
    grandma grandpa granny auntie aunt uncle sir madam ma'am""".split()  # noqa: SIM905 - a word list reads better as text
)


def nickname(name: str) -> bool:
    """Whether `name` reads as a name people call someone: capitalised (Latin), or of a Chinese
    nickname's shape; no title or kinship word ("Mom", "老师")."""
    if name.lower() in _NOT_NICKNAMES:
        return False
    if re.match(r"[A-Za-z]", name):
        return name[0].isupper()
    return _ZH_NICKNAME.fullmatch(name) is not None


def others_call(text: str) -> tuple[str, str] | None:
    """What others call the user, said alone ("大家都叫我小明", "my friends call me Bobby", "my nickname
    is Bee", "我小名叫豆豆"): (rule,
    name), or None. Not in a question, nor set against in the rest of the message."""
    if "我" in text:
        m, rule = _OTHERS_CALL_ZH.search(text), "zh_others_call_me_alone"
        if m is None:
            m, rule = _NICKNAME_ZH.search(text), "zh_my_nickname_is"
    else:
        lower = text.lower()
        m, rule = _OTHERS_CALL_EN.search(text) if "call" in lower else None, "en_others_call_me_alone"
        if m is None and ("nick" in lower or "pet name" in lower):
            m, rule = _NICKNAME_EN.search(text), "en_my_nickname_is"
    if (
        m is None
        or _clause_is_question(text, m.start(), m.end())
        or _OTHERS_CALL_AGAINST.search(text, m.end())
        or in_quote(text, m.start())
    ):
        return None
    name = _clean_name(_group(m, "new"))
    if name is None or not _whole_name(_group(m, "new"), name):
        return None
    # A name said to be a nickname needs no nickname's shape ("我小名叫铁柱"), only to be no title.
    stated = rule.endswith("_my_nickname_is")
    if not (nickname(name) or (stated and name.lower() not in _NOT_NICKNAMES)):
        return None
    return rule, name


def named(profile: Profile, user_id: str, message: str) -> bool:
    """Whether `detect` should read a bare "I prefer X" in `message` as a rename: the message says
    "prefer" and the user's profile holds a name (one profile read, only for such a message)."""
    if "prefer" not in message.lower():
        return False
    return profile.get(user_id, NAME) is not None or profile.get(user_id, PREFERRED_NAME) is not None


# Statements of the user's name (the profile's `name`), as `detect` names them.
NAME_RULES = ("zh_my_name_is", "en_my_name_is", "zh_hi_im", "zh_surname_given", "en_name_correction")
_NAME_BUT_CALLED = ("zh_name_but_called", "en_name_but_called")


def stated_name(text: str) -> str | None:
    """The name a statement "我叫X" / "my name is X" / "嗨，我是周明杰" / "I'm Joanna Whitfield, though
    most people call me Jo" in `text` gives (not in a question), or None. With "…, but everyone calls
    me Y" the rename is Y; this is the name itself (the profile's `name`)."""
    for rule, pattern, _ in _RENAME_RULES.at(text):
        if rule not in _NAME_BUT_CALLED and rule not in (
            "zh_my_name_is",
            "en_my_name_is",
            "zh_hi_im",
            "zh_surname_given",
        ):
            continue
        for m in pattern.finditer(text):
            if _clause_is_question(text, m.start(), m.end()) or in_quote(text, m.start()):
                continue
            name = _clean_name(_group(m, "new"))
            if rule in _NAME_BUT_CALLED:
                name = _given(m, name)
            elif rule == "zh_hi_im" and not (name and _introduced(name, greeted=bool(m.group("hi")))):
                name = None
            elif rule == "zh_surname_given":
                name = _surname_given(m.group("surname"), name)
            if name:
                return name
    return None


# Common Chinese surnames (a person's full name starts with one): "嗨，我是周明杰" names the user, "嗨，
# 我是医生" does not.
_ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈"
    "姚卢姜崔钟谭陆汪范金石廖贾夏韦付傅方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向"
    "汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕"
    "单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦"
    "褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明"
    "佘池查麻苑迟邝官封谈匡鞠惠荆乐冀郁胥南班储原栗燕楚鄢劳谌奚皮粟冼蔺楼盘满闻位厉伊仝区郜海阚花权强帅"
    "屠豆朴盖练廉禹井祖漆巴丰支卿国狄平计索宣晋相初门云容敬来扈晁芮都普阙浦戈伏鹿薄邸雍辜羊阿乌母裘亓修"
    "邰赫杭况那宿鲜印逯隆茹诸战慕危玉银亢嵇公哈湛宾戎勾茅利於呼居揭干但尉冶斯元束檀衣信展阴昝智幸奉植衡"
    "富尧闭由"
)
_ZH_COMPOUND_SURNAMES = frozenset(
    "欧阳 司马 上官 诸葛 东方 皇甫 慕容 令狐 尉迟 长孙 公孙 夏侯 司徒 端木 独孤 南宫 西门 宇文".split()  # noqa: SIM905 - a word list reads better as text
)
# What ends a role, not a name: "我是高中生", "我是白领", "我是杭州人", "我是做饭的". A name may end in one
# too ("王海生", "李建生", "陈一手"): see `_zh_role`.
_ZH_ROLE_END = re.compile(
    r"(?:人|的|们|师|员|生|家|工|手|者|长|官|医|匠|士|警|商|板|总|领|族|控|迷|粉|哥|姐|妹|弟)$"
)
# Titles said after a surname ("王医生", "李老师", "吴先生", "张总"): how one addresses a person whose
# name is not said, a closed class of Chinese terms of address.
_ZH_TITLES = frozenset(
    """医生 大夫 老师 教授 先生 女士 小姐 太太 夫人 律师 博士 师傅 经理 主任 总 工 老板 同学 护士 警官
    科长 处长 局长 部长 校长 院长 所长 厂长 主管 总监 队长 班长 书记 导演 教练 记者""".split()  # noqa: SIM905 - a word list reads better as text
)


# The end of a place named after a family (王家村, 李家庄, 刘家湾): no person's name.
_ZH_FAMILY_PLACE_END = frozenset("村庄口湾镇屯寨堡坡沟坝营铺集巷桥岭峪洼塘港窑")


def _jieba_word(word: str) -> bool:
    """Whether `word` is in jieba's dictionary (its prefixes are stored with count 0)."""
    from memsched.text.segment import _jieba

    return bool(_jieba().dt.FREQ.get(word))


def _zh_role(name: str, surname: int) -> bool:
    """Whether `name` (a surname of `surname` characters and the rest) reads as a role, not a name:
    a title after the surname ("王医生"); or a role ending (`_ZH_ROLE_END`) on a word or a place
    ("高中生": 高中 is a word; "白领", "杭州人"). A name whose last character only happens to end
    roles is none ("王海生": 王海 is no word, "李建生", "陈一手")."""
    if name[surname:] in _ZH_TITLES:
        return True
    if _ZH_ROLE_END.search(name) is None:
        return False
    stem = name[:-1]
    return len(name) == 2 or _jieba_word(stem) or is_place_zh(stem)


def zh_full_name(name: str, called: str | None = None, *, bare: bool = False) -> bool:
    """Whether `name` reads as a person's full Chinese name: a common surname and one or two characters
    more ("周明杰", "欧阳娜娜", "王海生"), no role ("高中生", "白领", "王医生", `_zh_role`) and no place,
    and jieba reads it as a person's name: one word tagged one (nr), or the surname its first word
    ("王海生" is 王/海生). What people call the user, when it is part of the name ("周明杰" / "明杰"),
    is evidence enough. It is no word CC-CEDICT knows of three characters ("马大哈", "白富美"), nor of
    two when `bare`: said with no greeting ("我是明星"); a name it knows is a proper noun: "张三"."""
    if not re.fullmatch(rf"[{_CJK}]{{2,4}}", name):
        return False
    compound = name[:2] in _ZH_COMPOUND_SURNAMES
    if not compound and (name[0] not in _ZH_SURNAMES or len(name) > 3):
        return False
    if called and called != name and called in name and not _ZH_ROLE_END.search(called):
        return True
    if _zh_role(name, 2 if compound else 1) or is_place_zh(name):
        return False
    from memsched.text.gloss import lookup

    # A word CC-CEDICT glosses lower-case ("明星" star, "马大哈" scatterbrain) or as a coined epithet in
    # quotes ("白富美" "Ms Perfect", slang): no name said bare, though jieba may tag it one; of three
    # characters or more, no name after a greeting either ("嗨，我是白富美"): a full name CC-CEDICT
    # holds is a person's ("Zhang San", "Lu Xun").
    if (bare or len(name) >= 3) and any(sense[:1].islower() or sense[:1] in '"“' for sense in lookup(name)):
        return False
    if compound:
        return len(name) > 2
    from memsched.text.postag import lcut

    if len(name) == 3 and name[1] == "家" and name[2] in _ZH_FAMILY_PLACE_END:
        return False  # 王家村, 李家庄: a village named after a family
    words = [(w, str(t)) for w, t in lcut(name)]
    first, tag = words[0]
    return (tag.startswith("nr") and first[0] == name[0]) or _given_name_read_as_words(name, words)


def _given_name_read_as_words(name: str, words: Sequence[tuple[str, str]]) -> bool:
    """Whether a three-character `name` that jieba tags no person's name is still a surname and a
    given name of two characters, cut as words: the surname read as a word of its own (张 a measure
    word, 黄 yellow, 何 "what") before a given name read as a noun or a name ("张俊杰", "黄志军",
    "何建华"); or the surname joined to 家, the given name's first character, as "the X family" (王家 of
    "王家明", 周家 of "周家伟"). Not a verb, an adverb or a number after the surname ("钱不够", "马不停",
    "钱多多"), and no other word the surname starts ("程序猿", "周一到", "马上到")."""
    if len(name) != 3 or len(words) != 2:
        return False
    (first, _), (_, tag) = words
    if first == name[0]:
        return tag.startswith("n")
    return first == name[0] + "家"


def _surname_given(surname: str, given: str | None) -> str | None:
    """The name "我姓王，叫海生" gives: the surname and the given name, or the name after 叫 when it is
    whole ("我姓李，叫李明"); None when what follows is no name ("我姓王，叫我小王就行" is a request)."""
    if not given or not re.fullmatch(rf"[{_CJK}]{{1,3}}", given):
        return None
    name = given if given.startswith(surname) else surname + given
    return name if len(name) <= 4 else None


def zh_titled(name: str) -> bool:
    """Whether `name` is a surname and a title ("王医生", "李老师", "欧阳老师"): how the user introduces
    themself when they give no given name; the profile keeps it as said, as "Dr. Patel"."""
    for n in (2, 1):
        surname = name[:n]
        if (surname in _ZH_COMPOUND_SURNAMES or (n == 1 and surname in _ZH_SURNAMES)) and name[
            n:
        ] in _ZH_TITLES:
            return True
    return False


def _introduced(name: str, *, greeted: bool = True) -> bool:
    """Whether a name said after "我是" / "本人" is one: a full Chinese name (`bare` when no greeting
    came before) or a surname and a title, or a capitalised Latin one that is no nationality or state
    ("嗨，我是Tom")."""
    if re.match(r"[A-Za-z]", name):
        return (
            name[0].isupper()
            and name.split()[0].lower() not in EN_NOT_GREETING_NAMES
            and intro_name(name, clear=greeted)
        )
    # A name that runs into a particle's character is a word ("马大哈": 哈 is no particle there): read
    # as said without a greeting, a word CC-CEDICT knows is no name.
    return zh_full_name(name, bare=not greeted or name[-1] in _ZH_PARTICLES) or zh_titled(name)


def _given(m: re.Match[str], called: str | None) -> str | None:
    """The name a "…, but everyone calls me Y" rule read before Y, or None when the clause gives none:
    after "I'm" only a capitalised name that is no nationality, state or place ("I'm Chinese, but…"),
    after "我是" only a full name (`zh_full_name`)."""
    d = m.groupdict()
    raw = (d.get("given") or d.get("given2") or "").strip()
    said = d.get("is") or ""
    if not raw:
        return None
    if said == "我是":
        return raw if zh_full_name(raw, called) else None
    if said.lower().startswith("i"):
        first = raw.split()[0].lower()
        if first in EN_NOT_GREETING_NAMES or first in ENGLISH_STOP_WORDS or is_place_en(raw):
            return None
        return raw if intro_name(raw, clear=True) else None  # "I'm Portuguese, but…
    return _clean_name(raw)


def _short_for(called: str, name: str) -> bool:
    """Whether `called` is a short form of `name`: part of a Chinese name ("明杰" of "周明杰"), the start
    of an English first name ("Jo" of "Joanna Whitfield")."""
    if called == name:
        return False
    if re.match(rf"[{_CJK}]", called):
        return called in name
    return name.split()[0].lower().startswith(called.lower())


# -- applying ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Applied:
    """What applying a command changed, for the trace and the system prompt."""

    command: Command
    changed: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # a line for the system prompt of the reply, "" for none
    fact_id: int | None = None
    deleted_turn_ids: list[int] = field(default_factory=list)


def apply_rename(
    profile: Profile,
    user_id: str,
    command: Command,
    *,
    at: datetime | None = None,
    source_turn_ids: Sequence[int] = (),
) -> Applied:
    """Make the command's name the user's preferred name from `at` on (the old one becomes history).
    A rename without a new name ("别叫我雨哥了") ends the old one if it is the preferred name in force."""
    assert command.kind == "rename"
    if not command.value:
        assert command.old
        ended = profile.retract(user_id, PREFERRED_NAME, command.old, at=at)
        if not ended:
            return Applied(command=command)
        return Applied(
            command=command,
            changed={PREFERRED_NAME: None},
            note=f"The user has just asked not to be called {command.old} any more.",
        )
    meta = {"replaces": command.old} if command.old else {}
    fact_id = profile.set(
        user_id, PREFERRED_NAME, command.value, at=at, source_turn_ids=source_turn_ids, meta=meta
    )
    note = f"The user has just asked to be called {command.value}" + (
        f" instead of {command.old}." if command.old else "."
    )
    return Applied(command=command, changed={PREFERRED_NAME: command.value}, note=note, fact_id=fact_id)


# Session state: the first seq after a forget command that is not stored ("forget everything about
# my ex" leaves neither itself nor its reply). A "forget what I just said" whose previous user message
# comes before it refers to that command, not to the stored message before it.
FORGET_MARK = "forget_mark_seq"

# Why a forget of the last message deleted nothing.
NOTHING_BEFORE = "no earlier message"
WAS_FORGET = "the previous message was itself a forget command"


def last_message(
    store: Store, user_id: str, session_id: str, before_seq: int | None = None
) -> tuple[list[int], str]:
    """(ids of the session's last user message before `before_seq` — default: the end of the
    session — and of the turns after it, the replies to it; why there are none, "" when there are).

    None when there is no earlier user message, or when the message just before the command was
    itself a forget command (stored, or one that leaves nothing stored: `FORGET_MARK`): a forget
    cannot be undone, and the message before it is not the one the user means."""
    if before_seq is None:
        tail = store.session_turns(user_id, session_id, last=50)
    else:
        tail = store.session_turns_between(user_id, session_id, max(0, before_seq - 50), before_seq - 1)
    last_user = next((t for t in reversed(tail) if t.role == "user"), None)
    if last_user is None or last_user.seq is None:
        return [], NOTHING_BEFORE
    mark = store.session_state(user_id, session_id).get(FORGET_MARK)
    if isinstance(mark, int) and last_user.seq < mark and (before_seq is None or mark <= before_seq):
        return [], WAS_FORGET
    if _detect_forget(last_user.content) is not None:
        return [], WAS_FORGET
    ids = [t.id for t in tail if t.seq is not None and t.seq >= last_user.seq and t.id is not None]
    return ids, ""


def last_message_ids(store: Store, user_id: str, session_id: str, before_seq: int | None = None) -> list[int]:
    """The ids `last_message` names ([] when there is nothing to delete)."""
    return last_message(store, user_id, session_id, before_seq)[0]


def mark_forget_command(store: Store, user_id: str, session_id: str, after_seq: int) -> None:
    """Remember that a forget command came just before seq `after_seq` of the session (it is not
    stored, or is deleted with what it named), so that a "forget what I just said" right after it
    deletes nothing older."""
    if not any(s.id == session_id for s in store.sessions(user_id)):
        return
    with store.transaction() as tx:
        store.session_state_update(
            tx, user_id, session_id, {FORGET_MARK: int(after_seq)}, now=utcnow().timestamp()
        )


def next_seq(store: Store, user_id: str, session_id: str) -> int | None:
    """The seq the session's next turn gets (None: no such session yet)."""
    return next((s.turn_count for s in store.sessions(user_id) if s.id == session_id), None)


def forget_turns(memory: Memory, user_id: str, session_id: str, turn_ids: Sequence[int]) -> list[int]:
    """Hard-delete turns of the session with their index rows, vectors and every artifact derived from
    them (summaries, facts, bookmarks, traces, ...), and purge their bytes. Returns the ids that were
    still there to delete."""
    store = memory.store
    present = [t.id for t in store.get_turns(user_id, list(turn_ids)) if t.session_id == session_id and t.id]
    if not present:
        return []
    out = store.forget_turns(user_id, present)
    after_forget(memory, out)
    return out.turn_ids


def forget_last(memory: Memory, user_id: str, session_id: str, before_seq: int | None = None) -> list[int]:
    """Hard-delete the session's last user message (before `before_seq`) and the replies to it.

    Returns the deleted turn ids ([] when there was nothing to delete: see `last_message`).
    """
    return forget_turns(
        memory, user_id, session_id, last_message_ids(memory.store, user_id, session_id, before_seq)
    )


def apply_forget(
    memory: Memory, user_id: str, session_id: str, command: Command, *, before_seq: int | None = None
) -> Applied:
    """`forget_last` for a command, with the note the reply's system prompt gets."""
    ids, why = last_message(memory.store, user_id, session_id, before_seq)
    deleted = forget_turns(memory, user_id, session_id, ids) if ids else []
    changed: dict[str, Any] = {"deleted": len(deleted)}
    if deleted:
        note = (
            "The user asked you to forget their previous message; it has been permanently deleted. "
            "Confirm briefly and do not repeat or refer to its content."
        )
    elif why == WAS_FORGET:
        changed["nothing_because"] = WAS_FORGET
        note = (
            "The user asked you to forget their previous message, but that message was itself a request"
            " to forget something, which has already been done; nothing else was deleted. Say so briefly."
        )
    else:
        changed["nothing_because"] = why or NOTHING_BEFORE
        note = "The user asked you to forget their previous message, but there was none to delete."
    return Applied(command=command, changed=changed, note=note, deleted_turn_ids=deleted)


# "my ex Marcus", "我前男友叫小凯": a name right after the topic word (or after "called", "叫") names
# the one the topic is about, so the turns that use only the name are about it too.
_EN_APPOSED = r"(?:\s*,\s*|\s+)(?:(?:is\s+)?(?:called|named)\s+)?(?P<name>[A-Z][a-z]{1,20})\b"
_EN_NOT_APPOSED = frozenset(
    "I Im Ive Id The A An And But So Then Just Still Today Yesterday Tomorrow Last This That It".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_NAME_TAGS = frozenset({"nr", "nrfg", "nrt"})


def apposed_names(text: str, terms: Sequence[str]) -> list[str]:
    """Names `text` gives right after one of `terms`: "my ex Marcus" -> Marcus, "前男友小凯" -> 小凯
    (jieba's person-name tag), "我前男友叫小凯" -> 小凯."""
    found: list[str] = []
    for term in terms:
        if re.search(rf"[{_CJK}]", term):
            if term not in text:
                continue
            from memsched.text import postag

            cut = postag.lcut(text)
            for i, w in enumerate(cut):
                if w.word != term and not w.word.endswith(term):
                    continue
                rest = cut[i + 1 : i + 3]
                if rest and rest[0].word in ("叫", "名叫", "叫做") and len(rest) > 1:
                    rest = rest[1:]
                if rest and rest[0].flag in _ZH_NAME_TAGS and len(rest[0].word) >= 2:
                    found.append(rest[0].word)
        else:
            for m in re.finditer(rf"(?<![A-Za-z]){re.escape(term)}{_EN_APPOSED}", text, re.I):
                name = m.group("name")
                if name[:1].isupper() and name.replace("'", "") not in _EN_NOT_APPOSED:
                    found.append(name)
    return list(dict.fromkeys(found))


def _norm_name(name: str) -> str:
    name = name.strip().strip("《》〈〉「」“”\"'").strip()
    return re.sub(r"^(?:the|a|an)\s+", "", name, flags=re.I).lower()


def alias_names(store: Store, user_id: str, terms: Sequence[str]) -> list[str]:
    """Other names the user's bookmarks give the same thing as one of `terms`: a bookmark keyword
    that is one of them brings its aliases, an alias brings its keyword and the other aliases (the
    bookmark LLM is asked for translations too: 三体 <-> "The Three-Body Problem"). Only that one
    keyword's names: the bookmark's other keywords are other things."""
    wanted = {_norm_name(t) for t in terms}
    out: list[str] = []
    for b in store.iter_bookmarks(user_id):
        groups = {k: [k, *b.aliases.get(k, [])] for k in b.keywords}
        for k, names in b.aliases.items():
            groups.setdefault(k, [k, *names])
        for names in groups.values():
            if any(_norm_name(n) in wanted for n in names):
                out.extend(n.strip().strip("《》〈〉「」“”\"'").strip() for n in names)
    return [n for n in dict.fromkeys(out) if len(n) >= 2 and _norm_name(n) not in wanted]


@dataclass(frozen=True, slots=True)
class TopicField:
    """A general topic ("my job", 工作) that the user's turns are about without saying its word: an
    interview at a startup is about the job. `words` put any user turn under it; `near` words only
    the user's next message in the session after one about it ("the final round is next Friday"
    after "I'm interviewing at …": alone, a round may be of drinks); the facts of profile `keys`
    came from turns about it (when `values` is given, only the facts whose value it matches: a
    sister of `people` is family, a best friend is not). Unambiguous words only: deleting is not
    undone."""

    label: str
    names: frozenset[str]
    words: re.Pattern[str]
    near: re.Pattern[str]
    keys: tuple[str, ...] = ()
    values: re.Pattern[str] | None = None
    # A personal detail (an address, a phone number), not a part of life: a bare "forget my address"
    # / 把我的住址忘了 asks to delete it, where "forget my job" may only mean "stop thinking about it".
    detail: bool = False


def _names(text: str) -> frozenset[str]:
    """A field's names, one a line (a name may hold a space: "love life")."""
    return frozenset(n.strip() for n in text.strip().splitlines() if n.strip())


# The general topics a companion's user asks to forget, in English and Chinese: their job, their
# health, their money, their love life, their family. Every word below puts a turn under the topic
# by itself, and a forget deletes for good, so the broad topics (health, money, love, family) hold
# precise words and forms, not every word that may touch them: "I'm sick of this weather", "dying to
# see it", "a money-back guarantee", "carbon dating", "回家", "家庭作业", "小姐姐", "吃错药了" stay. A
# turn may be under two topics (a salary is the user's job and their money; "I can't afford my meds",
# their health and their money). Person words name a person, not a topic: "forget what I said about
# my boyfriend / my ex / my mom" keeps the person path (the words, their variants, the names after
# them, the pronouns that refer back) and is not widened to the whole love life or family.
TOPIC_FIELDS: tuple[TopicField, ...] = (
    TopicField(
        label="work",
        names=frozenset(
            "job jobs work career careers occupation profession employment 工作 职业 事业 上班 找工作 公司 单位".split()  # noqa: SIM905 - a word list reads better as text
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:jobs?|careers?|employers?|employment|employed|unemployed|co-?workers?|colleagues?|"
            r"(?:my|our) boss(?:es)?|hired|hiring|fired|laid off|layoffs?|promot(?:ed|ion)|pay ?rise|salary|salaries|"
            r"r[ée]sum[ée]s?|interview(?:s|ed|ing)?|recruiters?|job offers?|resign(?:ed|ing|ation)?|"
            r"at work|my work|workplace|notice period)(?![A-Za-z])|"
            r"工作|上班|下班|面试|跳槽|辞职|离职|入职|求职|同事|老板|领导|工资|薪水|薪资|升职|加薪|加班|裁员|简历|猎头",
            re.I,
        ),
        near=re.compile(
            r"(?<![A-Za-z])(?:(?:first|second|third|final|last|next) rounds?|offers?|onsite|on-site|applications?|"
            r"applied|the pay|take-home|hiring manager|start date)(?![A-Za-z])|"
            r"复试|终面|一面|二面|三面|录用|offer|待遇|试用期",
            re.I,
        ),
        keys=(OCCUPATION,),
    ),
    # Health: illness, its care (doctors, hospitals, medication, tests, therapy), mental health,
    # pregnancy, whoever's it is (a parent's diagnosis told in confidence is health talk too). Not
    # "sick of", "dying to", "ill" alone (typed for "I'll"), "healthy" (recipes), "depressed" or 抑郁
    # alone (a mood as often as an illness), "吃错药" (an insult), "头疼" (a worry as often as pain).
    # The profile's allergies and given-up habits (smoking, drinking) are health facts; a diet is not
    # (vegetarian, halal: a belief or a taste as often as a need).
    TopicField(
        label="health",
        names=_names(
            """
            health
            medical
            medical history
            illness
            illnesses
            sickness
            disease
            condition
            diagnosis
            medication
            medications
            meds
            therapy
            pregnancy
            健康
            健康状况
            身体
            身体状况
            身体情况
            病情
            病史
            疾病
            生病
            看病
            住院
            吃药
            怀孕
            心理健康
            心理问题
            抑郁症
            """
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:"
            r"(?:my|the|our|his|her|their) (?:doctors?|GP|physician|specialist|surgeon|nurse)|"
            r"(?:see|seeing|saw|seen|visit|visited|visiting|go to|went to|going to) (?:a|the|my) (?:doctor|GP|physician|specialist)|"
            r"doctor'?s (?:appointment|office|visit|note|orders)|"
            r"dentist|psychiatrist|psychologist|therapist|gyn(?:a)?ecologist|cardiologist|oncologist|dermatologist|"
            r"neurologist|(?<!retail )therapy|physiotherapy|counsell?ing sessions?|"
            r"hospitals?|hospitali[sz](?:ed|ation)|emergency room|A&E|urgent care|ICU|intensive care|"
            r"diagnos(?:is|es|ed)|prognosis|prescri(?:bed|ptions?)|medications?|meds|antidepressants?|antibiotics|"
            r"painkillers|sleeping pills|insulin|inhaler|chemo(?:therapy)?|radiotherapy|surgery|biopsy|MRI|CT scan|"
            r"x-?rays?|blood (?:tests?|work|pressure|sugar)|check-?ups?|"
            r"illness(?:es)?|diseases?|(?<!a )cancer|tumou?rs?|diabetes|diabetic|asthma|hypertension|cholesterol|"
            r"migraines?|arthritis|epilepsy|seizures?|infections?|covid|flu|a fever|running a fever|had a stroke|"
            r"heart attack|concussion|chronic pain|back pain|in pain|allerg(?:y|ies|ic)|"
            r"depression|depressive|anxiety (?:disorder|attacks?|meds|medication)|my anxiety|panic attacks?|PTSD|"
            r"ADHD|bipolar|eating disorder|anorexi[ac]|bulimi[ac]|insomnia|self-harm(?:ing)?|suicidal|"
            r"mental (?:health|illness|breakdown)|nervous breakdown|"
            r"pregnan(?:t|cy)|miscarri(?:age|ed)|IVF|fertility|ultrasound|abortion|my period|"
            r"(?:been|got|get|getting|gotten|feel|feeling|felt|fell|falling|am|i'm|im|was|were|is|still|"
            r"call(?:ed|ing)? in) (?:so |really |very |pretty |quite |super )?sick(?! of| and tired)|"
            r"sick (?:leave|day|note)|"
            r"(?:fell|been|feel|feeling|felt|seriously|terminally|chronically|mentally) ill(?!')"
            r")(?![A-Za-z])|"
            r"医生|大夫|牙医|医院|诊所|门诊|急诊|看病|挂号|住院|出院|手术|体检|复查|确诊|诊断|化验|验血|病情|病历|病房|"
            r"生病|病了|得病|患病|病假|吃药|药物|处方|开了药|开药|打针|输液|打点滴|抑郁症|抗抑郁|焦虑症|惊恐发作|"
            r"双相|心理咨询|心理医生|精神科|失眠|安眠药|怀孕|孕期|流产|产检|不孕|试管婴儿|癌症|癌细胞|[肺胃肝肠]癌|"
            r"乳腺癌|肿瘤|糖尿病|血压|血糖|胆固醇|哮喘|过敏|发烧|感冒|咳嗽|偏头痛|身体不(?:舒服|好|适)",
            re.I,
        ),
        near=re.compile(
            r"(?<![A-Za-z])(?:(?:test |blood |scan )?results|appointment|side effects?|symptoms?|dosage|dose|"
            r"recovery|recovering|follow-?up|the scan)(?![A-Za-z])|"
            r"检查结果|化验结果|报告出来|副作用|症状|疗程|剂量|康复",
            re.I,
        ),
        keys=(ALLERGIES, HABITS),
    ),
    # Money: debt, loans, rent and bills, savings, being broke, income (a salary is under work too).
    # Not "a money-back guarantee", "broke up" / "broke down" / "broke my phone", "I owe you one",
    # bare 钱 (a surname, 钱塘江) nor "不要钱" (free).
    TopicField(
        label="money",
        names=_names(
            """
            money
            finances
            finance
            financial
            debt
            debts
            loan
            loans
            savings
            mortgage
            bills
            钱
            财务
            财务状况
            经济状况
            经济情况
            经济问题
            存款
            欠款
            债务
            欠债
            借钱
            贷款
            房贷
            理财
            """
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:money(?!-)|finances|financial(?:ly)?|debts?|indebted|loans?|mortgages?|overdraft|"
            r"overdrawn|bankrupt(?:cy)?|(?<!daylight )savings|credit cards?|credit score|bank account|payday|paychecks?|"
            r"salary|salaries|income|(?:my|our|the) bills|pay (?:the|my|our) bills|"
            r"(?:can't|cannot|couldn't|can not) afford|repay(?:ment|ing)?|"
            r"(?:my|our|the|pay|paying|afford|behind on) rent|"
            r"owe[sd]?(?: \w+){0,3} (?:money|\$\s?\d[\d,]*|\d[\d,]* (?:bucks|dollars|pounds|euros|grand))|"
            r"(?:i'm|i am|im|we're|we are|i was|we were|so|totally|completely|flat|dead|always|pretty) broke"
            r"(?! (?:up|down|into|out|in|the|my|a|it|his|her|our|their)(?![A-Za-z]))|"
            r"my investments|my portfolio|401\(?k\)?|crypto"
            r")(?![A-Za-z])|"
            r"[借欠](?:了|给)?[^，,。.！!？?\s]{0,8}?钱(?!塘)|借钱|欠钱|还钱|没钱|缺钱|存钱|攒钱|赚钱|挣钱|花钱|省钱|钱不够|亏钱|赔钱|欠款|欠债|负债|债务|还债|"
            r"贷款|房贷|车贷|网贷|借贷|信用卡|花呗|借呗|白条|存款|积蓄|房租|交租|月光|破产|透支|工资|薪水|收入|"
            r"月薪|年薪|理财|股票|炒股",
            re.I,
        ),
        near=re.compile(
            r"(?<![A-Za-z])(?:interest|pay (?:it|him|her|them) back|paid (?:it|him|her|them) back|"
            r"the bank|installments?)(?![A-Za-z])|利息|还款|分期|还清|银行",
            re.I,
        ),
    ),
    # The user's love life: partners, dates, breakups, divorce. Not "carbon dating" or "dating back
    # to", "a date" (a day), "an affair" of state ("current affairs"), "fell for it", 面向对象.
    TopicField(
        label="love life",
        names=_names(
            """
            love life
            dating life
            sex life
            romance
            dating
            relationship
            relationships
            感情
            感情生活
            恋爱
            爱情
            婚姻
            """
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:boyfriends?|girlfriends?|bf|gf|(?:my|our|the) (?:husband|wife|hubby|spouse)|fianc[ée]e?|"
            r"(?:my|our) partner|my ex(?![-A-Za-z])|ex-(?:boyfriend|girlfriend|husband|wife|partner)|"
            r"(?<!carbon )dating(?! back| from)|(?:first|second|third|blind|dinner|coffee|movie) dates?|on a date|"
            r"went on (?:a )?dates?|asked (?:me|him|her) out|dating apps?|tinder|"
            r"broke up|break ?ups?|breaking up|split up|dumped (?:me|him|her)|divorced?|divorcing|"
            r"cheat(?:ed|ing) on|(?:an|the|having an?) affair|crush on|my crush|"
            r"fell for (?:him|her|them|someone)|falling for (?:him|her|them|someone)|situationship|"
            r"hook(?:ed|ing)? up with|got engaged|proposed to|(?:our|my) anniversary|love life|sex life|"
            r"(?:my|our|a new|long-distance|open|toxic|in a) relationship"
            r")(?![A-Za-z])|"
            r"男朋友|女朋友|男友|女友|(?:我的?|找|处|谈|有|没)(?:了|个|了个|到)?对象|老公|老婆|丈夫|妻子|爱人|未婚夫|未婚妻|前任|前男友|"
            r"前女友|前夫|前妻|分手|离婚|约会|恋爱|暗恋|表白|相亲|出轨|劈腿|复合|求婚|暧昧|异地恋|感情问题|感情生活",
            re.I,
        ),
        near=re.compile(
            r"(?<![A-Za-z])(?:texted (?:me|him|her)|left me on read|ghost(?:ed|ing)|blocked me|we met|kissed)"
            r"(?![A-Za-z])|回我消息|已读不回|拉黑|删了我|见面|冷战",
            re.I,
        ),
        keys=(PARTNER_NAME,),
    ),
    # The user's family: parents, siblings, grandparents, children, in-laws, named as the user's own
    # ("my mom", 我妈, 爸妈, 父母), and what happens between them (a family fight, 催婚). Not "home" or
    # 家 (回家, 在家), "dad jokes", "the mother of all", 小姐姐 / 小哥哥 (strangers), 家庭作业, "我的妈呀".
    TopicField(
        label="family",
        names=_names(
            """
            family
            families
            relatives
            family life
            home life
            家
            家里
            家人
            家庭
            家里人
            家事
            亲戚
            """
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:(?:my|our) (?:(?:little|big|older|younger|twin|step|half-?) ?)?(?:mom|mum|mother|"
            r"dad|father|parents|folks|sisters?|brothers?|siblings?|grandma|grandmother|grandpa|grandfather|"
            r"grandparents|granny|nana|aunts?|auntie|uncles?|cousins?|nieces?|nephews?|in-laws|"
            r"(?:mother|father|sister|brother)-in-law|stepmom|stepmother|stepdad|stepfather|stepsister|"
            r"stepbrother|sons?|daughters?|kids|children|family)|"
            r"family (?:drama|fights?|dinners?|reunions?|gatherings?|issues|problems|stuff|feuds?|group chat|"
            r"members?)|relatives"
            r")(?![A-Za-z])|"
            r"我的?(?:妈(?!呀|啊|耶)|爸|爸妈|父母|姐(?!们)|妹|哥(?!们)|弟|奶奶|爷爷|外婆|外公|姥姥|姥爷|儿子|女儿|闺女|孩子|"
            r"舅舅|舅妈|姑姑|姨妈|叔叔|婶婶|婆婆|公公|岳父|岳母|公婆)|爸妈|父母|爸爸|妈妈|老爸|老妈|(?<!小)姐姐|"
            r"(?<!小)哥哥|(?<!小)弟弟|(?<!小)妹妹|(?<![老小])奶奶|(?<![老小])爷爷|外婆|外公|姥姥|姥爷|家里人|家人(?!们)|亲戚|"
            r"家里(?:的事|出了|催|吵|不同意|逼)|家庭(?!作业|影院|医生)|催婚",
            re.I,
        ),
        near=re.compile(
            r"(?<![A-Za-z])(?:fight|fought|argued|argument|yelled|screamed at me)(?![A-Za-z])|"
            r"吵架|吵了一架|骂我|冷战",
            re.I,
        ),
        keys=(PEOPLE, LOSSES, DATES),
        # "sister 小红", "grandma", "mom's birthday: May 12", "妹妹 小雨": not "best friend Anna", "闺蜜 …".
        values=re.compile(
            r"^(?:(?:little|big|older|younger|twin|step|half-?) ?)?(?:mom|mum|mother|dad|father|parents?|"
            r"sisters?|brothers?|siblings?|sons?|daughters?|grand\w+|aunts?|uncles?|cousins?|nieces?|nephews?|"
            r"step\w+|kids?|children)(?![A-Za-z])|^(?:姐|妹|哥|弟|妈|爸|儿子|女儿|闺女|孩子|爷爷|奶奶|外公|外婆|"
            r"姥姥|姥爷|表|堂|老妈|老爸|舅|姑|姨|叔|婶)",
            re.I,
        ),
    ),
    # Personal details (`TopicField.detail`). The user's home address: the word, a street number, a
    # flat or unit, 住在 with a number after it, a 路 / 街 number, a building and unit. Not "I live on
    # coffee", "an address book", "the keynote address" (no "my"), 住在学校附近 (no number).
    TopicField(
        label="address",
        names=_names(
            """
            address
            home address
            street address
            mailing address
            postal address
            where i live
            地址
            住址
            家庭住址
            家庭地址
            家的地址
            家里地址
            收货地址
            """
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:(?:my|our) (?:home |street |mailing |postal |new |old )?address(?:es)?|"
            r"(?:i|we) (?:live|lived|am living|'m living|moved) (?:at|to|on) (?=\d)|"
            r"\d+[A-Za-z]? (?-i:[A-Z][a-z]+)(?: (?-i:[A-Z][a-z]+))? (?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|"
            r"Boulevard|Blvd|Court|Ct|Place|Pl|Way|Terrace|Crescent)\b|"
            r"(?:apartment|apt|flat|unit|suite) #?\d+[A-Za-z]?(?![A-Za-z])|zip ?code|postcode"
            r")(?![A-Za-z])|"
            r"住址|地址|住在[^，,。.！!？?\s]{0,12}\d|[路街巷道里弄]\d+号|\d+(?:栋|幢|号楼)|\d+单元|邮编",
            re.I,
        ),
        near=re.compile(r"(?<![A-Za-z])(?:buzzer|door code|gate code)(?![A-Za-z])|门禁|门牌", re.I),
        detail=True,
    ),
    # The user's phone number: the words and a number written as one (a 7 to 11 digit run, groups
    # of 3-4 digits). Not "call me", "my phone died", a price or a year.
    TopicField(
        label="phone number",
        names=_names(
            """
            phone number
            number
            cell number
            mobile number
            phone
            电话
            电话号码
            手机号
            手机号码
            号码
            """
        ),
        words=re.compile(
            r"(?<![A-Za-z])(?:(?:my|our) (?:phone|cell|mobile|home|work)(?: phone)? number|"
            r"(?:my|our) number is)(?![A-Za-z])|"
            r"(?<![\d.,$€£¥])(?:\(?\d{3}\)?[-. ]\d{3}[-. ]\d{4}|1[3-9]\d{9})(?![\d.,])|"
            r"电话号码|手机号|电话是|号码是",
            re.I,
        ),
        near=re.compile(r"(?!x)x"),
        detail=True,
    ),
)

# The last word of a topic that says only that it is a topic: "my health stuff", "money problems",
# "family drama", 感情问题, 身体方面, 工作上 ("我工作上的事").
_EN_TOPIC_TAILS = frozenset(
    {"stuff", "things", "thing", "issues", "issue", "problems", "problem", "situation", "matters", "drama"}
)
_ZH_TOPIC_TAIL = re.compile(r"(?:问题|状况|情况|方面|上)$")


def topic_field(topic: str) -> TopicField | None:
    """The general topic `topic` names ("job", "my work", 工作, "health", 身体), if any; also when a
    word or two qualify it ("my new job", "current career", "mental health", 新工作, 找新工作): the
    topic's head is its last word; and when a last word says only that it is a topic ("health
    stuff", "money problems", 感情问题)."""
    low = " ".join(topic.strip().lower().split())
    found = next((f for f in TOPIC_FIELDS if low in f.names), None)
    if found is not None:
        return found
    words = low.split(" ")
    if 1 < len(words) <= 4 and words[-1] in _EN_TOPIC_TAILS:
        return topic_field(" ".join(words[:-1]))
    if 1 < len(words) <= 3 and words[-1] in {n for f in TOPIC_FIELDS for n in f.names}:
        return next(f for f in TOPIC_FIELDS if words[-1] in f.names)
    if _HAN_TOPIC.fullmatch(low):
        if _ZH_TOPIC_TAIL.search(low) and len(low) > 2:
            return topic_field(_ZH_TOPIC_TAIL.sub("", low))
        return next(
            (
                f
                for f in TOPIC_FIELDS
                for n in f.names
                if has_cjk(n) and low.endswith(n) and len(low) <= len(n) + 2
            ),
            None,
        )
    return None


_HAN_TOPIC = re.compile(r"[\u4e00-\u9fff]{2,6}")


@dataclass(slots=True)
class TopicMatch:
    """What a topic forget deletes: the words searched for (the topic, its variants, the names the
    user's bookmarks and own words give it) and the matching turn ids."""

    topic: str
    terms: list[str]
    turn_ids: list[int]
    via: dict[str, str] = field(default_factory=dict)  # a widening term -> why it was searched for
    # A user turn that matched no word but refers back to the one before it ("he never listens to me"
    # after "my brother borrowed my car"): its id -> the id of that turn.
    refers_back: dict[int, int] = field(default_factory=dict)
    # A user turn found by no searched word, and why: it states a profile fact of the topic, or it
    # goes on from the one before it in the session (`TopicField.near`).
    found_by: dict[int, str] = field(default_factory=dict)


def match_topic(store: Store, user_id: str, topic: str, *, exclude: Sequence[int] = ()) -> TopicMatch:
    """The user's turns (every session) about `topic`, with the words that found them: the topic and
    its variants, the other names bookmarks give it (`alias_names`) and names the user put right
    after it (`apposed_names`: "my ex Marcus"). Replies right after a matching user turn count too
    (a reply to "my ex ..." is about the ex even when it does not say so)."""
    base = topic_terms(topic)
    turns = [t for t in store.iter_turns(user_id) if t.id is not None and t.id not in set(exclude)]
    via: dict[str, str] = {}
    for name in alias_names(store, user_id, base):
        via.setdefault(name, "bookmark alias")
    # Names are looked for after a common noun of the topic ("my ex Marcus", "我老板李娜"), not after
    # a name or title ("The Three-Body Problem": "Problem" is no name).
    nouns = [w for w in base if not w[:1].isupper()]
    first = topic_pattern(topic)
    for t in turns if nouns else ():
        if t.role == "user" and first.search(t.content):
            for name in apposed_names(t.content, nouns):
                if _norm_name(name) not in {_norm_name(x) for x in base}:
                    via.setdefault(name, f"named after it in turn {t.id}")
    if _EX in base:
        # "forget everything about my ex": a partner the profile holds as former is the ex, by name
        # ("my boyfriend is called Tom", then "I broke up with Tom").
        for row in store.facts(user_id, PARTNER_NAME):
            if row["superseded_at"] is not None and _norm_name(row["value"]) not in {
                _norm_name(x) for x in base
            }:
                via.setdefault(row["value"], "a former partner in the profile")
    pattern = topic_pattern(topic, list(via))
    hits: set[int] = set()
    follow: set[tuple[str, int]] = set()
    back: dict[int, int] = {}
    found_by: dict[int, str] = {}
    general = topic_field(topic)
    stated: dict[int, str] = {}  # a user turn a profile fact of the topic came from -> why
    if general is not None:
        via[f"words about {general.label}"] = f"{topic} is a general topic (commands.TOPIC_FIELDS)"
        for key in general.keys:
            for row in store.facts(user_id, key):
                if general.values is not None and not general.values.search(str(row["value"])):
                    continue  # a best friend in `people` is not family
                for i in row["source_turn_ids"]:
                    stated.setdefault(int(i), f"states the profile fact {key}: {row['value']}")
    last_user: dict[str, int] = {}  # session -> its latest user turn that is about the topic
    for t in sorted(turns, key=lambda t: (t.session_id, t.seq or 0, t.id or 0)):
        assert t.id is not None
        if (t.session_id, t.seq or 0) in follow and t.role == "assistant":
            hits.add(t.id)
        if t.role != "user":
            continue
        prev = last_user.pop(t.session_id, None)
        if pattern.search(t.content) or (general is not None and general.words.search(t.content)):
            hits.add(t.id)
        elif t.id in stated:
            hits.add(t.id)
            found_by[t.id] = stated[t.id]
        elif prev is not None and refers_back(t.content):
            hits.add(t.id)
            back[t.id] = prev
        elif prev is not None and general is not None and general.near.search(t.content):
            hits.add(t.id)
            found_by[t.id] = f"goes on from turn {prev} about {general.label}"
        else:
            continue
        last_user[t.session_id] = t.id
        if t.seq is not None:
            follow.add((t.session_id, t.seq + 1))
    for t in turns:  # an assistant turn that names the topic itself
        if t.role != "user" and pattern.search(t.content):
            hits.add(t.id or 0)
    return TopicMatch(
        topic=topic, terms=[*base, *via], turn_ids=sorted(hits), via=via, refers_back=back, found_by=found_by
    )


# "ugh my brother borrowed my car again" then "he never listens to me": the user's next message in
# the session is about the topic too when it refers back by a personal pronoun (he, she, they, 他, 她)
# and names no other person (a name, "my mom", 我妈), so "forget what I said about my brother" does not
# leave the half of the story that says only "he". The chain goes on while each next message does.
_EN_BACK = re.compile(r"\b(?:he|him|his|he's|she|her|hers|she's|they|them|their|they're)\b", re.I)
_EN_SOMEONE_ELSE = re.compile(
    r"\b(?:my|our|your)\s+(?:\w+\s+)?(?:mom|mum|mother|dad|father|parents|sister|brother|son|daughter|"
    r"wife|husband|boyfriend|girlfriend|partner|friend|friends|boss|manager|colleague|coworker|roommate|"
    r"neighbou?r|teacher|cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|kids?|children)\b",
    re.I,
)
_ZH_BACK = re.compile(r"(?<!其)他|她")
_ZH_SOMEONE_ELSE = re.compile(
    r"妈|爸|父母|姐|妹|哥|弟|儿子|女儿|孩子|老公|老婆|男朋友|女朋友|男友|女友|对象|朋友|闺蜜|同事|老板|领导|"
    r"室友|邻居|老师|同学|奶奶|爷爷|外婆|外公|姥姥|姥爷"
)
_EN_CAPITALISED = re.compile(r"\b[A-Z][a-z]*(?:'[a-z]+)?\b")


def refers_back(text: str) -> bool:
    """Whether a message refers back to someone by a personal pronoun and names no one else."""
    if re.search(rf"[{_CJK}]", text):
        return bool(_ZH_BACK.search(text)) and not _ZH_SOMEONE_ELSE.search(text)
    if not _EN_BACK.search(text) or _EN_SOMEONE_ELSE.search(text):
        return False
    # A capitalised word that is no stop word ("He", "I", "And" are) may be a name: "Tom said he …".
    return all(m.group(0).lower() in ENGLISH_STOP_WORDS for m in _EN_CAPITALISED.finditer(text))


def topic_turn_ids(store: Store, user_id: str, topic: str, *, exclude: Sequence[int] = ()) -> list[int]:
    """Ids of the user's turns about the topic (`match_topic`)."""
    return match_topic(store, user_id, topic, exclude=exclude).turn_ids


def apply_forget_topic(
    memory: Memory, user_id: str, command: Command, *, exclude: Sequence[int] = ()
) -> Applied:
    """Hard-delete every turn about the command's topic (and what was made from them)."""
    assert command.kind == "forget_topic" and command.value
    match = match_topic(memory.store, user_id, command.value, exclude=exclude)
    ids = match.turn_ids
    deleted: list[int] = []
    if ids:
        out = memory.store.forget_turns(user_id, ids)
        after_forget(memory, out)
        deleted = out.turn_ids
    note = (
        f"The user asked you to forget everything about a topic; {len(deleted)} messages about it have"
        " been permanently deleted. Confirm briefly and do not name or refer to the topic again."
        if deleted
        else "The user asked you to forget everything about a topic; nothing stored mentioned it."
        " Confirm briefly and do not bring it up."
    )
    # How many words were searched for, not which: the exchange that names the topic is not stored.
    changed = {"deleted": len(deleted), "terms": len(match.terms)}
    return Applied(command=command, changed=changed, note=note, deleted_turn_ids=deleted)


def apply_forget_all(memory: Memory, user_id: str, command: Command) -> Applied:
    """Hard-delete everything stored about the user (the command and its reply are not stored)."""
    assert command.kind == "forget_all"
    out = memory.store.forget_user(user_id)
    after_forget(memory, out, whole_user=True)
    note = (
        "The user asked you to delete everything you know about them; all of their data has been"
        " permanently deleted, and this message will not be kept either. Confirm briefly."
    )
    return Applied(
        command=command, changed={"deleted": len(out.turn_ids)}, note=note, deleted_turn_ids=out.turn_ids
    )


UNRECORDED_KINDS = ("forget_topic", "forget_all")


def keeps_turn(applied: Sequence[Applied]) -> bool:
    """False when a command asked that the message itself not be kept (it names what to forget):
    then neither the message, its reply nor its trace is stored."""
    return not any(a.command.kind in UNRECORDED_KINDS for a in applied)


# -- P1 tasks for commands that arrived through `record()` ----------------------------------------------


@task("profile_update")
def profile_update_task(ctx: TaskContext, job: Job) -> None:
    """Apply a profile change that arrived through `record()` (P1). Idempotent: setting the value in
    force only merges the sources."""
    p = job.payload
    if p.get("op") == "retract":
        Profile(ctx.store).retract(
            job.user_id,
            str(p["key"]),
            str(p["value"]),
            at=datetime.fromisoformat(p["at"]) if p.get("at") else None,
        )
        return
    Profile(ctx.store).set(
        job.user_id,
        str(p["key"]),
        str(p["value"]),
        at=datetime.fromisoformat(p["at"]) if p.get("at") else None,
        source_turn_ids=[int(i) for i in p.get("source_turn_ids", [])],
        meta=p.get("meta") or None,
    )


@task("forget_last")
def forget_last_task(ctx: TaskContext, job: Job) -> None:
    """Hard-delete the turns named by a forget command that arrived through `record()` (P1).
    Idempotent: the ids were fixed when the job was queued, so a second run finds nothing to delete."""
    if job.session_id is None:
        raise InputError("a forget_last job needs a session_id")
    forget_turns(ctx.memory, job.user_id, job.session_id, [int(i) for i in job.payload.get("turn_ids", [])])


@task("forget_topic")
def forget_topic_task(ctx: TaskContext, job: Job) -> None:
    """Forget a topic named by a command that arrived through `record()` (P1), the command turn with
    it. The topic is read again from the command turn (the payload names only the turn, so no job
    row keeps the topic). Idempotent: once the command turn is gone there is nothing to do."""
    turn_id = int(job.payload.get("command_turn_id", 0))
    found = ctx.memory.store.get_turns(job.user_id, [turn_id])
    if not found:
        return
    command = next((c for c in detect(found[0].content) if c.kind == "forget_topic"), None)
    ids = [turn_id]
    if command is not None and command.value:
        ids += topic_turn_ids(ctx.memory.store, job.user_id, command.value, exclude=[turn_id])
    out = ctx.memory.store.forget_turns(job.user_id, ids)
    after_forget(ctx.memory, out)
    if found[0].seq is not None:
        mark_forget_command(ctx.memory.store, job.user_id, found[0].session_id, found[0].seq + 1)


@task("forget_all")
def forget_all_task(ctx: TaskContext, job: Job) -> None:
    """Delete everything of the user, as a command that arrived through `record()` asked (P1)."""
    out = ctx.memory.store.forget_user(job.user_id)
    after_forget(ctx.memory, out, whole_user=True)
