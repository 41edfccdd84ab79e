"""What the dashboard's live stream sends (``GET /events``): the pit map as versioned tiles, changes only.

Each build (on an archive commit, and every ``TICK_S`` so a table that went quiet turns "out of reach") makes the
snapshot (dashboard.py) and the tiles (pitmap.py). A tile whose content changed gets the floor's next version.
A browser gets, as server-sent events:

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
from dataclasses import dataclass, field
from datetime import UTC, datetime

import psycopg

from floor.dashboard import snapshot_with_documents
from floor.layout import Layout
from floor.pitmap import ATTENTION_WORDS, tiles

TICK_S = 5.0
_WORDS = json.dumps({a.value: w for a, w in ATTENTION_WORDS.items()})
_VOLATILE = ("seconds_since_contact",)  # recomputed by the page: not part of a tile's version


@dataclass
class Build:
    """One build of the floor: the snapshot (``/api/snapshot``), each tile's JSON text by key, the alerts."""

    snapshot: str
    tiles: dict[str, str]
    alerts: str
    archive: str = '{"receiving":null,"words":""}'


def build(dsn: str, layout: Layout) -> Build:
    with psycopg.connect(dsn) as conn:
        snap, docs = snapshot_with_documents(conn)
        made = tiles(snap, docs, layout, conn, datetime.now(UTC))
    texts = {}
    for t in made:
        doc = t.to_json()
        for k in _VOLATILE:
            doc.pop(k, None)
        texts[t.key] = json.dumps(doc, sort_keys=True)
    return Build(json.dumps(snap, sort_keys=True), texts, json.dumps(snap["alerts"], sort_keys=True),
                 json.dumps(snap["archive"], sort_keys=True))  # fmt: skip


def database_down(since: datetime, old: Build) -> Build:
    """The last build, with the archive's state saying its database does not answer (what is shown is as of
    ``since``)."""
    words = (f"the archive's database is not answering since {since:%Y-%m-%d %H:%M:%S} UTC: what is shown is as"
             " of then; tables are not known to be out of reach")  # fmt: skip
    return Build(old.snapshot, old.tiles, old.alerts, json.dumps({"receiving": False, "words": words}))


@dataclass
class Live:
    """The floor's current build and each tile's version; turns a new build into the events to send."""

    version: int = 0
    current: Build = field(default_factory=lambda: Build("{}", {}, "[]"))
    versions: dict[str, int] = field(default_factory=dict)
    _floor: tuple[Build, str] | None = None

    def update(self, new: Build) -> list[tuple[str, str]]:
        """The events a connected page needs to go from the previous build to ``new`` (none if nothing changed)."""
        old = self.current
        changed = [k for k, text in new.tiles.items() if old.tiles.get(k) != text]
        removed = [k for k in old.tiles if k not in new.tiles]
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
