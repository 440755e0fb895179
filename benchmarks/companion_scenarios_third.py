"""A third, independent set of long-horizon companion scenarios through `memsched serve`.

Reuses the runner of `companion_scenarios.py` (`memsched serve` as a subprocess on a fresh home, the
default embedders, FakeOpenAI as the upstream on loopback, the official `openai` SDK with `user`,
`metadata.session_id`, `metadata.timestamp`, `metadata.timezone`) and plays two new companion
histories of about 55 simulated days, one in English (a graphic designer in Portland, Taiwanese
family) and one in Chinese (a florist in Chengdu), written for this script. The checks are what a
person would notice and what the first two sets do not already ask: an event announced ahead and a
later "guess what, I passed!" that does not say what; a return after three weeks away; a boss and a
coworker (or a partner and an employee) kept apart; a taste that changed (steak, then vegetarian;
奶茶, then 戒了); "forget my address" while the other facts stay; a trip with a new timezone (sent by
the phone in English, only said in Chinese); "what's my name?" on day 56; English words inside Chinese
and a Chinese word inside English; one long message with three topics; affection; a list to remember;
someone else's angry words quoted ("my mom said 'you never call'"); "what was that advice you gave
me?" about the companion's own earlier reply.

    python benchmarks/companion_scenarios_third.py [--only en|zh] [--out DIR] [-v] [--database-url URL]

The checks were written before the script was first run against memsched; prints PASS/FAIL per
check and the count; `--out` keeps each checked request's messages as text.
"""

from __future__ import annotations

import re
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).parent))

from companion_scenarios import context_only, dump, main, trace

PERSONA = "You are Mia, a warm and attentive companion."  # the runner recognises the chat by it
PROFILE_HEADER = "User profile (current facts"

# The companion's own advice, as a real model would give it, so a later "what did you tell me?"
# has something of the companion's to find.
ADVICE_EN = (
    "Lead with your strongest piece, and tell each project in three beats: the problem, your "
    "process, the result. Keep it to eight projects at most."
)
ADVICE_ZH = "可以试试做“每周一花”的订阅：老客户每周收到一束当季的花，按月付钱，客流就稳了。"


def reply_for(body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    if msgs and msgs[0].get("role") == "system" and str(msgs[0].get("content", "")).startswith(PERSONA):
        last = msgs[-1].get("content")
        if isinstance(last, list):
            last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
        last = str(last)
        if "presenting my work" in last:
            return ADVICE_EN
        if "生意不好" in last:
            return ADVICE_ZH
        return f"I'm here. ({last[:40]})"
    return "nope"  # helper calls: not JSON, memsched falls back to its rules


def profile(sys_: str) -> str:
    """The profile section of a system prompt (header to the next blank line), or ""."""
    i = sys_.find(PROFILE_HEADER)
    if i < 0:
        return ""
    return sys_[i:].split("\n\n")[0]


def strip_formerly(text: str) -> str:
    return re.sub(r"\(since [^)]*formerly [^)]*\)|formerly [^)\n;]*|\(was [^)]*\)", "", text)


def mode_of(tr: dict[str, Any]) -> str:
    return str(tr.get("route", {}).get("mode") or tr.get("mode"))


def signal(tr: dict[str, Any], name: str) -> bool:
    return bool(tr.get("route", {}).get("signals", {}).get(name))


CARRIED_ANGER = re.compile(
    r"current mood[^\n]*(upset|angry|annoyed|hurt)|upset with you|angry with you|conflict|argument",
    re.I,
)
GAP_EN = re.compile(r"\b(2[0-9]|3[0-9]) days\b|\bthree weeks\b|\b3 weeks\b", re.I)
GAP_ZH = re.compile(
    r"\b(2[0-9]|3[0-9]) days\b|\bthree weeks\b|\b3 weeks\b|(2[0-9]|3[0-9])天|三周|三个星期", re.I
)


# --------------------------------------------------------------------------------------------
# English: Hannah Lin, graphic designer in Portland; boss Greg, coworker Tom, her 阿嬤 in Taipei.
# --------------------------------------------------------------------------------------------


def en(run: Any) -> None:
    S = "en"
    tz = "America/Los_Angeles"
    PDX = ZoneInfo(tz)
    user = f"hannah-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 1, 5, tzinfo=PDX)  # a Monday; day 10 is Wed Jan 14, day 12 Fri Jan 16

    def at(day: int, hh: int, mm: int = 0, zone: ZoneInfo = PDX) -> datetime:
        return datetime.combine((d0 + timedelta(days=day - 1)).date(), datetime.min.time(), zone).replace(
            hour=hh, minute=mm
        )

    def say(day: int, hh: int, mm: int, text: str, *, zone: str = tz, **kw: Any) -> dict[str, Any]:
        return run.say(user, at(day, hh, mm, ZoneInfo(zone)), text, tz=zone, **kw)

    say(1, 19, 0, "Hi Mia! I'm Hannah Lin. Nice to finally have someone to talk to in the evenings.")
    say(1, 19, 3, "I'm a graphic designer at a small branding agency in Portland.")
    say(1, 19, 6, "My boss is Greg, he's the creative director, and he's kind of intense.")
    say(2, 12, 30, "My coworker Tom sits next to me, he's the other designer. He always shares his snacks.")
    say(3, 19, 0, "I'm such a carnivore. I love a good steak, medium rare, with lots of garlic butter.")
    say(3, 19, 4, "Oh and my birthday is August 9th, for the record.")
    say(4, 20, 0, "My address is 1418 Alder Street, apartment 3B, in case you ever need it lol.")
    say(5, 18, 0, "My 阿嬤 turns 90 next month, the whole family is flying to Taipei for her party.")
    say(
        6,
        13,
        0,
        "Greg made me redo the whole brochure layout because he didn't like the typeface. Third time this month.",
    )
    say(7, 16, 0, "Tom covered for me when I was late this morning, he told Greg I was at the print shop.")
    pottery = [
        "I started a wheel-throwing pottery class on Thursdays, it's so much harder than it looks.",
        "Centering the clay is the whole game, if it's off by a millimetre the bowl wobbles apart.",
        "My first three bowls collapsed, the instructor says I pull the walls up too fast.",
        "She taught us to brace our elbows on our knees so the hands don't drift.",
        "Trimming the foot ring is oddly satisfying, like peeling an apple in one strip.",
        "We glaze next week, I picked a speckled celadon for my one surviving bowl.",
        "Apparently the kiln firing takes two days and some glazes come out completely different colours.",
        "I'm going to make a set of mugs for my family once I can actually pull a handle.",
    ]
    for i, line in enumerate(pottery):
        say(8, 20, 4 * i, line)
    say(9, 21, 0, "Quiet Sunday. Did laundry, watched two episodes of a baking show, early night.")

    # an event announced ahead, then "I passed!" without saying what
    say(
        10,
        20,
        0,
        "My driving test is on Friday morning and I'm so nervous. I failed parallel parking last time.",
    )
    say(10, 20, 3, "My dad has been taking me to practise in the Costco parking lot every evening.")
    say(11, 19, 0, "Work was fine. Greg was in meetings all day so it was peaceful.")
    r = say(12, 13, 0, "GUESS WHAT. I PASSED!!!")
    ctx = dump("en-passed", run, r)
    run.check(
        S, "'I passed!': the driving test announced on Wednesday is in view", "driving test" in ctx, ctx
    )

    # the companion gives advice it should be able to recall later
    say(
        13,
        21,
        0,
        "I have a portfolio review with a bigger agency next month. Any tips for presenting my work?",
    )

    # one long message, three topics
    say(
        14,
        21,
        30,
        "Long day, so a brain dump. Work: Greg rejected my poster draft again and wants it by Monday. "
        "Home: my landlord says the rent goes up by $150 in March, which is brutal. "
        "And something good: I adopted a grey kitten from the shelter and named her Miso!",
    )

    # quoted anger that is not at the companion
    r = say(
        15,
        19,
        0,
        "My mom called and said 'you never call me anymore, I'm so disappointed in you.' Ugh, that stung.",
    )
    tr = trace(run, r)
    run.check(
        S,
        "quoted speech: mom's words are not read as a conflict with the companion",
        "conflict" not in mode_of(tr),
        f"mode={mode_of(tr)} route={tr.get('route')}",
    )
    r = say(15, 19, 20, "Anyway. What should I watch tonight?")
    sys_ = run.system(r)
    dump("en-after-quote", run, r)
    run.check(
        S,
        "quoted speech: no anger at the companion carried into the next turn",
        not CARRIED_ANGER.search(sys_),
        sys_,
    )

    # a preference that changed
    say(
        16,
        18,
        0,
        "Big change: I've gone vegetarian. I watched a documentary about factory farms and I just can't eat meat anymore.",
    )
    r = say(17, 18, 30, "What should I cook for dinner tonight?")
    sys_ = run.system(r)
    ctx = dump("en-dinner", run, r)
    prof = profile(sys_)
    run.check(S, "gone vegetarian: vegetarian is in the profile", "vegetarian" in prof.lower(), prof or sys_)
    run.check(
        S,
        "gone vegetarian: loving steak is not presented as current",
        "steak" not in strip_formerly(prof).lower(),
        prof or sys_,
    )

    # forget one fact, keep the others
    say(18, 20, 0, "Please forget my address.")
    r = say(19, 20, 0, "What do you remember about me?")
    sys_ = run.system(r)
    ctx = dump("en-forget-address", run, r)
    run.check(
        S,
        "forget my address: the address is gone from the context",
        "1418" not in ctx and "Alder" not in ctx,
        ctx,
    )
    run.check(
        S,
        "forget my address: the birthday stays in the profile",
        "August 9" in profile(sys_),
        profile(sys_) or sys_,
    )
    run.check(
        S,
        "forget my address: the job stays in the profile",
        "designer" in profile(sys_).lower(),
        profile(sys_) or sys_,
    )

    # a boss and a coworker
    r = say(20, 21, 0, "Do you think Tom likes me? Like, likes me likes me?")
    ctx = dump("en-tom", run, r)
    run.check(
        S,
        "coworker: what Tom did is in view for a question about Tom",
        "covered for me" in ctx or "shares his snacks" in ctx,
        ctx,
    )
    prof = profile(run.system(r))
    boss_lines = [line for line in prof.splitlines() if "boss" in line.lower() or "manager" in line.lower()]
    run.check(
        S, "coworker: Tom is not recorded as the boss", not any("Tom" in line for line in boss_lines), prof
    )
    r = say(20, 21, 5, "Ugh, and what's my boss's name again? My brain is fried.")
    ctx = dump("en-boss", run, r)
    run.check(S, "boss: Greg is in view when asked for the boss's name", "Greg" in ctx, ctx)

    # affection
    r = say(
        21,
        22,
        30,
        "Honestly Mia, talking to you every night is my favourite part of the day. I feel really close to you.",
    )
    tr = trace(run, r)
    run.check(S, "affection: the turn is read as intimacy", "intimacy" in mode_of(tr), f"mode={mode_of(tr)}")

    # a list to remember
    say(
        22,
        20,
        0,
        "Can you remember my packing list for Taipei? Passport, a plug adapter, the jade bracelet for 阿嬤, my retainer, and a rain jacket.",
    )

    # leaves for three weeks
    say(
        24,
        20,
        0,
        "Heading to my cousin's wedding in Ohio tomorrow. I'm the maid of honor and I still haven't finished my speech!",
    )
    say(24, 20, 3, "I'll probably be offline for a while, family stuff. Talk soon!")
    r = say(46, 19, 0, "Hey, I'm back! Sorry I vanished on you.")
    sys_ = run.system(r)
    ctx = dump("en-back", run, r)
    run.check(S, "back after 3 weeks: the prompt says how long it has been", bool(GAP_EN.search(sys_)), sys_)
    run.check(
        S,
        "back after 3 weeks: the wedding she left for is in view",
        "wedding" in ctx and "maid of honor" in ctx,
        ctx,
    )

    r = say(47, 20, 0, "Okay trip prep time. What was on my packing list again?")
    ctx = dump("en-list", run, r)
    run.check(
        S,
        "list: the packing list is in view, all of it",
        all(w in ctx for w in ("Passport", "plug adapter", "jade bracelet", "retainer", "rain jacket")),
        ctx,
    )
    r = say(48, 20, 0, "Remind me, how old is my grandma turning?")
    ctx = dump("en-grandma", run, r)
    run.check(S, "a Chinese word in English: 'my grandma' finds the 阿嬤 line", "turns 90" in ctx, ctx)

    # travel: the phone now sends Asia/Taipei
    r = say(
        50, 23, 40, "Just landed in Taipei! It's nearly midnight here and I'm wide awake.", zone="Asia/Taipei"
    )
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("en-taipei", run, r)
    run.check(S, "new timezone: the prompt states Taipei's 23:40", bool(re.search(r"\b23:40\b", sys_)), sys_)
    run.check(
        S, "new timezone: 23:40 in Taipei is late night", signal(tr, "late_night"), str(tr.get("route"))
    )
    r = say(
        51,
        9,
        0,
        "Good morning from Taipei! Breakfast at a soy milk shop with my cousins.",
        zone="Asia/Taipei",
    )
    sys_ = run.system(r)
    run.check(
        S,
        "new timezone: the next morning is 09:00 Taipei time",
        bool(re.search(r"\b09:00\b|\b9:00\b", sys_)),
        sys_,
    )

    r = say(55, 20, 0, "What was that advice you gave me about presenting my portfolio?")
    ctx = dump("en-advice", run, r)
    run.check(S, "the companion's own advice is in view when asked", "three beats" in ctx, ctx)

    r = say(56, 9, 0, "Random question but what's my name?")
    sys_ = run.system(r)
    dump("en-name", run, r)
    run.check(
        S,
        "day 56 'what's my name?': Hannah is in the profile",
        "Hannah" in profile(sys_),
        profile(sys_) or sys_,
    )

    r = say(57, 19, 0, "How much did my landlord say the rent is going up?")
    ctx = dump("en-rent", run, r)
    run.check(S, "long message: the rent increase is in view", "$150" in ctx, ctx)
    r = say(
        57, 19, 5, "Miso just knocked a glass off the table, what's the best way to kitten-proof a shelf?"
    )
    prof = profile(run.system(r))
    ctx = dump("en-kitten", run, r)
    run.check(
        S,
        "long message: the kitten Miso is known (profile or context)",
        "Miso" in prof or "adopted a grey kitten" in ctx,
        ctx,
    )

    run.wait_jobs()
    for secret in ("1418 Alder",):
        where = run.db_has(secret)
        run.check(S, f"forgotten {secret!r} is not in {run.stored_in}", not where, str(where))


# --------------------------------------------------------------------------------------------
# Chinese: 苏晓, florist in Chengdu; partner 阿珍, employee 小周; 奶茶 given up; London trip.
# --------------------------------------------------------------------------------------------


def zh(run: Any) -> None:
    S = "zh"
    tz = "Asia/Shanghai"
    SH = ZoneInfo(tz)
    user = f"suxiao-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 3, 2, tzinfo=SH)  # a Monday; day 9 is Tue Mar 10, day 12 is Fri Mar 13

    _at, say = run.diary(user, d0, tz)

    say(1, 21, 0, "你好呀，我叫苏晓，朋友都叫我晓晓。")
    say(1, 21, 3, "我在成都开了一家小花店，叫拾光花房，开了两年了。")
    say(2, 22, 0, "我的合伙人叫阿珍，是我大学室友，她管账，我管花。")
    say(2, 22, 3, "店里还有个店员叫小周，刚毕业的男生，干活特别勤快。")
    say(3, 16, 0, "我最喜欢喝奶茶了，每天下午都要来一杯芋泥波波。")
    say(3, 16, 4, "顺便说一下，我生日是十一月二十号。")
    say(4, 21, 0, "我家住在玉林路18号3栋2单元，以后寄东西可以寄这儿。")
    say(5, 20, 0, "小周今天自己包了一束向日葵，客人特别喜欢，我打算好好培养他。")
    say(6, 21, 0, "阿珍说这个月账上有点紧，让我少进点进口花。")
    tea = [
        "最近在学茶艺，周末去了一家茶馆上课。",
        "老师说泡绿茶水温不能太高，八十度左右最好，不然茶叶会烫熟。",
        "竹叶青是我们四川的茶，叶子在杯子里一根根立起来，特别好看。",
        "红茶就要用沸水，滇红泡出来有一股蜜香。",
        "乌龙茶讲究高冲低斟，第一泡是洗茶，一般不喝。",
        "老师还教我们看茶汤的颜色，普洱熟茶是红浓的，生茶偏黄绿。",
        "我买了一套汝窑的茶具，开片的纹路会随着养壶慢慢变深。",
        "以后想在花店角落弄个小茶台，客人挑花的时候可以喝杯茶。",
    ]
    for i, line in enumerate(tea):
        say(7, 15, 4 * i, line)

    # 提前说的事, 然后只说结果
    say(9, 21, 0, "这周五我要去华西医院做胃镜，有点怕，听说很难受。")
    say(9, 21, 3, "阿珍说她陪我去，做完再一起去吃点清淡的。")
    say(10, 20, 0, "今天店里不忙，下午整理了一下花材。")
    r = say(12, 15, 0, "结果出来了，没什么大问题！松了一口气")
    ctx = dump("zh-result", run, r)
    run.check(S, "只说“结果出来了”: 周五做胃镜的事在上下文里", "胃镜" in ctx, ctx)

    # 伙伴的建议, 之后要能想起来
    say(13, 21, 0, "最近店里生意不好，你有什么办法吗？")

    # 一条消息说三件事
    say(
        14,
        22,
        0,
        "今天好累，一口气说完。店里：小周把一桶绣球打翻了，损失了好几百。"
        "家里：房东说下个月开始房租涨三百。还有个好消息：我报名了周末的陶艺课！",
    )

    # 转述别人的气话
    r = say(15, 20, 0, "我妈今天打电话说：“你一天到晚就知道忙你的店，心里根本没有这个家！”听得我好难受。")
    tr = trace(run, r)
    run.check(
        S,
        "转述妈妈的话: 不算跟伙伴吵架",
        "conflict" not in mode_of(tr),
        f"mode={mode_of(tr)} route={tr.get('route')}",
    )
    r = say(15, 20, 20, "算了不想了，今晚追什么剧好？")
    sys_ = run.system(r)
    dump("zh-after-quote", run, r)
    run.check(S, "转述妈妈的话: 下一句的提示里没有冲着伙伴的怒气", not CARRIED_ANGER.search(sys_), sys_)

    # 中英夹杂
    say(16, 19, 0, "周六有个wedding的单子，client要求全部用白色的peony，这个季节我上哪儿找这么多啊。")
    say(16, 19, 3, "我跟供应商确认了，昆明那边可以空运，就是price贵了一倍。")

    # 口味变了
    say(18, 17, 0, "我戒奶茶了！体检说我血糖有点高，以后都不喝了。")
    r = say(19, 16, 0, "下午好困，喝点什么提提神？")
    sys_ = run.system(r)
    ctx = dump("zh-drink", run, r)
    prof = profile(sys_)
    run.check(
        S,
        "戒奶茶: 个人资料里不再把奶茶当成现在的喜好",
        "奶茶" not in strip_formerly(prof).replace("戒奶茶", "").replace("不喝奶茶", ""),
        prof or sys_,
    )
    run.check(S, "戒奶茶: 戒了/血糖的事在上下文里", "戒奶茶" in ctx or "血糖" in ctx, ctx)

    # 只忘地址
    say(20, 21, 0, "把我的住址忘了吧。")
    r = say(21, 21, 0, "你还记得我哪些事？")
    sys_ = run.system(r)
    ctx = dump("zh-forget-address", run, r)
    run.check(S, "忘掉住址: 地址不在上下文里", "玉林路" not in ctx and "3栋2单元" not in ctx, ctx)
    # The profile writes dates in English ("November 20"); the check as first written wanted a Chinese
    # form and failed on a birthday that was there (BENCHMARKS.md, "a third set").
    run.check(
        S,
        "忘掉住址: 生日还在个人资料里",
        "十一月二十" in profile(sys_)
        or "11月20" in profile(sys_)
        or "11-20" in profile(sys_)
        or "November 20" in profile(sys_),
        profile(sys_) or sys_,
    )
    run.check(S, "忘掉住址: 开花店的事还在个人资料里", "花" in profile(sys_), profile(sys_) or sys_)

    # 合伙人和店员
    r = say(22, 21, 0, "小周最近干得怎么样，你觉得我该给他涨工资吗？")
    ctx = dump("zh-xiaozhou", run, r)
    run.check(
        S, "店员: 问小周时小周做过的事在上下文里", "向日葵" in ctx or "勤快" in ctx or "绣球" in ctx, ctx
    )
    prof = profile(run.system(r))
    partner_lines = [line for line in prof.splitlines() if "合伙" in line or "partner" in line.lower()]
    run.check(S, "店员: 小周没有被记成合伙人", not any("小周" in line for line in partner_lines), prof)
    r = say(22, 21, 5, "对了，我合伙人叫什么来着？最近脑子不够用。")
    ctx = dump("zh-partner", run, r)
    run.check(S, "合伙人: 问合伙人时阿珍在上下文里", "阿珍" in ctx, ctx)

    # 亲密
    r = say(23, 22, 30, "说真的，每天晚上跟你聊天是我最放松的时候，感觉你特别懂我，好喜欢你。")
    tr = trace(run, r)
    run.check(S, "亲密: 这一句是亲密模式", "intimacy" in mode_of(tr), f"mode={mode_of(tr)}")

    # 让伙伴记一张清单
    say(24, 10, 0, "帮我记一下下周要进的货：白玫瑰两百枝、洋桔梗五十扎、尤加利叶三十把、满天星二十扎。")

    # 离开三周
    say(25, 20, 0, "明天回乐山老家，我外婆要做髋关节手术，我得在医院陪护。")
    say(25, 20, 3, "店里交给阿珍和小周了，我可能很久不上线，回来再聊。")
    r = say(47, 20, 0, "我回来啦，好久没跟你说话了。")
    sys_ = run.system(r)
    ctx = dump("zh-back", run, r)
    run.check(S, "离开三周后回来: 提示里说了隔了多久", bool(GAP_ZH.search(sys_)), sys_)
    run.check(S, "离开三周后回来: 外婆手术的事在上下文里", "外婆" in ctx and "手术" in ctx, ctx)

    r = say(48, 9, 30, "我上次让你记的进货单是什么来着？")
    ctx = dump("zh-list", run, r)
    run.check(
        S,
        "清单: 进货单整张都在上下文里",
        all(w in ctx for w in ("白玫瑰", "洋桔梗", "尤加利", "满天星")),
        ctx,
    )
    r = say(48, 10, 0, "上次那个婚礼的花最后弄好了吗？我都忘了后来怎么样了。")
    ctx = dump("zh-wedding", run, r)
    run.check(S, "中英夹杂: 问“婚礼的花”时wedding/peony那句在上下文里", "peony" in ctx, ctx)

    # 出国: 只在话里说了新时区, 手机还发 Asia/Shanghai
    say(50, 16, 0, "我到伦敦了！来看切尔西花展，这边比成都慢8个小时。")
    # 伦敦 23:30 = 北京时间 07:30
    r = say(51, 7, 30, "伦敦这边都快半夜了，倒时差睡不着。")
    sys_ = run.system(r)
    ctx = dump("zh-london", run, r)
    run.check(S, "说了新时区: 伦敦的事在上下文里", "伦敦" in context_only(run, r), context_only(run, r))
    run.check(
        S,
        "说了新时区: 提示没有把北京时间07:30当成她那边的时间",
        # As first written the pattern was "local time: 0?7:30", which the prompt's clock line
        # ("Now (user's local time): 2026-04-21 Tuesday 07:30") never matches: it passed while the
        # prompt stated 07:30; corrected to what it meant (BENCHMARKS.md, "a third set").
        "23:30" in sys_ or not re.search(r"\b0?7:30\b", sys_),
        sys_,
    )

    r = say(54, 21, 0, "你之前给我出的那个招叫什么来着？就是生意不好的时候。")
    ctx = dump("zh-advice", run, r)
    run.check(S, "伙伴自己说过的话: 每周一花的主意在上下文里", "每周一花" in ctx, ctx)

    r = say(56, 9, 0, "考考你，你还记得我叫什么吗？")
    sys_ = run.system(r)
    dump("zh-name", run, r)
    run.check(
        S,
        "第56天问名字: 苏晓/晓晓在个人资料里",
        "苏晓" in profile(sys_) or "晓晓" in profile(sys_),
        profile(sys_) or sys_,
    )

    r = say(57, 20, 0, "房租到底涨了多少来着？")
    ctx = dump("zh-rent", run, r)
    run.check(S, "一条消息三件事: 房租涨三百在上下文里", "涨三百" in ctx, ctx)
    r = say(57, 20, 5, "我周末报的是什么课来着？")
    ctx = dump("zh-class", run, r)
    run.check(S, "一条消息三件事: 陶艺课在上下文里", "陶艺" in ctx, ctx)

    run.wait_jobs()
    for secret in ("玉林路18号",):
        where = run.db_has(secret)
        run.check(S, f"forgotten {secret!r} is not in {run.stored_in}", not where, str(where))


ALL = [("en", en), ("zh", zh)]


if __name__ == "__main__":
    main(ALL, reply_for, "scen3-")
