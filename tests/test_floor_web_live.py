"""The dashboard's live stream sends what changed, not the whole floor (issue 29; floor/web_live.py):
one table's change is one tile's bytes at 2,000 tables, each change gets the floor's next version, and a page that
fell behind gets the whole floor once instead of a backlog (floor/web.py)."""

from __future__ import annotations

import asyncio
import json

from floor.web import RESYNC, FloorWeb, Stream
from floor.web_live import Build, Live


def _build(n: int, changed: dict[str, str] | None = None, alerts: str = "[]") -> Build:
    tiles = {f"S1/bj{i}": json.dumps({"site": "S1", "table": f"bj{i}", "state": "Betting"}) for i in range(n)}
    tiles.update(changed or {})
    return Build("{}", tiles, alerts)


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
