"""The pit map: every table as a tile, grouped by area and pit (the floor's layout, layout.py), coloured by what
needs a supervisor's attention, with the game and limits, the seats in play, the jackpot meter and the time since
the floor last heard from the table. Pits come as groups in the layout's order (Layout.order: the order the
file lists them). Read from the archive; the page (static/) shows every value as text.

Attention, most urgent first (a tile takes the first that holds):

| attention | when |
|---|---|
| ``fault`` (dealing stopped) | the table's newest ``state/table`` lists a fault (dealing blocked) |
| ``critical`` | a critical alert of the table, its own or the floor's, is open |
| ``unreachable`` | the floor has not heard from it for ``CONTACT_STALE_S`` (contact.py), or its bridge said down |
| ``closed`` | the table's state is ``closed`` (no session) |
| ``open`` | none of the above |
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

import psycopg

from controller.rules.profiles import game_name
from controller.words import STATE_WORDS, alert_words, words
from floor.archive.contact import Contact, archive_receiving, contacts
from floor.common.layout import Layout, Pit
from floor.common.text import whole
from floor.reports.queries import table_currencies
from floor.web.dashboard import Latest

MAX_TILES = 20_000
MAX_SEATS = 9


class Attention(StrEnum):
    FAULT = "fault"
    CRITICAL = "critical"
    UNREACHABLE = "unreachable"
    CLOSED = "closed"
    OPEN = "open"


ATTENTION_WORDS: dict[Attention, str] = {
    Attention.FAULT: "dealing stopped",
    Attention.CRITICAL: "critical alert",
    Attention.UNREACHABLE: "out of reach",
    Attention.CLOSED: "closed",
    Attention.OPEN: "open",
}


@dataclass
class Tile:
    site: str
    table: str
    pit: str
    area: str
    pit_order: int  # the pit's place in the layout (Layout.order): the map shows pits in this order
    attention: Attention
    attention_words: str
    state: str  # in words
    game: str  # the game's short name, its book's (controller/rules/profiles.py game_name of the profile it publishes)
    game_title: str  # the game's whole name (the tile's tooltip)
    min_bet: int | None
    max_bet: int | None
    currency: str
    seats_in_play: list[int]
    meter: int | None  # the table's own meter; None on a linked table (``link``) or without a jackpot
    last_contact: str  # ISO time, "" never heard
    seconds_since_contact: int | None
    alerts_open: int
    faults: list[str] = field(default_factory=list)  # in words
    dealer: str = ""  # the dealer on duty, when the table publishes one (state/table "dealer")
    status: str = "unknown"  # the controller's own retained status: online / offline
    archive_complete: bool | None = None  # None: not known yet
    unverified: str = ""  # a newer state/table not yet proven the table's, in words (shown apart, marked)
    link: str = ""  # the linked progressive the table joins (its state/jackpot ``link.name``, issue 40)

    @property
    def key(self) -> str:
        return f"{self.site}/{self.table}"

    def to_json(self) -> dict[str, Any]:
        """As the page reads it (shallow: dataclasses.asdict's deep copy is a third of a 2,000-table build)."""
        out = {name: getattr(self, name) for name in _TILE_FIELDS}
        out["attention"] = self.attention.value
        return out


_TILE_FIELDS = tuple(f.name for f in fields(Tile))


def _text(value: Any, limit: int = 64) -> str:
    return str(value)[:limit] if value is not None else ""


def attention(faults: list[str], critical_open: bool, reachable: bool, state: str) -> Attention:
    if faults:
        return Attention.FAULT
    if critical_open:
        return Attention.CRITICAL
    if not reachable:
        return Attention.UNREACHABLE
    if state == "closed":
        return Attention.CLOSED
    return Attention.OPEN


def _docs(found: Latest) -> dict[tuple[str, str], dict[str, Any]]:
    return {k: v[2] for k, v in found.items() if isinstance(v[2], dict)}


Key = tuple[str, str]  # (site, table)


def alert_counts(alerts: list[dict[str, Any]]) -> tuple[dict[Key, int], dict[Key, int]]:
    """Each table's open alerts in the snapshot's list: (critical ones, all)."""
    critical: dict[Key, int] = {}
    open_count: dict[Key, int] = {}
    for a in alerts:
        key = (a["site"], a["table"])
        open_count[key] = open_count.get(key, 0) + 1
        if a["severity"] == "critical":
            critical[key] = critical.get(key, 0) + 1
    return critical, open_count


@dataclass(frozen=True)
class Frame:
    """What every tile of one build reads besides its table's own rows: the layout, whether the archive receives
    (when it does not, silence says nothing of the tables), the alerts' counts, the time."""

    layout: Layout
    archive_down: bool
    critical: dict[Key, int]
    open_count: dict[Key, int]
    now: datetime
    pits: dict[str, Pit] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, layout: Layout, archive_down: bool, alerts: list[dict[str, Any]], now: datetime) -> Frame:
        critical, open_count = alert_counts(alerts)
        pits = {table: pit for pit in layout.pits for table in pit.tables}
        return cls(layout, archive_down, critical, open_count, now, pits, layout.order())

    def tile(
        self,
        t: dict[str, Any],
        doc: dict[str, Any],
        round_doc: dict[str, Any],
        currency: str,
        c: Contact | None,
    ) -> Tile:
        """One table's tile: ``t`` its entry in the dashboard's snapshot, ``doc`` and ``round_doc`` its newest
        verified ``state/table`` and ``state/round``, ``c`` its contact (contact.py)."""
        key = (t["site"], t["table"])
        last = c.last_contact_at if c else None
        reachable = self.archive_down or (c.reachable(self.now) if c else False)
        limits = v if isinstance(v := doc.get("limits"), dict) else {}
        archive = t.get("archive")
        state = _text(doc.get("state"), 40)
        att = attention(t["faults"], key in self.critical, reachable, state)
        pit = self.pits.get(t["table"]) or self.layout.pit_of(t["table"])
        return Tile(
            site=t["site"], table=t["table"], pit=pit.name, area=pit.area,
            pit_order=self.order.get(pit.name, len(self.order)), attention=att,
            attention_words=ATTENTION_WORDS[att], state=words(STATE_WORDS, state) if state else
            ("not verified yet" if t.get("unverified") else "not heard yet"),
            game=game_name(_text(doc.get("profile"), 40), short=True),
            game_title=game_name(_text(doc.get("profile"), 40)), min_bet=whole(limits.get("min_bet")),
            max_bet=whole(limits.get("max_bet")), currency=currency,
            seats_in_play=seats_in_play(doc, round_doc),
            meter=t["meter"],
            last_contact=last.isoformat() if last else "",
            seconds_since_contact=int((self.now - last).total_seconds()) if last else None,
            alerts_open=self.open_count.get(key, 0), faults=[alert_words(f) for f in t["faults"]],
            dealer=_text(doc.get("dealer"), 40), status=_text(t.get("status"), 20),
            archive_complete=archive["complete"] if isinstance(archive, dict) else None,
            unverified=_text(t.get("unverified"), 120), link=_text(t.get("link"), 32),
        )  # fmt: skip


def tiles(
    snap: dict[str, Any], docs: dict[str, Latest], layout: Layout, conn: psycopg.Connection, now: datetime
) -> list[Tile]:
    """One tile per table of the dashboard's snapshot and the documents it was read from
    (dashboard.snapshot_with_documents), in the layout's pit order, then by table."""
    table_docs, round_docs = _docs(docs["state/table"]), _docs(docs.get("state/round", {}))
    currencies = table_currencies(conn)
    reach = {(c.table.site, c.table.table_id): c for c in contacts(conn)}
    frame = Frame.of(layout, archive_receiving(conn).receiving is False, snap["alerts"], now)
    out = []
    for t in snap["tables"][:MAX_TILES]:
        key = (t["site"], t["table"])
        out.append(
            frame.tile(
                t, table_docs.get(key, {}), round_docs.get(key, {}), currencies.get(key, ""), reach.get(key)
            )
        )
    out.sort(key=lambda x: (x.pit_order, x.pit, x.table))
    return out


def _seat_numbers(keys: Any) -> list[int]:
    return sorted({int(s) for s in keys if str(s).isdigit() and len(str(s)) < 3})[:MAX_SEATS]


def seats_in_play(table_doc: dict[str, Any], round_doc: dict[str, Any]) -> list[int]:
    """The seats with a bet: ``state/table`` ``bets`` while bets are taken; once dealing starts the table
    empties them (the bets became the round's hands), so the seats of the round in play (``state/round``
    ``seats``, the same round id) are the ones in play."""
    bets = v if isinstance(v := table_doc.get("bets"), dict) else {}
    if bets:
        return _seat_numbers(bets)
    rid = table_doc.get("round_id")
    if table_doc.get("round_active") is not True or rid is None or round_doc.get("round_id") != rid:
        return []  # no round in play (a settled round's seats are not in play)
    seats = v if isinstance(v := round_doc.get("seats"), list) else []
    return _seat_numbers(s.get("seat") for s in seats[:MAX_SEATS] if isinstance(s, dict))
