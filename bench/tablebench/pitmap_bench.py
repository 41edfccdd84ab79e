"""The pit map's cost at a large floor: ``python -m tablebench.pitmap_bench [--tables 2000]`` (from the repository's
root; needs PostgreSQL as the floor tests do, and Debian's chromium).

Prints, for ``--tables`` tables stored through the archive's store function (tablebench/pitmap_floor.py):

- ``build``: the server's build of the whole floor (snapshot, tiles); ``refresh``: its refresh of one table an
  archive commit named (floor/web/live.py), what each such commit costs it now;
- ``floor event``: the bytes of the whole floor, sent once when a page connects;
- ``update event``: the bytes sent for one table's change (the changed tile only);
- then, while a separate process writes every other table's ``state/table`` at a dealer's pace (``--pace``: a
  round every ``ROUND_SECONDS`` in ``BURSTS_PER_ROUND`` bursts, as benchmarks/floor.py; one commit and one NOTIFY
  naming its tables every ``COMMIT_EVERY_S``, as the archive's batches), for the dashboard as it is
  (``incremental``: each notification refreshes the tables it names) and, as the baseline in the same run, with
  every notification read as naming every table (``whole floor``: the build of the whole floor per commit, as
  before the notifications named tables):
  The dashboard runs in a process of its own, as on a floor server (``_serve``).
  - ``first paint``: chromium, logged in, from opening the page to every tile drawn (the page marks the map drawn,
    then the last tile is checked on screen; median and largest of 3);
  - ``update``: from the commit of one table's new state to the page showing it (archive NOTIFY, the build, the
    event, the page), median and largest of ``--updates``."""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from unittest import mock

import psycopg
from playwright.sync_api import Page

from floor.archive import store
from floor.common.layout import parse_layout
from floor.common.messages import TableRef
from floor.common.notify import named_tables, notify
from floor.web.live import Floor, Live, build
from tablebench.pitmap_floor import SITE, build_floor, envelope, layout_toml, publish, state, table_id
from tablebench.postgres import temp_database
from tests.support.floor_web import chromium, dashboard, log_in

Event = multiprocessing.synchronize.Event

ROUND_SECONDS = 40.0  # a dealer's round (benchmarks/floor.py)
BURSTS_PER_ROUND = 12  # each burst changes the table's state/table (benchmarks/floor.py)
COMMIT_EVERY_S = 0.1  # the archive's batch: one commit (and one NOTIFY) for the tables written meanwhile
MEASURED = range(2, 40)  # the tables the updates are measured on: the pace's writer leaves them alone


def _pace(dsn: str, n: int, pace: float, stop: multiprocessing.synchronize.Event) -> None:
    """Every table outside ``MEASURED`` writes a new verified ``state/table`` ``BURSTS_PER_ROUND`` times a round,
    spread evenly; one transaction and NOTIFY each ``COMMIT_EVERY_S``."""
    tables = [i for i in range(2, n + 1) if i not in MEASURED]
    per_s = len(tables) * BURSTS_PER_ROUND * pace / ROUND_SECONDS
    event_id = dict.fromkeys(tables, 1000)
    at, owed, k = time.monotonic(), 0.0, 0
    with psycopg.connect(dsn) as conn:
        while not stop.is_set():
            at += COMMIT_EVERY_S
            time.sleep(max(0.0, at - time.monotonic()))
            owed += per_s * COMMIT_EVERY_S
            batch = [tables[(k + j) % len(tables)] for j in range(int(owed))]
            owed -= len(batch)
            k += len(batch)
            envs = []
            for i in batch:
                event_id[i] += 1
                doc = state(i) | {"bets": {str(1 + (event_id[i] % 7)): {"amount": 1000}}}
                envs.append(envelope(TableRef(SITE, table_id(i)), "state/table", event_id[i], "state",
                                     datetime.now(UTC), doc))  # fmt: skip
            with conn.transaction():
                cur = conn.cursor()
                store.store_envelopes(cur, envs)
                cur.execute(
                    "UPDATE events SET verified = true WHERE topic = 'state/table' AND NOT verified"
                    " AND (site, table_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                    ([SITE] * len(batch), [table_id(i) for i in batch]),
                )
                notify(cur, [TableRef(SITE, table_id(i)) for i in batch])


@contextmanager
def _paced(dsn: str, n: int, pace: float) -> Iterator[None]:
    stop = multiprocessing.get_context("spawn").Event()
    proc = multiprocessing.get_context("spawn").Process(target=_pace, args=(dsn, n, pace, stop), daemon=True)
    proc.start()
    try:
        yield
    finally:
        stop.set()
        proc.join(10)


def _serve(dsn: str, n: int, url: multiprocessing.queues.Queue[str], whole: Event, stop: Event) -> None:
    """The dashboard in a process of its own, as on a floor server (in the benchmark's process, its builds and the
    browser's driver took turns at one interpreter lock, and the driver saw the page's changes up to a second
    late); while ``whole`` is set, every notification is read as naming every table (the baseline)."""
    with (
        mock.patch("floor.web.app.named_tables", lambda p: None if whole.is_set() else named_tables(p)),
        dashboard(dsn, layout=parse_layout(layout_toml(n))) as web,
    ):
        url.put(web.url)
        stop.wait()


@contextmanager
def _dashboard(dsn: str, n: int) -> Iterator[tuple[str, Event]]:
    ctx = multiprocessing.get_context("spawn")
    url: multiprocessing.queues.Queue[str] = ctx.Queue()
    whole, stop = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(dsn, n, url, whole, stop), daemon=True)
    proc.start()
    try:
        yield url.get(timeout=300), whole
    finally:
        stop.set()
        proc.join(30)


def _measure(page: Page, url: str, dsn: str, n: int, updates: int, first: int) -> str:
    paints, drawn = [], []
    for _ in range(3):
        t = time.perf_counter()
        page.goto(url + "/")
        # the page marks the map drawn (one element by id: polling for the 2,000th of 2,000 tiles every frame
        # cost the page a tenth of its main thread), then the last tile is checked on screen
        page.locator("#map[data-drawn-ms]").wait_for(state="attached", timeout=120_000)
        page.locator(".tile").nth(n - 1).wait_for(timeout=120_000)  # (the page's CSP forbids eval)
        paints.append(time.perf_counter() - t)
        drawn.append(int(page.get_attribute("#map", "data-drawn-ms") or 0))
    lags = []
    for k in range(updates):
        i = MEASURED[k % len(MEASURED)]
        dealer = f"Bench dealer {first + k}"
        t = time.perf_counter()
        publish(
            dsn, i, "state/table", first + k, {"state": "betting", "profile": "pt-2001", "dealer": dealer}
        )
        page.locator(f".tile[data-table='{table_id(i)}'] .dealer", has_text=dealer).wait_for(timeout=60_000)
        lags.append(time.perf_counter() - t)
    return (
        f"first paint median {statistics.median(paints) * 1000:.0f} ms, largest {max(paints) * 1000:.0f} ms of 3"
        f" (the page's own drawing: median {statistics.median(drawn)} ms); update median"
        f" {statistics.median(lags) * 1000:.0f} ms, largest {max(lags) * 1000:.0f} ms of {len(lags)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--pace", type=float, default=1.0, help="times a dealer's pace")
    args = parser.parse_args()
    n = args.tables
    layout = parse_layout(layout_toml(n))
    with temp_database() as dsn:
        t = time.perf_counter()
        build_floor(dsn, n)
        print(f"tables: {n} (stored in {time.perf_counter() - t:.1f} s)")
        live = Live()
        builds = []
        for _ in range(3):
            t = time.perf_counter()
            b = build(dsn, layout)
            builds.append(time.perf_counter() - t)
        live.update(b)
        print(f"build: median {statistics.median(builds) * 1000:.0f} ms of 3 (the whole floor)")
        print(f"floor event: {len(live.floor().encode()) / 1024:.0f} KiB")
        with psycopg.connect(dsn, autocommit=True) as conn:
            floor = Floor(layout)
            floor.full(conn)
            refreshes = []
            for k in range(5):
                publish(
                    dsn, 2, "state/table", 100 + k, {"state": "dealing", "profile": "pt-2001", "faults": []}
                )
                t = time.perf_counter()
                b = floor.refresh(conn, frozenset({TableRef(SITE, table_id(2))}))
                refreshes.append(time.perf_counter() - t)
            events = live.update(b)
        print(f"refresh: median {statistics.median(refreshes) * 1000:.1f} ms of 5 (one table named)")
        print(f"update event: {sum(len(d.encode()) for _, d in events)} bytes for one table's change")
        print(f"load: {n} tables at {args.pace:g}x a dealer's pace: {BURSTS_PER_ROUND} state/table a table every"
              f" {ROUND_SECONDS:g} s, one commit every {COMMIT_EVERY_S:g} s")  # fmt: skip
        with _paced(dsn, n, args.pace), _dashboard(dsn, n) as (url, whole), chromium() as browser:
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            log_in(page, url, "carol")
            whole.set()  # every notification read as every table
            base = _measure(page, url, dsn, n, args.updates, 200)
            print(f"whole floor (baseline): {base}", flush=True)
            whole.clear()
            new = _measure(page, url, dsn, n, args.updates, 200 + args.updates)
            print(f"incremental:            {new}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
