"""Each benchmark runs in ``--quick`` mode and prints its figures (and the baseline's where there is one).

No timing is asserted (CONTRIBUTING: timings belong in benchmarks/ and docs/performance.md). What is asserted
is what a benchmark must get right whatever the machine: it exits 0, every figure it promises is printed as a
number, and the throughput run loses no card (every events/card reached the subscriber).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto"),
]
NUM = r"-?\d+(?:\.\d+)?"


def run_quick(name: str, *flags: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick", *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=170,
    )  # fmt: skip
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def figure(out: str, line_start: str, key: str) -> float:
    for line in out.splitlines():
        if line.strip().startswith(line_start):
            m = re.search(rf"\b{key}=({NUM})", line)
            assert m, f"{key} missing on {line!r}"
            return float(m.group(1))
    raise AssertionError(f"no line starting with {line_start!r} in:\n{out}")


def test_latency_prints_controller_baseline_and_stage_figures() -> None:
    out = run_quick("latency")
    rows = ("controller", "baseline", "parse", "state machine", "journal commit", "COMMIT statement")
    for row in (*rows, "publish", "fsync"):
        for key in ("p50", "p99", "max"):
            figure(out, row, key)
    assert figure(out, "controller", "n") == figure(out, "baseline", "n") >= 30  # same run, same count
    # the commit's p99 beside one fsync's, and the bound, from the figures of the same run (issue 44)
    assert re.search(rf"journal commit p99 {NUM} ms = {NUM} x one fsync's p99 \({NUM} ms\)", out)
    assert re.search(rf"WAL checkpoints: \d+ on their own thread .*; the log file.s size: {NUM} pages", out)
    pages = re.search(
        rf"pages appended to the log per card commit \(WAL frames of 4 KiB\): mean ({NUM}), p50 \d+", out
    )
    # every card commit appends its pages, read from the log's index: a count that stays 0 reads nothing
    assert pages and float(pages.group(1)) >= 1
    assert re.search(r"card commits during which the database file was written: \d+ of \d+", out)
    bound = rf"bound 2 x \(pass-through p99 \+ fsync p99\) = {NUM} ms; controller p99 {NUM} ms: (met|missed)"
    assert re.search(bound, out)
    assert re.search(rf"CPU per card: {NUM} us", out)


def test_throughput_prints_rates_and_loses_no_card() -> None:
    out = run_quick("throughput")
    for row in ("offered 500/s", "flat out", "lock-step flat out"):
        assert figure(out, row, "cards") > 0
        figure(out, row, "cards_per_s")
        figure(out, row, "cpu_per_card_us")
        figure(out, row, "max_outbox")
        figure(out, row, "max_shoe_queue")
        assert figure(out, row, "lost") == 0  # every events/card reached mosquitto_sub
        assert figure(out, row, "outbox_after") == 0  # the figures run until the broker acknowledged all
    assert figure(out, "lock-step flat out", "events_per_commit") == 1.0  # one input, one commit
    assert figure(out, "baseline: bare durable commit", "cpu_per_commit_us") > 0  # the floor, same run


def test_memory_prints_rss_samples_and_growth() -> None:
    out = run_quick("memory")
    assert len(re.findall(r"\d+:\d+MiB", out)) >= 10
    assert re.search(rf"{NUM} KiB per 1000 rounds", out)


def test_cpu_per_card_prints_the_figures_of_the_cards_it_dealt() -> None:
    out = run_quick("cpu_per_card")
    assert figure(out, "cards", "cards") >= 300
    assert figure(out, "cards", "inputs") > figure(
        out, "cards", "cards"
    )  # bets, decisions, the lid cycle too
    assert figure(out, "cards", "cpu_per_card_us") > 0


def test_cpu_per_card_core_prints_the_bare_cores_figures_for_the_same_workload() -> None:
    out = run_quick("cpu_per_card", "--core")
    assert "the bare TableCore" in out
    assert figure(out, "cards", "cards") >= 300
    assert figure(out, "cards", "inputs") > figure(out, "cards", "cards")
    assert figure(out, "cards", "core_cpu_per_card_us") > 0


def test_startup_prints_ready_and_online_for_start_and_restart_after_kill9() -> None:
    out = run_quick("startup")
    for key in (
        "start_ready_s",
        "start_online_s",
        "restart_after_kill9_ready_s",
        "restart_after_kill9_online_s",
    ):
        assert figure(out, "events=20000", key) > 0  # "none" (never ready) would not match a number


def test_floor_prints_lag_capacity_and_baseline_and_loses_no_event() -> None:
    out = run_quick("floor")  # exits 1 if any event sent is not stored
    for key in ("events_per_s", "lag_p50_ms", "lag_p99_ms", "lag_max_ms"):
        figure(out, "archive", key)
    assert figure(out, "archive", "sent") == figure(out, "archive", "stored") > 0
    assert figure(out, "capacity", "flood") == figure(out, "capacity", "stored") > 0
    assert figure(out, "baseline", "rows_per_s") > 0
    # its tables sign their checkpoints with keys the floor enrolled: every one verified, none alerted invalid
    assert figure(out, "capacity", "checkpoints_unverified") == 0
    alerts = next(line for line in out.splitlines() if line.startswith("alerts"))
    assert figure(out, "alerts", "total") >= 0 and "checkpoint_invalid" not in alerts, alerts


def test_advantage_play_prints_every_players_rates() -> None:
    out = run_quick("advantage_play")
    for kind in ("flat", "poor", "random", "counter", "backcounter"):
        for config in ("default", "precision"):
            line = f"{kind} "
            rows = [x for x in out.splitlines() if x.startswith(line) and f" {config} " in x]
            assert len(rows) == 1, out
            assert 0 <= figure(rows[0], line, "window") <= 1 and 0 <= figure(rows[0], line, "sessions") <= 1
    # the precision rule's calibration on the printed chart's players (issue 39): runs of min_decisions decisions
    [calibration] = [x for x in out.splitlines() if x.startswith("calibration:")]
    assert "reach min_precision=" in calibration and "lowest precision" in calibration
    # players who move between two tables (issue 41): per seat beside per player, in the same run
    for kind in ("flat_mover", "random_mover", "counter_mover", "wonger"):
        rows = [x for x in out.splitlines() if x.startswith(f"{kind} ") and " default " in x]
        assert len(rows) == 1, out
        for key in ("any", "sessions", "per_player"):
            assert 0 <= figure(rows[0], kind, key) <= 1


def test_progressive_prints_rates_latency_and_baselines_and_the_meter_is_exact() -> None:
    out = run_quick("progressive")
    assert figure(out, "20 tables contributions", "contributions_per_s") > 0
    assert "exact=True" in out  # the meter equals the sum of the contributions, to the 1/10,000
    for key in ("commit_to_signed_meter_p50_ms", "p95_ms", "max_ms"):
        figure(out, "20 tables hit", key)
    assert figure(out, "20 tables baseline", "bare_insert_rows_per_s") > 0
    figure(out, "20 tables baseline", "broker_publish_to_subscriber_p50_ms")


def test_floor_queries_prints_each_query_beside_the_baseline_and_the_shifts_figures() -> None:
    out = run_quick("floor_queries")  # exits 1 if a query's figures are not the generated shift's
    assert figure(out, "archive", "events") > figure(out, "archive", "shift_events") > 0
    assert figure(out, "baseline", "indexed_read_s") > 0
    for name in ("report", "shift", "rounds", "sessions"):
        assert figure(out, f"floor {name}", "s") > 0 and figure(out, f"floor {name}", "x_baseline") >= 0
    assert figure(out, "before the judging pass", "s") > 0  # sessions with every round judged by the query
    assert "figures of the shift: yes" in out


def test_floor_first_page_prints_shipped_and_computed_and_the_same_figures() -> None:
    out = run_quick("floor_first_page")
    for mode in ("shipped", "computed"):
        for key in ("shift_s", "sessions_s", "imports_s"):
            assert figure(out, mode, key) >= 0
    assert "same figures: yes" in out  # the shipped edge changes no figure
