"""The archive's store path (floor/archive/store.py, issue 24): a batch COPYed straight into ``events``, and
when any of its ids is already there, the savepoint undone and the batch inserted row by row in its order with
``ON CONFLICT DO NOTHING`` (the first payload of an id wins). Either way each event is stored once, its raw
bytes exactly as received, the count of new rows right, and another payload under an archived id kept aside,
in the same transaction."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from controller.journal.event_chain import chained_text
from floor.archive import store
from floor.archive.claims import HEADROOM, UNPROVEN, UNPROVEN_KEPT, release
from floor.common.messages import Envelope, TableRef, parse_envelope

T1 = TableRef("S1", "T1")
WHEN = datetime(2026, 11, 26, 12, tzinfo=UTC)


@pytest.fixture
def db(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        store.migrate(conn)
    return dsn


def env(i: int, note: str = "", table: TableRef = T1) -> Envelope:
    ts = WHEN + timedelta(seconds=i)
    data = {"round_id": "r1", "note": note, "text": 'é\\x00\t\n"quoted" 😀'}  # bytes COPY must keep
    doc = {"data": data, "event_id": i, "table": table.table_id, "ts": ts.isoformat(), "type": "round"}
    raw = json.dumps(doc, ensure_ascii=False).encode() + b" \r\n"  # odd bytes on purpose: kept as received
    return Envelope(table, "events/round", i, "round", ts, data, raw, "live")


def put(dsn: str, envelopes: list[Envelope]) -> int:
    with psycopg.connect(dsn) as conn, conn.transaction():
        return store.store_envelopes(conn.cursor(), envelopes)


def rows(dsn: str) -> dict[int, bytes]:
    with psycopg.connect(dsn) as conn:
        got = conn.execute("SELECT event_id, raw FROM events WHERE table_id = 'T1' ORDER BY event_id")
        return {i: bytes(raw) for i, raw in got}


def test_a_new_batch_is_stored_byte_for_byte(db: str) -> None:
    batch = [env(i) for i in range(1, 301)]
    assert put(db, batch) == 300
    assert rows(db) == {e.event_id: e.raw for e in batch}


def test_the_copy_text_stores_every_column_as_psycopgs_own_encoding_does(db: str) -> None:
    """The batch's COPY text is encoded by the archive itself (store._copy_line): every column of every row is
    what psycopg's own encoding of the same values (the row-by-row path) stores, ``data`` sent as the JSON text
    it arrived in included."""
    odd = {"back\\slash": "a\\b\\\\c", "tab": "\t", "lines": "\r\n", "text": 'é"😀\u2028', "n": [1, 2.5, -3e-7, 10**30],
           "flags": [True, False, None], "nested": {"k": {"\\N": "\\."}}, "empty": {}}  # fmt: skip
    batch = [env(1, "\\N\t\\."), env(2)]
    batch.append(
        Envelope(T1, None, 3, "state", WHEN, odd, b'{"any": "bytes"}\t\\\n', "replay", "a" * 64, "b" * 64)
    )
    batch.append(
        Envelope(T1, "state/table", 4, "state", WHEN + timedelta(microseconds=7), odd, b"\x00\xff", "live")
    )
    # as tables send them: ``data`` stored from the text it arrived in (spaces between its tokens, escapes)
    spaced = '{"a": "x\\ty\\\\z\\u00e9\\ud83d\\ude00",\n\t"b":[1, -2,{}], "c":"\\\\N"}'
    for i, text in ((5, spaced), (6, '{"r":"\\""}')):
        unchained = (f'{{"data":{text},"event_id":{i},"prev":"{"0" * 64}","table":"T1",'
                     '"ts":"2026-11-26T12:00:00.000Z","type":"state"}')  # fmt: skip
        parsed = parse_envelope(T1, "state/table", chained_text("0" * 64, unchained)[0].encode(), "live")
        assert isinstance(parsed, Envelope) and parsed.data_text == text, parsed
        batch.append(parsed)
    assert put(db, batch) == len(batch)
    other = TableRef("S1", "T2")
    with psycopg.connect(db) as conn, conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO events ({store._EVENT_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})",
            [store._row(Envelope(other, *[getattr(e, f) for f in Envelope.__slots__[1:]])) for e in batch],
        )
    with psycopg.connect(db) as conn:
        cols = "event_id, topic, type, ts, data, raw, source, prev, chain"
        copied, inserted = (
            conn.execute(f"SELECT {cols} FROM events WHERE table_id = %s ORDER BY event_id", (t,)).fetchall()
            for t in ("T1", "T2")
        )
    assert copied == inserted
    assert [r[4] for r in copied] == [e.data for e in batch]
    assert [bytes(r[5]) for r in copied] == [e.raw for e in batch]


def test_known_ids_fall_back_to_the_idempotent_path_and_count_only_new_rows(db: str) -> None:
    first = [env(i) for i in range(1, 11)]
    assert put(db, first) == 10
    assert put(db, first) == 0  # the same batch again (a QoS 1 redelivery): nothing new, nothing doubled
    mixed = [env(i) for i in range(5, 21)]  # 5..10 known, 11..20 new
    assert put(db, mixed) == 10
    assert put(db, [env(21), env(21), env(22)]) == 2  # an id twice in one batch
    assert rows(db) == {i: env(i).raw for i in range(1, 23)}


def test_another_payload_under_an_archived_id_is_kept_aside_in_the_fallback(db: str) -> None:
    put(db, [env(1), env(2)])
    assert put(db, [env(2, note="forged"), env(3)]) == 1
    assert put(db, [env(4), env(4, note="second")]) == 1  # both in one batch: the first one is stored
    assert rows(db) == {1: env(1).raw, 2: env(2).raw, 3: env(3).raw, 4: env(4).raw}
    with psycopg.connect(db) as conn:
        aside = conn.execute("SELECT event_id FROM quarantined_events").fetchall()
        alerts = conn.execute("SELECT count(*) FROM floor_alerts WHERE kind = 'event_conflict'").fetchone()[0]
    assert sorted(aside) == [(2,), (4,)] and alerts == 2


def test_a_payload_kept_aside_delivered_again_stays_out_and_each_table_has_its_own_span(db: str) -> None:
    """The kept-aside look-up (quarantine.known) and the arrivals (store.record_arrivals) both go by each table's
    span of ids in the batch (quarantine.id_spans): a forged payload delivered again is taken out before the
    batch is stored (it is not in the arrivals again), two tables mixed in one batch each get their own row."""
    t2 = TableRef("S1", "T2")
    assert put(db, [env(1), env(2)]) == 2
    forged = env(2, note="forged")
    assert put(db, [forged]) == 0  # kept aside (another payload under an archived id)
    assert put(db, [env(7, table=t2), forged, env(3), env(5, table=t2)]) == 3
    with psycopg.connect(db) as conn:
        aside = conn.execute("SELECT table_id, event_id FROM quarantined_events").fetchall()
        alerts = conn.execute("SELECT count(*) FROM floor_alerts WHERE kind = 'event_conflict'").fetchone()
        arrivals = conn.execute("SELECT table_id, lo, hi FROM floor_arrivals ORDER BY 1, 2, 3").fetchall()
    assert aside == [("T1", 2)] and alerts == (1,)
    assert arrivals == [("T1", 1, 2), ("T1", 2, 2), ("T1", 3, 3), ("T2", 5, 7)]


def test_ids_beyond_what_the_table_proved_are_kept_aside_bounded_and_archived_once_proven(db: str) -> None:
    """Issue 37 (floor/archive/claims.py): a table that proved nothing may claim HEADROOM ids; beyond, envelopes are
    kept aside as unproven (at most UNPROVEN_KEPT), one alert names the range, no arrival is recorded (no hole); a
    checkpoint verified with the table's key that reaches them has them archived at the next release."""
    far = HEADROOM + 5_000
    assert put(db, [env(1), *[env(far + i) for i in range(UNPROVEN_KEPT + 20)]]) == 1
    with psycopg.connect(db) as conn:
        kept = conn.execute(
            "SELECT count(*) FROM quarantined_events WHERE reason = %s", (UNPROVEN,)
        ).fetchone()
        assert kept == (UNPROVEN_KEPT,)
        alerts = conn.execute("SELECT kind, details FROM floor_alerts").fetchall()
        assert [(k, d["from_event_id"], d["to_event_id"]) for k, d in alerts] == [
            ("event_unproven", far, far + UNPROVEN_KEPT + 19)
        ]
        assert conn.execute("SELECT max(hi) FROM floor_arrivals").fetchone() == (1,)
        conn.execute(  # a checkpoint verified with the table's key covering them (floor/archive/chain.py sets this)
            "INSERT INTO checkpoints (site, table_id, seq, event_id, hash, prev_seq, prev_hash, last_event_id,"
            " key_id, doc, signature_ok, chain) VALUES ('S1', 'T1', 1, %s, 'h', 0, 'g', %s, 'k', %s, true,"
            " 'anchor')",
            (far + 200, far + 199, json.dumps({"ts": datetime.now(UTC).isoformat()})),
        )
        with conn.transaction():
            assert release(conn.cursor()) == UNPROVEN_KEPT
        assert conn.execute("SELECT count(*) FROM quarantined_events").fetchone() == (0,)
        assert conn.execute("SELECT max(hi) FROM floor_arrivals").fetchone() == (far + UNPROVEN_KEPT - 1,)
    assert len(rows(db)) == 1 + UNPROVEN_KEPT
