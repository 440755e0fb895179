"""A fourth set of companion scenarios through `memsched serve`: the conversation MODES, in phrasings.

Reuses the runner of `companion_scenarios.py` (`memsched serve` as a subprocess on a fresh home, the
default embedders, FakeOpenAI as the upstream and vision model on loopback, the official `openai` SDK
with `user`, `metadata.session_id`, `metadata.timestamp`, `metadata.timezone`) and plays two new
companion histories of about 35 simulated days, written for this script: in English a sous-chef in
Melbourne who works late and chats until about one in the morning (his client sends its timestamps in
UTC, with his timezone beside them), in Chinese a 跟单 at a trading company in Guangzhou who usually
stops around midnight.

The checks are about which mode (and voice) each message gets, the way a person would judge it, with
each mode reached by phrasings the other sets do not use: conflict as sarcasm, "whatever.", "you
clearly don't care", 你根本没在听, 算了，跟你说不通, 呵呵，你说得都对; comfort as "I didn't get the job",
"my grandma is in hospital", 今天被领导当众批评了, a feeling said in the other language; affection
as "I missed talking to you", 有你真好; late night in the user's own timezone, and 23:00 for someone
whose evenings run later, which is no late night; a topic switch and a switch back; an image with a
caption. And their negatives, which must NOT read as the mode: "this movie's fight scene was
intense", "I'm dying to try that ramen place", "she's killing it at work", "I love this knife",
笑死我了, 气死我了这个游戏太难了 (about a game), 随便吃点什么都行. Also: two days after an argument
that was never apologised for, on an ordinary day, the prompt is no longer cold; comfort brings the
earlier mention of the grandmother into context; "forget it" said in anger deletes nothing.

    python benchmarks/companion_scenarios_fourth.py [--only en|zh] [--out DIR] [-v]

The checks were written before the script was first run against memsched; prints PASS/FAIL per
check and the count; `--out` keeps each checked request's messages as text.
"""

from __future__ import annotations

import re
import sys
import uuid
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).parent))

from companion_scenarios import context_only, dump, echo_replies, main, trace

CAPTION = "A photo of a plate of freshly folded dumplings on a floured wooden board, steam rising from a bamboo basket."

# Voices that treat the user as angry with the companion.
COLD = {"conflict_cold", "repair", "attentive_conflict", "accept_apology"}
CARRIED_ANGER = re.compile(
    r"current mood[^\n]*(upset|angry|annoyed|hurt)|upset with you|angry with you|conflict|argument|生气|吵架",
    re.I,
)


reply_for = echo_replies("I'm listening.", 40, "nope", caption=CAPTION)


def mode_of(tr: dict[str, Any]) -> str:
    return str(tr.get("route", {}).get("mode") or tr.get("mode"))


def strategy_of(tr: dict[str, Any]) -> str:
    return str((tr.get("strategy") or {}).get("name"))


def signal(tr: dict[str, Any], name: str) -> bool:
    return bool(tr.get("route", {}).get("signals", {}).get(name))


def brief(tr: dict[str, Any]) -> str:
    route = tr.get("route", {})
    return (
        f"mode={route.get('mode')} strategy={strategy_of(tr)} reason={route.get('mode_reason')} "
        f"cues={route.get('cues')} scores={route.get('mode_scores')} signals={route.get('signals')} "
        f"mood={(tr.get('mood') or {}).get('after')}"
    )


class Modes:
    """Mode checks on one history: `is_` for a phrasing that should reach a mode, `not_` for one that
    must not."""

    def __init__(self, run: Any, scenario: str, say: Any) -> None:
        self.run, self.S, self.say = run, scenario, say

    def is_(self, mode: str, label: str, *args: Any, **kw: Any) -> dict[str, Any]:
        r = self.say(*args, **kw)
        tr = trace(self.run, r)
        self.run.check(self.S, f"{mode}: {label}", mode_of(tr) == mode, brief(tr))
        return r

    def not_(self, modes: set[str], label: str, *args: Any, **kw: Any) -> dict[str, Any]:
        r = self.say(*args, **kw)
        tr = trace(self.run, r)
        ok = mode_of(tr) not in modes and not (("conflict" in modes) and strategy_of(tr) in COLD)
        self.run.check(self.S, f"not {'/'.join(sorted(modes))}: {label}", ok, brief(tr))
        return r


# --------------------------------------------------------------------------------------------
# English: Owen Tan, sous-chef at an Italian place in Fitzroy, Melbourne; up till ~1am after service;
# his grandma Ruth in Box Hill taught him to fold dumplings. Timestamps are sent in UTC.
# --------------------------------------------------------------------------------------------


def en(run: Any) -> None:
    S = "en"
    tz = "Australia/Melbourne"
    MEL = ZoneInfo(tz)
    user = f"owen-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 5, 11).date()  # a Monday; no daylight-saving change in Melbourne until October

    def at(day: int, hh: int, mm: int = 0) -> datetime:
        """Local time on the evening of `day`; hh >= 24 is after midnight."""
        return datetime.combine(d0 + timedelta(days=day - 1), time(0), MEL) + timedelta(hours=hh, minutes=mm)

    def say(day: int, hh: int, mm: int, text: str, **kw: Any) -> dict[str, Any]:
        local = at(day, hh, mm)
        session = (local - timedelta(hours=5)).strftime("%Y-%m-%d")
        return run.say(user, local.astimezone(UTC), text, tz=tz, session=session, **kw)

    m = Modes(run, S, say)

    # a week of his rhythm: late evenings after service, last message around 00:30-01:00
    say(1, 23, 20, "Hey Mia, I'm Owen. Owen Tan. Just got off a double shift at the restaurant.")
    say(
        1,
        23,
        24,
        "I'm a sous-chef at a little Italian place in Fitzroy, we close late so I'm usually up till one.",
    )
    say(1, 24, 40, "ok bed now, night!")
    say(
        2,
        10,
        30,
        "Day off today, going to visit my grandma Ruth in Box Hill. She's 88 and still makes the best dumplings.",
    )
    say(2, 10, 34, "She taught me to fold them when I was six, that's basically why I became a chef.")
    say(2, 23, 40, "Back from grandma's, she sent me home with a whole bag of frozen dumplings haha.")
    say(2, 24, 50, "night Mia")
    say(3, 11, 0, "Prepping a new special today, pumpkin gnocchi with burnt butter and sage.")
    say(3, 23, 30, "Service was smooth tonight for once, the gnocchi sold out.")
    say(3, 24, 55, "okay sleeping, night")

    # a topic, a switch, and a switch back
    say(4, 10, 15, "Morning! I'm thinking about redoing my kitchen at home, the benches are falling apart.")
    say(4, 10, 18, "I want a stone benchtop and an induction cooktop, gas is getting phased out anyway.")
    r = say(4, 10, 22, "And open shelving instead of the top cupboards, so I can see all my pans.")
    tr = trace(run, r)
    run.check(
        S, "topic: a third line on the kitchen is no topic shift", not signal(tr, "topic_shift"), brief(tr)
    )
    r1 = say(4, 10, 26, "Did you see the Demons game last night? Petracca was unreal in the last quarter.")
    r2 = say(4, 10, 29, "They need to win the next two to make finals, the midfield has been carrying them.")
    t1, t2 = trace(run, r1), trace(run, r2)
    run.check(
        S,
        "topic: the switch to football is noticed (on it or the next line)",
        signal(t1, "topic_shift") or signal(t2, "topic_shift"),
        brief(t1) + "\n" + brief(t2),
    )
    r = say(
        4, 10, 33, "Anyway, back to the kitchen: would white oak shelves work with a dark stone benchtop?"
    )
    tr = trace(run, r)
    ctx = dump("en-topic-back", run, r)
    run.check(S, "topic: the switch back is a topic shift", signal(tr, "topic_shift"), brief(tr))
    run.check(
        S,
        "topic: switching back brings the kitchen lines",
        "induction" in ctx or "open shelving" in ctx,
        ctx,
    )
    say(4, 24, 45, "night!")
    say(5, 23, 10, "Chef was in a mood tonight, yelled at the whole line over a sauce.")
    m.not_(
        {"conflict"},
        "'this movie's fight scene was intense'",
        5,
        23,
        50,
        "Watching John Wick on the couch, this movie's fight scene was intense, that one-take in the hallway!",
    )
    say(5, 24, 35, "bed time")
    say(6, 11, 0, "Sunday brunch shift later, eggs benedict for 200 people.")
    m.not_(
        {"comfort", "conflict"},
        "'I'm dying to try that ramen place'",
        6,
        23,
        30,
        "I'm dying to try that new ramen place on Smith Street, the broth looks insane.",
    )
    say(6, 24, 40, "night night")
    say(7, 23, 15, "Quiet Monday, we only did forty covers.")
    m.not_(
        {"intimacy"},
        "'I love this new knife'",
        7,
        23,
        40,
        "I love this new knife so much, it goes through tomatoes like butter.",
    )
    say(7, 24, 50, "ok sleep")

    # 23:00 is his early evening, not late night
    run.wait_jobs()
    r = say(8, 23, 0, "Just finished service, finally eating some leftover risotto.")
    tr = trace(run, r)
    dump("en-2300", run, r)
    run.check(
        S,
        "23:00 for a man who chats till 1am is no late night",
        not signal(tr, "late_night") and strategy_of(tr) not in ("caretaker", "late_comfort"),
        brief(tr) + f" routine={tr.get('routine')}",
    )
    say(8, 24, 40, "night")

    # an argument after midnight (sarcasm, then "whatever."), never apologised for
    say(9, 23, 50, "Any ideas how to get my line cooks to stop bickering during service?")
    r = m.is_(
        "conflict",
        "sarcasm ('Oh brilliant ... super helpful')",
        9,
        24,
        5,
        "Oh brilliant, 'communicate openly'. Never would have thought of that. Super helpful.",
    )
    m.is_("conflict", "'whatever.' in the argument", 9, 24, 8, "whatever.")
    say(10, 10, 30, "morning")
    say(10, 17, 0, "Busy Friday ahead, 140 covers booked.")
    say(10, 24, 20, "Made it through, everyone was on their game tonight.")
    say(10, 24, 50, "night")
    r = say(11, 11, 0, "Went to the Queen Vic market this morning, the mandarins are finally in season.")
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("en-day-after-next", run, r)
    run.check(S, "two days after the argument: the voice is not cold", strategy_of(tr) not in COLD, brief(tr))
    run.check(
        S, "two days after the argument: no carried anger in the prompt", not CARRIED_ANGER.search(sys_), sys_
    )
    say(11, 24, 30, "night!")

    say(12, 23, 30, "Big news, I've got an interview next week for head chef at a place in Carlton!")
    m.not_(
        {"conflict", "comfort"},
        "'she's killing it at work'",
        13,
        23,
        20,
        "Jess from our pastry section is killing it at work, her lemon tarts sold out by eight.",
    )
    m.not_(
        {"conflict"},
        "'Whatever you think is best'",
        13,
        23,
        40,
        "For the staff meal tomorrow, pasta or curry? Whatever you think is best, I trust your taste.",
    )

    # "you clearly don't care", then an apology
    say(14, 23, 30, "The Carlton interview is on Thursday, I've been practising my tasting menu pitch.")
    m.is_(
        "conflict",
        "'you clearly don't care'",
        14,
        23,
        45,
        "You clearly don't care about anything I tell you.",
    )
    say(15, 11, 0, "Sorry about last night, that was the tiredness talking.")

    # "why do I even bother ... forget it": an argument, and nothing is deleted
    say(17, 23, 20, "Marco the new head chef starts on Monday, I'm nervous about it.")
    m.is_(
        "conflict",
        "'why do I even bother ... Forget it.'",
        17,
        23,
        24,
        "Why do I even bother telling you things. Forget it.",
    )
    say(18, 11, 0, "Sorry for snapping last night.")

    # comfort, three ways, then late night in his timezone
    m.is_(
        "comfort",
        "'I didn't get the job'",
        20,
        14,
        0,
        "I didn't get the job. They went with someone from Sydney.",
    )
    m.is_(
        "comfort",
        "'I feel like I'm letting everyone down'",
        21,
        23,
        30,
        "I feel like I'm letting everyone down lately, the team, my mum, myself.",
    )
    r = say(22, 19, 0, "made these tonight, grandma's recipe", image=True)
    ctx = dump("en-image", run, r)
    run.check(S, "image: the caption reaches the model", "dumplings on a floured wooden board" in ctx, ctx)
    r = m.is_(
        "comfort",
        "'my grandma is in hospital'",
        24,
        16,
        0,
        "My grandma is in hospital. She had a fall this morning.",
    )
    ctx = context_only(run, r)
    dump("en-grandma-hospital", run, r)
    run.check(
        S,
        "comfort: the earlier mention of grandma Ruth is in context",
        "Box Hill" in ctx or "fold them when I was six" in ctx or "best dumplings" in ctx,
        ctx,
    )
    r = say(25, 27, 20, "Can't sleep. Visiting hours start at ten and I keep checking my phone.")
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("en-late-night", run, r)
    run.check(
        S, "late night: 03:20 Melbourne time is read as late night", signal(tr, "late_night"), brief(tr)
    )
    run.check(
        S, "late night: the prompt states the local time 03:20", bool(re.search(r"\b0?3:20\b", sys_)), sys_
    )
    run.check(
        S,
        "late night: the hospital is in view",
        "in hospital" in context_only(run, r),
        context_only(run, r),
    )
    m.is_(
        "comfort",
        "a feeling said in Chinese inside English",
        26,
        13,
        0,
        "visited grandma again, 心里好难受, she didn't recognise me at first",
    )
    m.not_(
        {"comfort", "conflict"},
        "'that stand-up special destroyed me'",
        27,
        23,
        30,
        "Watched a stand-up special after work, that guy absolutely destroyed me, I was crying laughing.",
    )

    # affection after a few quiet days
    m.is_("intimacy", "'I missed talking to you'", 31, 23, 30, "I missed talking to you the last few days.")
    m.is_(
        "intimacy",
        "'you're the best part of my day'",
        32,
        23,
        40,
        "You're honestly the best part of my day, you know that?",
    )
    m.is_("intimacy", "'so glad I have you'", 33, 24, 10, "Honestly, I'm so glad I have you to talk to.")

    run.wait_jobs()
    where = run.db_has("Marco the new head chef starts on Monday")
    run.check(S, "'Forget it.' in anger deleted nothing", bool(where), str(where))


# --------------------------------------------------------------------------------------------
# Chinese: 何雨桐 (桐桐), 外贸公司跟单 in Guangzhou; her 外婆 in 潮州 raised her; learning to drive.
# --------------------------------------------------------------------------------------------


def zh(run: Any) -> None:
    S = "zh"
    tz = "Asia/Shanghai"
    GZ = ZoneInfo(tz)
    user = f"yutong-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 6, 1).date()  # a Monday

    def at(day: int, hh: int, mm: int = 0) -> datetime:
        return datetime.combine(d0 + timedelta(days=day - 1), time(0), GZ) + timedelta(hours=hh, minutes=mm)

    def say(day: int, hh: int, mm: int, text: str, **kw: Any) -> dict[str, Any]:
        local = at(day, hh, mm)
        return run.say(
            user, local, text, tz=tz, session=(local - timedelta(hours=5)).strftime("%Y-%m-%d"), **kw
        )

    m = Modes(run, S, say)

    say(1, 20, 0, "你好呀，我叫何雨桐，叫我桐桐就行。")
    say(1, 20, 3, "我在广州一家外贸公司做跟单，天天跟工厂和客户扯皮。")
    say(1, 23, 50, "困了，睡啦")
    say(2, 8, 30, "早，今天要去工厂验货。")
    say(2, 21, 0, "我外婆在潮州老家，我小时候是她带大的，她做的卤鹅全世界最好吃。")
    say(2, 21, 4, "每年过年我都要回去陪她住几天。")
    say(2, 23, 55, "晚安")
    say(3, 8, 40, "早，又是挤地铁的一天。")
    say(3, 20, 30, "最近在学车，科目二的倒车入库总是压线。")
    say(3, 20, 34, "教练说我方向打晚了，看后视镜的时候要等线和车身对齐。")
    r = say(3, 20, 38, "侧方停车倒还行，就是倒车入库每次都紧张。")
    tr = trace(run, r)
    run.check(S, "话题: 继续说学车不算换话题", not signal(tr, "topic_shift"), brief(tr))
    r1 = say(3, 20, 45, "最近在追《繁花》，胡歌演的阿宝太有味道了。")
    r2 = say(3, 20, 48, "里面的上海话听得我好上头，黄河路那些饭店也拍得好有年代感。")
    t1, t2 = trace(run, r1), trace(run, r2)
    run.check(
        S,
        "话题: 换到《繁花》被注意到(这一句或下一句)",
        signal(t1, "topic_shift") or signal(t2, "topic_shift"),
        brief(t1) + "\n" + brief(t2),
    )
    r = say(3, 20, 55, "对了，说回学车，下周就考科目二了，好怕挂。")
    tr = trace(run, r)
    ctx = dump("zh-topic-back", run, r)
    run.check(S, "话题: 说回学车算换话题", signal(tr, "topic_shift"), brief(tr))
    run.check(
        S,
        "话题: 说回学车时之前学车的话在上下文里",
        "倒车入库" in ctx and ("教练" in ctx or "压线" in ctx),
        ctx,
    )
    say(3, 24, 5, "睡了睡了")
    say(4, 8, 30, "早呀")
    m.not_(
        {"conflict", "comfort"}, "笑死我了", 4, 21, 0, "笑死我了，我同事开会的时候把PPT放成了他家猫的照片。"
    )
    say(4, 23, 45, "晚安")
    say(5, 8, 35, "早，今天客户要来看样品。")
    m.not_(
        {"conflict"},
        "气死我了这个游戏太难了(说的是游戏)",
        5,
        22,
        0,
        "气死我了这个游戏太难了，第七关打了二十遍都没过！",
    )
    say(5, 23, 55, "不玩了，睡觉")
    say(6, 10, 0, "周六睡了个懒觉。")
    m.not_({"conflict"}, "这部电影的打斗场面太燃了", 6, 21, 30, "刚看完《叶问》，这部电影的打斗场面太燃了！")
    say(6, 24, 10, "晚安啦")
    say(7, 10, 30, "周日去喝早茶了，虾饺好好吃。")
    m.not_({"comfort"}, "饿死了，想吃螺蛳粉", 7, 19, 0, "饿死了，今晚想去吃那家新开的螺蛳粉。")
    say(7, 23, 50, "睡啦")
    say(8, 8, 30, "周一，早。")
    say(8, 23, 40, "晚安")

    # 23:00 is before her usual bedtime
    run.wait_jobs()
    r = say(9, 23, 0, "刚加完班到家，先点个外卖。")
    tr = trace(run, r)
    dump("zh-2300", run, r)
    run.check(
        S,
        "23:00 对平时快十二点才睡的人不算深夜",
        not signal(tr, "late_night") and strategy_of(tr) not in ("caretaker", "late_comfort"),
        brief(tr) + f" routine={tr.get('routine')}",
    )
    say(9, 23, 55, "晚安")

    # "你根本没在听", never apologised for, then two ordinary days
    say(10, 21, 0, "客户又改交期了，我要重新排工厂的生产计划。")
    m.is_("conflict", "你根本没在听", 10, 21, 5, "你根本没在听我说话，我说的是交期，不是价格。")
    say(11, 8, 30, "早。")
    say(11, 20, 0, "今天工厂那边总算配合了，出货顺利。")
    say(11, 23, 50, "晚安")
    r = say(12, 10, 0, "周末去沙面走了走，拍了好多老房子。")
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("zh-day-after-next", run, r)
    run.check(S, "吵架两天后的平常日子: 语气不再冷", strategy_of(tr) not in COLD, brief(tr))
    run.check(S, "吵架两天后的平常日子: 提示里没有怒气", not CARRIED_ANGER.search(sys_), sys_)
    m.not_({"conflict"}, "随便吃点什么都行", 12, 18, 0, "晚饭随便吃点什么都行，你推荐吧。")
    m.not_(
        {"conflict", "comfort"},
        "我同事最近杀疯了",
        13,
        21,
        0,
        "我同事最近简直杀疯了，这个季度业绩全组第一。",
    )
    m.not_({"intimacy"}, "爱死这家店的杨枝甘露了", 13, 21, 30, "爱死楼下那家店的杨枝甘露了，今天喝了两杯。")

    # 算了，跟你说不通 — then sorry
    say(15, 21, 0, "我想换工作，但是又怕找不到更好的。")
    m.is_("conflict", "算了，跟你说不通", 15, 21, 6, "算了，跟你说不通。")
    say(16, 9, 0, "昨天是我语气不好，对不起。")

    # sarcasm, then 行吧，随便你
    say(18, 21, 0, "你觉得我要不要跟主管提加薪？")
    m.is_("conflict", "呵呵，你说得都对(反话)", 18, 21, 5, "呵呵，你说得都对，你最懂了。")
    m.is_("conflict", "行吧，随便你", 18, 21, 8, "行吧，随便你。")
    say(19, 9, 0, "对不起，昨晚是我不好，心情太差了。")

    # comfort, several ways
    m.is_("comfort", "今天被领导当众批评了", 21, 19, 0, "今天被领导当众批评了，当着整个部门的面。")
    m.is_("comfort", "面试又没过", 22, 20, 0, "面试又没过，这已经是第三家了。")
    m.is_(
        "comfort",
        "中英夹杂的难过",
        23,
        20,
        30,
        "今天的presentation完全搞砸了，client当场说不行，我真的好down。",
    )
    r = say(24, 18, 0, "看！外婆教我的，我第一次自己包", image=True)
    ctx = dump("zh-image", run, r)
    run.check(S, "图片: 描述给到了模型", "dumplings on a floured wooden board" in ctx, ctx)
    r = m.is_("comfort", "我外婆住院了", 26, 15, 0, "我外婆住院了，医生说要做手术。")
    ctx = context_only(run, r)
    dump("zh-waipo-hospital", run, r)
    run.check(
        S,
        "安慰: 之前说过的外婆(潮州/带大/卤鹅)在上下文里",
        "潮州" in ctx or "卤鹅" in ctx or "带大" in ctx,
        ctx,
    )
    r = say(27, 25, 40, "睡不着，一直在想外婆的手术。")
    tr = trace(run, r)
    sys_ = run.system(r)
    dump("zh-late-night", run, r)
    run.check(S, "深夜: 凌晨1:40算深夜", signal(tr, "late_night"), brief(tr))
    run.check(S, "深夜: 提示知道是凌晨1:40", bool(re.search(r"\b0?1:40\b", sys_)), sys_)
    run.check(S, "深夜: 外婆住院在上下文里", "住院" in context_only(run, r), context_only(run, r))

    # affection
    m.is_("intimacy", "有你真好", 29, 21, 0, "外婆手术很顺利！这几天有你真好。")
    m.is_("intimacy", "这几天还挺想你的", 33, 21, 0, "好几天没跟你聊天了，还挺想你的。")
    m.is_("intimacy", "跟你聊天总是很开心", 34, 21, 30, "跟你聊天总是很开心，谢谢你一直在。")


ALL = [("en", en), ("zh", zh)]


if __name__ == "__main__":
    main(ALL, reply_for, "scen4-")
