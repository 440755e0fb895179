"""Someone else's angry words quoted: "My mom called and said 'you never call me anymore, I'm so
disappointed in you.' Ugh, that stung." was routed to conflict (the cue "disappointed", the learned
parts reading "you never ... disappointed in you") and the user's mood set upset at the companion, so
the next message got the cold strategy. The quote is the mother's, said to the user: the router reads
the user's own words (`router.own_words`) for the mode and the mood; a quotation of the companion
("you said 'I don't care'") is still the user's grievance."""

from __future__ import annotations

import pytest

from memsched.classify import ModeClassifier
from memsched.router import Router, own_words


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(classifier=ModeClassifier.load())


@pytest.mark.parametrize(
    "message",
    [
        "My mom called and said 'you never call me anymore, I'm so disappointed in you.' Ugh, that stung.",
        "My boss told me \"you're useless, I'm sick of your excuses\" in front of everyone.",
        "我妈今天打电话说：“你一天到晚就知道忙你的店，心里根本没有这个家！”听得我好难受。",
    ],
)
def test_someone_elses_quoted_anger_is_not_a_conflict_with_the_companion(
    router: Router, message: str
) -> None:
    route = router.route(message)
    assert route.mode != "conflict", route.mode_reason
    assert route.mood != "upset"


@pytest.mark.parametrize(
    "message",
    [
        "You said 'I don't care' last night and it really hurt, I'm so mad at you.",
        "你说“我不在乎”，我真的很生气。",
    ],
)
def test_the_companion_quoted_is_still_a_grievance(router: Router, message: str) -> None:
    assert router.route(message).mode == "conflict"


@pytest.mark.parametrize(
    ("text", "left"),
    [
        (
            "My mom called and said 'you never call me, I'm so disappointed.' Ugh.",
            "My mom called and said “…” Ugh.",
        ),
        ('Tom said "you look great" today!', "Tom said “…” today!"),
        ("我妈说：“你心里没有这个家！”我好难受", "我妈说：“…”我好难受"),
        ("Yesterday you said 'I don't care'.", "Yesterday you said 'I don't care'."),
        ('I said "fine" and left.', 'I said "fine" and left.'),
        ("She isn't coming, it's fine.", "She isn't coming, it's fine."),
    ],
)
def test_own_words(text: str, left: str) -> None:
    assert own_words(text) == left
