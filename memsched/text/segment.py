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
from importlib import resources
from typing import Any

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK}]")
# A run of CJK characters, or a run of other letters/digits (inner apostrophes/dots: "don't", "3.5"), so
# "OT算法" splits into "OT" and "算法".
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’.][^\W_{_CJK}]+)*", re.UNICODE)


def _load_words(name: str) -> frozenset[str]:
    text = resources.files("memsched").joinpath("data", name).read_text(encoding="utf-8")
    return frozenset(w for line in text.splitlines() if (w := line.strip()) and not w.startswith("#"))


ENGLISH_STOP_WORDS = _load_words("stopwords_en.txt")
CHINESE_STOP_WORDS = _load_words("stopwords_zh.txt")
STOP_WORDS = ENGLISH_STOP_WORDS | CHINESE_STOP_WORDS

_jieba_lock = threading.Lock()
_jieba_ready = False


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


@lru_cache(maxsize=4096)
def cjk_ratio(text: str) -> float:
    """Share of the text's letters that are CJK characters (0.0 for text with no letters).

    Cached: a turn asks it of its message about eight times (routing, the topic judge, retrieval)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK_RE.match(c)) / len(letters)


_WORD_RE = re.compile(rf"[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*", re.UNICODE)


def length_units(text: str) -> float:
    """How much text there is, in words: words of alphabetic scripts, plus CJK characters / 2 (a
    Chinese word is about two characters). Punctuation and emoji count nothing."""
    return len(_WORD_RE.findall(text)) + len(_CJK_RE.findall(text)) / 2


def _jieba() -> Any:
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


def clear_caches() -> None:
    """Forget the texts cached here (after a hard delete: the cache is keyed by message text)."""
    _terms_cached.cache_clear()
    cjk_ratio.cache_clear()


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
    phrases = fts_phrases(text)
    return " OR ".join(phrases) if phrases else None


def fts_phrases(text: str) -> list[str]:
    """The query's distinct terms as quoted FTS5 phrases, in order (what `fts_query` ORs)."""
    seen: dict[str, None] = {}
    for t in terms(text):
        seen.setdefault(t, None)
    return ['"' + t.replace('"', '""') + '"' for t in seen]
