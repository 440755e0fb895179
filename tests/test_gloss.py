"""Chinese glossed into English from CC-CEDICT (memsched.text.gloss)."""

from __future__ import annotations

from memsched.text.gloss import gloss, has_han, lookup


def test_words_become_their_english_senses() -> None:
    assert "cello" in gloss("我学大提琴差不多八个月了").split()
    assert "musical instrument" in gloss("我最近在摆弄哪种乐器？")
    assert "boyfriend" in gloss("我男朋友叫陈浩")
    assert "spouse" in gloss("我的另一半是谁？")


def test_a_paraphrase_meets_its_fact_in_english() -> None:
    fact = set(gloss("我学大提琴差不多八个月了").split())
    question = set(gloss("最近在学什么乐器？").split())
    assert fact & question  # "learn" / "study": the Chinese shares no word


def test_names_and_non_chinese_text_stay_as_they_are() -> None:
    assert "陈浩" in gloss("我男朋友叫陈浩").split()
    assert gloss("I like green tea") == "I like green tea"
    out = gloss("I like 咖啡 and OT算法")
    assert out.startswith("I like coffee") and "OT" in out.split()


def test_stop_words_are_dropped_and_senses_limited() -> None:
    one = gloss("我学大提琴", senses=1).split()
    assert "我" not in one and "cello" in one and "violoncello" not in one
    assert "violoncello" in gloss("我学大提琴", senses=2).split()


def test_traditional_characters_and_variants() -> None:
    assert "Taiwan" in gloss("我們去台灣吃牛肉麵")
    assert lookup("臺灣") == lookup("台湾")


def test_has_han() -> None:
    assert has_han("user: 你好") and not has_han("hello") and not has_han("こんにちは")
