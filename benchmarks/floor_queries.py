"""The floor's queries for one shift of one table at a year's archive (issue 44): ``floor report``, ``floor shift``,
``floor rounds`` and ``floor sessions`` for one table, beside a plain indexed read of that shift's events (every
event of the shift by the primary key, its data as text: the database's part of any query of the shift), in the
same run. ``floor sessions`` is timed once before the judging pass (``floor judge``, every round replayed by
the query), the pass over the shift's window at every table is timed once (the cost moved off the query), and the
sessions CSV from the judged rounds must be the one from before (exit 1 if not).

The archive is generated in a throw-away PostgreSQL database (tablebench/postgres.py, or ``$FLOOR_TEST_DSN``'s
server) with ``INSERT ... SELECT`` over ``generate_series``, every row a real table's: the envelopes of two pt-2001
rounds the real table core played (tablebench/table_testing.py: session, shoe, lid and table documents, round,
card and settlement events, about 48 events a round) repeated at a dealer's pace (a round every 40 s, as
benchmarks/floor.py's 1x), each repeat with its own round ids, event ids (gapless per table) and times:

- the measured table (``T0000``): every day of ``--days`` (default a year) one session of ``--history-rounds``
  rounds (its history), and on the measured day (the middle of the year) a ``--shift-hours`` shift instead;
- ``--tables`` other tables (default 99): one session of ``--history-rounds`` rounds on the measured day and on
  every ``--every``-th day of the year (the rest of the archive).

The indexes are built after the rows are in (as a restore would), then ``ANALYZE``. The default builds about 2.5
million rows (4 GiB with indexes); it stands for the depth of one table's year of history. A year of a
2,000-table floor holds thousands of times more rows, which only the indexes' height sees: every query is an
index range over the table and window. Printed: the archive's size, the baseline and each command's median time
of ``--runs`` (in this process, after one untimed run: a process's start and imports are not counted), and
whether the commands' figures are the generated shift's (exit 1 if not).

    python benchmarks/floor_queries.py [--days 365] [--tables 99] [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "floor"))

ROUND_S = 40  # a dealer's pace: a round every 40 s (benchmarks/floor.py's 1x)
SITE = "S1"
TARGET = "T0000"
SESSION_START = timedelta(hours=8)  # each day's session opens at 08:00 UTC


def template() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(the session's opening messages, two rounds' messages): (topic, type, data as JSON) each."""
    from controller.table.messages import messages
    from tablebench.table_testing import Harness, play_two_rounds

    h = Harness()
    play_two_rounds(h)
    ms = [(p.topic, p.event_type, json.dumps(p.data)) for p in messages(h.effects)]
    first = next(i for i, m in enumerate(ms) if m[0] == "events/round")
    opening = next(i for i in range(first, -1, -1) if ms[i][0] == "state/table" and '"bets": {}' in ms[i][2])
    return ms[:opening], ms[opening:]


def build(
    dsn: str, days: int, tables: int, every: int, history_rounds: int, shift_rounds: int
) -> dict[str, int]:
    """Fill the archive; returns its figures (rows, the measured day, the measured table's shift id range)."""
    import psycopg

    from floor.archive import store

    opening, rounds = template()
    with psycopg.connect(dsn, autocommit=True) as conn:
        store.migrate(conn)
        idx = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' AND indexname <> 'events_pkey'"
        ).fetchall()
        for name, _ in idx:
            conn.execute(f"DROP INDEX {name}")
        conn.execute("ALTER TABLE events DROP CONSTRAINT events_pkey")
        conn.execute("CREATE TEMP TABLE tpl (part int, j int, topic text, type text, data jsonb)")
        with conn.cursor().copy("COPY tpl FROM STDIN") as cp:
            for part, msgs in ((0, opening), (1, rounds)):
                for j, (topic, etype, data) in enumerate(msgs):
                    cp.write_row((part, j, topic, etype, data))
        conn.execute("INSERT INTO tpl VALUES (2, 0, 'events/session', 'session', '{\"action\": \"closed\"}')")
        # one row per (table, day): its session's cycles of two rounds, its first event id, its start
        conn.execute(
            "CREATE TEMP TABLE plan (table_id text, day int, cycles int, first_id bigint, start timestamptz)"
        )
        n_open, n_round = len(opening), len(rounds)
        day0 = datetime(2026, 1, 1, tzinfo=UTC)
        mid = days // 2
        conn.execute(
            "INSERT INTO plan SELECT t.id, d, CASE WHEN d = %(mid)s AND t.n = 0 THEN %(shift)s"
            " ELSE %(hist)s END, 0, %(day0)s::timestamptz + d * interval '1 day' + %(open)s"
            " FROM (SELECT n, 'T' || lpad(n::text, 4, '0') AS id FROM generate_series(0, %(tables)s) n) t,"
            " generate_series(0, %(days)s - 1) d WHERE t.n = 0 OR d = %(mid)s OR d %% %(every)s = 0",
            {"mid": mid, "shift": shift_rounds // 2, "hist": history_rounds // 2, "day0": day0,
             "open": SESSION_START, "tables": tables, "days": days, "every": every},
        )  # fmt: skip
        conn.execute(
            "UPDATE plan p SET first_id = s.first_id FROM (SELECT table_id, day, 1 + coalesce(sum(%s + 1 + cycles * %s)"
            " OVER (PARTITION BY table_id ORDER BY day ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)"
            " AS first_id FROM plan) s WHERE p.table_id = s.table_id AND p.day = s.day",
            (n_open, n_round),
        )
        gap = ROUND_S * 2 / n_round  # seconds between two events of a cycle of two rounds
        rid = "CASE WHEN x.data ? 'round_id' AND x.part = 1 THEN jsonb_set(x.data, '{round_id}', to_jsonb(" \
              "to_char(p.start, 'YYYYMMDD') || '-' || lpad((2 * c + (x.j > %(half)s)::int + 1)::text, 4, '0')))" \
              " ELSE x.data END"  # fmt: skip
        t0 = time.perf_counter()
        conn.execute(
            "INSERT INTO events (site, table_id, event_id, topic, type, ts, data, raw, source, verified)"
            " SELECT %(site)s, p.table_id, id, x.topic, x.type, ts, d, convert_to(d::text, 'UTF8'), 'live', true"
            " FROM plan p CROSS JOIN LATERAL (SELECT x.topic, x.type, x.part, x.j, c, (" + rid + ") AS d,"
            "  p.first_id + CASE x.part WHEN 0 THEN x.j WHEN 1 THEN %(n_open)s + c * %(n_round)s + x.j"
            "  ELSE %(n_open)s + p.cycles * %(n_round)s END AS id,"
            "  p.start + make_interval(secs => CASE x.part WHEN 0 THEN x.j * 0.01"
            "  WHEN 1 THEN 1 + (c * %(n_round)s + x.j) * %(gap)s ELSE 2 + p.cycles * %(n_round)s * %(gap)s END)"
            "  AS ts FROM tpl x CROSS JOIN LATERAL"
            "  generate_series(0, CASE WHEN x.part = 1 THEN p.cycles - 1 ELSE 0 END) c) x",
            {"site": SITE, "half": _second_round_from(rounds) - 1, "n_open": n_open, "n_round": n_round, "gap": gap},
        )  # fmt: skip
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        conn.execute("ALTER TABLE events ADD PRIMARY KEY (site, table_id, event_id)")
        for _name, sql in idx:
            conn.execute(sql)
        conn.execute(
            "INSERT INTO floor_tables (site, table_id, contiguous_to)"
            " SELECT %s, table_id, max(first_id + %s + 1 + cycles * %s) - 1 FROM plan GROUP BY table_id",
            (SITE, n_open, n_round),
        )
        conn.execute("ANALYZE")
        index_s = time.perf_counter() - t0
        rows = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])  # type: ignore[index]
        target = int(conn.execute("SELECT count(*) FROM events WHERE table_id = %s", (TARGET,)).fetchone()[0])  # type: ignore[index]
        lo, cycles = conn.execute(
            "SELECT first_id, cycles FROM plan WHERE table_id = %s AND day = %s", (TARGET, mid)
        ).fetchone()  # type: ignore[misc]
        size = int(conn.execute("SELECT pg_total_relation_size('events')").fetchone()[0])  # type: ignore[index]
    hi = int(lo) + n_open + int(cycles) * n_round  # its session's closing event
    return {"rows": rows, "target_rows": target, "mid": mid, "lo": int(lo), "hi": hi, "load_s": round(load_s),
            "index_s": round(index_s), "mib": size >> 20}  # fmt: skip


def _second_round_from(rounds: list[tuple[str, str, str]]) -> int:
    """The template index where the second round's messages start (its dealing event's table document)."""
    dealing = [i for i, m in enumerate(rounds) if m[0] == "events/round" and '"dealing"' in m[2]]
    return next(
        i for i in range(dealing[1], -1, -1) if rounds[i][0] == "state/table" and '"bets": {}' in rounds[i][2]
    )


def timed(fn: Callable[[], str], runs: int) -> tuple[float, str]:
    """The median time of ``runs`` runs after one untimed run (imports and first-use caches: a process's start,
    not the query's), and what the last one printed."""
    out = fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--days", type=int, default=365, help="days of history (%(default)s)")
    ap.add_argument("--tables", type=int, default=99, help="other tables (%(default)s)")
    ap.add_argument("--every", type=int, default=90, help="the other tables' history: a session every N days")
    ap.add_argument("--history-rounds", type=int, default=60, help="rounds of each day's session in history")
    ap.add_argument("--shift-hours", type=float, default=8.0, help="the measured shift (%(default)s h)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each query; the median is printed")
    ap.add_argument(
        "--quick", action="store_true", help="14 days, 5 other tables, a 1 h shift, one run (smoke)"
    )
    args = ap.parse_args()
    if args.quick:
        args.days, args.tables, args.runs, args.shift_hours = 14, 5, 1, 1.0
    import psycopg

    from controller.cli import main as tablectl
    from tablebench.postgres import temp_database

    shift_rounds = int(args.shift_hours * 3600 / ROUND_S)
    with temp_database("floor_queries") as dsn:
        t0 = time.perf_counter()
        f = build(dsn, args.days, args.tables, args.every, args.history_rounds, shift_rounds)
        build_s = time.perf_counter() - t0
        day = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=f["mid"])).date()
        since = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + SESSION_START
        until = since + timedelta(hours=args.shift_hours, minutes=5)
        window = ["--since", since.isoformat(), "--until", until.isoformat()]
        print(f"archive events={f['rows']} mib={f['mib']} tables={args.tables + 1} days={args.days}"
              f" target_events={f['target_rows']} shift_events={f['hi'] - f['lo'] + 1} shift_rounds={shift_rounds}"
              f" build_s={build_s:.0f} rows_s={f['load_s']} indexes_s={f['index_s']}")  # fmt: skip

        def command(*argv: str) -> Callable[[], str]:
            def run() -> str:
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = tablectl(["floor", *argv, "--dsn", dsn])
                if rc != 0:
                    raise SystemExit(f"floor {argv[0]} exited {rc}: {err.getvalue()[-2000:]}")
                return out.getvalue()

            return run

        with psycopg.connect(dsn) as conn:

            def baseline() -> str:
                rows = conn.execute(
                    "SELECT event_id, topic, ts, data::text FROM events WHERE site = %s AND table_id = %s"
                    " AND event_id BETWEEN %s AND %s ORDER BY event_id",
                    (SITE, TARGET, f["lo"], f["hi"]),
                ).fetchall()
                conn.rollback()
                return str(len(rows))

            # ``sessions`` before the judging pass (every round replayed and judged by the query, as before issue
            # 44's judged rounds), then the pass over the shift's window at every table (floor/cli/judge.py: the
            # cost moved off the query, timed once), then the queries as a judged archive answers them
            unjudged = timed(command("sessions", *window, "--table", TARGET, "--csv"), 1)
            t0 = time.perf_counter()
            judge_out = command("judge", *window)()
            judge_s = time.perf_counter() - t0
            judged_rounds = int(judge_out.splitlines()[-1].split()[1])
            figures = {
                "baseline": timed(baseline, args.runs),
                "report": timed(command("report", "--day", day.isoformat(), "--table", TARGET, "--csv"), args.runs),
                "shift": timed(command("shift", *window, "--table", TARGET, "--csv"), args.runs),
                "rounds": timed(command("rounds", "--table", TARGET, *window), args.runs),
                "sessions": timed(command("sessions", *window, "--table", TARGET, "--csv"), args.runs),
            }  # fmt: skip
    base = figures["baseline"][0]
    print(f"baseline indexed_read_s={base:.3f} events={figures['baseline'][1]}")
    print(f"floor judge (the shift's window, {args.tables + 1} tables) rounds={judged_rounds} s={judge_s:.1f}"
          f" ms_per_round={judge_s / max(judged_rounds, 1) * 1000:.1f}")  # fmt: skip
    print(
        f"before the judging pass: floor sessions --table {TARGET} s={unjudged[0]:.3f}"
        f" x_baseline={unjudged[0] / base:.1f}"
    )
    for name in ("report", "shift", "rounds", "sessions"):
        print(
            f"floor {name} --table {TARGET} s={figures[name][0]:.3f} x_baseline={figures[name][0] / base:.1f}"
        )
    return check(figures, shift_rounds, unjudged[1])


def check(figures: dict[str, tuple[float, str]], shift_rounds: int, unjudged: str) -> int:
    """The figures are the shift's: every round of it rebuilt complete, and counted by report and shift; the
    sessions from the judged rounds are those of the rounds judged by the query (the same CSV)."""
    rebuilt = [json.loads(line) for line in figures["rounds"][1].splitlines()]
    complete = sum(1 for r in rebuilt if r["complete"] and not r["absent"])
    report = next(r for r in csv.DictReader(io.StringIO(figures["report"][1])) if r["table"] == TARGET)
    shift = next(r for r in csv.DictReader(io.StringIO(figures["shift"][1])) if r["level"] == "table")
    got = {
        "rounds complete": complete,
        "report rounds": int(report["rounds"]),
        "shift rounds": int(shift["rounds"]),
    }
    wrong = {k: v for k, v in got.items() if v != shift_rounds}
    print(f"figures of the shift: {'yes' if not wrong else f'NO {wrong} (expected {shift_rounds})'}")
    same = figures["sessions"][1] == unjudged
    print(f"sessions from judged rounds the same as before the judging pass: {'yes' if same else 'NO'}")
    return 1 if wrong or not same else 0


if __name__ == "__main__":
    sys.exit(main())
