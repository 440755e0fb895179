"""memsched: a memory scheduler for long-horizon LLM conversations."""

from memsched.client import AsyncClient, Client, ServiceError
from memsched.config import Config
from memsched.errors import (
    BudgetError,
    ConfigError,
    EmbedderError,
    ImportFileError,
    InputError,
    LLMError,
    MemschedError,
    StoreError,
    UnknownUserError,
)
from memsched.memory import UNSET, ContextResult, Memory, SearchHit
from memsched.model import Page, Session, Turn
from memsched.scheduler import RecordResult, ReplyError, Scheduler, TurnResult

__version__ = "0.1.0"

__all__ = [
    "UNSET",
    "AsyncClient",
    "BudgetError",
    "Client",
    "Config",
    "ConfigError",
    "ContextResult",
    "EmbedderError",
    "ImportFileError",
    "InputError",
    "LLMError",
    "Memory",
    "MemschedError",
    "Page",
    "RecordResult",
    "ReplyError",
    "Scheduler",
    "SearchHit",
    "ServiceError",
    "Session",
    "StoreError",
    "Turn",
    "TurnResult",
    "UnknownUserError",
    "__version__",
]
