"""The pit map's cost at a large floor: ``python -m tablebench.pitmap_bench [--tables 2000]`` (from the repository's
root; needs PostgreSQL as the floor tests do, and Debian's chromium).

Prints, for ``--tables`` tables stored through the archive's store function (tablebench/pitmap_floor.py):

- ``build``: the server's build of the whole floor (snapshot, tiles), what each archive commit costs it;
- ``floor event``: the bytes of the whole floor, sent once when a page connects;
- ``update event``: the bytes sent for one table's change (the changed tile only);
- ``first paint``: chromium, logged in, from opening the page to every tile drawn;
- ``update``: from the commit of one table's new state to the page showing it (archive NOTIFY, the build, the
  event, the page), median of ``--updates``."""

from __future__ import annotations

import argparse
import statistics
import time

from floor.layout import parse_layout
from floor.web_live import Live, build
from tablebench.pitmap_floor import build_floor, layout_toml, publish, table_id
from tablebench.postgres import temp_database
from tests.support.floor_web import chromium, dashboard, log_in


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=5)
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
        print(f"build: median {statistics.median(builds) * 1000:.0f} ms of 3")
        print(f"floor event: {len(live.floor().encode()) / 1024:.0f} KiB")
        publish(dsn, 2, "state/table", 100, {"state": "dealing", "profile": "pt-2001", "faults": []})
        events = live.update(build(dsn, layout))
        print(f"update event: {sum(len(d.encode()) for _, d in events)} bytes for one table's change")
        with dashboard(dsn, layout=layout) as web, chromium() as browser:
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            log_in(page, web.url, "carol")
            paints, drawn = [], []
            for _ in range(3):
                t = time.perf_counter()
                page.goto(web.url + "/")
                page.locator(".tile").nth(n - 1).wait_for(timeout=120_000)  # (the page's CSP forbids eval)
                paints.append(time.perf_counter() - t)
                drawn.append(int(page.get_attribute("#map", "data-drawn-ms") or 0))
            print(
                f"first paint: median {statistics.median(paints) * 1000:.0f} ms of 3 (opening to {n} tiles drawn;"
                f" the page's own drawing of the floor event: median {statistics.median(drawn)} ms)"
            )
            lags = []
            for k in range(args.updates):
                i = 3 + k
                dealer = f"Bench dealer {k}"
                t = time.perf_counter()
                publish(
                    dsn, i, "state/table", 100, {"state": "betting", "profile": "pt-2001", "dealer": dealer}
                )
                page.locator(f".tile[data-table='{table_id(i)}'] .dealer", has_text=dealer).wait_for(
                    timeout=60_000
                )
                lags.append(time.perf_counter() - t)
            print(f"update: median {statistics.median(lags) * 1000:.0f} ms, largest {max(lags) * 1000:.0f} ms "
                  f"of {len(lags)} (commit to the tile redrawn)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
