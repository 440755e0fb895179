from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.model import Turn
from memsched.store import Store
from memsched.text.segment import fts_query, terms

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


def _fill(store: Store) -> dict[str, int]:
    turns = store.add_turns(
        [
            Turn("u", "s", "user", "今晚我想做个番茄炒蛋，你喜欢甜口还是咸口？"),
            Turn("u", "s", "user", "我们第一次约会是在Blue Note爵士酒吧"),
            Turn("u", "s", "user", "She was running marathons every spring."),
            Turn("u", "s", "user", "The weather is lovely and the sky is blue."),
            Turn("other", "s", "user", "番茄炒蛋 is my favourite too"),
        ]
    )
    return {t.content[:6]: t.id for t in turns}


def test_chinese_words_are_searchable(store: Store) -> None:
    ids = _fill(store)
    hits = store.search_bm25("u", "番茄")
    assert [h.turn_id for h in hits] == [ids["今晚我想做个"]]
    hits = store.search_bm25("u", "还记得我们第一次约会的地方吗")
    assert hits and hits[0].turn_id == ids["我们第一次约"]


def test_english_stemming_and_stop_words(store: Store) -> None:
    ids = _fill(store)
    assert [h.turn_id for h in store.search_bm25("u", "who runs a marathon?")] == [ids["She wa"]]
    # Only stop words: nothing searchable, no crash, no hits.
    assert store.search_bm25("u", "what is the and was") == []


def test_search_is_scoped_by_user(store: Store) -> None:
    _fill(store)
    hits = store.search_bm25("other", "番茄炒蛋")
    assert len(hits) == 1
    assert store.get_turns("other", [hits[0].turn_id])[0].user_id == "other"


def test_fts_syntax_is_escaped(store: Store) -> None:
    _fill(store)
    for q in [
        '"unbalanced',
        "running*",
        "NEAR(blue sky)",
        "content: blue",
        "(blue AND",
        "blue OR NOT sky",
        '"" ^ - + {} [] :',
        "AND",
        "NEAR/2",
    ]:
        store.search_bm25("u", q)  # must not raise
    assert store.search_bm25("u", '"blue"* AND (sky)')  # quoted terms still match


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(q=st.text(max_size=60))
def test_any_query_is_safe(store: Store, q: str) -> None:
    if store.turn_count("u") == 0:
        _fill(store)
    store.search_bm25("u", q)


def test_terms_mix_languages() -> None:
    assert "番茄" in terms("我想吃番茄炒蛋") or "番茄炒蛋" in terms("我想吃番茄炒蛋")
    assert "the" not in terms("the Three-Body Problem")
    assert fts_query("the a an") is None


def test_a_rare_word_is_found_among_many_turns_with_a_common_one(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stores rank only a common word's newest matches (`BM25_CANDIDATES_PER_TERM`, made small
    here): an old turn with a rare word is still found, with its full score (the common word
    counted too), and the common word's older matches are not."""
    from memsched.store import postgres_base, sqlite_fts

    zebras = store.add_turns(
        [Turn("u", "s0", "user", f"the zebra number {i} crossed the garden") for i in range(3)]
    )
    store.add_turns([Turn("u", f"s{1 + i // 10}", "user", f"garden chores, day {i}") for i in range(40)])
    exact = {h.turn_id: h.score for h in store.search_bm25("u", "zebra garden", limit=50)}
    assert len(exact) == 43 and len(store.search_bm25("u", "garden", limit=50)) == 43
    for module in (postgres_base, sqlite_fts):
        monkeypatch.setattr(module, "BM25_CANDIDATES_PER_TERM", 5)
    hits = store.search_bm25("u", "zebra garden", limit=3)
    assert sorted(h.turn_id for h in hits) == sorted(t.id or 0 for t in zebras)
    assert [h.score for h in hits] == pytest.approx([exact[h.turn_id] for h in hits], rel=1e-9)
    # the three zebra turns and the five newest with only the common word, ranked in that order
    capped = store.search_bm25("u", "zebra garden", limit=50)
    assert len(capped) == 8 and {h.turn_id for h in capped[:3]} == {h.turn_id for h in hits}
    assert [h.score for h in capped] == pytest.approx([exact[h.turn_id] for h in capped], rel=1e-9)
    newest = store.search_bm25("u", "garden", limit=50)
    assert len(newest) == 5 and min(h.turn_id for h in newest) > max(t.id or 0 for t in zebras)
    assert sorted(h.turn_id for h in newest) == sorted(exact)[-5:]


def test_a_query_below_the_cap_ranks_as_before(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """No term over the cap: the one-query ranking (every match scored), whatever the cap is."""
    from memsched.store import postgres_base, sqlite_fts

    store.add_turns([Turn("u", "s", "user", f"garden chores with the zebra, day {i}") for i in range(6)])
    store.add_turns([Turn("u", "s", "user", f"garden chores, day {i}") for i in range(6)])
    before = [(h.turn_id, h.score) for h in store.search_bm25("u", "zebra garden", limit=50)]
    for module in (postgres_base, sqlite_fts):
        monkeypatch.setattr(module, "BM25_CANDIDATES_PER_TERM", 12)
    assert [(h.turn_id, h.score) for h in store.search_bm25("u", "zebra garden", limit=50)] == before
    assert len(before) == 12
