"""The debug UI at /ui, in a real headless Chromium against a real server on loopback.

The server holds the shipped bilingual demo conversation plus live turns run through the scheduler
(FakeOpenAI upstream), so traces have candidates, paged-in turns, a rename command and queued jobs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.client import Client
from memsched.config import Config
from memsched.server.app import Service, create_app
from memsched.server.ui import views
from memsched.server.ui.demo import (
    DEMO_SESSION,
    DEMO_USER,
    LIVE_TURNS,
    demo_responder,
    run_live,
    seed_history,
)
from memsched.testing import FakeOpenAI, LiveServer
from memsched.testing.browser import chromium, find_chromium


class Site:
    def __init__(self, base: str, service: Service, traces: list[str]) -> None:
        self.base = base
        self.service = service
        self.traces = traces  # the live turns' trace ids, in order


REPLIES = {
    LIVE_TURNS[0]: "是 Blue Heron 呀，你们点了海鲜饭。",
    LIVE_TURNS[1]: "Sesame, a British Shorthair.",
    LIVE_TURNS[2]: "好的，大伟。",
    LIVE_TURNS[3]: "The design studio, on Thursday.",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    home = tmp_path_factory.mktemp("ui")
    with FakeOpenAI(demo_responder(REPLIES)) as fake:
        cfg = Config.load(
            home=home,
            embedders="hash",
            budget=1000,
            page_size=4,  # small pages: the live turns fill some, so their traces queue bookmark jobs
            paging_mode="both",  # the bookmark index and the recall tool next to retrieval
            upstream_base_url=fake.base_url,
            upstream_model="fake",
        )
        service = Service(cfg)
        seed_history(service.memory)
        with LiveServer(create_app(cfg, service=service, warm_up=False)) as base, Client(base) as client:
            results = run_live(client)
            yield Site(base, service, [r.trace_id for r in results])
        service.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: scripts/setup installs chromium and chromium-driver")
        pytest.skip("no Chromium here: apt-get install -y chromium chromium-driver (scripts/setup does)")
    with chromium() as driver:
        driver.implicitly_wait(5)
        yield driver


def _css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def _all(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def test_users_sessions_timeline_and_trace_panel(site: Site, browser: Any) -> None:
    browser.get(f"{site.base}/ui/?lang=en")
    _css(browser, f'#users a[href="/ui/u/{DEMO_USER}"]').click()
    # The newest session is open; every live turn is there, its user messages traced.
    assert _css(browser, ".sess.on .sid").text == DEMO_SESSION
    turns = _all(browser, "#timeline .turn")
    assert len(turns) == 2 * len(LIVE_TURNS)
    assert LIVE_TURNS[0] in turns[0].text
    traced = _all(browser, "#timeline .turn.traced")
    assert len(traced) == len(LIVE_TURNS)
    assert len(_all(browser, "#sessions .sess")) > 10  # the imported weeks are sessions too

    # Clicking a turn loads its trace into the side panel (JS), without leaving the page.
    url = browser.current_url
    traced[0].click()
    panel = _css(browser, f'#trace-panel #trace[data-trace-id="{site.traces[0]}"]')
    assert browser.current_url.split("?")[0] == url.split("?")[0]
    assert "active" in traced[0].get_attribute("class")
    assert LIVE_TURNS[0] in _css(panel, ".user-bubble").text
    assert _css(panel, "#stage-route .mode").text  # a mode chip
    assert _all(panel, '#signals .chip[data-signal="recall"]')
    rows = _all(panel, "#candidates tbody tr")
    assert rows and "bm25" in _css(panel, "#candidates thead").text
    assert _all(panel, "#candidates tbody tr.sel")  # paged-in candidates are highlighted
    assert _all(panel, "#paged li")
    # The budget bar: one segment per part, together within the bar.
    segs = _all(panel, "#budget-bar .seg")
    parts = {s.get_attribute("data-part") for s in segs}
    assert {"system", "memory", "new_message"} <= parts
    bar = _css(panel, "#budget-bar").size["width"]
    assert 0 < sum(s.size["width"] for s in segs) <= bar + len(segs)
    # The panel's turn is kept in the URL: reloading reopens it.
    assert f"trace={site.traces[0]}" in browser.current_url
    browser.refresh()
    assert _css(browser, f'#trace-panel #trace[data-trace-id="{site.traces[0]}"]')


def test_trace_page_shows_the_pipeline_and_the_rename(site: Site, browser: Any) -> None:
    rename = site.traces[2]
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/trace/{rename}?lang=en")
    stages = [s.get_attribute("id") for s in _all(browser, ".pipeline > .stage")]
    assert stages == [
        "stage-blocking",
        "stage-route",
        "stage-retrieval",
        "stage-paged",
        "stage-budget",
        "stage-llm",
        "stage-jobs",
    ]
    # Long candidate tables show the top rows; "show all" opens the rest.
    rows = _all(browser, "#candidates tbody tr")
    assert len(rows) > views.CANDIDATES_SHOWN
    assert sum(r.is_displayed() for r in rows) == views.CANDIDATES_SHOWN
    _css(browser, '[data-expand="candidates"]').click()
    assert all(r.is_displayed() for r in rows)
    assert "bm25" in _css(browser, "#layers").text
    blocking = _css(browser, "#stage-blocking").text
    assert "consistency command" in blocking and "大伟" in blocking
    assert _css(browser, '#signals .chip.on[data-signal="command"]')
    assert "fake" in _css(browser, "#stage-llm").text  # the reply call's model
    raw = _css(browser, "details.raw pre").get_attribute("textContent")
    assert rename in raw
    # The live turns 3-4 fill the session's second page of 4 turns: the last turn queued its bookmark job.
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/trace/{site.traces[3]}")
    jobs = [j for j in _all(browser, "#trace-jobs tbody tr") if " bookmark " in f" {j.text} "]
    assert jobs  # beside it, the LLM labeller's job of the turn (mood_label)
    assert _css(jobs[0], ".status").get_attribute("class").split()[-1] in {
        f"st-{s}" for s in ("queued", "running", "done")
    }


def test_profile_bookmarks_and_jobs_pages(site: Site, browser: Any) -> None:
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/profile?lang=en")
    assert "大伟" in _css(browser, "#profile .facts").text
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/bookmarks")
    cards = _all(browser, "#bookmarks .bm")
    assert len(cards) == len(site.service.memory.store.bookmarks(DEMO_USER))
    assert _all(cards[0], ".chip.key")
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/jobs")
    rows = _all(browser, "#job-table tbody tr")
    assert rows and any("bookmark" in r.text for r in rows)


def test_chinese_switch_is_remembered(site: Site, browser: Any) -> None:
    browser.get(f"{site.base}/ui/u/{DEMO_USER}?lang=zh")
    assert _css(browser, "#tab-timeline").text == "时间线"
    assert _css(browser, "html").get_attribute("lang") == "zh-CN"
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/trace/{site.traces[0]}")  # no ?lang: the cookie
    assert _css(browser, "#stage-retrieval h3").text == "3 · 各层候选"
    assert _css(browser, "#lang-switch").text == "English"
    _css(browser, "#lang-switch").click()
    assert _css(browser, "#stage-retrieval h3").text == "3 · Candidates per layer"


def test_unknown_trace_keys_are_rendered(site: Site, browser: Any) -> None:
    """Stages added later (mood, strategy, anything new) show up without a UI change."""
    store = site.service.memory.store
    trace = dict(store.trace_get(site.traces[1], DEMO_USER) or {})
    trace.update(
        id="t-extra",
        mood={"label": "low", "valence": -0.4, "cause": "工作面试没过"},
        strategy={"name": "comfort_first", "rules": ["先共情", "don't lecture"]},
        novel_stage={"widgets": 3, "note": "新的阶段"},
    )
    with store.transaction() as tx:
        store.trace_put(tx, "t-extra", DEMO_USER, DEMO_SESSION, created_at=0.0, turn_ids=[], data=trace)
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/trace/t-extra?lang=en")
    assert "工作面试没过" in _css(browser, "#mood").text
    assert "comfort_first" in _css(browser, "#strategy").text and "先共情" in _css(browser, "#strategy").text
    more = _css(browser, "#more").text
    assert "novel_stage" in more and "新的阶段" in more


def test_companion_mood_and_strategy_read_well(site: Site, browser: Any) -> None:
    """The companion stages' shapes: a mood carried into the turn and after it, a strategy with the
    budget shares it gives each memory source."""
    store = site.service.memory.store
    trace = dict(store.trace_get(site.traces[1], DEMO_USER) or {})
    trace["route"] = {**trace["route"], "mood": "sad", "mood_intensity": 0.7}
    trace.update(
        id="t-companion",
        mood={
            "carried": {"label": "calm", "intensity": 0.2, "cause_turn_ids": []},
            "after": {"label": "sad", "intensity": 0.7, "cause_turn_ids": [394]},
            "event": "setback",
        },
        strategy={
            "name": "comfort",
            "reason": "mode comfort + mood sad",
            "shares": {"recalled": 0.5, "recent": 0.3},
        },
    )
    with store.transaction() as tx:
        store.trace_put(tx, "t-companion", DEMO_USER, DEMO_SESSION, created_at=0.0, turn_ids=[], data=trace)
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/trace/t-companion?lang=zh")
    mood = _css(browser, "#mood")
    labels = [e.text for e in _all(mood, ".mood-label")]
    assert labels == ["平静", "难过"] and "setback" in mood.text
    strategy = _css(browser, "#strategy")
    assert _css(strategy, ".strat").text == "comfort" and "mode comfort + mood sad" in strategy.text
    assert [e.text for e in _all(strategy, ".mb-v")] == ["50%", "30%"]


def test_not_found_and_escaping(site: Site) -> None:
    assert httpx.get(f"{site.base}/ui/u/nobody").status_code == 404
    assert httpx.get(f"{site.base}/ui/u/{DEMO_USER}/trace/nope").status_code == 404
    # Another user's trace id is not found under this user: everything is scoped by user.
    assert httpx.get(f"{site.base}/ui/u/someone-else/trace/{site.traces[0]}").status_code == 404
    memory = site.service.memory
    memory.add("mallory", "s1", "user", "<script>alert(1)</script> & 你好")
    page = httpx.get(f"{site.base}/ui/u/mallory").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; 你好" in page
    css = httpx.get(f"{site.base}/ui/static/ui.css")
    assert css.status_code == 200 and "Noto Sans CJK SC" in css.text
    assert "http" not in httpx.get(f"{site.base}/ui/static/ui.js").text  # nothing loads from elsewhere


@pytest.mark.parametrize("name", ["org/42", "..", "."])
def test_any_user_id_opens_from_the_index(site: Site, name: str) -> None:
    """The index links a user with a '/' (README's own `org/42`) or named "." or ".." to their pages.
    Before, "org/42" was a 404 (the decoded '/' split the path) and ".." resolved to the index."""
    site.service.memory.add(name, f"{name}-s", "user", f"I am user {name!r}")
    link = {"org/42": "/ui/u/org%2F42", "..": "/ui/u/%2E%2E", ".": "/ui/u/%2E"}[name]
    assert f'href="{link}"' in httpx.get(f"{site.base}/ui/").text
    for tab in ("", "/profile", "/bookmarks", "/jobs"):
        page = httpx.get(f"{site.base}{link}{tab}")
        assert page.status_code == 200, (tab, page.text[:200])
    assert f"I am user {name!r}".replace("'", "&#39;") in httpx.get(f"{site.base}{link}").text


def test_budget_bar_shares() -> None:
    bar = views.budget_bar(
        {"system": 100, "memory": 300, "recent": 100, "new_message": 20, "total": 540, "budget": 1000}
    )
    assert [p["name"] for p in bar["parts"]] == ["system", "memory", "recent", "new_message", "other"]
    assert bar["parts"][-1]["tokens"] == 20 and bar["free"] == 460 and not bar["over"]
    over = views.budget_bar({"memory": 1500, "total": 1500, "budget": 1000})
    assert over["over"] and over["parts"][0]["pct"] == 100.0 and over["free"] == 0


def test_ui_files_ship_with_the_package() -> None:
    root = Path(views.__file__).parent
    assert (root / "templates" / "trace_body.html").is_file() and (root / "static" / "ui.css").is_file()
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert "server/ui/templates/*.html" in pyproject and "server/ui/static/*" in pyproject


def test_recall_tool_loop_is_shown(site: Site, browser: Any) -> None:
    """The model paged the first-date story in through `recall` before answering: the trace shows the
    page with its bookmark keywords, and both upstream calls; the timeline marks the reply."""
    trace = site.service.memory.store.trace_get(site.traces[0], DEMO_USER) or {}
    pages = [r["page_id"] for r in trace["llm"]["recall"] if r["ok"]]
    assert pages
    browser.get(f"{site.base}/ui/u/{DEMO_USER}/trace/{site.traces[0]}?lang=en")
    recalls = _all(browser, "#recalls li.ok")
    assert [r.find_element("css selector", ".mono").text for r in recalls] == [f"p{p}" for p in pages]
    assert _all(recalls[0], ".chip.key")  # what the page's bookmark says it is about
    assert len(_all(browser, "#llm-calls tbody tr")) == 2  # the recall round, then the answer
    browser.get(f"{site.base}/ui/u/{DEMO_USER}?lang=en")
    reply = _all(browser, "#timeline .turn.role-assistant")[0]
    assert f"p{pages[0]}" in reply.text and "Blue Heron" in reply.text


def test_with_api_keys_the_ui_asks_for_one(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    """Keys configured: /ui redirects to a login form; a valid key (kept in an HttpOnly cookie for /ui
    only) opens the UI, scoped to its tenant; the API itself still wants the bearer header."""
    key = "acme-secret-0123456789abcdef"
    cfg = Config.load(home=tmp_path / "keys", embedders="hash", api_keys=f"acme:{key}")
    with LiveServer(create_app(cfg)) as base:
        with Client(base, api_key=key) as client:
            client.add("mei", "s1", "user", "我的猫叫芝麻")
        browser.delete_all_cookies()
        browser.get(f"{base}/ui/u/mei?lang=en")
        assert "/ui/login" in browser.current_url
        _css(browser, "#key").send_keys("wrong-key-000000000000")
        _css(browser, "#login-submit").click()
        assert "not valid" in _css(browser, ".login .alert").text
        _css(browser, "#key").send_keys(key)
        _css(browser, "#login-submit").click()
        WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith("/ui/u/mei"))  # back where it was
        assert "我的猫叫芝麻" in _css(browser, "#timeline").text
        cookie = browser.get_cookie("memsched_ui_key")
        assert cookie["httpOnly"] and cookie["path"] == "/ui" and cookie["sameSite"] == "Strict"
        # The cookie opens the UI only, not the API; and login never redirects off the UI.
        assert httpx.get(f"{base}/v1/users/mei/sessions", cookies={"memsched_ui_key": key}).status_code == 401
        evil = httpx.post(f"{base}/ui/login?next=//evil.example/x", data={"key": key})
        assert evil.status_code == 303 and evil.headers["location"] == "/ui/"
        _css(browser, "#logout").click()
        WebDriverWait(browser, 10).until(lambda d: "/ui/login" in d.current_url)
        assert browser.get_cookie("memsched_ui_key") is None
