"""`memsched demo`: the first thing to run — what memsched pages in versus a sliding window."""

from __future__ import annotations

import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memsched.assemble import assemble
from memsched.bookmarks import generate_bookmarks
from memsched.cli.common import EmbeddersOption, app, console, load_config, reports_errors
from memsched.importers import read_jsonl
from memsched.memory import Memory
from memsched.tools import render_index

DEMO_USER = "li-wei"
DEMO_SESSION = "demo-today"


def demo_files() -> tuple[Path, list[dict[str, Any]]]:
    """The shipped sample conversation (JSONL path) and its questions."""
    data = resources.files("memsched").joinpath("data")
    conversation = Path(str(data.joinpath("demo_conversation.jsonl")))
    questions = json.loads(data.joinpath("demo_questions.json").read_text(encoding="utf-8"))
    return conversation, questions


def _highlight(text: str, needles: list[str]) -> Text:
    out = Text(text)
    for needle in needles:
        out.highlight_words([needle], style="bold green")
    return out


@app.command()
@reports_errors
def demo(
    budget: int = typer.Option(1000, "--budget", "-b", help="Token budget of each context."),
    embedders: str | None = EmbeddersOption,
    show_context: bool = typer.Option(
        False, "--show-context", help="Also print each full context memsched built."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Import a bilingual sample companion chat (6 weeks, 387 turns) and ask it later questions.

    Fully offline, in a temporary store. For each question it shows what memsched paged in and
    whether a sliding window of the same token budget would have had the answer.
    """
    conversation, questions = demo_files()
    with tempfile.TemporaryDirectory(prefix="memsched-demo-") as tmp:
        cfg = load_config(home=Path(tmp), embedders=embedders, budget=budget)
        with Memory(cfg) as mem:
            if not as_json:
                console.print(f"[dim]importing the sample conversation into {tmp} and embedding it…[/]")
            for batch in read_jsonl(conversation, DEMO_USER):
                mem.add_many(batch, index=False)
            mem.index(DEMO_USER)
            # What the background P2 jobs would have written: keyword bookmarks per page (rules, no LLM).
            generate_bookmarks(mem, DEMO_USER)
            index = render_index(mem, DEMO_USER, max_tokens=400)
            n_turns = mem.store.turn_count(DEMO_USER)
            window_turns = mem.store.recent_turns(DEMO_USER, 400)
            rows = []
            for q in questions:
                result = mem.context(DEMO_USER, q["question"], session_id=DEMO_SESSION, backfill=False)
                ctx_text = "\n".join(str(m["content"]) for m in result.messages)
                window = assemble(
                    counter=mem.counter,
                    budget=budget,
                    system_prompt=cfg.system_prompt,
                    new_message=q["question"],
                    recalled=[],
                    recent=window_turns,
                    recent_share=1.0,
                    recent_max_turns=len(window_turns),
                )
                win_text = "\n".join(str(m["content"]) for m in window.messages)
                recalled = [t for t in result.assembly.recalled] if result.assembly else []
                evidence = [t for t in recalled if any(e in t.content for e in q["expects"])]
                rows.append(
                    {
                        "question": q["question"],
                        "expects": q["expects"],
                        "memsched_found": [e for e in q["expects"] if e in ctx_text],
                        "window_found": [e for e in q["expects"] if e in win_text],
                        "evidence": [f"[{t.created_at:%m-%d}] {t.label}: {t.content}" for t in evidence],
                        "tokens": result.tokens,
                        "ms": result.trace["timings_ms"]["total"],
                        "context": result.messages,
                    }
                )
    if as_json:
        print(
            json.dumps(
                {"turns": n_turns, "budget": budget, "bookmark_index": index, "questions": rows},
                ensure_ascii=False,
            )
        )
        return
    console.print(
        Panel.fit(
            f"{n_turns} turns over 6 weeks between 李伟 and his companion, Chinese and English.\n"
            f"Each question is asked today, in a new session, with a {budget}-token budget.\n"
            "A sliding window of the same budget holds only the last evening's chat.",
            title="memsched demo",
        )
    )
    if index:
        console.print(
            Panel(
                Text(index),
                title="keyword bookmarks memsched wrote for the 6 weeks (rule-based, no LLM; most important pages)",
                title_align="left",
            )
        )
    table = Table(show_lines=True)
    table.add_column("question", max_width=34)
    table.add_column("memsched paged in", ratio=3)
    table.add_column("memsched", justify="center")
    table.add_column("window", justify="center")
    for row in rows:
        found = f"{len(row['memsched_found'])}/{len(row['expects'])}"
        wfound = f"{len(row['window_found'])}/{len(row['expects'])}"
        paged_in = "\n".join(row["evidence"][:3]) or "—"
        table.add_row(
            row["question"],
            _highlight(paged_in, row["expects"]),
            Text(found, style="green" if row["memsched_found"] else "red"),
            Text(wfound, style="green" if row["window_found"] else "red"),
        )
    console.print(table)
    total = sum(len(r["expects"]) for r in rows)
    ms = sum(len(r["memsched_found"]) for r in rows)
    win = sum(len(r["window_found"]) for r in rows)
    console.print(
        f"facts in context: memsched [bold green]{ms}/{total}[/], sliding window [bold red]{win}/{total}[/]; "
        f"avg {sum(r['tokens'] for r in rows) / len(rows):.0f} tokens, "
        f"avg {sum(r['ms'] for r in rows) / len(rows):.1f} ms per context"
    )
    if show_context:
        for row in rows:
            console.rule(row["question"])
            for m in row["context"]:
                console.print(f"[bold]{m['role']}[/]: ", end="")
                console.print(m["content"], markup=False, highlight=False)
