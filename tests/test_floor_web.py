"""The floor dashboard in Debian's headless chromium (issues 18 and 25), against real parts: the real table service
(``tablectl run`` with the emulated shoe, bench/tablebench/stack.py) on a real mosquitto standing for the floor broker,
a real archive worker into PostgreSQL and the aiohttp dashboard behind its login.

A supervisor logs in, makes a signing key in the browser (WebCrypto Ed25519, not extractable), the key is enrolled
at the table with ``tablectl sign --add-to --public-key``, and the alert a forged command raised on the table is
acknowledged with a command signed in the browser and only relayed by the floor host, which holds no supervisor
key and never sees a PIN. A viewer cannot acknowledge; wrong passwords typed in the login page lock the account
out with a floor alert that a supervisor acknowledges from the page. The screenshot goes to
docs/screenshots/floor-dashboard.png."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import threading
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from playwright.sync_api import expect

from controller.broker import BrokerKind
from controller.mqtt.signed_command import build_command
from floor.accounts.logins import USER_FAILURES
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef
from floor.web.app import WebConfig
from tablebench.broker import Broker, free_port
from tablebench.stack import TABLECTL, Stack, StackOptions
from tests.support.floor import FLOOR_USERS, temp_database
from tests.support.floor_web import CHROMIUM, PASSWORDS, TlsProxy, chromium, dashboard, log_in
from tests.support.shipped_broker import Pki

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test's set-up does)"
)
# The page as a supervisor sees it; docs/screenshots/floor-dashboard.png is refreshed from it only when asked
# (UPDATE_SCREENSHOTS=1), so a test run never changes a tracked file.
DOCS_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "screenshots" / "floor-dashboard.png"
ROOT = Path(__file__).resolve().parents[1]

# In the page: the same acknowledgement the button sends, with its signature's first digit changed.
BAD_SIGNATURE_ACK = """async ([site, table, alertId]) => {
  const cmd = await signCommand(await loadSigningKey('carol'), 'supervisor', 'ack_alert', {alert_id: alertId},
                                 site, table);
  cmd.sig = (cmd.sig[0] === '0' ? '1' : '0') + cmd.sig.slice(1);
  return await post('/api/ack', {site: site, table: table, command: cmd});
}"""
EXPORT_PRIVATE_KEY = """async () => {
  try { await crypto.subtle.exportKey('pkcs8', (await loadSigningKey('carol')).privateKey); return 'exported'; }
  catch (e) { return e.name; }
}"""


def _floor_alert(dsn: str, kind: str, message: str) -> None:
    with psycopg.connect(dsn) as conn, conn.transaction():
        raise_alert(
            conn.cursor(), TableRef("demo", "demo1"), kind, "critical", message, {}, f"web-test-{kind}"
        )


def _forge(stack: Stack) -> bool:
    """A command in alice's name signed with a key that is not hers; True if the table refused it."""

    async def forge() -> bool:
        client = stack.client("supervisor1")
        await client.connect()
        try:
            body = build_command("alice", "", "supervisor", "open_table", {"profile": "pt-2001"},
                                 site="demo", table="demo1", private_key=Ed25519PrivateKey.generate())  # fmt: skip
            return not (await client.request("supervisor", body)).get("ok")
        finally:
            await client.close()

    # (playwright's sync API owns this thread's event loop: the client runs in its own thread)
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(asyncio.run(forge())))
    t.start()
    t.join(60)
    return result == [True]


def test_a_browser_key_enrolled_at_a_real_table_acknowledges_its_alert_the_floor_host_holds_no_key(
    tmp_path, monkeypatch
):
    """Before: the dashboard opened the supervisors' key files with the PIN typed on the page (a PIN oracle on
    the floor host). Here the floor host's key directory is empty, and the acknowledgement still works."""
    floor_host = tmp_path / "floor-host"
    (floor_host / "keys").mkdir(parents=True)
    monkeypatch.setenv(
        "TABLECTL_KEY_DIR", str(floor_host / "keys")
    )  # where a supervisor key would be looked for
    users = {**FLOOR_USERS, "table-demo1": "demo-table-demo1", "supervisor-floor": "demo-supervisor-floor"}
    assert "key_dir" not in WebConfig.__dataclass_fields__
    with temp_database() as dsn:
        broker = Broker.start(tmp_path / "floor-broker", users=users, acl=BrokerKind.FLOOR)
        stack = Stack(tmp_path / "stack", StackOptions(jackpot=False, broker=(broker.host, broker.port)))
        stack.users = users
        archive = None
        try:
            archive = ArchiveWorker(ArchiveConfig(dsn, broker.host, broker.port, "archive", users["archive"],
                                                  worker="web", grace=0.5)).start()  # fmt: skip
            stack.start_broker()
            stack.start_parts()  # the table's configuration and credentials; the service starts after enrolment
            with dashboard(dsn, (broker.host, broker.port)) as web, chromium() as browser:
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                posted: list[str] = []
                page.on("request", lambda r: posted.append(r.post_data or "") if r.method == "POST" else None)
                log_in(page, web.url, "carol")
                page.click("#make-key")
                expect(page.locator("#pubkey")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
                public_key = page.inner_text("#pubkey")
                assert (
                    page.evaluate(EXPORT_PRIVATE_KEY) == "InvalidAccessError"
                )  # it cannot leave the browser
                enrol = page.inner_text("#enrol")
                assert enrol.endswith(f"--user carol --role supervisor --public-key {public_key}")
                creds = stack.workdir / "credentials.toml"
                subprocess.run([*TABLECTL, "sign", "--add-to", str(creds), "--user", "carol", "--role",
                                "supervisor", "--public-key", public_key], check=True, cwd=ROOT)  # fmt: skip
                stack.start_controller()
                page.wait_for_selector(".table[data-table='demo1'] .status.online", timeout=60_000)

                # hostile text (as a table could send in a reason) is shown as text, never run as markup
                hostile = "<img src=x onerror=\"document.title='pwned'\"><b>bold</b>"
                _floor_alert(dsn, "event_missing", hostile)
                floor_alert = page.locator(".alert[data-kind='event_missing']")
                floor_alert.wait_for(timeout=30_000)
                assert hostile in floor_alert.inner_text()
                assert page.locator(".alert img, .alert b").count() == 0 and page.title() == "Floor"

                assert _forge(stack)
                alert = page.locator(".alert[data-kind='command_rejected']")
                alert.first.wait_for(timeout=30_000)  # arrives live: the page was not reloaded
                alert_id = json.loads(page.evaluate("fetch('/api/snapshot').then(r => r.text())"))["alerts"]
                table_alert = next(a for a in alert_id if a["kind"] == "command_rejected")

                # a wrong signature is relayed, reaches the table and is refused there (and counted in its lockout)
                answer = page.evaluate(BAD_SIGNATURE_ACK, ["demo", "demo1", table_alert["alert_id"]])
                assert answer == {"ok": False, "reason": "your key is not enrolled at table demo1"}

                shot = (
                    DOCS_SCREENSHOT if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path / "floor.png"
                )
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 0
                # acknowledge every command_rejected alert (the forgery's, and the one for the bad signature)
                rejected = page.locator(".alert[data-kind='command_rejected']")
                expect(rejected).to_have_count(
                    2, timeout=30_000
                )  # alice's (forged) and carol's (bad signature)
                while rejected.count():
                    before = rejected.count()
                    rejected.locator("button.ack").first.click()
                    expect(rejected).to_have_count(before - 1, timeout=30_000)
                # the floor's own alert, acknowledged from the page with who and when
                floor_alert.locator("button.ack").click()
                floor_alert.wait_for(state="detached", timeout=30_000)
                with psycopg.connect(dsn) as conn:
                    row = conn.execute(
                        "SELECT acknowledged_by, acknowledged_at IS NOT NULL FROM floor_alerts"
                        " WHERE kind = 'event_missing'"
                    ).fetchone()
                    log = [r[0] for r in conn.execute("SELECT detail FROM dashboard_log WHERE event = 'ack'")]
                assert row == ("carol", True)
                assert any(d.endswith("ok") and "alert" in d for d in log)

                # every wrong signature relayed counts at the table: four more make five, and the table locks
                # carol out (before, wrong PINs were tried on the floor host and never reached the table)
                for _ in range(4):
                    answer = page.evaluate(BAD_SIGNATURE_ACK, ["demo", "demo1", table_alert["alert_id"]])
                    assert answer == {"ok": False, "reason": "your key is not enrolled at table demo1"}
                lockout = page.locator(".alert[data-kind='command_lockout']").first
                lockout.wait_for(timeout=30_000)
                lockout.locator(
                    "button.ack"
                ).click()  # signed with carol's enrolled key: refused while locked
                expect(lockout.locator(".result")).to_have_text("refused: not authorised", timeout=30_000)
        finally:
            stack.stop()
            if archive is not None:
                archive.stop()
            broker.stop()
    # nothing the page sent holds a PIN or a password but the login; the floor host got no key file
    acks = [p for p in posted if '"command"' in p]
    assert acks and all('"sig"' in p and "pin" not in p for p in acks)
    assert not [p for p in posted if PASSWORDS["carol"] in p and '"password"' not in p]
    assert list((floor_host / "keys").iterdir()) == []
    for path in floor_host.rglob("*"):
        assert not path.is_file() or not re.search(
            rb"PRIVATE KEY|encrypted_key|ciphertext", path.read_bytes()
        )


def test_a_viewer_sees_but_cannot_acknowledge_and_logout_ends_the_session(tmp_path):
    with temp_database() as dsn, dashboard(dsn) as web, chromium() as browser:
        _floor_alert(dsn, "event_missing", "events 5-9 never arrived")
        page = browser.new_page()
        log_in(page, web.url, "victor")
        alert = page.locator(".alert[data-kind='event_missing']")
        alert.wait_for(timeout=30_000)
        assert alert.locator("button.ack").count() == 0 and page.locator("#signing").is_hidden()
        alert_id = json.loads(page.evaluate("fetch('/api/snapshot').then(r => r.text())"))["alerts"][0][
            "alert_id"
        ]
        for path, body in (("/api/floor-ack", {"alert_id": alert_id}), ("/api/ack", {})):
            answer = page.evaluate("([p, b]) => post(p, b)", [path, body])  # the page's own request, forged
            assert answer == {"ok": False, "reason": "a viewer cannot acknowledge alerts"}
        with psycopg.connect(dsn) as conn:
            refusals = conn.execute(
                "SELECT user_name, detail FROM dashboard_log WHERE event = 'refused' ORDER BY id"
            ).fetchall()
            still_open = conn.execute("SELECT acknowledged_at IS NULL FROM floor_alerts").fetchone()
        assert [u for u, _ in refusals] == ["victor", "victor"] and still_open == (True,)
        assert all("viewer may not" in d for _, d in refusals)
        cookies = page.context.cookies()
        assert [(c["name"], c["secure"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
            ("__Host-floor_session", True, True, "Strict")
        ]
        page.click("#logout")
        page.wait_for_url("**/login")
        assert page.context.cookies() == []
        page.goto(web.url + "/")
        page.wait_for_url("**/login")


def test_wrong_passwords_in_the_login_page_lock_out_and_a_supervisor_acknowledges_the_alert():
    with temp_database() as dsn, dashboard(dsn) as web, chromium() as browser:
        page = browser.new_page()
        page.goto(web.url + "/login")
        for _ in range(USER_FAILURES):
            page.fill("#login-user", "carol")
            page.fill("#login-password", "guess-guess-guess")
            page.click("#login-submit")
            page.wait_for_selector("#login-result:has-text('refused')")
            page.evaluate("document.getElementById('login-result').textContent = ''")
        page.fill("#login-user", "carol")
        page.fill("#login-password", PASSWORDS["carol"])  # the right one: refused while locked out
        page.click("#login-submit")
        page.wait_for_selector("#login-result:has-text('too many failed logins')")
        assert page.url.endswith("/login")

        supervisor = browser.new_context().new_page()  # another person, another browser
        log_in(supervisor, web.url, "sam")
        lockout = supervisor.locator(".alert[data-kind='login_lockout']")
        lockout.wait_for(timeout=30_000)
        assert "account carol" in lockout.inner_text() and "floor/dashboard" in lockout.inner_text()
        lockout.locator("button.ack").click()
        lockout.wait_for(state="detached", timeout=30_000)
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT acknowledged_by FROM floor_alerts WHERE kind = 'login_lockout'"
            ).fetchone()
        assert row == ("sam",)


def test_a_browser_behind_a_tls_reverse_proxy_logs_in_and_acknowledges(tmp_path):
    """Before: the dashboard compared Origin with the plain-http scheme it saw itself, so every browser that reached
    it through the site's TLS proxy had its acknowledgement refused ("cross-origin request refused"). Here chromium
    opens https://floor.casino.lan:PORT/ (resolved to a TLS proxy on loopback) and the dashboard knows that URL."""
    pki = Pki(tmp_path / "pki")
    cert = pki.issue("floor-web", server=True)
    proxy_port = free_port()
    public = f"https://floor.casino.lan:{proxy_port}"
    with temp_database() as dsn, dashboard(dsn, public_url=public) as web:
        proxy = TlsProxy(proxy_port, cert.cert, cert.key, web.port)
        try:
            with chromium("--host-resolver-rules=MAP floor.casino.lan 127.0.0.1") as browser:
                page = browser.new_context(
                    ignore_https_errors=True
                ).new_page()  # the test CA is not the browser's
                _floor_alert(dsn, "event_missing", "events 5-9 never arrived")
                log_in(page, public, "carol")
                alert = page.locator(".alert[data-kind='event_missing']")
                alert.wait_for(timeout=30_000)
                alert.locator("button.ack").click()
                alert.wait_for(state="detached", timeout=30_000)
                assert page.url.startswith(public)
                cookie = page.context.cookies()[0]
                assert cookie["secure"] and cookie["domain"] == "floor.casino.lan"
        finally:
            proxy.stop()
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT acknowledged_by FROM floor_alerts WHERE kind = 'event_missing'"
            ).fetchone()
        assert row == ("carol",)
