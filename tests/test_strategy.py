"""The strategy table: data shipped in the package, overridable by a user file, first match wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsched.config import Config
from memsched.errors import ConfigError
from memsched.strategy import SOURCES, StrategyTable

NO_SIGNALS = {"recall": False, "late_night": False}


def test_the_shipped_table_covers_every_moment() -> None:
    table = StrategyTable.load()
    assert table.select("conflict", "upset", 0.5, NO_SIGNALS).strategy.name == "conflict_cold"
    # Without a carried upset mood a conflict message gets the repair strategy, not the cold one.
    assert table.select("conflict", "neutral", 0.0, NO_SIGNALS).strategy.name == "repair"
    assert table.select("comfort", "sad", 0.6, NO_SIGNALS).strategy.name == "comfort"
    assert table.select("intimacy", "affectionate", 0.5, NO_SIGNALS).strategy.name == "intimacy"
    late = table.select("casual", "neutral", 0.0, {"late_night": True, "recall": False})
    assert late.strategy.name == "caretaker" and "late_night" in late.reason
    # "can't sleep" past one's bedtime: comfort that still sends them to bed.
    late_sad = table.select("comfort", "sad", 0.6, {"late_night": True, "recall": False})
    assert late_sad.strategy.name == "late_comfort" and "sleep" in late_sad.strategy.style
    assert table.select("casual", "neutral", 0.0, {"recall": True}).strategy.name == "recall"
    casual = table.select("casual", "neutral", 0.0, NO_SIGNALS)
    assert casual.strategy.name == "casual" and casual.skipped  # the trace says what did not match
    for s in table.strategies:
        assert set(s.shares) == set(SOURCES) and sum(s.shares.values()) <= 1.0 + 1e-9
        assert s.style


def test_a_mode_the_learned_parts_alone_read_gets_a_voice_that_does_not_assume_it() -> None:
    table = StrategyTable.load()
    for mode, strong in (("conflict", "repair"), ("comfort", "comfort"), ("intimacy", "intimacy")):
        assert table.select(mode, "neutral", 0.0, NO_SIGNALS, backed=True).strategy.name == strong
        unbacked = table.select(mode, "neutral", 0.0, NO_SIGNALS, backed=False)
        assert unbacked.strategy.name == f"attentive_{mode}"
        assert "learned parts alone" in unbacked.reason and strong in unbacked.skipped
        # A question about the past is answered from memory whatever the reading.
        assert table.select(mode, "neutral", 0.0, {"recall": True}, backed=False).strategy.name == "recall"
    # A carried upset mood keeps the cold voice, backed or not (the mood is the evidence).
    assert table.select("conflict", "upset", 0.6, NO_SIGNALS, backed=False).strategy.name == "conflict_cold"
    # Casual is never "unbacked": it is the default.
    assert table.select("casual", "neutral", 0.0, NO_SIGNALS, backed=False).strategy.name == "casual"


def test_backed_must_be_a_boolean_in_a_user_table(tmp_path: Path) -> None:
    text = '[[strategy]]\nname = "x"\nwhen = { backed = "sometimes" }\nshares = { recent = 1.0 }\n'
    with pytest.raises(ConfigError, match="backed"):
        StrategyTable.parse(text, "mine.toml")


def test_a_weak_upset_mood_does_not_keep_the_cold_voice() -> None:
    table = StrategyTable.load()
    assert table.select("conflict", "upset", 0.1, NO_SIGNALS).strategy.name == "repair"


def test_a_user_file_replaces_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[strategy]]\nname = "gentle"\nwhen = { mode = ["conflict", "comfort"] }\nstyle = "温柔一点。"\n'
        "shares = { recent = 0.6, recalled = 0.3 }\n\n"
        '[[strategy]]\nname = "plain"\nstyle = "Be plain."\nshares = { recent = 0.5, recalled = 0.5 }\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("MEMSCHED_STRATEGIES", str(path))
    table = StrategyTable.load(Config.load().strategies)
    assert [s.name for s in table.strategies] == ["gentle", "plain"]
    choice = table.select("comfort", "sad", 0.5, {})
    assert choice.strategy.name == "gentle" and choice.reason == "mode=comfort"
    assert choice.strategy.share("mood") == 0.0
    assert table.select("casual").strategy.name == "plain"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[strategy]]\nname = 'x'\nshares = { recent = 0.8, recalled = 0.5 }\n", "must not exceed 1"),
        ("[[strategy]]\nname = 'x'\nshares = { window = 0.5 }\n", "unknown memory source"),
        ("[[strategy]]\nname = 'x'\nwhen = { mode = 'angry' }\nshares = {}\n", "unknown mode"),
        ("[[strategy]]\nname = 'x'\nwhen = { signals = ['midnight'] }\nshares = {}\n", "unknown signals"),
        ("[[strategy]\nname = 'x'\n", "not valid TOML"),
        ("", "strategy"),
    ],
)
def test_a_bad_table_is_a_clear_config_error(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=needle) as info:
        StrategyTable.load(path)
    assert str(path) in str(info.value)


def test_a_missing_user_file_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MEMSCHED_STRATEGIES"):
        StrategyTable.load(tmp_path / "nope.toml")
