"""The conversation-mode decision on neutral topical chatter (issue 7, part 2).

A user's walk-through found the shipped classifier reading talk about a book, a game or oneself as
emotional: "章北海的选择你怎么看" as intimacy, "我叫什么？" as conflict, "罗辑作为面壁者的计划真的很聪明" as
comfort. The lines below were written for this test before the topical lines of
tests/data/mode_labelled.txt (session 16), are not in that file (checked here, with a fuzzy match
too), and their names (章北海, 罗辑, 叶文洁, 百年孤独, 欧冠, 塞尔达, 京都, 奥本海默, ...) were left out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rapidfuzz import fuzz, process

from memsched.classify import normalize_text

Modes = Callable[[Sequence[str]], list[str]]  # conftest's `shipped_modes`

# Neutral topical messages: books, films, games, sport, cooking, work, study, travel, questions about
# oneself. Casual, all of them: nothing in them is about the user's feelings or the relationship.
TOPICAL = [
    "章北海的选择你怎么看",
    "我叫什么？",
    "罗辑作为面壁者的计划真的很聪明",
    "《百年孤独》里的人名太容易搞混了",
    "昨晚的欧冠决赛你觉得谁踢得最好",
    "塞尔达王国之泪的神庙好难解",
    "红烧排骨要不要先焯水？",
    "明天要交的季度报表我还差两页",
    "考研数学的线性代数部分怎么复习比较好",
    "去京都的话住哪个区比较方便",
    "我在哪家公司上班来着？",
    "诺兰那部电影讲的是奥本海默吧",
    "叶文洁为什么要回复三体人的信号",
    "我是哪里人来着？",
    "What's my name?",
    "What did you think of Zhang Beihai's choice at the end?",
    "Luo Ji's plan as a Wallfacer was really clever",
    "The names in One Hundred Years of Solitude are so easy to mix up",
    "Who do you think played best in the Champions League final?",
    "The shrines in Tears of the Kingdom are tough puzzles",
    "Should I blanch the ribs before braising them?",
    "I still have two pages left on the quarterly report due tomorrow",
    "How should I revise linear algebra for the math exam?",
    "Which neighbourhood in Kyoto is handy to stay in?",
    "Which company do I work for again?",
    "Nolan's film was about Oppenheimer, right?",
    "Why did Ye Wenjie answer the Trisolaran signal?",
    "Where am I from again?",
]

# The other direction: an emotional message that mentions a topic keeps its mode.
EMOTIONAL_WITH_TOPIC = [
    ("看《寻梦环游记》的时候一直哭，想我外婆了", "comfort"),
    ("复习了半年还是没考上，我真的不知道该怎么办了", "comfort"),
    ("你又把我的名字记错了，说了多少遍了", "conflict"),
    ("下次一起去看《星际穿越》吧，我想靠在你肩上看", "intimacy"),
    ("Watching Coco made me cry the whole time, I miss my grandma", "comfort"),
    ("Six months of revision and I still failed, I don't know what to do anymore", "comfort"),
    ("You got my name wrong again, how many times have I told you", "conflict"),
    ("Let's watch Interstellar together next time, I want to lean on your shoulder", "intimacy"),
]


def _labelled_texts() -> list[str]:
    path = Path(__file__).parent / "data" / "mode_labelled.txt"
    return [
        line.split("|", 2)[2].removesuffix(" #hard")
        for line in path.read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_the_topical_lines_are_not_training_data() -> None:
    labelled = [normalize_text(t) for t in _labelled_texts()]
    for text in [*TOPICAL, *(t for t, _ in EMOTIONAL_WITH_TOPIC)]:
        best = process.extractOne(normalize_text(text), labelled, scorer=fuzz.ratio)
        assert best is not None and best[1] <= 75, (text, best)


def test_neutral_topical_chatter_is_casual_above_a_floor(shipped_modes: Modes) -> None:
    """The classifier shipped before session 16 (fitted on 2144 lines of companion talk) read 17 of
    these 28 as casual (Chinese 7 of 14, English 10 of 14); the one fitted with the topical lines
    reads 23 (10 and 13), session 17's 24 (11 and 13; BENCHMARKS.md, "Conversation mode (issue 7)").
    Floors: 23 in all, 10 in Chinese, 12 in English, and "我叫什么？" / "What's my name?" right. Still
    misread by the message alone: "章北海的选择你怎么看" (intimacy), "罗辑作为面壁者的计划真的很聪明",
    "叶文洁为什么要回复三体人的信号", "Where am I from again?" (comfort)."""
    got = shipped_modes(TOPICAL)
    right = [g == "casual" for g in got]
    wrong = [(t, g) for t, g in zip(TOPICAL, got, strict=True) if g != "casual"]
    assert sum(right) >= 23, wrong
    assert sum(right[:14]) >= 10 and sum(right[14:]) >= 12, wrong
    assert right[1] and right[14], wrong  # "我叫什么？", "What's my name?"


def test_emotional_messages_that_mention_a_topic_keep_their_mode(shipped_modes: Modes) -> None:
    """The old classifier got all eight; the new data must not teach it that a title means casual."""
    got = shipped_modes([t for t, _ in EMOTIONAL_WITH_TOPIC])
    wrong = [(t, m, g) for (t, m), g in zip(EMOTIONAL_WITH_TOPIC, got, strict=True) if g != m]
    assert len(wrong) <= 1, wrong
