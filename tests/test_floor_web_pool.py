"""The dashboard holds one pool of connections to PostgreSQL per process (issue 43; floor/web/auth.py, Database):
however many requests come, the server sees at most ``db_pool`` connections for them, plus the live updates' two
(the builds' and the listener's), all named ``tablectl-floor-web`` in pg_stat_activity; a connection per request
would open one (or two: the session's lookup, then the page's query) for each of them.

Counted twice on a real PostgreSQL: the sessions the server opened for the test's database while 60 requests ran
(``pg_stat_database.sessions``, which counts every connection made, however short), and the most of the
dashboard's connections seen open at once while they ran (``pg_stat_activity``, sampled)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg

from floor.archive.store import ensure_tables
from floor.common.messages import TableRef
from floor.web.auth import APPLICATION_NAME
from floor.web.config import DB_POOL
from tablebench.postgres import admin_dsn
from tests.support.floor import temp_database
from tests.support.floor_web import api_login, dashboard, request, session_token

POOL = 3
REQUESTS = 60
PATHS = ("/api/me", "/api/table?site=demo&table=T1", "/api/shift")


def test_many_requests_use_a_bounded_number_of_server_connections() -> None:
    assert 0 < POOL < DB_POOL  # the size given is the one used, not the default
    with temp_database() as dsn:
        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        with dashboard(dsn, db_pool=POOL) as web, psycopg.connect(admin_dsn(), autocommit=True) as admin:
            with psycopg.connect(dsn) as conn, conn.transaction():
                ensure_tables(conn.cursor(), [TableRef("demo", "T1")])
            carol = session_token(api_login(web.port, "carol"))

            def made() -> int:
                admin.execute("SELECT pg_stat_clear_snapshot()")
                row = admin.execute(
                    "SELECT sessions FROM pg_stat_database WHERE datname = %s", (name,)
                ).fetchone()
                assert row is not None
                return int(row[0])

            def open_now() -> int:
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
                    (name, APPLICATION_NAME),
                ).fetchone()
                assert row is not None
                return int(row[0])

            before = made()
            peak, done = 0, threading.Event()

            def sample() -> None:
                nonlocal peak
                with psycopg.connect(admin_dsn(), autocommit=True) as watcher:
                    while not done.is_set():
                        row = watcher.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
                            (name, APPLICATION_NAME),
                        ).fetchone()
                        peak = max(peak, int(row[0]) if row else 0)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            try:
                with ThreadPoolExecutor(max_workers=12) as pool:
                    answers = list(
                        pool.map(
                            lambda i: request(web.port, "GET", PATHS[i % len(PATHS)], token=carol).status,
                            range(REQUESTS),
                        )
                    )
            finally:
                done.set()
                sampler.join(30)
            assert answers.count(200) == REQUESTS, answers  # every request read the database and was answered
            opened = made() - before
            assert opened <= POOL, f"{opened} connections opened for {REQUESTS} requests (pool of {POOL})"
            assert 0 < peak <= POOL + 2, (
                f"{peak} of the dashboard's connections open at once (pool of {POOL})"
            )
            assert open_now() <= POOL + 2
