"""Checks at the HTTP edge that pydantic's types alone do not make: times, time zones and images.

Each raises `InputError` (a 400 naming the field) or `LimitError` (a 413) before anything is stored.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from memsched.errors import InputError
from memsched.model import unstorable
from memsched.server.errors import LimitError
from memsched.zones import zone_info

# A message may be stamped a little ahead of this server's clock (clock skew), not more.
MAX_FUTURE = timedelta(days=1)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # what OpenAI accepts per image
_DATA_URL = re.compile(
    r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[\w-]+=[^;,]*)*)(?P<b64>;base64)?,", re.I
)
# Leading bytes of the image formats vision models take.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)


def request_time(value: str | None, field: str = "timestamp", timezone: str | None = None) -> datetime | None:
    """The aware time of an ISO 8601 timestamp, in the UTC offset it was sent with (the user's clock
    when no zone is sent: `memsched.zones`); None when absent.

    A time without a UTC offset is the user's local time in `timezone` (the request's IANA zone,
    checked first) when one is given, and is refused otherwise (it would be read in the server's
    zone, not the user's); so is one before 1970 or more than a day ahead of the server's clock.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{field}: expected an ISO 8601 time such as 2024-05-08T13:56:00+08:00")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise InputError(
            f"{field}: {value!r} is not an ISO 8601 time such as 2024-05-08T13:56:00+08:00"
        ) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        if timezone is None:
            raise InputError(
                f"{field}: {value!r} has no UTC offset; add one (+08:00) or Z for UTC,"
                " or send the user's timezone with it"
            )
        parsed = parsed.replace(tzinfo=zone_info(check_timezone(timezone) or "UTC"))
    at = parsed
    if at < EARLIEST:
        raise InputError(f"{field}: {value!r} is before 1970")
    if at > datetime.now(UTC) + MAX_FUTURE:
        raise InputError(f"{field}: {value!r} is in the future; send the time the message was written")
    return at


def check_timezone(name: str | None, field: str = "timezone") -> str | None:
    """`name` (without surrounding blanks) if it is an IANA time zone (Asia/Shanghai, Europe/Berlin,
    UTC) or a fixed UTC offset (UTC+08:00); None when absent."""
    if name is None:
        return None
    if not isinstance(name, str) or zone_info(name) is None:
        raise InputError(
            f"{field}: unknown time zone {name!r}; use an IANA name such as Asia/Shanghai"
            " or a UTC offset such as UTC+08:00"
        )
    return name.strip()


def check_unicode(value: Any, where: str = "") -> None:
    """Every string in a decoded JSON body (keys too) must be text a store can keep
    (`memsched.model.unstorable`: no NUL, no unpaired surrogate): an `InputError` naming the field as
    sent (`messages.2.content`) of the first that is not, before anything is stored."""
    if isinstance(value, str):
        problem = unstorable(value)
        if problem is not None:
            raise InputError(f"{where or 'body'}: {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_unicode(key, where)
            check_unicode(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_unicode(item, f"{where}.{i}" if where else str(i))


def check_id(value: str | None, field: str) -> str | None:
    """An id a request names (a user, a session) as sent; None when absent. An empty or blank one is
    a 400 naming `field`, not the default it would otherwise fall back to: a client that sends
    `session_id: ""` has lost its id, and its turns would land in another conversation."""
    if value is not None and not value.strip():
        raise InputError(f"{field}: {value!r} is blank; send an id, or leave the field out for the default")
    return value


def chat_ids(user: str | None, meta: Any, safety_identifier: str | None = None) -> tuple[str | None, str]:
    """(user, session id) of a chat or Responses API request: the top-level `user`, else
    `metadata.user`, else `safety_identifier` (OpenAI's successor to `user`, which its newer SDKs
    and docs send instead); `metadata.session_id`, else "default". Blank ones are refused (`check_id`)."""
    check_id(user, "user")
    meta_user = check_id(getattr(meta, "user", None), "metadata.user")
    check_id(safety_identifier, "safety_identifier")
    session = check_id(getattr(meta, "session_id", None), "metadata.session_id")
    named = next((u for u in (user, meta_user, safety_identifier) if u is not None), None)
    return named, (session if session is not None else "default")


# Content parts memsched reads (chat's and the Responses API's): text, and images it describes.
READABLE_PARTS = frozenset({"text", "image_url", "input_text", "input_image"})


def empty_message(field: str, content: Any) -> InputError:
    """The error for a last user message with nothing memsched can read; names the parts it had when
    none of them is text or an image (an audio or file part alone)."""
    kinds = (
        {str(p.get("type")) for p in content if isinstance(p, dict)} if isinstance(content, list) else set()
    )
    if kinds - READABLE_PARTS:
        named = ", ".join(repr(k) for k in sorted(kinds))
        return InputError(
            f"{field}: the last user message has no text or image to read (its parts are of type"
            f" {named}; memsched reads text and image parts)"
        )
    return InputError(f"{field}: the last user message is empty")


def check_images(
    messages: list[dict[str, Any]], max_bytes: int = MAX_IMAGE_BYTES, field: str = "messages"
) -> None:
    """Inline images (`data:` URLs) must decode and be PNG, JPEG, GIF or WebP within `max_bytes`.
    `field` names the list in errors (`messages`; the Responses API's `input`).

    Remote image URLs must be http(s) and are left to the vision model (memsched fetches nothing).
    """
    for i, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            where = f"{field}.{i}.content.{j}.image_url"
            spec = part.get("image_url")
            url = spec.get("url") if isinstance(spec, dict) else spec
            if not isinstance(url, str) or not url:
                raise InputError(f"{where}: an image part needs a url")
            if not url.startswith("data:"):
                if not re.match(r"https?://[^\s/]", url, re.I):
                    # file:, ftp:, a bare path: the vision model (and a vision upstream) could not
                    # fetch it, and the turn would be stored with a caption of nothing.
                    raise InputError(
                        f"{where}: an image URL must be http(s) or a data: URL, not {url[:40]!r}"
                    )
                continue
            m = _DATA_URL.match(url)
            if m is None or not m.group("b64"):
                raise InputError(
                    f"{where}: an inline image must be a base64 data URL (data:image/png;base64,...)"
                )
            payload = url[m.end() :]
            if len(payload) * 3 // 4 > max_bytes:
                raise LimitError(f"{where}: the image is over {max_bytes} bytes", "image_too_large")
            try:
                data = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                raise InputError(f"{where}: the image's base64 data does not decode") from None
            if not _is_image(data):
                raise InputError(f"{where}: the data is not a PNG, JPEG, GIF or WebP image")


def _is_image(data: bytes) -> bool:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return True
    return any(data.startswith(magic) for magic, _ in _MAGIC)
