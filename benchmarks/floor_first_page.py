"""The first shift and sessions page of a fresh floor process (issue 44): with each shipped profile's house edge
shipped with the floor (floor/reports/edges.py, floor/reports/profile_edges.py) against the same process computing it
(controller/rules/shoe_math.py, as every process did before), in the same run.

A throw-away PostgreSQL database (tablebench/postgres.py, or ``$FLOOR_TEST_DSN``'s server) holds rounds the real
table core played (pt-2001, archived as the archive stores them). Each run is a new Python process that imports
every command's modules (``imports_s``), then times ``tablectl floor shift --csv`` and then ``tablectl floor
sessions --csv`` over that archive
(the first needs the edge for theoretical win, the second judges every decision and rates the sessions):
``shipped`` as installed, ``computed`` with the shipped table ignored (the baseline). The two must print the same
figures (checked: the CSVs are compared). Printed, one line each:

    shipped  shift_s=... sessions_s=... imports_s=... runs=N   (medians)
    computed shift_s=... sessions_s=... imports_s=... runs=N
    same figures: yes

    python benchmarks/floor_first_page.py [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "floor"))

WHEN = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
WINDOW = [
    "--since",
    (WHEN - timedelta(hours=1)).isoformat(),
    "--until",
    (WHEN + timedelta(hours=7)).isoformat(),
]


def archive_rounds(dsn: str) -> None:
    """Two pt-2001 rounds of the real core on each of three tables, stored as the archive stores them."""
    import psycopg

    from controller.table.messages import messages
    from floor.archive import store
    from floor.common.messages import Envelope, TableRef
    from tablebench.table_testing import Harness, play_two_rounds

    with psycopg.connect(dsn) as conn:
        store.migrate(conn)
    for n in range(3):
        h = Harness()
        play_two_rounds(h)
        ref, envs = TableRef("S1", f"T{n + 1}"), []
        for i, p in enumerate(messages(h.effects), start=1):
            ts = WHEN + timedelta(minutes=n, seconds=i)
            envs.append(
                Envelope(ref, p.topic, i, p.event_type, ts, p.data, json.dumps(p.data).encode(), "live")
            )
        with psycopg.connect(dsn) as conn, conn.transaction():
            store.store_envelopes(conn.cursor(), envs)


def child(dsn: str, mode: str) -> None:
    """One fresh process: the two pages' times and their CSVs, as JSON on stdout."""
    t0 = time.perf_counter()
    from controller.cli import main as tablectl
    from controller.cli.tablectl import build_parser
    from floor.reports import edges

    build_parser(
        "floor"
    )  # every floor command's modules imported: the time below is the page's, not the imports'
    out: dict[str, object] = {"imports_s": time.perf_counter() - t0}
    if mode == "computed":
        edges.shipped_edge = lambda p: None  # the baseline: as before, every process computes the edge
    for page in ("shift", "sessions"):
        buf = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(buf):
            rc = tablectl(["floor", page, "--dsn", dsn, *WINDOW, "--csv"])
        out[f"{page}_s"] = time.perf_counter() - t0
        out[page] = buf.getvalue()
        assert rc == 0, f"floor {page} exited {rc}"
    print(json.dumps(out))


def run(dsn: str, mode: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--dsn", dsn], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per mode (%(default)s)")
    parser.add_argument("--quick", action="store_true", help="one run each (the smoke test)")
    parser.add_argument("--child", choices=("shipped", "computed"), help=argparse.SUPPRESS)
    parser.add_argument("--dsn", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.dsn, args.child)
        return 0
    from tablebench.postgres import temp_database

    runs = 1 if args.quick else args.runs
    with temp_database("floor_first_page") as dsn:
        archive_rounds(dsn)
        results = {mode: [run(dsn, mode) for _ in range(runs)] for mode in ("shipped", "computed")}
    for mode, rs in results.items():
        figures = " ".join(
            f"{page}_s={statistics.median(float(str(r[f'{page}_s'])) for r in rs):.3f}"
            for page in ("shift", "sessions", "imports")
        )
        print(f"{mode:<8} {figures} runs={len(rs)}")
    same = all(
        r[p] == results["shipped"][0][p] for rs in results.values() for r in rs for p in ("shift", "sessions")
    )
    print(f"same figures: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
