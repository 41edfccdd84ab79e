"""The dashboard's live stream sends what changed, not the whole floor (issue 29; floor/web/live.py):
one table's change is one tile's bytes at 2,000 tables, each change gets the floor's next version, and a page that
fell behind gets the whole floor once instead of a backlog (floor/web/app.py); an archive commit's notification names
the tables it wrote and only their tiles are made again, as a whole build would make them (issue 44,
floor/common/notify.py); a payload not understood means every table."""

from __future__ import annotations

import asyncio
import json
import time

import psycopg
import pytest

from floor.common.alerts import raise_alert
from floor.common.layout import parse_layout
from floor.common.messages import TableRef
from floor.common.notify import NOTIFY_CHANNEL, PAYLOAD_LIMIT, named_tables, notify, payload
from floor.common.tableset import floor_tables
from floor.web.app import RESYNC, FloorWeb, Stream
from floor.web.live import Build, Floor, Live, Stats, build
from tablebench.pitmap_floor import SITE, build_floor, hear_from_online_tables, layout_toml, publish, table_id
from tests.support.floor import temp_database
from tests.support.floor_web import web_config


def _build(n: int, changed: dict[str, str] | None = None, alerts: str = "[]") -> Build:
    tiles = {f"S1/bj{i}": json.dumps({"site": "S1", "table": f"bj{i}", "state": "Betting"}) for i in range(n)}
    tiles.update(changed or {})
    return Build(tiles, alerts)


def test_one_tables_change_sends_that_tile_only_with_the_next_version():
    live = Live()
    first = live.update(_build(2000))
    assert [k for k, _ in first] == ["tiles"] and live.version == 1
    floor = json.loads(live.floor())
    assert len(floor["tiles"]) == 2000 and floor["version"] == 1
    assert live.update(_build(2000)) == []  # nothing changed: nothing sent
    new = json.dumps({"site": "S1", "table": "bj7", "state": "Dealing"})
    events = live.update(_build(2000, {"S1/bj7": new}))
    assert [k for k, _ in events] == ["tiles"]
    body = json.loads(events[0][1])
    assert body == {"version": 2, "since": 1, "changed": [json.loads(new)], "removed": []}
    assert len(events[0][1]) * 500 < len(live.floor())  # one tile's bytes, not 2,000 tiles'
    assert live.versions["S1/bj7"] == 2 and live.versions["S1/bj8"] == 1
    gone = live.update(_build(1999, {"S1/bj7": new}))  # a table no longer in the archive's list
    assert json.loads(gone[0][1])["removed"] == ["S1/bj1999"]


def test_alerts_are_sent_only_when_they_change():
    live = Live()
    live.update(_build(3))
    events = live.update(_build(3, alerts='[{"kind": "jam"}]'))
    assert events == [("alerts", '[{"kind": "jam"}]')]


def test_a_page_that_falls_behind_gets_the_whole_floor_once_not_a_backlog():
    async def run() -> list[tuple[str, str] | None]:
        stream = Stream(session=None)  # type: ignore[arg-type]  # (no session needed to queue)
        for v in range(20):
            FloorWeb._put(stream, ("tiles", f'{{"version":{v}}}'))
        out = []
        while not stream.queue.empty():
            out.append(stream.queue.get_nowait())
        return out

    queued = asyncio.run(run())
    assert queued.count(RESYNC) == 1 and len(queued) < 8
    after = queued[
        queued.index(RESYNC) + 1 :
    ]  # the changes after the resync follow it, in order, up to the last
    assert after == [("tiles", f'{{"version":{v}}}') for v in range(20 - len(after), 20)]


# ---- the refresh in proportion to what changed (issue 44): a real PostgreSQL, a floor of N tables ----
N = 60
LAYOUT = parse_layout(layout_toml(N))


@pytest.fixture(scope="module")
def floor_db():
    with temp_database() as dsn:
        build_floor(dsn, N)
        yield dsn


def _fresh(dsn: str) -> tuple[Floor, psycopg.Connection]:
    conn = psycopg.connect(dsn, autocommit=True)
    floor = Floor(LAYOUT)
    floor.full(conn)
    return floor, conn


def _tile(b: Build, i: int) -> dict[str, object]:
    return json.loads(b.tiles[f"{SITE}/{table_id(i)}"])


def test_a_notification_naming_one_table_remakes_that_tile_only_as_a_whole_build_would(floor_db):
    floor, conn = _fresh(floor_db)
    with conn:
        live = Live()
        live.update(floor.full(conn))
        before = Stats(**vars(floor.stats))
        publish(
            floor_db, 7, "state/table", 50, {"state": "dealing", "profile": "pt-2001", "dealer": "Ann <b>"}
        )
        named = named_tables(payload([TableRef(SITE, table_id(7))]))
        b = floor.refresh(conn, named)
        # one table's rows read, one tile made: not the floor (a whole build reads and makes N)
        assert floor.stats.full == before.full and floor.stats.partial == before.partial + 1
        assert floor.stats.rows_read - before.rows_read == 1
        assert floor.stats.tiles_made - before.tiles_made == 1
        assert b.touched == {f"{SITE}/{table_id(7)}"}
        events = live.update(b)
        assert [k for k, _ in events] == ["tiles"]
        changed = json.loads(events[0][1])["changed"]
        assert [t["table"] for t in changed] == [table_id(7)] and changed[0]["dealer"] == "Ann <b>"
        # what the map shows is what a build of the whole floor shows (the same figures, verified state only)
        whole = build(floor_db, LAYOUT)
        assert b.tiles == whole.tiles and list(b.tiles) == list(whole.tiles)
        assert b.alerts == whole.alerts


def test_a_newer_unverified_state_named_by_a_notification_is_not_shown_as_the_tables_state(floor_db):
    """PT-2001 pit map rule (floor/web/dashboard.py, issue 37): only verified state is the table's."""
    floor, conn = _fresh(floor_db)
    with conn:
        shown = _tile(floor.full(conn), 9)
        publish(floor_db, 9, "state/table", 60, {"state": "closed", "profile": "pt-2001"}, verified=False)
        tile = _tile(floor.refresh(conn, frozenset({TableRef(SITE, table_id(9))})), 9)
        assert tile["state"] == shown["state"] and "not yet verified" in str(tile["unverified"])


def test_an_alert_of_another_table_remakes_that_tables_tile_too(floor_db):
    """A tile's colour and alert count follow the floor's open alerts, whichever table a notification named."""
    floor, conn = _fresh(floor_db)
    with conn:
        floor.full(conn)
        with conn.transaction():
            raise_alert(conn.cursor(), TableRef(SITE, table_id(20)), "event_missing", "critical", "events lost",
                        {}, "web-live-20")  # fmt: skip
        b = floor.refresh(conn, frozenset({TableRef(SITE, table_id(21))}))
        assert b.touched == {f"{SITE}/{table_id(20)}"}  # 21 was read: nothing of it changed, its tile neither
        assert _tile(b, 20)["attention"] == "critical"
        assert b.tiles == build(floor_db, LAYOUT).tiles


def test_a_table_that_went_quiet_turns_out_of_reach_on_the_tick_alone(floor_db):
    floor, conn = _fresh(floor_db)
    with conn:
        hear_from_online_tables(floor_db)
        floor.full(conn)
        conn.execute(
            "UPDATE floor_tables SET last_contact_at = now() - interval '20 minutes' WHERE site = %s AND table_id = %s",
            (SITE, table_id(31)),
        )
        before = Stats(**vars(floor.stats))
        b = floor.tick(conn)
        assert b.touched == {f"{SITE}/{table_id(31)}"} and floor.stats.full == before.full
        tile = _tile(b, 31)
        assert tile["attention"] == "unreachable" and tile["archive_complete"] is not True  # never "complete"
        assert floor.stats.rows_read - before.rows_read == 1


HOSTILE = [
    "",  # every table (a writer that does not know which)
    "garbage",
    "t2 S1:bj001",  # a format this listener does not know
    "t1 S1",
    "t1 S1:bj001,,bj002",
    "t1 S1:bj'001",
    "t1 S1:bj001;",
    "t1 :bj001",
    "t1 S1:" + "a" * 65,
    "t1 S1:" + ",".join(f"bj{i}" for i in range(2000)),  # longer than any payload PostgreSQL carries
    "t1 S1:bj001\nS1:bj002",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_payload_not_understood_means_every_table(text):
    assert named_tables(text) is None


def test_payloads_name_the_tables_and_too_many_say_every_table(floor_db):
    refs = [TableRef("S1", "bj001"), TableRef("S2", "x-9"), TableRef("S1", "bj002")]
    assert named_tables(payload(refs)) == frozenset(refs)
    assert payload(None) == "" and payload([TableRef("S1", "bj 1")]) == ""
    many = [TableRef("S1", f"bj{i:05d}") for i in range(2000)]
    assert payload(many) == ""  # 2,000 names do not fit in 8,000 bytes
    with psycopg.connect(
        floor_db, autocommit=True
    ) as conn:  # PostgreSQL carries them (it refuses 8,000 bytes)
        conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
        fit = many[: PAYLOAD_LIMIT // 9 - 1]
        with psycopg.connect(floor_db) as writer, writer.transaction():
            notify(writer.cursor(), fit)
        got = next(conn.notifies(timeout=10))
        assert named_tables(got.payload) == frozenset(fit)


def test_a_hostile_payload_reads_the_whole_floor_and_an_unknown_table_reads_nothing(floor_db):
    floor, conn = _fresh(floor_db)
    with conn:
        before = Stats(**vars(floor.stats))
        floor.refresh(conn, named_tables("t1 S1:bj001;<script>"))
        assert floor.stats.full == before.full + 1 and floor.stats.rows_read - before.rows_read == N
        before = Stats(**vars(floor.stats))
        b = floor.refresh(conn, named_tables("t1 S9:nosuchtable"))
        assert floor.stats.full == before.full and b.touched == frozenset()
        assert floor.stats.rows_read == before.rows_read


def test_a_refresh_names_its_tables_to_postgresql_as_they_are_whatever_they_hold(floor_db):
    """The named tables go to PostgreSQL as array literals (floor/common/tableset.py): quotes, backslashes, commas
    and braces in an id stay in it, and each set gets its own tables."""
    odd = [
        TableRef('S"1', "a\\b"),
        TableRef("S,1", "{x}"),
        TableRef("S1", 'q"u,o}te\\'),
        TableRef("NULL", ""),
    ]
    plain = frozenset({TableRef(SITE, table_id(3)), TableRef(SITE, table_id(4))})
    with psycopg.connect(floor_db, autocommit=True) as conn:
        for only in (frozenset(odd), odd, plain, frozenset(odd)):
            sql, params = floor_tables(only)
            assert sql.startswith("(SELECT * FROM floor_tables") and len(params) == 2
            rows = conn.execute("SELECT * FROM unnest(%s::text[], %s::text[])", params).fetchall()
            assert {TableRef(*r) for r in rows} == set(only) and len(rows) == len(only)
        read = conn.execute(f"SELECT site, table_id FROM {floor_tables(plain)[0]} t", floor_tables(plain)[1])
        assert {TableRef(*r) for r in read} == plain  # the real tables of the set, read through it


def test_builds_start_at_most_once_per_min_interval_and_a_slow_build_is_followed_at_once(floor_db):
    """The coalescing interval is counted from a build's start (floor/web/app.py ``_publish``): two quick builds
    start ``min_interval`` apart, and the build after a slow one starts when it ends, not ``min_interval`` later
    (that wait added to every update's time)."""
    web = FloorWeb(web_config(floor_db, min_interval=1.0))
    starts: list[float] = []
    ends: list[float] = []
    took = [0.0, 0.0, 1.5, 0.0]  # the third build is slower than the interval

    def slow_build(named: frozenset[TableRef] | None, tick: bool) -> Build:
        starts.append(time.monotonic())
        web._note(frozenset({TableRef(SITE, table_id(2))}))  # the archive commits again meanwhile
        time.sleep(took[min(len(starts), len(took)) - 1])  # the build's own duration, as simulated
        ends.append(time.monotonic())
        return Build({}, "[]")

    async def run() -> None:
        web._build = slow_build  # type: ignore[method-assign]
        web._note(frozenset({TableRef(SITE, table_id(2))}))
        task = asyncio.create_task(web._publish())
        try:
            async with asyncio.timeout(30):
                while len(ends) < len(took):
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()

    asyncio.run(run())
    assert starts[1] - starts[0] >= 0.99  # quick builds: one per min_interval
    assert starts[3] - ends[2] < 0.5  # after a slow build at once (the wait was min_interval after it: 1.0 s)
