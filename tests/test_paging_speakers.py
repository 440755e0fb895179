"""The pager's speaker names stay right while it avoids recounting every turn's speaker each turn."""

from __future__ import annotations

from pathlib import Path

from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.model import Turn


def _say(mem: Memory, speaker: str, text: str, n: int = 1) -> None:
    mem.add_many(
        [
            Turn(user_id="u", session_id="s1", role="user", content=f"{text} {i}", speaker=speaker)
            for i in range(n)
        ]
    )


def test_a_new_speaker_is_found_after_few_and_after_many_new_turns(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()})
    _say(mem, "Caroline Smith", "I went to a pottery class")
    assert mem.pager._speaker_names("u") == {"caroline smith": "Caroline Smith", "caroline": "Caroline Smith"}
    _say(mem, "Caroline Smith", "it was fun", n=3)  # nobody new: the cached names stand
    assert set(mem.pager._speaker_names("u")) == {"caroline smith", "caroline"}
    _say(mem, "王小明", "我的猫叫芝麻")  # a new name among the new turns
    assert mem.pager._speaker_names("u")["王小明"] == "王小明"
    mem.add("u", "s1", "assistant", "no speaker: labelled by role, not a name")
    assert "assistant" not in mem.pager._speaker_names("u")
    _say(mem, "Caroline Smith", "filler", n=80)
    _say(mem, "Melanie", "I painted a sunrise")  # past the recheck window: a full recount
    names = mem.pager._speaker_names("u")
    assert (
        names["melanie"] == "Melanie"
        and names["王小明"] == "王小明"
        and names["caroline"] == "Caroline Smith"
    )
    mem.close()


def test_the_speaker_names_terms_are_kept_with_the_names_and_dropped_on_forget(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()})
    _say(mem, "Caroline Smith", "I went to a pottery class")
    skip = mem.pager._term_skip("u")
    assert skip == {"caroline", "smith"}
    assert mem.pager._term_skip("u") is skip  # read several times a query: computed once
    _say(mem, "Caroline Smith", "it was fun", n=3)
    assert mem.pager._term_skip("u") is skip  # nobody new
    _say(mem, "Melanie", "I painted a sunrise")
    assert mem.pager._term_skip("u") == {"caroline", "smith", "melanie"}
    (melanie,) = [t.id for t in mem.store.iter_turns("u") if t.speaker == "Melanie" and t.id is not None]
    mem.delete_turns("u", [melanie])  # a forget drops the cached names and their terms
    assert "u" not in mem.pager._speakers
    assert mem.pager._term_skip("u") == {"caroline", "smith"}
    mem.close()


def test_one_retrieval_reads_the_newest_turn_id_once_and_the_next_sees_new_speakers(
    tmp_path: Path,
) -> None:
    """The pager's stages ask for the speaker names several times a query (the BM25 terms to skip,
    the dense text without names, entity focus, multi-hop entities): one store read per retrieval,
    and a speaker who spoke since is found by the next retrieval."""
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()})
    _say(mem, "Caroline Smith", "I went to a pottery class")
    _say(mem, "Melanie", "I painted a sunrise")
    reads: list[str] = []
    real = mem.store.max_turn_id

    def counted(user_id: str) -> int:
        reads.append(user_id)
        return real(user_id)

    mem.store.max_turn_id = counted  # type: ignore[method-assign]
    mem.pager.retrieve("u", "what did Caroline make at the pottery class?")
    mem.pager.retrieve("u", "what did Caroline make at the pottery class?")
    reads.clear()
    paged = mem.pager.retrieve("u", "what did Caroline make at the pottery class?")
    assert paged.candidates
    assert len(reads) == 1
    mem.pager.retrieve("u", "what did Jon open?")  # nobody called Jon yet
    _say(mem, "Jon", "I opened a dance studio")  # a new speaker since
    reads.clear()
    paged = mem.pager.retrieve("u", "what did Jon open?")
    assert len(reads) == 1
    (jon,) = [t.id for t in mem.store.iter_turns("u") if t.speaker == "Jon"]
    # Entity focus: a query naming exactly one speaker prefers what they said.
    assert next(c for c in paged.candidates if c.turn_id == jon).scores.get("speaker") == 1.0
    mem.close()
