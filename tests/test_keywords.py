"""The rule keyword extractor, aliases, renames and summaries, in Chinese and English."""

from __future__ import annotations

from memsched.keywords import (
    TermStats,
    aliases_for,
    classify,
    clip,
    extract_keywords,
    renames,
    short_forms,
    summarize,
)

ZH_PAGE = [
    "我们决定采用OT算法来解决实时协同编辑的冲突。",
    "好的。OT算法确实是个经典选择。我们需要为其设计一个中央服务器吗？",
    "是的，采用中央服务器模型。同时，前端考虑使用Yjs库。",
    "Alpha模块的接口下周定下来，Alpha模块由小王负责。",
    "晚上我做了番茄炒蛋，番茄炒蛋是我最爱吃的菜。",
]

EN_PAGE = [
    "Hey Mel! Good to see you! How have you been?",
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    'I loved "Becoming Nicole" by Amy Ellis Nutt. It is a real inspiring true story about a trans girl.',
    "That sounds great! Yesterday I took the kids to the Natural History Museum in Boston.",
    "Awesome! My pottery class was fun, the pottery class is like therapy for me.",
]


def texts(keywords: list) -> list[str]:
    return [k.text for k in keywords]


def test_chinese_page_yields_its_entities() -> None:
    found = texts(extract_keywords(ZH_PAGE))
    assert 3 <= len(found) <= 8
    for expected in ("OT算法", "Alpha模块", "番茄炒蛋"):
        assert expected in found, found
    # Function words and filler never become keywords.
    assert not {"我们", "的", "觉得", "真的"} & set(found)


def test_english_page_yields_proper_nouns_and_phrases() -> None:
    found = texts(extract_keywords(EN_PAGE))
    assert 3 <= len(found) <= 8
    for expected in ("Becoming Nicole", "Amy Ellis Nutt", "LGBTQ"):
        assert expected in found, found
    assert "pottery class" in found  # "pottery" nearly always appears in this phrase
    assert any("Museum" in k for k in found)
    lowered = {k.lower() for k in found}
    assert not {"great", "awesome", "hey mel", "yesterday", "sounds"} & lowered


def test_excluded_names_are_left_out() -> None:
    found = texts(extract_keywords(["Caroline went to Paris with Caroline's sister."], exclude=["Caroline"]))
    assert "Caroline" not in found
    assert "Paris" in found


def test_idf_from_user_pages_sinks_words_that_fill_every_page() -> None:
    stats = TermStats()
    for i in range(30):
        stats.add({"weather", f"topic{i}"})
    assert stats.idf("weather") < stats.idf("topic3") < stats.idf("neverseen")
    page = ["The weather was nice and the weather stayed nice.", "We visited Kyoto temples in the weather."]
    found = texts(extract_keywords(page, stats))
    assert found.index("Kyoto") < (found.index("weather") if "weather" in found else 99)


def test_aliases_short_forms_and_acronyms() -> None:
    assert short_forms("Alpha模块") == ["Alpha"]
    assert short_forms("中央服务器") == []  # "中央" is not a name on its own
    assert "Nova" in short_forms("Nova project")
    assert "OT" in short_forms("Operational Transformation")
    text = "We chose Operational Transformation (OT) and the Alpha模块 is done."
    aliases = aliases_for(["Operational Transformation", "Alpha模块"], text)
    assert aliases["Operational Transformation"] == ["OT"]
    assert aliases["Alpha模块"] == ["Alpha"]
    # An acronym the text never uses is not claimed.
    assert aliases_for(["Central Server"], "we need a central server") == {}


def test_renames_in_both_languages() -> None:
    assert ("Alpha模块", "Nova") in renames("我们把Alpha模块改名为Nova了")
    assert ("Alpha module", "Nova") in renames("Yesterday we renamed the Alpha module to Nova.")
    assert ("Operational Transformation", "OT") in renames("Operational Transformation (OT) is the plan")
    assert renames("nothing to see here") == []


def test_summary_is_one_short_sentence_with_its_speaker() -> None:
    kws = extract_keywords(ZH_PAGE)
    zh = summarize([("用户", t) for t in ZH_PAGE], kws)
    assert zh.startswith("用户: ")
    assert sum(1 for c in zh if "\u4e00" <= c <= "\u9fff") <= 31  # 30 characters (+ "…")
    en = summarize([("Caroline", t) for t in EN_PAGE], extract_keywords(EN_PAGE))
    assert en.startswith("Caroline: ")
    assert len(en.split()) <= 21
    assert clip("one two three four", words=2) == "one two…"


def test_classify_kinds() -> None:
    assert classify("We decided to go with Postgres") == "decision"
    assert classify("我们决定采用OT算法") == "decision"
    assert classify("I'm planning a trip to Rome next month") == "plan"
    assert classify("I went to the museum yesterday") == "event"
    assert classify("The sky is blue") == "fact"
