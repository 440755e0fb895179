"""Time zone names: IANA names and fixed UTC offsets, and which one a turn is read in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memsched.zones import is_fixed, offset_name, sent_offset, zone_for, zone_info


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        ("UTC+08:00", timedelta(hours=8)),
        ("+05:30", timedelta(hours=5, minutes=30)),
        ("GMT-3", timedelta(hours=-3)),
        ("utc-0930", timedelta(hours=-9, minutes=-30)),
        ("UTC+00:00", timedelta(0)),
    ],
)
def test_fixed_offsets_are_zones(name: str, offset: timedelta) -> None:
    zone = zone_info(name)
    assert zone is not None and zone.utcoffset(None) == offset
    assert is_fixed(name)


@pytest.mark.parametrize("name", ["UTC+15:00", "+08:75", "Mars/Base", "", "08:00"])
def test_what_names_no_zone(name: str) -> None:
    assert zone_info(name) is None


def test_iana_names_are_zones_and_not_fixed() -> None:
    zone = zone_info("America/New_York")
    assert zone is not None and not is_fixed("America/New_York")
    assert datetime(2024, 7, 1, 12, tzinfo=UTC).astimezone(zone).utcoffset() == timedelta(hours=-4)


def test_offset_names() -> None:
    assert offset_name(timedelta(hours=8)) == "UTC+08:00"
    assert offset_name(timedelta(hours=-3, minutes=-30)) == "UTC-03:30"
    assert sent_offset(datetime.fromisoformat("2024-01-01T10:00:00+05:45")) == "UTC+05:45"
    assert sent_offset(datetime.fromisoformat("2024-01-01T10:00:00Z")) is None  # most clients send UTC
    assert sent_offset(datetime(2024, 1, 1)) is None
    assert sent_offset(None) is None


def test_which_zone_a_turn_is_read_in() -> None:
    summer = datetime.fromisoformat("2024-07-01T08:00:00-04:00")
    winter = datetime.fromisoformat("2024-12-01T08:00:00-05:00")
    tokyo = datetime.fromisoformat("2024-12-01T08:00:00+09:00")
    ny = "America/New_York"
    assert zone_for("Asia/Shanghai", ny, tokyo) == "Asia/Shanghai"  # sent wins
    assert zone_for(None, ny, summer) == ny and zone_for(None, ny, winter) == ny  # agrees: kept
    assert zone_for(None, ny, tokyo) == "UTC+09:00"  # contradicts: the offset
    assert zone_for(None, None, tokyo) == "UTC+09:00"
    assert zone_for(None, ny, datetime(2024, 12, 1, tzinfo=UTC)) == ny  # UTC says nothing
    assert zone_for(None, None, None) is None
