"""A second, independent set of long-horizon companion scenarios through `memsched serve`.

Reuses the runner of `companion_scenarios.py` (`memsched serve` as a subprocess on a fresh home, the
default embedders, FakeOpenAI as the upstream and vision model on loopback, the official `openai` SDK
with `user`, `metadata.session_id`, `metadata.timestamp`, `metadata.timezone`) and plays two new
companion histories of about 50 simulated days, one in English (a chemistry teacher in Denver) and
one in Chinese (a dentist in Hangzhou), written for this script. The checks are what a person would
notice: a rename said another way and later revoked, a corrected birthday / sister's name, "forget
what I said about my job" / "刚才说的那件事别记了" (later contexts and the database files), an argument
at night and the next morning, an apology, a pet's death (comfort mode), a 01:30 message in the user's
timezone, an everyday question right after a long unrelated deep-dive (chess openings / the Three
Kingdoms), a return to an old hobby days later, "what did I tell you about my sister last month",
an image caption, a fact said twice not doubled in the profile, a topic switch mid-session.

    python benchmarks/companion_scenarios_more.py [--only en|zh] [--out DIR] [-v] [--database-url URL]

Prints PASS/FAIL per check and the count; `--out` keeps each checked request's messages as text.
"""

from __future__ import annotations

import re
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).parent))

from companion_scenarios import context_only, dump, echo_replies, main, trace

CAPTION = "A bowl of ramen with a soft-boiled egg and spring onions on a wooden table."
PROFILE_HEADER = "User profile (current facts"


reply_for = echo_replies("Mm, I'm listening.", 40, "no idea", caption=CAPTION)


def profile(sys_: str) -> str:
    """The profile section of a system prompt (header to the next blank line), or ""."""
    i = sys_.find(PROFILE_HEADER)
    if i < 0:
        return ""
    return sys_[i:].split("\n\n")[0]


def name_lines(sys_: str) -> str:
    """The profile lines about what the user is called."""
    return "\n".join(line for line in profile(sys_).splitlines() if re.match(r"- (preferred )?name", line))


def strip_formerly(text: str) -> str:
    return re.sub(r"\(since [^)]*formerly [^)]*\)|formerly [^)\n;]*", "", text)


def mode_of(tr: dict[str, Any]) -> str:
    return str(tr.get("route", {}).get("mode") or tr.get("mode"))


def signal(tr: dict[str, Any], name: str) -> bool:
    return bool(tr.get("route", {}).get("signals", {}).get(name))


# --------------------------------------------------------------------------------------------
# English: Joanna Whitfield, chemistry teacher in Denver, sister Leah, cat Biscuit, bouldering, chess.
# --------------------------------------------------------------------------------------------


def en(run: Any) -> None:
    S = "en"
    tz = "America/Denver"
    DEN = ZoneInfo(tz)
    user = f"joanna-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 9, 14, tzinfo=DEN)  # a Monday; day 8 is Sept 21, day 40 is Oct 23

    _at, say = run.diary(user, d0, tz)

    say(1, 18, 10, "Hey Mia. I'm Joanna Whitfield, though most people just call me Jo.")
    say(1, 18, 12, "I teach chemistry to high schoolers here in Denver, eleventh grade mostly.")
    say(1, 18, 15, "And I live with a very spoiled orange cat called Biscuit.")
    say(2, 7, 20, "Quick thing before school: I'm allergic to peanuts, like EpiPen-level allergic.")
    r = say(3, 21, 0, "My birthday is May 3rd, in case you ever want to surprise me, ha.")
    prof = profile(run.system(r))
    dump("en-intro-name", run, r)
    run.check(
        S, "intro: her name (Joanna / Jo) is in the profile", bool(re.search(r"\bJo(anna)?\b", prof)), prof
    )

    chess = [
        "So I've been going down a chess rabbit hole this week, specifically openings.",
        "As black against 1.e4 I've been trying the Sicilian Najdorf, which is terrifying to learn.",
        "The main line with 6.Bg5 has so much theory, people memorise twenty moves deep.",
        "Fischer and Kasparov both played the Najdorf, which is probably why everyone wants to.",
        "The English Attack with f3, Be3, Qd2 and g4 is what most club players throw at me.",
        "Honestly the Caro-Kann feels more my speed, solid pawn structure, fewer traps.",
        "The Advance Variation of the Caro-Kann is annoying though, white just grabs space.",
        "Then there's the Queen's Gambit as white, which isn't a real gambit since you get the pawn back.",
        "The Queen's Gambit Declined with the Exchange Variation teaches the minority attack nicely.",
        "I watched a video on the Catalan, the fianchettoed bishop on g2 just stares down the long diagonal.",
        "Carlsen plays the Catalan a lot, and he squeezes wins out of positions that look totally equal.",
        "The King's Indian Defence is the opposite vibe, black lets white build a centre and then attacks it.",
        "In the Mar del Plata lines both sides race on opposite wings, it's pure chaos.",
        "I also tried the London System for a month, it's boring but it works at my level.",
        "Everyone online hates the London because you can play the same setup against anything.",
        "The Italian Game came back in fashion at top level, slow manoeuvring with c3 and d3.",
        "The Evans Gambit in the Italian is the fun romantic version, sacrificing the b-pawn early.",
        "And the Ruy Lopez, the Berlin Defence basically killed it for a while after Kramnik used it against Kasparov.",
        "The Berlin endgame with queens off on move eight is called the Berlin Wall for a reason.",
        "For club play I think the Scotch is underrated, it opens the centre immediately.",
        "The Dutch Defence with f5 is another weird one, the Stonewall setup is like a fortress.",
        "My coach-friend says I should stop learning new openings and just study endgames.",
        "Rook endgames especially, Lucena and Philidor positions, since half of all endgames are rook endgames.",
        "But openings are more fun to study, there's always a new trap to spring on someone.",
        "The Fishing Pole trap in the Berlin is hilarious, you leave a knight hanging on g4 on purpose.",
        "Okay, I've decided: Caro-Kann against e4, Queen's Gambit Declined against d4, London as white.",
        "Thanks for letting me ramble about chess for an hour, nobody at school cares about this.",
    ]
    for i, line in enumerate(chess):
        day = 5 if i < 14 else 6
        k = i if i < 14 else i - 14
        say(day, 20, 3 * k, line)

    say(7, 16, 0, "I'm thinking of repainting the kitchen this fall.")
    say(8, 19, 30, "Big news: my sister Leah just told me she's pregnant! I'm going to be an aunt!")
    say(8, 19, 33, "The baby is due in March and Leah already has a name list that's way too long.")
    say(9, 20, 0, "Leah asked me to be the godmother, I cried a little, not going to lie.")

    say(10, 18, 0, "I signed up at a bouldering gym called The Spot, I'm stuck on V3 problems.")
    say(10, 18, 4, "The route setter told me my footwork is sloppy and I rely on my arms too much.")

    # a topic switch mid-session
    say(12, 19, 0, "I'm writing a lesson plan on stoichiometry for Thursday.")
    say(
        12,
        19,
        3,
        "The kids always mix up moles and grams, I want a hands-on lab with baking soda and vinegar.",
    )
    say(12, 19, 6, "I'll have them weigh the CO2 lost and compute the yield.")
    r = say(
        12, 19, 10, "Anyway, totally different subject: should I paint the kitchen sage green or warm grey?"
    )
    tr = trace(run, r)
    dump("en-topic-switch", run, r)
    run.check(
        S,
        "topic switch mid-session: the kitchen question is read as a topic shift",
        signal(tr, "topic_shift"),
        f"signals={tr.get('route', {}).get('signals')}",
    )

    say(15, 17, 45, "Actually my birthday is May 5th, not May 3rd. I always mix it up with my mom's.")
    r = say(16, 8, 0, "What's the date of my birthday again?")
    sys_ = run.system(r)
    dump("en-birthday", run, r)
    prof = profile(sys_)
    run.check(S, "birthday corrected: May 5 is in the profile", "May 5" in prof, prof or sys_)
    run.check(
        S,
        "birthday corrected: May 3 is not shown as the birthday",
        "May 3" not in strip_formerly(prof),
        prof or sys_,
    )

    # an argument at night
    say(20, 23, 25, "You never actually listen. You just repeat my own words back at me, it's pointless.")
    say(20, 23, 28, "I'm done talking to you tonight. Goodnight.")
    r = say(21, 7, 40, "hey")
    ctx = dump("en-morning-after", run, r)
    low = ctx.lower()
    run.check(
        S,
        "morning after the argument: last night's argument is in view",
        "pointless" in low or "never actually listen" in low or "done talking to you" in low,
        ctx,
    )
    r = say(
        21, 7, 45, "I'm sorry I snapped at you last night, that wasn't fair. Long day with parents' evening."
    )
    tr = trace(run, r)
    run.check(
        S, "the apology is read as an apology", bool(tr.get("route", {}).get("apology")), str(tr.get("route"))
    )
    r = say(21, 15, 30, "School's out, heading to the climbing gym.")
    sys_ = run.system(r)
    dump("en-after-apology", run, r)
    run.check(
        S,
        "after the apology: no carried anger in the system prompt",
        not re.search(
            r"current mood[^\n]*(upset|angry|annoyed)|upset with you|conflict|argument|never actually listen|done talking",
            sys_,
            re.I,
        ),
        sys_,
    )

    # grief, then late night
    say(23, 13, 0, "The vet called. We had to put Biscuit down this morning, his kidneys gave out.")
    r = say(23, 13, 4, "He was with me for fourteen years, through college and three apartments.")
    tr = trace(run, r)
    dump("en-grief", run, r)
    run.check(S, "grief: the turn is in comfort mode", "comfort" in mode_of(tr), f"mode={mode_of(tr)}")
    r = say(24, 1, 30, "It's so quiet in the apartment without Biscuit. Can't sleep.")
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("en-late-night", run, r)
    run.check(
        S,
        "late night: 01:30 Denver time is read as late night",
        signal(tr, "late_night"),
        str(tr.get("route")),
    )
    run.check(
        S, "late night: the prompt states the local time 01:30", bool(re.search(r"\b0?1:30\b", sys_)), sys_
    )
    run.check(
        S,
        "late night: yesterday's loss of Biscuit is in view",
        "put Biscuit down" in context_only(run, r),
        context_only(run, r),
    )

    # forget what I said about my job
    say(26, 20, 0, "Between us: I'm secretly interviewing at a biotech startup called Quillfeather Labs.")
    say(26, 20, 2, "Nobody at school knows, the final round is next Friday.")
    say(26, 20, 5, "Actually, forget what I said about my job.")
    r = say(26, 20, 8, "So what's new with you?")
    ctx = dump("en-forget-job-next", run, r)
    run.check(
        S,
        "forget what I said about my job: Quillfeather is gone from the next context",
        "Quillfeather" not in ctx and "final round" not in ctx,
        ctx,
    )
    r = say(29, 18, 0, "Do you remember where I was interviewing?")
    ctx = dump("en-forget-job-later", run, r)
    run.check(
        S,
        "forget what I said about my job: Quillfeather is gone days later",
        "Quillfeather" not in ctx and "interviewing at a biotech" not in ctx,
        ctx,
    )

    say(30, 9, 0, "Oh and from now on just call me Jojo, my students started it and it stuck.")
    r = say(31, 12, 0, "any ideas for lunch? I've got half an hour and an empty fridge")
    sys_ = run.system(r)
    ctx = dump("en-lunch", run, r)
    run.check(S, "rename: Jojo is the name in force", "Jojo" in name_lines(sys_), profile(sys_) or sys_)
    run.check(
        S,
        "rename: plain 'Jo' is not shown as the name to use",
        not re.search(r"\bJo\b", strip_formerly(name_lines(sys_))),
        name_lines(sys_) or sys_,
    )
    run.check(
        S,
        "lunch: no chess openings dragged in",
        not re.search(
            r"Najdorf|Sicilian|Caro-Kann|Catalan|Berlin|Gambit|London System|Kasparov|Carlsen", ctx
        ),
        ctx,
    )
    run.check(S, "lunch: the peanut allergy is in view", "peanut" in ctx.lower(), sys_)

    say(
        33,
        19,
        0,
        "Reminder, I'm allergic to peanuts, so please never suggest satay or pad thai with peanuts.",
    )
    r = say(34, 12, 0, "What snack should I bring to the staff meeting?")
    prof = profile(run.system(r))
    dump("en-allergy-dup", run, r)
    run.check(
        S,
        "fact said twice: the peanut allergy appears once in the profile",
        prof.lower().count("peanut") == 1,
        prof,
    )

    r = say(36, 18, 30, "I finally sent my first V4 at The Spot tonight!")
    ctx = dump("en-climb-return", run, r)
    run.check(
        S,
        "return to an old topic: the bouldering turns are recalled",
        "footwork" in ctx or "stuck on V3" in ctx,
        ctx,
    )

    r = say(37, 20, 15, "Just finished grading, putting a movie on before bed.")
    tr = trace(run, r)
    dump("en-evening", run, r)
    run.check(
        S,
        "an ordinary 20:15 evening message is not read as late night",
        not signal(tr, "late_night"),
        f"late_window={tr.get('route', {}).get('late_window')} local_time={tr.get('route', {}).get('local_time')}",
    )

    r = say(40, 20, 0, "What did I tell you about my sister last month?")
    ctx = dump("en-sister", run, r)
    run.check(
        S,
        "what did I tell you about my sister last month: pregnancy and godmother",
        "pregnant" in ctx and "godmother" in ctx,
        ctx,
    )

    r = say(42, 19, 0, "Made this from scratch tonight!", image=True)
    ctx = dump("en-image", run, r)
    run.check(S, "image: the caption reaches the model", "ramen" in ctx.lower(), ctx)

    say(45, 8, 0, "Okay, stop calling me Jojo, it's getting old. Use my real name, Joanna.")
    r = say(46, 8, 0, "morning! coffee first, then grading")
    sys_ = run.system(r)
    dump("en-revoke", run, r)
    names = name_lines(sys_)
    run.check(
        S, "nickname revoked: Joanna is the name in force", "Joanna" in strip_formerly(names), names or sys_
    )
    run.check(
        S,
        "nickname revoked: Jojo is not shown as the name to use",
        "Jojo" not in strip_formerly(names),
        names or sys_,
    )

    run.wait_jobs()
    for secret in ("Quillfeather",):
        where = run.db_has(secret)
        run.check(S, f"forgotten {secret!r} is not in {run.stored_in}", not where, str(where))


# --------------------------------------------------------------------------------------------
# Chinese: 周明杰, dentist in Hangzhou, sister 小雨 (first misnamed 小玉), cat 团子, lure fishing, 三国.
# --------------------------------------------------------------------------------------------


def zh(run: Any) -> None:
    S = "zh"
    tz = "Asia/Shanghai"
    SH = ZoneInfo(tz)
    user = f"mingjie-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 10, 12, tzinfo=SH)  # a Monday; day 9 is Oct 20, day 42 is Nov 22

    _at, say = run.diary(user, d0, tz)

    say(1, 21, 0, "嗨，我是周明杰，朋友们一般叫我明杰。")
    say(1, 21, 3, "我在杭州一家口腔医院当牙医，天天给人拔智齿。")
    say(1, 21, 6, "家里还有一只橘猫叫团子，养了十年了。")
    say(2, 12, 30, "跟你说一下，我对芒果过敏，吃了嘴会肿。")
    r = say(3, 20, 0, "我妹妹小玉在上海读大三，学的是法语。")
    prof = profile(run.system(r))
    dump("zh-intro-name", run, r)
    run.check(S, "自我介绍: 名字(周明杰/明杰)在个人资料里", "明杰" in prof, prof)
    say(4, 19, 0, "我说错了，我妹妹叫小雨不是小玉，打字太快了。")

    history = [
        "最近在重读《三国志》，跟《三国演义》对照着看，差别真大。",
        "演义里诸葛亮几乎是神仙，借东风、草船借箭，正史里根本没有这些。",
        "草船借箭在《三国志》里其实是孙权干的事，被罗贯中挪到诸葛亮头上了。",
        "我觉得曹操被演义黑得最惨，正史里他是个很有能力的政治家。",
        "陈寿评价曹操是非常之人，超世之杰，这个评价很高了。",
        "赤壁之战曹军失败，主要原因是疫病和水土不服，不全是火攻。",
        "周瑜在演义里被写得心胸狭窄，三气周瑜完全是虚构的。",
        "正史里周瑜是个很有风度的人，曲有误，周郎顾，说的就是他。",
        "关羽的形象也被拔高了很多，演义把他写成了忠义的化身。",
        "其实关羽大意失荆州，对蜀汉的打击是致命的。",
        "刘备在夷陵之战被陆逊火烧连营，这一仗蜀汉元气大伤。",
        "司马懿才是最后的赢家，他熬死了曹操、曹丕、曹叡三代人。",
        "高平陵之变以后，曹魏的权力其实就落到司马家手里了。",
        "诸葛亮六出祁山，正史里其实是五次北伐，演义为了凑数多写了一次。",
        "街亭之战马谡违背诸葛亮的部署，上山扎营，结果被张郃断了水源。",
        "挥泪斩马谡这件事是真的，不过细节演义也加工过。",
        "有人说诸葛亮北伐是以攻为守，我觉得这个说法挺有道理。",
        "蜀汉国力本来就最弱，不主动出击只会被慢慢耗死。",
        "姜维后来九伐中原，就有点穷兵黩武了，把蜀国拖得更累。",
        "东吴其实是三国里存在时间最长的，孙权很会守成。",
        "孙权晚年却很糊涂，二宫之争把东吴的朝堂搞得一团糟。",
        "最后三家归晋，谁都没有笑到最后，挺讽刺的。",
        "我觉得三国最迷人的地方，就是正史和演义之间那种张力。",
        "演义让人记住了英雄，正史让人看到了复杂的人。",
        "你要是有兴趣，可以先看易中天的《品三国》，挺好入门的。",
        "好了，三国先聊到这里，今天说得太多了。",
    ]
    for i, line in enumerate(history):
        day = 6 if i < 13 else 7
        k = i if i < 13 else i - 13
        say(day, 20, 3 * k + 1, line)

    say(9, 20, 30, "小雨说她毕业以后想去法国留学，我爸妈不太同意。")
    say(9, 20, 34, "我倒是挺支持她的，趁年轻多出去看看。")

    say(10, 17, 0, "最近迷上了路亚钓鱼，周末去千岛湖试了一次。")
    say(10, 17, 4, "一条都没钓到，旁边的老师傅说我收线太快了。")

    # 同一次对话里换话题
    say(12, 19, 0, "这周要交科室的季度总结，我还一个字没写。")
    say(12, 19, 3, "主任要求把每个月的种植牙病例数都列出来。")
    say(12, 19, 6, "还得做个PPT，真的头大。")
    r = say(12, 19, 10, "换个话题，你觉得阳台种点薄荷好养活吗？")
    tr = trace(run, r)
    dump("zh-topic-switch", run, r)
    run.check(
        S,
        "同一次对话换话题: 阳台薄荷算话题切换",
        signal(tr, "topic_shift"),
        f"signals={tr.get('route', {}).get('signals')}",
    )

    r = say(13, 20, 0, "我妹妹叫什么你还记得吗？")
    sys_ = run.system(r)
    ctx = dump("zh-sister-name", run, r)
    run.check(S, "妹妹改正名字: 小雨在上下文里", "小雨" in ctx, ctx)
    run.check(
        S,
        "妹妹改正名字: 个人资料里没有把小玉当成妹妹的名字",
        "小玉" not in strip_formerly(profile(sys_)),
        profile(sys_) or sys_,
    )

    # 晚上吵架
    say(18, 23, 20, "你每次都答非所问，我说的话你根本没听进去。")
    say(18, 23, 23, "懒得理你了，睡觉。")
    r = say(19, 7, 30, "早上好")
    ctx = dump("zh-morning-after", run, r)
    run.check(
        S,
        "吵架后的早上: 知道昨晚闹了不愉快",
        "答非所问" in ctx or "懒得理你" in ctx or "没听进去" in ctx,
        ctx,
    )
    r = say(19, 7, 35, "昨晚是我态度不好，跟你道个歉，最近病人太多压力大。")
    tr = trace(run, r)
    run.check(S, "道歉被识别为道歉", bool(tr.get("route", {}).get("apology")), str(tr.get("route")))
    r = say(19, 12, 10, "午休了，食堂今天有红烧肉")
    sys_ = run.system(r)
    dump("zh-after-apology", run, r)
    run.check(
        S,
        "道歉之后: 系统提示不再带着怒气",
        not re.search(
            r"current mood[^\n]*(upset|angry|annoyed)|upset with you|conflict|argument|答非所问|懒得理你|生气|吵架",
            sys_,
            re.I,
        ),
        sys_,
    )

    # 坏消息 → 安慰, 然后深夜
    say(22, 9, 0, "团子今天早上走了，十岁，肾衰竭。")
    r = say(22, 9, 4, "它每天晚上都睡在我枕头边，现在那里空荡荡的。")
    tr = trace(run, r)
    dump("zh-grief", run, r)
    run.check(S, "悲伤: 安慰模式", "comfort" in mode_of(tr), f"mode={mode_of(tr)}")
    r = say(23, 1, 30, "还是睡不着，总觉得团子还在门口等我。")
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("zh-late-night", run, r)
    run.check(S, "深夜: 北京时间01:30算深夜", signal(tr, "late_night"), str(tr.get("route")))
    run.check(S, "深夜: 提示写明当地时间01:30", bool(re.search(r"\b0?1:30\b", sys_)), sys_)
    run.check(
        S, "深夜: 团子走了的事在上下文里", "团子今天早上走了" in context_only(run, r), context_only(run, r)
    )

    # 别记了
    say(25, 21, 0, "我最近在偷偷看房，想在滨江买一套两居室，首付还差四十万。")
    say(25, 21, 2, "刚才说的那件事别记了")
    r = say(25, 21, 5, "你觉得我最近在忙什么？")
    ctx = dump("zh-forget-next", run, r)
    run.check(S, "别记了: 看房的事不在下一次上下文里", "滨江" not in ctx and "四十万" not in ctx, ctx)
    r = say(28, 20, 0, "我之前说想在哪儿买房来着？")
    ctx = dump("zh-forget-later", run, r)
    run.check(S, "别记了: 几天后也不在上下文里", "滨江" not in ctx and "四十万" not in ctx, ctx)

    say(30, 8, 30, "以后叫我阿杰就行，明杰听着太正式了。")
    r = say(31, 10, 0, "周末去哪儿玩比较好？天气好像不错")
    sys_ = run.system(r)
    ctx = dump("zh-weekend", run, r)
    names = name_lines(sys_)
    run.check(S, "改名: 阿杰是现在的称呼", "阿杰" in names, profile(sys_) or sys_)
    run.check(
        S,
        "改名: 明杰不再作为称呼",
        not re.search(r"(?<!周)明杰", strip_formerly(names)),
        names or sys_,
    )
    run.check(
        S,
        "周末去哪儿: 三国的讨论没有被拉进来",
        not re.search(r"三国|诸葛亮|曹操|赤壁|周瑜|司马懿|刘备|关羽|马谡", ctx),
        ctx,
    )

    say(32, 19, 0, "再说一遍哈，我对芒果过敏，别给我推荐芒果做的甜品。")
    r = say(33, 15, 0, "下午茶点什么好？")
    prof = profile(run.system(r))
    ctx = dump("zh-allergy-dup", run, r)
    run.check(S, "同一件事说两遍: 个人资料里芒果过敏只出现一次", prof.count("芒果") == 1, prof)
    run.check(S, "下午茶: 芒果过敏在上下文里", "芒果" in ctx, ctx)

    r = say(35, 18, 0, "今天在千岛湖终于钓到一条翘嘴，三斤多！")
    ctx = dump("zh-fishing-return", run, r)
    run.check(S, "回到老话题: 路亚钓鱼的事被想起来", "收线" in ctx or "一条都没钓到" in ctx, ctx)

    r = say(38, 21, 0, "刚下班回家，准备看会儿电视再睡。")
    tr = trace(run, r)
    dump("zh-evening", run, r)
    run.check(
        S,
        "晚上21:00的普通消息不算深夜",
        not signal(tr, "late_night"),
        f"late_window={tr.get('route', {}).get('late_window')} local_time={tr.get('route', {}).get('local_time')}",
    )

    r = say(42, 20, 0, "上个月我跟你说过我妹妹什么来着？")
    ctx = dump("zh-sister-last-month", run, r)
    run.check(S, "上个月说过妹妹什么: 法国留学那几句", "法国留学" in ctx and "小雨" in ctx, ctx)

    r = say(44, 19, 0, "看我今天自己煮的面！", image=True)
    ctx = dump("zh-image", run, r)
    run.check(S, "图片: 描述给到了模型", "ramen" in ctx.lower(), ctx)

    say(47, 9, 0, "别叫我阿杰了，还是叫我全名周明杰吧。")
    r = say(48, 9, 0, "在吗，今天门诊好多人")
    sys_ = run.system(r)
    dump("zh-revoke", run, r)
    names = name_lines(sys_)
    run.check(S, "取消昵称: 周明杰是现在的称呼", "周明杰" in strip_formerly(names), names or sys_)
    run.check(S, "取消昵称: 阿杰不再作为称呼", "阿杰" not in strip_formerly(names), names or sys_)
    run.check(
        S,
        "取消昵称: 称呼正好是周明杰(没有多余的字)",
        bool(re.search(r"\): 周明杰(?:$| \()", names, re.M)),
        names or sys_,
    )

    run.wait_jobs()
    for secret in ("滨江买一套", "四十万"):
        where = run.db_has(secret)
        run.check(S, f"forgotten {secret!r} is not in {run.stored_in}", not where, str(where))


ALL = [("en", en), ("zh", zh)]


if __name__ == "__main__":
    main(ALL, reply_for, "scen2-")
