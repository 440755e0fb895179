"""Long-horizon ASSISTANT scenarios through `memsched serve`'s scheduler alone, as an app drives it.

Starts `memsched serve` (a subprocess on a fresh home, the default embedders, loopback; FakeOpenAI
is the configured upstream, used only by memsched's own background helpers) and plays two histories
of a user working with an assistant, ~2.5 months each, one in English (a software project, a
conference trip, two long side deep-dives: the Raft paper and learning Rust) and one in Chinese (a
master's thesis, a conference trip, long deep-dives on option pricing). Every turn goes through
`POST /v1/context` (`record: true`, explicit `timestamp`/`timezone`, a `budget`) for the user's
message and `POST /v1/turns` for the assistant's reply, as an app with its own LLM does. The
assistant's replies are scripted: in assistant use much of what is worth remembering is said by the
assistant (a root cause, a suggested number).

At chosen points the user asks what a person would ask ("what did we decide about the database?",
"why did we reject Mongo again?", "remind me of the deadline" after it moved, a paraphrase, a
question naming a date, 上次说的那个方案为什么被否了？) and the check reads the messages
`/v1/context` returned (all but the new message): the turns a person would need are there, the
context is within the budget asked for, and the unrelated deep-dives do not flood it. Each check's
expectation was written before the script was first run; one check per language was added after
it (the app's persona, sent as `system_prompt`, starts the system message: before session 35
`/v1/context` had no way to take it). The histories were written for this script (no test fixture,
no LoCoMo text).

    python benchmarks/assistant_scenarios.py [--only en|zh] [--out DIR] [-v] [--keep]

Prints PASS/FAIL per check and the count; `--out` keeps each checked context as text.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from companion_scenarios import Check, play, report, start

from memsched.testing import FakeOpenAI
from memsched.text.tokens import get_counter

BUDGET = 1500  # tokens every checked context is asked to fit
# The app's own instructions, sent with every /v1/context call (`system_prompt`, since session 35).
PERSONA = "You are Ada, a precise assistant for the user's projects. Answer from the notes when they help."
COUNTER = get_counter("o200k_base")  # memsched serve's default tokenizer


@dataclass
class Run:
    base: str
    verbose: bool = False
    out: Path | None = None
    checks: list[Check] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.base, timeout=120)

    def context(
        self, user: str, session: str, at: datetime, tz: str, text: str, budget: int | None = None
    ) -> list[dict[str, Any]]:
        body: dict[str, Any] = {
            "user": user,
            "message": text,
            "session_id": session,
            "record": True,
            "timestamp": at.isoformat(),
            "timezone": tz,
            "system_prompt": PERSONA,
        }
        if budget is not None:
            body["budget"] = budget
        r = self.http.post("/v1/context", json=body)
        r.raise_for_status()
        if self.verbose:
            print(f"  [{at:%m-%d %H:%M}] user: {text[:70]}")
        return list(r.json()["messages"])

    def reply(self, user: str, session: str, at: datetime, tz: str, text: str) -> None:
        r = self.http.post(
            "/v1/turns",
            json={
                "user": user,
                "session_id": session,
                "role": "assistant",
                "content": text,
                "timestamp": at.isoformat(),
                "timezone": tz,
            },
        )
        r.raise_for_status()

    def wait_jobs(self, timeout: float = 300) -> None:
        """Let the background jobs (bookmarks, summaries, embeddings) catch up: days pass between
        sessions in the histories, seconds in the replay."""
        end = time.time() + timeout
        while time.time() < end:
            jobs = self.http.get("/v1/jobs", timeout=30).json()
            rows = jobs.get("jobs", jobs) if isinstance(jobs, dict) else jobs
            if not [j for j in rows if j.get("state") in ("pending", "running", "queued")]:
                return
            time.sleep(1)

    def check(self, scenario: str, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(scenario, name, bool(ok), detail))
        print(
            ("PASS" if ok else "FAIL") + f" {scenario}: {name}" + ("" if ok else f"\n      {detail[:2500]}")
        )


def shown(messages: list[dict[str, Any]]) -> str:
    """The context: every message but the new one (the last)."""
    return "\n".join(f"<{m['role']}> {m.get('content')}" for m in messages[:-1])


Turns = list[tuple[str, str]]  # (role, text) in order; role "u" or "a"


class History:
    """One user's history, played session by session; checks ask in sessions of their own."""

    def __init__(self, run: Run, scenario: str, user: str, tz: str, d0: datetime) -> None:
        self.run, self.S, self.user, self.tz, self.d0 = run, scenario, user, tz, d0
        self.last_system = ""

    def persona_check(self) -> None:
        """Added after the first run (not one of the checks as written): the context an assistant
        app gets starts with its own instructions, not memsched's default companion persona."""
        ok = self.last_system.startswith(PERSONA) and "companion" not in self.last_system.split("\n")[0]
        self.run.check(self.S, "the app's persona starts the system message", ok, self.last_system[:300])

    def at(self, day: int, hh: int, mm: int = 0) -> datetime:
        return (self.d0 + timedelta(days=day - 1)).replace(hour=hh, minute=mm)

    def session(self, day: int, hh: int, turns: Turns, sid: str | None = None) -> None:
        sid = sid or f"{self.at(day, hh):%Y-%m-%d-%H}"
        t = self.at(day, hh)
        for role, text in turns:
            if role == "u":
                self.run.context(self.user, sid, t, self.tz, text)
            else:
                self.run.reply(self.user, sid, t, self.tz, text)
            t += timedelta(minutes=2)

    def ask(
        self,
        day: int,
        hh: int,
        question: str,
        tag: str,
        *,
        before: Turns | None = None,
        budget: int = BUDGET,
    ) -> str:
        """Ask `question` in a new session (after the turns `before` in it), check the budget and
        return the context shown with it."""
        sid = f"q-{tag}"
        before = before or []
        self.session(day, hh, before, sid=sid)
        t = self.at(day, hh) + timedelta(minutes=2 * len(before) + 1)
        msgs = self.run.context(self.user, sid, t, self.tz, question, budget=budget)
        self.run.reply(
            self.user, sid, t + timedelta(minutes=1), self.tz, "Let me look at what we have on that."
        )
        text = shown(msgs)
        self.last_system = str(msgs[0].get("content"))
        if self.run.out is not None:
            self.run.out.mkdir(parents=True, exist_ok=True)
            (self.run.out / f"{self.S}-{tag}.txt").write_text(
                "\n".join(f"<{m['role']}> {m.get('content')}" for m in msgs), encoding="utf-8"
            )
        used = COUNTER.messages_tokens(msgs)
        self.run.check(self.S, f"{tag}: within the budget ({used} <= {budget})", used <= budget, "")
        return text

    def expect(self, tag: str, what: str, ctx: str, *needles: str, any_of: bool = False) -> None:
        found = [n for n in needles if n in ctx]
        ok = bool(found) if any_of else len(found) == len(needles)
        missing = [n for n in needles if n not in ctx]
        self.run.check(self.S, f"{tag}: {what}", ok, f"missing {missing}\n--- context ---\n{ctx}")

    def no_flood(self, tag: str, ctx: str, markers: Sequence[str], limit: int = 2) -> None:
        """At most `limit` lines of the context come from the unrelated deep-dives (a line holding
        any of `markers`, words only those sessions use)."""
        lines = [ln for ln in ctx.splitlines() if any(m in ln for m in markers)]
        self.run.check(
            self.S,
            f"{tag}: at most {limit} deep-dive lines ({len(lines)})",
            len(lines) <= limit,
            "\n".join(ln[:160] for ln in lines),
        )


# ---------------------------------------------------------------- English: a software project

RAFT_1 = [
    (
        "u",
        "Side topic: our reading group is doing the Raft paper this month. Can you walk me through why Raft splits consensus into leader election, log replication and safety?",
    ),
    (
        "a",
        "Raft was designed to be understandable, so Ongaro and Ousterhout decomposed the problem. Leader election picks one server per term to accept client commands; log replication has the leader append entries and send AppendEntries RPCs to followers until a majority stores them; safety is the set of restrictions (the election restriction, the commit rule for entries from earlier terms) that guarantee every server applies the same commands in the same order. Paxos mixes all three, which is why it is notoriously hard to implement.",
    ),
    ("u", "And what exactly is a term? Is it like a logical clock?"),
    (
        "a",
        "Yes, terms act as a logical clock. Each term starts with an election; a candidate increments its currentTerm and asks for votes with RequestVote. If a server sees a higher term in any RPC, it updates its term and steps down to follower. Stale leaders are detected this way: their AppendEntries carry an old term and followers reject them. At most one leader can win a given term because each server votes once per term and a candidate needs a majority.",
    ),
]
RAFT_2 = [
    ("u", "Raft reading group again. How does the leader decide an entry is committed?"),
    (
        "a",
        "An entry is committed once the leader that created it has replicated it on a majority of servers. The leader tracks matchIndex for each follower, and commitIndex is the highest N such that a majority have matchIndex >= N and log[N].term == currentTerm. That last condition matters: a leader never commits an entry from a previous term by counting replicas, only indirectly by committing one of its own term on top, which is the Figure 8 scenario in the paper.",
    ),
    ("u", "Figure 8 confused everyone in the group. Can you explain it step by step?"),
    (
        "a",
        "In Figure 8, S1 is leader in term 2 and replicates entry index 2 to S2 only, then crashes. S5 wins term 3 with votes from S3 and S4 and writes a different entry at index 2, then crashes. S1 comes back as leader in term 4 and replicates its old term-2 entry to S3, so it is now on a majority. If S1 committed it then and crashed, S5 could still win term 5 (its last log term 3 is newer) and overwrite index 2 everywhere, erasing a committed entry. The rule that only current-term entries are committed by counting prevents this.",
    ),
]
RAFT_3 = [
    ("u", "More Raft. Why are the election timeouts randomized between 150 and 300 ms?"),
    (
        "a",
        "Randomized timeouts make split votes rare: if every follower timed out together, they would all become candidates in the same term, split the vote and retry forever. With a random timeout one server usually times out first, wins the election and sends heartbeats before the others time out. The paper's rule of thumb is broadcastTime << electionTimeout << MTBF: the heartbeat round trip must be an order of magnitude below the election timeout, which must be far below the mean time between server failures.",
    ),
    (
        "u",
        "What about a partitioned follower that keeps incrementing its term and then disrupts the cluster when it rejoins?",
    ),
    (
        "a",
        "That is the disruptive server problem. The fix from Ongaro's thesis is PreVote: before incrementing its term, a would-be candidate asks whether it could win; peers that have heard from a leader within the minimum election timeout refuse. etcd and most production Raft libraries enable PreVote and CheckQuorum for exactly this reason.",
    ),
]
RAFT_4 = [
    ("u", "Last Raft session for the group: how do snapshots and log compaction work?"),
    (
        "a",
        "Each server snapshots its state machine independently once the log passes a size threshold, recording lastIncludedIndex and lastIncludedTerm, and discards the log prefix. When a follower lags behind the leader's first retained entry, the leader sends InstallSnapshot RPCs in chunks; the follower replaces its state with the snapshot and keeps any log entries that follow lastIncludedIndex if they match. Copy-on-write (fork in Redis-style systems, or persistent data structures) lets the snapshot be written without stopping the state machine.",
    ),
    ("u", "And membership changes? Joint consensus looked scary."),
    (
        "a",
        "Joint consensus goes through an intermediate configuration C_old,new in which decisions need majorities of both the old and the new sets, so there is no moment where two disjoint majorities could elect two leaders. Most implementations instead use single-server changes, adding or removing one server at a time, because any two majorities of consecutive configurations overlap; that is simpler, but it has a known bug around leader changes that needs a no-op entry at the start of each term.",
    ),
]
RUST_1 = [
    (
        "u",
        "Switching gears: I'm learning Rust on weekends. Lifetimes make no sense to me yet. Why does the borrow checker reject returning a reference to a local String?",
    ),
    (
        "a",
        "Because the String is dropped at the end of the function, so a reference to it would dangle. Lifetimes are the compiler's names for how long a borrow is valid; `fn longest<'a>(x: &'a str, y: &'a str) -> &'a str` says the result lives no longer than the shorter of the two inputs. You cannot return a borrow of a local because no caller-visible lifetime covers it; return an owned String instead, or take the buffer as a parameter.",
    ),
    ("u", "So what is the difference between &mut and a plain & borrow in practice?"),
    (
        "a",
        "At any point you can have either many shared borrows (&T) or exactly one mutable borrow (&mut T), never both. That rule is what rules out data races at compile time: two threads cannot both hold &mut to the same value. Interior mutability types like RefCell and Mutex move that check to run time, RefCell panicking on a double borrow and Mutex blocking.",
    ),
]
RUST_2 = [
    ("u", "Rust again. How does async work under the hood with Tokio? Is a future a thread?"),
    (
        "a",
        "No, a future is a state machine the compiler generates from your async fn; each .await is a point where it can return Poll::Pending. Tokio's executor polls futures on a small pool of worker threads with work stealing, and the reactor (epoll/kqueue) wakes a task through its Waker when its socket is ready. That is why blocking calls inside async code stall a whole worker thread: use spawn_blocking for CPU-heavy or blocking I/O work.",
    ),
    ("u", "And why do I keep seeing Pin<Box<dyn Future>>?"),
    (
        "a",
        "Async state machines can hold references into themselves across an .await, so moving them in memory would break those pointers. Pin promises the value will not move again. Box<dyn Future> erases the concrete type so different futures can share one type, for example in a Vec of tasks or a recursive async fn, and Pin<Box<...>> combines the two.",
    ),
]
RUST_3 = [
    ("u", "Weekend Rust: trait objects versus generics, when do I pick which?"),
    (
        "a",
        "Generics are monomorphized: the compiler emits a copy of the function per concrete type, fast and inlinable but bigger binaries. Trait objects (&dyn Trait, Box<dyn Trait>) use a vtable and dynamic dispatch, one copy of the code and heterogeneous collections, at the cost of an indirect call and object safety rules (no generic methods, no Self by value).",
    ),
    ("u", "What makes a trait not object safe, concretely?"),
    (
        "a",
        "A method that returns Self, a method with its own type parameters, or an associated const all prevent building a vtable, because the caller of a dyn Trait does not know the concrete size or type. You can exclude such methods with `where Self: Sized`, which keeps the rest of the trait usable as an object.",
    ),
]
DEEP_EN = (
    "Raft",
    "RequestVote",
    "AppendEntries",
    "borrow",
    "lifetime",
    "Tokio",
    "vtable",
    "PreVote",
    "Figure 8",
    "InstallSnapshot",
    "Rust",
)


def en(run: Run) -> None:
    tz = "America/Chicago"
    h = History(run, "en", f"dana-{uuid.uuid4().hex[:6]}", tz, datetime(2026, 1, 5, tzinfo=ZoneInfo(tz)))
    s = h.session
    s(
        1,
        20,
        [
            (
                "u",
                "Starting a new side project today: Ledgerly, an invoicing app for freelancers. Backend in Python with FastAPI, frontend in React. Can you help me plan the first milestones?",
            ),
            (
                "a",
                "Sure. A sensible first cut: 1) data model for clients, invoices, line items and payments; 2) sign-in; 3) PDF generation of invoices; 4) card payments; 5) a small reporting dashboard. Pick the database before anything else, since the data model depends on it.",
            ),
        ],
    )
    s(
        3,
        21,
        [
            (
                "u",
                "Okay, database time. I was leaning towards MongoDB because I used it at my last job. Thoughts?",
            ),
            (
                "a",
                "For invoicing I'd push back on Mongo. Recording a payment touches the invoice, the payment row and the client balance at once, so you want multi-row ACID transactions, and your reports (revenue per client per month, overdue invoices) are joins and GROUP BYs. PostgreSQL gives you both out of the box; flexible documents don't buy much when the schema is this regular.",
            ),
            (
                "u",
                "Fair. Decision: we go with PostgreSQL, not MongoDB. Transactions across invoice, payment and balance plus relational reporting were the deciding reasons. I'll use SQLAlchemy 2.0 with Alembic for migrations.",
            ),
            (
                "a",
                "Good call. Keep money in numeric(12,2) columns, never floats, and give every table created_at and updated_at from day one.",
            ),
        ],
    )
    s(
        4,
        20,
        [
            (
                "u",
                "Sketching tables: clients, invoices, invoice_lines, payments. Should the invoice total be stored or computed?",
            ),
            (
                "a",
                "Store it, computed once when the invoice is issued, and lock issued invoices against edits; recompute only for drafts. Auditors expect an issued invoice never to change.",
            ),
        ],
    )
    s(
        6,
        19,
        [
            ("u", "Where should we host the first version? I want something I don't have to babysit."),
            (
                "a",
                "For a demo-stage app Heroku is the least work: git push deploys, a managed Postgres add-on, and a worker dyno for background jobs.",
            ),
            ("u", "Let's deploy on Heroku for now, with Heroku Postgres. Fastest path to a demo."),
        ],
    )
    s(8, 21, RAFT_1)
    s(
        10,
        20,
        [
            ("u", "How should users sign in? I really don't want to store passwords."),
            (
                "a",
                "Passwordless magic links: email a one-time link with a signed token that expires in 15 minutes, sent through a transactional provider such as Postmark. No password storage, no reset flow.",
            ),
            ("u", "Magic links via Postmark it is."),
        ],
    )
    s(
        12,
        22,
        [
            (
                "u",
                "The invoice PDF worker on staging keeps growing: RSS goes from 150 MB to 2 GB over a day, then it gets OOM-killed. Any idea?",
            ),
            (
                "a",
                "Let's measure before guessing: enable tracemalloc in the worker, take a snapshot every 100 jobs and compare the top allocation sites between snapshots. Linear growth per job usually means something keyed per job is kept forever.",
            ),
            (
                "u",
                "Found it with tracemalloc! Root cause: render_invoice() created a new WeasyPrint FontConfiguration for every invoice and stored it in a module-level dict keyed by invoice id that was never evicted, so every invoice leaked its fonts.",
            ),
            (
                "a",
                "That explains the linear growth. Fix: create one FontConfiguration when the worker starts and reuse it for every render, and delete the dict entirely.",
            ),
            (
                "u",
                "Fixed: one shared FontConfiguration per worker process, dict removed. RSS stays flat at 180 MB after 10k invoices.",
            ),
        ],
    )
    s(14, 21, RAFT_2)
    s(
        16,
        20,
        [
            ("u", "We need background jobs for PDFs and emails. Celery or something lighter?"),
            (
                "a",
                "Dramatiq is a good lighter option: simpler API than Celery, sane retries with backoff by default, and Redis or RabbitMQ as broker. Celery's flexibility mostly costs you configuration.",
            ),
            ("u", "Going with Dramatiq on a Redis broker, not Celery."),
        ],
    )
    s(
        18,
        19,
        [
            (
                "u",
                "Timeline check. The investor demo is on February 20, and the public beta launch deadline is March 31.",
            ),
            (
                "a",
                "Noted: demo February 20, public beta March 31. That leaves about six weeks between them for payments and polish.",
            ),
        ],
    )
    s(
        20,
        20,
        [
            ("u", "Frontend question: the invoice list table looks cramped on mobile."),
            (
                "a",
                "Collapse it into cards below the md breakpoint: client name and amount on the first line, status pill and due date on the second. Tailwind's hidden md:table-cell handles the columns you drop.",
            ),
        ],
    )
    s(22, 21, RUST_1)
    s(
        24,
        20,
        [
            ("u", "We're opening a public API for integrations. How should I rate limit it?"),
            (
                "a",
                "I'd suggest a token bucket per API key stored in Redis: 60 requests per minute with bursts of up to 20, and a 429 with a Retry-After header when the bucket is empty. Keep a separate, stricter bucket of 5 per minute for the invoice-sending endpoint.",
            ),
            ("u", "Sounds right, I'll implement that."),
        ],
    )
    s(
        26,
        21,
        [
            ("u", "Starting the Stripe integration. Checkout sessions or Payment Intents directly?"),
            (
                "a",
                "Checkout sessions for now: Stripe hosts the payment page, handles 3-D Secure, and you only listen to the checkout.session.completed webhook to mark the invoice paid.",
            ),
        ],
    )
    s(28, 22, RAFT_3)
    q = "Remind me of the deadline."
    ctx = h.ask(30, 9, q, "deadline-early")
    h.expect("deadline-early", "the March 31 beta deadline is shown", ctx, "March 31")
    s(
        30,
        20,
        [
            ("u", "Tests: how do I run them against a real Postgres instead of SQLite?"),
            (
                "a",
                "Use testcontainers: a session-scoped pytest fixture starts a postgres:16 container, runs the Alembic migrations once, and each test runs inside a transaction that is rolled back at teardown.",
            ),
        ],
    )
    s(
        33,
        19,
        [
            (
                "u",
                "Personal planning: my talk got accepted at a conference in Lisbon, April 23 to 25! I booked the TAP flight from Chicago on April 21 and four nights at the Memmo Alfama hotel.",
            ),
            (
                "a",
                "Congratulations! Memmo Alfama is right in the old town, a short walk down to the river. Arriving on the 22nd gives you a day to adjust before the conference.",
            ),
        ],
    )
    s(35, 21, RUST_2)
    s(
        37,
        22,
        [
            ("u", "Bug: some customers got their invoice marked paid twice and we sent two receipts."),
            (
                "a",
                "Stripe retries webhooks until it gets a 2xx, and you probably timed out once. Store each Stripe event id in a processed_events table with a unique constraint and skip events you've already seen; that makes the handler idempotent.",
            ),
            (
                "u",
                "That was it, the handler took 12 seconds because it rendered the receipt inline. Added the processed_events table and moved the receipt to a Dramatiq job.",
            ),
        ],
    )
    s(
        39,
        20,
        [
            (
                "u",
                "Bad news: Stripe's account review for live payments takes about three weeks. We're moving the beta launch from March 31 to April 14. The investor demo stays on February 20.",
            ),
            (
                "a",
                "Understood: beta launch is now April 14, demo still February 20. Use the extra two weeks for the onboarding flow.",
            ),
        ],
    )
    s(
        41,
        21,
        [
            ("u", "Demo prep: what should the five-minute demo show?"),
            (
                "a",
                "One story end to end: create a client, issue an invoice, open the emailed PDF, pay it with a test card, and watch the dashboard's revenue update. Skip settings pages entirely.",
            ),
        ],
    )
    s(
        47,
        18,
        [
            ("u", "The investor demo went really well today! They liked the payment flow most."),
            ("a", "That's great news. Write down their questions tonight while they're fresh."),
        ],
    )
    s(49, 21, RAFT_4)
    s(
        51,
        20,
        [
            (
                "u",
                "Heroku's worker dyno pricing is killing us now that PDFs and emails run all day. I'm moving everything to Fly.io: app, Dramatiq workers and Postgres on Fly.",
            ),
            (
                "a",
                "Fly.io makes sense at this size: machines are billed per second and workers can scale to zero at night. Move the database first, with a read-only window during the dump and restore.",
            ),
        ],
    )
    s(53, 21, RUST_3)
    s(
        55,
        19,
        [
            (
                "u",
                "Conference prep: my talk title is 'Boring invoices, exciting Postgres'. I'll also do a day trip to Sintra on April 26 before flying home.",
            ),
            (
                "a",
                "Nice title. For Sintra take the train from Rossio station early, Pena Palace gets crowded by 11.",
            ),
        ],
    )
    s(
        58,
        20,
        [
            ("u", "The monthly revenue report takes 4 seconds on the demo data."),
            (
                "a",
                "Run EXPLAIN ANALYZE; I'd bet on a sequential scan on invoices. A composite index on invoices(client_id, issued_at) should serve the per-client monthly grouping.",
            ),
            ("u", "Yes, seq scan. With the composite index it's 40 ms now."),
        ],
    )
    s(
        60,
        21,
        [
            ("u", "Should we switch the public API to GraphQL? A friend swears by it."),
            (
                "a",
                "I wouldn't: your API has a handful of resources with stable shapes, REST with an OpenAPI spec already generates client SDKs, and GraphQL would complicate rate limiting and caching.",
            ),
            ("u", "Agreed, we're rejecting GraphQL and staying with REST plus OpenAPI."),
        ],
    )
    s(
        62,
        20,
        [
            ("u", "Email templates for invoice reminders: what tone?"),
            (
                "a",
                "Friendly and short: the amount, the due date, a pay button, and one line thanking them. Send the first reminder three days after the due date, not before.",
            ),
        ],
    )
    s(65, 22, RAFT_1[:2] + RAFT_2[2:])
    s(
        68,
        21,
        [
            ("u", "Long Rust evening: can you explain how Send and Sync relate?"),
            (
                "a",
                "A type is Send if it can be moved to another thread and Sync if &T can be shared between threads; T is Sync exactly when &T is Send. Rc is neither because its reference count is not atomic; Arc<T> is Send and Sync when T is Send and Sync, and Mutex<T> turns a Send T into something Sync. The borrow checker plus these auto traits is how Rust rules out data races at compile time, and the Tokio runtime requires spawned futures to be Send.",
            ),
        ],
    )
    s(70, 22, RAFT_3[:2] + RAFT_4[2:])
    run.wait_jobs()

    ctx = h.ask(72, 9, "What did we decide about the database?", "db-decision")
    h.expect("db-decision", "the PostgreSQL decision is shown", ctx, "we go with PostgreSQL")
    h.no_flood("db-decision", ctx, DEEP_EN)

    ctx = h.ask(72, 14, "Why did we reject Mongo again?", "why-not-mongo")
    h.expect("why-not-mongo", "the reasons (transactions, reporting joins) are shown", ctx, "transactions")
    h.no_flood("why-not-mongo", ctx, DEEP_EN)

    ctx = h.ask(73, 10, "What was the fix for that memory leak?", "leak-fix")
    h.expect("leak-fix", "the root cause is shown", ctx, "module-level dict")
    h.expect(
        "leak-fix",
        "the fix is shown",
        ctx,
        "one shared FontConfiguration",
        "reuse it for every render",
        any_of=True,
    )
    h.no_flood("leak-fix", ctx, DEEP_EN)

    ctx = h.ask(73, 15, "Remind me of the deadline.", "deadline-late")
    h.expect("deadline-late", "the revised deadline (April 14) is shown", ctx, "April 14")
    h.expect(
        "deadline-late",
        "old and new deadline both shown (the change is visible)",
        ctx,
        "March 31",
        "April 14",
    )
    h.no_flood("deadline-late", ctx, DEEP_EN)

    ctx = h.ask(74, 11, "Where are we hosting the app these days?", "hosting")
    h.expect("hosting", "the move to Fly.io is shown", ctx, "Fly.io")

    ctx = h.ask(74, 16, "What made the invoice printing job eat all the RAM back then?", "leak-paraphrase")
    h.expect("leak-paraphrase", "paraphrase: the font-cache root cause is shown", ctx, "module-level dict")

    ctx = h.ask(75, 10, "What were we working on on January 16?", "date-jan16")
    h.expect("date-jan16", "the Jan 16 session (the PDF worker leak) is shown", ctx, "tracemalloc")

    ctx = h.ask(75, 15, "What rate limit numbers did you suggest for the API?", "rate-limit")
    h.expect(
        "rate-limit", "the assistant's suggestion (60/min, burst 20) is shown", ctx, "60 requests per minute"
    )

    ctx = h.ask(76, 10, "Which library did we pick for background jobs?", "jobs-lib")
    h.expect(
        "jobs-lib", "Dramatiq is shown", ctx, "Dramatiq on a Redis broker", "Dramatiq is a good", any_of=True
    )

    ctx = h.ask(76, 15, "Which hotel did I book for the conference trip?", "hotel")
    h.expect("hotel", "the Memmo Alfama booking is shown", ctx, "Memmo Alfama")

    ctx = h.ask(77, 10, "Why did we say no to GraphQL?", "graphql")
    h.expect("graphql", "the GraphQL rejection and its reasons are shown", ctx, "handful of resources")

    ctx = h.ask(77, 15, "How did we fix the double payment receipts?", "double-paid")
    h.expect("double-paid", "the idempotent webhook fix is shown", ctx, "processed_events")
    h.no_flood("double-paid", ctx, DEEP_EN)
    h.persona_check()


# ---------------------------------------------------------------- Chinese: a master's thesis

OPT_1 = [
    ("u", "换个话题放松一下：我最近在自学期权定价，Black-Scholes 公式到底是怎么推出来的？"),
    (
        "a",
        "核心思路是无套利复制：用股票和无风险债券构造一个组合，让它在每个瞬间都和期权的价值变化相同（Delta 对冲）。股价服从几何布朗运动，用伊藤引理写出期权价值的微分，把随机项对冲掉以后，组合是无风险的，只能赚无风险利率，于是得到 Black-Scholes 偏微分方程。用欧式看涨期权的边界条件求解，就得到 C = S·N(d1) − K·e^(−rT)·N(d2)。值得注意的是股票的期望收益率在推导中消失了，这就是风险中性定价。",
    ),
    ("u", "N(d1) 和 N(d2) 分别是什么意思？"),
    (
        "a",
        "N(d2) 是风险中性测度下期权到期时处于实值的概率；N(d1) 是 Delta，也就是期权价格对标的价格的敏感度，同时可以理解为以股票为计价单位的测度下到期实值的概率。两者的差别来自测度变换。",
    ),
]
OPT_2 = [
    ("u", "继续期权：希腊字母里 Gamma 和 Vega 在实际交易中怎么用？"),
    (
        "a",
        "Gamma 是 Delta 对标的价格的二阶敏感度，平值且临近到期的期权 Gamma 最大，做市商卖出期权就是短 Gamma，标的大幅波动时需要频繁调整对冲，会亏损。Vega 衡量对隐含波动率的敏感度，长期限期权的 Vega 更大。交易员常常用日历价差或者蝶式价差来单独交易波动率，同时把 Delta 对冲到接近零。",
    ),
    ("u", "那 Theta 呢？为什么说卖期权是在赚时间价值？"),
    (
        "a",
        "Theta 是期权价值随时间流逝的衰减。在 Black-Scholes 框架下，Delta 对冲后的组合满足 Theta + ½σ²S²Gamma = rV 左右的关系，所以短 Gamma 的一方每天收取 Theta，只要实际波动小于隐含波动就能盈利，这就是卖方赚时间价值的本质。",
    ),
]
OPT_3 = [
    ("u", "期权第三课：什么是波动率微笑？Black-Scholes 不是假设波动率是常数吗？"),
    (
        "a",
        "对。如果 Black-Scholes 完全成立，同一到期日不同行权价的隐含波动率应该一样。实际市场里，把隐含波动率对行权价画出来呈现微笑或偏斜：股指期权是左偏，虚值看跌期权的隐含波动率更高，因为市场为暴跌风险付溢价，收益分布有肥尾。1987 年股灾以后这种偏斜特别明显。应对方法有局部波动率模型（Dupire）、随机波动率模型（Heston）和跳跃扩散模型。",
    ),
    ("u", "Heston 模型的直觉是什么？"),
    (
        "a",
        "Heston 让方差本身服从一个均值回复的平方根过程，而且方差的冲击和股价的冲击负相关，负相关产生了偏斜，波动率的波动产生了微笑的弯曲。它有半解析的特征函数，可以用傅里叶方法快速定价，所以在校准上很受欢迎。",
    ),
]
OPT_4 = [
    ("u", "最后聊聊美式期权：为什么不能用 Black-Scholes 直接定价？"),
    (
        "a",
        "美式期权可以提前行权，价值是一个最优停止问题，没有封闭解。常用二叉树（Cox-Ross-Rubinstein）：把到期时间分成很多步，每个节点比较继续持有的价值和立即行权的价值取较大者，倒推到今天。另一个方法是 Longstaff-Schwartz 最小二乘蒙特卡洛，用回归估计继续持有的价值。不付股息的美式看涨期权永远不应该提前行权，所以价值等于欧式看涨。",
    ),
]
DEEP_ZH = ("期权", "Black-Scholes", "Gamma", "Vega", "Theta", "Heston", "波动率", "Delta", "二叉树", "行权")


def zh(run: Run) -> None:
    tz = "Asia/Shanghai"
    h = History(run, "zh", f"linxiao-{uuid.uuid4().hex[:6]}", tz, datetime(2026, 1, 5, tzinfo=ZoneInfo(tz)))
    s = h.session
    s(
        1,
        20,
        [
            (
                "u",
                "开学了，硕士论文要正式开始写了。题目是武汉城市热岛效应和城市形态的关系，你帮我理一下整体框架吧。",
            ),
            (
                "a",
                "可以分五章：绪论、研究区与数据、地表温度反演、城市形态指标与热岛的关系建模、结论与讨论。最关键的是先定数据源，因为后面的方法都依赖它。",
            ),
        ],
    )
    s(
        3,
        21,
        [
            ("u", "数据源我本来想用 MODIS 地表温度产品，每天都有，时间序列很全。"),
            (
                "a",
                "MODIS 时间分辨率好，但空间分辨率是 1 公里，研究街区尺度的城市形态可能太粗。Landsat 8 热红外波段重采样后是 30 米，虽然 16 天才过境一次，但更适合街区分析。",
            ),
        ],
    )
    s(
        5,
        15,
        [
            (
                "u",
                "今天和导师王老师开了会，王老师把用 MODIS 地表温度的方案否掉了，说 1 公里分辨率太粗，看不出街区尺度的差异。最后定了用 Landsat 8 的热红外波段反演地表温度。",
            ),
            (
                "a",
                "明白，数据源定为 Landsat 8。反演可以用单窗算法或者辐射传输方程法，建议先用辐射传输方程法，大气参数可以从 NASA 的大气校正参数计算器拿到。",
            ),
        ],
    )
    s(7, 21, OPT_1)
    s(
        9,
        20,
        [
            ("u", "建模方法我在犹豫：用随机森林还是深度学习，比如 CNN？"),
            (
                "a",
                "你的样本是 300 多个街区，深度学习在这个样本量下很容易过拟合，而且论文需要解释每个形态指标的贡献。随机森林配合 SHAP 值既能处理非线性，又能给出变量重要性。",
            ),
            (
                "u",
                "决定了：建模用随机森林，不用深度学习。理由是样本只有 300 多个街区，而且要用 SHAP 解释变量重要性。",
            ),
        ],
    )
    s(
        12,
        22,
        [
            ("u", "救命，Python 脚本处理影像的时候内存爆了，16G 内存直接卡死。"),
            (
                "a",
                "先看看你是怎么读影像的。如果用 rasterio 的 read() 一次性把整幅影像读进来，多个波段加上 float64，很容易几个 G。",
            ),
            (
                "u",
                "找到原因了：我用 rasterio 一次性 read() 读整幅 7000×8000 的影像，七个波段还转成了 float64，中间结果又复制了好几份，所以内存爆了。",
            ),
            (
                "a",
                "解决办法：按 window 分块读取，每次处理 512×512 的块，结果写回同样分块的 GeoTIFF；数据类型用 float32 就够了，内存能降到原来的几十分之一。",
            ),
            ("u", "改成 window 分块读取加 float32 以后，内存稳定在 1.2G 左右，问题解决了。"),
        ],
    )
    s(14, 21, OPT_2)
    s(
        16,
        20,
        [
            ("u", "学院发通知了：论文初稿 3 月 15 日前交给导师，答辩在 5 月下旬。"),
            ("a", "好的，初稿截止 3 月 15 日。按这个倒推，2 月底前要跑完模型，3 月上旬写讨论部分。"),
        ],
    )
    s(
        18,
        19,
        [
            ("u", "研究区范围定一下：先按武汉全市来做吧。"),
            (
                "a",
                "全市范围包括大量农田和山地，热岛对比会很明显，但城市形态指标在郊区意义不大，可以先做着看看。",
            ),
        ],
    )
    s(
        20,
        21,
        [
            ("u", "论文里的地图和图表用什么配色比较好？"),
            (
                "a",
                "地表温度图建议用 viridis 或 magma 这类感知均匀的色带，不要用红绿配色，色盲读者分辨不了；分类图用 ColorBrewer 的定性配色。所有图导出 600 dpi 的 TIFF。",
            ),
        ],
    )
    s(22, 22, OPT_3)
    s(
        24,
        20,
        [
            ("u", "城市形态指标选哪些？"),
            (
                "a",
                "建议用建筑密度、平均建筑高度、天空开阔度、不透水面比例、绿地比例和水体距离这六个，数据来自百度地图建筑轮廓和 Sentinel-2 分类结果。",
            ),
            ("u", "好，就用这六个指标。"),
        ],
    )
    s(
        26,
        15,
        [
            (
                "u",
                "又和王老师开会了，他建议研究区缩小到武汉三环以内的主城区，郊区的农田会把模型带偏。研究区就改成三环以内了。",
            ),
            ("a", "好的，研究区改为三环以内的主城区，样本街区数量会少一些，随机森林仍然适用。"),
        ],
    )
    s(28, 21, OPT_4)
    q = "提醒我一下截止日期。"
    ctx = h.ask(30, 9, q, "deadline-early")
    h.expect("deadline-early", "3 月 15 日的初稿截止被列出", ctx, "3 月 15 日")
    s(
        30,
        20,
        [
            ("u", "随机森林的超参数怎么调？"),
            (
                "a",
                "用五折交叉验证网格搜索 n_estimators（200 到 1000）、max_depth 和 min_samples_leaf，注意按空间分块做交叉验证，避免相邻街区同时出现在训练集和测试集导致空间自相关带来的高估。",
            ),
        ],
    )
    s(
        33,
        19,
        [
            (
                "u",
                "好消息！我的摘要被中国地理学会年会录用了，4 月 17 日到 19 日在成都。已经订了 4 月 16 日的高铁，住成都锦江宾馆三晚。",
            ),
            ("a", "恭喜！锦江宾馆在人民南路，离会场交通方便。可以准备一个 12 分钟的报告。"),
        ],
    )
    s(35, 21, OPT_1[:2] + OPT_2[2:])
    s(
        37,
        22,
        [
            ("u", "SHAP 值算出来，天空开阔度的贡献居然是负的，怎么解释？"),
            (
                "a",
                "天空开阔度高意味着街道峡谷开敞，夜间长波辐射散热快、通风好，所以地表温度更低，负贡献是合理的。可以画 SHAP 依赖图看看是否有阈值效应。",
            ),
        ],
    )
    s(
        39,
        20,
        [
            ("u", "学院又发通知：因为系统升级，初稿提交推迟到 3 月 29 日。答辩时间不变，还是 5 月下旬。"),
            ("a", "好的，初稿截止改为 3 月 29 日，多了两周，可以把讨论部分写得更扎实。"),
        ],
    )
    s(
        41,
        21,
        [
            ("u", "第四章的结构怎么安排？"),
            (
                "a",
                "先描述热岛的空间格局，再给模型精度（R² 和 RMSE），然后是 SHAP 全局重要性排序，最后是几个关键指标的依赖图和阈值分析。",
            ),
        ],
    )
    s(44, 20, OPT_3[:2] + OPT_4)
    s(
        47,
        18,
        [
            ("u", "模型跑完了，五折空间交叉验证 R² 是 0.71，RMSE 1.3 摄氏度。"),
            ("a", "对街区尺度的地表温度来说这个精度不错，可以在讨论里和已有研究对比一下。"),
        ],
    )
    s(
        49,
        21,
        [
            ("u", "再问个期权的问题：隐含波动率和历史波动率有什么区别？"),
            (
                "a",
                "历史波动率是用过去的收益率算出来的标准差，是回看的；隐含波动率是把市场期权价格代入 Black-Scholes 反解出来的，是市场对未来波动的预期，通常包含风险溢价，所以长期来看隐含波动率略高于之后实现的波动率。VIX 就是标普 500 期权隐含波动率的指数。",
            ),
        ],
    )
    s(
        51,
        20,
        [
            ("u", "参考文献用什么管理？Zotero 还是 EndNote？"),
            (
                "a",
                "Zotero 免费，装上 Better BibTeX 插件可以自动导出 bib 文件，配合学校的 LaTeX 模板用最顺手。",
            ),
            ("u", "那就用 Zotero 加 Better BibTeX。"),
        ],
    )
    s(53, 21, OPT_2)
    s(
        55,
        19,
        [
            (
                "u",
                "成都会议的报告题目定了：《街区形态如何塑造城市热岛：以武汉为例》。会后 4 月 20 日想去一趟都江堰。",
            ),
            ("a", "题目很清楚。去都江堰可以从犀浦站坐城际列车，大概半小时。"),
        ],
    )
    s(
        58,
        20,
        [
            ("u", "摘要的英文翻译帮我看看语法？"),
            (
                "a",
                "整体不错，几处修改：'heat island effect' 前加 the；'more higher' 改成 'higher'；被动语态用得太多，可以改成 'we find that'。",
            ),
        ],
    )
    s(
        60,
        21,
        [
            ("u", "有同学建议我把随机森林换成 XGBoost，说精度会更高，你怎么看？"),
            (
                "a",
                "可以作为对比实验放在讨论里，但主模型不必换：你的重点是解释城市形态的作用，随机森林和 SHAP 已经够用，XGBoost 调参更多，精度提升在 300 个样本上通常很有限。",
            ),
            ("u", "对，不换了，XGBoost 只作为对比实验放在附录。"),
        ],
    )
    s(62, 22, OPT_1)
    s(
        65,
        21,
        [
            ("u", "今晚再深入一下：期权的做市商到底怎么对冲 Gamma 风险？"),
            (
                "a",
                "做市商卖出期权后是短 Gamma，单靠标的 Delta 对冲只能应付小波动。要降低 Gamma 风险，需要买入其他期权，例如同到期的平值期权，或者用跨式组合抵消。实际操作中做市商按希腊字母的总敞口管理整本账：Delta 用期货每天多次调整，Gamma 和 Vega 用挂单价差吸引反向成交，极端行情下宁可放宽报价也不让敞口失控。波动率曲面的校准每天收盘后重新做。",
            ),
        ],
    )
    s(68, 22, OPT_3 + OPT_2[:2])
    run.wait_jobs()

    ctx = h.ask(
        70,
        10,
        "上次说的那个方案为什么被否了？",
        "rejected-plan",
        before=[
            ("u", "下周又要跟王老师开会，我在准备数据那一章。"),
            ("a", "好的，需要我帮你梳理数据章节的哪部分？"),
        ],
    )
    h.expect("rejected-plan", "MODIS 方案被否和原因（1 公里太粗）被列出", ctx, "否掉了")
    h.no_flood("rejected-plan", ctx, DEEP_ZH)

    ctx = h.ask(70, 15, "我们当时为什么没用深度学习？", "why-not-dl")
    h.expect("why-not-dl", "随机森林的决定和理由被列出", ctx, "300 多个街区")
    h.no_flood("why-not-dl", ctx, DEEP_ZH)

    ctx = h.ask(71, 10, "之前内存爆掉那个问题最后是怎么解决的？", "oom-fix")
    h.expect(
        "oom-fix",
        "原因和解决办法（window 分块 + float32）被列出",
        ctx,
        "一次性 read()",
        "window 分块读取加 float32",
    )
    h.no_flood("oom-fix", ctx, DEEP_ZH)

    ctx = h.ask(71, 15, "提醒我一下截止日期。", "deadline-late")
    h.expect("deadline-late", "改后的 3 月 29 日被列出", ctx, "3 月 29 日")
    h.expect("deadline-late", "新旧截止日期都在（看得出改过）", ctx, "3 月 15 日", "3 月 29 日")
    h.no_flood("deadline-late", ctx, DEEP_ZH)

    ctx = h.ask(72, 10, "研究区最后定的是哪里？", "study-area")
    h.expect("study-area", "改为三环以内被列出", ctx, "三环以内")

    ctx = h.ask(72, 15, "那个程序把电脑内存吃光的事，当时是怎么搞定的？", "oom-paraphrase")
    h.expect("oom-paraphrase", "换个说法也能找到分块读取的解决办法", ctx, "window 分块", any_of=True)

    ctx = h.ask(73, 10, "1月13号那天我们聊了什么？", "date-jan13")
    h.expect("date-jan13", "1 月 13 日那次（随机森林 vs 深度学习）被列出", ctx, "随机森林")

    ctx = h.ask(73, 15, "你之前建议我论文的图用什么配色来着？", "colors")
    h.expect("colors", "助手建议的 viridis 配色被列出", ctx, "viridis")

    ctx = h.ask(74, 10, "去成都开会我订的是哪家酒店？", "hotel")
    h.expect("hotel", "锦江宾馆被列出", ctx, "锦江宾馆")

    ctx = h.ask(74, 15, "XGBoost 那件事最后怎么定的？", "xgboost")
    h.expect("xgboost", "XGBoost 只作对比放附录被列出", ctx, "附录")

    ctx = h.ask(75, 10, "城市形态指标最后选了哪几个？", "indicators")
    h.expect("indicators", "六个指标被列出", ctx, "建筑密度")
    h.no_flood("indicators", ctx, DEEP_ZH)
    h.persona_check()


ALL: list[tuple[str, Callable[[Run], None]]] = [("en", en), ("zh", zh)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true", help="keep the server's home and log")
    ap.add_argument("--out", type=Path, default=None, help="write each checked context here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="asst-"))
    home = tmp / "home"
    home.mkdir()
    fake = FakeOpenAI(responder=lambda body: "sorry, no")  # memsched's helpers fall back to rules
    proc, base = start(home, fake, tmp / "serve.log")
    run = Run(base, verbose=args.verbose, out=args.out)
    try:
        play(ALL, run, args.only)
    finally:
        proc.terminate()
        proc.wait(30)
        fake.close()
    report(run.checks, tmp, keep=args.keep)


if __name__ == "__main__":
    main()
