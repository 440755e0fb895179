"""Synthetic long bilingual chat histories for the scale benchmarks.

Deterministic (seeded) and fast: about a million turns a minute in pure Python. Each user gets
sessions of 8–30 turns, about one a day, that alternate user/assistant and talk about a few topics
from a small bilingual template set, filled with entities drawn per user (names, places, foods,
numbers), so the vocabulary grows with history the way real chat does: a shared core of common
words plus a long tail of user-specific names and numbers. The text is not meant to be meaningful;
it is meant to cost what real text costs to store, segment, index and search.

    python benchmarks/synth_history.py --users 3 --turns 20     # prints a JSONL sample
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memsched.model import Turn

_EN = [
    "I went to {place} with {name} yesterday and we had {food}.",
    "Do you remember what {name} said about {topic}?",
    "My {relation} {name} is moving to {place} next month.",
    "I've been reading about {topic} again, it's fascinating.",
    "Work was rough today, the {topic} project is behind by {num} days.",
    "We should try that {food} place near {place} sometime.",
    "I finally finished {num} pages of my {topic} notes.",
    "{name} asked me about {topic} and I didn't know what to say.",
    "The weather in {place} was {weather} all week.",
    "I'm thinking of getting a {pet} and calling it {petname}.",
]
_EN_REPLY = [
    "That sounds lovely. How was the {food}?",
    "You mentioned {name} before; how are they doing?",
    "{place} is a big change. Are you going to visit?",
    "What part of {topic} caught your attention this time?",
    "That's a lot of pressure. Is there anything I can do about {topic}?",
    "Sure, tell me when you want to go to {place}.",
    "{num} pages is great progress!",
    "Maybe ask {name} what they think first?",
    "{weather} weather can really change the mood.",
    "{petname} is a cute name for a {pet}!",
]
_ZH = [
    "昨天我和{name}去了{place}，吃了{food}。",
    "你还记得{name}说过关于{topic}的事吗？",
    "我{relation}{name}下个月要搬到{place}去了。",
    "我最近又在看{topic}的书，太有意思了。",
    "今天上班好累，{topic}项目已经延期{num}天了。",
    "{place}附近那家{food}店我们找时间去试试吧。",
    "我终于把{topic}的笔记写完了{num}页。",
    "{name}问我{topic}的事，我不知道怎么回答。",
    "{place}这周一直是{weather}。",
    "我想养一只{pet}，叫它{petname}。",
]
_ZH_REPLY = [
    "听起来很棒！{food}好吃吗？",
    "你之前提到过{name}，他最近怎么样？",
    "搬去{place}变化挺大的，你会去看看吗？",
    "这次{topic}哪部分最吸引你？",
    "压力好大啊，{topic}的事我能帮上忙吗？",
    "好呀，想去{place}的时候告诉我。",
    "{num}页已经很厉害了！",
    "要不先问问{name}的想法？",
    "{weather}的天气真的会影响心情。",
    "{petname}这个名字很可爱！",
]
_VOCAB = {
    "en": {
        "place": ["Hangzhou", "Lisbon", "the lake", "Brooklyn", "the old town", "Kyoto", "the market"],
        "food": ["ramen", "dumplings", "tapas", "hotpot", "pizza", "a curry", "sushi"],
        "topic": ["astronomy", "the garden", "chess", "jazz", "the budget", "marathon training", "poetry"],
        "relation": ["sister", "friend", "colleague", "cousin", "neighbour"],
        "weather": ["rainy", "sunny", "foggy", "freezing", "humid"],
        "pet": ["cat", "dog", "rabbit", "parrot"],
    },
    "zh": {
        "place": ["杭州", "成都", "西湖", "外滩", "老城区", "京都", "菜市场"],
        "food": ["拉面", "饺子", "火锅", "小笼包", "披萨", "咖喱", "寿司"],
        "topic": ["天文", "花园", "象棋", "爵士乐", "预算", "马拉松训练", "诗歌"],
        "relation": ["姐姐", "朋友", "同事", "表哥", "邻居"],
        "weather": ["下雨", "晴天", "大雾", "很冷", "闷热"],
        "pet": ["猫", "狗", "兔子", "鹦鹉"],
    },
}
_SYLLABLES = [
    "an",
    "bo",
    "chen",
    "da",
    "el",
    "fa",
    "gi",
    "hu",
    "li",
    "mo",
    "na",
    "ri",
    "sa",
    "to",
    "wei",
    "xu",
]
_HANZI = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉萍红娥玲芬燕彩春菊兰凤洁梅琳素云莲真环雪荣爱妹霞香月莺媛艳瑞凡佳嘉琼勤珍贞莉桂娣叶璧璐娅琦晶妍茜秋珊莎锦黛青倩婷姣婉娴瑾颖露瑶怡婵雁蓓纨仪荷丹蓉眉君琴蕊薇菁梦岚苑婕馨瑗琰韵融园艺咏卿聪澜纯毓悦昭冰爽琬茗羽希宁欣飘育滢馥筠柔竹霭凝晓欢霄枫芸菲寒伊亚宜可姬舒影荔枝思丽"


@dataclass(frozen=True, slots=True)
class HistorySpec:
    user_id: str
    turns: int
    seed: int = 0
    zh_share: float = 0.5
    start: datetime = datetime(2023, 1, 1, 9, 0, tzinfo=UTC)


def _names(rng: random.Random, n: int) -> tuple[list[str], list[str]]:
    en = ["".join(rng.choice(_SYLLABLES) for _ in range(2)).capitalize() for _ in range(n)]
    zh = ["".join(rng.choice(_HANZI) for _ in range(2)) for _ in range(n)]
    return en, zh


def history(spec: HistorySpec) -> Iterator[Turn]:
    """`spec.turns` turns of one user, in time order, sessions named s0001, s0002, …"""
    rng = random.Random(f"{spec.user_id}:{spec.seed}")
    en_names, zh_names = _names(rng, 12)
    pets = (["Sesame", "Mochi", "Pepper", "Biscuit"], ["芝麻", "团子", "豆豆", "年糕"])
    at = spec.start
    made = 0
    session = 0
    while made < spec.turns:
        session += 1
        lang = "zh" if rng.random() < spec.zh_share else "en"
        prompts, replies = (_ZH, _ZH_REPLY) if lang == "zh" else (_EN, _EN_REPLY)
        names = zh_names if lang == "zh" else en_names
        vocab = _VOCAB[lang]
        length = min(rng.randint(8, 30), spec.turns - made)
        for k in range(length):
            i = rng.randrange(len(prompts))
            fill = {key: rng.choice(values) for key, values in vocab.items()}
            fill["name"] = rng.choice(names)
            fill["num"] = str(rng.randint(2, 999))
            fill["petname"] = rng.choice(pets[1] if lang == "zh" else pets[0])
            template = prompts[i] if k % 2 == 0 else replies[i]
            yield Turn(
                user_id=spec.user_id,
                session_id=f"s{session:04d}",
                role="user" if k % 2 == 0 else "assistant",
                content=template.format(**fill),
                created_at=at,
            )
            at += timedelta(seconds=rng.randint(20, 240))
            made += 1
        at += timedelta(hours=rng.randint(14, 40))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=1)
    ap.add_argument("--turns", type=int, default=20, help="turns per user")
    args = ap.parse_args()
    for u in range(args.users):
        for t in history(HistorySpec(f"user{u}", args.turns)):
            row = {"user": t.user_id, "session_id": t.session_id, "role": t.role, "content": t.content}
            row["timestamp"] = t.created_at.isoformat()
            print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
