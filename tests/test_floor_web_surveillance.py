"""The dashboard's surveillance view (issue 32): a counter's shoe dealt on the real table core, archived into a
real PostgreSQL, flagged on the surveillance view in Debian's chromium; the view refused to a supervisor (and
journaled); a shoe's count withheld while the shoe is in play unless the site turns live display on."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from controller.cli import main as tablectl
from floor.accounts.users import Role, add_user
from floor.web.surveillance_view import surveillance_view
from tablebench.ap_players import simulate
from tablebench.table_testing import Harness
from tests.support.ap_table import deal_on_table
from tests.support.floor import migrated_database, temp_database
from tests.support.floor_web import api_login, chromium, dashboard, log_in, request
from tests.test_floor_queries import archive_harness

SUE = ("sue", "sue-surveillance-pass-1")
ROOT = Path(__file__).resolve().parent.parent


def _counter_archived(dsn: str, *, end_shoe: bool) -> None:
    """One shoe of a Hi-Lo counter (seat 5) and a flat regular (seat 1), archived half an hour ago."""
    rounds = simulate("counter", shoes=1, seed=4, player=None)
    h = Harness()
    deal_on_table(h, rounds, end_shoe=end_shoe)
    archive_harness(dsn, h, when=datetime.now(UTC) - timedelta(minutes=30))


def test_a_counters_session_is_flagged_on_the_surveillance_view_and_a_supervisor_is_refused():
    with temp_database() as dsn, dashboard(dsn) as web, chromium() as browser:
        with psycopg.connect(dsn) as conn:
            add_user(conn, SUE[0], Role.SURVEILLANCE, SUE[1])
        _counter_archived(dsn, end_shoe=True)
        assert tablectl(["floor", "sessions", "--dsn", dsn, "--hours", "2", "--alert"]) == 0
        page = browser.new_page()
        log_in(page, web.url, *SUE)
        page.goto(web.url + "/surveillance")
        row = page.locator("#sessions tbody tr.flagged", has_text="seat 5")
        row.wait_for(timeout=60_000)
        assert row.locator("td.flags").inner_text() == "bet_count_trend"
        assert (
            row.locator("td.count").inner_text().startswith("rho ")
        )  # the shoe has ended: its count is shown
        regular = page.locator("#sessions tbody tr", has_text="seat 1")
        assert (
            regular.get_attribute("class") is None and "no trend" in regular.locator("td.count").inner_text()
        )
        alert = page.locator("#sv-alerts li", has_text="seat 5 at table T1")
        assert alert.locator(".sev").text_content() == "Possible advantage play"
        # the supervisor: the page and the API refused, with the reason, and journaled
        sup = browser.new_page()
        log_in(sup, web.url, "carol")
        assert sup.locator(".alert").count() == 0  # the dashboard's alert list leaves the alert out
        answer = sup.goto(web.url + "/surveillance")
        assert answer is not None and answer.status == 403
        assert "the surveillance role only (this account is supervisor)" in sup.content()
        api = sup.evaluate("fetch('/api/surveillance').then(r => r.status)")
        ack = sup.evaluate(
            "fetch('/api/surveillance/ack', {method: 'POST', headers: {'Content-Type': 'application/json',"
            " 'X-Floor': '1'}, body: JSON.stringify({alert_id: 1})}).then(r => r.status)"
        )
        assert (api, ack) == (403, 403)
        with psycopg.connect(dsn) as conn:
            refusals = conn.execute(
                "SELECT user_name, detail FROM dashboard_log WHERE event = 'refused' ORDER BY id"
            ).fetchall()
            still_open = conn.execute(
                "SELECT count(*) FROM floor_alerts WHERE acknowledged_at IS NULL"
            ).fetchone()
        assert [u for u, _ in refusals] == ["carol"] * 3 and still_open == (1,)
        assert [d.split(":")[0] for _, d in refusals] == [
            "/surveillance",
            "/api/surveillance",
            "/api/surveillance/ack",
        ]
        # surveillance acknowledges it from the view
        alert.locator("button").click()
        alert.wait_for(state="detached", timeout=30_000)


@pytest.mark.parametrize("live", [False, True])
def test_a_shoes_count_is_withheld_while_it_is_in_play_unless_live_display_is_on(live):
    with migrated_database() as dsn:
        _counter_archived(dsn, end_shoe=False)  # the shoe is still being dealt
        now = datetime.now(UTC)
        with psycopg.connect(dsn) as conn:
            view = surveillance_view(conn, now - timedelta(hours=2), now, live)
    [five] = [s for s in view["sessions"] if s["seat"] == 5]
    assert five["flags"] == ["bet_count_trend"]  # surveillance is told at once that bets follow the count ...
    if live:
        assert five["count"]["state"] == "shown" and len(five["count"]["points"]) == five["rounds"]
    else:  # ... but not what the count is while the shoe is in play
        assert five["count"] == {"state": "withheld"}


def test_the_surveillance_api_needs_a_session_and_the_role_for_a_viewer_too():
    with temp_database() as dsn, dashboard(dsn) as web:
        assert request(web.port, "GET", "/api/surveillance").status == 401
        token = api_login(web.port, "victor").cookies[0].split(";")[0].split("=", 1)[1]
        answer = request(web.port, "GET", "/api/surveillance?hours=12", token=token)
        assert answer.status == 403 and "this account is viewer" in answer.json()["reason"]


SURVEILLANCE_MODULES = ("floor.web.surveillance_view", "floor.cli.sessions",
                        "floor.protection.sessions_report", "floor.protection.advantage")  # fmt: skip
PUBLISHERS = ("paho", "controller.client", "controller.mqtt.paho_client", "floor.web.relay")


def _imports(module: str) -> set[str]:
    """Every name ``module`` imports anywhere in its text (functions included)."""
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    if not path.is_file():
        path = ROOT.joinpath(*module.split("."), "__init__.py")
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_nothing_of_surveillance_can_reach_a_tables_broker():
    """The sessions, counts and flags never leave the floor's database and the surveillance page: no module they
    are built by imports, even indirectly, an MQTT client or the dashboard's relay to the tables; the view's web
    module itself imports neither (it shares the dashboard's process, whose relay carries only signed acks)."""
    assert not [i for i in _imports("floor.web.surveillance") if i.startswith(PUBLISHERS)]
    seen, todo = set(), list(SURVEILLANCE_MODULES)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for imported in _imports(name):
            bad = [p for p in PUBLISHERS if imported == p or imported.startswith(p + ".")]
            assert not bad, f"{name} imports {imported}"
            if imported.startswith(("controller.", "drivers.", "floor.")) and (
                ROOT.joinpath(*imported.split(".")).with_suffix(".py").is_file()
                or ROOT.joinpath(*imported.split("."), "__init__.py").is_file()
            ):
                todo.append(imported)
    assert "floor.reports.sessions_play" in seen and "controller.rules.engine" in seen
