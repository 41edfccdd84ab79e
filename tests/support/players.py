"""Test helpers for the floor's players (issue 41): real table cores (``Harness``) dealing simulated players'
rounds, and the tables' ``events/player`` as the table side's contract has them, archived together into a real
PostgreSQL in the order they happen on one clock, in chained envelopes (controller/journal/event_chain.py) as the
tables' journals publish them."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from controller.canonical import canonical
from controller.journal.event_chain import EVENT_GENESIS, chained_text
from controller.table.messages import messages
from floor.archive import store
from floor.common.messages import Envelope, TableRef
from tablebench.ap_players import SimRound
from tablebench.table_testing import Harness

_COMMANDS = {"no_insurance": "decline_insurance"}


def deal_round(h: Harness, rnd: SimRound, *, first: bool) -> None:
    """One simulated round on the table core, as a dealer would press and a shoe would read it."""
    desc = rnd.description
    if not first:
        h.dealer("next_round")
    h.start_round({b["seat"]: b["amount"] for b in desc["bets"]})
    cards = deque(c["card"] for c in desc["cards"])
    fed = 0
    for d in desc["decisions"]:
        while fed < d["after_cards"]:
            h.card(cards.popleft())
            fed += 1
        if d.get("implicit"):
            continue
        action = _COMMANDS.get(d["action"], d["action"])
        h.dealer(action, seat=d["seat"], **({} if action == "decline_insurance" else {"hand": d["hand"]}))
    while cards:
        h.card(cards.popleft())
    assert h.core.state == "settled", f"round {rnd.round_id} ended in {h.core.state}"


@dataclass
class _Table:
    harness: Harness
    head: str = EVENT_GENESIS
    next_id: int = 1
    taken: int = 0  # the harness's messages archived so far
    envelopes: list[Envelope] = field(default_factory=list)
    dealt: int = 0


class FloorClock:
    """Several tables' envelopes on one clock, one second apart, chained per table as each table's journal is."""

    def __init__(self, when: datetime, site: str = "S1") -> None:
        self.clock, self.site = when, site
        self.tables: dict[str, _Table] = {}

    def table(self, table: str) -> Harness:
        if table not in self.tables:
            h = Harness()
            h.open_batch()
            h.dealer("cut", inspector=True)
            self.tables[table] = _Table(h)
            self.flush(table)
        return self.tables[table].harness

    def _envelope(self, table: str, rel: str, event_type: str, data: dict[str, Any]) -> None:
        t = self.tables[table]
        self.clock += timedelta(seconds=1)
        doc = {"data": data, "event_id": t.next_id, "table": table,
               "ts": self.clock.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "type": event_type}  # fmt: skip
        text, t.head = chained_text(t.head, canonical(doc | {"prev": t.head}))
        parsed = json.loads(text)
        t.envelopes.append(Envelope(TableRef(self.site, table), rel, t.next_id, event_type, self.clock, data,
                                    text.encode(), "live", parsed["prev"], parsed["chain"]))  # fmt: skip
        t.next_id += 1

    def flush(self, table: str) -> None:
        t = self.tables[table]
        published = messages(t.harness.effects)
        for p in published[t.taken :]:
            self._envelope(table, p.topic, p.event_type, p.data)
        t.taken = len(published)

    def deal(self, table: str, rounds: list[SimRound]) -> None:
        h = self.table(table)
        t = self.tables[table]
        for rnd in rounds:
            deal_round(h, rnd, first=t.dealt == 0)
            t.dealt += 1
            self.flush(table)

    def player(self, table: str, action: str, seat: int, player: str, *, reason: str | None = None,
               description: str = "", by: str = "pit-ana", session_id: str = "sess-1") -> None:  # fmt: skip
        """A player event as the table side publishes it (``events/player``)."""
        self.table(table)
        data: dict[str, Any] = {
            "action": action,
            "seat": seat,
            "player": player,
            "by": by,
            "session_id": session_id,
        }
        if description:
            data["description"] = description
        if reason:
            data["reason"] = reason
        self._envelope(table, "events/player", "player", data)

    def store(self, dsn: str) -> None:
        with psycopg.connect(dsn) as conn, conn.transaction():
            for t in self.tables.values():
                store.store_envelopes(conn.cursor(), t.envelopes)
