"""Gap repair and outages (issue 24): through the REAL rendered bridge (a table broker running the section
``controller.mqtt.floor_bridge.render`` writes, MQTT 3.1.1 to the floor broker), real PostgreSQL, real archive workers.
The table is ``tests.support.floor.StandInTable`` (the re-fetch contract with the table's own rate limit) on its
own broker; the real table service does the same in hil_tests/test_floor_netns.py.

- the re-fetch crosses the bridge (its answer address in ``reply_to``: the bridge drops the v5 response topic);
- a refusal is not an answer: "rate limited" is waited out and asked again, never turned into ``event_missing``;
  only ids the table answers ``missing`` are, at once, named;
- archive workers down for longer than the floor broker's queue: nothing the table keeps is lost, even when the
  table publishes nothing afterwards (its retained checkpoint tells how far it got);
- a cut link shows on the floor within 1.5 bridge keepalives (bridge notifications);
- no blind spot far above an open hole, and a pass over idle tables reads nothing.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from controller.broker import BrokerKind
from controller.cli import main as tablectl
from controller.journal.store import Journal
from controller.mqtt.floor_bridge import load, render
from controller.mqtt.link import LinkConfig, MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.replay import HEAD_EVERY_S, RATE_PER_KEY, RATE_WINDOW_S, ReplayServer
from controller.table.messages import Publish, messages
from controller.topics import Topics
from floor.archive import store
from floor.archive.contact import CONTACT_STALE_S, contacts
from floor.archive.gaps import GapFinder
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.messages import TableRef
from tablebench.broker import Broker
from tablebench.table_testing import Harness
from tests.support.floor import FLOOR_USERS, StandInTable, temp_database, wait_until
from tests.test_floor_bridge import write_configs


@pytest.fixture
def dsn():
    with temp_database() as d:
        yield d


class Bridged:
    """A floor broker and a table broker bridged to it by the rendered section; the stand-in on the table's."""

    def __init__(self, tmp_path, *, floor_queue: int | None = None, keepalive: int = 15) -> None:
        extra = (f"max_queued_messages {floor_queue}",) if floor_queue else ()
        self.floor = Broker.start(
            tmp_path / "floor", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1", extra_config=extra
        )
        table_toml, bridge_toml = write_configs(tmp_path, [self.floor.port], insecure_no_tls=True,
                                                keepalive=keepalive)  # fmt: skip
        section = tuple(render(load(table_toml, bridge_toml)).splitlines())
        self.table_broker = Broker.start(
            tmp_path / "table", users=FLOOR_USERS, site="S1", extra_config=section
        )
        self.table = StandInTable(self.table_broker.host, self.table_broker.port, "S1", "T1")

    def worker(self, dsn: str, name: str = "1", **kw) -> ArchiveWorker:
        cfg = ArchiveConfig(
            dsn=dsn, host=self.floor.host, port=self.floor.port, username="archive",
            password=FLOOR_USERS["archive"], worker=name, **{"grace": 0.3, "answer_timeout": 3.0, **kw},
        )  # fmt: skip
        return ArchiveWorker(cfg).start()

    def close(self) -> None:
        self.table.close()
        self.table_broker.stop()
        self.floor.stop()


def rows(dsn: str, sql: str, *params):
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql, params).fetchall()


def ids(dsn: str) -> list[int]:
    return [r[0] for r in rows(dsn, "SELECT event_id FROM events WHERE table_id = 'T1' ORDER BY event_id")]


def test_a_gap_is_repaired_through_the_bridge_and_a_cut_link_shows_on_the_floor(dsn, tmp_path):
    net = Bridged(tmp_path, keepalive=2)
    w = net.worker(dsn)
    try:
        for i in range(1, 31):  # 5-7 and 20 never reached the floor (lost by a broker, say)
            net.table.publish("events/card", "card", {"n": i}, deliver=i not in (5, 6, 7, 20))
        net.table.forget(20)  # and 20 is past the table's retention
        net.table.flush()
        wait_until(
            lambda: ids(dsn) == [i for i in range(1, 31) if i != 20], 30, "5-7 re-fetched over the bridge"
        )
        got = rows(dsn, "SELECT event_id, source, raw FROM events WHERE event_id BETWEEN 5 AND 7 ORDER BY 1")
        assert [(r[0], r[1]) for r in got] == [(5, "replay"), (6, "replay"), (7, "replay")]
        assert all(bytes(r[2]) == net.table.kept[r[0]] for r in got)  # byte for byte
        assert net.table.refusals == [] and net.table.requests[0]["reply_to"] == "archive"
        wait_until(lambda: rows(dsn, "SELECT event_id FROM missing_events") == [(20,)], 15, "20 given up")
        alert = rows(dsn, "SELECT severity, details FROM floor_alerts WHERE kind = 'event_missing'")
        assert alert[0][0] == "critical" and alert[0][1]["event_ids"] == [20]
        wait_until(lambda: rows(dsn, "SELECT contiguous_to FROM floor_tables")[0][0] == 30, 15, "watermark")
        # the link: up (the bridge's notice), then down within 1.5 keepalives of the table broker's death
        wait_until(lambda: rows(dsn, "SELECT link FROM floor_tables")[0][0] == "up", 15, "link up")
        contact = rows(dsn, "SELECT last_contact_at FROM floor_tables")[0][0]
        assert contact is not None and (datetime.now(UTC) - contact).total_seconds() < 30
        heard = rows(dsn, "SELECT last_contact_at FROM floor_tables")[0][
            0
        ]  # then the table broker's heartbeat
        wait_until(
            lambda: rows(dsn, "SELECT last_contact_at FROM floor_tables")[0][0] > heard, 25, "heartbeat"
        )
        net.table_broker.kill()  # the table host is gone (no clean disconnect: the floor must notice)
        cut = time.monotonic()
        wait_until(lambda: rows(dsn, "SELECT link FROM floor_tables")[0][0] == "down", 30, "link down")
        assert time.monotonic() - cut < 2 * 1.5 * 2 + 2
    finally:
        w.stop()
        net.close()


def test_a_refusal_is_not_an_answer_the_archive_waits_out_the_rate_limit(dsn, tmp_path):
    """Started after the table, the archive finds a table that has just been asked by the archive's previous
    life (its rate window is full): the first request is refused "rate limited"; the archive waits the window and
    asks again; no event the table keeps is ever reported missing."""
    net = Bridged(tmp_path)
    try:
        for i in range(1, 41):
            net.table.publish("events/card", "card", {"n": i}, deliver=i % 7 != 0)
        net.table.checkpoint(1)  # event 41, retained
        net.table.flush()
        now = time.monotonic()
        net.table._recent["casino/S1/table/T1/cmd/replay/response/archive"] = [now] * RATE_PER_KEY
        w = net.worker(dsn)
        try:
            wait_until(lambda: len(net.table.refusals) >= 1, 20, "a rate-limited refusal")
            wait_until(
                lambda: ids(dsn) == list(range(1, 42)), 3 * RATE_WINDOW_S + 20, "every hole re-fetched"
            )
            assert rows(dsn, "SELECT count(*) FROM missing_events")[0][0] == 0
            assert rows(dsn, "SELECT count(*) FROM floor_alerts WHERE kind = 'event_missing'")[0][0] == 0
            assert all(r.startswith("rate limited") for r in net.table.refusals)
            assert len(net.table.refusals) <= 2  # backed off, not hammering
            refused = rows(dsn, "SELECT count(*) FROM replay_requests WHERE ok IS FALSE")[0][0]
            assert refused == len(net.table.refusals)
        finally:
            w.stop()
    finally:
        net.close()


def test_workers_down_longer_than_the_floor_queue_lose_nothing_the_table_keeps(dsn, tmp_path):
    """Both workers stopped while the table publishes 6x the floor broker's queue; afterwards the table publishes
    nothing more: its retained checkpoint shows how far it got and the rest is re-fetched over the bridge."""
    net = Bridged(tmp_path, floor_queue=20)
    workers = [net.worker(dsn, "w1", refetch_chunk=20), net.worker(dsn, "w2", refetch_chunk=20)]
    try:
        for i in range(10):
            net.table.publish("events/round", "round", {"i": i})
        net.table.flush()
        wait_until(lambda: len(ids(dsn)) == 10, 20, "first 10")
        for w in workers:
            w.stop()  # sessions stay on the floor broker, which queues 20 messages each, then drops
        for i in range(10, 130):
            net.table.publish("events/round", "round", {"i": i})
        top = net.table.checkpoint(1)  # retained: the last thing the table publishes
        net.table.flush()
        time.sleep(0.5)  # let the bridge hand everything to the floor broker (which drops most of it)
        workers = [net.worker(dsn, "w1", refetch_chunk=20), net.worker(dsn, "w2", refetch_chunk=20)]
        wait_until(lambda: ids(dsn) == list(range(1, top + 1)), 60, "every event archived")
        # paced to the floor broker's queue (--refetch-chunk 20): asked in chunks it can hold, so each id is
        # sent about once, not again and again (issue 36: 100 ids advanced per 6,800 envelopes before)
        refetched = rows(dsn, "SELECT count(*) FROM events WHERE source = 'replay'")[0][0]
        asked = [r["to_event_id"] - r["from_event_id"] + 1 for r in net.table.requests]
        assert max(asked) <= 20 and sum(asked) <= 1.5 * refetched + 20, (sum(asked), refetched)
        assert rows(dsn, "SELECT count(*) FROM floor_alerts WHERE kind = 'replay_unanswered'")[0][0] == 0
        dupes = rows(dsn, "SELECT count(*) - count(DISTINCT event_id) FROM events")[0][0]
        assert dupes == 0 and rows(dsn, "SELECT count(*) FROM missing_events")[0][0] == 0
        assert rows(dsn, "SELECT count(*) FROM events WHERE source = 'replay'")[0][0] > 0  # it was repaired
        raw = dict(rows(dsn, "SELECT event_id, raw FROM events"))
        assert all(bytes(raw[i]) == net.table.kept[i] for i in range(1, top + 1))
    finally:
        for w in workers:
            w.stop()
        net.close()


def _copy_events(conn: psycopg.Connection, table: TableRef, event_ids: list[int]) -> None:
    buf = io.StringIO()
    for i in event_ids:
        buf.write(
            f"{table.site}\t{table.table_id}\t{i}\tevents/card\tcard\t2026-11-23 12:00:00+00\t{{}}\t\\\\x7b7d\tlive\n"
        )
    with conn.cursor() as cur, cur.copy("COPY events (site, table_id, event_id, topic, type, ts, data, raw, source)"
                                        " FROM STDIN") as copy:  # fmt: skip
        copy.write(buf.getvalue())


def test_no_blind_spot_far_above_an_open_hole_and_idle_tables_cost_nothing(dsn):
    t = TableRef("S1", "T1")
    with psycopg.connect(dsn, autocommit=True) as conn:
        store.migrate(conn)
        conn.execute(
            "INSERT INTO floor_tables (site, table_id) SELECT 'S1', 'idle' || g FROM generate_series(1, 500) g"
        )
        _copy_events(conn, t, [*range(1, 11), *range(12, 60_011), *range(60_012, 60_021)])
        with conn.cursor() as cur:
            store.ensure_tables(cur, [t])
        conn.execute("INSERT INTO floor_arrivals (site, table_id, lo, hi) VALUES ('S1', 'T1', 1, 60020)")
        finder = GapFinder()
        for _ in range(3):  # WALK_LIMIT ids a pass: the walk goes on where it stopped
            finder.step(conn)
        assert [(h.lo, h.hi) for h in finder.holes()[t]] == [(11, 11), (60_011, 60_011)]
        assert (
            conn.execute("SELECT contiguous_to FROM floor_tables WHERE table_id = 'T1'").fetchone()[0] == 10
        )
        before = dict(finder.stats)
        finder.step(conn)  # nothing arrived: no table is read (not the 500 idle ones, not the open holes)
        assert finder.stats["tables_read"] == before["tables_read"]
        _copy_events(conn, t, [11])
        conn.execute("INSERT INTO floor_arrivals (site, table_id, lo, hi) VALUES ('S1', 'T1', 11, 11)")
        finder.step(conn)  # the hole an arrival touched is read again, and only that one
        assert finder.stats["tables_read"] == before["tables_read"] + 1
        assert [(h.lo, h.hi) for h in finder.holes()[t]] == [(60_011, 60_011)]
        assert (
            conn.execute("SELECT contiguous_to FROM floor_tables WHERE table_id = 'T1'").fetchone()[0]
            == 60_010
        )
        fresh = GapFinder()  # a new repairer (the lock moved): rebuilt from floor_tables, same answer
        for _ in range(2):
            fresh.step(conn)
        assert [(h.lo, h.hi) for h in fresh.holes()[t]] == [(60_011, 60_011)]


def test_the_rendered_bridge_carries_replay_and_notifies_its_link(tmp_path):
    table_toml, bridge_toml = write_configs(tmp_path, [8883], ca="ca.crt")
    text = render(load(table_toml, bridge_toml))
    p = "casino/S1/table/T1/"
    assert f"topic cmd/replay in 1 {p} {p}" in text and f"topic cmd/+/response/# out 1 {p} {p}" in text
    assert "notifications true" in text and f"notification_topic {p}link/floor" in text
    assert f"topic uptime out 0 $SYS/broker/ {p}link/" in text  # the heartbeat
    assert f"topic link/head out 0 {p} {p}" in text  # the table's newest event id (a lost tail is found)
    keepalive = int(
        next(line.split()[1] for line in text.splitlines() if line.startswith("keepalive_interval"))
    )
    assert 1.5 * keepalive <= 30  # a cut link shows within 30 s


# ---- a repaired round is the same round (issue 36) ----
def rounds_out(dsn: str, capsys) -> list[dict]:
    since = datetime.now(UTC).strftime("%Y-%m-%d")
    assert tablectl(["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", since]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def play_with_decisions(h: Harness) -> None:
    """Three rounds on the real core with the dealer's decisions for "the hand whose turn it is" (no seat named:
    the rebuild takes it from the ``state/round`` published before): a hit, a stand, a double (PT-2001 r.19)."""
    h.open_continuous()
    for k, (cards, moves) in enumerate(
        [
            (["5S", "7D", "6H", "KC"], [("hit", "9C"), ("stand", None)]),  # 11, hit to 20 against 17
            (["TS", "7H", "9H", "KD"], [("stand", None)]),  # 19 against 17
            (["4S", "8D", "6D", "TC"], [("double", "TD")]),  # 10, doubled to 20 against 18
        ]
    ):
        if k:
            h.dealer("next_round")
        h.dealer("place_bet", seat=1, amount=1000)
        h.dealer("no_more_bets")
        if k == 0:
            h.card("2C")  # the shoe's burn (PT-2001 r.10)
        for c in cards:
            h.card(c)
        for move, card in moves:
            h.dealer(move)
            if card:
                h.card(card)
        h.lid_cycle()


class RealTable:
    """The table's own parts behind the table broker instead of the stand-in: its journal, outbox publisher and
    re-fetch server (controller/mqtt/replay.py, with its head)."""

    def __init__(self, net: Bridged, path, head_every: float) -> None:
        net.table.close()
        self.journal = Journal(path / "journal.db", table_id="T1")
        cfg = LinkConfig(net.table_broker.host, net.table_broker.port, "table-T1", FLOOR_USERS["table-T1"],
                         reconnect_min_s=0.05, reconnect_max_s=0.5)  # fmt: skip
        self.link = MqttLink(cfg, Topics("S1", "T1"))
        self.outbox = OutboxPublisher(self.journal, self.link)
        self.server = ReplayServer(self.journal, self.link, head_every=head_every)

    @classmethod
    async def start(cls, net: Bridged, path, head_every: float = HEAD_EVERY_S) -> RealTable:
        table = cls(net, path, head_every)
        table.outbox.start()
        table.server.start()
        await table.link.start()
        await table.link.wait_connected()
        return table

    def publish(self, p: Publish) -> None:
        with self.journal.transaction() as tx:
            if p.text is not None:  # a state document: its canonical text as the core gave it
                tx.publish(p.topic, p.event_type, retain=p.retain, data_text=p.text)
            else:
                tx.publish(p.topic, p.event_type, p.data, retain=p.retain)

    def event(self) -> int:
        self.publish(Publish("events/session", "session", {"action": "note"}))
        return self.journal.last_event_id

    async def sent(self) -> None:
        """Everything journaled is published and acknowledged by the table broker."""
        async with asyncio.timeout(20):
            while self.journal.outbox_size():
                await asyncio.sleep(0.02)

    async def stop(self) -> None:
        await self.link.stop()
        await self.server.stop()


async def test_rounds_fed_live_and_by_refetch_rebuild_the_same_settled_as_the_table(tmp_path, capsys):
    """The same rounds reach one archive live and another only by the table's re-fetch (the real journal and
    ``ReplayServer`` behind the rendered bridge): ``floor rounds`` rebuilds every round complete from both,
    identically, and the rebuilt rounds replay to the settlement the table published. Before, every re-fetched
    state document was archived with no topic and a round with a decision lost its turn (INCOMPLETE)."""
    h = Harness()
    play_with_decisions(h)
    published = messages(h.effects)
    own = {p.data["round_id"]: p.data for p in published if p.topic == "events/settlement"}
    assert len(own) == 3
    net = Bridged(tmp_path)
    table = await RealTable.start(net, tmp_path)
    journal = table.journal
    with temp_database() as live_dsn, temp_database() as refetch_dsn:
        live = net.worker(live_dsn, "live")
        try:
            for p in published:
                table.publish(p)
            top = journal.last_event_id
            assert top == len(published)
            await asyncio.to_thread(wait_until, lambda: ids(live_dsn) == list(range(1, top + 1)), 30, "live")
        finally:
            live.stop()
        refetch = net.worker(
            refetch_dsn, "refetch", group="refetch"
        )  # a new session: only the re-fetch brings the past
        try:
            table.event()  # the table goes on (its head would show the hole below too)
            try:
                await asyncio.to_thread(
                    wait_until,
                    lambda: ids(refetch_dsn) == list(range(1, top + 2)),
                    60,
                    "every event re-fetched",
                )
            except AssertionError:
                raise AssertionError(
                    (
                        ids(refetch_dsn),
                        rows(refetch_dsn, "SELECT * FROM replay_requests"),
                        rows(refetch_dsn, "SELECT * FROM rejected_messages"),
                        top,
                    )
                ) from None
        finally:
            refetch.stop()
            await table.stop()
            net.close()
        # the past came by re-fetch, but for the retained state documents the floor broker hands a new session
        live_past = rows(
            refetch_dsn, "SELECT topic FROM events WHERE event_id <= %s AND source = 'live'", top
        )
        assert len(live_past) < 7 and all(t.startswith("state/") for (t,) in live_past)
        assert rows(refetch_dsn, "SELECT count(*) FROM events WHERE topic IS NULL") == [(0,)]
        topics_of = "SELECT event_id, topic FROM events ORDER BY event_id"
        assert rows(refetch_dsn, topics_of)[:top] == rows(live_dsn, topics_of)[:top]
        by_live, by_refetch = rounds_out(live_dsn, capsys), rounds_out(refetch_dsn, capsys)
        assert [r["round_id"] for r in by_refetch] == list(own)
        assert all(r["complete"] for r in by_refetch), [r["missing"] for r in by_refetch]
        assert by_refetch == by_live
        for r in by_refetch:  # rebuilt, replayed: settled as the table settled
            path = tmp_path / f"{r['round_id']}.json"
            path.write_text(json.dumps(r["description"]))
            assert tablectl(["replay", "--json", str(path)]) == 0
            replayed = json.loads(capsys.readouterr().out)["settlement"]
            for key in ("dealer_cards", "dealer_total", "hands", "seat_nets", "total_net"):
                assert replayed[key] == own[r["round_id"]][key], key


async def test_a_lost_tail_is_found_from_the_tables_head_and_repaired(dsn, tmp_path):
    """The archive is away longer than the floor broker's queue (20) while the table writes 40 events, then the
    table is idle: the floor broker dropped the tail (26-45) and nothing newer will ever arrive. The table's head
    (``link/head``, its newest event id) makes the tail a hole, repaired by re-fetch; no warning left open."""
    net = Bridged(tmp_path, floor_queue=20)
    table = await RealTable.start(net, tmp_path, head_every=1.0)
    w = net.worker(dsn)
    try:
        for _ in range(5):
            table.event()
        await asyncio.to_thread(wait_until, lambda: ids(dsn) == [1, 2, 3, 4, 5], 20, "first 5")
        w.stop()
        for _ in range(40):
            top = table.event()
        await table.sent()
        w = net.worker(dsn)
        started = time.monotonic()
        await asyncio.to_thread(
            wait_until, lambda: ids(dsn) == list(range(1, top + 1)), 60, "the tail repaired"
        )
        took = time.monotonic() - started
        assert rows(dsn, "SELECT max(to_event_id) FROM replay_requests") == [(top,)]  # asked for the tail
        assert rows(dsn, "SELECT known_to FROM floor_tables") == [(top,)]
        assert took < 60
        await asyncio.to_thread(
            wait_until,
            lambda: rows(dsn, "SELECT contiguous_to FROM floor_tables") == [(top,)],
            10,
            "watermark",
        )
        assert rows(dsn, "SELECT count(*) FROM floor_alerts WHERE kind = 'replay_unanswered'") == [(0,)]
    finally:
        w.stop()
        await table.stop()
        net.close()


def test_retained_messages_handed_over_again_are_not_contact(dsn, tmp_path):
    """The table's host is cut off (its broker frozen: no packet either way) and the floor broker crashes and
    restarts before the bridge's will: the restarted broker hands the worker the retained ``link/floor`` "1",
    ``status`` "online" and state documents again. None of it is contact: ``last_contact_at`` stays at the last
    thing the table really sent, so the table is out of reach CONTACT_STALE_S (30 s) after it was cut."""
    net = Bridged(tmp_path, keepalive=2)
    w = net.worker(dsn)
    proc = net.table_broker._proc
    try:
        net.table._send(f"{net.table.prefix}/status", b"online", True)
        net.table.publish("state/table", "state", {"status": "open"}, retain=True)
        net.table.publish("audit/checkpoint", "checkpoint", {}, retain=True)
        net.table.flush()
        wait_until(lambda: rows(dsn, "SELECT link FROM floor_tables") == [("up",)], 15, "link up")
        wait_until(lambda: ids(dsn) == [1, 2], 15, "the retained documents archived")
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)  # the cut
        cut = datetime.now(UTC)
        log = net.floor.workdir / "mosquitto.log"
        saves = log.read_text().count("Saving in-memory database")
        wait_until(
            lambda: log.read_text().count("Saving in-memory database") > saves, 10, "the broker's autosave"
        )
        received = w.stats.received
        net.floor.kill()
        net.floor.restart()
        # bounded for a loaded machine: the broker back, the worker reconnected (back-off up to 5 s), a batch committed
        wait_until(lambda: w.stats.received >= received + 3, 60, "the retained messages handed over again")
        wait_until(lambda: rows(dsn, "SELECT count(*) FROM floor_arrivals") == [(0,)], 10, "a gap pass")
        ((last,),) = rows(dsn, "SELECT last_contact_at FROM floor_tables")
        assert last < cut, (last, cut)
        (contact,) = contacts_of(dsn)
        assert not contact.reachable(cut + timedelta(seconds=CONTACT_STALE_S))
        os.kill(proc.pid, signal.SIGCONT)  # the link heals: contact again
        wait_until(lambda: rows(dsn, "SELECT last_contact_at FROM floor_tables")[0][0] > cut, 30, "contact")
    finally:
        if proc is not None:
            os.kill(proc.pid, signal.SIGCONT)
        w.stop()
        net.close()


def contacts_of(dsn: str):
    with psycopg.connect(dsn) as conn:
        return contacts(conn)
