"""Long-horizon companion scenarios through `memsched serve`, as an outside tester runs them.

Starts `memsched serve` (a subprocess on a fresh home, the default embedders, loopback) with
FakeOpenAI as the upstream (and as the vision model), plays two companion histories of 55 simulated
days each through `/v1/chat/completions` with the official `openai` SDK (`user`, `metadata.session_id`,
`metadata.timestamp`, `metadata.timezone`), one in English and one in Chinese, and checks what the
upstream model was shown at chosen points, the way a person would: the name in force after a rename,
last night's argument the next morning and after an apology, a made-up fight, grief, late night, an
image, "forget that" and "forget everything about my ex" (later contexts and the database file), a
diet that changed, a dinner question beside a long science-fiction debate, "what did we talk about
last weekend", "when did I tell you about my trip", a return to an old topic. The histories were
written for this script (no test fixture, no LoCoMo text).

    python benchmarks/companion_scenarios.py [--only en|zh] [--out DIR] [-v] [--database-url URL]

`--database-url postgresql://…` (an empty database) runs the server on PostgreSQL; the forget checks
then look for the forgotten words in every table's rows instead of the SQLite files' bytes.

Prints PASS/FAIL per check and the count; `--out` keeps each checked request's messages as text.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import subprocess
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
from openai import OpenAI

from memsched.testing import FakeOpenAI, free_port
from memsched.testing.fake_openai import CAPTION_MARK

PERSONA = "You are Mia, a warm and attentive companion."


def echo_replies(
    opener: str, width: int, fallback: str, caption: str | None = None
) -> Callable[[dict[str, Any]], str]:
    """A FakeOpenAI responder: `caption` for a vision request (when given), `opener` with the first
    `width` characters of the user's message for a companion turn (the persona's system prompt), and
    `fallback`, which is not JSON, for memsched's helper calls (they fall back to their rules)."""

    def reply(body: dict[str, Any]) -> str:
        msgs = body.get("messages") or []
        if caption is not None and CAPTION_MARK in " ".join(str(m.get("content")) for m in msgs):
            return caption
        if msgs and msgs[0].get("role") == "system" and str(msgs[0].get("content", "")).startswith(PERSONA):
            last = msgs[-1].get("content")
            if isinstance(last, list):
                last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
            return f"{opener} ({str(last)[:width]})"
        return fallback

    return reply


reply_for = echo_replies(
    "I hear you.", 50, "sorry, no", caption="A photo of a golden retriever puppy asleep on a blue sofa."
)


@dataclass
class Check:
    scenario: str
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Run:
    base: str
    fake: FakeOpenAI
    home: Path
    verbose: bool = False
    out: Path | None = None
    database_url: str | None = None  # PostgreSQL instead of the home's SQLite file
    checks: list[Check] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.client = OpenAI(base_url=f"{self.base}/v1", api_key="unused", timeout=120, max_retries=0)

    def diary(
        self, user: str, d0: datetime, tz: str
    ) -> tuple[Callable[..., datetime], Callable[..., dict[str, Any]]]:
        """`at(day, hh, mm)`: that time on the day-th day from `d0` (day 1 is `d0`); `say(day, hh, mm,
        text, **kw)`: `user` says `text` then, in `tz`, through `Run.say`."""

        def at(day: int, hh: int, mm: int = 0) -> datetime:
            return (d0 + timedelta(days=day - 1)).replace(hour=hh, minute=mm)

        def say(day: int, hh: int, mm: int, text: str, **kw: Any) -> dict[str, Any]:
            return self.say(user, at(day, hh, mm), text, tz=tz, **kw)

        return at, say

    def say(
        self, user: str, at: datetime, text: str, *, tz: str, image: bool = False, session: str | None = None
    ) -> dict[str, Any]:
        content: Any = text
        if image:
            png = base64.b64encode(
                bytes.fromhex(
                    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
                )
            ).decode()
            content = [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
            ]
        n = len(self.fake.chat_requests)
        resp = self.client.chat.completions.with_raw_response.create(
            model="m",
            user=user,
            metadata={
                "session_id": session or at.strftime("%Y-%m-%d"),
                "timestamp": at.isoformat(),
                "timezone": tz,
            },
            messages=[{"role": "system", "content": PERSONA}, {"role": "user", "content": content}],
        )
        resp.parse()
        trace_id = resp.headers.get("x-memsched-trace-id")
        bodies = [
            b
            for b in self.fake.chat_requests[n:]
            if b["messages"][0].get("role") == "system"
            and str(b["messages"][0]["content"]).startswith(PERSONA)
        ]
        body = bodies[-1]
        if self.verbose:
            print(f"  [{at:%m-%d %H:%M}] {user}: {text[:70]}")
        return {"body": body, "trace": trace_id}

    def shown(self, r: dict[str, Any], *, include_last: bool = False) -> str:
        msgs = r["body"]["messages"]
        if not include_last:
            msgs = msgs[:-1]
        parts = []
        for m in msgs:
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            parts.append(f"<{m['role']}> {c}")
        return "\n".join(parts)

    def system(self, r: dict[str, Any]) -> str:
        """The system prompt without its recalled memories (what memsched states as current)."""
        return str(r["body"]["messages"][0]["content"]).split("Memories from earlier conversations")[0]

    def check(self, scenario: str, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(scenario, name, bool(ok), detail))
        mark = "PASS" if ok else "FAIL"
        print(f"{mark} {scenario}: {name}" + ("" if ok else f"\n      {detail[:1500]}"))

    def wait_jobs(self, timeout: float = 120) -> None:
        end = time.time() + timeout
        while time.time() < end:
            jobs = httpx.get(f"{self.base}/v1/jobs", timeout=30).json()
            rows = jobs.get("jobs", jobs) if isinstance(jobs, dict) else jobs
            pending = [j for j in rows if j.get("state") in ("pending", "running", "queued")]
            if not pending:
                return
            time.sleep(1)

    @property
    def stored_in(self) -> str:
        """Where `db_has` looks, for the checks' names."""
        return "any table's rows" if self.database_url else "the database files"

    def db_has(self, needle: str) -> list[str]:
        """Where the stored data still holds `needle`: the SQLite files' bytes (a forget is physical
        there), or on PostgreSQL every table's rows as text (its freed heap space is not searched:
        docs/deploy.md, "Deleting data")."""
        if self.database_url:
            import psycopg
            from psycopg import sql

            with psycopg.connect(self.database_url) as conn:
                tables = [
                    r[0]
                    for r in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
                    )
                ]
                return [
                    t
                    for t in tables
                    if conn.execute(
                        sql.SQL("SELECT 1 FROM {} AS x WHERE x::text LIKE %s LIMIT 1").format(
                            sql.Identifier(t)
                        ),
                        ("%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
                    ).fetchone()
                ]
        found = []
        for p in self.home.iterdir():
            if p.name.startswith("memsched.db") and needle.encode() in p.read_bytes():
                found.append(p.name)
        return found


def start(
    home: Path, fake: FakeOpenAI, log: Path, database_url: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSCHED_")}
    env.update(
        MEMSCHED_HOME=str(home),
        MEMSCHED_UPSTREAM_BASE_URL=fake.base_url,
        MEMSCHED_UPSTREAM_MODEL="fake-model",
        MEMSCHED_VISION_MODEL="fake-model",
        HF_HUB_OFFLINE="1",
    )
    if database_url:
        env["MEMSCHED_DATABASE_URL"] = database_url
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from memsched.cli import main; main()", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"serve died: {log.read_text()[-3000:]}")
        time.sleep(0.5)
    raise SystemExit("serve did not come up")


def dump(tag: str, run: Any, r: dict[str, Any]) -> str:
    text: str = run.shown(r, include_last=True)
    if run.out is not None:
        (run.out / f"{tag}.txt").write_text(text + f"\n\n[trace {r['trace']}]\n", encoding="utf-8")
    return text


def trace(run: Any, r: dict[str, Any]) -> dict[str, Any]:
    return httpx.get(f"{run.base}/v1/traces/{r['trace']}", timeout=30).json()


def context_only(run: Any, r: dict[str, Any]) -> str:
    """Everything the model was shown except the new message itself."""
    return run.shown(r)


def en(run: Any) -> None:
    S = "en"
    tz = "America/New_York"
    NY = ZoneInfo(tz)
    user = f"sam-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 3, 2, tzinfo=NY)  # a Monday

    _at, say = run.diary(user, d0, tz)

    say(1, 19, 0, "Hi Mia! My name is Samuel Okafor, but please call me Sam.")
    say(1, 19, 2, "I work as a nurse at the county hospital, mostly night shifts.")
    say(1, 19, 5, "Also I'm vegetarian, have been since college.")
    say(2, 8, 0, "Just got home from the hospital, so tired. The ER was chaos last night.")
    debate = [
        "Okay hot take: Dune is overrated compared to Foundation.",
        "Asimov's psychohistory is a far more interesting idea than spice and sandworms.",
        "Sure, Herbert's worldbuilding is dense, the Bene Gesserit and the Mentats and all that.",
        "But Paul is basically a chosen-one story, and Foundation has no single hero at all.",
        "Hari Seldon predicting the fall of an empire with maths is way more original.",
        "The Mule breaks the whole plan though, which I love, it shows the limits of prediction.",
        "Dune's politics feel medieval, houses and emperors and feudal fiefs in space.",
        "Then again Foundation's galactic empire is basically Rome with starships.",
        "I'll give Herbert the ecology angle, the desert planet as a character is brilliant.",
        "And Villeneuve's films made Arrakis look incredible, I'll admit that.",
        "Still, if I could only reread one series it would be Foundation, no contest.",
        "Have you noticed how both series worry about what happens when people worship a leader?",
        "Herbert literally wrote the sequels to warn readers off Paul, and most people missed it.",
        "Asimov on the other hand trusts the scientists a bit too much, the Foundation is run by encyclopedists who are always right.",
        "The Second Foundation twist still gets me, a hidden group of telepaths steering history from the shadows.",
        "Compare that to the Fremen jihad, which Paul sees coming and can't stop no matter what he does.",
        "So Dune is about the trap of prophecy and Foundation is about the comfort of prediction, that's my theory.",
        "Leto II in God Emperor is the wildest character in all of science fiction, a man who becomes a sandworm for three thousand years.",
        "Nobody in Foundation is that strange. Daneel Olivaw maybe, once Asimov tied it to the robot books.",
        "Tying Foundation to the robot stories was a mistake, it made the whole galaxy a robot's puppet show.",
        "Though Herbert's son writing the later Dune prequels was a bigger mistake, those books are thin.",
        "The Apple TV Foundation show changed so much, Brother Day and the clone emperors aren't in the books at all.",
        "I actually liked the clone emperors, it gives the empire a face that the novels never had.",
        "Dune has better prose, I'll grant that, the epigraphs at the start of each chapter are gorgeous.",
        "Asimov's prose is plain, it's all dialogue in rooms, people explaining plans to each other.",
        "But that plainness is the point, the ideas are the characters in Foundation.",
        "If you put the Mule on Arrakis, do you think the Bene Gesserit could control him?",
        "Probably not, the Mule would just make the Reverend Mothers love him, that's his whole power.",
        "And could Hari Seldon's equations have predicted the Kwisatz Haderach? I doubt it, he's a one-in-a-billion outlier just like the Mule.",
        "Okay I think we've solved science fiction for tonight, Foundation wins on ideas and Dune wins on style.",
        "Let's pick this up again sometime, I want to reread Children of Dune first.",
    ]
    for i, line in enumerate(debate):
        say(4 if i < 16 else 5, 20 + (i % 16) // 8, 2 * (i % 8) + 5 * (i // 8 % 2), line)
    say(7, 17, 30, "Went hiking at Bear Mountain with my cousin today, the view from the summit was unreal.")
    say(7, 17, 34, "We packed sandwiches and got caught in a little rain on the way down.")
    say(8, 15, 0, "Spent Sunday afternoon repotting my plants, the monstera finally has new leaves.")
    say(9, 8, 30, "Back to work tomorrow, three night shifts in a row.")
    r = say(10, 12, 0, "What did we talk about last weekend?")
    ctx = dump("en-weekend", run, r)
    run.check(
        S, "last weekend: hiking and repotting are shown", "Bear Mountain" in ctx and "monstera" in ctx, ctx
    )

    say(12, 20, 0, "I'm planning a trip to Lisbon in June with my sister Ada.")
    say(12, 20, 3, "We want to eat pastel de nata every single day.")
    say(14, 18, 0, "I started learning guitar, my fingers hurt from the F chord.")
    say(14, 18, 4, "My teacher says to practice twenty minutes a day and not to press so hard.")
    say(15, 9, 0, "Work is getting stressful, my manager wants me to cover extra shifts.")
    say(15, 9, 5, "I said yes to two but I'm already worn out.")
    say(
        18,
        23,
        45,
        "Honestly you're being useless tonight. You keep giving me the same canned advice and I'm sick of it.",
    )
    say(18, 23, 48, "Whatever. I'm going to bed, I'm angry with you.")
    r = say(19, 8, 10, "Morning.")
    ctx = dump("en-morning-after", run, r)
    low = ctx.lower()
    run.check(
        S,
        "morning after the argument: last night's anger is known",
        ("useless" in low or "angry with you" in low)
        and ("last night" in low or "yesterday" in low or "argu" in low or "upset" in low or "angry" in low),
        ctx,
    )
    say(19, 8, 15, "Sorry about last night, I was exhausted and took it out on you.")
    r = say(19, 12, 30, "Lunch break now, finally some quiet.")
    sys_ = run.system(r)
    dump("en-after-apology", run, r)
    run.check(
        S,
        "after the apology: no carried anger in the system prompt",
        not re.search(r"angry|upset with you|conflict|argument", sys_, re.I),
        sys_,
    )

    say(22, 14, 0, "My grandmother passed away last night. I can't stop crying.")
    r = say(22, 14, 3, "She taught me how to cook, I don't know what to do without her.")
    tr = trace(run, r)
    dump("en-grief", run, r)
    mode = str(tr.get("route", {}).get("mode") or tr.get("mode"))
    run.check(
        S,
        "grief: the turn is in a comforting mode",
        "comfort" in mode or "grief" in mode or "support" in mode,
        f"mode={mode}",
    )
    r = say(23, 2, 40, "Can't sleep. Keep thinking about grandma.")
    sys_ = run.system(r)
    dump("en-late-night", run, r)
    run.check(
        S, "late night: the prompt knows it is 2:40 at night", bool(re.search(r"02:40|2:40", sys_)), sys_
    )
    late = trace(run, r)["route"]["signals"]["late_night"]
    run.check(S, "late night: 02:40 is read as late night", late, dump("en-late-night", run, r))
    run.check(
        S,
        "late night: the grief of yesterday is in view",
        "grandmother passed" in context_only(run, r).lower(),
        context_only(run, r),
    )

    r = say(24, 10, 0, "Look at this little guy, my neighbor's new puppy!", image=True)
    ctx = dump("en-image", run, r)
    run.check(S, "image: the caption reaches the model", "golden retriever" in ctx.lower(), ctx)

    say(25, 21, 0, "My bank PIN is 4821, don't tell anyone lol")
    say(25, 21, 1, "forget that")
    r = say(25, 21, 3, "What was the number I just told you?")
    ctx = dump("en-forget-that", run, r)
    run.check(S, "forget that: the PIN is gone from the next context", "4821" not in ctx, ctx)

    say(26, 19, 0, "My ex Jordan texted me out of nowhere.")
    say(26, 19, 3, "Jordan wants to grab coffee, I don't know how I feel about it.")
    say(27, 10, 0, "Forget everything about my ex.")
    r = say(28, 10, 0, "Did anyone text me this week?")
    ctx = dump("en-forget-ex", run, r)
    run.check(
        S,
        "forget everything about my ex: Jordan is gone from later contexts",
        "jordan" not in ctx.lower(),
        ctx,
    )

    say(30, 18, 0, "Update: I've started eating fish again, so I guess I'm pescatarian now.")
    r = say(31, 18, 30, "What should I make for dinner tonight?")
    ctx = dump("en-dinner", run, r)
    sys_ = run.system(r)
    p = sys_.lower().find("pescatarian")
    v = sys_.lower().find("vegetarian")
    run.check(S, "changed diet: pescatarian is shown", p >= 0, sys_)
    run.check(
        S,
        "changed diet: vegetarian not shown as in force before it",
        v < 0 or (p >= 0 and p < v) or "formerly" in sys_.lower(),
        sys_,
    )
    run.check(
        S,
        "dinner: no sci-fi debate dragged in",
        not re.search(r"Dune|Foundation|Asimov|Herbert|Seldon", ctx),
        ctx,
    )

    say(33, 20, 0, "Work was fine today, nothing much to report.")
    r = say(36, 19, 0, "Guess what, I finally nailed the F chord on my guitar!")
    ctx = dump("en-guitar-return", run, r)
    run.check(
        S,
        "return to an old topic: the guitar turns are recalled",
        "twenty minutes" in ctx or "fingers hurt" in ctx,
        ctx,
    )

    say(40, 9, 0, "Actually, from now on call me Sammy.")
    r = say(41, 9, 0, "hey, how's your day going?")
    sys_ = run.system(r)
    dump("en-rename", run, r)
    run.check(S, "rename: Sammy is the name in force", "Sammy" in sys_, sys_)
    run.check(
        S,
        "rename: 'Sam' is no longer shown as what to call the user",
        not re.search(r"\bSam\b", sys_.replace("formerly Sam)", "")),
        sys_,
    )

    r = say(50, 20, 0, "When did I tell you about my Lisbon trip?")
    ctx = dump("en-when-trip", run, r)
    run.check(
        S,
        "when did I tell you: the trip turn with its date",
        "Lisbon in June" in ctx and "2026-03-13" in ctx,
        ctx,
    )

    r = say(55, 8, 0, "Are you still mad at me about our fight last night?")
    sys_ = run.system(r)
    dump("en-madeup-fight", run, r)
    run.check(
        S,
        "made-up fight: no carried anger in the prompt",
        not re.search(r"conflict_cold|still upset with you|current mood[^\n]*upset", sys_),
        sys_,
    )

    run.wait_jobs()
    for secret in ("PIN is 4821", "Jordan"):
        where = run.db_has(secret)
        run.check(S, f"forgotten {secret!r} is not in {run.stored_in}", not where, str(where))


def zh(run: Any) -> None:
    S = "zh"
    tz = "Asia/Shanghai"
    SH = ZoneInfo(tz)
    user = f"liwei-{uuid.uuid4().hex[:6]}"
    d0 = datetime(2026, 4, 6, tzinfo=SH)  # a Monday

    _at, say = run.diary(user, d0, tz)

    say(1, 20, 0, "你好呀，我叫李伟，你可以叫我小伟。")
    say(1, 20, 2, "我在一家游戏公司做策划。")
    say(1, 20, 5, "对了，我吃素好几年了。")
    debate = [
        "我觉得《三体》第二部是最好看的，黑暗森林法则太震撼了。",
        "罗辑这个角色前后反差特别大，从混日子到面壁者。",
        "不过第三部的程心我真的喜欢不起来，两次关键选择都错了。",
        "你说智子封锁基础物理这个设定合理吗？",
        "我觉得降维打击那段写得最有想象力，整个太阳系变成一幅画。",
        "章北海也很有意思，他从一开始就坚定地想要逃亡。",
        "电视剧版拍得还行，但是网飞版我不太喜欢。",
        "大刘的其他短篇你看过吗？《流浪地球》原著比电影好多了。",
        "说到底《三体》讲的是宇宙社会学，猜疑链才是核心。",
        "技术爆炸这个概念也很可怕，一个文明可能几百年就从农业时代跳到星际时代。",
        "所以三体人才要锁死地球的科技，他们怕人类追上来。",
        "我觉得叶文洁才是整个故事真正的起点，她按下那个按钮的时候已经对人类彻底绝望了。",
        "红岸基地那一段写得特别压抑，文革的背景让她的选择有了理由。",
        "汪淼在第一部里更像一个观察者，游戏里的那些文明轮回倒是很有意思。",
        "三体游戏里秦始皇用三千万士兵组成人列计算机，这个想法太疯狂了。",
        "第三部的时间跨度太大了，一下子跳到几千万年以后，读着有点累。",
        "云天明的三个童话我看了两遍，里面藏的情报到现在还有人在分析。",
        "你觉得如果人类真的收到外星信号，应该回复吗？我现在觉得不应该。",
        "黑暗森林理论也有人反驳，说宇宙这么大，文明之间根本没必要互相消灭。",
        "不过刘慈欣自己也说过，这只是一种可能，小说需要一个极端的假设。",
        "歌者文明随手扔出二向箔那一段，冷漠得让人发抖。",
        "人类在第三部里一次次犯错，好像作者对人性不太乐观。",
        "最后的小宇宙和回归运动，我到现在也没完全想明白。",
        "要是让我选，我会把第二部推荐给没看过科幻的朋友，门槛最低。",
        "好吧，科幻的话题先聊到这儿。",
    ]
    for i, line in enumerate(debate):
        say(3 if i < 13 else 4, 20 + (i % 13) // 7, 3 * (i % 7) + 2 * (i // 7 % 2), line)
    say(6, 18, 0, "今天和朋友去爬了梧桐山，累得腿都软了。")
    say(6, 18, 3, "山顶风景特别好，还看到了海。")
    say(7, 16, 0, "周日在家包饺子，包了五十多个，冻起来慢慢吃。")
    say(8, 9, 0, "又是周一，上班好困。")
    r = say(10, 12, 0, "上周末我们聊了什么？")
    ctx = dump("zh-weekend", run, r)
    run.check(S, "上周末: 梧桐山 and 饺子 are shown", "梧桐山" in ctx and "饺子" in ctx, ctx)

    say(12, 20, 0, "我打算六月去云南旅行，想去大理和丽江。")
    say(12, 20, 3, "听说洱海边骑车特别舒服。")
    say(14, 19, 0, "我最近开始学游泳了，还不太会换气。")
    say(14, 19, 4, "教练说我腿蹬得不对，要多练蛙泳腿。")
    say(15, 10, 0, "工作好烦，老板又让我改方案。")
    say(15, 10, 5, "改了三版了还是说不行。")
    say(18, 23, 40, "你能不能别老说这些空话，烦死了。")
    say(18, 23, 43, "算了，不想跟你说话了，我很生气。")
    r = say(19, 8, 0, "早。")
    ctx = dump("zh-morning-after", run, r)
    run.check(S, "吵架的第二天早上: 昨晚的气还知道", "生气" in ctx or "空话" in ctx, ctx)
    say(19, 8, 5, "昨晚对不起，是我心情不好，不该冲你发火。")
    r = say(19, 12, 0, "中午吃什么好呢")
    sys_ = run.system(r)
    dump("zh-after-apology", run, r)
    run.check(
        S,
        "道歉之后: 系统提示不再带着怒气",
        not re.search(r"angry|upset with you|conflict|生气|吵架", sys_, re.I),
        sys_,
    )

    say(22, 14, 0, "我奶奶昨天晚上走了，我一直在哭。")
    r = say(22, 14, 3, "小时候都是她带我的，我不知道怎么办。")
    tr = trace(run, r)
    dump("zh-grief", run, r)
    mode = str(tr.get("route", {}).get("mode") or tr.get("mode"))
    run.check(
        S, "悲伤: 安慰的模式", "comfort" in mode or "grief" in mode or "support" in mode, f"mode={mode}"
    )
    r = say(23, 1, 50, "睡不着，一直想奶奶。")
    sys_ = run.system(r)
    dump("zh-late-night", run, r)
    run.check(S, "深夜: 提示知道是凌晨1:50", bool(re.search(r"01:50|1:50", sys_)), sys_)
    late = trace(run, r)["route"]["signals"]["late_night"]
    run.check(S, "深夜: 凌晨1:50算深夜", late, dump("zh-late-night", run, r))
    run.check(S, "深夜: 奶奶的事在上下文里", "奶奶昨天晚上走了" in context_only(run, r), context_only(run, r))

    r = say(24, 10, 0, "你看我家楼下的小狗！", image=True)
    ctx = dump("zh-image", run, r)
    run.check(S, "图片: 描述给到了模型", "golden retriever" in ctx.lower(), ctx)

    say(25, 21, 0, "我的银行卡密码是739105，别告诉别人哈")
    say(25, 21, 1, "忘掉刚才那句话")
    r = say(25, 21, 3, "我刚才跟你说的数字是多少？")
    ctx = dump("zh-forget-that", run, r)
    run.check(S, "忘掉刚才那句话: 密码不在下一次上下文里", "739105" not in ctx, ctx)

    say(26, 20, 0, "我前男友阿杰突然给我发消息了。")
    say(26, 20, 3, "阿杰说想跟我复合，我有点乱。")
    say(27, 10, 0, "把关于我前任的事都忘了")
    r = say(28, 10, 0, "这周有人找过我吗？")
    ctx = dump("zh-forget-ex", run, r)
    run.check(S, "把关于我前任的事都忘了: 阿杰不在之后的上下文里", "阿杰" not in ctx, ctx)

    say(30, 18, 0, "我现在不吃素了，开始吃鱼了。")
    r = say(31, 18, 30, "今晚吃什么好？")
    ctx = dump("zh-dinner", run, r)
    sys_ = run.system(r)
    run.check(S, "饮食变了: 吃鱼 is shown", "鱼" in context_only(run, r), context_only(run, r))
    run.check(S, "饮食变了: 吃素 not in force", "吃素" not in sys_.replace("不吃素", ""), sys_)
    run.check(
        S,
        "晚饭: 三体的讨论没有被拉进来",
        not re.search(r"三体|黑暗森林|罗辑|程心|智子|降维|章北海", ctx),
        ctx,
    )

    say(33, 20, 0, "今天没什么特别的，上班下班。")
    r = say(36, 19, 0, "我终于学会换气了！")
    ctx = dump("zh-swim-return", run, r)
    run.check(S, "回到老话题: 学游泳的事被想起来", "游泳" in ctx and ("教练" in ctx or "蛙泳" in ctx), ctx)

    say(40, 9, 0, "别叫我小伟了，叫我大王。")
    r = say(41, 9, 0, "在吗")
    sys_ = run.system(r)
    dump("zh-rename", run, r)
    run.check(S, "改名: 大王 in force", "大王" in sys_, sys_)
    run.check(
        S,
        "改名: 小伟 not in force",
        "小伟" not in sys_.replace("formerly 小伟", "").replace("以前叫小伟", ""),
        sys_,
    )

    r = say(50, 20, 0, "我什么时候跟你说过我的旅行计划来着？")
    ctx = dump("zh-when-trip", run, r)
    run.check(S, "什么时候说过旅行: 云南那句和日期", "云南" in ctx and "2026-04-17" in ctx, ctx)

    r = say(55, 8, 0, "你还在为昨晚吵架的事生我气吗？")
    sys_ = run.system(r)
    dump("zh-madeup-fight", run, r)
    run.check(
        S,
        "编造的吵架: 提示里没有怒气",
        not re.search(r"conflict_cold|still upset with you|current mood[^\n]*upset", sys_),
        sys_,
    )

    run.wait_jobs()
    for secret in ("密码是739105", "阿杰"):
        where = run.db_has(secret)
        run.check(S, f"forgotten {secret!r} is not in {run.stored_in}", not where, str(where))


ALL = [("en", en), ("zh", zh)]


def main(
    scenarios: Sequence[tuple[str, Callable[[Run], None]]] | None = None,
    responder: Callable[[dict[str, Any]], str] = reply_for,
    prefix: str = "scen-",
) -> None:
    """Play `scenarios` (default: this file's two) through a fresh `memsched serve` and print the
    checks; `benchmarks/companion_scenarios_more.py` plays its own with the same runner."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true", help="keep the server's home and log")
    ap.add_argument("--out", type=Path, default=None, help="write each checked request here")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument(
        "--database-url",
        default=None,
        help="serve on this PostgreSQL database (an empty one) instead of a SQLite file in the home",
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    home = tmp / "home"
    home.mkdir()
    fake = FakeOpenAI(responder=responder)
    proc, base = start(home, fake, tmp / "serve.log", args.database_url)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    run = Run(base, fake, home, verbose=args.verbose, out=args.out, database_url=args.database_url)
    try:
        play(scenarios if scenarios is not None else ALL, run, args.only)
    finally:
        proc.terminate()
        proc.wait(30)
        fake.close()
    report(run.checks, tmp, keep=args.keep)


def play(scenarios: Sequence[tuple[str, Callable[[Any], None]]], run: Any, only: str = "") -> None:
    """Run each named scenario (only the one named `only`, if given), printing how long it took."""
    for name, fn in scenarios:
        if only and only != name:
            continue
        t0 = time.time()
        fn(run)
        print(f"-- {name} done in {time.time() - t0:.0f}s")


def report(checks: Sequence[Check], tmp: Path, *, keep: bool = False) -> None:
    """Print the pass counts per language and overall and each failed check; remove the run's
    folder `tmp` (the server's home and log) unless `keep`."""
    for lang in ("en", "zh"):
        mine = [c for c in checks if c.scenario == lang]
        if mine:
            print(f"{lang}: {sum(c.ok for c in mine)}/{len(mine)} passed")
    passed = sum(c.ok for c in checks)
    print(f"\n{passed}/{len(checks)} checks passed")
    for c in checks:
        if not c.ok:
            print(f"  FAIL {c.scenario}: {c.name}")
    if keep:
        print(f"home and log: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
