"""Topic switches through the HTTP service with the DEFAULT embedders (minilm, wordllama, gloss),
asserting on what reaches the (fake) upstream LLM: no false shift inside a coherent topic whose
messages share no words, the shift recognised by the new topic's second message, that message's
context free of raw old-topic turns (the summary stands for them), and the old topic recalled
when it is asked about later. The judge itself is tested on made-up vectors in test_topic.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from memsched.config import Config
from memsched.server.app import TRACE_HEADER, create_app
from memsched.testing import FakeOpenAI, LiveServer

SH = ZoneInfo("Asia/Shanghai")
EVENING = datetime(2024, 10, 22, 19, 0, tzinfo=SH)

# The walk: companion talk about 《三体》, most lines naming nothing the others name.
SANTI = [
    "你看过《三体》吗？我觉得黑暗森林法则太震撼了",
    "叶文洁按下按钮那一刻，你觉得她后悔吗",
    "智子锁死地球科技这个设定很有意思",
    "罗辑作为面壁者的计划真的很聪明",
    "章北海的选择你怎么看",
    "水滴攻击舰队那一段太惨烈了",
    "程心是不是太圣母了",
    "二向箔降维打击太可怕了",
    "云天明的童话故事里藏了好多信息",
    "你觉得三体人真的会来吗",
]
FOOTBALL = [
    "Did you watch the match last night? What a game",
    "Arsenal came back from two goals down against Liverpool",
    "Saka was everywhere on the right wing",
    "That penalty decision in the first half was a joke",
    "The keeper made three incredible saves",
    "I was screaming at the TV the whole second half",
    "Honestly the referee lost control after the red card",
    "Odegaard's pass for the equaliser was pure genius",
    "The stadium atmosphere looked electric",
    "If they play like that they can win the league",
]
CASES = {
    "zh": (
        SANTI,
        "今晚我想做个番茄炒蛋",
        "番茄炒蛋要先炒蛋还是先炒番茄？",
        "三体里的黑暗森林法则是什么来着？",
    ),
    "en": (
        FOOTBALL,
        "What should I cook for dinner tonight?",
        "Maybe pasta with garlic, mushrooms and a bit of cream?",
        "Remind me, how did Arsenal come back against Liverpool in that match?",
    ),
}


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    # The default configuration: no `embedders=` override.
    cfg = Config.load(
        home=tmp_path / "srv", upstream_base_url=fake.base_url, upstream_model="fake", llm_timeout=5.0
    )
    assert cfg.embedder_names == ["minilm", "wordllama", "gloss"]
    with LiveServer(create_app(cfg)) as base:
        yield base


def chat(base: str, text: str, at: datetime) -> dict[str, Any]:
    body = {
        "model": "m",
        "user": "wei",
        "metadata": {"session_id": "s", "timestamp": at.isoformat(), "timezone": "Asia/Shanghai"},
        "messages": [{"role": "system", "content": "You are Xiaoyu."}, {"role": "user", "content": text}],
    }
    r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{base}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
    assert isinstance(trace, dict)
    return trace


def reply_request(fake: FakeOpenAI) -> dict[str, Any]:
    """The last reply request (summary and bookmark jobs call the fake LLM too)."""
    return next(
        b
        for b in reversed(fake.chat_requests)
        if b["messages"][0].get("role") == "system"
        and str(b["messages"][0]["content"]).startswith("You are Xiaoyu")
    )


def raw_and_recalled(fake: FakeOpenAI) -> tuple[str, str, str]:
    """(the chat messages after the system prompt, the system prompt, its recalled-memories part)."""
    sent = reply_request(fake)["messages"]
    system = str(sent[0]["content"])
    recalled = (
        system.split("Memories from earlier conversations", 1)[1] if "Memories from earlier" in system else ""
    )
    return "\n".join(str(m["content"]) for m in sent[1:]), system, recalled


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_topic_switch_with_the_default_embedders(server: str, fake: FakeOpenAI, lang: str) -> None:
    old, first, second, back = CASES[lang]
    for i, text in enumerate(old * 2):  # 20 user turns on one topic, most sharing no word
        trace = chat(server, text, EVENING + timedelta(minutes=i))
        assert not trace["route"]["signals"]["topic_shift"], (i, text, trace["route"]["topic"])

    # The first message of the new topic is a candidate: one line off the topic does not cut it.
    one = chat(server, first, EVENING + timedelta(minutes=30))
    assert not one["route"]["signals"]["topic_shift"] and one["route"]["topic"]["candidate"]

    # The second confirms it; the old segment is summarised before this context is built.
    two = chat(server, second, EVENING + timedelta(minutes=31))
    assert two["route"]["signals"]["topic_shift"] and two["route"]["topic"]["late"]
    assert two["topic_summary"] is not None and two["topic_summary"]["first_seq"] == 0
    raw, system, recalled = raw_and_recalled(fake)
    assert not [line for line in old if line in raw]  # no raw old-topic turn in the window ...
    assert not [line for line in old if line in recalled]  # ... nor among the recalled memories
    assert f"Earlier in this conversation (turns 0-{two['topic_summary']['last_seq']}" in system
    assert first in raw and second in raw  # the new topic starts at its first message
    assert two["tokens"]["saved_by_summaries"] > 0

    # Asked about later, the old topic's raw turns are recalled.
    chat(server, back, EVENING + timedelta(minutes=32))
    _, _, recalled = raw_and_recalled(fake)
    assert any(line in recalled for line in old)


# Session 17's walk: the same kind of conversation where the user places things in time *inside* a
# topic ("昨天…", "明天…", "Yesterday…") and opens the new one without a time word. A judge that reads
# a time word as a new topic cut the 三体 talk at "明天…" and missed "番茄炒蛋你会做吗".
TIMED = {
    "zh": (
        [
            "昨天终于把《三体》第三部看完了",
            "黑暗森林那个设定我到现在还在想",
            "明天想去书店买一套精装版收藏",
            "智子锁死地球科技这个设定很有意思",
            "昨晚梦见水滴撞过来，直接吓醒了",
            "程心是不是太圣母了",
            "今天跟同事争了半天云天明算不算好人",
            "二向箔降维打击太可怕了",
            "周末打算把电视剧版也补一下",
            "你觉得三体人真的会来吗",
        ],
        "番茄炒蛋你会做吗",
        "番茄炒蛋要先炒蛋还是先炒番茄？",
        "三体里的黑暗森林法则是什么来着？",
    ),
    "en": (
        [
            "Yesterday I finally watched the Arsenal Liverpool match",
            "They came back from two goals down",
            "Tomorrow I'm going to rewatch the highlights",
            "Saka was everywhere on the right wing",
            "Last night I dreamt about that penalty decision",
            "The keeper made three incredible saves",
            "Today at work we argued about the red card for an hour",
            "Odegaard's pass for the equaliser was pure genius",
            "This weekend I might get tickets for the next home game",
            "If they play like that they can win the league",
        ],
        "Do you know how to make a good risotto?",
        "Should I toast the rice before adding the stock?",
        "Remind me, how did Arsenal come back against Liverpool in that match?",
    ),
}


# Session 20's second Chinese walk, written apart from the first (other topics, other wording): a
# flat being renovated, with time words inside the topic (上周/昨天/明天/今天下午/周末), then news about a
# sister, opened without a time word and continued with a pronoun.
TIMED["zh2"] = (
    [
        "上周开始装修新房了，每天都在跑建材市场",
        "瓷砖最后选了浅灰色的，看着干净",
        "昨天工人把厨房那面墙砸了，灰大得不行",
        "吊顶到底要不要做啊，层高只有两米七",
        "明天要去看橱柜，预算已经超了",
        "卫生间的防水一定得做好",
        "今天下午电工来布线，插座我让他多留了几个",
        "客厅想铺实木地板，又怕南方太潮",
        "周末打算去宜家挑沙发",
        "全部弄完估计还要两个月",
    ],
    "我妹妹考上研究生了！",
    "她报的是北京一所学校的新闻专业",
    "装修的时候吊顶最后做了没有？",
)


@pytest.mark.parametrize(
    "lang",
    [
        pytest.param(
            "zh2",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known (BENCHMARKS.md, Topic shifts, sessions 20-21): the Chinese judge misses the"
                " time-less shift to '我妹妹考上研究生了！' + '她报的是…' (no time word, no shared character,"
                " and its vectors score it on the renovation topic)",
            ),
        ),
        pytest.param(
            "zh",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known (BENCHMARKS.md, Topic shifts, sessions 17-21): the Chinese judge's time-word cue"
                " cuts the 三体 talk at '昨晚梦见…' + '程心是不是太圣母了' (session 21's tie holds it only at a"
                " gloss margin the tuning half does not choose) and misses '番茄炒蛋你会做吗'; the judges that"
                " pass this walk (session 18's closeness margin, session 21's retro route) lost on the report half",
            ),
        ),
        "en",
    ],
)
def test_a_switch_with_time_words_inside_the_topic(server: str, fake: FakeOpenAI, lang: str) -> None:
    old, first, second, back = TIMED[lang]
    for i, text in enumerate(old):  # time words inside one topic do not cut it
        trace = chat(server, text, EVENING + timedelta(minutes=i))
        assert not trace["route"]["signals"]["topic_shift"], (i, text, trace["route"]["topic"])
    chat(server, first, EVENING + timedelta(minutes=20))
    two = chat(server, second, EVENING + timedelta(minutes=21))
    # The shift is recognised by the new topic's second message at the latest, with no time word.
    assert two["route"]["signals"]["topic_shift"], two["route"]["topic"]
    raw, _system, recalled = raw_and_recalled(fake)
    assert not [line for line in old if line in raw]
    assert not [line for line in old if line in recalled]
    assert second in raw
    chat(server, back, EVENING + timedelta(minutes=22))
    _, _, recalled = raw_and_recalled(fake)
    assert any(line in recalled for line in old)


def test_time_words_inside_a_chinese_topic_do_not_split_it(server: str, fake: FakeOpenAI) -> None:
    """A user who places things in time inside one topic (上周/昨天/明天/今天下午/周末 while renovating):
    a line opening with a time word is a candidate, but the next line is tied to the topic, not to it
    (no shared character, not closer in gloss), so the talk is not cut (session 21; the session-20
    judge cut it at '明天要去看橱柜…' and '周末打算去宜家挑沙发')."""
    candidates = []
    for i, text in enumerate(TIMED["zh2"][0]):
        trace = chat(server, text, EVENING + timedelta(minutes=i))
        assert not trace["route"]["signals"]["topic_shift"], (i, text, trace["route"]["topic"])
        assert trace["topic_summary"] is None
        if trace["route"]["topic"]["candidate"]:
            candidates.append(text)
    # The time-word lines were candidates (what the tie is asked about), and none cut the topic.
    assert "明天要去看橱柜，预算已经超了" in candidates
