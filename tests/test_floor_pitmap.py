"""The pit map, a table's page, a round's dispute report and the shift page in Debian's headless chromium (issue 29),
against a real PostgreSQL holding 200 tables stored through the archive's store function
(tablebench/pitmap_floor.py: one table really played by the table's core, a round dealt with its hole card down)
and a layout of five pits in two areas. The floor is built once for the module; each test opens its own page in
one logged-in browser. Screenshots go to docs/screenshots/floor-*.png when UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import BrowserContext, expect

from floor.common.alerts import raise_alert
from floor.common.layout import parse_layout
from floor.common.messages import TableRef
from floor.reports.figures import GLOSSARY
from tablebench.pitmap_floor import (
    HOLE,
    PLAYED,
    SITE,
    build_floor,
    hear_from_online_tables,
    layout_toml,
    publish,
)
from tests.support.floor import temp_database
from tests.support.floor_web import CHROMIUM, WebThread, chromium, dashboard, log_in

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test's set-up does)"
)
N = 200
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
# every tile and its lines: no text cut off (what overflows is clipped by nothing, so it would show as overflow),
# font size at least 11 px, and the page no wider than the window
READABLE = """() => {
  const bad = [];
  for (const t of document.querySelectorAll('.tile:not([hidden])')) {
    for (const e of [t, ...t.querySelectorAll('*')]) {
      const size = parseFloat(getComputedStyle(e).fontSize);
      if (size < 11) bad.push(t.dataset.table + ' font ' + size);
      const cut = e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1;
      if (cut) bad.push(t.dataset.table + ' clipped');
    }
  }
  return {bad: bad.slice(0, 5), scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
          tiles: document.querySelectorAll('.tile').length,
          onScreen: [...document.querySelectorAll('.tile')]
            .filter(t => t.getBoundingClientRect().bottom <= innerHeight).length};
}"""
CODE_NAME = re.compile(r"\b[a-z]+_[a-z_]+\b|\b(?:[2-9TJQKA][SHDC])\b")


def _shot(page, name: str, tmp_path: Path) -> None:
    path = SHOTS / name if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path / name
    page.screenshot(path=str(path), full_page=True)


@dataclass
class Floor:
    dsn: str
    web: WebThread
    context: BrowserContext


@pytest.fixture(scope="module")
def floor():
    with temp_database() as dsn:
        build_floor(dsn, N)
        with (
            dashboard(dsn, layout=parse_layout(layout_toml(N)), sse_per_user=32) as web,
            chromium() as browser,
        ):
            context = browser.new_context(viewport={"width": 1920, "height": 1080})
            log_in(context.new_page(), web.url, "carol")
            yield Floor(dsn, web, context)
            context.close()


def _map(floor, width: int, height: int):
    hear_from_online_tables(floor.dsn)  # the module's tests may run past CONTACT_STALE_S after build_floor
    page = floor.context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(floor.web.url + "/")
    expect(page.locator(".tile")).to_have_count(N, timeout=30_000)
    return page


def test_two_hundred_tables_on_one_full_hd_screen_grouped_by_pit_in_words(floor, tmp_path):
    page = _map(floor, 1920, 1080)
    seen = page.evaluate(READABLE)
    _shot(page, "floor-pitmap.png", tmp_path)
    assert seen["bad"] == [] and seen["scroll"] <= seen["inner"], seen
    assert seen["onScreen"] == N, f"only {seen['onScreen']} of {N} tiles on the first screen"
    # pits as groups (each a section holding its own tiles), in the layout's order whatever their areas
    assert page.locator("section.pit").count() == 5
    assert page.eval_on_selector_all("section.pit > .pit-label > b", "bs => bs.map(b => b.textContent)") == [
        "Pit 1", "Pit 2", "Pit 3", "Pit 4", "Pit 5"]  # fmt: skip
    assert (
        page.eval_on_selector_all(
            "section.pit",
            "ps => ps.map(p => [...p.querySelectorAll('.tile')].every(t => t.dataset.pit === p.dataset.pit))",
        )
        == [True] * 5
    )
    boxes = page.eval_on_selector_all("section.pit", "ps => ps.map(p => p.getBoundingClientRect().toJSON())")
    assert all(a["bottom"] <= b["top"] for a, b in itertools.pairwise(boxes)), "pits do not overlap"
    # coloured by attention, with the words for it (tablebench/pitmap_floor.py: jam at 5, offline at 11, ...)
    for table, attention, words in (("bj005", "fault", "dealing stopped"), ("bj011", "unreachable",
                                    "out of reach"), ("bj013", "critical", "critical alert"),
                                    ("bj007", "closed", "closed"), ("bj002", "open", "open")):  # fmt: skip
        tile = page.locator(f".tile[data-table='{table}']")
        assert tile.get_attribute("data-attention") == attention and words in tile.inner_text()
    tile = page.locator(".tile[data-table='bj004']")
    assert all(
        x in tile.inner_text() for x in ("PT-2001", "10.00–1,000.00", "Dealer 5", "1,005.40 EUR", "s ago")
    )
    assert tile.locator(".seats").get_attribute("aria-label") == "seats 2 5 in play"
    # the played table is dealing (state/table "bets": {} once dealing starts): its round's seats are in play
    played = page.locator(f".tile[data-table='{PLAYED}'] .seats")
    assert played.get_attribute("aria-label") == "seats 3 in play"
    assert "Shoe jam" in page.locator(".tile[data-table='bj005']").get_attribute("title")
    text = page.inner_text("#map") + page.inner_text("#alerts")
    assert not CODE_NAME.findall(text), CODE_NAME.findall(text)[:5]
    _shot(page, "floor-pitmap.png", tmp_path)
    page.close()


def test_a_tablet_sees_the_map_without_scrolling_sideways(floor, tmp_path):
    page = _map(floor, 768, 1024)
    seen = page.evaluate(READABLE)
    assert seen["bad"] == [] and seen["scroll"] <= seen["inner"], seen
    alerts = page.evaluate(
        "[...document.querySelectorAll('.alert .msg')].map(e => e.getBoundingClientRect().width)"
    )
    assert alerts and min(alerts) > 100  # an alert's text is not drawn one letter per line
    _shot(page, "floor-pitmap-tablet.png", tmp_path)
    page.close()


def test_filter_by_pit_game_state_attention_and_search(floor):
    page = _map(floor, 1920, 1080)
    page.select_option("#filter-pit", "Pit 2")
    visible = page.locator(".tile:not([hidden])")
    expect(visible).to_have_count(40)
    assert set(page.eval_on_selector_all(".tile:not([hidden])", "ts => ts.map(t => t.dataset.pit)")) == {
        "Pit 2"
    }
    assert page.locator("section.pit:not([hidden])").count() == 1
    page.select_option("#filter-attention", "fault")
    expect(visible).to_have_count(2)  # a jam every 37th table from 5: 5, 42, 79, ...
    assert visible.evaluate_all("ts => ts.map(t => t.dataset.table)") == ["bj042", "bj079"]
    page.select_option("#filter-pit", "")
    page.select_option("#filter-attention", "")
    page.select_option("#filter-game", "ro-2004")
    page.select_option("#filter-state", "Betting")
    expect(visible).to_have_count(len([i for i in range(2, N + 1) if i % 2 and i % 23 != 7 and i % 37 != 5]))
    page.select_option("#filter-game", "")
    page.select_option("#filter-state", "")
    page.fill("#search", "bj00")
    expect(visible).to_have_count(9)
    page.close()


def test_a_table_page_shows_only_public_cards_its_rounds_and_the_archive(floor, tmp_path):
    page = _map(floor, 1280, 900)
    page.click(f".tile[data-table='{PLAYED}']")
    page.wait_for_url("**/table?*")
    expect(page.locator("#round")).to_contain_text("(face down)", timeout=30_000)
    body = page.inner_text("body")
    assert "7♥" in page.inner_text("#round") and "4♠ 8♣" in page.inner_text("#round")
    hole = HOLE[0] + "♣"
    assert hole not in body and HOLE not in body  # the hole card is on no page before it is revealed (r.17)
    expect(page.locator("#rounds tbody tr")).to_have_count(2)
    assert "Seat 1: wins, +40.00" in page.inner_text("#rounds")
    assert "Archive, for what is shown\ncomplete (archived to event 138" in page.inner_text("#facts")
    _shot(page, "floor-table.png", tmp_path)

    page.goto(floor.web.url + "/table?site=S1&table=bj002")  # the meter over time, an SVG drawn from numbers
    expect(page.locator("#meter svg polyline")).to_have_count(1, timeout=30_000)
    assert "1,005.20 EUR" in page.inner_text("#meter")

    # a table of a linked progressive (issue 40): the link's events are not its meter; the link and its figures
    linked = {"link": "bank-a", "round_id": "r9", "seat": 1, "currency": "EUR"}
    publish(floor.dsn, 3, "events/jackpot", 6, {"action": "contribution", **linked, "seats": [1, 2], "chips": 2,
                                                "bet_value": 100, "amount_minor": 200})  # fmt: skip
    publish(floor.dsn, 3, "events/jackpot", 7, {"action": "paid", **linked, "hit_id": 4, "amount_minor": 2500,
                                                "by": "inspector-rui"})  # fmt: skip
    page.goto(floor.web.url + "/table?site=S1&table=bj003")
    expect(page.locator("#facts")).to_contain_text("bank-a", timeout=30_000)
    facts = page.inner_text("#facts")
    assert "Linked progressive\nbank-a" in facts
    assert "Linked jackpot contributions, last 24 hours\n2.00 EUR" in facts
    assert "Linked jackpot paid, last 24 hours\n25.00 EUR" in facts
    # its own meter's last contribution, not the link's
    assert "Now: 1,005.30 EUR" in page.inner_text("#meter")
    # its state/jackpot names the link and has no meter of the table's: the pit map says which link, not a meter
    link = {"name": "bank-a", "up": True, "reason": "ok", "awaiting": []}
    publish(
        floor.dsn, 3, "state/jackpot", 8, {"meter": None, "link": link, "currency": "EUR", "playable": True}
    )
    page.goto(floor.web.url + "/")
    expect(page.locator(".tile[data-table='bj003'] .meter")).to_have_text("linked: bank-a", timeout=30_000)
    page.close()


def test_a_rounds_dispute_report_opens_as_a_page_with_its_own_policy(floor, tmp_path):
    page = floor.context.new_page()
    page.goto(floor.web.url + f"/table?site={SITE}&table={PLAYED}")
    link = page.locator("#rounds a.report").last
    link.wait_for(timeout=30_000)
    with page.expect_response(re.compile(r"/round\?")) as answer:
        link.click()
    csp = answer.value.headers["content-security-policy"]
    assert "script-src" not in csp and "default-src 'none'" in csp
    expect(page.locator("body")).to_contain_text("agrees with the journal")
    assert "2♣" in page.inner_text("body")  # the burn card, as a face
    assert "in EUR" in page.inner_text("body")  # the table's currency (issue 36)
    _shot(page, "floor-round-report.png", tmp_path)
    bad = page.request.get(floor.web.url + "/round?site=S1&table=bj001&round=%3Cscript%3E")
    assert bad.status == 400 and bad.json()["reason"].startswith("round: expected a name")
    with psycopg.connect(floor.dsn) as conn:  # answered and logged with who and why
        logged = conn.execute(
            "SELECT user_name, detail FROM dashboard_log WHERE event = 'refused'"
        ).fetchall()
    assert ("carol", "/round: round: expected a name of letters, digits, _ . : - (at most 64)") in logged
    page.close()


def test_hostile_text_from_a_table_stays_text_and_changes_arrive_live(floor):
    page = _map(floor, 1920, 1080)
    hostile = "<img src=x onerror=\"document.title='pwned'\">"
    doc = {"state": "betting", "profile": "pt-2001", "dealer": hostile, "faults": []}
    publish(floor.dsn, 50, "state/table", 6, doc)  # id 6: ids 1-5 hold other documents
    tile = page.locator(".tile[data-table='bj050']")
    expect(tile).to_contain_text("<img src=x", timeout=30_000)
    assert page.locator(".tile img").count() == 0 and page.title() == "Floor"

    with psycopg.connect(floor.dsn) as conn, conn.transaction():
        raise_alert(conn.cursor(), TableRef(SITE, "bj100"), "event_missing", "critical",
                    "events 40-41 never arrived", {}, "pitmap-live")  # fmt: skip
    expect(page.locator(".tile[data-table='bj100']")).to_have_attribute(
        "data-attention", "critical", timeout=30_000
    )
    alert = page.locator(".alert[data-table='bj100']")
    expect(alert).to_contain_text("Event missing from the archive")


def _shift_page(floor, width: int = 1920, height: int = 1080):
    page = floor.context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(floor.web.url + "/shift")
    now = datetime.now(UTC)
    page.fill("#since", (now - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M"))
    page.fill("#until", (now + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"))
    page.click("#show")
    row = page.locator("#figures tr.table", has_text=PLAYED)
    expect(row).to_have_count(1, timeout=30_000)
    return page, row


def test_the_shift_page_shows_the_figures_with_csv_and_the_page_with_plots(floor, tmp_path):
    page, row = _shift_page(floor)
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == PLAYED and cells[2] == "2" and cells[-1] == "Main floor"  # two rounds settled
    expect(page.locator("#glossary dt")).to_have_count(len(GLOSSARY))  # what each figure means, under them
    floor_row = page.locator("#figures tr.floor td").all_inner_texts()
    assert floor_row[0] == "whole floor"
    _shot(page, "floor-shift.png", tmp_path)
    csv = page.request.get(page.get_attribute("#csv", "href").replace("/shift", floor.web.url + "/shift", 1))
    assert csv.status == 200 and csv.text().startswith("level,area,pit,table,archive,rounds")
    html = page.request.get(
        page.get_attribute("#html", "href").replace("/shift", floor.web.url + "/shift", 1)
    )
    assert (
        html.status == 200
        and "<svg" in html.text()
        and "script-src" not in html.headers["content-security-policy"]
    )
    page.close()


def test_a_tablet_sees_the_shift_pages_hold_without_scrolling_sideways(floor, tmp_path):
    """Issue 36: on a 768 px tablet the hold column (win ÷ handle) is on screen, and so is every column before
    it (table, rounds, pace, handle, win); the rest scroll inside their panel, never the page."""
    page, row = _shift_page(floor, 768, 1024)
    _shot(page, "floor-shift-tablet.png", tmp_path)
    heads = page.locator("#figures thead th").all_inner_texts()
    hold = heads.index("hold %")
    assert heads[:hold] == [
        "table / pit",
        "archive",
        "rounds",
        "rounds per hour open",
        "handle",
        "win (house)",
    ]
    right = page.eval_on_selector_all(
        "#figures tr", f"rs => rs.map(r => r.children[{hold}].getBoundingClientRect().right)"
    )
    assert right and max(right) <= 768, right
    assert page.evaluate("document.documentElement.scrollWidth") <= 768
    assert row.locator("td").nth(hold).inner_text().endswith("%")
    page.close()


def test_a_tile_shows_the_seats_of_the_round_being_dealt() -> None:
    """Issue 36: the table empties `state/table` `bets` once dealing starts; the round's seats are in play then,
    and none once the round is over (tile data, floor/web/pitmap.py)."""
    from floor.web.pitmap import seats_in_play

    betting = {"round_id": "R1", "round_active": False, "bets": {"2": {}, "5": {}}}
    dealing = {"round_id": "R1", "round_active": True, "bets": {}}
    rnd = {"round_id": "R1", "phase": "player_turns", "seats": [{"seat": 5}, {"seat": 2}, {"seat": "x"}]}
    assert seats_in_play(betting, {}) == [2, 5]
    assert seats_in_play(dealing, rnd) == [2, 5]
    assert seats_in_play(dealing, {**rnd, "round_id": "R0"}) == []  # an older round's document
    assert seats_in_play({**dealing, "round_active": False}, rnd) == []  # settled: nobody in play


def test_a_newer_state_not_yet_verified_is_shown_apart_never_as_the_tables_state(floor):
    """Issue 37: a state/table newer than the table's verified ones (a table account's forgery, until the table's
    next checkpoint disproves it) is shown on the tile and the table's page apart and marked, never as the state."""
    page = _map(floor, 1920, 1080)
    tile = page.locator(".tile[data-table='bj060']")
    expect(tile).to_contain_text("Players", timeout=30_000)
    publish(
        floor.dsn,
        60,
        "state/table",
        7,
        {"state": "closed", "faults": [], "dealer": "Mallory"},
        verified=False,
    )
    expect(tile.locator(".unverified")).to_have_text(
        "newer, not yet verified (event 7): Closed", timeout=30_000
    )
    assert tile.get_attribute("data-attention") != "closed" and "Mallory" not in tile.inner_text()
    table = floor.context.new_page()
    table.goto(floor.web.url + f"/table?site={SITE}&table=bj060")
    expect(table.locator("#facts")).to_contain_text("Not the table's state yet", timeout=30_000)
    assert "Players" in table.inner_text("#facts") and "Mallory" not in table.inner_text("#facts")
    table.close()
    page.close()


def test_a_changed_tile_is_written_in_place_as_text_and_what_no_longer_holds_leaves_it(floor):
    """Issue 44: a tile's change writes the values that changed into the tile's own elements (the element stays,
    the map is not drawn again) with textContent only: hostile text stays text; its open-alert count and a newer
    unverified state leave the tile when they no longer hold."""
    page = _map(floor, 1920, 1080)
    tile = page.locator(".tile[data-table='bj070']")
    tile.evaluate("t => { t.dataset.mark = 'the same element' }")
    tile.locator(".dealer").evaluate("d => { d.dataset.mark = 'the same element' }")
    hostile = '</span><b id="injected">bold</b><span>'
    publish(floor.dsn, 70, "state/table", 6, {"state": "betting", "profile": "pt-2001", "dealer": hostile,
                                              "faults": [], "bets": {"4": {"amount": 1000}}})  # fmt: skip
    expect(tile.locator(".dealer")).to_have_text(hostile, timeout=30_000)
    assert page.locator("#injected").count() == 0 and tile.locator(".dealer *").count() == 0
    assert tile.locator(".seats").get_attribute("aria-label") == "seats 4 in play"
    alert = {"alert_id": 1, "kind": "shoe_jam", "severity": "warning", "reason": hostile, "raised_at": 1.0e9}
    publish(floor.dsn, 70, "alerts/open", 7, {"alerts": [alert]})
    expect(tile.locator(".count")).to_have_text("1", timeout=30_000)
    publish(
        floor.dsn,
        70,
        "state/table",
        8,
        {"state": "closed", "faults": [], "dealer": "Mallory"},
        verified=False,
    )
    expect(tile.locator(".unverified")).to_have_text(
        "newer, not yet verified (event 8): Closed", timeout=30_000
    )
    publish(floor.dsn, 70, "alerts/open", 9, {"alerts": []})
    publish(floor.dsn, 70, "state/table", 10, {"state": "dealing", "profile": "pt-2001", "faults": []})
    expect(tile.locator(".count")).to_have_count(0, timeout=30_000)
    expect(tile.locator(".unverified")).to_have_count(0, timeout=30_000)
    expect(tile.locator(".dealer")).to_have_text("")
    assert tile.get_attribute("data-mark") == "the same element"  # written in place, not made again
    assert tile.locator(".dealer").get_attribute("data-mark") == "the same element"
    assert tile.locator(".seats").get_attribute("aria-label") == "no bets"
    assert "Mallory" not in tile.inner_text() and page.locator(".tile[data-table='bj070']").count() == 1
    page.close()
