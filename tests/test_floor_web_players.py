"""The dashboard's players page (issue 41) in Debian's headless chromium: two real table cores' rounds and the
tables' player events archived into a real PostgreSQL; a supervisor sees the registered player's name, a viewer
sees the card number and never the name (neither on the page nor in the API's answer); an anonymous player's
hostile description is shown as text; surveillance gets card numbers, never a name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from floor.accounts.users import Role, add_user
from floor.players.registry import register
from tablebench.ap_players import REGULAR_SEAT, SUBJECT_SEAT, simulate
from tests.support.floor import temp_database
from tests.support.floor_web import api_login, chromium, dashboard, log_in, request
from tests.support.players import FloorClock

NAME = "Ana <i>Example</i>"
HOSTILE = "<img src=x onerror=alert(1)> red hat"


def _archived(dsn: str) -> None:
    t1, t2 = simulate("flat", shoes=1, seed=21, player=None), simulate("flat", shoes=1, seed=22, player=None)
    c = FloorClock(datetime.now(UTC) - timedelta(minutes=40))
    c.player("T1", "in", REGULAR_SEAT, "anon:sess-1-1", description=HOSTILE)
    c.player("T1", "in", SUBJECT_SEAT, "card:4711AB")
    c.deal("T1", t1[:3])
    c.player("T2", "in", SUBJECT_SEAT, "card:4711AB")
    c.deal("T2", t2[:3])
    c.store(dsn)


def test_a_supervisor_sees_the_players_names_and_a_viewer_does_not():
    with temp_database() as dsn, dashboard(dsn) as web, chromium() as browser:
        _archived(dsn)
        with psycopg.connect(dsn) as conn:
            register(conn, "4711AB", NAME, "prefers table T2", "mgr-ines")
        sup = browser.new_page()
        log_in(sup, web.url, "carol")  # a supervisor
        sup.goto(web.url + "/players")
        row = sup.locator("#players tbody tr.player", has_text="card:4711AB")
        row.wait_for(timeout=60_000)
        assert row.locator("td.name").inner_text() == NAME  # the name as text, its markup shown, never run
        assert (
            row.locator("td.tables").inner_text() == "S1/T1 S1/T2"
            and row.locator("td.rounds").inner_text() == "6"
        )
        anon = sup.locator("#players tbody tr.player", has_text="anon:sess-1-1")
        assert anon.locator("td.description").inner_text() == HOSTILE
        assert sup.locator("#players img").count() == 0
        viewer = browser.new_page()
        log_in(viewer, web.url, "victor")  # a viewer
        viewer.goto(web.url + "/players")
        vrow = viewer.locator("#players tbody tr.player", has_text="card:4711AB")
        vrow.wait_for(timeout=60_000)
        assert vrow.locator("td.name").count() == 0 and "Example" not in viewer.content()
        assert "supervisors only" in viewer.locator("#names-note").inner_text()
        # the API itself leaves the name out for the viewer (not just the page)
        token = api_login(web.port, "victor").cookies[0].split(";")[0].split("=", 1)[1]
        answer = request(web.port, "GET", "/api/players?hours=2", token=token)
        assert answer.status == 200 and b"Example" not in answer.body
        assert {r["name"] for r in answer.json()["rows"]} == {""}
        with psycopg.connect(dsn) as conn:
            add_user(conn, "sue", Role.SURVEILLANCE, "sue-surveillance-pass-1")
        sue = api_login(web.port, "sue", "sue-surveillance-pass-1").cookies[0].split(";")[0].split("=", 1)[1]
        seen = request(web.port, "GET", "/api/players?hours=2", token=sue)  # surveillance: card numbers only
        assert seen.status == 200 and b"Example" not in seen.body and seen.json()["rows"]
        refused = request(web.port, "GET", "/api/players?hours=2&player=%3Cscript%3E", token=token)
        assert refused.status == 400
        with psycopg.connect(dsn) as conn:
            logged = conn.execute(
                "SELECT user_name, detail FROM dashboard_log WHERE event = 'refused'"
            ).fetchall()
        assert logged == [("victor", "/api/players: player: a card number, card:N, anon:S-N or a pseudonym")]
