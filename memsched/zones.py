"""A user's time zone by name: an IANA name (Asia/Shanghai) or a fixed UTC offset (UTC+08:00).

A client that sends `2024-11-05T07:50:00+08:00` and no zone has still said what the user's clock
reads: 07:50. Such a turn's local time (its late-night check, the date and time in the system prompt,
what "yesterday" means) is read in the offset it was sent with, named `UTC+08:00`, unless the
user's remembered zone gives that same offset then (its daylight-saving rules are kept). A fixed
offset is never remembered as the user's zone: it says nothing of next month's clock.

A `Z` or `+00:00` timestamp says nothing of the user's clock (most clients send UTC), so it names no
zone.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_FIXED = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$", re.I)
_MAX_OFFSET = timedelta(hours=14)  # UTC+14:00 (Kiribati) and UTC-12:00 are the extremes in use


@lru_cache(maxsize=512)
def zone_info(name: str) -> tzinfo | None:
    """The tzinfo `name` means (an IANA name, or `UTC+08:00`, `+05:30`, `GMT-3`), None if none."""
    text = name.strip()
    fixed = _FIXED.match(text)
    if fixed:
        sign, hours, minutes = fixed.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes or 0))
        if delta > _MAX_OFFSET or int(minutes or 0) >= 60:
            return None
        return UTC if not delta else timezone(-delta if sign == "-" else delta, offset_name(delta, sign))
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        return None


def offset_name(delta: timedelta, sign: str | None = None) -> str:
    """`UTC+08:00` for a UTC offset of eight hours (`sign` overrides the sign of `delta`)."""
    negative = delta < timedelta(0) if sign is None else sign == "-"
    minutes = abs(int(delta.total_seconds())) // 60
    return f"UTC{'-' if negative else '+'}{minutes // 60:02d}:{minutes % 60:02d}"


def is_fixed(name: str | None) -> bool:
    """Whether `name` is a fixed UTC offset rather than an IANA zone."""
    return bool(name) and _FIXED.match(str(name).strip()) is not None


def sent_offset(at: datetime | None) -> str | None:
    """The fixed zone of the UTC offset a timestamp was sent with; None for none, Z or +00:00."""
    if at is None or at.tzinfo is None:
        return None
    delta = at.utcoffset()
    if not delta:
        return None
    return offset_name(delta)


def zone_for(sent: str | None, remembered: str | None, at: datetime | None) -> str | None:
    """The zone a turn's local time is read in: the one sent with it, else the user's remembered one
    unless the timestamp's own offset contradicts it, else that offset (see the module docstring)."""
    if sent:
        return sent
    offset = sent_offset(at)
    if offset is None or at is None:
        return remembered
    if remembered:
        zone = zone_info(remembered)
        if zone is not None and at.astimezone(zone).utcoffset() == at.utcoffset():
            return remembered
    return offset
