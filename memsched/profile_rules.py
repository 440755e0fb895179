"""The patterns the profile rules read facts with (`profile_extract.extract` applies them).

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
| name | 我叫X, 我的名字是X, (嗨，/对了，)我是周明杰, 本人张伟, 我姓王，叫海生, 我是周明杰，朋友们一般叫我明杰 (a full name: `commands.zh_full_name`, "王海生" too; via `commands.detect`) | my name is X, (by the way,) I'm Sarah(, by the way / , 28 / and I'm …), name's Jack, (hi,) it's / this is Priya (here), I'm Dr. Patel, I'm Joanna Whitfield, though most people call me Jo |
| preferred_name | 叫我X, 你可以叫我X, 别叫我X了(，…，还是叫我Y), 我更喜欢别人叫我X (a P1 command in `commands.py`); 大家都叫我X alone (a fact, while no name asked for is in force: `commands.others_call`) | call me X, my friends call me X, you can too, stop calling me X(, I prefer Y), I'd rather you call me X, I prefer X (a user with a known name); my friends call me X alone (a fact, as in Chinese) |
| birthday | 我的生日是X, 我是X出生的 (三月三号 too; kept resolved: October 5) | my birthday is / 's on / is in X, I was born on X (1990-03-03, 3/3/1990 too) |
| dates | 我妈妈的生日是五月十二号, 我们的结婚纪念日是六月三号 (`DATE_RULES`) | my mom's birthday is in May, our anniversary is June 3rd |
| losses | 我奶奶去年去世了 (`LOSS_RULES`) | my grandma passed away last spring, I lost my dad to cancer |
| people | 我妹妹叫小丽, 我姐小红, 我有两个姐姐，小红和小丽 (`PEOPLE_RULES`, `PEOPLE_LIST_RULES`) | my sister Anna, my sisters Anna and Mia, I have two brothers, Tom and Sam |
| location | 我住在X, 我(们)(上个月/刚)搬到了X, 搬来/搬家到X, 我在X生活; for a known place: 我现在在X, 我(现在)住X, 我在X工作, 我是个程序员，在X工作 | I/we live in X, I'm from X but live in Y, I/we (just) moved/relocated to X, I'm based in X, I'm living in X, I'm (now) in X (now/these days) for a known place |
| hometown | 我是X人, 我老家是X的, 我来自X, 我是在X长大的 (a known place) | I'm (originally) from X, I grew up in X, I was born in X (capitalised, no department) |
| timezone | 我在东八区, 我这边是北京时间, 我这边是CST | I'm on Pacific time, my timezone is PST, I'm in UTC+8, my time zone is Europe/Berlin |
| occupation | 我是一名X, 我是个X, 我的工作是X, 我是做X的, 我在一家游戏公司做策划, 在杭州做老师 (and the place: location), 我在成都开了一家花店 (花店老板) | I work as a X, starting (Monday) as a X, my job is X, I'm a X by profession, I'm / I've been a nurse (at …), I became a X, a new job as X, I teach X (an X teacher), I run / own a X shop (a X shop owner) |
| partner_name | 我男朋友/老婆/对象…叫X (的名字是X; "我老公是医生" names no one) | my boyfriend/wife/partner… is called X, my wife is Anna, my girlfriend Emma, I'm married to X |
| pets | 我(家)的猫叫X, 我养了一只狗, 我养了一只柯基叫豆包, 我有一只猫(叫X), 我养了两只猫，一只叫X一只叫Y / 分别叫X和Y / ，咪咪和花花, 我养了一只猫和一只狗 | my/our dog is called X, our cat Miso, my cat is Miso (not a breed), Miso is my cat, I have a cat (called X), I/we have two cats, Mochi and Tofu, I have a dog and a cat, Max and Luna, I have a dog named Max and a cat called Luna, my cats are (called) X and Y |
| likes | 我(很/最…)喜欢X, 我(喜欢/爱)吃X, 我最喜欢的Y是X, X我(很)喜欢 | I love/like/enjoy/adore X, my favorite Y is X, I'm a fan of X, I'm into X, I prefer X (over Y) |
| dislikes | 我讨厌X, 我不喜欢X, 我受不了X, X我受不了 | I hate/dislike X, I can't stand X, I don't like X, I'm not into X |
| allergies | 我(也)对X过敏, 我X过敏, 我不能吃X，(会)过敏, 我X不耐受; none at all: 我不过敏, 我什么都不过敏 | I'm (also) allergic to X, I have a X allergy, I can't eat X, I'm allergic, I'm X intolerant; none at all: I don't have any allergies |
| habits | 我戒烟了, 我已经戒了酒 (又开始抽烟了 ends it), 我戒奶茶了 | I quit smoking, I've stopped drinking (I started smoking again ends it), I quit coffee, I gave up sugar |
| sleep_time | 我一般11点睡, 我平时晚上十一点半睡觉, 我通常凌晨一点才睡 | I usually go to bed at 11pm / around midnight |

A supposition states nothing: 如果/要是/假如/if/suppose/wish before the statement in its clause, or
的话 after it ("如果我叫小王的话", "if I'm allergic to nuts, …").

A like retracts the same dislike and a dislike the same like ("I don't like jazz any more"); a thing
given up (我戒奶茶了, 我不喝可乐了, "I quit coffee", "I don't drink soda anymore") that like, and a meatless
diet the likes that name a meat (`MEAT_WORDS`); a negated
allergy ("我其实对芒果不过敏", "I'm not allergic to walnuts after all") retracts that allergy, a place
or job the user no longer has ("我不住在北京了", "I'm not a teacher anymore") that value, and a job
quit or a breakup ("我辞职了", "I got laid off", "我和男朋友分手了") the value in force (`END_RULES`), a
pet that died or was given away ("My cat Luna died", "Luna passed away", "我家狗狗去世了", "我们把狗送人了")
that pet (`PET_END_RULES`). Love of what the user has ("I love my job", "I love my wife") is no taste:
a like or dislike is of a thing in general ("I love jazz", "I hate the cold").
A value the user corrects ("No, I said Luna not Lola", "I meant peanuts, not walnuts", "不是北京，是南京",
"我说的是豆豆，不是逗逗") is replaced in the fact in force that holds the old word (`profile_extract.corrected`);
where none does ("it's Monday, not Tuesday") nothing changes.
Words in quotes are someone's, not the user's ('He said "I'm a doctor"').

"""

from __future__ import annotations

import re

from memsched.profile import (
    ALLERGIES,
    BIRTHDAY,
    DIET,
    DISLIKES,
    HABITS,
    HOMETOWN,
    LIKES,
    LOCATION,
    NAME,
    OCCUPATION,
    PARTNER_NAME,
    PETS,
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_STOP = r"，,。.!！?？；;、~～\n"
# A CJK value runs to the end of its clause or to a sentence particle.
# Words that start a new clause or a second thing ("我住在杭州跟我爸妈一起", "我喜欢爬山而且…"). A bare
# 和/跟 joins two values ("猫和狗") and is kept; 和我/跟我 ("with me …") starts a clause.
_ZH_CLAUSE = "的时候|因为|但是|可是|所以|而且|并且|还有|不过|然后|虽然|如果|和我|跟我|与我|陪我|一起"
ZH_V = rf"(?P<v>[^{_STOP}\s]{{1,16}}?)(?=$|[{_STOP}\s]|了|啊|呀|吧|哦|呢|哈|嘛|{_ZH_CLAUSE})"
# The sentence-final particles a Chinese name may stand before ("我老公叫李明哈", "叫我小李吧"); a word
# CC-CEDICT knows that runs on through one is read whole ("我老公叫马大哈": `commands.through_word`).
ZH_PARTICLES = "吧啊呀哦嘛了哈呢啦"
_ZH_NAME = rf"(?P<v>[{_CJK}·]{{1,6}}?|[A-Za-z][A-Za-z'\-]*(?: [A-Za-z][A-Za-z'\-]*)?)(?=$|[{_STOP}\s]|[{ZH_PARTICLES}])"
# An English value runs to the end of its clause: punctuation, a conjunction, a relative or
# subordinate clause ("which is cold", "while …"), a companion phrase ("with my wife"), a place or
# time phrase ("at the city hospital", "in the spring") or a time word.
_EN_CLAUSE = (
    r"and|but|or|because|so|since|though|although|when|whenever|while|if|unless|until|whereas|who|which|"
    r"where|that's|please|too|as well|with (?:my|our|his|her|their)|at (?:the|a|my|our)|in the|(?-i:in (?=[A-Z]))|"
    r"last|next|yesterday|today|tonight|this|ago|anymore|any more|now|again|recently|lately|"
    r"by the way|btw|to be honest|tbh|honestly|lol|haha|after all|these days|nowadays|at the moment|for now|"
    r"for good|originally|not|rather than|instead of"
)
EN_V = rf"(?P<v>[^.,!?;:\n]{{1,60}}?)(?=$|[.,!?;:\n]|\s+(?:{_EN_CLAUSE})\b)"
# A value ending at a fixed word ("我对花生过敏"): the clause may not end there.
_ZH_W = rf"(?P<v>[^{_STOP}\s](?:[^{_STOP}\s]|、){{0,15}}?)"
_EN_DATE = (
    r"(?P<v>\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?(?![/\d])|(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:January|February|March|April|"
    r"May|June|July|August|September|October|November|December)(?:,? \d{4})?)"
)
_EN_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
# A date or a month alone ("my mom's birthday is in May").
_EN_DATE_OR_MONTH = _EN_DATE[:-1] + rf"|(?:in )?(?:{_EN_MONTHS})(?![\w']))"
_ZH_NUM_DAY = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
_ZH_DATE = (
    rf"(?P<v>(?:(?:\d{{4}}|[零〇一二三四五六七八九]{{4}})年)?{_ZH_NUM_DAY}月(?:{_ZH_NUM_DAY}[日号])?)"
    r"(?=$|[，,。.!！?？；;~～\s]|吧|啊|呀|哦|呢|哈|嘛|那天|出生|生)"
)
# A second word only when capitalised: "a dog named Max and a cat" is Max.
_EN_NAME = r"(?P<v>[A-Z][a-z'\-]+(?-i: [A-Z][a-z'\-]+)?)"
_EN_CAP_NAME = (
    r"(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|"
    r"June|July|August|September|October|November|December)\b)"
    r"(?-i:(?P<v>[A-Z\u00c0-\u00de][a-z\u00df-\u00ff'\-]+(?: [A-Z\u00c0-\u00de][a-z\u00df-\u00ff'\-]+)?))"
    r"(?![A-Za-z\u00c0-\u00ff'\-])"
)
# The name a user introduces themself with: a capitalised name, after a title when one is said ("I'm
# Dr. Patel" is Dr. Patel; a title alone, "I'm Dr.", is no name).
_EN_TITLE = r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|Professor|Miss)"
_EN_INTRO_NAME = (
    rf"(?-i:(?!{_EN_TITLE}\b\.?(?![\s.]*[A-Z])))(?!(?:it|this|that|here|there)\b)"
    + _EN_CAP_NAME.replace("(?P<v>", rf"(?P<v>(?:{_EN_TITLE}\.?\s+)?", 1)
)
_ZH_HEAD = r"(?:^|(?<=[，,。.!！?？；;~～\s]))"
# What follows "I'm a" / "starting as a" when it may be an occupation: lower-case words up to a clause
# boundary or a preposition ("a nurse at the city hospital" -> nurse).
_EN_JOB = (
    r"(?P<v>[a-z][a-z\- ]{1,40}?)"
    r"(?=$|[.,!?;:\n]|\s+(?:at|in|for|with|from|on|of|and|but|so|who|which|by|since|now)\b)"
)
# A place name in English: capitalised words ("New York", "Hong Kong"), case-sensitive, not one's
# team ("I'm from Google's team").
EN_PLACE = (
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
# A discourse marker that turns to something new before "I'm Sam": "by the way, I'm Priya", "oh and
# I'm Sam", "oh, before I forget, I'm Dana", "anyway, I'm Tom".
_EN_ASIDE_LEAD = (
    r"(?:(?:oh|ah|and|so|well|also|anyway|anyways|btw|by the way|incidentally|actually|ok|okay|oh yeah|"
    r"oh right|right|before I forget|I forgot to (?:say|mention)|forgot to (?:say|mention))[,!.\s]+)*"
)
# Capitalised words that follow "Hi, I'm" without being a name.
EN_NOT_GREETING_NAMES = frozenset(
    """back home here fine good great okay ok sorry tired bored new free done ready english british
    american chinese japanese korean french german spanish italian indian canadian australian irish
    scottish welsh mexican russian brazilian dutch swedish vietnamese thai filipino muslim christian
    catholic jewish buddhist hindu vegan vegetarian single married""".split()  # noqa: SIM905 - a word list reads better as text
)
_PET_KINDS_ZH = "猫咪|小猫|猫|狗狗|小狗|狗|犬|兔子|仓鼠|鹦鹉|乌龟|金鱼|龙猫"
PET_KINDS_ZH = _PET_KINDS_ZH
_PET_KINDS_EN = "cat|kitten|dog|puppy|rabbit|bunny|hamster|parrot|turtle|goldfish|guinea pig"
PET_KINDS_EN = tuple(sorted(_PET_KINDS_EN.split("|"), key=len, reverse=True))
# Breeds: "my cat is Siamese" names no one, and "I have a golden retriever named Max" is a dog.
EN_BREEDS = frozenset(
    """siamese persian bengal himalayan abyssinian ragdoll sphynx sphinx tabby calico labrador lab
    poodle beagle husky corgi chihuahua dachshund pug bulldog retriever shepherd terrier spaniel
    collie rottweiler doberman pomeranian samoyed akita shiba boxer dalmatian greyhound mastiff
    maine coon angora""".split()  # noqa: SIM905 - a word list reads better as text
)
# A pet's kind as it is named with its name: a kind or a breed, with at most one word before it
# ("golden retriever", "border collie", "big dog").
PET_KIND_OR_BREED_EN = rf"(?:(?!an?\b|and\b|the\b)[a-z]+ )?(?:{_PET_KINDS_EN}|{'|'.join(sorted(EN_BREEDS, key=len, reverse=True))})\b"
_ZH_PARTNER = "男朋友|女朋友|男友|女友|老公|老婆|丈夫|妻子|太太|先生|对象|爱人|未婚夫|未婚妻"
_EN_PARTNER = "boyfriend|girlfriend|husband|wife|partner|fiancée|fiancee|fiance|fiancé|spouse"
PARTNER_WORDS = frozenset(f"{_ZH_PARTNER}|{_EN_PARTNER}".split("|"))


# What follows "I love" / "I hate" when it is a taste: a thing in general ("jazz", "the beach",
# "hiking"), not what the user has or is with ("my job", "my wife", "our new flat", "your voice": love
# of one's own is no taste a companion should suggest from), nor "the way you …", "the idea of …".
_EN_TASTE = (
    r" (?!(?:my|our|your|his|her|their|its|this|these|those|that|it|you|him|them|us|me|myself|"
    r"the (?:way|idea|fact|thought|feeling|sound of your|time|moment|people|person)|"
    r"everything|everyone|everybody|being|having)\b)" + EN_V
)


def clean_value(value: str, *, english: bool) -> str | None:
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
RULES: list[tuple[str, str, re.Pattern[str], bool]] = [
    # Diet first, so that "我是素食主义者" is not read as an occupation: what the user eats or avoids by
    # habit or belief ("我吃素", "我不吃猪肉和牛肉"); a one-off ("我今天不吃了") names nothing: the time
    # word is taken out and nothing but 了 is left.
    (
        "zh_vegetarian",
        DIET,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:开始)?(?:是(?:一个|一名|个)?)?(?P<v>吃全素|吃素|纯素食?主义者|纯素食者|素食主义者|素食者)"
        ),
        False,
    ),
    # "I can't eat peanuts, I'm allergic", "我不能吃花生，会过敏": what cannot be eaten for an allergy is
    # an allergy, not a diet (before the diet rules, which would take "can't eat X" as "no X").
    (
        "zh_cant_eat_allergic",
        ALLERGIES,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:不能|不可以|没法|不敢)吃{ZH_V}"
            r"(?=[，,。\s]*(?:因为)?(?:我)?(?:对它|对这个)?(?:会|有点|很|严重)?过敏)"
        ),
        False,
    ),
    ("zh_dont_eat", DIET, re.compile(rf"{_ZH_HEAD}我{_ZH_WHEN}{_ZH_ADV}(?:从来)?不吃{ZH_V}"), False),
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
            r"\bI(?: went| turned| became| have gone|'ve gone| had gone|'d gone) (?P<v>vegetarian|vegan|pescatarian|pescetarian|plant-based)\b",
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
            rf"\bI {_EN_ADV}(?:can't|cannot|can not|mustn't|shouldn't) eat {EN_V}"
            r"(?=[^.!?\n]{0,40}?\bI(?:'m| am) (?:very |severely |deathly |highly |so )?allergic\b)",
            re.I,
        ),
        True,
    ),
    (
        "en_dont_eat",
        DIET,
        re.compile(rf"\bI {_EN_ADV}(?:don't|do not|never|can't|cannot|no longer) eat {EN_V}", re.I),
        True,
    ),
    ("zh_birthday", BIRTHDAY, re.compile(rf"我的?生日(?:是|在)?{ZH_V}"), False),
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
            rf"{EN_PLACE}",
            re.I,
        ),
        True,
    ),
    (
        "en_grew_up_in",
        HOMETOWN,
        re.compile(rf"\bI (?:grew up|was born(?: and raised)?|was raised) in (?:the )?{EN_PLACE}", re.I),
        True,
    ),
    (
        "zh_live_in",
        LOCATION,
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}(?:从[{_CJK}]{{2,8}}?)?(?:住在|搬到了?|搬去了?|搬家到了?|搬来了?|搬回(?:到|了)?|定居在?){ZH_V}"
        ),
        False,
    ),
    (
        "zh_live_in_2",
        LOCATION,
        # "我在杭州住过" (once lived there) is no home now.
        re.compile(rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}在(?P<v>[{_CJK}]{{2,8}}?)(?:生活|定居|住)(?!过)"),
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
        # "我是个程序员，在深圳工作", "我叫小李，在北京上班": the second clause's subject is the first's,
        # which is the user's own (我 then a verb, not "我妈是医生，在深圳工作").
        "zh_work_in_2",
        LOCATION,
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?(?=是|叫|今年|现在|目前|刚|也|一直|已经)[^，,。.!！?？；;]{{1,20}}[，,]\s*(?P<at>){_ZH_WHEN}"
            rf"在(?P<v>[{_CJK}]{{2,8}}?)(?:工作|上班|打工)(?=$|[，,。.!！?？；;~～\s]|了|呢|啊|呀|哦|吧|哈|嘛)"
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
            rf"\b(?:I(?:'m| am)|we(?:'re| are)) (?P<pre>now |currently |back )?(?:in|based in|living in) (?:the )?{EN_PLACE}"
            r"(?=(?P<post>\s+(?:now|these days|nowadays|for good|permanently)\b)?)",
            re.I,
        ),
        True,
    ),
    (
        "zh_occupation",
        OCCUPATION,
        re.compile(rf"{_ZH_HEAD}我(?:现在|目前)?是(?:一名|一位|一个职业|一个|个|名)?{ZH_V}"),
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
    # Running a business of one's own ("我在成都开了一家小花店", "我自己经营一家咖啡馆"): the owner of it
    # (花店老板, `profile_extract`), and where, for a known place, as with 在杭州做老师.
    (
        "zh_run_shop",
        OCCUPATION,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:自己)?(?:在(?P<place>[{_CJK}]{{2,8}}?))?(?:开了|开着|经营着?|经营了)"
            rf"(?:一家|一间|一个|家|间)(?:小小的|小的|小)?(?P<v>[{_CJK}]{{1,6}}?(?:店|馆|铺|餐厅|工作室|花房|超市|"
            r"诊所|酒吧|民宿|公司))(?=$|[，,。.!！?？；;\s]|了|呢|啊|叫)"
        ),
        False,
    ),
    (
        "en_run_shop",
        OCCUPATION,
        re.compile(
            r"\bI (?:now |currently |still |also |actually )?(?:run|own|opened|started) (?:a|an|my own|our own) "
            r"(?:small |little |tiny |local )?(?P<v>(?-i:[a-z][a-z\- ]{0,25}?)(?:shop|store|bakery|caf[eé]|"
            r"restaurant|bar|salon|studio|business|company|clinic|bookshop|bookstore|florist|boutique|gym|"
            r"food truck|bistro|pub|agency|practice))\b(?! (?:owner|chain))",
            re.I,
        ),
        True,
    ),
    ("zh_job_is", OCCUPATION, re.compile(rf"我的?(?:工作|职业)是{ZH_V}"), False),
    (
        "zh_do_x",
        OCCUPATION,
        re.compile(rf"{_ZH_HEAD}我(?:现在|目前)?是做(?P<v>[^{_STOP}\s]{{1,10}}?)的"),
        False,
    ),
    (
        "zh_partner",
        PARTNER_NAME,
        # 叫 names; 是 only after 的名字 ("我老公是医生", "我老婆是四川的" name no one).
        re.compile(rf"我(?:的)?(?:{_ZH_PARTNER})(?:的名字(?:叫|是)|叫){_ZH_NAME}"),
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
            rf"(?:[，,]?(?:它|他|她)?(?:的名字)?叫{_ZH_NAME}|(?P<bare>)(?=$|[{_STOP}\s]|了|呢|啊|呀|哦|和|跟|还有))"
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
    # "我海鲜过敏"; "我也过敏", "我不过敏", "我没有什么过敏的" name no allergen.
    (
        "zh_x_allergic",
        ALLERGIES,
        re.compile(rf"{_ZH_HEAD}我(?![也都还什啥])(?P<v>[^{_STOP}\s对不没]{{1,6}}?)过敏"),
        False,
    ),
    (
        # "我最喜欢的食物是火锅", "我最爱的歌手是周杰伦": the favourite thing is a like.
        "zh_favorite",
        LIKES,
        re.compile(rf"{_ZH_HEAD}我{_ZH_ADV}(?:喜欢|爱)的(?:[{_CJK}]{{1,6}}?)?(?:是|就是){ZH_V}"),
        False,
    ),
    (
        "zh_dislike",
        DISLIKES,
        re.compile(rf"{_ZH_HEAD}我{_ZH_ADV}(?:讨厌|不喜欢|不爱|受不了|烦){ZH_V}"),
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
            rf"{_ZH_HEAD}我{_ZH_ADV}(?:喜欢吃|喜欢喝|喜欢|爱吃|爱喝|爱看|爱听|爱玩|热爱|迷上了|超爱){ZH_V}"
        ),
        False,
    ),
    # "Hi! I'm Sarah, …", "Hey there, it's Priya": a capitalised name right after a greeting ("hi, I'm
    # tired" is not one).
    (
        "en_hi_im",
        NAME,
        re.compile(
            rf"^(?:hi|hello|hey|hiya)(?: there)?[,!.~\s]+(?:I'm|I am|this is|it's|it is) {_EN_INTRO_NAME}",
            re.I,
        ),
        True,
    ),
    # "I'm Sarah, by the way", "I'm Sam and I'm 30", "I'm Mike, a nurse from Ohio", "Name's Jack", "by the
    # way, I'm Priya", "Oh and I'm Sam by the way": a capitalised name that ends its clause or is
    # followed by more about the user (an age, "a …", "from …", "by the way"), at the start of a
    # sentence or after a discourse marker (`_EN_ASIDE_LEAD`); not a state, a nationality or a place
    # ("I'm Fine.", "I'm Chinese", "I'm Paris-based" say no name), nor a word after "I'm" that is not
    # capitalised ("I'm by the way tired").
    (
        "en_im_name",
        NAME,
        re.compile(
            rf"(?:^|(?<=[.!?]\s)){_EN_ASIDE_LEAD}(?:I'm|I am) {_EN_INTRO_NAME}(?=\s*(?:,\s*(?:by the way|btw|"
            r"(?:nice|pleased|glad|good|great) to meet you|\d|an? |from |originally |and )|\s+(?:and (?:I|I'm|I am)|from|by the way|btw)\b|"
            r"[.!~]|$))",
            re.I,
        ),
        True,
    ),
    # "It's Priya here", "This is Tom speaking", "This is Tom." said alone: a capitalised name who is
    # talking ("This is amazing", "It's Monday here", "This is Tom, my brother" name no user; a bare
    # "X here" / "X speaking" is too often "Same here", "Frankly speaking").
    (
        "en_here",
        NAME,
        re.compile(
            rf"^(?:(?:hi|hello|hey|hiya)(?: there)?[,!.~\s]+)?(?:it's|it is|this is) {_EN_INTRO_NAME}"
            r"(?: (?:here|speaking)(?=\s*[.!,~;]|\s*$)|(?=[.!~]*\s*$))",
            re.I,
        ),
        True,
    ),
    ("en_names", NAME, re.compile(rf"(?:^|(?<=[.!?]\s))(?:the )?name's {_EN_CAP_NAME}", re.I), True),
    (
        "en_birthday",
        BIRTHDAY,
        re.compile(rf"\bmy birthday(?: is|'s| falls) (?:on )?(?:the )?{_EN_DATE_OR_MONTH}", re.I),
        True,
    ),
    ("en_born_on", BIRTHDAY, re.compile(rf"\bI was born on (?:the )?{_EN_DATE}", re.I), True),
    (
        "en_live_in",
        LOCATION,
        re.compile(rf"\b(?:I|we) {_EN_ADV}(?:now |currently )?live in {EN_V}", re.I),
        True,
    ),
    (
        # "I'm from Chicago originally but live in Denver now": the subject of the second clause is the
        # first's, the user.
        "en_and_live_in",
        LOCATION,
        re.compile(
            rf"\b(?:I'm|I am|I|we're|we)\b(?!'d|'ll| would| will| want| wanna| hope| wish| plan| might| could)"
            rf"[^.!?;]{{1,60}}?,? (?:but|and) (?P<at>){_EN_ADV}(?:now |currently )?live in {EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_moved_to",
        LOCATION,
        re.compile(rf"\b(?:I|we)(?:'ve| have)? {_EN_ADV}(?:moved|relocated)(?: back| over)? to {EN_V}", re.I),
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
    ("en_based_in", LOCATION, re.compile(rf"\bI(?:'m| am) (?:now |currently )?based in {EN_V}", re.I), True),
    (
        "en_work_as",
        OCCUPATION,
        re.compile(
            rf"\bI(?:'m| am)? (?:now |just |recently )?(?:(?:started|began|start) )?work(?:ing)?(?: (?:at|for|in) [^,.!?;\n]{{1,40}}?)? as (?:an? )?{EN_V}",
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
            rf"(?:hired|employed|promoted) (?:as|to)) (?:an? )?{EN_V}",
            re.I,
        ),
        True,
    ),
    (
        # "Starting Monday as a UX designer at Figma", "I'm starting next week as a nurse": a job about to
        # begin; only an occupation (`profile_extract._EN_OCCUPATIONS`): "starting as a beginner" is none.
        "en_starting_as",
        OCCUPATION,
        re.compile(
            r"(?:^|(?<=[.!?]\s)|\bI(?:'m| am|'ll be| will be)? )(?:starting|start) (?:on )?(?:\w+ ){0,2}as an? "
            + _EN_JOB,
            re.I,
        ),
        True,
    ),
    (
        "en_job_is",
        OCCUPATION,
        re.compile(rf"\bmy (?:job|occupation|profession) is (?:an? )?{EN_V}", re.I),
        True,
    ),
    (
        "en_by_profession",
        OCCUPATION,
        re.compile(r"\bI(?:'m| am) an? (?P<v>[a-z][a-z ]{1,40}?) by (?:profession|trade)", re.I),
        True,
    ),
    # A habit given up ("I quit smoking", "I've stopped drinking", "我戒烟了"): "quit smoking", "戒烟"
    # (`HABITS_SAME`); "I want to quit smoking", "I'm trying to quit" state nothing.
    (
        "en_quit_habit",
        HABITS,
        re.compile(
            r"\bI(?:'ve| have)? (?:just |finally |officially |recently |completely )*(?:quit|stopped|gave up|given up|kicked)"
            r" (?P<v>smoking|drinking|vaping|alcohol|cigarettes|booze)\b",
            re.I,
        ),
        True,
    ),
    (
        "zh_quit_habit",
        HABITS,
        re.compile(rf"{_ZH_HEAD}我{_ZH_WHEN}(?:已经|彻底)?(?P<v>戒烟|戒酒|戒了烟|戒了酒)了?"),
        False,
    ),
    # Anything else given up the same way ("我戒奶茶了", "我已经戒掉可乐了"): 戒 + the thing, ending on 了.
    # Not 戒指 (a ring), 戒备 / 戒严 / 戒心 / 戒律.
    (
        "zh_quit_other",
        HABITS,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:已经|彻底|决定)?(?P<v>戒(?:掉)?(?![指备严心律烟酒掉])[^{_STOP}\s了]{{1,6}}?)了"
        ),
        False,
    ),
    # "I quit coffee", "I've given up sugar": "quit coffee" (not "I quit my job": no determiner or
    # pronoun may follow; not "I gave up on him").
    (
        "en_quit_other",
        HABITS,
        re.compile(
            r"\bI(?:'ve| have)? (?:just |finally |officially |recently |completely )*(?:quit|gave up|given up|cut out) "
            r"(?!(?:my|our|the|a|an|on|it|that|this|these|those|him|her|them|me|you|being|trying|after|when|"
            r"because|today|yesterday|smoking|drinking|vaping|alcohol|cigarettes|booze)\b)"
            r"(?P<v>(?-i:[a-z][a-z\-]{1,20}(?: [a-z][a-z\-]{1,20})??))"
            r"(?=\s*(?:$|[.,!?;:\n])|\s+(?:for|and|but|so|because|since|last|this|two|three|a|completely|altogether|cold|now)\b)",
            re.I,
        ),
        True,
    ),
    # Retired: what the user does now ("I'm retired now", "I retired last year", "我退休了").
    (
        "en_retired",
        OCCUPATION,
        re.compile(r"\bI(?:'m| am|'ve| have)? (?:now |finally |just |officially )*(?P<v>retired)\b", re.I),
        True,
    ),
    ("zh_retired", OCCUPATION, re.compile(rf"{_ZH_HEAD}我{_ZH_WHEN}(?:已经|正式)?(?P<v>退休)了"), False),
    (
        # "I'm a nurse at the city hospital", "I'm a software engineer": only when the value's last word
        # is an occupation (`profile_extract._EN_OCCUPATIONS`), so "I'm a bit tired", "I'm a mess", "I'm a big fan of
        # jazz" state nothing.
        "en_im_a",
        OCCUPATION,
        re.compile(
            r"\bI(?:'m| am|'ve been| have been) (?:now |currently |actually |also |just )?an? " + _EN_JOB,
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
        re.compile(rf"\bmy (?:new )?(?:{_EN_PARTNER})(?:'s name is| is called| is named|,) {_EN_NAME}", re.I),
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
        # A new partner: "I have a new girlfriend, Emma", "I'm seeing someone new, his name is Jake",
        # "我交了个女朋友，她叫小美", "我有男朋友了，他叫阿杰", "我结婚了，老公叫李明".
        "en_new_partner",
        PARTNER_NAME,
        re.compile(
            rf"\bI(?:'ve| have)? (?:just )?(?:have|got|met|found) an? (?:new )?(?:{_EN_PARTNER})"
            rf"(?:,| named| called|,? (?:his|her|their) name is) {_EN_CAP_NAME}",
            re.I,
        ),
        True,
    ),
    (
        "en_seeing_someone",
        PARTNER_NAME,
        re.compile(
            rf"\bI(?:'m| am) (?:seeing|dating) (?:someone|somebody)(?: new)?,? (?:his|her|their) name is {_EN_CAP_NAME}",
            re.I,
        ),
        True,
    ),
    (
        "zh_new_partner",
        PARTNER_NAME,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:(?:交了|找了|有了?)(?:个|一个)?(?:新的?)?(?:{_ZH_PARTNER})了?|结婚了|订婚了)[，,]?"
            rf"(?:他|她)?(?:的名字)?(?:(?:我的?)?(?:{_ZH_PARTNER}))?叫{_ZH_NAME}"
        ),
        False,
    ),
    (
        "en_partner_apposition",
        PARTNER_NAME,
        re.compile(rf"\b(?:my|our) (?:new )?(?:{_EN_PARTNER}) {_EN_CAP_NAME}", re.I),
        True,
    ),
    (
        "en_pet_apposition",
        PETS,
        re.compile(rf"\b(?:my|our) (?P<kind>{PET_KIND_OR_BREED_EN}) {_EN_CAP_NAME}", re.I),
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
            rf"\b(?:my|our) (?P<kind>{PET_KIND_OR_BREED_EN})(?:'s name is| is called| is named) {_EN_NAME}",
            re.I,
        ),
        True,
    ),
    (
        # "I have a cat called Mochi", "we adopted a puppy named Rex": the kind and its name.
        "en_pet_have_named",
        PETS,
        re.compile(
            rf"\b(?:I|we)(?:'ve| have)? (?:have|got|adopted|own) an? (?P<kind>{PET_KIND_OR_BREED_EN})(?: called| named|,? whose name is) {_EN_NAME}",
            re.I,
        ),
        True,
    ),
    (
        "en_pet_have",
        PETS,
        re.compile(
            rf"\b(?:I|we)(?:'ve| have)? (?:have|got|adopted|own) (?:an?|two|three|four) (?P<v>(?:{_PET_KINDS_EN})s?)\b",
            re.I,
        ),
        True,
    ),
    (
        # "My cats are Mochi and Tofu", "our dogs' names are Max and Rex": the names follow
        # (`profile_extract._pet_list`); "my cats are Siamese" names none.
        "en_pets_are",
        PETS,
        re.compile(
            rf"\b(?:my|our) (?P<v>(?:{_PET_KINDS_EN})s)(?=(?:'? names)? (?:are|'re) (?:called |named )?(?-i:[A-Z]))",
            re.I,
        ),
        True,
    ),
    (
        "en_allergic_to",
        ALLERGIES,
        re.compile(rf"\bI(?:'m| am) {_EN_ADV}(?:very |severely |deathly |highly )?allergic to {EN_V}", re.I),
        True,
    ),
    ("en_allergy", ALLERGIES, re.compile(r"\bI have an? (?P<v>[a-z][a-z ]{1,30}?) allergy", re.I), True),
    (
        # "my favorite food is sushi", "my all-time favourite band is Queen", "I'm a huge fan of jazz".
        "en_favorite",
        LIKES,
        re.compile(
            rf"\bmy (?:all-time |absolute |very |new )?favou?rite(?: [a-z]+){{0,2}} (?:is|are|has to be) {EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_fan_of",
        LIKES,
        re.compile(
            rf"\bI(?:'m| am) (?:a |an )?(?:huge |big |massive |great |real |die-hard |longtime )?fan of {EN_V}",
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
            rf"(?!(?:the|a|an|my|your|his|her|our|their|it|this|that|these|those)\b){EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_not_into",
        DISLIKES,
        re.compile(
            rf"\bI(?:'m| am) not {_EN_ADV}(?:really |very |that |much )?into "
            rf"(?!(?:the|a|an|my|your|his|her|our|their|it|this|that|these|those)\b){EN_V}",
            re.I,
        ),
        True,
    ),
    (
        "en_dislike",
        DISLIKES,
        re.compile(
            rf"\bI {_EN_ADV}(?:hate|dislike|detest|can't stand|cannot stand|don't like|do not like){_EN_TASTE}",
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
        re.compile(rf"\bI {_EN_ADV}(?:love|like|enjoy|adore){_EN_TASTE}", re.I),
        True,
    ),
]

# A fact the user takes back ("I'm not allergic to shellfish after all", "我其实对花生不过敏"): the value
# is retracted, which ends it only where it is the fact in force, so a misread cannot remove anything else.
RETRACT_RULES: list[tuple[str, str, re.Pattern[str], bool]] = [
    # A taste given up ("我戒奶茶了", "我不喝奶茶了", "I quit coffee", "I don't drink soda anymore"): the like
    # of that thing ends (the change itself is kept: a habit, a diet).
    (
        "zh_quit_like",
        LIKES,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:已经|彻底|决定)?戒(?:掉)?(?![指备严心律掉])(?P<v>[^{_STOP}\s了]{{1,6}}?)了"
        ),
        False,
    ),
    (
        "zh_no_longer_like",
        LIKES,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:以后|今后|再也)?(?:不再|不)(?:喝|吃|碰)(?![全]?素|荤|饭|东西|药)(?P<v>[^{_STOP}\s了]{{1,8}}?)了(?=$|[{_STOP}\s]|啦|呢|哦)"
        ),
        False,
    ),
    (
        "en_quit_like",
        LIKES,
        re.compile(
            r"\bI(?:'ve| have)? (?:just |finally |officially |recently |completely )*(?:quit|gave up|given up|cut out|"
            r"stopped (?:eating|drinking)|no longer (?:eat|drink)) "
            r"(?!(?:my|our|the|a|an|on|it|that|this|him|her|them|me|you|being|trying)\b)"
            r"(?P<v>(?-i:[a-z][a-z\-]{1,20}(?: [a-z][a-z\-]{1,20})??))"
            r"(?=\s*(?:$|[.,!?;:\n])|\s+(?:any ?more|for|and|but|so|because|since|now|completely|altogether)\b)",
            re.I,
        ),
        True,
    ),
    # "I don't drink soda anymore", "I can't eat meat any more": only with "anymore" ("I can't eat
    # gluten" is a need, "I don't eat pork" a diet, neither a change of taste).
    (
        "en_not_anymore_like",
        LIKES,
        re.compile(
            r"\bI (?:just |really |honestly )*(?:don't|do not|can't|cannot|won't) (?:eat|drink) "
            r"(?!(?:my|our|the|a|an|it|that|this|him|her|them|me|you)\b)"
            r"(?P<v>(?-i:[a-z][a-z\-]{1,20}(?: [a-z][a-z\-]{1,20})??))(?=\s+any ?more\b)",
            re.I,
        ),
        True,
    ),
    # Where the user no longer lives, what they no longer do, who is no longer their partner: that
    # value ends ("我不住在北京了", "I don't live in London anymore", "I'm not a teacher anymore", "我不当
    # 老师了", "I broke up with Jake"). An occupation must read as one (as the rules that set it).
    (
        "zh_not_live_in",
        LOCATION,
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?{_ZH_WHEN}(?:(?:不|没)(?:再)?住在(?=[^{_STOP}\s]{{1,16}}了)|(?:以前|之前|曾经)住在){ZH_V}"
        ),
        False,
    ),
    (
        "en_not_live_in",
        LOCATION,
        re.compile(
            r"\b(?:I|we) (?:(?:don't|do not|no longer|used to) live|(?:just |finally )?moved (?:out of|away from)) "
            rf"(?:in )?(?:the )?{EN_PLACE}",
            re.I,
        ),
        True,
    ),
    (
        "zh_not_occupation",
        OCCUPATION,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:(?:不再|不)(?:是|当|做|干)|以前是|之前是|曾经是)(?:一名|一位|一个|个|名)?"
            rf"(?!吃|纯素|素食)(?P<v>[{_CJK}]{{2,8}}?)(?:了)?(?=$|[{_STOP}\s]|啦|呢|啊)"
        ),
        False,
    ),
    (
        "en_not_occupation",
        OCCUPATION,
        re.compile(
            r"\bI(?:'m| am) (?:not|no longer) (?:an? )?(?P<v>[a-z][a-z\- ]{1,40}?)(?= any ?more| now|$|[.,!?;:\n])"
            r"|\bI (?:used to be|was once|quit being|stopped being) (?:an? )?(?P<was>[a-z][a-z\- ]{1,40}?)"
            r"(?=$|[.,!?;:\n]|\s+(?:at|in|for|and|but|so|before|until|when|back)\b)",
            re.I,
        ),
        True,
    ),
    (
        "zh_broke_up_with",
        PARTNER_NAME,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_WHEN}(?:和|跟)(?!我|(?:{_ZH_PARTNER})(?:分|离))(?P<v>[{_CJK}]{{1,4}}?)(?:分手|离婚)了"
        ),
        False,
    ),
    (
        "en_broke_up_with",
        PARTNER_NAME,
        re.compile(
            r"\bI (?:just |finally |recently )?(?:broke up with|split up with|divorced|left) (?-i:(?P<v>[A-Z][a-z'\-]+))\b",
            re.I,
        ),
        True,
    ),
    # The partner named first: "Theo and I broke up", "Jake and I split up last week", "Mia dumped me",
    # "小敏和我分手了", "阿杰把我甩了". Not "Sarah and I split up the bill", "Tom left me a note".
    (
        "en_name_and_i_broke_up",
        PARTNER_NAME,
        re.compile(
            r"(?<![\w'])(?-i:(?P<v>[A-Z][a-z'\-]+))(?: and I(?: have| had|'ve)? "
            r"(?:just |finally |officially |recently |actually )*(?:broke up|split up|separated|split(?!\s+up)|"
            r"got divorced|called it quits)(?!\s+(?:the|a|an|our|my|his|her|their|it|them|this|that)\b)|"
            r" (?:just |finally |recently )*(?:dumped|left|broke up with) me"
            r"(?=\s*$|\s*[.,!;:~\n]|\s+(?:for|last|yesterday|today|tonight|this|after|and|over)\b))\b",
            re.I,
        ),
        True,
    ),
    (
        "zh_name_broke_up_with_me",
        PARTNER_NAME,
        re.compile(
            rf"{_ZH_HEAD}(?!我)(?P<v>[{_CJK}]{{2,3}}?)(?:(?:和|跟)我{_ZH_WHEN}(?:分手|离婚)|{_ZH_WHEN}把我甩|{_ZH_WHEN}甩了我)了?"
        ),
        False,
    ),
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
            rf"\bI(?:'m| am) (?:actually |really )?(?:not|no longer) (?:actually |really )?allergic to {EN_V}",
            re.I,
        ),
        True,
    ),
]

# Meat eaten again ("I started eating meat again", "I stopped being vegetarian", "我又开始吃肉了"): every
# meatless diet in force ends (`MEATLESS`), not "no pork" or "halal".
MEAT_AGAIN = re.compile(
    r"\bI(?:'ve| have|'m| am)? (?:just |finally )?(?:started |begun |began |now )?(?:eating|eat|ate) meat again\b"
    r"|\bI (?:just |finally )?(?:stopped|quit) being (?:a )?(?:vegetarian|vegan|pescatarian|pescetarian|plant-based)\b"
    rf"|{_ZH_HEAD}我{_ZH_WHEN}(?:重新)?(?:开始)?吃肉了",
    re.I,
)
# A habit given up, taken up again ("I started smoking again", "我又开始抽烟了"): the "quit" it ends.
HABIT_AGAIN = re.compile(
    r"\bI(?:'ve| have)? (?:started |begun |began )?(?P<en>smoking|drinking|vaping) again\b"
    rf"|{_ZH_HEAD}我{_ZH_WHEN}(?:又|重新)(?:开始)?(?P<zh>抽烟|吸烟|喝酒)了",
    re.I,
)
HABITS_SAME = {
    "smoking": "quit smoking",
    "cigarettes": "quit smoking",
    "drinking": "quit drinking",
    "alcohol": "quit drinking",
    "booze": "quit drinking",
    "vaping": "quit vaping",
    "戒了烟": "戒烟",
    "戒了酒": "戒酒",
    "抽烟": "戒烟",
    "吸烟": "戒烟",
    "喝酒": "戒酒",
}
# Meat, by the names of meats and meat dishes (not fish or seafood: a pescatarian keeps those): a
# like of one ends when a meatless diet begins ("I love a good steak", then "I've gone vegetarian").
MEAT_WORDS = re.compile(
    r"(?<![A-Za-z])(?:meats?|steaks?|beef|pork|bacon|ham|hams|lamb|mutton|veal|venison|chicken|turkey|duck|"
    r"sausages?|salami|pepperoni|prosciutto|chorizo|brisket|ribs|burgers?|hamburgers?|cheeseburgers?|"
    r"hot ?dogs?|meatballs?|bbq|barbecue|kebabs?|carnitas|jerky|wings|fried chicken|pork chops?)(?![A-Za-z])|"
    r"肉|牛排|火腿|香肠|腊肠|培根|排骨|鸡翅|鸡腿|烤鸭|汉堡|肥牛|肥羊|毛肚|鸭血|猪蹄|串串",
    re.I,
)
MEATLESS = ("vegetarian", "vegan", "pescatarian", "plant-based", "no meat", "吃素", "吃全素", "不吃肉")

# The end of a key's value whatever it is: the user quit their job, broke up with their partner
# ("我辞职了", "I got laid off", "我和男朋友分手了", "my girlfriend and I broke up"). Read on the message
# as said (a time word kept: "我明天就辞职了" is a plan), in the past, the user the subject.
_ZH_DONE = r"(?:今天|昨天|前天|上周|上个月|前几天|前阵子|刚刚?|已经|终于|还是|最后|其实|也)*"
_EN_DONE = r"(?:just |finally |recently |actually |officially |already )*"
END_RULES: list[tuple[str, str, re.Pattern[str]]] = [
    (
        "zh_quit_job",
        OCCUPATION,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_DONE}(?:辞职|离职|裸辞|被(?:公司)?(?:开除|辞退|裁员?|炒)|失业|下岗)了"
        ),
    ),
    (
        "en_quit_job",
        OCCUPATION,
        re.compile(
            rf"\bI {_EN_DONE}(?:quit|left|lost) my (?:job|day job|position)(?=$|[.,!?;:\n]|\s+(?:today|yesterday|last|this|and|so|because|lol)\b)"
            rf"|\bI(?:'ve| have)? {_EN_DONE}(?:got|been|was|just got) (?:fired|laid off|let go|sacked)\b",
            re.I,
        ),
    ),
    # No allergies at all (any more): "I don't have any allergies", "I'm not allergic to anything
    # anymore", "我不过敏", "我什么都不过敏", "我没有过敏史" (`profile_extract` keeps them when the message
    # names an exception: "I have no allergies except penicillin").
    (
        "zh_no_allergies",
        ALLERGIES,
        re.compile(
            rf"{_ZH_HEAD}我{_ZH_DONE}(?:现在|目前|其实|已经)*(?:对)?(?:(?:什么|啥)(?:东西)?(?:都|也)(?:不|没)|不再?|"
            r"没有?(?:什么|任何)?(?:东西)?)过敏(?:史|的东西|的)?(?:了|啦)?(?=$|[，,。.!！~～;；\s]|呢|啊|哦|呀)"
        ),
    ),
    (
        "en_no_allergies",
        ALLERGIES,
        re.compile(
            rf"\bI {_EN_DONE}(?:(?:don't|do not) have (?:any )?(?:known )?(?:food )?allergies|have no (?:known )?(?:food )?allergies|"
            r"outgrew (?:all )?(?:of )?my allergies)\b"
            rf"|\bI(?:'m| am) {_EN_DONE}(?:not|no longer) (?:actually |really )?allergic to anything\b",
            re.I,
        ),
    ),
    (
        "zh_broke_up",
        PARTNER_NAME,
        re.compile(
            rf"{_ZH_HEAD}(?:我{_ZH_DONE}(?:和|跟)(?:(?:我的?)?(?:{_ZH_PARTNER})|他|她)|我们){_ZH_DONE}(?:分手|离婚|分开)了"
            rf"|{_ZH_HEAD}我{_ZH_DONE}(?:离婚|失恋|被甩)了"
        ),
    ),
    (
        "en_broke_up",
        PARTNER_NAME,
        re.compile(
            rf"\b(?:I {_EN_DONE}(?:broke up with|split up with|divorced|left) (?:my (?:{_EN_PARTNER})|him|her)|"
            rf"my (?:{_EN_PARTNER}) (?:and I |just |finally )*(?:broke up|split up|separated|got divorced)|"
            rf"my (?:{_EN_PARTNER}) {_EN_DONE}(?:broke up with|dumped|left) me|"
            rf"we {_EN_DONE}(?:broke up|split up|got divorced)|I(?:'m| am| got) {_EN_DONE}(?:divorced|dumped))\b",
            re.I,
        ),
    ),
]

# A pet that is gone: it died, was put down, ran away or was given away ("My cat Luna died last week",
# "we had to put our dog down", "Luna passed away", "我的猫咪走了", "我家狗狗去世了", "我们把狗送人了").
# The kind and/or the name of the pet said; `profile_extract.ended_pets` ends the pet in force it
# names (a kind alone only when one pet of that kind is in force, a name alone only a pet's name).
# Read with the time words out ("去年死了" is 死了), the verb right after the pet: "my cat almost
# died", "my cat is dying", "我的猫走了过来" end nothing.
_EN_GONE = (
    r"(?:just |finally |sadly |recently |unfortunately |suddenly )*"
    r"(?:died|passed away|passed on|passed(?=\s*[.,!;:~\n]|\s*$)|has (?:died|passed away|passed on)|"
    r"is (?:gone|dead|no longer with us)|(?:was|got|had to be) put (?:down|to sleep)|was euthanized|"
    r"ran away(?! from)|went missing|crossed the rainbow bridge)\b"
)
_EN_PET = rf"(?P<kind>{PET_KIND_OR_BREED_EN})(?:,? (?-i:(?P<name>[A-Z][a-z'\-]+)),?)?(?!['\w])"
_EN_LOSE = (
    r"(?:just |finally |sadly |recently |unfortunately )*"
    r"(?:lost|buried|had to rehome|rehomed|gave away|had to give away|had to give up|(?:had to )?put down)"
)
_ZH_PET_NAME_GLUED = rf"(?:[，,]?(?:叫)?(?P<name>[{_CJK}]{{1,4}}?)[，,]?)?"
_ZH_GONE = (
    r"(?:也|已经|还是|终于|突然|刚刚?|就)*(?:走了|去世了|过世了|死了|死掉了|没了|病死了|老死了|离开了(?:我们)?|"
    r"不在了|走丢了|丢了|跑丢了|被送人了|去了喵星|回喵星了|去了汪星|回汪星了)"
    r"(?=$|[，,。.!！?？;；~～\s]|呢|啊|呀|哦|吧|嘛|哈|呜)"
)
PET_END_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    (
        "en_pet_gone",
        re.compile(rf"\b(?:my|our) {_EN_PET} {_EN_GONE}", re.I),
        True,
    ),
    (
        "en_named_pet_gone",
        re.compile(
            rf"(?:^|(?<=[.!?,;]\s)|(?<=\band\s)|(?<=\bbut\s)|(?<=\bthen\s))(?-i:(?P<name>[A-Z][a-z'\-]+)),? "
            rf"(?:(?:my|our) (?P<kind>{_PET_KINDS_EN}),? )?{_EN_GONE}",
            re.I,
        ),
        True,
    ),
    (
        "en_lost_pet",
        re.compile(
            rf"\b(?:I|we)(?:'ve| have)? {_EN_LOSE} (?:my|our) {_EN_PET}(?! (?:for|in|at|somewhere|today|again)\b)",
            re.I,
        ),
        True,
    ),
    (
        "en_put_pet_down",
        re.compile(
            rf"\b(?:I|we) (?:had to |just |finally )*put (?:my|our) {_EN_PET} (?:down|to sleep)\b", re.I
        ),
        True,
    ),
    (
        "zh_pet_gone",
        re.compile(
            rf"{_ZH_HEAD}我(?:的|家的?|们家的?)?(?P<kind>[橘黑白花灰黄大小老胖]?(?:{_PET_KINDS_ZH})){_ZH_PET_NAME_GLUED}{_ZH_GONE}"
        ),
        False,
    ),
    (
        "zh_give_pet_away",
        re.compile(
            rf"{_ZH_HEAD}我(?:们)?(?:已经|还是|终于|只好|只能)?把(?:我的|我家的?)?(?P<kind>[橘黑白花灰黄大小老胖]?(?:{_PET_KINDS_ZH})){_ZH_PET_NAME_GLUED}"
            r"(?:送人|送走|安乐死|埋)了"
        ),
        False,
    ),
]

# The people in the user's life by name (`people`): a relative or friend named after the word for
# them: "my sister Anna", "my son is named Leo", "my mom's name is Linda", "我妹妹叫小丽", "我姐姐的名字
# 是王芳", and, glued as jieba leaves it, "我姐小红今天来了", "我哥大伟说…" (`profile_extract._people`
# takes the glued name only when jieba tags it a person's name or it has a nickname's shape). A
# partner is `partner_name`; an ex, a boss or a colleague is none of these.
_EN_KIN = (
    r"mom|mum|mother|dad|father|sister|little sister|big sister|older sister|younger sister|brother|"
    r"little brother|big brother|older brother|younger brother|son|daughter|grandma|grandmother|"
    r"grandpa|grandfather|granddaughter|grandson|aunt|uncle|cousin|niece|nephew|best friend|friend|"
    r"stepmom|stepdad|stepson|stepdaughter|stepsister|stepbrother"
)
_ZH_KIN = (
    r"姐姐|妹妹|哥哥|弟弟|妈妈|爸爸|老妈|老爸|儿子|女儿|闺女|爷爷|奶奶|外公|外婆|姥姥|姥爷|表姐|表妹|表哥|表弟|"
    r"堂姐|堂妹|堂哥|堂弟|闺蜜|好朋友|好友|发小|姐|妹|哥|弟|妈|爸"
)
# Several people of one kind named at once: "my sisters Anna and Mia", "I have two brothers, Tom and
# Sam", "我有两个姐姐，小红和小丽", "我的两个儿子叫大宝和二宝" (`profile_extract._people`).
_EN_KIN_PLURAL = (
    r"sisters|brothers|sons|daughters|kids|children|cousins|friends|best friends|grandparents|aunts|uncles|"
    r"nieces|nephews"
)
_EN_NAMES = r"(?-i:(?P<names>[A-Z][a-z'\-]+(?:\s*,\s*[A-Z][a-z'\-]+)*,?\s+(?:and|&)\s+[A-Z][a-z'\-]+))"
_ZH_KIN_PLURAL = r"姐姐|妹妹|哥哥|弟弟|儿子|女儿|孩子|闺蜜|好朋友|表姐|表妹|表哥|表弟|堂姐|堂妹|堂哥|堂弟"
_ZH_NAMES = (
    rf"(?P<names>[{_CJK}]{{2,3}}(?:[和、跟][{_CJK}]{{2,3}})+)(?=$|[，,。.!！?？；;~～\s]|吧|啊|呀|哦|呢)"
)
PEOPLE_LIST_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    (
        "en_kin_list",
        re.compile(
            rf"\b(?:(?:my|our)(?: two| three| four)?|I have (?:two|three|four)) (?P<kin>{_EN_KIN_PLURAL})"
            rf"(?:'? names are|,| are called| are named| are|:| called| named)? {_EN_NAMES}"
            r"(?=\s*$|\s*[.,!;:~)]|\s+(?:and|but|are|were|lol|haha|btw|who|came|live|both)\b)",
            re.I,
        ),
        True,
    ),
    (
        "zh_kin_list",
        re.compile(
            rf"{_ZH_HEAD}我(?:有|的|家)?(?:两|三|四|几)个(?P<kin>{_ZH_KIN_PLURAL})[，,]?(?:分别|一个)?(?:叫|是)?{_ZH_NAMES}"
        ),
        False,
    ),
]
# The word one of several is stored under: "sisters" -> sister.
KIN_ONE = {"children": "child", "kids": "child", "best friends": "best friend"}

# The people the user has lost (`losses`): "my grandma passed away last spring", "I lost my dad to
# cancer", "我奶奶去年去世了". The relative (and the name, when said) right before the verb: "my mom
# almost died", "my grandma is dying", "我妈走了" (she may have only left the room) end no one.
_EN_PEOPLE_GONE = (
    r"(?:just |sadly |recently |unfortunately |suddenly |finally |peacefully )*"
    r"(?:died|passed away|passed on|passed(?=\s*[.,!;:~\n]|\s*$)|has (?:died|passed away|passed on)|"
    r"is no longer with us|lost (?:his|her|their) (?:battle|fight))\b"
)
_EN_WHO = rf"(?P<kin>{_EN_KIN}|{_EN_PARTNER})(?:,? (?-i:(?P<name>[A-Z][a-z'\-]+)),?)?"
_ZH_PEOPLE_GONE = rf"(?:也|已经|突然|刚刚?|在[{_CJK}]{{1,6}})?(?:去世了|过世了|离世了|病逝了|病故了|不在了|离开了我们|离开我们了|走了(?=[，,。.!！~～\s]*$))"
LOSS_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    ("en_kin_died", re.compile(rf"\b(?:my|our) {_EN_WHO} {_EN_PEOPLE_GONE}", re.I), True),
    (
        "en_lost_kin",
        re.compile(
            rf"\b(?:I|we)(?:'ve| have)? (?:just |sadly |recently )*lost (?:my|our) {_EN_WHO}"
            r"(?=\s*$|\s*[.,!;:~\n]|\s+(?:to|last|this|when|after|a few|two|three|in (?:19|20)\d\d)\b)",
            re.I,
        ),
        True,
    ),
    (
        "zh_kin_died",
        re.compile(rf"{_ZH_HEAD}我(?:的|家)?(?P<kin>{_ZH_KIN}|{_ZH_PARTNER})(?P<name>){_ZH_PEOPLE_GONE}"),
        False,
    ),
]

# Dates of the people the user names and of the couple (`dates`): "my mom's birthday is in May", "our
# anniversary is June 3rd", "我妈妈的生日是五月十二号", "我们的结婚纪念日是六月三号".
DATE_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    (
        "en_kin_birthday",
        re.compile(
            rf"\b(?:my|our) {_EN_WHO}'s? birthday(?: is|'s| falls)? (?:on )?(?:the )?{_EN_DATE_OR_MONTH}",
            re.I,
        ),
        True,
    ),
    (
        "en_anniversary",
        re.compile(
            r"\b(?:our|my) (?P<what>(?:wedding |dating )?anniversary)(?: is|'s| falls)? (?:on )?(?:the )?"
            + _EN_DATE_OR_MONTH,
            re.I,
        ),
        True,
    ),
    (
        "zh_kin_birthday",
        re.compile(rf"我(?:的|家)?(?P<kin>{_ZH_KIN}|{_ZH_PARTNER})(?P<name>)的?生日(?:是|在)?{_ZH_DATE}"),
        False,
    ),
    (
        "zh_anniversary",
        re.compile(
            rf"(?:我们|我(?:和|跟)[{_CJK}]{{1,4}})的?(?P<what>(?:结婚|恋爱|相识|在一起的?)?(?:周年)?纪念日)(?:是|在)?{_ZH_DATE}"
        ),
        False,
    ),
]
PEOPLE_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    (
        "en_kin_named",
        re.compile(
            rf"\b(?:my|our) (?P<kin>{_EN_KIN})(?:'s name is| is called| is named| is|,)? {_EN_CAP_NAME}",
            re.I,
        ),
        True,
    ),
    (
        "zh_kin_named",
        re.compile(
            rf"我(?:的|家)?(?P<kin>{_ZH_KIN})(?:(?:的名字|的小名|的大名)(?:叫|是)|叫)(?P<v>[{_CJK}·]{{2,4}}?|[A-Z][a-z]+)"
            r"(?=$|[，,。.!！?？；;~～\s]|吧|啊|呀|哦|了|呢|，)"
        ),
        False,
    ),
    ("zh_kin_glued", re.compile(rf"{_ZH_HEAD}我(?P<kin>{_ZH_KIN})(?P<rest>[{_CJK}]{{2,8}})"), False),
]
# A relation corrected: "Sam is my cousin, not my brother", "Anna's actually my stepsister, not my
# sister", "Sam isn't my brother, he's my cousin", "阿强是我表哥，不是亲哥", "小林不是我妹妹，是我表妹":
# the person said under the old word is under the new one (`profile_extract._kin_corrections`).
_ZH_KIN_END = rf"(?=$|[{_STOP}\s]|啦|啊|呀|哦|吧|呢)"
KIN_CORRECTION_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    (
        "en_kin_corrected",
        re.compile(
            rf"(?<![\w'])(?-i:(?P<who>[A-Z][a-z'\-]+))(?:'s| is| was)(?: actually| really)? (?:my|our) "
            rf"(?P<new>{_EN_KIN}),? (?:and |but )?not (?:my|our|a|an|the) (?P<old>{_EN_KIN})(?![\w'])"
            rf"|(?<![\w'])(?-i:(?P<who2>[A-Z][a-z'\-]+)) (?:isn't|is not|wasn't|was not|'s not)(?: actually| really)? "
            rf"(?:my|our) (?P<old2>{_EN_KIN})[,;]? (?:he|she|they)(?:'s| is| was|'re| are) (?:actually |really )?"
            rf"(?:my|our) (?P<new2>{_EN_KIN})(?![\w'])",
            re.I,
        ),
        True,
    ),
    (
        "zh_kin_corrected",
        re.compile(
            rf"{_ZH_HEAD}(?:其实|实际上)?(?P<who>[{_CJK}]{{2,3}}?)(?:其实|实际上)?是我的?(?P<new>{_ZH_KIN})[，,\s]*(?:而)?不是"
            rf"(?:我的?)?亲?(?P<old>{_ZH_KIN}){_ZH_KIN_END}"
            rf"|{_ZH_HEAD}(?:其实|实际上)?(?P<who2>[{_CJK}]{{2,3}}?)(?:其实)?不是我的?亲?(?P<old2>{_ZH_KIN})[，,\s]*(?:而)?是"
            rf"(?:我的?)?(?P<new2>{_ZH_KIN}){_ZH_KIN_END}"
        ),
        False,
    ),
]
# The word a relative is stored under: 姐 is 姐姐, 老妈 妈妈, "mum" mom.
KIN_SAME = {
    "姐": "姐姐",
    "妹": "妹妹",
    "哥": "哥哥",
    "弟": "弟弟",
    "妈": "妈妈",
    "老妈": "妈妈",
    "爸": "爸爸",
    "老爸": "爸爸",
    "闺女": "女儿",
    "好友": "好朋友",
    "mum": "mom",
    "mother": "mom",
    "father": "dad",
    "grandmother": "grandma",
    "grandfather": "grandpa",
}
