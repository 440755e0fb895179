"""Turn text into search terms for BM25, in Chinese and English alike.

SQLite's FTS5 tokenizer splits on spaces and punctuation, which leaves a Chinese sentence as one
long token. So text is segmented here first (jieba for CJK runs), stop words are dropped, and the
terms are joined with spaces; FTS5's `porter` tokenizer then stems the English ones. Documents and
queries go through the same function, so they meet on the same terms.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK}]")
# A run of CJK characters, or a run of letters/digits (with inner apostrophes/dots, e.g. "don't", "3.5").
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+(?:['’.][^\W_]+)*", re.UNICODE)

ENGLISH_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
    don't down during each few for from further had hadn't has hasn't have haven't having he he'd
    he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
    is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only or
    other ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so
    some such than that that's the their theirs them themselves then there there's these they they'd
    they'll they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's whom why
    why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    also just yeah yes oh ok okay really so s t will get got would like""".split()
)

CHINESE_STOP_WORDS = frozenset(
    """的 了 着 过 是 在 和 与 及 或 也 都 就 还 又 再 才 很 太 最 更 非常 吗 呢 吧 啊 呀 哦 嗯 哈 哈哈 嘛 啦
    我 你 他 她 它 我们 你们 他们 她们 咱们 自己 这 那 这个 那个 这些 那些 这样 那样 什么 怎么 怎么样 为什么
    哪 哪里 哪儿 哪个 谁 多少 几 一个 一些 一下 有 没有 没 不 被 把 让 给 对 从 向 到 为 以 于 而 但 但是 因为
    所以 如果 虽然 然后 还是 就是 可以 可能 应该 会 能 要 想 觉得 知道 说 上 下 里 中 之 其 等 个 些 啦 呗 哎
    嘿 诶 么 之前 以前 后来 时候 来着 一直 已经 真的 其实 还有 一起 """.split()
)
STOP_WORDS = ENGLISH_STOP_WORDS | CHINESE_STOP_WORDS

_jieba_lock = threading.Lock()
_jieba_ready = False


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def cjk_ratio(text: str) -> float:
    """Share of the text's letters that are CJK characters (0.0 for text with no letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK_RE.match(c)) / len(letters)


def _jieba():  # type: ignore[no-untyped-def]
    global _jieba_ready
    import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba_ready = True
    return jieba


def words(text: str) -> list[str]:
    """All words of `text`, lower-cased, CJK runs segmented, stop words kept."""
    out: list[str] = []
    for m in _TOKEN_RE.finditer(text.lower()):
        tok = m.group(0)
        if _CJK_RE.match(tok):
            # cut_for_search also yields the shorter words inside long compounds
            # ("中华人民共和国" -> 中华, 人民, 共和国 ...), which is what recall needs.
            out.extend(w for w in _jieba().cut_for_search(tok) if w.strip())
        else:
            out.append(tok.replace("’", "'"))
    return out


@lru_cache(maxsize=50_000)
def _terms_cached(text: str) -> tuple[str, ...]:
    return tuple(w for w in words(text) if w not in STOP_WORDS and not (len(w) == 1 and w.isascii()))


def terms(text: str) -> list[str]:
    """Search terms of `text`: words without stop words or single ASCII letters."""
    return list(_terms_cached(text))


def index_text(text: str) -> str:
    """The string stored in the full-text index for `text`."""
    return " ".join(terms(text))


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression that ORs the query's terms, each quoted.

    Quoting every term turns any FTS5 syntax in user text (`"`, `*`, `NEAR`, `:`, `(`, `AND`) into
    plain words, so a query can never be a syntax error. None when nothing searchable is left.
    """
    seen: dict[str, None] = {}
    for t in terms(text):
        seen.setdefault(t, None)
    if not seen:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in seen)
