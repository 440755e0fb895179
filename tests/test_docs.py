"""The pages a user reads (README.md, SECURITY.md, docs/*.md) name only what exists: every
`MEMSCHED_*` variable is a setting (or one of the few read elsewhere, listed here), every setting a
user can set is named somewhere they would look, every `memsched ...` command line shown is a real
command with real options, and every `METHOD /path` is a route of the service."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer.main

from memsched.cli import app as cli_app
from memsched.config import ENV_PREFIX, Config
from memsched.jobs.tasks import TASK_MODULES_ENV

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]

# Variables the pages may name that are not `Config` fields, with who reads them.
OTHER_VARIABLES = {
    TASK_MODULES_ENV: "memsched.jobs.tasks: more job-kind modules to import",
    "MEMSCHED_API_KEY": "memsched chat --server: the key it sends",
    "MEMSCHED_TORCH_SPEC": "scripts/setup: which torch to install",
    "MEMSCHED_VENV": "scripts/setup, serve, test: where the virtualenv is",
}


def page_texts() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        yield page.relative_to(ROOT).as_posix(), page.read_text(encoding="utf-8")


def settings() -> set[str]:
    return {ENV_PREFIX + f.name.upper() for f in fields(Config)}


def named_variables(text: str) -> set[str]:
    """The MEMSCHED_* names in `text`; a table's "`MEMSCHED_X_BASE_URL` / `_API_KEY` / `_MODEL`" names three."""
    names = set(re.findall(r"\bMEMSCHED_[A-Z0-9_]*[A-Z0-9]\b", text))
    for stem, rest in re.findall(r"`(MEMSCHED_[A-Z]+)_BASE_URL`((?: / `_[A-Z_]+`)+)", text):
        names |= {stem + suffix for suffix in ["_BASE_URL", *re.findall(r"`(_[A-Z_]+)`", rest)]}
    return names


def test_every_variable_the_pages_name_is_read() -> None:
    known = settings() | set(OTHER_VARIABLES)
    for page, text in page_texts():
        unknown = {n for n in named_variables(text) if n not in known and not n.startswith("MEMSCHED_TEST_")}
        assert not unknown, f"{page} names variables memsched does not read: {sorted(unknown)}"
        # A prefix such as `MEMSCHED_VISION_*` stands for settings that exist.
        for prefix in re.findall(r"\b(MEMSCHED_[A-Z0-9_]*_)\*", text):
            assert any(k.startswith(prefix) for k in known), f"{page}: no setting starts with {prefix}"


def test_every_setting_is_documented() -> None:
    documented: set[str] = set()
    for _, text in page_texts():
        documented |= named_variables(text)
    missing = (settings() | set(OTHER_VARIABLES)) - documented
    assert not missing, f"settings no page names: {sorted(missing)}"


def commands() -> dict[str, Any]:
    """Every command by its full name ("serve", "eval locomo", "keys add")."""
    out: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, cmd in group.commands.items():
            out[prefix + name] = cmd
            if hasattr(cmd, "commands"):  # a command group
                walk(cmd, prefix + name + " ")

    walk(typer.main.get_command(cli_app), "")
    return out


def shown_command_lines(text: str) -> Iterator[str]:
    """`memsched ...` as the pages show it: inline code, and lines of code blocks."""
    for span in re.findall(r"`([^`\n]+)`", text):
        yield from re.findall(r"(?:^|[\s(])(memsched [a-z].*)", span)
    for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if lang not in ("", "bash", "sh"):
            continue  # Python's `from memsched import ...` is no command line
        for line in block.splitlines():
            line = re.sub(r"\s#.*", "", line)  # a comment after the command
            yield from re.findall(r"(?:^|\s)(memsched [a-z].*)", line)


def test_every_command_line_shown_is_real() -> None:
    known = commands()
    checked = 0
    for page, text in page_texts():
        for line in shown_command_lines(text):
            words = line.split()
            name = words[1]
            if len(words) > 2 and f"{name} {words[2]}" in known:
                name = f"{name} {words[2]}"
            assert name in known, f"{page}: `{line}`: memsched has no command {name!r}"
            options = {opt for p in known[name].params for opt in p.opts + p.secondary_opts}
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
                assert flag in options, f"{page}: `{line}`: `memsched {name}` has no {flag}"
            checked += 1
    assert checked > 30  # the pages show many; a broken pattern would find none


def routes() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Path template -> methods, and -> query parameters: the service's OpenAPI schema, and the
    pages it leaves out of it."""
    from memsched.server.app import create_app

    app = create_app(Config.load(embedders="hash"), warm_up=False)
    methods: dict[str, set[str]] = {}
    params: dict[str, set[str]] = {}
    for path, ops in app.openapi()["paths"].items():
        methods[path] = {m.upper() for m in ops}
        if "GET" in methods[path]:
            methods[path].add("HEAD")  # Starlette answers HEAD wherever it answers GET
        params[path] = {
            p["name"] for op in ops.values() for p in op.get("parameters", ()) if p["in"] == "query"
        }
    for route in app.routes:
        if getattr(route, "path", None) in ("/openapi.json", "/docs", "/ui"):
            methods[route.path] = set(route.methods or ())  # type: ignore[attr-defined]
    return methods, params


# Paths the pages show as relayed to the upstream as they came: not memsched's own routes.
RELAYED = {"/v1/responses/{id}"}


def test_every_route_shown_exists() -> None:
    known, params = routes()
    checked = 0
    for page, text in page_texts():
        shown = re.findall(r"\b(GET|POST|DELETE|HEAD|PUT|PATCH) (/[^\s`),;?]*)(\?[^\s`),;]*)?", text)
        for method, path, query in shown:
            if path in RELAYED:
                continue
            matches = [t for t in known if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", t), path)]
            assert matches, f"{page}: `{method} {path}` is no route of the service"
            template = max(matches, key=lambda t: t.count("/") - t.count("{"))  # the most literal
            assert method in known[template], (
                f"{page}: `{method} {path}`: {template} answers {known[template]}"
            )
            for name in re.findall(r"[?&]([a-z_]+)=", query):
                assert name in params.get(template, set()), f"{page}: `{method} {path}{query}`: no `{name}`"
            checked += 1
    assert checked > 30


@pytest.mark.parametrize("name", sorted(OTHER_VARIABLES))
def test_the_variables_read_elsewhere_are_still_read(name: str) -> None:
    """OTHER_VARIABLES must not outlive the code that reads them."""
    sources = [*(ROOT / "memsched").rglob("*.py"), *(ROOT / "scripts").iterdir()]
    assert any(name in p.read_text(encoding="utf-8", errors="replace") for p in sources if p.is_file())
