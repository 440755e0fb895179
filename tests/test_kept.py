"""Kept searches (`memsched.kept`): a fixed query's hits, extended by the turns added since."""

from __future__ import annotations

import pytest

from memsched.kept import RENEW_EVERY, KeptSearches
from memsched.model import Turn
from memsched.store import Store

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

HINT = "stress tired anxious 压力 累 失眠"


def _add(store: Store, user: str, *texts: str) -> list[int]:
    return [
        t.id for t in store.add_turns([Turn(user, "s", "user", text) for text in texts]) if t.id is not None
    ]


def test_search_after_an_id_ranks_only_the_newer_turns(store: Store) -> None:
    old = _add(store, "u", "work stress again", "so tired of this stress", "最近压力很大")
    _add(store, "v", "stress stress stress")  # another user's turn, newer than all of u's old ones
    new = _add(store, "u", "tired and anxious tonight", "the weather is fine", "又失眠了，好累")
    after = store.search_bm25("u", HINT, 10, after_id=old[-1])
    assert {h.turn_id for h in after} == {new[0], new[2]}
    assert [h.rank for h in after] == [1, 2]
    assert all(h.score > 0 for h in after)
    everything = store.search_bm25("u", HINT, 10)
    assert set(old) | {new[0], new[2]} == {h.turn_id for h in everything}


def test_kept_hits_follow_new_turns_without_a_full_search(store: Store) -> None:
    _add(store, "u", "work stress again", "we went hiking", "最近压力很大", "a quiet day")
    kept = KeptSearches(store)
    first = kept.bm25("u", HINT, 3)
    assert kept.full == 1 and kept.extended == 0
    assert first == store.search_bm25("u", HINT, 3)
    assert kept.bm25("u", HINT, 3) == first  # nothing new: no search at all
    assert kept.full == 1 and kept.extended == 0
    (best,) = _add(store, "u", "stress, anxious, tired, 失眠, 压力, 累: everything at once")
    again = kept.bm25("u", HINT, 3)
    assert kept.full == 1 and kept.extended == 1
    assert again[0].turn_id == best
    assert [h.turn_id for h in again] == [h.turn_id for h in store.search_bm25("u", HINT, 3)]
    assert [h.rank for h in again] == [1, 2, 3]


def test_kept_hits_are_renewed_after_enough_extensions(store: Store) -> None:
    _add(store, "u", "work stress again")
    kept = KeptSearches(store)
    kept.bm25("u", HINT, 5)
    for n in range(RENEW_EVERY):
        _add(store, "u", f"note {n}: tired")
        kept.bm25("u", HINT, 5)
    assert kept.full == 1 and kept.extended == RENEW_EVERY
    _add(store, "u", "anxious")
    kept.bm25("u", HINT, 5)
    assert kept.full == 2 and kept.extended == RENEW_EVERY


def test_a_forgotten_turn_is_never_offered_again(store: Store) -> None:
    (gone, stays) = _add(store, "u", "stress and anxious and tired", "a bit tired")
    kept = KeptSearches(store)
    assert gone in {h.turn_id for h in kept.bm25("u", HINT, 5)}
    store.delete_turns("u", [gone])
    kept.forget("u")
    assert [h.turn_id for h in kept.bm25("u", HINT, 5)] == [stays]
    assert kept.full == 2


def test_a_newest_turn_deleted_elsewhere_renews_the_search(store: Store) -> None:
    (first,) = _add(store, "u", "a bit tired")
    kept = KeptSearches(store)
    kept.bm25("u", HINT, 5)
    (newest,) = _add(store, "u", "stress and anxious")
    assert newest in {h.turn_id for h in kept.bm25("u", HINT, 5)}
    store.delete_turns("u", [newest])  # another process: this one's `forget` is not called
    assert [h.turn_id for h in kept.bm25("u", HINT, 5)] == [first]
    assert kept.full == 2


def test_users_are_kept_apart(store: Store) -> None:
    (mine,) = _add(store, "u", "so much stress")
    (theirs,) = _add(store, "v", "so much stress")
    kept = KeptSearches(store)
    assert [h.turn_id for h in kept.bm25("u", HINT, 5)] == [mine]
    assert [h.turn_id for h in kept.bm25("v", HINT, 5)] == [theirs]
    kept.forget("v")
    assert [h.turn_id for h in kept.bm25("u", HINT, 5)] == [mine]
    assert kept.full == 2  # u's kept search survived v's forget
