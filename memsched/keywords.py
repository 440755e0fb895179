"""Rule keyword extraction for bookmarks, in Chinese and English, with no model and no network.

This is the fallback that bookmark generation uses whenever no LLM is configured or the call fails,
so it has to be good on its own and fast (a 20-turn page in a few milliseconds):

- English: capitalised runs ("Becoming Nicole", "LGBTQ"), quoted titles and numbers are entity
  candidates; every other content word is a term candidate. Chinese: jieba words, with
  ASCII+CJK compounds ("OT算法", "Alpha模块") and noun compounds ("番茄炒蛋") merged.
- Terms are scored TF x IDF, the IDF coming from the user's own pages (`TermStats`), so chit-chat
  words that fill every page sink and what is specific to this page rises.
- A top word is replaced by the phrase it nearly always appears in ("pottery" -> "pottery class").

Nothing here touches the store; `memsched.bookmarks` feeds it text and stats.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memsched.text.segment import CHINESE_STOP_WORDS, ENGLISH_STOP_WORDS, _jieba, has_cjk, terms

# Conversation filler: frequent everywhere in chat, useless as a bookmark keyword (still searchable).
FILLER_WORDS = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "great",
        "good",
        "awesome",
        "amazing",
        "cool",
        "nice",
        "glad",
        "happy",
        "sounds",
        "sound",
        "love",
        "loved",
        "lovely",
        "wow",
        "yeah",
        "yep",
        "nope",
        "sure",
        "right",
        "well",
        "know",
        "think",
        "thought",
        "see",
        "seen",
        "going",
        "gonna",
        "want",
        "wanted",
        "make",
        "made",
        "way",
        "lot",
        "lots",
        "thing",
        "things",
        "stuff",
        "something",
        "anything",
        "everything",
        "nothing",
        "really",
        "pretty",
        "super",
        "definitely",
        "totally",
        "absolutely",
        "exactly",
        "true",
        "feel",
        "feeling",
        "felt",
        "hope",
        "hoping",
        "glad",
        "let",
        "lets",
        "tell",
        "told",
        "say",
        "said",
        "doing",
        "done",
        "good-bye",
        "bye",
        "awesome",
        "incredible",
        "fantastic",
        "wonderful",
        "fun",
        "interesting",
        "excited",
        "exciting",
        "keep",
        "kind",
        "sort",
        "maybe",
        "probably",
        "actually",
        "guess",
        "mean",
        "means",
        "agree",
        "course",
        "especially",
        "always",
        "never",
        "ever",
        "still",
        "even",
        "much",
        "many",
        "every",
        "today",
        "yesterday",
        "tomorrow",
        "tonight",
        "last",
        "next",
        "new",
        "old",
        "day",
        "days",
        "week",
        "weeks",
        "time",
        "times",
        "year",
        "years",
        "month",
        "months",
        "year's",
        "ago",
        "soon",
        "lately",
        "recently",
        "sometimes",
        "often",
        "little",
        "big",
        "bit",
        "whole",
        "take",
        "took",
        "come",
        "came",
        "go",
        "went",
        "get",
        "getting",
        "got",
        "give",
        "gave",
        "look",
        "looks",
        "looking",
        "looked",
        "try",
        "trying",
        "tried",
        "好的",
        "谢谢",
        "哈哈哈",
        "真的",
        "非常",
        "感觉",
        "觉得",
        "知道",
        "一下",
        "今天",
        "昨天",
        "明天",
        "时间",
        "东西",
        "事情",
        "问题",
        "大家",
        "开心",
        "不错",
        "厉害",
        "好像",
        "感谢",
        "可能",
        "应该",
        "需要",
        "现在",
        "还是",
        "已经",
        "最近",
        "一点",
        "一样",
        "比较",
        "那么",
        "这么",
        "特别",
        "有点",
        "有些",
        "确实",
        "当然",
        "看看",
    ]
)
_KEYWORD_STOP = ENGLISH_STOP_WORDS | CHINESE_STOP_WORDS | FILLER_WORDS

# Head nouns that make a compound generic: "Alpha模块" is also called "Alpha", "Nova project" "Nova".
GENERIC_HEADS_ZH = (
    "模块", "系统", "算法", "项目", "平台", "框架", "服务", "组件", "方案", "模型", "工具", "应用", "产品",
    "功能", "接口", "团队", "公司", "计划", "协议", "引擎", "数据库", "服务器", "库",
)  # fmt: skip
GENERIC_HEADS_EN = frozenset(
    [
        "module",
        "system",
        "algorithm",
        "project",
        "platform",
        "framework",
        "service",
        "component",
        "plan",
        "model",
        "tool",
        "app",
        "application",
        "product",
        "feature",
        "api",
        "team",
        "company",
        "protocol",
        "engine",
        "database",
        "server",
        "library",
    ]
)

_SENT_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s+|[\n。！？；]+")
_EN_TOKEN = re.compile(r"\$?\d[\d,.:]*%?|[A-Za-z][A-Za-z0-9'’\-]*|[\"“”]|[^\sA-Za-z0-9]")
_NUMBER = re.compile(r"^\$?\d[\d,.:]*%?$")
_QUOTED = re.compile(r"[\"“]([^\"“”]{2,60})[\"”]")
_CJK_WORD = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff]+$")
_ASCII_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9\-+.#]*$")
_CN_NUMBER = re.compile(r"\d+(?:\.\d+)?\s*(?:年|月|日|号|个|元|块|岁|次|天|周|小时|分钟|公里|万|千|%)")
# Lower-case words that may sit inside a name ("Bank of America"); "and" may not ("Yjs and OT").
_CONNECTORS = frozenset({"of", "the", "de", "&", "van", "von", "da", "la", "du", "del"})
_NOUNISH = ("n", "nr", "ns", "nt", "nz", "ng", "eng", "vn", "an", "nrt", "nrfg", "j", "l", "i")
_RARE_VERB_FREQ = 1000  # a "verb" this rare in jieba's dictionary is mostly a dish or a term ("炒蛋")


@dataclass(slots=True)
class Keyword:
    """One extracted keyword or key phrase, with its score and what kind of evidence found it."""

    text: str
    score: float
    kind: str = "term"  # entity | phrase | number | term


@dataclass(slots=True)
class TermStats:
    """Document frequencies of terms over a user's pages, for IDF. Pages are the documents."""

    docs: int = 0
    df: Counter[str] = field(default_factory=Counter)

    def add(self, doc_terms: Iterable[str]) -> None:
        self.docs += 1
        self.df.update(set(doc_terms))

    def idf(self, term: str) -> float:
        """IDF blended with a prior while the user has few pages (IDF on 3 pages means little)."""
        prior = _prior_idf(term)
        if self.docs == 0:
            return prior
        n = self.docs
        user = math.log((n + 1.0) / (self.df.get(term.lower(), 0) + 0.5))
        share = min(1.0, n / 20.0)
        return share * user + (1.0 - share) * prior


@lru_cache(maxsize=100_000)
def _prior_idf(term: str) -> float:
    if has_cjk(term):
        idf = _jieba_idf().get(term)
        # jieba's IDF table is on a 0..~14 scale; bring it to the user IDF's ~0..5 scale.
        return 4.0 if idf is None else min(4.0, idf / 3.0)
    return 2.5


def warm_up() -> None:
    """Load jieba's dictionary, tag and IDF tables now: about a second of CPU that the first bookmark
    job of a process would otherwise spend (the server does it in the background at start)."""
    _jieba_tags()
    _jieba_idf()


@lru_cache(maxsize=1)
def _jieba_idf() -> dict[str, float]:
    _jieba()
    from jieba.analyse import default_tfidf

    return dict(default_tfidf.idf_freq)


@lru_cache(maxsize=1)
def _jieba_tags() -> tuple[dict[str, str], dict[str, int]]:
    jieba = _jieba()
    from jieba import posseg  # its import loads the tag table

    # Not `posseg.initialize()`: it empties the table and fills it again, and every part-of-speech cut
    # in that second read no word's tag ("王海生" was 王/x 海生/x, no name, on a server's first turns).
    # Tags from the dictionary alone: posseg's HMM tagger is too slow for 50 pages/s.
    return posseg.dt.word_tag_tab, jieba.dt.FREQ


def doc_terms(texts: Iterable[str]) -> set[str]:
    """The set of search terms of a document (what `TermStats.add` counts)."""
    out: set[str] = set()
    for text in texts:
        out.update(terms(text))
    return out


# -- candidates ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Bag:
    """Candidate counts of one document."""

    words: Counter[str] = field(default_factory=Counter)  # lower-cased single content words
    phrases: Counter[str] = field(default_factory=Counter)  # lower-cased multi-word phrases
    entities: Counter[str] = field(default_factory=Counter)  # surface form -> count
    numbers: Counter[str] = field(default_factory=Counter)
    surface: dict[str, str] = field(default_factory=dict)  # lower -> first surface form
    parts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # phrase -> its words

    def see(self, surface: str) -> str:
        low = surface.lower()
        self.surface.setdefault(low, surface)
        return low


def _is_content_en(low: str) -> bool:
    return len(low) > 2 and low not in _KEYWORD_STOP and not _NUMBER.match(low)


class _EnglishSentence:
    """Candidate collection over one English sentence: runs of content words, runs of capitals."""

    def __init__(self, bag: _Bag) -> None:
        self.bag = bag
        self.run: list[str] = []  # consecutive content words (lower-cased)
        self.run_surface: list[str] = []
        self.caps: list[str] = []  # consecutive capitalised words (surface)
        self.caps_start = -1

    def flush_run(self) -> None:
        bag, run = self.bag, self.run
        for n in (2, 3):
            for i in range(len(run) - n + 1):
                gram = tuple(run[i : i + n])
                phrase = " ".join(gram)
                bag.phrases[phrase] += 1
                bag.parts[phrase] = gram
                bag.surface.setdefault(phrase, " ".join(self.run_surface[i : i + n]))
        run.clear()
        self.run_surface.clear()

    def flush_caps(self) -> None:
        caps = self.caps
        while caps and caps[-1].lower() in _CONNECTORS:
            caps.pop()
        while caps and caps[0].lower() in _CONNECTORS | _KEYWORD_STOP:
            caps.pop(0)
        if caps:
            name = " ".join(caps)
            # A lone capitalised word that opens a sentence is only capitalised for that reason.
            initial_only = len(caps) == 1 and self.caps_start == 0
            low = name.lower()
            if len(caps) > 1 or (
                low not in _KEYWORD_STOP and len(low) > 1 and (not initial_only or name.isupper())
            ):
                self.bag.entities[name] += 1
        caps.clear()

    def flush(self) -> None:
        self.flush_run()
        self.flush_caps()


def _english(text: str, bag: _Bag) -> None:
    for m in _QUOTED.finditer(text):
        title = m.group(1).strip()
        if 1 <= len(title.split()) <= 6:
            bag.entities[title] += 1
    for sentence in _SENT_SPLIT.split(text):
        state = _EnglishSentence(bag)
        word_index = 0
        for raw in _EN_TOKEN.findall(sentence):
            if not (raw[0].isalnum() or raw[0] == "$"):
                state.flush()
                continue
            tok = raw.rstrip("-'’")
            if not tok:
                continue
            low = tok.lower().replace("’", "'")
            if _NUMBER.match(tok):
                state.flush()
                if len(tok.strip("$%.,:")) >= 2 or "$" in tok or "%" in tok:
                    bag.numbers[tok.rstrip(".,:")] += 1
                word_index += 1
                continue
            capital = tok[0].isupper() or (tok[0].isalpha() and any(c.isupper() for c in tok[1:]))
            if capital and low not in ("i", "i'm", "i've", "i'll", "i'd"):
                if not state.caps:
                    state.caps_start = word_index
                state.caps.append(tok)
            elif state.caps and low in _CONNECTORS:
                state.caps.append(tok)
            else:
                state.flush_caps()
            if _is_content_en(low):
                surface = tok if capital and word_index > 0 else low
                bag.see(surface)
                bag.words[low] += 1
                state.run.append(low)
                state.run_surface.append(surface)
            else:
                state.flush_run()
            word_index += 1
        state.flush()


def _chinese(text: str, bag: _Bag) -> None:
    tags, freq = _jieba_tags()
    for m in _CN_NUMBER.finditer(text):
        bag.numbers[m.group(0).replace(" ", "")] += 1
    words = list(_jieba().cut(text))
    run: list[str] = []  # compound being built: surfaces

    def nounish(w: str) -> bool:
        if _ASCII_WORD.match(w):
            return True
        tag = tags.get(w)
        return tag is None or tag.startswith(_NOUNISH)

    def joinable(w: str) -> bool:
        if not _CJK_WORD.match(w) or len(w) < 2:
            return False
        tag = tags.get(w)
        return (
            tag is None
            or tag.startswith(_NOUNISH)
            or (tag.startswith("v") and freq.get(w, 0) < _RARE_VERB_FREQ)
        )

    def flush() -> None:
        if len(run) > 1:
            phrase = (
                "".join(run)
                if not any(_ASCII_WORD.match(a) and _ASCII_WORD.match(b) for a, b in itertools.pairwise(run))
                else " ".join(run)
            )
            if len(phrase) <= 12:
                low = bag.see(phrase)
                bag.phrases[low] += 1
                bag.parts[low] = tuple(w.lower() for w in run)
                if _ASCII_WORD.match(run[0]):
                    bag.entities[phrase] += 1
        run.clear()

    prev_ascii_adjacent = False
    for w in words:
        if not w.strip() or not (w[0].isalnum()):
            flush()
            prev_ascii_adjacent = False
            continue
        low = w.lower()
        is_ascii = bool(_ASCII_WORD.match(w))
        content = (is_ascii and len(w) >= 2 and low not in _KEYWORD_STOP) or (
            bool(_CJK_WORD.match(w)) and len(w) >= 2 and w not in _KEYWORD_STOP
        )
        if not content:
            flush()
            prev_ascii_adjacent = False
            continue
        bag.see(w)
        # A Chinese word stands as a keyword on its own only when it is a noun-like word, an unknown
        # word (names, new terms) or a rare "verb" (dishes, jargon): 一般, 希望, 几次 are not topics.
        if is_ascii or joinable(w):
            bag.words[low] += 1
        if is_ascii and (w[0].isupper() or w.isupper() or any(c.isupper() for c in w[1:])):
            bag.entities[w] += 1
        if (
            run
            and len(run) < 3
            and (
                (prev_ascii_adjacent and _CJK_WORD.match(w) and len(w) >= 2 and nounish(w))
                or (_CJK_WORD.match(run[-1]) and nounish(run[-1]) and joinable(w))
            )
        ):
            run.append(w)
        else:
            flush()
            run.append(w)
        prev_ascii_adjacent = is_ascii
    flush()


def _bag(texts: Sequence[str]) -> _Bag:
    bag = _Bag()
    for text in texts:
        if has_cjk(text):
            _chinese(text, bag)
        else:
            _english(text, bag)
    return bag


# Dictionary part-of-speech tags of names: people, places, other proper nouns (jieba's tag set).
_NAME_TAGS = ("nr", "ns", "nz")


def query_entities(text: str) -> list[str]:
    """The names a text (a query) mentions, as written: in English the capitalised runs and quoted
    titles the bookmark extractor takes for entities; in Chinese the words jieba's dictionary tags as
    names (nr, ns, nz) and ASCII words with a capital. The entity-centred units of the pager
    (`memsched.paging.PagingOptions.entity_units`) group the turns about each."""
    if not has_cjk(text):
        return list(_bag([text]).entities)
    tags, _ = _jieba_tags()
    out: dict[str, None] = {}
    for w in _jieba().cut(text):
        named = _CJK_WORD.match(w) and len(w) >= 2 and (tags.get(w) or "").startswith(_NAME_TAGS)
        capital = _ASCII_WORD.match(w) and any(c.isupper() for c in w) and w.lower() not in _KEYWORD_STOP
        if named or capital:
            out[w] = None
    return list(out)


# -- scoring --------------------------------------------------------------------------------------------


def extract_keywords(
    texts: Sequence[str],
    stats: TermStats | None = None,
    *,
    k: int = 8,
    min_k: int = 3,
    exclude: Iterable[str] = (),
) -> list[Keyword]:
    """The `min_k`..`k` most specific keywords/key phrases of a document (its turns' texts), best first.

    Entities (capitalised names, quoted titles, ASCII+CJK compounds) are favoured over plain terms;
    `exclude` (lower-cased) drops words such as the speakers' names, which are in every page.
    """
    stats = stats or TermStats()
    bag = _bag(texts)
    banned = {e.lower() for e in exclude}
    idf = stats.idf

    scored: dict[str, Keyword] = {}
    for low, tf in bag.words.items():
        if low in banned:
            continue
        # Square-root TF: a word said five times is not five times as telling as one said once.
        # Inflected verbs and adverbs ("taking", "gained", "really") name no thing: they count less.
        shape = 0.6 if low.isascii() and low.endswith(("ed", "ly", "ing")) else 1.0
        scored[low] = Keyword(bag.surface.get(low, low), math.sqrt(tf) * idf(low) * shape, "term")
    for name, tf in bag.entities.items():
        low = name.lower()
        if low in banned:
            continue
        parts = (
            [p for p in re.split(r"\s+", low) if p] if not has_cjk(low) else list(bag.parts.get(low, (low,)))
        )
        base = max((idf(p) for p in parts), default=idf(low))
        score = math.sqrt(tf) * base * (1.4 if len(parts) > 1 else 1.25)
        if low not in scored or score > scored[low].score:
            scored[low] = Keyword(name, score, "entity")
    for num, tf in bag.numbers.items():
        scored.setdefault(num.lower(), Keyword(num, math.sqrt(tf) * 1.5, "number"))

    ranked = sorted(scored.values(), key=lambda kw: (-kw.score, kw.text))
    # A number is an answer more often than a topic: at most two.
    numbers = [kw for kw in ranked if kw.kind == "number"][:2]
    ranked = [kw for kw in ranked if kw.kind != "number" or kw in numbers]

    # Replace a top word by the phrase it nearly always appears in.
    phrase_of: dict[str, tuple[str, int]] = {}
    for phrase, tf in bag.phrases.items():
        if any(p in banned for p in bag.parts.get(phrase, ())):
            continue
        for part in bag.parts.get(phrase, ()):
            best = phrase_of.get(part)
            if best is None or tf > best[1]:
                phrase_of[part] = (phrase, tf)

    out: list[Keyword] = []
    covered: set[str] = set()
    for kw in ranked:
        if len(out) >= k:
            break
        low = kw.text.lower()
        if low in covered:
            continue
        text, kind = kw.text, kw.kind
        if kind == "term" and low in phrase_of:
            phrase, ptf = phrase_of[low]
            # A phrase said once stands in for its word only when it is a two-word Chinese compound
            # ("番茄炒蛋"); longer one-off runs are more often a clause than a name.
            once_ok = has_cjk(phrase) and len(bag.parts.get(phrase, ())) == 2
            if ptf * 2 >= bag.words.get(low, 1) and (ptf >= 2 or once_ok):
                text, kind = bag.surface.get(phrase, phrase), "phrase"
                low = phrase
        if low in covered:
            continue
        covered.add(low)
        covered.update(bag.parts.get(low, ()))
        covered.update(low.split())
        out.append(Keyword(text, kw.score, kind))
    # A name inside a longer selected name adds nothing ("Grandma" next to "Grandma Li").
    lowered = [kw.text.lower() for kw in out]
    out = [
        kw
        for kw, low in zip(out, lowered, strict=True)
        if not any(o != low and re.search(rf"(?<!\w){re.escape(low)}(?!\w)", o) for o in lowered)
    ]
    # Short documents may give fewer than min_k; that is all there is.
    del min_k
    return out


# -- aliases -------------------------------------------------------------------------------------------

_RENAME_PATTERNS = (
    # Chinese: "A 改名(为|叫) B", "A 简称 B", "把 A 叫做 B", "A 以后就叫 B"
    re.compile(r"(?:把)?(?P<old>[\w\u4e00-\u9fff]{1,20}?)(?:改名为|改名叫|改名成|更名为|改叫|改成叫|简称为|简称|缩写为|缩写成|以后就叫|就叫它|叫做)(?P<new>[A-Za-z0-9\u4e00-\u9fff]{1,20})"),
    # English: "rename(d) A to B", "call A B from now on", "A (aka B)", "A, or B for short"
    # Case-insensitive only around the verb: the new name's further words must be capitalised.
    re.compile(r"\b(?i:renam(?:e|ed|ing))\s+(?:(?i:the)\s+)?(?P<old>[\w\- ]{1,40}?)\s+(?:to|as)\s+(?P<new>[\w\-]+(?:\s+[A-Z][\w\-]*)*)"),
    re.compile(r"(?P<old>[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)*)\s*,?\s*\(?(?:aka|a\.k\.a\.|also known as)\s+(?P<new>[\w\-]+(?:\s+[A-Z][\w\-]*)*)\)?"),
    re.compile(r"(?P<old>[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)*)\s*,?\s*\(?or\s+(?P<new>[\w\-]+)\s+for\s+short\)?"),
    re.compile(r"(?P<old>[A-Z][\w\-]*(?:\s+[A-Za-z][\w\-]*){1,4})\s*[(（](?P<new>[A-Z][A-Za-z0-9]{1,9})[)）]"),
)  # fmt: skip


def renames(text: str) -> list[tuple[str, str]]:
    """(old name, new name) pairs that `text` states: renames, abbreviations, "aka", "(OT)"."""
    out: list[tuple[str, str]] = []
    for pattern in _RENAME_PATTERNS:
        for m in pattern.finditer(text):
            old, new = m.group("old").strip(), m.group("new").strip()
            old = re.split(r"[把将]", old)[-1] if has_cjk(old) else old
            old = re.sub(r"^(?:我们|咱们|大家|the|our|my)\s*", "", old, flags=re.I).strip()
            new = re.sub(r"[了的吧啦吗呢啊]+$", "", new)
            if old and new and old.lower() != new.lower():
                out.append((old, new))
    return out


def short_forms(keyword: str) -> list[str]:
    """Names a keyword is likely shortened to: "Alpha模块" -> "Alpha", "Nova project" -> "Nova",
    "Operational Transformation" -> "OT"."""
    out: list[str] = []
    if has_cjk(keyword):
        for head in GENERIC_HEADS_ZH:
            if keyword.endswith(head) and len(keyword) > len(head):
                stem = keyword[: -len(head)].strip()
                # Only a name-like stem ("Alpha", "OT") stands alone; "中央" of "中央服务器" does not.
                if stem.isascii() and stem[:1].isalnum():
                    out.append(stem)
                break
    else:
        words = keyword.split()
        if len(words) >= 2 and words[-1].lower() in GENERIC_HEADS_EN:
            out.append(" ".join(words[:-1]))
        if len(words) >= 2 and all(w[:1].isupper() for w in words):
            out.append("".join(w[0] for w in words))
    return [s for s in out if s and s.lower() != keyword.lower()]


def aliases_for(keywords: Sequence[str], text: str) -> dict[str, list[str]]:
    """Aliases of `keywords` that `text` supports: stated renames, and short forms it actually uses."""
    lowered = text.lower()
    out: dict[str, list[str]] = {}
    for kw in keywords:
        for short in short_forms(kw):
            # An acronym is an alias only if the text uses it; a stem ("Alpha", "Nova") only if the
            # text writes it like a name ("central" of "central server" is just an adjective).
            if short.isupper() and len(short) <= 5:
                if short.lower() not in lowered:
                    continue
            elif short not in text or not (short[:1].isupper() or any(c.isdigit() for c in short)):
                continue
            out.setdefault(kw, []).append(short)
    for old, new in renames(text):
        for kw in keywords:
            if (
                kw.lower() == old.lower()
                or old.lower().endswith(kw.lower())
                or kw.lower().endswith(old.lower())
            ):
                if new.lower() != kw.lower():
                    out.setdefault(kw, []).append(new)
                break
        else:
            out.setdefault(old, []).append(new)
    return {k: sorted(set(v), key=v.index) for k, v in out.items()}


# -- summary ---------------------------------------------------------------------------------------------

_CUES = re.compile(
    r"\b(?:decid\w*|chose|choose|agreed|plan\w*|going to|will|bought|started|joined|moved|adopt\w*|"
    r"finished|won|got|went|visited|signed up|named|because)\b|决定|选择|选用|采用|打算|计划|准备|确定|同意|买了|去了|开始|完成",
    re.I,
)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def summarize(
    lines: Sequence[tuple[str, str]], keywords: Sequence[Keyword], *, words: int = 20, chars: int = 30
) -> str:
    """An extractive one-sentence summary: the sentence (with its speaker) that carries the most
    keyword weight, decisions and events preferred, cut to `words` English words or `chars` CJK
    characters. `lines` are (speaker, text)."""
    weights: dict[str, float] = {}
    for kw in keywords:
        weights[kw.text.lower()] = kw.score
    best: tuple[float, str, str] | None = None
    for speaker, text in lines:
        for sentence in split_sentences(text):
            low = sentence.lower()
            score = sum(w for t, w in weights.items() if t in low)
            if score <= 0:
                continue
            if sentence.endswith(("?", "？")):
                score *= 0.5
            if _CUES.search(sentence):
                score *= 1.3
            size = len(sentence) if has_cjk(sentence) else len(sentence.split())
            score /= max(1.0, size / (chars if has_cjk(sentence) else words)) ** 0.5
            if best is None or score > best[0]:
                best = (score, speaker, sentence)
    if best is None:
        if not lines:
            return ""
        best = (
            0.0,
            lines[0][0],
            split_sentences(lines[0][1])[0] if split_sentences(lines[0][1]) else lines[0][1],
        )
    _, speaker, sentence = best
    return clip(f"{speaker}: {sentence}" if speaker else sentence, words=words, chars=chars)


def clip(text: str, *, words: int = 20, chars: int = 30) -> str:
    """`text` cut to `chars` characters when it is mostly Chinese, else to `words` words."""
    text = " ".join(text.split())
    if has_cjk(text):
        cjk = sum(1 for c in text if "\u3400" <= c <= "\u9fff")
        if cjk <= chars:
            return text
        out, n = [], 0
        for c in text:
            n += 1 if "\u3400" <= c <= "\u9fff" else 0
            if n > chars:
                break
            out.append(c)
        return "".join(out).rstrip("，,、 ") + "…"
    parts = text.split()
    if len(parts) <= words:
        return text
    return " ".join(parts[:words]).rstrip(",;:") + "…"


_DECISION = re.compile(
    r"\b(?:decid\w*|decision|chose|choose|agreed|settled on|go with|went with)\b|决定|选定|选用|采用|确定|定了|拍板|同意",
    re.I,
)
_PLAN = re.compile(
    r"\b(?:plan\w*|going to|gonna|will|intend|next week|next month|tomorrow)\b|打算|计划|准备|下周|明天|将要",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(?:love|like|favorite|favourite|prefer|hate|enjoy)\b|喜欢|最爱|讨厌|偏好|爱吃", re.I
)
_EVENT = re.compile(
    r"\b(?:went|visited|attended|bought|joined|started|finished|won|met|moved|yesterday|last week)\b|去了|参加|买了|见了|搬|昨天|上周",
    re.I,
)


def classify(text: str) -> str:
    """The bookmark kind a text reads as: decision, plan, event, preference or fact."""
    for kind, pattern in (
        ("decision", _DECISION),
        ("plan", _PLAN),
        ("event", _EVENT),
        ("preference", _PREFERENCE),
    ):
        if pattern.search(text):
            return kind
    return "fact"


def importance(keywords: Sequence[Keyword], kind: str, text: str) -> float:
    """A 0..1 weight: decisions and plans matter more than chit-chat, named things more than none."""
    base = {"decision": 0.7, "plan": 0.6, "event": 0.5, "preference": 0.5, "fact": 0.4}.get(kind, 0.4)
    entities = sum(1 for kw in keywords if kw.kind in ("entity", "phrase", "number"))
    return round(min(1.0, base + 0.05 * entities + (0.05 if _CUES.search(text) else 0.0)), 3)
