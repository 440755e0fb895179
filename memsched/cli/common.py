"""What every command shares: the Typer app, the global options and one-line error reporting."""

from __future__ import annotations

import functools
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from memsched.config import DEFAULT_EMBEDDERS, Config
from memsched.errors import MemschedError

app = typer.Typer(
    name="memsched",
    help="memsched: a memory scheduler for long-horizon LLM conversations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Docstrings are wrapped at 110 columns; markdown joins their lines into paragraphs, so the help
    # wraps at the terminal's width instead of breaking mid-sentence.
    rich_markup_mode="markdown",
)
console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

HomeOption = typer.Option(None, "--home", help="Data directory holding memsched.db \\[env: MEMSCHED_HOME].")
DbOption = typer.Option(
    None, "--db", help="Database file; default `<home>/memsched.db` \\[env: MEMSCHED_DB]."
)
# The store a command works on: a SQLite file or a PostgreSQL URL (a string: a Path would fold the
# URL's "//" into "/" and turn it into a file name).
StoreOption = typer.Option(
    None,
    "--db",
    help="Database file, or a postgresql:// URL; default `<home>/memsched.db`"
    " \\[env: MEMSCHED_DB, or MEMSCHED_DATABASE_URL].",
)
EmbeddersOption = typer.Option(
    None,
    "--embedders",
    help="Comma-separated embedders: minilm, wordllama, gloss, openai, hash"
    f" (default {DEFAULT_EMBEDDERS}) \\[env: MEMSCHED_EMBEDDERS].",
)


def no_blank_id(value: str | None) -> str | None:
    """The callback of an id option (--user, --session): an empty or blank id is refused by the
    flag's name, as the HTTP API refuses one, not stored as a user or session named " "."""
    if value is not None and not value.strip():
        raise typer.BadParameter(f"{value!r} is blank; name the user or session")
    return value


def load_config(**overrides: Any) -> Config:
    """Config from the environment with the command's explicit options on top."""
    return Config.load(**{k: v for k, v in overrides.items() if v is not None})


def fail(message: str, code: int = 1) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def reports_errors(fn: F) -> F:
    """Turn memsched errors (and missing files) into one-line messages and a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemschedError as exc:
            fail(str(exc))
        except FileNotFoundError as exc:
            fail(f"file not found: {exc.filename or exc}")
        except sqlite3.Error as exc:
            # The file opened, then refused a write or a read (made read-only, or damaged, meanwhile).
            fail(database_error(exc))
        except KeyboardInterrupt:
            err_console.print("interrupted")
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


def database_error(exc: sqlite3.Error) -> str:
    """A one-line message for an SQLite error that reached a command, with what to do about it."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return (
            f"the database refused a write ({text}): memsched needs write access to the database"
            " file and to its directory"
        )
    if "malformed" in text or "not a database" in text:
        return f"the database file is damaged ({text}): restore it from a backup"
    return f"database error: {text}"


def existing_file(path: Path) -> Path:
    if not path.exists():
        fail(f"file not found: {path}")
    if path.is_dir():
        fail(f"{path} is a directory, expected a file")
    return path
