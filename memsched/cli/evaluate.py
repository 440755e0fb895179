"""`memsched eval locomo`: retrieval quality on the LoCoMo benchmark, against baselines."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memsched.cli.common import (
    DbOption,
    EmbeddersOption,
    HomeOption,
    app,
    console,
    load_config,
    reports_errors,
)
from memsched.errors import ConfigError, InputError
from memsched.eval import locomo
from memsched.store import is_database_url

eval_app = typer.Typer(help="Evaluate retrieval on benchmarks.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


def _budgets(text: str) -> list[int]:
    try:
        budgets = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise InputError(f"--budget must be comma-separated integers, got {text!r}") from None
    if not budgets or any(b < 100 for b in budgets):
        raise InputError(f"--budget values must be >= 100 tokens, got {text!r}")
    return budgets


@eval_app.command("locomo")
@reports_errors
def eval_locomo(
    data: Path | None = typer.Option(
        None, "--data", help="LoCoMo JSON file; default `<home>/datasets/locomo10.json` (see --download)."
    ),
    budget: str = typer.Option("1000,2000,4000", "--budget", help="Comma-separated token budgets."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
    judge: bool = typer.Option(
        False, "--judge", help="Also answer and grade with the configured LLM (J metric)."
    ),
    limit: int | None = typer.Option(None, "--limit", help="Evaluate only the first N questions."),
    download: bool = typer.Option(
        False,
        "--download",
        help="Fetch the official locomo10.json into `<home>/datasets` first (needs network).",
    ),
    ablation: bool = typer.Option(
        False,
        "--ablation",
        help="Compare memsched's paging stages instead: hybrid only, + bookmarks, + page expansion,"
        " + multi-hop, + speaker focus, + soft terms, + names out of BM25, + question penalty,"
        " + redundancy re-ranking, + names out of the dense and bookmark queries, full memsched (+ the"
        " speaker's next turn follows a head turn), then full + feedback /"
        " contextual vectors / session diversity / entity units / session summary units"
        " (measured, off by default) (offline).",
    ),
    cache: bool = typer.Option(
        True,
        "--cache/--no-cache",
        help="Keep the turns' vectors in `<home>/cache/eval` between runs (keyed by text hash and model id).",
    ),
    database_url: str | None = typer.Option(
        None,
        "--database-url",
        help="Run on this PostgreSQL database (postgresql://…) instead of a temporary SQLite file"
        " \\[env: MEMSCHED_DATABASE_URL].",
    ),
    home: Path | None = HomeOption,
    db: Path | None = DbOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Evidence recall per token budget for memsched and the window, bm25, dense and hybrid baselines,
    overall and per question category."""
    systems = locomo.ABLATION if ablation else locomo.SYSTEMS
    budgets = _budgets(budget)
    cfg = load_config(home=home, embedders=embedders, database_url=database_url)
    if database_url is not None and not is_database_url(database_url):
        raise InputError(f"--database-url must be a postgresql:// URL, got {database_url!r}")
    if data is None:
        data = cfg.home / "datasets" / "locomo10.json"
        if download and not data.exists():
            _download(data)
        if not data.exists():
            raise InputError(
                f"no LoCoMo data at {data}: pass --data FILE, or --download to fetch {locomo.OFFICIAL_URL}"
            )
    if not data.exists():
        raise InputError(f"file not found: {data}")
    scorer = None
    if judge:
        from memsched.eval.judge import Judge
        from memsched.llm.client import client_from_config

        answerer = client_from_config(cfg, "upstream") or client_from_config(cfg, "helper")
        grader = client_from_config(cfg, "helper")
        if answerer is None or grader is None:
            raise ConfigError(
                "--judge needs an LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL"
            )
        scorer = Judge(answerer, grader)

    cache_dir = cfg.home / "cache" / "eval" if cache else None
    if as_json:
        result = locomo.run(
            data, budgets, cfg, db=db, limit=limit, judge=scorer, systems=systems, cache_dir=cache_dir
        )
        print(json.dumps(result))
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task("loading", total=None)

        def report(text: str, done: int, total: int) -> None:
            progress.update(task, description=text, completed=done, total=total)

        result = locomo.run(
            data,
            budgets,
            cfg,
            db=db,
            limit=limit,
            judge=scorer,
            systems=systems,
            progress=report,
            cache_dir=cache_dir,
        )
    table = Table(
        title=f"LoCoMo evidence recall — {result['questions']} questions, {data.name}, on {result['store']}"
    )
    table.add_column("budget", justify="right")
    table.add_column("system")
    for col in ("evidence recall", "answer in context", "avg tokens", "p50 ms", "p95 ms"):
        table.add_column(col, justify="right")
    for b, per in result["results"].items():
        for system, m in per.items():
            table.add_row(
                b,
                f"[bold]{system}[/]" if system == "memsched" else system,
                f"{m['evidence_recall']:.3f}",
                f"{m['answer_in_context']:.3f}",
                f"{m['avg_tokens']:.0f}",
                f"{m['p50_ms']:.1f}",
                f"{m['p95_ms']:.1f}",
            )
        table.add_section()
    console.print(table)
    cats = list(locomo.CATEGORIES.values())
    by_cat = Table(title="evidence recall by question category")
    by_cat.add_column("budget", justify="right")
    by_cat.add_column("system")
    for c in cats:
        by_cat.add_column(c, justify="right")
    for b, per in result["results"].items():
        for system, m in per.items():
            cells = [m["by_category"].get(c, {}).get("evidence_recall") for c in cats]
            by_cat.add_row(b, system, *("-" if v is None else f"{v:.3f}" for v in cells))
        by_cat.add_section()
    console.print(by_cat)
    console.print(f"contexts over their budget: {result['over_budget']}")
    console.print(f"full context: {result['full_context_tokens']:.0f} tokens on average")
    if "judge" in result:
        console.print(
            "LLM judge (J), memsched: " + ", ".join(f"{b}: {v:.3f}" for b, v in result["judge"].items())
        )


def _download(target: Path) -> None:
    import httpx

    target.parent.mkdir(parents=True, exist_ok=True)
    console.print(f"downloading {locomo.OFFICIAL_URL} -> {target}")
    with httpx.stream("GET", locomo.OFFICIAL_URL, follow_redirects=True, timeout=60) as resp:
        resp.raise_for_status()
        tmp = target.with_suffix(".part")
        with tmp.open("wb") as fh:
            for chunk in resp.iter_bytes():
                fh.write(chunk)
        tmp.replace(target)
