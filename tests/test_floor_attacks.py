"""Issue 25's attacks on the floor, each performed against the real stack: the floor broker (a real mosquitto with
the shipped floor ACL), PostgreSQL and two archive workers; the table publishes as its bridge does, with its
events chained and its checkpoints signed as the journal makes them (tests.support.floor.StandInTable).

On the old floor every one of them succeeded: the floor broker ran without an ACL, the archive kept the first
payload of each id, and the first checkpoint's key was trusted."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from controller.broker import BrokerKind
from controller.canonical import canonical
from controller.cli import main as tablectl
from controller.journal.event_chain import chained_text
from controller.topics import Topics
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.layout import load_layout
from floor.web.dashboard import snapshot, snapshot_with_documents
from floor.web.pitmap import tiles
from floor.web.table_view import table_view
from tablebench.broker import Broker
from tests.support.broker import USERS, Recorder
from tests.support.floor import FLOOR_USERS, StandInTable, now_ts, temp_database, wait_until

SITE = "S1"
ACCOUNTS = {**FLOOR_USERS, "dealer": USERS["dealer"]}
REFUSED = 0x87  # MQTT v5 PUBACK "not authorized"


@dataclass
class Floor:
    dsn: str
    broker: Broker

    def rows(self, sql: str, *params) -> list[tuple]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(sql, params).fetchall()

    def proven(self, table: str, up_to: int) -> bool:
        """Events 1..up_to archived and each proven the table's."""
        got = self.events(table)
        return all(got.get(e, (b"", False))[1] for e in range(1, up_to + 1))

    def events(self, table: str) -> dict[int, tuple[bytes, bool]]:
        got = self.rows("SELECT event_id, raw, verified FROM events WHERE table_id = %s", table)
        return {e: (bytes(raw), verified) for e, raw, verified in got}

    def alerts(self, table: str) -> set[str]:
        return {r[0] for r in self.rows("SELECT kind FROM floor_alerts WHERE table_id = %s", table)}

    def table(self, table_id: str) -> StandInTable:
        return StandInTable(self.broker.host, self.broker.port, SITE, table_id)

    def account(self, user: str, table_id: str) -> Recorder:
        return Recorder(self.broker, user, Topics(SITE, table_id), filters=(), validate=False).start()

    def enrol(self, table: StandInTable, tmp_path: Path) -> None:
        """As an operator does: from the table's integrity manifest (docs/floor.md)."""
        manifest = tmp_path / f"integrity-{table.table_id}.json"
        manifest.write_text(
            json.dumps({"format": "tablectl-integrity/1", "audit_public_key": table.public_key})
        )
        args = ["floor", "enrol", "--dsn", self.dsn, "--site", SITE, "--table", table.table_id]
        assert tablectl([*args, "--manifest", str(manifest), "--user", "alice"]) == 0


@pytest.fixture
def floor(tmp_path) -> Iterator[Floor]:
    with temp_database() as dsn:
        broker = Broker.start(tmp_path / "floor-broker", users=ACCOUNTS, acl=BrokerKind.FLOOR, site=SITE)
        workers = []
        try:
            for name in ("a1", "a2"):
                cfg = ArchiveConfig(
                    dsn=dsn, host=broker.host, port=broker.port, username="archive", password=ACCOUNTS["archive"],
                    worker=name, grace=0.3, answer_timeout=2.0,
                )  # fmt: skip
                workers.append(ArchiveWorker(cfg).start())
            yield Floor(dsn, broker)
        finally:
            for w in workers:
                w.stop()
            broker.stop()


def forged(table: StandInTable, event_id: int, event_type: str, data: dict) -> bytes:
    """A perfect forgery: the table's envelope form, chained on from the table's public chain value."""
    doc = {"data": data, "event_id": event_id, "table": table.table_id, "ts": now_ts(), "type": event_type}
    return chained_text(table.head, canonical(doc | {"prev": table.head}))[0].encode()


def attempt(rec: Recorder, rel: str, payload: bytes, *, retain: bool = False) -> int:
    """Publish QoS 1 and return the PUBACK's reason code."""
    info = rec.client.publish(rec.topics.abs(rel), payload, qos=1, retain=retain)
    wait_until(lambda: info.mid in rec.pubacks, 10, "PUBACK")
    return rec.pubacks[info.mid]


def test_other_accounts_cannot_publish_a_tables_next_events(floor, tmp_path):
    """A neighbouring table's account, a dealer and a monitor publish T1's next event ids on events/jackpot before
    T1 does: the floor broker refuses each, and the table's own events are archived and proven."""
    table = floor.table("T1")
    floor.enrol(table, tmp_path)
    try:
        for i in range(3):
            table.publish("events/jackpot", "jackpot", {"meter": 1000 + i})
        table.checkpoint(10)
        table.flush()
        for user in ("table-T2", "dealer", "monitor"):
            rec = floor.account(user, "T1")
            try:
                for event_id in (5, 6, 7):
                    body = forged(table, event_id, "jackpot", {"meter": 999_999, "hit": user})
                    assert attempt(rec, "events/jackpot", body) == REFUSED, f"{user} published T1's event"
            finally:
                rec.stop()
        for i in range(3):
            table.publish("events/jackpot", "jackpot", {"meter": 2000 + i})
        table.checkpoint(20)
        table.flush()
        wait_until(lambda: floor.proven("T1", 7) and len(floor.events("T1")) == 8,
                   30, "every event of T1 archived and proven")  # fmt: skip
        assert {e: raw for e, (raw, _) in floor.events("T1").items()} == table.kept
        assert floor.rows("SELECT count(*) FROM quarantined_events")[0][0] == 0
        assert not floor.alerts("T1") & {"event_conflict", "event_rejected"}
    finally:
        table.close()


def test_nobody_else_publishes_a_tables_retained_state(floor, tmp_path):
    """A dealer and a neighbouring table's account publish a retained state/table for T1: refused; a console that
    subscribes afterwards gets the table's own, and the archive keeps only the table's."""
    table = floor.table("T1")
    try:
        own = table.publish("state/table", "table", {"state": "open"}, retain=True)
        table.flush()
        for user in ("dealer", "table-T2"):
            rec = floor.account(user, "T1")
            try:
                body = forged(table, own + 1, "table", {"state": "closed", "by": user})
                assert attempt(rec, "state/table", body, retain=True) == REFUSED
            finally:
                rec.stop()
        console = Recorder(floor.broker, "monitor", Topics(SITE, "T1"), filters=("state/#",), validate=False)
        console.start()
        try:
            console.wait_for(lambda m: any(t == "state/table" for t, _, _ in m))
            assert [(p, r) for t, p, r in console.messages if t == "state/table"] == [(table.kept[own], True)]
        finally:
            console.stop()
        wait_until(lambda: own in floor.events("T1"), 30, "the table's state archived")
        assert floor.rows("SELECT count(*) FROM events WHERE table_id = 'T1'")[0][0] == 1
    finally:
        table.close()


def test_one_tables_account_cannot_command_another_table(floor):
    """T2's account (and a dealer's) publish on T1's cmd/supervisor: refused, T1 never sees them; a supervisor's
    command published after them arrives (the table checks its signature)."""
    table = floor.table("T1")
    seen: list[bytes] = []
    topic = f"{table.prefix}/cmd/supervisor"
    table.client.message_callback_add(topic, lambda c, u, m: seen.append(bytes(m.payload)))
    table.client.subscribe(topic, qos=1)
    try:
        for user in ("table-T2", "dealer"):
            rec = floor.account(user, "T1")
            try:
                assert attempt(rec, "cmd/supervisor", json.dumps({"probe": user}).encode()) == REFUSED
            finally:
                rec.stop()
        sup = floor.account("supervisor1", "T1")
        try:
            wait_until(lambda: attempt(sup, "cmd/supervisor", b'{"probe": "supervisor1"}') == 0 and
                       bool(seen), 30, "the supervisor's command")  # fmt: skip
        finally:
            sup.stop()
        assert {json.loads(p)["probe"] for p in seen} == {"supervisor1"}
    finally:
        table.close()


def test_a_forged_first_checkpoint_of_a_table_not_enrolled_is_never_trusted(floor, tmp_path):
    """The attacker holds T3's floor account (its bridge password) but not its audit key: before the real table
    is heard, he publishes a first checkpoint signed with his own key. The floor trusts no key of a table not
    enrolled (critical table_not_enrolled); once the operator enrols the table's key, the forged checkpoint is
    rejected, the real ones verify, and the real event 1 replaces the forger's."""
    forger = floor.table("T3")
    forger.checkpoint(5)  # event 1, signed with the forger's own key
    forger.flush()
    forger.close()
    table = floor.table("T3")
    try:
        for i in range(3):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.checkpoint(10)
        table.flush()
        wait_until(lambda: "table_not_enrolled" in floor.alerts("T3"), 30, "table_not_enrolled alert")
        assert floor.rows("SELECT public_key FROM floor_tables WHERE table_id = 'T3'") == [(None,)]
        assert floor.rows("SELECT count(*) FROM checkpoints WHERE signature_ok")[0][0] == 0
        assert "event_conflict" in floor.alerts("T3")  # two payloads for event 1
        assert not any(v for _, v in floor.events("T3").values())
        floor.enrol(table, tmp_path)
        wait_until(lambda: floor.proven("T3", 3), 30, "T3's events proven")
        verdicts = dict(floor.rows("SELECT seq, chain FROM checkpoints WHERE table_id = 'T3'"))
        assert verdicts == {5: "rejected", 10: "genesis"}
        assert "checkpoint_invalid" in floor.alerts("T3")
        assert {e: raw for e, (raw, _) in floor.events("T3").items()} == table.kept
        assert floor.rows("SELECT event_id FROM quarantined_events WHERE table_id = 'T3'") == [(1,)]
        # enrolled: a later forged checkpoint is rejected outright and the table's own go on verifying
        forger = floor.table("T3")
        forger.next_id, forger.head = table.next_id, table.head
        forger.checkpoint(15)
        forger.flush()
        forger.close()
        table.next_id += 1
        table.publish("events/round", "round", {"round_id": "r9", "phase": "betting"})
        table.checkpoint(20, prev=(10, table._cp_prev[1]))
        table.flush()
        wait_until(lambda: len(floor.rows("SELECT 1 FROM checkpoints WHERE table_id = 'T3' AND chain != 'pending'"))
                   == 4, 30, "verdicts")  # fmt: skip
        verdicts = dict(floor.rows("SELECT seq, chain FROM checkpoints WHERE table_id = 'T3'"))
        assert verdicts[15] == "rejected" and verdicts[20] == "linked"
    finally:
        table.close()


def test_two_payloads_for_one_event_id_the_tables_chain_decides(floor, tmp_path):
    """The attacker holds T4's floor account and publishes forged events 4 and 5 (perfectly formed, chained on
    from the table's public chain value) before the table does. Event 4: the table's own arrives second, a
    critical event_conflict is raised and, once the next checkpoint covers it, the table's payload wins. Event 5:
    the table's never comes live; the chain disproves the forged one, which is kept aside, and the table's is
    fetched again. Events after the last checkpoint are shown not yet verified until one covers them."""
    table = floor.table("T4")
    floor.enrol(table, tmp_path)
    try:
        table.publish("events/card", "card", {"code": "7H"})
        table.publish("events/card", "card", {"code": "8H"})
        table.checkpoint(10)  # event 3
        table.flush()
        wait_until(lambda: len(floor.events("T4")) == 3 and floor.proven("T4", 2), 30,
                   "events 1-2 proven")  # fmt: skip
        table.publish_raw("events/card", forged(table, 4, "card", {"code": "AS"}))
        table.flush()
        wait_until(lambda: 4 in floor.events("T4"), 30, "the forged event 4 archived (for now)")
        fake_head = json.loads(forged(table, 4, "card", {"code": "AS"}))["chain"]
        five = {"data": {"code": "KS"}, "event_id": 5, "table": "T4", "ts": now_ts(), "type": "card"}
        table.publish_raw(
            "events/card", chained_text(fake_head, canonical(five | {"prev": fake_head}))[0].encode()
        )
        table.flush()
        wait_until(lambda: 5 in floor.events("T4"), 30, "the forged event 5 archived (for now)")
        assert floor.events("T4")[4][1] is False  # after the last checkpoint: not yet verified
        table.publish("events/card", "card", {"code": "9H"})  # the real event 4
        table.publish("events/card", "card", {"code": "TH"}, deliver=False)  # the real 5: lost on the way
        table.publish("events/card", "card", {"code": "JH"})
        table.flush()
        wait_until(lambda: "event_conflict" in floor.alerts("T4"), 30, "event_conflict")
        severity = floor.rows("SELECT severity FROM floor_alerts WHERE kind = 'event_conflict'")
        assert severity == [("critical",)]
        table.checkpoint(20)  # covers 1-6
        table.flush()
        wait_until(lambda: len(floor.events("T4")) == 7 and floor.proven("T4", 6), 60,
                   "events 4-6 proven")  # fmt: skip
        assert {e: raw for e, (raw, _) in floor.events("T4").items()} == table.kept
        aside = floor.rows("SELECT event_id, reason FROM quarantined_events WHERE table_id = 'T4' ORDER BY 1")
        assert [e for e, _ in aside] == [4, 5]
        assert "checkpoint 20" in aside[1][1] or "checkpoint 20" in aside[0][1]
        assert "event_rejected" in floor.alerts("T4")
        assert floor.events("T4")[7][1] is False  # the checkpoint's own envelope: the next one proves it

        def shown() -> tuple[int, int]:  # what the dashboard shows: proven up to event 6, 7 not yet
            with psycopg.connect(floor.dsn) as conn:
                t = {t["table"]: t for t in snapshot(conn)["tables"]}["T4"]
            return t["verified_to"], t["archived_to"]

        # the watermark moves at the repair's next maintenance pass (a loaded machine: later)
        wait_until(lambda: shown()[1] == 7, 30, "the archive's watermark at event 7")
        assert shown() == (6, 7)
    finally:
        table.close()


def test_a_long_walk_back_proves_every_event_and_the_tables_payload_wins_deep_in_it(floor, tmp_path):
    """One checkpoint covers 300 events (the walk back reads them in growing windows, floor/archive/verify_events.py):
    every one is proven, and a forged event 10 archived before the table's, three windows back from the head, is
    replaced by the table's own (kept aside with its critical alerts)."""
    table = floor.table("T3")
    floor.enrol(table, tmp_path)
    try:
        for i in range(9):
            table.publish("events/card", "card", {"code": f"{i}H"})
        table.publish_raw("events/card", forged(table, 10, "card", {"code": "AS"}))
        table.flush()
        wait_until(lambda: 10 in floor.events("T3"), 30, "the forged event 10 archived (for now)")
        for i in range(10, 301):
            table.publish("events/card", "card", {"code": f"{i}C"})
        table.checkpoint(10)  # event 301: covers 1-300
        table.flush()
        wait_until(lambda: "event_conflict" in floor.alerts("T3"), 30, "event_conflict")
        wait_until(lambda: len(floor.events("T3")) == 301 and floor.proven("T3", 300), 60,
                   "events 1-300 proven")  # fmt: skip
        assert {e: raw for e, (raw, _) in floor.events("T3").items()} == table.kept
        aside = floor.rows("SELECT event_id, reason FROM quarantined_events WHERE table_id = 'T3'")
        assert [e for e, _ in aside] == [10] and "checkpoint 10 proves another payload" in aside[0][1]
        assert "event_rejected" in floor.alerts("T3")
    finally:
        table.close()


def test_one_far_future_envelope_neither_floods_the_archive_nor_slows_the_tables_repair(floor, tmp_path):
    """Issue 37: with T1's bridge password (a stolen SD card) the attacker publishes ONE envelope on T1's own topic
    with event_id 990,000,001, chained on from the table's public head. The old floor opened every id below it
    as a hole (480,000 missing_events rows in 121 s, one critical alert per 10,000 ids, the real table's re-fetch
    saturated). Now: the id is beyond what T1 has proved (its last verified checkpoint + floor/archive/claims.py's
    allowance), so the envelope is kept aside as unproven with ONE alert naming the range, no hole is opened, and
    the real table's lost event is repaired and its events proven as fast as before the attack."""
    table = floor.table("T1")
    floor.enrol(table, tmp_path)

    def lose_one_and_prove(seq: int) -> float:
        """One event lost on the way (asked again by the repair), then a checkpoint proving all: seconds taken."""
        started = time.monotonic()
        lost = table.publish("events/jackpot", "jackpot", {"meter": seq}, deliver=False)
        table.publish("events/jackpot", "jackpot", {"meter": seq + 1})
        table.checkpoint(seq)
        table.flush()
        last = table.next_id - 1
        wait_until(lambda: floor.proven("T1", last - 1) and lost in floor.events("T1"), 60,
                   f"event {lost} repaired and events up to {last - 1} proven")  # fmt: skip
        return time.monotonic() - started

    try:
        table.publish("events/jackpot", "jackpot", {"meter": 1})
        before = lose_one_and_prove(10)
        forger = floor.table("T1")  # the same account, its own connection
        forger.client.unsubscribe(f"{forger.prefix}/cmd/replay")  # it floods; it does not answer re-fetches
        try:
            forger.publish_raw("events/jackpot", forged(table, 990_000_001, "jackpot", {"meter": 1}))
            forger.flush()
            wait_until(lambda: "event_unproven" in floor.alerts("T1"), 30, "the event_unproven alert")
            after = lose_one_and_prove(20)
            # a second far-future envelope widens the same open alert, never a second one
            forger.publish_raw("events/jackpot", forged(table, 990_000_500, "jackpot", {"meter": 2}))
            forger.flush()
            wait_until(lambda: floor.rows("SELECT count(*) FROM quarantined_events")[0][0] == 2, 30,
                       "the second envelope kept aside")  # fmt: skip
        finally:
            forger.close()
        print(f"T1's repair + proof: {before:.1f} s before the attack, {after:.1f} s after")
        assert after <= before + 10.0
        assert {e: raw for e, (raw, _) in floor.events("T1").items()} == table.kept
        assert floor.rows("SELECT count(*) FROM missing_events")[0][0] == 0
        aside = floor.rows("SELECT event_id, reason FROM quarantined_events ORDER BY 1")
        assert [e for e, _ in aside] == [990_000_001, 990_000_500]
        assert all(r.startswith("unproven") for _, r in aside)
        alerts = floor.rows("SELECT kind, details FROM floor_alerts WHERE table_id = 'T1'")
        assert [k for k, _ in alerts] == ["event_unproven"]  # nothing missing, nothing rejected
        assert (alerts[0][1]["from_event_id"], alerts[0][1]["to_event_id"]) == (990_000_001, 990_000_500)
        asked = [(r["from_event_id"], r["to_event_id"]) for r in table.requests]
        assert asked and all(hi < table.next_id for _, hi in asked), asked  # only the table's own ids
        assert not table.refusals
        # bounded: the archive holds T1's own events and the two kept aside, nothing else
        assert floor.rows("SELECT count(*) FROM events")[0][0] == len(table.kept)
    finally:
        table.close()


def _shown(dsn: str, table_id: str) -> dict[str, str]:
    """What the pit map's tile and the table's page show of the table's state (the dashboard's own builders)."""
    with psycopg.connect(dsn) as conn:
        snap, docs = snapshot_with_documents(conn)
        tile = {t.table: t for t in tiles(snap, docs, load_layout(None), conn, datetime.now(UTC))}[table_id]
        page = table_view(conn, SITE, table_id)
    return {"tile": tile.state, "tile_apart": tile.unverified, "dealer": tile.dealer,
            "page": page["state"], "page_apart": page["unverified"]}  # fmt: skip


def test_a_forged_newer_state_is_never_shown_as_the_tables_and_drops_out_when_disproved(floor, tmp_path):
    """Issue 37: with T2's bridge password the attacker publishes a retained state/table "closed" under an id
    ahead of the table (within what it may claim, floor/archive/claims.py). The old pit map and table page took the
    highest id, verified or not, and kept showing it after the table published newer, verified states. Now the
    state shown is the newest the table's signed chain proves; the forged document is shown apart, marked not yet
    verified, and drops out once the table's checkpoint covering its id disproves it."""
    table = floor.table("T2")
    floor.enrol(table, tmp_path)
    forger = floor.table("T2")  # the same account, its own connection
    forger.client.unsubscribe(
        f"{forger.prefix}/cmd/replay"
    )  # it forges a state; it does not answer re-fetches
    try:
        table.publish("state/table", "state", {"state": "betting", "dealer": "Ana"}, retain=True)
        table.checkpoint(10)
        table.flush()
        wait_until(lambda: floor.proven("T2", 1), 30, "the table's first state proven")
        fake = forged(table, 40, "state", {"state": "closed", "dealer": "Mallory"})
        forger._send(f"{forger.prefix}/state/table", fake, True)
        forger.flush()
        wait_until(lambda: 40 in floor.events("T2"), 30, "the forged state archived (not yet verified)")
        for _ in range(3):  # the real table goes on: newer states, proven by its next checkpoint
            table.publish("state/table", "state", {"state": "players", "dealer": "Ana"}, retain=True)
        table.checkpoint(20)
        table.flush()
        wait_until(lambda: floor.proven("T2", 5), 30, "the table's newer states proven")
        shown = _shown(floor.dsn, "T2")
        assert (shown["tile"], shown["page"], shown["dealer"]) == ("Players", "Players", "Ana"), shown
        assert shown["tile_apart"] == shown["page_apart"] == "newer, not yet verified (event 40): Closed"
        while table.next_id <= 41:  # the table reaches id 40 and its checkpoint covers it
            table.publish("events/jackpot", "jackpot", {"meter": table.next_id})
        table.checkpoint(30)
        table.flush()
        wait_until(lambda: floor.proven("T2", 41), 60, "the table's own event 40 proven")
        shown = _shown(floor.dsn, "T2")
        assert (shown["tile"], shown["tile_apart"], shown["page"], shown["page_apart"]) == (
            "Players",
            "",
            "Players",
            "",
        ), shown
        assert floor.rows("SELECT event_id FROM quarantined_events WHERE table_id = 'T2'") == [(40,)]
    finally:
        forger.close()
        table.close()


@pytest.mark.parametrize(
    "poison",
    [b'"\\ud800"', b'"\\udfff x"', b"1e999", b"-1e400", b'{"\\udc00": 1}'],
    ids=["lone-high-surrogate", "lone-low-surrogate", "number-beyond-a-double", "negative-beyond", "key"],
)
def test_a_value_postgresql_cannot_store_is_refused_at_the_door_and_holds_nothing_up(floor, tmp_path, poison):
    """With T1's bridge password the attacker publishes an envelope whose data PostgreSQL's jsonb refuses (a lone
    UTF-16 surrogate, a number beyond a double's range: valid JSON text, but no jsonb value). The door let it
    through before and its batch failed on every retry: the whole archive stopped behind one message. Now it is
    refused with its reason (rejected_messages) and the table's own events before and after it are archived."""
    table = floor.table("T1")
    floor.enrol(table, tmp_path)
    try:
        first = table.publish("events/jackpot", "jackpot", {"meter": 1})
        table.flush()
        wait_until(lambda: first in floor.events("T1"), 30, "the first event archived")
        forger = floor.table("T1")  # the same account, its own connection
        forger.client.unsubscribe(f"{forger.prefix}/cmd/replay")
        try:
            text = forged(table, 777, "jackpot", {"meter": "POISON"}).replace(b'"POISON"', poison)
            forger.publish_raw("events/jackpot", text)
            forger.flush()
            wait_until(lambda: floor.rows("SELECT count(*) FROM rejected_messages")[0][0] >= 1, 30,
                       "the envelope refused")  # fmt: skip
        finally:
            forger.close()
        after = [table.publish("events/jackpot", "jackpot", {"meter": n}) for n in range(2, 6)]
        table.flush()
        wait_until(lambda: set(after) <= set(floor.events("T1")), 30, "the table's events after it archived")
        reasons = [r for (r,) in floor.rows("SELECT reason FROM rejected_messages")]
        assert len(reasons) == 1 and ("surrogate" in reasons[0] or "out of range" in reasons[0]), reasons
        assert 777 not in floor.events("T1")
    finally:
        table.close()
