"""The carried mood's rules (memsched.mood): what strengthens, softens, repairs and decays it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memsched.mood import FLOOR, Mood, update

T0 = datetime(2024, 10, 21, 14, 30, tzinfo=UTC)
UPSET = Mood("upset", 0.8, (1, 3), T0)


def test_the_same_feeling_again_strengthens_it_and_collects_its_cause() -> None:
    out = update(UPSET, label="upset", intensity=0.6, now=T0 + timedelta(minutes=1), turn_ids=[5])
    assert out.event == "reinforced"
    assert out.mood.intensity > UPSET.intensity and out.mood.cause_turn_ids == (1, 3, 5)


def test_a_message_expressing_nothing_keeps_the_mood_as_it_was() -> None:
    out = update(UPSET, label=None, intensity=0.0, now=T0 + timedelta(hours=1), turn_ids=[5])
    assert out.event == "kept" and out.mood == UPSET


def test_an_apology_or_an_unasked_forgiveness_halves_it_and_both_repair_it() -> None:
    later = T0 + timedelta(minutes=5)
    for cue in ({"apology": True}, {"acceptance": True}, {"acceptance": True, "label": None}):
        # Even when the message reads as conflict on its own ("It's okay, I forgive you.").
        out = update(UPSET, **{"label": "upset", **cue}, intensity=0.6, now=later, turn_ids=[7])
        assert out.event == "softened" and out.mood.intensity == UPSET.intensity / 2
    # A forgiveness said warmly ("好啦，不生你气了", read as affectionate) ends the argument: a user's
    # walk-through got the cold strategy for lunch after saying it.
    for warm in ("affectionate", "happy"):
        out = update(UPSET, label=warm, intensity=0.5, now=later, acceptance=True, turn_ids=[7])
        assert out.event == "repaired" and out.mood.label == "neutral"
    # Warmth without a word of forgiveness does not repair it.
    assert update(UPSET, label="affectionate", intensity=0.5, now=later).event == "kept"
    repaired = update(UPSET, label=None, intensity=0.0, now=later, acceptance=True, previous_apology=True)
    assert repaired.event == "repaired" and repaired.mood.label == "neutral"


def test_an_apology_or_a_forgiveness_never_starts_an_upset_mood() -> None:
    """An apology reads as conflict ("I apologize, I was rude to you": a conflict cue), but the user who
    says it is not angry: with no upset mood carried it must not start one (the next message would get
    the cold strategy)."""
    calm = Mood()
    for cue in ({"apology": True}, {"acceptance": True}):
        out = update(calm, label="upset", intensity=0.55, now=T0, turn_ids=[3], **cue)
        assert out.event == "kept" and out.mood.label == "neutral"
    sad = Mood("sad", 0.3, (4,), T0)
    assert update(sad, label="upset", intensity=0.55, now=T0, apology=True).mood == sad
    # Anger without an apology still sets it.
    assert update(calm, label="upset", intensity=0.55, now=T0, turn_ids=[3]).event == "set"


def test_a_stronger_other_feeling_replaces_it_and_time_fades_it() -> None:
    sad = update(UPSET, label="sad", intensity=0.9, now=T0 + timedelta(minutes=1), turn_ids=[9])
    assert sad.event == "set" and sad.mood.label == "sad" and sad.mood.cause_turn_ids == (9,)
    assert update(UPSET, label="happy", intensity=0.5, now=T0).event == "kept"
    next_morning = UPSET.at(T0 + timedelta(hours=10))
    assert next_morning.label == "upset" and FLOOR < next_morning.intensity < UPSET.intensity
    assert UPSET.at(T0 + timedelta(days=3)).label == "neutral"


def test_a_reading_no_cue_word_backs_never_strengthens_the_mood() -> None:
    """The classifier alone reads neutral talk as sad now and then ("罗辑作为面壁者的计划真的很聪明"): such a
    reading may set a mild mood but repeating it does not build one up."""
    sad = Mood("sad", 0.3, (4,), T0)
    again = update(sad, label="sad", intensity=0.3, now=T0 + timedelta(minutes=1), turn_ids=[6], cued=False)
    assert again.event == "kept" and again.mood == sad
    cued = update(sad, label="sad", intensity=0.6, now=T0 + timedelta(minutes=1), turn_ids=[6])
    assert cued.event == "reinforced" and cued.mood.intensity > 0.6


def test_the_router_marks_whether_a_cue_backs_the_mood() -> None:
    from memsched.router import UNCUED_MOOD_INTENSITY, Router

    router = Router()
    angry = router.route("你根本不在乎我！我真的很生气")
    assert angry.mood == "upset" and angry.mood_cued and angry.mood_intensity > UNCUED_MOOD_INTENSITY
    assert router.route("今天天气不错").mood is None
    for text in ("好啦，不生你气了", "Fine, I'm not mad at you anymore"):
        assert router.route(text).acceptance, text


def test_a_new_hard_time_within_three_days_keeps_the_last_ones_causes() -> None:
    """A sad mood that faded below the floor, then sleeplessness the next night: the new anxious mood
    quoted only the sleeplessness, and the companion met it without the sister's surgery it was about.
    Within three days a new sad or anxious mood keeps the last one's causes; after that, or after
    anger, or for a happy mood, it starts afresh."""
    sad = Mood("sad", 0.6, (11, 12), T0)
    faded = sad.at(T0 + timedelta(hours=40))
    assert faded.label == "neutral"
    out = update(faded, label="anxious", intensity=0.7, now=T0 + timedelta(hours=40), turn_ids=[20])
    assert out.event == "set" and out.mood.cause_turn_ids == (11, 12, 20)
    still = update(
        sad.at(T0 + timedelta(hours=2)), label="anxious", intensity=0.7, now=T0 + timedelta(hours=2)
    )
    assert still.mood.cause_turn_ids == (11, 12)
    late = T0 + timedelta(hours=80)
    assert update(sad.at(late), label="sad", intensity=0.5, now=late, turn_ids=[30]).mood.cause_turn_ids == (
        30,
    )
    after_anger = UPSET.at(T0 + timedelta(hours=40))
    out = update(after_anger, label="sad", intensity=0.5, now=T0 + timedelta(hours=40), turn_ids=[31])
    assert out.mood.cause_turn_ids == (31,)
    happy = update(faded, label="happy", intensity=0.5, now=T0 + timedelta(hours=40), turn_ids=[32])
    assert happy.mood.cause_turn_ids == (32,)
