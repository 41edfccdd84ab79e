"""The floor dashboard's door, attacked over plain HTTP (what a browser would never send: forged Origin
headers, a reverse proxy's headers, dozens of streams) against the real aiohttp server and PostgreSQL (issue 25).
Each attack here succeeded on the dashboard before it had users: anonymous reads, no stream cap, an origin check
that refused every browser behind a TLS proxy."""

from __future__ import annotations

import http.client
import json
import os
import sys
import threading
import time

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.mqtt.signed_command import build_command
from controller.rules.profiles import PROFILE_DIR
from floor.accounts import users
from floor.accounts.logins import CLIENT_FAILURES, USER_FAILURES
from floor.accounts.sessions import SESSION_COOKIE
from floor.accounts.users import Role, add_user
from floor.archive import store
from floor.archive.store import ensure_tables
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef
from tablebench.pitmap_floor import PLAYED, SITE, build_floor
from tablebench.postgres import admin_dsn
from tests.support.floor import temp_database, wait_until
from tests.support.floor_web import api_login, dashboard, page_headers, request, session_token

PROXY = "127.0.0.1"  # the reverse proxy in front of the dashboard (here: the test itself)


def _floor_alert(dsn: str) -> int:
    with psycopg.connect(dsn) as conn, conn.transaction():
        alert_id = raise_alert(conn.cursor(), TableRef("demo", "T1"), "event_missing", "critical", "gap", {},
                               f"test-{time.monotonic_ns()}")  # fmt: skip
    assert alert_id is not None
    return alert_id


def test_anonymous_requests_get_nothing():
    """Before: an anonymous GET /api/snapshot returned every table, meter and alert."""
    with temp_database() as dsn, dashboard(dsn) as web:
        for path in ("/api/snapshot", "/events", "/api/me"):
            answer = request(web.port, "GET", path)
            assert answer.status == 401 and b"tables" not in answer.body, path
        page = request(web.port, "GET", "/")
        assert page.status == 303 and page.headers["location"] == "/login"
        for path, body in (("/api/ack", {}), ("/api/floor-ack", {"alert_id": 1}), ("/api/logout", {})):
            assert request(web.port, "POST", path, body=body, headers=page_headers(web.port)).status == 401
        # a forged or stale cookie is no session
        assert request(web.port, "GET", "/api/snapshot", token="A" * 43).status == 401
        login = request(web.port, "GET", "/login")
        assert login.status == 200 and "frame-ancestors 'none'" in login.headers["content-security-policy"]
        assert "strict-transport-security" not in login.headers  # plain http on loopback: no HSTS


def test_session_cookie_is_secure_httponly_strict_and_only_its_hash_is_stored():
    with temp_database() as dsn, dashboard(dsn, session_s=2) as web:
        answer = api_login(web.port, "carol")
        assert answer.status == 200 and answer.json() == {"ok": True, "user": "carol", "role": "supervisor"}
        (cookie,) = answer.cookies
        flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
        assert cookie.startswith(SESSION_COOKIE + "=") and {"secure", "httponly", "path", "max-age"} <= flags
        assert "samesite=strict" in cookie.lower()
        token = session_token(answer)
        with psycopg.connect(dsn) as conn:
            stored = conn.execute("SELECT token_sha256 FROM dashboard_sessions").fetchall()
            dump = str(conn.execute("SELECT * FROM dashboard_sessions").fetchall())
        assert len(stored) == 1 and token not in dump
        assert request(web.port, "GET", "/api/snapshot", token=token).status == 200
        # the session expires on the server, whatever the browser keeps
        wait_until(lambda: request(web.port, "GET", "/api/me", token=token).status == 401, 30, "expiry")


def test_wrong_passwords_lock_out_the_account_and_the_address_with_a_floor_alert():
    """Before: no login at all; a PIN guessed 20 times on /api/ack raised nothing."""
    with temp_database() as dsn, dashboard(dsn, trusted_proxies=frozenset({PROXY})) as web:
        for _ in range(USER_FAILURES):
            assert api_login(web.port, "carol", "not-carols-password").status == 401
        refused = api_login(web.port, "carol")  # the right password, now refused without a check
        assert refused.status == 429 and "too many failed logins" in refused.json()["reason"]
        assert not refused.cookies
        for _ in range(
            10
        ):  # a flood while locked: refused unchecked, one log row a minute (the table stays small)
            assert api_login(web.port, "carol").status == 429
        assert api_login(web.port, "sam").status == 200  # another account from the same address still works
        with psycopg.connect(dsn) as conn:
            alerts = conn.execute(
                "SELECT kind, severity, message FROM floor_alerts WHERE kind = 'login_lockout'"
            ).fetchall()
            events = [r[0] for r in conn.execute("SELECT event FROM dashboard_log WHERE user_name = 'carol'")]
        assert alerts == [("login_lockout", "critical", alerts[0][2])] and "account carol" in alerts[0][2]
        assert events == ["login_failed"] * USER_FAILURES + ["lockout", "login_locked"]

        # one address trying many accounts (behind the proxy: its X-Forwarded-For names the address)
        attacker = {"X-Forwarded-For": "10.9.9.9"}
        for i in range(CLIENT_FAILURES):
            assert api_login(web.port, f"guess{i}", "a-wrong-password", **attacker).status == 401
        assert api_login(web.port, "victor", **attacker).status == 429
        assert api_login(web.port, "victor", **{"X-Forwarded-For": "10.9.9.10"}).status == 200
        with psycopg.connect(dsn) as conn:
            messages = [
                r[0] for r in conn.execute("SELECT message FROM floor_alerts WHERE kind = 'login_lockout'")
            ]
        assert any("client 10.9.9.9" in m for m in messages)


def test_origin_check_uses_the_public_url_behind_a_tls_proxy():
    """Before: the server compared Origin with the plain-http scheme it saw itself, refusing every browser that
    reached it through https://floor.casino.lan."""
    public = "https://floor.casino.lan"
    proxy = {"Host": "floor.casino.lan", "X-Forwarded-Proto": "https", "X-Forwarded-For": "10.0.0.7"}
    with temp_database() as dsn, dashboard(dsn, public_url=public, trusted_proxies=frozenset({PROXY})) as web:
        browser = {**proxy, "X-Floor": "1", "Origin": public}
        answer = api_login(web.port, "carol", **browser)
        assert answer.status == 200, answer.body
        assert answer.headers["strict-transport-security"].startswith("max-age=")  # the browser sees https
        token = session_token(answer)
        alert_id = _floor_alert(dsn)
        ack = request(
            web.port, "POST", "/api/floor-ack", body={"alert_id": alert_id}, headers=browser, token=token
        )
        assert ack.status == 200 and ack.json() == {"ok": True}
        for origin in (
            f"http://127.0.0.1:{web.port}",
            "http://floor.casino.lan",
            "https://evil.example",
            None,
        ):
            headers = {**proxy, "X-Floor": "1"} | ({"Origin": origin} if origin else {})
            refused = request(web.port, "POST", "/api/floor-ack", body={"alert_id": alert_id}, headers=headers,
                              token=token)  # fmt: skip
            assert refused.status == 403 and "cross-origin" in refused.json()["reason"], origin
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT client FROM dashboard_log WHERE event = 'login'").fetchone()
        assert row == ("10.0.0.7",)  # the address the proxy named, not the proxy's


def _open_stream(port: int, token: str) -> tuple[int, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/events", headers={"Cookie": f"{SESSION_COOKIE}={token}"})
    resp = conn.getresponse()
    if resp.status == 200:
        assert resp.readline().startswith(b"event: floor")  # the whole floor first (floor/web/live.py)
    else:
        resp.read()
        conn.close()
    return resp.status, resp


def test_event_streams_are_capped_per_user_and_in_all_and_end_at_logout():
    """Before: any number of anonymous /events streams, each holding a task and a queue on the server."""
    with temp_database() as dsn, dashboard(dsn, sse_per_user=2, sse_total=3) as web:
        carol = session_token(api_login(web.port, "carol"))
        victor = session_token(api_login(web.port, "victor"))
        opened = [_open_stream(web.port, carol) for _ in range(2)]
        assert [s for s, _ in opened] == [200, 200]
        assert _open_stream(web.port, carol)[0] == 429
        assert _open_stream(web.port, victor)[0] == 200
        assert _open_stream(web.port, victor)[0] == 503  # three in all
        with psycopg.connect(dsn) as conn:
            refusals = conn.execute("SELECT user_name FROM dashboard_log WHERE event = 'refused'").fetchall()
        assert refusals == [("carol",), ("victor",)]
        # logout ends carol's streams at once: the server closes them
        assert (
            request(
                web.port, "POST", "/api/logout", body={}, headers=page_headers(web.port), token=carol
            ).status
            == 200
        )
        for _, resp in opened:
            resp.read()  # returns: the server ended the stream (it would wait for the next snapshot otherwise)
            resp.close()
        wait_until(lambda: _open_stream(web.port, victor)[0] == 200, 20, "a slot freed")


def test_parallel_logins_derive_at_most_two_keys_at_once(monkeypatch):
    """An attacker's parallel logins must not run many 32 MiB derivations at once (before: one 128 MiB
    derivation per /api/ack request, no limit). The derivations are held until the flood has been answered, so
    the test sees the bound whatever the machine's speed: 2 deriving, 4 waiting, the other 10 answered busy."""
    running, peak, lock, release = [0], [0], threading.Lock(), threading.Event()
    real = users.verify_password

    def held(password: str, stored: str) -> bool:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            release.wait(120)
            return real(password, stored)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(users, "verify_password", held)
    with temp_database() as dsn, dashboard(dsn, kdf_parallel=2, kdf_waiting=4) as web:
        results: list[int] = []

        def attempt(i: int) -> None:
            results.append(api_login(web.port, f"user{i}", "a-wrong-password").status)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(16)]
        try:
            for t in threads:
                t.start()
            # the two admitted derivations start in the executor a moment after the refusals are answered:
            # wait for both, never for a fixed time (a loaded machine starts them late)
            wait_until(lambda: results.count(503) == 10 and peak[0] == 2, 60, "ten busy and two deriving")
            assert results == [503] * 10  # nothing else answered yet: 2 deriving, 4 waiting
        finally:
            release.set()  # never leave the held derivations (and the dashboard's teardown) waiting
        for t in threads:
            t.join(120)
        assert sorted(results) == [401] * 6 + [503] * 10 and peak[0] == 2


def test_the_relay_takes_only_the_users_own_ack_alert_for_a_known_table():
    """A supervisor's session relays nothing but an ``ack_alert`` signed in that supervisor's own name, to a table
    the floor knows; each refusal is logged (the table would check the signature anyway)."""
    key = Ed25519PrivateKey.generate()
    with temp_database() as dsn, dashboard(dsn) as web:
        with psycopg.connect(dsn) as conn, conn.transaction():
            ensure_tables(conn.cursor(), [TableRef("demo", "T1")])
        token = session_token(api_login(web.port, "carol"))

        def relay(site: str, command: dict) -> tuple[int, str]:
            answer = request(web.port, "POST", "/api/ack", body={"site": site, "table": "T1", "command": command},
                             headers=page_headers(web.port), token=token)  # fmt: skip
            return answer.status, answer.json()["reason"]

        ack = build_command(
            "carol", "", "supervisor", "ack_alert", {"alert_id": 3}, site="demo", table="T1", private_key=key
        )
        assert relay("elsewhere", ack)[1].startswith("the command is signed for table demo/T1")
        elsewhere = build_command("carol", "", "supervisor", "ack_alert", {"alert_id": 3}, site="elsewhere",
                                  table="T1", private_key=key)  # fmt: skip
        assert relay("elsewhere", elsewhere) == (404, "no such table on this floor")
        alices = build_command(
            "alice", "", "supervisor", "ack_alert", {"alert_id": 3}, site="demo", table="T1", private_key=key
        )
        assert relay("demo", alices)[1].startswith("a command is relayed only in the")
        assert (
            relay(
                "demo",
                build_command(
                    "carol", "", "supervisor", "void_round", {}, site="demo", table="T1", private_key=key
                ),
            )[0]
            == 400
        )
        assert relay("demo", {**ack, "pin": "123456"})[0] == 400
        assert relay("demo", {**ack, "args": {"alert_id": "3; drop"}})[0] == 400
        assert relay("demo+", ack)[0] == 400  # a topic wildcard is no table id
        with psycopg.connect(dsn) as conn:
            refused = conn.execute("SELECT count(*) FROM dashboard_log WHERE event = 'refused'").fetchone()
        assert refused == (7,)


@pytest.mark.parametrize("password", ["short", " " * 20, "tab\tin-the-password"])
def test_weak_or_odd_passwords_are_refused(password):
    with pytest.raises(users.UserError):
        users.check_password(password)


def test_hash_parameters_from_the_database_are_bounded():
    stored = users.hash_password("a-good-long-password")
    assert users.verify_password("a-good-long-password", stored)
    assert not users.verify_password("a-good-long-password2", stored)
    huge = stored.replace("$32768$", f"${2**20}$", 1)
    assert not users.verify_password("a-good-long-password", huge)  # refused, not derived with 1 GiB


def test_thirty_parallel_logins_for_one_account_check_at_most_the_limits_passwords(monkeypatch):
    """Issue 37: 18 parallel logins for one account from 18 addresses were all password-checked (the limit, 5,
    counted only failures already recorded), and the right password was accepted after 12 failures. Now a login
    takes one of the account's attempts before its password is checked: of 30 parallel logins from 30 addresses
    (derivations held until all have arrived, so every one is in flight at once) at most USER_FAILURES passwords
    are checked, the others are refused unchecked, and then the right password is refused too (locked out)."""
    checked, lock, release = [0], threading.Lock(), threading.Event()
    real = users.verify_password

    def held(password: str, stored: str) -> bool:
        with lock:
            checked[0] += 1
        release.wait(120)
        return real(password, stored)

    monkeypatch.setattr(users, "verify_password", held)
    with (
        temp_database() as dsn,
        dashboard(dsn, trusted_proxies=frozenset({PROXY}), kdf_parallel=32, kdf_waiting=32) as web,
    ):
        results: list[int] = []

        def attempt(i: int) -> None:
            answer = api_login(
                web.port, "carol", f"guess-{i}-wrong", **{"X-Forwarded-For": f"10.7.0.{i + 1}"}
            )
            results.append(answer.status)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(30)]
        try:
            for t in threads:
                t.start()
            # every login answered or being checked (or more checks than the limit: the attack worked)
            wait_until(
                lambda: len(results) + checked[0] >= 30 or checked[0] > USER_FAILURES, 60, "the logins"
            )
            assert checked[0] <= USER_FAILURES and results.count(429) == 30 - checked[0]
        finally:
            release.set()
        for t in threads:
            t.join(120)
        print(f"30 parallel logins for one account: {checked[0]} passwords checked")
        assert sorted(results) == [401] * checked[0] + [429] * (30 - checked[0])
        right = api_login(web.port, "carol", **{"X-Forwarded-For": "10.7.1.1"})
        assert right.status == 429 and checked[0] == USER_FAILURES


_OPENED: list[str] = []  # paths opened in this process while a test listens (audit hook: never removed)
_LISTENING = [False]


def _audit(event: str, args: tuple) -> None:
    if _LISTENING[0] and event == "open" and args and isinstance(args[0], str | bytes):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def test_a_profile_named_by_a_table_opens_no_file_and_every_page_still_works(tmp_path):
    """Issue 37: the profile of an archived round comes from the table's own documents (events/session, the
    settlement) and went to load_profile, which takes a name with '/' or ending in .toml as a path: a table
    account made the floor host open a file of its choosing for every sessions, shift or round page, and a
    300-character name raised OSError out of the round rebuild. Now a name from a table is looked up among the
    profiles the floor ships, nothing else: each page answers 200 and says the profile is unknown, and the
    named file is never opened. A malformed query parameter is a 400 with the reason."""
    bait = tmp_path / "bait-profile.toml"  # a valid profile file at a path the table names
    bait.write_bytes((PROFILE_DIR / "pt-2001.toml").read_bytes())
    with temp_database() as dsn, dashboard(dsn) as web:
        build_floor(dsn, 2)
        with psycopg.connect(dsn) as conn:
            add_user(conn, "sue", Role.SURVEILLANCE, "sue-floor-password-1")
            rounds = [r[0] for r in conn.execute(
                "SELECT data->>'round_id' FROM events WHERE table_id = %s AND topic = 'events/settlement'"
                " ORDER BY event_id", (PLAYED,))]  # fmt: skip
        assert len(rounds) == 2
        token = session_token(api_login(web.port, "carol"))
        watcher = session_token(api_login(web.port, "sue", "sue-floor-password-1"))
        for named in (str(bait), "x" * 300, "../" * 20 + "etc/hostname"):
            with psycopg.connect(dsn) as conn, conn.transaction():  # as the table's account published them
                conn.execute(
                    "UPDATE events SET data = jsonb_set(data, '{profile}', to_jsonb(%s::text)) WHERE table_id = %s"
                    " AND data ? 'profile'",
                    (named, PLAYED),
                )
            _OPENED.clear()
            _LISTENING[0] = True
            try:
                pages = [
                    request(
                        web.port, "GET", f"/round?site={SITE}&table={PLAYED}&round={rounds[0]}", token=token
                    ),
                    request(web.port, "GET", f"/api/table?site={SITE}&table={PLAYED}", token=token),
                    request(web.port, "GET", "/api/shift", token=token),
                    request(web.port, "GET", "/shift/report.html", token=token),
                    request(web.port, "GET", "/shift/report.csv", token=token),
                    request(web.port, "GET", "/api/surveillance?hours=24", token=watcher),
                ]
            finally:
                _LISTENING[0] = False
            assert [p.status for p in pages] == [200] * len(pages), (named[:40], [p.status for p in pages])
            assert "is not one this floor knows" in pages[0].body.decode(), named[:40]
            assert not [p for p in _OPENED if "bait-profile" in p or "x" * 100 in p or "hostname" in p], (
                _OPENED
            )
        bad = request(web.port, "GET", "/api/shift?until=0001-01-01T00:00", token=token)
        assert bad.status == 400 and bad.json()["reason"].startswith("since/until: ISO date-times"), bad.body
        wide = request(
            web.port, "GET", "/api/shift?since=2026-01-01T00:00&until=2026-12-01T00:00", token=token
        )
        assert wide.status == 400 and "span at most" in wide.json()["reason"]


def _floor_event(resp: http.client.HTTPResponse) -> dict:
    """The ``floor`` document the stream opens with (the ``event: floor`` line is read by _open_stream)."""
    line = resp.readline()
    assert line.startswith(b"data: ")
    return json.loads(line[len(b"data: ") :])


def test_an_archive_outage_is_said_as_that_not_as_every_table_out_of_reach():
    """Issue 36: with the archive workers stopped (the last one heard from a minute ago), every table that went
    quiet is not "unreachable": the page says the archive is not receiving, the tiles keep their attention, the
    figures say what they rest on. With PostgreSQL refusing connections, requests are answered 503 with the reason,
    never HTTP 500, and the live page is told the database does not answer."""
    with temp_database() as dsn:
        with psycopg.connect(dsn) as conn:
            store.migrate(conn)
            with conn.transaction():
                ensure_tables(conn.cursor(), [TableRef("demo", "T1"), TableRef("demo", "T2")])
                conn.execute("UPDATE floor_tables SET link = 'up', last_contact_at = now() - interval '70 s'")
                conn.execute("INSERT INTO floor_workers (worker, seen_at, subscribed)"
                             " VALUES ('floor-archive/1', now() - interval '60 s', true)")  # fmt: skip
        with dashboard(dsn) as web:
            carol = session_token(api_login(web.port, "carol"))
            status, resp = _open_stream(web.port, carol)
            assert status == 200
            doc = _floor_event(resp)
            resp.close()
            assert (
                doc["archive"]["receiving"] is False and "archive is not receiving" in doc["archive"]["words"]
            )
            assert [t["attention"] for t in doc["tiles"]] == ["open", "open"]  # not "unreachable"
            snap = request(web.port, "GET", "/api/snapshot", token=carol).json()
            assert all("archive not receiving" in t["archive"]["summary"] for t in snap["tables"]), snap[
                "tables"
            ]
            # a worker subscribes again: then a quiet table is out of reach, and said so
            with psycopg.connect(dsn) as conn:
                conn.execute("UPDATE floor_workers SET seen_at = now()")
            wait_until(lambda: "out of reach since" in request(web.port, "GET", "/api/snapshot", token=carol)
                       .json()["tables"][0]["archive"]["summary"], 20, "out of reach")  # fmt: skip
            status, resp = _open_stream(web.port, carol)
            live = resp
            assert [t["attention"] for t in _floor_event(live)["tiles"]] == ["unreachable"] * 2
            # the database refuses connections: 503 with the reason, and the open page is told
            with psycopg.connect(admin_dsn(), autocommit=True) as admin:
                name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
                )
                try:
                    answer = request(web.port, "GET", "/api/snapshot", token=carol)
                    assert answer.status == 503 and b"database is not answering" in answer.body
                    events = request(web.port, "GET", "/events", token=carol)
                    assert events.status == 503
                    told = b""
                    deadline = time.monotonic() + 30
                    while b"database is not answering" not in told and time.monotonic() < deadline:
                        told += live.readline()
                    assert b"event: archive" in told and b"database is not answering" in told
                finally:
                    admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            live.close()
