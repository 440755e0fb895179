"""jieba's part-of-speech cut, faster (memsched.text.postag): the same words and tags as posseg."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import jieba.posseg
from jieba.posseg import char_state_tab_P, emit_P, start_P, trans_P
from jieba.posseg.viterbi import viterbi as jieba_viterbi

from memsched import Memory
from memsched.embed.hashing import HashEmbedder
from memsched.text import postag

DATA = Path(__file__).parents[1] / "benchmarks" / "data" / "bilingual_memory.json"
HAND_PICKED = [
    "我男朋友叫陈浩，他在学大提琴",
    "周晓婷这周末要去大连",
    "我还能说哪种语言？管它叫啥",
    "OT算法3.5版和GPT4哪个好",
    "㐀㐁丂 咖啡ｶﾌｪ",
    "是干哪",
    "昨晚梦见水滴撞过来",
    "我前男友叫小凯",
]


def _chinese_texts() -> list[str]:
    zh = json.loads(DATA.read_text(encoding="utf-8"))["languages"]["zh"]
    return [t["content"] for t in zh["turns"]] + [q["question"] for q in zh["questions"]] + HAND_PICKED


def test_lcut_cuts_and_tags_as_posseg_does_fresh_and_cached() -> None:
    texts = _chinese_texts()
    postag.clear_caches()
    for _ in range(2):  # filling the cache of unknown runs, then from it
        for text in texts:
            want = [(p.word, p.flag) for p in jieba.posseg.lcut(text)]
            assert [(p.word, p.flag) for p in postag.lcut(text)] == want, text
    assert postag._unknown_run.cache_info().hits > 0


def test_viterbi_gives_jiebas_path_and_score() -> None:
    """On the Han runs of the bilingual set's questions and hand-picked texts, and on random pieces of
    its turns (runs that start and end anywhere), characters the tables lack: the same states and
    the same float (jieba's Viterbi is slow: a sample, not all 1,350 turns)."""
    texts = _chinese_texts()
    runs = [r for text in texts[-48:] for r in re.findall("[\u4e00-\u9fd5]+", text)]
    joined = "".join(re.findall("[\u4e00-\u9fd5]+", "".join(texts)))
    rnd = random.Random(7)
    runs += [joined[i : i + rnd.randint(1, 6)] for i in (rnd.randrange(len(joined) - 6) for _ in range(600))]
    runs += ["㐀", "丂丂", "ab"]
    for run in runs:
        want = jieba_viterbi(run, char_state_tab_P, start_P, trans_P, emit_P)
        assert postag.viterbi(run, char_state_tab_P, start_P, trans_P, emit_P) == want, run


def test_forgetting_empties_the_cache_of_runs(tmp_path: Path) -> None:
    """The cached runs are pieces of users' messages (names among them): a hard delete's
    `forget_caches` drops them with the other text-keyed caches."""
    postag.lcut("周晓婷这周末要去大连")
    assert postag._unknown_run.cache_info().currsize > 0
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder(16)})
    try:
        mem.forget_caches("u")
    finally:
        mem.close()
    assert postag._unknown_run.cache_info().currsize == 0
