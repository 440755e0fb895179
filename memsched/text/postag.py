"""jieba's part-of-speech cut (`jieba.posseg.lcut`): the same words and tags, several times faster.

posseg cuts a run of Han characters by its dictionary and tags each word from it; what is left is
runs of single characters the dictionary does not join ("是干哪", "周晓婷这"), which it cuts and tags
with an HMM over 256 word-position x tag states, Viterbi in pure Python: most of the cut's time
(~0.3 of a Chinese message's ~0.4 ms gloss, which the message's model call waits for). Here:

- that pass's result is kept per run (`_unknown_run`). It depends on the run alone, and the same runs
  come back message after message ("我跟你说", "想找", a name: the bilingual set's 1,350 Chinese
  turns have 1,820 such runs, 761 distinct), so a run seen before costs a lookup;
- a run not seen before goes through `viterbi`, jieba's algorithm computed the same way (the same
  sums in the same order, ties broken alike) with each state's successors walked instead of every
  pair of states: the same path, ~2.5x faster.

`_Tagger` is posseg's tokenizer class over posseg's own tables (`jieba.posseg.dt`, user words
included) with two methods replaced: the pass over an unknown run (`__cut_detail`, by its mangled
name) and its HMM cut (`__cut`). Tests check `lcut` against `jieba.posseg.lcut` and `viterbi`
against jieba's on every run of the bilingual set's Chinese texts.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from memsched.text.segment import _jieba

_lock = threading.Lock()
_tagger_: Any = None


def lcut(text: str) -> list[Any]:
    """`jieba.posseg.lcut(text)`: jieba's `pair`s (`.word`, `.flag`; they unpack as two)."""
    return list(_tagger().cut(text))


def clear_caches() -> None:
    """Forget the runs cached here (they are pieces of users' messages: names among them)."""
    _unknown_run.cache_clear()


def _tagger() -> Any:
    global _tagger_
    if _tagger_ is None:
        with _lock:
            if _tagger_ is None:
                _tagger_ = _make_tagger()
    return _tagger_


def _make_tagger() -> Any:
    _jieba()  # initialised once, quietly
    import jieba.posseg
    from jieba.posseg import char_state_tab_P, emit_P, start_P, trans_P

    pair = jieba.posseg.pair

    class _Tagger(jieba.posseg.POSTokenizer):
        def __init__(self) -> None:
            pass  # posseg's own tables (read through below), not a second load of them

        @property
        def tokenizer(self) -> Any:
            return jieba.posseg.dt.tokenizer

        @property
        def word_tag_tab(self) -> Any:
            return jieba.posseg.dt.word_tag_tab

        def _POSTokenizer__cut_detail(self, sentence: str) -> Any:
            return iter(_unknown_run(sentence))

        def _POSTokenizer__cut(self, sentence: str) -> Any:
            # posseg's `__cut` as written, over `viterbi` below.
            _, pos_list = viterbi(sentence, char_state_tab_P, start_P, trans_P, emit_P)
            begin, nexti = 0, 0
            for i, char in enumerate(sentence):
                pos = pos_list[i][0]
                if pos == "B":
                    begin = i
                elif pos == "E":
                    yield pair(sentence[begin : i + 1], pos_list[i][1])
                    nexti = i + 1
                elif pos == "S":
                    yield pair(char, pos_list[i][1])
                    nexti = i + 1
            if nexti < len(sentence):
                yield pair(sentence[nexti:], pos_list[nexti][1])

        def detail(self, run: str) -> tuple[Any, ...]:
            return tuple(jieba.posseg.POSTokenizer._POSTokenizer__cut_detail(self, run))

    return _Tagger()


@lru_cache(maxsize=20_000)
def _unknown_run(run: str) -> tuple[Any, ...]:
    """posseg's words and tags for a run of characters its dictionary does not join (its HMM)."""
    out: tuple[Any, ...] = _tagger().detail(run)
    return out


MIN_FLOAT = -3.14e100  # jieba's: the log-probability of an emission its table lacks
MIN_INF = float("-inf")  # and of a transition it lacks


def viterbi(
    obs: str,
    states: Mapping[str, Sequence[Any]],
    start_p: Mapping[Any, float],
    trans_p: Mapping[Any, Mapping[Any, float]],
    emit_p: Mapping[Any, Mapping[str, float]],
) -> tuple[float, list[Any]]:
    """`jieba.posseg.viterbi.viterbi`, the same result. jieba scores every (previous, next) pair of
    states as `V[prev] + trans[prev].get(next, -inf) + emit[next]` and takes the largest (score,
    previous state); a pair without a transition scores -inf, so only the previous states'
    successors are scored here, with the same sums in the same order and ties to the larger state;
    a state no successor reaches above -inf gets the largest previous state, as max() gives it."""
    all_states = trans_p.keys()
    c = obs[0]
    v = {y: start_p[y] + emit_p[y].get(c, MIN_FLOAT) for y in states.get(c, all_states)}
    paths: list[dict[Any, Any]] = [dict.fromkeys(v, "")]
    for t in range(1, len(obs)):
        c = obs[t]
        prev = [x for x in v if trans_p[x]]
        expect: set[Any] = set()
        for x in prev:
            expect.update(trans_p[x])
        here = set(states.get(c, all_states)) & expect
        if not here:
            here = expect if expect else set(all_states)
        emit = {y: emit_p[y].get(c, MIN_FLOAT) for y in here}
        best = dict.fromkeys(here, MIN_INF)
        back: dict[Any, Any] = {}
        for y0 in prev:
            v0 = v[y0]
            for y, tp in trans_p[y0].items():
                e = emit.get(y)
                if e is None:
                    continue
                p = v0 + tp + e
                b = best[y]
                if p > b or (p == b and p != MIN_INF and y0 > back[y]):
                    best[y] = p
                    back[y] = y0
        top = max(prev)
        for y in here:
            if best[y] == MIN_INF:
                back[y] = top
        v = best
        paths.append(back)
    prob, state = max((p, y) for y, p in v.items())
    route: list[Any] = [None] * len(obs)
    for i in range(len(obs) - 1, -1, -1):
        route[i] = state
        state = paths[i][state]
    return prob, route
