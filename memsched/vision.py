"""Images in user messages: a `Captioner` describes each one, and the description travels as text.

Messages may carry OpenAI content parts with `image_url` (an http(s) URL or a `data:` URL). memsched
never fetches an image itself (nothing leaves loopback on its own account): the URL goes to the vision
model as it came. The caption is stored in the turn (its content gets an `[image: …]` line, its meta
the caption, the model and a reference to the image that holds no image bytes), so it is searchable,
recalled with the turn, shown to the reply model, and read by the router ("下班了，累死我了" with a
photo of a sunset over a jammed road is a moment for comfort).

Without a vision model the turn says `[image: not described]` and the trace says why; a failing
vision call does the same and never fails the turn. The size and format of inline images are checked
at the HTTP edge (`server/validate.py`: a clear 4xx).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memsched.config import Config
from memsched.errors import LLMError

NOT_DESCRIBED = "[image: not described]"
# The lines `with_captions` adds to a message: what a picture shows, not what the user says.
IMAGE_LINE = re.compile(r"^\[image: [^\n]*\]$", re.M)
NO_VISION_MODEL = "no vision model configured (set MEMSCHED_VISION_MODEL)"
MAX_CAPTION_CHARS = 400


@dataclass(frozen=True, slots=True)
class Image:
    """One image of a message: its URL (http(s) or `data:`) as the client sent it."""

    url: str
    detail: str | None = None

    @property
    def ref(self) -> str:
        """What is kept of the image: an http(s) URL as is; a data URL as its type and a digest."""
        if not self.url.startswith("data:"):
            return self.url
        head = self.url.split(",", 1)[0]
        mime = head[5:].split(";", 1)[0] or "image"
        digest = hashlib.sha256(self.url.encode("utf-8", "replace")).hexdigest()[:16]
        return f"data:{mime};sha256={digest}"

    def part(self) -> dict[str, Any]:
        """The OpenAI content part for this image."""
        spec: dict[str, Any] = {"url": self.url}
        if self.detail:
            spec["detail"] = self.detail
        return {"type": "image_url", "image_url": spec}


@runtime_checkable
class Captioner(Protocol):
    """Describes an image in words. `model_id` names the model in traces."""

    model_id: str

    def describe(self, image: Image, *, hint: str = "") -> str:
        """A short description of `image` (in the language of `hint`, the user's words); raises
        `LLMError` when the model cannot be reached or answers nothing."""
        ...


class OpenAICaptioner:
    """A Captioner on any OpenAI-compatible chat endpoint that takes image parts."""

    def __init__(self, base_url: str, api_key: str | None, model: str, *, timeout: float = 30.0) -> None:
        from memsched.llm.client import OpenAIChatClient

        self.model_id = model
        self._client = OpenAIChatClient(base_url, api_key, model, timeout=timeout)

    def describe(self, image: Image, *, hint: str = "") -> str:
        from memsched.llm.prompts import load

        prompt = load("caption").format(hint=hint.strip()[:300])
        message = {"role": "user", "content": [{"type": "text", "text": prompt}, image.part()]}
        result = self._client.complete([message], purpose="caption", max_tokens=120)
        text = " ".join(result.content.split())
        if not text:
            raise LLMError("the vision model answered with an empty description")
        return text[:MAX_CAPTION_CHARS]


def captioner_from_config(config: Config) -> Captioner | None:
    """The configured vision model as a Captioner, or None (`MEMSCHED_VISION_MODEL` unset)."""
    found = config.vision_llm()
    if found is None:
        return None
    base_url, api_key, model = found
    return OpenAICaptioner(base_url, api_key, model, timeout=config.llm_timeout)


def image_parts(content: Any) -> list[Image]:
    """The images of an OpenAI message content (a list of parts); [] for plain text."""
    if not isinstance(content, list):
        return []
    out = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "image_url":
            continue
        spec = part.get("image_url")
        url = spec.get("url") if isinstance(spec, dict) else spec
        if isinstance(url, str) and url:
            detail = spec.get("detail") if isinstance(spec, dict) else None
            out.append(Image(url, detail if isinstance(detail, str) else None))
    return out


@dataclass(slots=True)
class Caption:
    """What became of one image: its description (None: not described, and `reason` says why)."""

    ref: str
    text: str | None
    model: str | None
    reason: str = ""
    ms: float = 0.0

    @property
    def line(self) -> str:
        return f"[image: {self.text}]" if self.text else NOT_DESCRIBED

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.ref, "caption": self.text, "model": self.model}
        if self.reason:
            out["reason"] = self.reason
        return out


def describe_all(captioner: Captioner | None, images: Sequence[Image], hint: str = "") -> list[Caption]:
    """A caption for each image; never raises (a failure is a `Caption` without text, with its reason)."""
    out = []
    for image in images:
        t0 = time.perf_counter()
        if captioner is None:
            out.append(Caption(image.ref, None, None, NO_VISION_MODEL))
            continue
        try:
            text = captioner.describe(image, hint=hint)
            out.append(Caption(image.ref, text, captioner.model_id, ms=_ms(t0)))
        except LLMError as exc:
            out.append(
                Caption(image.ref, None, captioner.model_id, f"the vision model failed: {exc}", _ms(t0))
            )
    return out


def with_captions(message: str, captions: Sequence[Caption]) -> str:
    """The message as memsched stores and shows it: its text, then one `[image: …]` line per image."""
    lines = [c.line for c in captions]
    return "\n".join([message, *lines]) if message.strip() else "\n".join(lines)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
