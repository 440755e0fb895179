"""How common a word is in the language at large, so a question's everyday words do not decide
what it is about.

BM25 weighs a term by how rare it is in the user's own history. On a history of a few hundred turns
that says "make" twice (both in a science-fiction debate), "make" is as rare as a name, and "What
should I make for dinner tonight?" ranks the debate first: no turn says "dinner". The general
frequency of a word is what a small history cannot know. `wordfreq` ships it offline for English
and Chinese (Zipf scale: log10 of occurrences per billion words; "make" 6.1, 好 6.2, "dinner" 4.8,
晚饭 4.0), and a word at or above `COMMON_ZIPF` is one of the few hundred most frequent of its
language.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import lru_cache

from memsched.text.segment import has_cjk

# A word at least this frequent (Zipf) in the language at large is "common". 6.0 is about the
# 400 most frequent English words (make, want, know, good, people) and Chinese's (好, 做, 什么);
# "work" (5.96), "family" (5.7), 吃 (5.7) are not. Not fitted to any data: BENCHMARKS.md
# "Common words".
COMMON_ZIPF = 6.0


@lru_cache(maxsize=1)
def _zipf_frequency() -> Callable[..., float]:
    # wordfreq builds a jieba dictionary on its first Chinese lookup and logs it; keep that quiet.
    import jieba
    from wordfreq import zipf_frequency

    jieba.setLogLevel(logging.WARNING)

    return zipf_frequency


@lru_cache(maxsize=65536)
def zipf(term: str) -> float:
    """The term's Zipf frequency in general English or Chinese (0.0 when wordfreq does not know it)."""
    # The small lists (words down to Zipf 3) know every word near the threshold: 19 MB, not 87.
    return float(_zipf_frequency()(term, "zh" if has_cjk(term) else "en", wordlist="small"))


def is_common(term: str, threshold: float = COMMON_ZIPF) -> bool:
    """Whether `term` is among its language's most frequent words (never, with threshold 0)."""
    return threshold > 0 and zipf(term) >= threshold


def content_terms(terms: Sequence[str], threshold: float = COMMON_ZIPF) -> list[str]:
    """`terms` without the common ones; all of them when nothing else would be left ("what do you
    think?" still searches its words)."""
    kept = [t for t in terms if not is_common(t, threshold)]
    return kept or list(terms)


def warm_up() -> None:
    """Load both languages' frequency tables (~0.2 s) before the first question needs them."""
    zipf("the")
    zipf("的")
