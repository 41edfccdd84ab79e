"""A floor of many tables in the archive, for the pit map's browser tests and its benchmark: every document stored
through the archive's own store function (floor/archive/store.py ``store_envelopes``), as the archive worker
would store what the tables publish.

- table ``bj001`` really played: two rounds settled and a third dealt with the dealer's hole card still face
  down, from the table's core (tablebench.table_testing.Harness) and the documents it published;
- every other table: a ``state/table`` (state, game, limits, bets of the seats in play, faults, a dealer on
  duty for some) and a ``state/jackpot`` (meter, currency), and a few jackpot contributions;
- a mix of attention: faults, tables out of reach (last contact long ago), closed tables, critical floor alerts.

``layout_toml(n)``: the floor's layout for those tables (areas and pits of 40 tables)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from controller.table.messages import messages
from floor.archive import store
from floor.common.alerts import raise_alert
from floor.common.messages import Envelope, TableRef
from floor.common.notify import notify
from tablebench.table_testing import Harness, play_two_rounds

SITE = "S1"
PLAYED = "bj001"
PIT_SIZE = 40
GAMES = ("pt-2001", "ro-2004")
HOLE = "9C"  # the played table's hole card: never on a page before it is revealed


def table_id(i: int) -> str:
    return f"bj{i:03d}" if i < 1000 else f"bj{i}"


def layout_toml(n: int) -> str:
    out = []
    for p in range((n + PIT_SIZE - 1) // PIT_SIZE):
        area = "Main floor" if p % 2 == 0 else "High limit"
        ids = ", ".join(f'"{table_id(i)}"' for i in range(p * PIT_SIZE + 1, min(n, (p + 1) * PIT_SIZE) + 1))
        out.append(f'[[pit]]\nname = "Pit {p + 1}"\narea = "{area}"\ntables = [{ids}]\n')
    return "\n".join(out)


def play(h: Harness) -> None:
    """Two rounds settled, a third dealt (the hole card face down), on a table configured in EUR (the currency the
    service pins at open_table, published in events/session)."""
    play_two_rounds(h, pinned={"profile": "pt-2001", "currency": "EUR"})
    h.dealer("next_round")
    h.dealer("place_bet", seat=3, amount=1500)
    h.dealer("no_more_bets")
    for c in ["4S", "7H", "8C", HOLE]:  # seat 3: 4♠ 8♣; the dealer: 7♥ up, the hole card down
        h.card(c)


def envelope(
    ref: TableRef, topic: str, event_id: int, etype: str, ts: datetime, data: dict[str, Any]
) -> Envelope:
    doc = {"data": data, "event_id": event_id, "table": ref.table_id, "ts": ts.isoformat(), "type": etype}
    return Envelope(ref, topic, event_id, etype, ts, data, json.dumps(doc).encode(), "live")


def _played(when: datetime) -> list[Envelope]:
    h = Harness()
    play(h)
    ref = TableRef(SITE, PLAYED)
    return [
        envelope(ref, p.topic, i, p.event_type, when + timedelta(seconds=i), p.data)
        for i, p in enumerate(messages(h.effects), start=1)
    ]


def state(i: int) -> dict[str, Any]:
    faults = ["jam"] if i % 37 == 5 else []
    state = "closed" if i % 23 == 7 else ("jammed" if faults else ("betting" if i % 2 else "players"))
    doc: dict[str, Any] = {
        "state": state, "profile": GAMES[i % 2], "faults": faults,
        "limits": {"min_bet": 500 * (1 + i % 3), "max_bet": 50_000 * (1 + i % 3)},
        "bets": {str(s): {"amount": 1000} for s in range(1, 8) if (i + s) % 3 == 0},
    }  # fmt: skip
    if i % 4 == 0:
        doc["dealer"] = f"Dealer {i % 17 + 1}"
    return doc


def build_floor(dsn: str, n: int, now: datetime | None = None) -> None:
    """``n`` tables (``bj001`` ... ), as the module docstring says."""
    now = now or datetime.now(UTC)
    with psycopg.connect(dsn) as conn:
        store.migrate(conn)
        envs = _played(now - timedelta(hours=2))
        for i in range(2, n + 1):
            ref, ts = TableRef(SITE, table_id(i)), now - timedelta(minutes=30)
            envs.append(envelope(ref, "state/table", 1, "state", ts, state(i)))
            for k in range(3):
                meter = 100_000 + i * 10 + k * 250
                envs.append(envelope(ref, "events/jackpot", 2 + k, "jackpot", ts + timedelta(minutes=5 * k),
                                      {"action": "contribution", "meter": meter}))  # fmt: skip
            envs.append(envelope(ref, "state/jackpot", 5, "state", ts + timedelta(minutes=11),
                                  {"meter": 100_500 + i * 10, "currency": "EUR"}))  # fmt: skip
        with conn.transaction():
            cur = conn.cursor()
            for k in range(0, len(envs), 5000):
                store.store_envelopes(cur, envs[k : k + 5000])
            # reachability as the archive's gap pass records it: heard from now, except every 29th table
            cur.execute("UPDATE floor_tables SET status = 'online', last_contact_at = %s", (now,))
            cur.execute(
                "UPDATE floor_tables SET status = 'offline', last_contact_at = %s"
                " WHERE substring(table_id from 3)::int %% 29 = 11",
                (now - timedelta(minutes=20),),
            )
            for i in range(13, n + 1, 41):
                raise_alert(cur, TableRef(SITE, table_id(i)), "event_missing", "critical",
                            f"events 7-9 of {table_id(i)} never arrived", {}, f"pitmap-{i}")  # fmt: skip
            # the pit map shows a table's state only once its signed chain proves it (floor/web/dashboard.py): here as
            # if each table's checkpoints had (the proof itself: tests/test_floor_attacks.py)
            cur.execute("UPDATE events SET verified = true")
            notify(cur)


def hear_from_online_tables(dsn: str) -> None:
    """The archive hears from every online table again, as its heartbeats do every 10 s on a live floor: a
    page looked at more than CONTACT_STALE_S after ``build_floor`` (a slow machine) must not read it out of reach."""
    with psycopg.connect(dsn) as conn, conn.transaction():
        conn.execute("UPDATE floor_tables SET last_contact_at = now() WHERE status = 'online'")


def publish(
    dsn: str, i: int, topic: str, event_id: int, data: dict[str, Any], *, verified: bool = True
) -> None:
    """One more document of table ``i``, stored as the archive would (and its listeners told); ``verified``: as if
    the table's next checkpoint had proven it already."""
    ref = TableRef(SITE, table_id(i))
    with psycopg.connect(dsn) as conn, conn.transaction():
        cur = conn.cursor()
        store.store_envelopes(
            cur, [envelope(ref, topic, event_id, topic.split("/")[-1], datetime.now(UTC), data)]
        )
        if verified:
            cur.execute(
                "UPDATE events SET verified = true WHERE site = %s AND table_id = %s AND event_id = %s",
                (ref.site, ref.table_id, event_id),
            )
        notify(cur, [ref])  # as the archive names the tables it wrote
