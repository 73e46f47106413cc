"""The web page in a real browser: Playwright driving Debian's Chromium, headless.

A real server (Redis, the test model server streaming slowly) behind a real page. Screenshots
of the main states go to a temporary folder, so a test run leaves the checkout clean; to
refresh the committed ones in ``bench/results/screenshots/`` on purpose, run with
``SEEKGRAPH_SCREENSHOTS=bench/results/screenshots``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect, sync_playwright

from seekgraph.server.auth import add_key_to_file
from tests.support import REPO, RESTRICTED_MARKERS
from tests.support.processes import (
    Proc,
    start_app,
    start_fake,
    start_model_server,
    start_redis,
)

SHOTS = Path(os.environ.get("SEEKGRAPH_SCREENSHOTS") or tempfile.mkdtemp(prefix="seekgraph-shots-"))
if not SHOTS.is_absolute():
    SHOTS = REPO / SHOTS
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VPN = "How do I connect to the VPN from a new laptop?"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("web")
    procs: list[Proc] = []
    try:
        url = os.environ.get("SEEKGRAPH_TEST_REDIS_URL")
        if url is None:
            redis_proc, url = start_redis(tmp)
            procs.append(redis_proc)
        model = start_model_server(tmp, delay=0.04, tokens=60, first_delay=0.8)
        procs.append(model)
        keys = tmp / "keys.json"
        site = {"alice": add_key_to_file(keys, "alice"), "bob": add_key_to_file(keys, "bob")}
        app = start_app(
            tmp,
            "web",
            {
                "SEEKGRAPH_REDIS_URL": url,
                "SEEKGRAPH_API_KEYS_FILE": keys,
                "SEEKGRAPH_LLM_MODEL": "test-model",
                "SEEKGRAPH_LLM_BASE_URL": model.url + "/v1",
                "SEEKGRAPH_LLM_API_KEY": "unused",
            },
        )
        procs.append(app)
        site["url"] = app.url
        yield site
    finally:
        for p in reversed(procs):
            p.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    p = context.new_page()
    yield p
    context.close()


def sign_in(page: Page, site: dict, user: str) -> None:
    page.goto(site["url"] + "/")
    page.get_by_label("Your API key").fill(site[user])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_contain_text(user.capitalize() if False else "Signed in as")


def ask(page: Page, question: str) -> None:
    page.get_by_label("Your question").fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()


def wait_done(page: Page) -> None:
    expect(page.locator("#progress-status")).to_have_text("(done)", timeout=60_000)


def test_ask_shows_a_cited_answer_and_the_source_behind_a_citation(page: Page, site: dict) -> None:
    sign_in(page, site, "alice")
    ask(page, VPN)
    expect(page.locator("#timeline li").first).to_be_visible(timeout=30_000)
    page.screenshot(path=str(SHOTS / "streaming.png"))
    wait_done(page)
    cites = page.locator("#answer .cite")
    expect(cites.first).to_be_visible()
    cited = cites.first.get_attribute("data-cite") or ""
    cites.first.click()
    panel = page.locator("#source-panel")
    expect(panel).to_be_visible()
    # the panel shows the document the server says this citation is
    auth = {"Authorization": f"Bearer {site['alice']}"}
    thread = httpx.get(site["url"] + "/threads", headers=auth).json()[0]["thread_id"]
    state = httpx.get(f"{site['url']}/threads/{thread}/state", headers=auth).json()
    [citation] = [
        c
        for c in state["values"]["citations"]
        if c["id"] == cited.replace("%2F", "/").replace("%23", "#")
    ]
    expect(page.locator("#source-title")).to_have_text(citation["title"])
    assert panel.get_attribute("data-doc") == citation["doc_id"]
    assert citation["doc_id"] == "kb/vpn-access"
    expect(page.locator("#source-meta")).to_contain_text("knowledge base")
    expect(page.locator("#source-link")).to_have_attribute(
        "href", "https://kb.fernhill.example/it/vpn"
    )
    # the passage is rendered as Markdown: its section is a heading, not "# …"
    snippet = page.locator("#source-snippet")
    expect(snippet.locator("h1")).to_have_text("Install the client")
    assert not snippet.inner_text().lstrip().startswith("#")
    expect(page.locator("#progress summary")).to_contain_text("What I did")
    page.screenshot(path=str(SHOTS / "answer-with-source.png"), full_page=True)


def test_reload_mid_answer_completes_it_once(page: Page, site: dict) -> None:
    sign_in(page, site, "alice")
    ask(page, VPN)
    expect(page.locator("#answer")).to_contain_text("w3", timeout=30_000)  # streaming
    page.reload()
    wait_done(page)
    text = page.locator("#answer").inner_text()
    for word in ("w0 ", "w10 ", "w59"):
        assert text.count(word) == 1, (word, text)
    assert text.startswith("Answer w0")
    expect(page.locator("#answer .cite")).to_have_count(1)
    page.screenshot(path=str(SHOTS / "after-reload.png"))


def test_stop_ends_the_run_and_keeps_what_it_saved(page: Page, site: dict) -> None:
    sign_in(page, site, "alice")
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_hidden()
    ask(page, VPN)
    expect(page.locator("#timeline li").first).to_be_visible(timeout=30_000)

    def slow_reply(route: Route) -> None:
        # the stream's "cancelled" end often reaches the page before the cancel's own
        # reply does (a loaded machine): the page must still say it stopped
        response = route.fetch()
        time.sleep(1.5)  # the scenario: a slow reply, not a wait on a condition
        route.fulfill(response=response)
        replied.append(response.status)

    replied: list[int] = []
    page.route("**/runs/*/cancel", slow_reply)
    stop.click()
    while not replied:
        page.wait_for_timeout(50)
    page.wait_for_timeout(300)  # the page has read the reply
    assert replied == [202], replied
    expect(page.locator("#progress-status")).to_have_text(
        "(stopped — what it found so far is kept)", timeout=5_000
    )
    expect(stop).to_be_hidden()
    expect(page.get_by_role("button", name="Ask", exact=True)).to_be_enabled()
    auth = {"Authorization": f"Bearer {site['alice']}"}
    thread = httpx.get(site["url"] + "/threads", headers=auth).json()[0]["thread_id"]
    [run] = httpx.get(f"{site['url']}/threads/{thread}/runs", headers=auth).json()
    assert run["status"] == "cancelled" and run["cancel"] == "interrupt"
    state = httpx.get(f"{site['url']}/threads/{thread}/state", headers=auth).json()
    assert state["values"]["question"] == VPN and not state["values"].get("answer")
    page.screenshot(path=str(SHOTS / "stopped.png"))


def test_a_source_turned_off_is_never_cited(page: Page, site: dict) -> None:
    sign_in(page, site, "alice")
    page.get_by_role("checkbox", name="kb").uncheck()
    ask(page, VPN)
    wait_done(page)
    cited = [c.get_attribute("data-cite") or "" for c in page.locator("#answer .cite").all()]
    assert cited and not any(c.startswith("kb") for c in cited), cited
    page.reload()  # remembered per browser
    expect(page.get_by_role("checkbox", name="kb")).not_to_be_checked()
    page.get_by_role("checkbox", name="kb").check()


def test_a_non_image_named_png_is_refused_before_anything_is_sent(
    page: Page, site: dict, tmp_path: Path
) -> None:
    sign_in(page, site, "bob")
    fake = tmp_path / "screenshot.png"
    fake.write_text("this is plain text, not a picture")
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/runs" in r.url else None)
    page.locator("#images").set_input_files(str(fake))
    expect(page.locator("#ask-error")).to_contain_text("is not a PNG, JPEG, WebP or GIF image")
    expect(page.locator("#previews li")).to_have_count(0)
    assert sent == []
    page.screenshot(path=str(SHOTS / "image-refused.png"))


def test_a_second_user_never_sees_the_first_users_threads(page: Page, site: dict) -> None:
    sign_in(page, site, "alice")
    ask(page, "What did the Project Nightjar penetration test find?")
    wait_done(page)
    expect(page.locator("#thread-list")).to_contain_text("Project Nightjar")
    page.get_by_role("button", name="Sign out").click()
    # signed out, alice's threads and answer are gone from the page, not merely hidden
    assert "Nightjar" not in page.locator("#app").inner_html()
    alices = {
        t["thread_id"]
        for t in httpx.get(
            site["url"] + "/threads", headers={"Authorization": f"Bearer {site['alice']}"}
        ).json()
    }
    sign_in(page, site, "bob")
    expect(page.locator("#who")).to_contain_text("Bob")
    page.wait_for_load_state("networkidle")  # bob's own thread list has arrived
    shown = page.locator("#thread-list button").evaluate_all("bs => bs.map(b => b.dataset.thread)")
    assert alices and not alices & set(shown)  # (bob may have asked the same question himself)
    listed = httpx.get(
        site["url"] + "/threads", headers={"Authorization": f"Bearer {site['bob']}"}
    ).json()
    assert not alices & {t["thread_id"] for t in listed}


def test_phone_sized_and_keyboard_only(browser: Browser, site: dict) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    try:
        page.goto(site["url"] + "/")
        page.keyboard.type(site["bob"])  # the key field has focus
        page.keyboard.press("Enter")
        expect(page.locator("#who")).to_contain_text("Signed in as")
        page.locator("#question").focus()
        page.keyboard.type("What is the daily meal allowance when travelling?")
        page.keyboard.press("Control+Enter")
        wait_done(page)
        page.locator("#answer .cite").first.focus()
        page.keyboard.press("Enter")
        expect(page.locator("#source-panel")).to_be_visible()
        page.screenshot(path=str(SHOTS / "phone.png"), full_page=True)
        page.keyboard.press("Escape")
        expect(page.locator("#source-panel")).to_be_hidden()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, f"the page scrolls sideways on a phone ({width}px)"
    finally:
        context.close()


def test_signed_out_the_page_shows_only_the_sign_in_form(page: Page, site: dict) -> None:
    page.goto(site["url"] + "/")
    expect(page.get_by_label("Your API key")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()  # not laid out under the form
    expect(page.get_by_label("Your question")).to_be_hidden()


def test_a_follow_up_keeps_the_previous_turn_and_threads_show_their_date(
    page: Page, site: dict
) -> None:
    sign_in(page, site, "alice")
    ask(page, VPN)
    wait_done(page)
    first_answer = page.locator("#answer").inner_text()
    ask(page, "And which WireGuard profile do I import?")
    earlier = page.locator("#turns .turn")
    expect(earlier).to_have_count(1)  # at once, while the new answer streams
    expect(earlier.first.locator("h3")).to_have_text(VPN)
    assert first_answer.split("[")[0][:20] in earlier.first.inner_text()
    wait_done(page)
    expect(page.locator("#current-question")).to_have_text(
        "And which WireGuard profile do I import?"
    )
    stamp = page.locator("#thread-list button[aria-current='true'] time")
    expect(stamp).to_have_count(1)
    assert (stamp.get_attribute("datetime") or "").startswith("20")


def test_a_research_report_is_planned_reviewed_read_and_downloaded(page: Page, site: dict) -> None:
    sign_in(page, site, "bob")
    page.get_by_label("Your question").fill("Everything about the VPN and travel")
    page.locator("#flow").select_option("research")
    page.get_by_label("review the plan first").check()
    page.get_by_role("button", name="Ask", exact=True).click()
    actions = page.locator("#plan-actions")
    expect(actions).to_be_visible(timeout=60_000)
    items = page.locator("#plan-list li")
    expect(items).to_have_count(3)
    # the plan as a tree: q3 needs q1's answer and sits indented below the first level
    assert items.nth(2).get_attribute("data-id") == "q3"
    assert items.nth(2).evaluate("e => parseFloat(getComputedStyle(e).marginLeft)") > 0
    # an edit that cannot run is refused with the reason, and nothing is researched
    page.get_by_label("Keep q1").uncheck()
    page.get_by_role("button", name="Approve and research").click()
    expect(page.locator("#plan-error")).to_contain_text("q3 depends on unknown q1", timeout=30_000)
    assert "research_one" not in page.locator("#timeline").inner_text()
    # the edit stays on the page to be fixed: keep q1 after all, reword q2, drop q3
    page.get_by_label("Keep q1").check()
    page.get_by_label("Sub-question q2").fill("What is the daily meal allowance?")
    page.get_by_label("Keep q3").uncheck()
    page.screenshot(path=str(SHOTS / "research-plan-review.png"), full_page=True)
    page.get_by_role("button", name="Approve and research").click()
    wait_done(page)
    expect(items).to_have_count(2)
    expect(items.nth(1)).to_contain_text("What is the daily meal allowance?")
    expect(items.nth(1)).to_contain_text("done")
    answer = page.locator("#answer")
    expect(answer.locator("h2").first).to_have_text("Contents")
    expect(answer.locator("h2").nth(1)).to_have_text("What is the daily meal allowance?")
    expect(page.locator("#plan-error")).to_be_hidden()
    cite = answer.locator(".cite").first
    cited = (cite.get_attribute("data-cite") or "").replace("%2F", "/").replace("%23", "#")
    cite.click()
    auth = {"Authorization": f"Bearer {site['bob']}"}
    thread = httpx.get(site["url"] + "/threads", headers=auth).json()[0]["thread_id"]
    state = httpx.get(f"{site['url']}/threads/{thread}/state", headers=auth).json()["values"]
    [reference] = [r for r in state["references"] if r["id"] == cited]
    expect(page.locator("#source-title")).to_have_text(reference["title"])
    page.screenshot(path=str(SHOTS / "research-report.png"), full_page=True)
    downloads = {}
    for name in ("Markdown", "HTML", "Evidence (JSON)"):
        with page.expect_download() as got:
            page.locator("#downloads").get_by_role("button", name=name).click()
        downloads[name] = Path(got.value.path()).read_text()
    assert downloads["Markdown"] == state["answer"]
    assert "<article>" in downloads["HTML"] and "<h2>Contents</h2>" in downloads["HTML"]
    bundle = json.loads(downloads["Evidence (JSON)"])
    assert [r["id"] for r in bundle["references"]] == [r["id"] for r in state["references"]]
    assert [s["id"] for s in state["plan"]] == ["q1", "q2"]
    # bob's plan, report, sources and downloads hold nothing of the security team's
    shown = page.locator("#current").inner_html() + json.dumps(downloads)
    assert not [m for m in RESTRICTED_MARKERS if m in shown]


@pytest.fixture(scope="module")
def web_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A server whose sources include the web (a SearxNG-compatible engine on loopback)."""
    tmp = tmp_path_factory.mktemp("web-source")
    procs: list[Proc] = []
    try:
        engine = start_fake(tmp, "web_server", ready="/calls")
        procs.append(engine)
        engine_url = engine.url.replace("127.0.0.1", "localhost")
        keys = tmp / "keys.json"
        site = {"alice": add_key_to_file(keys, "alice"), "engine": engine_url}
        app = start_app(
            tmp,
            "web-source",
            {
                "SEEKGRAPH_API_KEYS_FILE": keys,
                "SEEKGRAPH_SEARXNG_URL": engine_url,
                "SEEKGRAPH_WEB_ALLOW_HOSTS": "localhost",
            },
        )
        procs.append(app)
        site["url"] = app.url
        yield site
    finally:
        for p in reversed(procs):
            p.stop()


def test_a_web_citation_shows_its_domain_and_when_it_was_read(page: Page, web_site: dict) -> None:
    sign_in(page, web_site, "alice")
    ask(page, "How often does WireGuard complete a handshake?")
    wait_done(page)
    web_cite = page.locator('#answer .cite[data-cite^="web%3A"]').first
    expect(web_cite).to_be_visible()
    web_cite.click()
    expect(page.locator("#source-meta")).to_contain_text("web page · localhost · fetched 20")
    link = page.locator("#source-link")
    expect(link).to_have_text("Open localhost")
    assert (link.get_attribute("href") or "").startswith(web_site["engine"] + "/p/")
    page.screenshot(path=str(SHOTS / "web-citation.png"))
