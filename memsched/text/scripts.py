"""Which scripts a regular expression needs in a text before it can match there, read from the
pattern itself, so that a rule list run on every message skips the patterns that cannot match it: a
pattern that needs a Han character cannot match "I moved to Austin", and one that needs a Latin
letter cannot match "我搬到杭州了".

`needs(pattern)` walks the parsed pattern (`re._parser`, the tree `re.compile` itself compiles): a
sequence needs what any of its parts needs, alternatives what all of them need, a repeat what its
body needs when it must occur at least once, a positive lookaround what its body needs (it reads the
text too), a negative lookaround nothing. A character, or a class of characters, needs a script only
when all its characters are of it (`HAN`, `LATIN`); a negated class, `\\w`, `.` need nothing.

Case-insensitive matching reaches beyond the characters written: under re.IGNORECASE "s" also
matches "ſ" (U+017F) and "k" the Kelvin sign (U+212A). The check of a text (`present`) counts every
character that any character of `LATIN_RANGES` or `HAN_RANGES` matches case-insensitively (its test
checks it over every code point), so a text holding only such a character still runs the pattern.
"""

from __future__ import annotations

import re
import re._parser as _parser  # the parser `re.compile` uses: the pattern as it will run
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any, Generic, TypeVar

HAN = "han"
LATIN = "latin"
Scripts = frozenset[str]

# The characters that make a pattern's character or class need a script, as ranges of code points.
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
LATIN_RANGES = ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F))
# What a text is checked for: the ranges above and every character that matches one of them under
# re.IGNORECASE (ſ U+017F is in them; outside: IPA letters such as ɔ U+0254 and ə U+0259, ẞ U+1E9E,
# the Kelvin sign U+212A, the angstrom sign U+212B, and Latin Extended-C's ⱥ U+2C65 …).
_HAN_TEXT = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_TEXT = re.compile(
    "[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02af\u1e00-\u1eff\u212a\u212b\u2c60-\u2c7f]"
)

# The four non-ASCII letters re.IGNORECASE matches to ASCII i, k and s, as those letters (one character
# for one, so offsets hold): a word a case-insensitive pattern matched ("laſt", "ſmoking") is looked up
# by its lowered form, which `str.lower` leaves unfolded.
IGNORECASE_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

_NO_SCRIPT: Scripts = frozenset()
COMBINATIONS: tuple[Scripts, ...] = (
    _NO_SCRIPT,
    frozenset({HAN}),
    frozenset({LATIN}),
    frozenset({HAN, LATIN}),
)


@lru_cache(maxsize=32)  # one message is checked once per rule list: a lookup after the first
def present(text: str) -> Scripts:
    """The scripts of `needs` that `text` holds a character of."""
    han = _HAN_TEXT.search(text) is not None
    latin = _LATIN_TEXT.search(text) is not None
    return COMBINATIONS[han + 2 * latin]


def _within(lo: int, hi: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(a <= lo and hi <= b for a, b in ranges)


def _chars(lo: int, hi: int) -> Scripts:
    if _within(lo, hi, HAN_RANGES):
        return frozenset({HAN})
    if _within(lo, hi, LATIN_RANGES):
        return frozenset({LATIN})
    return _NO_SCRIPT


def _class(items: Sequence[tuple[Any, Any]]) -> Scripts:
    """What a class `[...]` needs: a script all its members are of (none for a negated class, a
    category such as \\w or \\d, or members of different scripts)."""
    need: Scripts | None = None
    for op, av in items:
        if op is _parser.LITERAL:
            got = _chars(av, av)
        elif op is _parser.RANGE:
            got = _chars(av[0], av[1])
        else:  # NEGATE, CATEGORY
            return _NO_SCRIPT
        need = got if need is None else need & got
        if not need:
            return _NO_SCRIPT
    return need or _NO_SCRIPT


def _sequence(items: Any) -> Scripts:
    need: set[str] = set()
    for op, av in items:
        need |= _item(op, av)
    return frozenset(need)


def _item(op: Any, av: Any) -> Scripts:
    if op is _parser.LITERAL:
        return _chars(av, av)
    if op is _parser.IN:
        return _class(av)
    if op is _parser.SUBPATTERN:
        return _sequence(av[3])
    if op is _parser.ATOMIC_GROUP:
        return _sequence(av)
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, _parser.POSSESSIVE_REPEAT):
        return _sequence(av[2]) if av[0] >= 1 else _NO_SCRIPT
    if op is _parser.BRANCH:
        branches = [_sequence(b) for b in av[1]]
        return frozenset.intersection(*branches)
    if op is _parser.ASSERT:  # (?=…), (?<=…): the text holds it too
        return _sequence(av[1])
    if op is _parser.GROUPREF_EXISTS:
        return _sequence(av[1]) & (_sequence(av[2]) if av[2] is not None else _NO_SCRIPT)
    # NOT_LITERAL, ANY, AT, ASSERT_NOT, GROUPREF, CATEGORY: nothing needed
    return _NO_SCRIPT


@cache
def needs(pattern: re.Pattern[str]) -> Scripts:
    """The scripts a text must hold a character of for `pattern` to match anywhere in it."""
    return _sequence(_parser.parse(pattern.pattern, pattern.flags))


T = TypeVar("T")


class ByScript(Generic[T]):
    """A rule list (each rule holding a pattern) as the rules that can match a text of each
    combination of scripts, in their order; `rules.at(text)` or `rules.at(present(text))`."""

    def __init__(self, rules: Sequence[T], pattern: Callable[[T], re.Pattern[str]]) -> None:
        self._rules = rules
        self._pattern = pattern
        self._by: dict[Scripts, list[T]] = {}

    def at(self, text_or_scripts: str | Scripts) -> list[T]:
        scripts = present(text_or_scripts) if isinstance(text_or_scripts, str) else text_or_scripts
        got = self._by.get(scripts)
        if got is None:
            got = self._by[scripts] = [r for r in self._rules if needs(self._pattern(r)) <= scripts]
        return got
