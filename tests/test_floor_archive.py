"""The floor archive (issue 18): a real mosquitto (the floor broker), real PostgreSQL, real archive workers.

The table side of the re-fetch (docs/reliability.md) is played by ``tests.support.floor.StandInTable``, a small
publisher implementing the same request and answer, so that each archive case can make the gaps it needs; the real
table's side is tested in tests/test_replay_events.py and, end to end, in hil_tests/test_floor_netns.py."""

from __future__ import annotations

import json
import shutil

import psycopg
import pytest

from floor.archive import store
from floor.archive.enrol import set_trust_on_first_use
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef
from tablebench.broker import Broker
from tests.support.floor import FLOOR_USERS, StandInTable, wait_until


def worker(dsn: str, broker: Broker, name: str = "1", **kw) -> ArchiveWorker:
    cfg = ArchiveConfig(
        dsn=dsn, host=broker.host, port=broker.port, username="archive", password=FLOOR_USERS["archive"],
        worker=name, **{"grace": 0.3, "answer_timeout": 2.0, **kw},
    )  # fmt: skip
    return ArchiveWorker(cfg).start()


def trust_on_first_use(dsn: str, table: str) -> None:
    with psycopg.connect(dsn) as conn:
        set_trust_on_first_use(conn, TableRef("S1", table), True)


def rows(dsn: str, sql: str, *params):
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql, params).fetchall()


def count(dsn: str, site: str, table: str) -> int:
    return rows(dsn, "SELECT count(*) FROM events WHERE site = %s AND table_id = %s", site, table)[0][0]


# ---- migrations ----
def test_migrations_apply_once_in_order_and_refuse_an_edited_file(dsn, tmp_path):
    with psycopg.connect(dsn) as conn:
        shipped = len(store.migrations())
        assert store.migrate(conn) == list(range(1, shipped + 1))
        assert store.migrate(conn) == []
        assert store.schema_version(conn) == shipped
        edited = tmp_path / "migrations"
        shutil.copytree(store.MIGRATIONS_DIR, edited)
        first = edited / "0001_archive.sql"
        first.write_text(first.read_text() + "\n-- edited after release\n")
        with pytest.raises(store.MigrationError, match="changed since it was applied"):
            store.migrate(conn, edited)
        (edited / "0001_archive.sql").write_text((store.MIGRATIONS_DIR / "0001_archive.sql").read_text())
        (edited / f"{shipped + 1:04d}_more.sql").write_text("CREATE TABLE extra (x int);")
        assert store.migrate(conn, edited) == [shipped + 1]
        names = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
        assert names[0] == (1, "archive") and names[-1] == (shipped + 1, "more")


# ---- idempotence, several workers ----
def test_three_workers_store_every_event_of_every_table_exactly_once(dsn, floor_broker):
    workers = [worker(dsn, floor_broker, name) for name in ("w1", "w2", "w3")]
    tables = [StandInTable(floor_broker.host, floor_broker.port, "S1", t) for t in ("T1", "T2", "T3")]
    try:
        n = 150
        for i in range(n):
            for t in tables:
                eid = t.publish("events/card", "card", {"round_id": "r1", "code": "AS", "i": i})
                if i % 10 == 0:  # a QoS 1 redelivery: the same envelope bytes again
                    t.publish_raw("events/card", t.kept[eid])
        for t in tables:
            t.flush()
        for t in tables:
            wait_until(lambda t=t: count(dsn, "S1", t.table_id) == n, what=f"{t.table_id} archived")
        for t in tables:
            got = rows(
                dsn, "SELECT event_id, raw FROM events WHERE site='S1' AND table_id=%s ORDER BY 1", t.table_id
            )
            assert [r[0] for r in got] == list(range(1, n + 1))
            assert all(bytes(raw) == t.kept[eid] for eid, raw in got)  # stored byte for byte
        stats = [w.stats for w in workers]
        assert sum(s.stored for s in stats) == 3 * n
        assert sum(s.duplicates for s in stats) >= 3 * (n // 10)  # the redeliveries arrived and were dropped
        assert sum(1 for s in stats if s.stored > 0) >= 2, "the shared subscription did not split the load"
    finally:
        for t in tables:
            t.close()
        for w in workers:
            w.stop()


def test_a_killed_worker_loses_nothing_its_session_is_resumed(dsn, floor_broker):
    w = worker(dsn, floor_broker, "solo")
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    try:
        for i in range(20):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()
        wait_until(lambda: count(dsn, "S1", "T1") == 20, what="first 20")
        w.kill()  # crash: no clean disconnect
        for i in range(20, 60):  # published while no worker runs: the broker queues them for the session
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()
        floor_broker.restart()  # and the floor broker restarts meanwhile (3.1.1 session restored, F3)
        w = worker(dsn, floor_broker, "solo")
        wait_until(lambda: count(dsn, "S1", "T1") == 60, what="all 60 after the restart")
        assert rows(dsn, "SELECT count(*) FROM replay_requests")[0][0] == 0  # the session, not a re-fetch
    finally:
        table.close()
        w.stop()


# ---- gaps ----
def test_a_gap_is_refetched_from_the_table_and_one_no_longer_kept_raises_a_floor_alert(
    dsn, floor_broker, capsys
):
    w = worker(dsn, floor_broker)
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    try:
        ids = []
        for i in range(1, 21):
            lost = i in (5, 6, 7, 12)  # never reached the floor (e.g. lost by a broker without persistence)
            ids.append(table.publish("events/card", "card", {"round_id": "r", "n": i}, deliver=not lost))
        table.forget(12)  # and 12 is past the table's retention
        table.flush()
        wait_until(lambda: count(dsn, "S1", "T1") == 19, what="repair of 5-7")
        got = rows(dsn, "SELECT event_id, source, raw, topic FROM events WHERE event_id BETWEEN 5 AND 7")
        assert [(r[0], r[1], r[3]) for r in got] == [(i, "replay", "events/card") for i in (5, 6, 7)]
        assert all(bytes(r[2]) == table.kept[r[0]] for r in got)
        assert table.requests and all(
            set(r) == {"request_id", "from_event_id", "to_event_id", "reply_to"}
            and r["reply_to"] == "archive"
            for r in table.requests
        )
        wait_until(lambda: rows(dsn, "SELECT count(*) FROM missing_events")[0][0] == 1, what="alert for 12")
        alert = rows(dsn, "SELECT kind, severity, details FROM floor_alerts WHERE kind = 'event_missing'")
        assert alert[0][0:2] == ("event_missing", "critical") and alert[0][2]["event_ids"] == [12]
        wait_until(lambda: rows(dsn, "SELECT contiguous_to FROM floor_tables")[0][0] == 20, what="watermark")
        from controller.cli import main as tablectl

        assert tablectl(["floor", "alerts", "--dsn", dsn]) == 0
        out = capsys.readouterr().out
        assert "Event missing from the archive" in out and "event_missing" not in out  # words (issue 30)
        assert "S1/T1" in out and "12" in out
    finally:
        table.close()
        w.stop()


# ---- hostile input ----
def test_hostile_messages_are_refused_counted_and_never_stored(dsn, floor_broker):
    w = worker(dsn, floor_broker)
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    try:
        good = {"data": {}, "event_id": 1, "table": "T1", "ts": "2026-11-23T10:00:00.000Z", "type": "card"}
        bad = [
            b"not json",
            b"[1,2]",
            json.dumps({**good, "table": "T2"}).encode(),  # another table's name
            json.dumps({**good, "data": {"x": "a\u0000b"}}).encode(),  # NUL: jsonb would refuse it
            json.dumps({**good, "event_id": -3}).encode(),
            json.dumps({**good, "event_id": True}).encode(),
            json.dumps({**good, "ts": "yesterday"}).encode(),
            b"{" * 100_000,
            b"[" * 300 + b"]" * 300,
            b'{"event_id": NaN}',
        ]
        for payload in bad:
            table.publish_raw("events/card", payload)
        table.publish_raw("events/card", json.dumps(good).encode())
        table.flush()
        wait_until(
            lambda: rows(dsn, "SELECT count(*) FROM rejected_messages")[0][0] == len(bad), what="refusals"
        )
        wait_until(lambda: count(dsn, "S1", "T1") == 1, what="the good one")
        assert w.stats.rejected == len(bad)
    finally:
        table.close()
        w.stop()


# ---- audit checkpoints ----
def _chain(dsn: str, table: str) -> dict[int, tuple[str, bool | None]]:
    got = rows(
        dsn, "SELECT seq, chain, signature_ok FROM checkpoints WHERE table_id = %s ORDER BY seq", table
    )
    return {seq: (chain, ok) for seq, chain, ok in got}


def test_checkpoints_are_verified_against_the_state_software_key_and_must_chain(dsn, floor_broker):
    """Key from the retained state/software ``audit_public_key`` (docs/mqtt.md); a checkpoint signed by another key
    (a forger who made his own key) is rejected; one naming a predecessor with another hash breaks the chain."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    w = worker(dsn, floor_broker)
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    trust_on_first_use(dsn, "T1")  # the operator's choice for this table (otherwise: enrolled keys only)
    try:
        sw = {"version": "0.1.0", "profile": "pt-2001", "audit_public_key": table.public_key}
        table.publish("state/software", "state", sw, retain=True)
        table.checkpoint(10)
        table.publish("events/round", "round", {"round_id": "r1", "phase": "settled"})
        table.checkpoint(20)
        table.checkpoint(30)
        table.flush()
        wait_until(lambda: _chain(dsn, "T1").get(30, ("",))[0] == "linked", what="chain")
        assert _chain(dsn, "T1") == {10: ("genesis", True), 20: ("linked", True), 30: ("linked", True)}
        assert rows(dsn, "SELECT key_source FROM floor_tables")[0][0] == "state/software"
        # attack 1: a checkpoint signed with a key the attacker made (valid against its own public_key)
        table.checkpoint(40, key=Ed25519PrivateKey.generate())
        # attack 2: a correctly signed checkpoint whose predecessor hash is not the archived one (rewritten log)
        table.checkpoint(50, prev=(30, "f" * 64))
        table.flush()
        wait_until(lambda: 50 in _chain(dsn, "T1") and _chain(dsn, "T1")[50][0] != "pending", what="verdicts")
        chain = _chain(dsn, "T1")
        assert chain[40] == ("rejected", False) and chain[50] == ("broken", True)
        kinds = {r[0] for r in rows(dsn, "SELECT kind FROM floor_alerts WHERE severity = 'critical'")}
        assert {"checkpoint_invalid", "checkpoint_chain"} <= kinds
    finally:
        table.close()
        w.stop()


def test_without_state_software_the_first_checkpoint_key_is_trusted_on_first_use(dsn, floor_broker):
    w = worker(dsn, floor_broker)
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T2")
    trust_on_first_use(dsn, "T2")
    try:
        table.publish("events/round", "round", {"round_id": "r1", "phase": "betting"})
        table.checkpoint(5)
        table.checkpoint(9)
        table.flush()
        wait_until(lambda: _chain(dsn, "T2").get(9, ("",))[0] == "linked", what="chain")
        assert rows(dsn, "SELECT public_key, key_source FROM floor_tables")[0] == (
            table.public_key,
            "first-checkpoint",
        )
        # state/software later names another key: the floor does not switch silently, it alerts
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from controller.audit.checkpoint import public_key_hex

        sw = {"audit_public_key": public_key_hex(Ed25519PrivateKey.generate().public_key())}
        table.publish("state/software", "state", sw, retain=True)
        table.flush()
        wait_until(
            lambda: (
                rows(dsn, "SELECT count(*) FROM floor_alerts WHERE kind = 'audit_key_mismatch'")[0][0] == 1
            ),
            what="key mismatch alert",
        )
    finally:
        table.close()
        w.stop()


def test_a_table_that_does_not_answer_the_refetch_gets_a_warning_and_is_asked_again(dsn, floor_broker):
    w = worker(dsn, floor_broker, answer_timeout=0.5)
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    try:
        table.client.unsubscribe(f"{table.prefix}/cmd/replay")  # a table whose re-fetch service is down
        for i in range(1, 6):
            table.publish("events/card", "card", {"round_id": "r", "n": i}, deliver=i != 3)
        table.flush()
        wait_until(
            lambda: (
                rows(dsn, "SELECT count(*) FROM floor_alerts WHERE kind = 'replay_unanswered'")[0][0] == 1
            ),
            what="replay_unanswered warning",
        )
        assert rows(dsn, "SELECT severity FROM floor_alerts")[0][0] == "warning"
        assert rows(dsn, "SELECT count(*) FROM missing_events")[0][0] == 0  # not given up: it may come back
        table.client.subscribe(f"{table.prefix}/cmd/replay", qos=1)  # the service is back: the next ask works
        wait_until(lambda: count(dsn, "S1", "T1") == 5, what="event 3 re-fetched at last")
        # the hole is filled: the warning closes by itself (issue 36: no stale warning)
        wait_until(
            lambda: (
                rows(dsn, "SELECT acknowledged_by FROM floor_alerts WHERE kind = 'replay_unanswered'")
                == [("archive: the hole was filled",)]
            ),
            10,
            "the warning closed",
        )
    finally:
        table.close()
        w.stop()


def test_floor_migrate_and_alert_acknowledgement_commands(dsn, capsys):
    from controller.cli import main as tablectl
    from floor.common.messages import TableRef

    assert tablectl(["floor", "migrate", "--dsn", dsn]) == 0
    assert f"applied now: {list(range(1, len(store.migrations()) + 1))}" in capsys.readouterr().out
    assert tablectl(["floor", "migrate", "--dsn", dsn]) == 0
    assert "applied now: nothing" in capsys.readouterr().out
    with psycopg.connect(dsn) as conn, conn.transaction():
        alert_id = raise_alert(conn.cursor(), TableRef("S1", "T1"), "event_missing", "critical",
                                     "event 9 \x1b[2J never arrived", {}, "k1")  # fmt: skip
    assert tablectl(["floor", "alerts", "--dsn", dsn]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\u001b[2J" in out  # a terminal escape from a table is shown, not run
    assert tablectl(["floor", "alerts", "--dsn", dsn, "--ack", str(alert_id)]) == 2  # who acknowledges?
    assert tablectl(["floor", "alerts", "--dsn", dsn, "--ack", str(alert_id), "--user", "alice"]) == 0
    assert tablectl(["floor", "alerts", "--dsn", dsn, "--ack", str(alert_id), "--user", "bob"]) == 1
    capsys.readouterr()
    assert tablectl(["floor", "alerts", "--dsn", dsn]) == 0
    assert "no open floor alerts" in capsys.readouterr().out
    assert tablectl(["floor", "alerts", "--dsn", dsn, "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["acknowledged_by"] == "alice"


def test_an_altered_checkpoint_is_never_trusted_on_first_use(dsn, floor_broker):
    """The attack: the first checkpoint the floor sees was altered after signing (its hash rewritten)."""
    from controller.audit.checkpoint import GENESIS, sign_checkpoint

    w = worker(dsn, floor_broker)
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T3")
    trust_on_first_use(dsn, "T3")
    try:
        cp = sign_checkpoint(table.key, site="S1", table="T3", seq=4, hash="a" * 64, last_event_id=0, prev_seq=0,
                             prev_hash=GENESIS, ts="2026-11-23T10:00:00.000Z").to_dict()  # fmt: skip
        table.publish("audit/checkpoint", "checkpoint", {**cp, "hash": "b" * 64}, retain=True)
        table.flush()
        wait_until(lambda: _chain(dsn, "T3").get(4, ("",))[0] == "rejected", what="rejected")
        assert rows(dsn, "SELECT public_key FROM floor_tables WHERE table_id = 'T3'")[0][0] is None
        assert rows(dsn, "SELECT kind FROM floor_alerts")[0][0] == "checkpoint_invalid"
    finally:
        table.close()
        w.stop()
