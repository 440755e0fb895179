"""One exception hierarchy. Every message says what went wrong and what to do about it."""

from __future__ import annotations


class MemschedError(Exception):
    """Base class of every error memsched raises on purpose."""


class ConfigError(MemschedError):
    """A setting is missing or has a value memsched cannot use."""


class InputError(MemschedError):
    """Input from a user, a file or a request is malformed. The message names the problem."""


class ImportFileError(InputError):
    """A line of an import file is malformed; `line` is its 1-based number."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


class UnknownUserError(InputError):
    """The user id has no stored turns."""

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id
        super().__init__(f"unknown user {user_id!r}: import or record turns for it first")


class UserHasDataError(InputError):
    """An export is restored only into a user with no data; this one (`user`, as named) has `turns`."""

    def __init__(self, message: str, user: str, turns: int) -> None:
        self.user = user
        self.turns = turns
        super().__init__(message)


class BudgetError(InputError):
    """The token budget cannot hold even the system prompt and the new message."""


class EmbedderError(MemschedError):
    """An embedder could not be loaded or failed to embed."""


class LLMError(MemschedError):
    """An LLM call failed (timeout, HTTP error, or a reply that is not what was asked for)."""


class UpstreamStatusError(LLMError):
    """The upstream LLM answered with an HTTP error: its `status`, and its `Retry-After` header as
    sent (seconds or an HTTP date; None when it sent none). The proxy answers a 429 as a 429 with
    that header, and a 400/404/413/422 (a request the upstream rejected, e.g. a parameter out of range)
    with the same status, so an OpenAI SDK neither retries a bad request nor loses a rate limit's wait."""

    def __init__(self, message: str, status: int, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class StoreError(MemschedError):
    """The store refused an operation (schema too new, locked, corrupt)."""
