"""What the dashboard's live stream sends (``GET /events``): the pit map as versioned tiles, changes only.

The floor as last read (``Floor``: each table's snapshot entry, documents, currency, contact and open alerts, and
each tile's JSON text) is refreshed in proportion to what changed:

- an archive commit's notification names the tables it wrote (floor/common/notify.py): only their rows are read again
  (dashboard.snapshot_with_documents bounded to them, tableset.py) and only their tiles made again, with the tiles
  whose open-alert counts moved (reading many tables apart costs no more than reading the floor: a busy floor
  whose builds fall behind does not turn to whole reads); a notification naming every table (or not understood),
  a table not seen before, or ``MAX_ALERTS`` open alerts: the whole floor is read;
- every ``TICK_S``: every table's contact (one read of ``floor_tables``): a tile whose last contact moved is made
  again from what was read, a table that turned out of reach (or back) is read again (its archive's coverage
  says so too), so a table that went quiet turns "out of reach";
- every ``FULL_EVERY_S``: the whole floor, for what changes without a notification (the gap pass's marks).

A tile whose content changed gets the floor's next version. A browser gets, as server-sent events:

- ``floor``: once at connect (and again if it fell behind): every tile, the open alerts, the version;
- ``tiles``: ``{"version", "since", "changed": [tile...], "removed": [key...]}``: only the tiles that changed
  since the version ``since`` (the previous build), so an update at 2,000 tables is one tile's bytes, not 2,000;
- ``alerts``: the open alerts, when they changed;
- ``archive``: ``{"receiving", "words"}``, when it changed: the archive's own state (its workers not receiving, its
  database not answering), shown as that above the map, never as every table out of reach.

Time since last contact is computed in the page from ``last_contact`` (a clock ticking every second would
otherwise change every tile every second).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from controller.words import SEVERITY_RANK
from floor.archive.contact import Contact, contacts
from floor.common.layout import Layout
from floor.common.messages import TableRef
from floor.common.tableset import Only
from floor.reports.queries import table_currencies
from floor.web.dashboard import MAX_ALERTS, snapshot_with_documents
from floor.web.pitmap import ATTENTION_WORDS, MAX_TILES, Frame, Key, Tile

TICK_S = 5.0
FULL_EVERY_S = 60.0
MAX_NAMED = MAX_TILES  # tables named since the last build: more are read as every table (a bound on memory)
_WORDS = json.dumps({a.value: w for a, w in ATTENTION_WORDS.items()})
_VOLATILE = ("seconds_since_contact",)  # recomputed by the page: not part of a tile's version


@dataclass
class Build:
    """One build of the floor: each tile's JSON text by key, the alerts, the archive's state, the snapshot
    (``/api/snapshot``, serialised when asked); ``touched``: the tiles made again (None: every tile)."""

    tiles: dict[str, str]
    alerts: str
    archive: str = '{"receiving":null,"words":""}'
    snap: dict[str, Any] = field(default_factory=dict)
    touched: frozenset[str] | None = None
    _text: str | None = None

    def snapshot(self) -> str:
        if self._text is None:
            self._text = json.dumps(self.snap, sort_keys=True)
        return self._text


@dataclass
class Row:
    """One table as last read: its snapshot entry, newest verified ``state/table`` and ``state/round``, currency,
    open alerts (the snapshot's, the table's own)."""

    entry: dict[str, Any]
    doc: dict[str, Any]
    round_doc: dict[str, Any]
    currency: str
    alerts: list[dict[str, Any]]


def _data(found: Any) -> dict[str, Any]:
    return found[2] if found is not None and isinstance(found[2], dict) else {}


def _tile_text(tile: Tile) -> str:
    doc = tile.to_json()
    for k in _VOLATILE:
        doc.pop(k, None)
    return json.dumps(doc, sort_keys=True)


def _key(k: Key) -> str:
    return f"{k[0]}/{k[1]}"


@dataclass
class Stats:
    """What the builds read and made (the tests count them: a one-table notification must not rebuild the map)."""

    full: int = 0
    partial: int = 0
    rows_read: int = 0
    tiles_made: int = 0


class Floor:
    """The floor as last read, refreshed whole or for some tables, and the build it makes."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.rows: dict[Key, Row] = {}  # in (site, table) order: only a read of the whole floor adds tables
        self.contacts: dict[Key, Contact | None] = {}
        self.reach: dict[Key, bool] = {}  # reachable when its tile was made
        self.floor_alerts: list[dict[str, Any]] = []
        self.archive: dict[str, Any] = {}
        self.texts: dict[str, str] = {}  # tile JSON by key, in the pit map's order
        self.frame: Frame | None = None
        self.full_at = 0.0
        self.stats = Stats()

    # ---- reads ----
    def _read(self, conn: psycopg.Connection, only: Only) -> tuple[set[Key], bool]:
        """Read ``only``'s rows (every table's when None); (the tables whose rows or contact changed, whether a
        full read is needed instead: a table not seen before, as many open alerts as the snapshot lists, or the
        archive's receiving changed: every table's coverage says so, coverage.py)."""
        snap, docs = snapshot_with_documents(conn, only)
        read = [(t["site"], t["table"]) for t in snap["tables"]]
        down_moved = (snap["archive"]["receiving"] is False) != (self.archive.get("receiving") is False)
        if only is not None and (
            len(snap["alerts"]) >= MAX_ALERTS or down_moved or any(k not in self.rows for k in read)
        ):
            return set(read), True
        currencies = table_currencies(conn, only)
        reach = {(c.table.site, c.table.table_id): c for c in contacts(conn, only)}
        mine: dict[Key, list[dict[str, Any]]] = {}
        for a in snap["alerts"]:
            if a["source"] == "table":
                mine.setdefault((a["site"], a["table"]), []).append(a)
        table_docs, round_docs = docs["state/table"], docs["state/round"]
        if only is None:
            self.rows, self.contacts = {}, {}
        changed = set()
        for t, k in zip(snap["tables"], read, strict=True):
            row = Row(
                t, _data(table_docs.get(k)), _data(round_docs.get(k)), currencies.get(k, ""), mine.get(k, [])
            )
            if row != self.rows.get(k) or reach.get(k) != self.contacts.get(k):  # else its tile is as it was
                changed.add(k)
                self.rows[k], self.contacts[k] = row, reach.get(k)
        self.floor_alerts = [a for a in snap["alerts"] if a["source"] == "floor"]
        self.archive = snap["archive"]
        self.stats.rows_read += len(read)
        return changed, False

    def _alerts(self) -> list[dict[str, Any]]:
        """The open alerts as the snapshot lists them (dashboard.py): most severe first, then newest first."""
        alerts = [a for row in self.rows.values() for a in row.alerts] + self.floor_alerts
        alerts.sort(key=lambda a: a["raised_at"], reverse=True)
        alerts.sort(key=lambda a: SEVERITY_RANK.get(a["severity"], 3))
        return alerts[:MAX_ALERTS]

    # ---- builds ----
    def full(self, conn: psycopg.Connection) -> Build:
        """Every table read again and every tile made again."""
        self._read(conn, None)
        self.full_at = time.monotonic()
        self.stats.full += 1
        return self._make(None)

    def refresh(self, conn: psycopg.Connection, named: frozenset[TableRef] | None) -> Build:
        """After a notification naming ``named`` (None: every table): only those tables read again."""
        if named is None or self._due():
            return self.full(conn)
        read, whole = self._read(conn, named)
        if whole:
            return self.full(conn)
        self.stats.partial += 1
        return self._make(set(read))

    def tick(self, conn: psycopg.Connection) -> Build:
        """Every table's contact read again: tiles whose contact moved made again, tables that turned out of reach
        (or back) read again."""
        if not self.rows or self._due():
            return self.full(conn)
        now = datetime.now(UTC)
        found = {(c.table.site, c.table.table_id): c for c in contacts(conn)}
        moved = {k for k in self.rows if found.get(k) != self.contacts.get(k)}
        for k in moved:
            self.contacts[k] = found.get(k)
        down = self.frame.archive_down if self.frame else False
        turned = {k for k in self.rows if self._reachable(k, now, down) != self.reach.get(k)}
        read, whole = self._read(conn, frozenset(TableRef(*k) for k in turned))
        if whole:
            return self.full(conn)
        self.stats.partial += 1
        return self._make(moved | set(read))

    def _due(self) -> bool:
        return time.monotonic() - self.full_at >= FULL_EVERY_S

    def _reachable(self, k: Key, now: datetime, archive_down: bool) -> bool:
        c = self.contacts.get(k)
        return archive_down or (c.reachable(now) if c else False)

    def _tile(self, frame: Frame, k: Key) -> Tile:
        r = self.rows[k]
        return frame.tile(r.entry, r.doc, r.round_doc, r.currency, self.contacts.get(k))

    def _make(self, remake: set[Key] | None) -> Build:
        """The build: the tiles of ``remake`` made again (None: every tile), and those whose open-alert counts
        moved, or every tile when the archive's receiving changed."""
        alerts = self._alerts()
        down = self.archive.get("receiving") is False
        now = datetime.now(UTC)
        frame, old = Frame.of(self.layout, down, alerts, now), self.frame
        if remake is None or old is None or old.archive_down != down:
            made = [(self._tile(frame, k), k) for k in list(self.rows)[:MAX_TILES]]
            made.sort(key=lambda x: (x[0].pit_order, x[0].pit, x[0].table))
            self.texts = {}
            for tile, k in made:
                self.texts[_key(k)] = _tile_text(tile)
                self.reach[k] = self._reachable(k, now, down)
            touched = None
            self.stats.tiles_made += len(made)
        else:
            for counts in ("critical", "open_count"):
                was, now_ = getattr(old, counts), getattr(frame, counts)
                remake |= {k for k in was.keys() | now_.keys() if was.get(k) != now_.get(k)}
            self.texts = dict(self.texts)  # the previous build keeps its own
            done = set()
            for k in remake:
                if k in self.rows and _key(k) in self.texts:
                    self.texts[_key(k)] = _tile_text(self._tile(frame, k))
                    self.reach[k] = self._reachable(k, now, down)
                    done.add(_key(k))
            touched = frozenset(done)
            self.stats.tiles_made += len(done)
        self.frame = frame
        snap = {"tables": [r.entry for r in self.rows.values()], "alerts": alerts, "archive": self.archive}
        return Build(self.texts, json.dumps(alerts, sort_keys=True), json.dumps(self.archive, sort_keys=True),
                     snap, touched)  # fmt: skip


def build(dsn: str, layout: Layout) -> Build:
    """The whole floor, read once (the benchmark's and a test's measure of a full build)."""
    with psycopg.connect(dsn) as conn:
        return Floor(layout).full(conn)


def database_down(since: datetime, old: Build) -> Build:
    """The last build, with the archive's state saying its database does not answer (what is shown is as of
    ``since``)."""
    words = (f"the archive's database is not answering since {since:%Y-%m-%d %H:%M:%S} UTC: what is shown is as"
             " of then; tables are not known to be out of reach")  # fmt: skip
    return Build(
        old.tiles, old.alerts, json.dumps({"receiving": False, "words": words}), old.snap, frozenset()
    )


@dataclass
class Live:
    """The floor's current build and each tile's version; turns a new build into the events to send."""

    version: int = 0
    current: Build = field(default_factory=lambda: Build({}, "[]"))
    versions: dict[str, int] = field(default_factory=dict)
    _floor: tuple[Build, str] | None = None

    def update(self, new: Build) -> list[tuple[str, str]]:
        """The events a connected page needs to go from the previous build to ``new`` (none if nothing changed)."""
        old = self.current
        keys = new.tiles if new.touched is None else new.touched
        changed = [k for k in keys if old.tiles.get(k) != new.tiles[k]]
        removed = [] if new.touched is not None else [k for k in old.tiles if k not in new.tiles]
        events: list[tuple[str, str]] = []
        if changed or removed:
            since = self.version
            self.version += 1
            for k in changed:
                self.versions[k] = self.version
            for k in removed:
                self.versions.pop(k, None)
            body = ",".join(new.tiles[k] for k in changed)
            events.append(("tiles", f'{{"version":{self.version},"since":{since},"changed":[{body}],'
                                    f'"removed":{json.dumps(removed)}}}'))  # fmt: skip
        if new.alerts != old.alerts:
            events.append(("alerts", new.alerts))
        if new.archive != old.archive:
            events.append(("archive", new.archive))
        self.current = new
        return events

    def floor(self) -> str:
        """Everything, for a page that connects (or fell behind); made once per build."""
        if self._floor is None or self._floor[0] is not self.current:
            body = ",".join(self.current.tiles.values())
            text = (
                f'{{"version":{self.version},"tiles":[{body}],"alerts":{self.current.alerts},'
                f'"archive":{self.current.archive},"attention_words":{_WORDS}}}'
            )
            self._floor = (self.current, text)
        return self._floor[1]
