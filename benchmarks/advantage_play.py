"""The advantage-play detector's false-positive and detection rates on simulated players (issue 32).

Each trial plays ``--shoes`` shoes of pt-2001 (6 decks, batch shoe, cut card at 75 %) through the real rules
engine (bench/tablebench/ap_players.py): a table regular at seat 1 and the player under test at seat 5, named by
a player identity. The floor's own code judges every round (floor/reports/play_rounds.py: replay, basic
strategy, the Hi-Lo count from the cards dealt before each bet), groups seat sessions (broken by a gap or a shoe
change) and the player's row over the whole window, and the detector (floor/protection/advantage.py) flags them.
Every player plays basic strategy from a printed chart written out in bench/tablebench/published_chart.py, apart
from the judge's code. Printed, per simulated player, with the default thresholds and with the play-precision
rule on (``min_precision`` 0.95):

- ``window``: the share of trials whose player row (all its rounds in the window) is flagged;
- ``sessions``: the share of the player's seat sessions flagged (a session is at most one shoe).

For the flat, poor and random players a flag is a false positive; for the counter and back-counter a detection.
The precision rule flags skilled play: a flag on the flat and random players (basic strategy, no count) is its
false positive as an advantage-play sign. Last, its calibration: the share of runs of ``min_decisions``
consecutive decisions of the basic-strategy players (the regular at seat 1 and the flat and random players)
that reach ``min_precision`` (wanted: at least 99 %), with the lowest and mean precision.

Then players who move between two tables (issue 41, bench/tablebench/ap_moving.py: each table deals ``--shoes``
shoes, the player takes seat 5 at one table or the other, his visits as the tables' player events say them),
judged both ways in the same run, beside each other:

- ``per_seat``: the floor without player identity: the seat sessions of seat 5 at each table (issue 32);
  ``any`` is the share of trials with at least one of them flagged, ``sessions`` the share of them flagged;
- ``per_player``: the player's rating over all his visits across both tables and their shoes
  (floor/players/ratings.py), flagged or not, per trial.

For the flat and random movers a flag is a false positive; for the counter who wongs out and the wonger a
detection.

    python benchmarks/advantage_play.py [--trials 20] [--shoes 8] [--seed 1] [--quick] [--moving-only]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datetime import UTC, datetime, timedelta

from floor.players.ratings import TimedRound, rate_player
from floor.players.visits import EndReason, Visit
from floor.protection.advantage import CALIBRATED_PRECISION, DEFAULT_THRESHOLDS, Thresholds, assess
from floor.reports.play_rounds import seat_rounds
from floor.reports.sessions_play import Level, TableRound, group_sessions, player_totals
from tablebench.ap_moving import MOVERS, simulate_moving
from tablebench.ap_players import PLAYERS, SUBJECT_SEAT, simulate

PRECISION_ON = (
    CALIBRATED_PRECISION  # the threshold a correct basic-strategy player reaches (calibrated below)
)
PLAYER_ID = "sim-player"
GENUINE = ("flat", "random")  # players by the printed chart, never off it: each should reach the threshold


def blocks(matches: list[bool], size: int) -> list[float]:
    """The precision of each run of ``size`` consecutive decisions (the shortest session the rule judges)."""
    return [sum(matches[i : i + size]) / size for i in range(0, len(matches) - size + 1, size)]


def trial(
    kind: str, shoes: int, seed: int, configs: dict[str, Thresholds], calibration: list[float]
) -> dict[str, tuple[int, int, int]]:
    """Per configuration: (window flagged 0/1, sessions flagged, sessions); ``calibration`` gets the precision of
    every block of ``min_decisions`` decisions of the regular and (a genuine player) the player under test."""
    rounds = simulate(kind, shoes=shoes, seed=seed, player=PLAYER_ID)
    trs = []
    by_seat: dict[int, list[bool]] = {}
    for i, r in enumerate(rounds):
        seats, problems = seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)
        assert not problems, problems
        trs.append(TableRound(i, r.round_id, r.shoe, False, seats, r.count))
        for sr in seats:
            by_seat.setdefault(sr.seat, []).extend(c.matches for c in sr.checks)
    for seat, matches in by_seat.items():
        if seat != SUBJECT_SEAT or kind in GENUINE:
            calibration += blocks(matches, DEFAULT_THRESHOLDS.min_decisions)
    sessions = group_sessions("sim", "T1", trs)
    mine = [s for s in sessions if s.level == Level.SEAT and s.seat == SUBJECT_SEAT]
    [window] = player_totals(sessions)
    out = {}
    for name, th in configs.items():
        out[name] = (int(bool(assess(window, th))), sum(bool(assess(s, th)) for s in mine), len(mine))
    return out


START = datetime(2026, 11, 23, 12, tzinfo=UTC)


def moving_trial(
    kind: str, shoes: int, seed: int, configs: dict[str, Thresholds]
) -> dict[str, tuple[int, ...]]:
    """Per configuration: (a seat session flagged 0/1, seat sessions flagged, seat sessions, player flagged 0/1)."""
    run = simulate_moving(kind, shoes=shoes, seed=seed)
    tables: dict[tuple[str, str], list[TimedRound]] = {}
    seat_sessions = []
    for t, rounds in run.rounds.items():
        trs = []
        for i, r in enumerate(rounds):
            seats, problems = seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)
            assert not problems, problems
            trs.append(TableRound(i, r.round_id, r.shoe, False, seats, r.count))
        # event ids as a table's journal would have them: round i's first event 10 i + 5, a visit's in and out
        # events just before its first round and just after its last
        tables[("sim", t)] = [TimedRound("sim", t, tr, 10 * tr.index + 5, START + timedelta(seconds=30 * tr.index),
                                         30.0) for tr in trs]  # fmt: skip
        seat_sessions += [
            s for s in group_sessions("sim", t, trs) if s.level == Level.SEAT and s.seat == SUBJECT_SEAT
        ]
    visits = [Visit(PLAYER_ID, "sim", t, SUBJECT_SEAT, START + timedelta(seconds=30 * a), 10 * a + 1, "bench",
                    end=START + timedelta(seconds=30 * b), end_event=10 * b + 1, end_reason=EndReason.PLAYER_OUT)
              for t, a, b in run.visits]  # fmt: skip
    player = rate_player(PLAYER_ID, visits, tables).play
    assert len(player.rounds) == sum(len(s.rounds) for s in seat_sessions)  # the same rounds, judged two ways
    out = {}
    for name, th in configs.items():
        flagged = sum(bool(assess(s, th)) for s in seat_sessions)
        out[name] = (int(flagged > 0), flagged, len(seat_sessions), int(bool(assess(player, th))))
    return out


def moving(trials: int, shoes: int, seed: int, configs: dict[str, Thresholds]) -> None:
    print(f"moving players: two tables, {shoes} shoes each, seat 5 at one or the other; per_seat (seat sessions, "
          "no identity) beside per_player (his visits across tables and shoes)")  # fmt: skip
    for kind in MOVERS:
        sums = {name: [0, 0, 0, 0] for name in configs}
        for t in range(trials):
            for name, got in moving_trial(kind, shoes, seed * 1000 + t, configs).items():
                for i, v in enumerate(got):
                    sums[name][i] += v
        role = "detection" if kind in ("counter_mover", "wonger") else "false_positive"
        for name, (anyf, f, n, p) in sums.items():
            seat = f"per_seat any={anyf / trials:.2f} ({anyf}/{trials}) sessions={f / n if n else 0:.3f} ({f}/{n})"
            print(f"{kind:<13} {name:<9} {role:<14} {seat}  per_player={p / trials:.2f} ({p}/{trials})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--shoes", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="1 trial of 4 shoes, moving 1 of 2 (a smoke run)")
    ap.add_argument("--moving-only", action="store_true", help="only the players who move between tables")
    args = ap.parse_args()
    trials, shoes = (1, 4) if args.quick else (args.trials, args.shoes)
    moving_trials, moving_shoes = (1, 2) if args.quick else (trials, shoes)  # two tables: twice the rounds
    configs = {
        "default": DEFAULT_THRESHOLDS,
        "precision": replace(DEFAULT_THRESHOLDS, min_precision=PRECISION_ON),
    }
    d = DEFAULT_THRESHOLDS
    print(f"pt-2001, 6 decks, cut card at 75 %; {trials} trials x {shoes} shoes per player; thresholds: "
          f"min_rounds={d.min_rounds} max_p={d.max_p} min_rho={d.min_rho} min_entry={d.min_entry}; "
          f"precision rule: min_precision={PRECISION_ON} over {d.min_decisions} decisions")  # fmt: skip
    start = time.monotonic()
    if args.moving_only:
        moving(moving_trials, moving_shoes, args.seed, configs)
        print(f"elapsed_s={time.monotonic() - start:.1f}")
        return 0
    calibration: list[float] = []
    for kind in PLAYERS:
        sums = {name: [0, 0, 0] for name in configs}
        for t in range(trials):
            for name, (w, f, n) in trial(kind, shoes, args.seed * 1000 + t, configs, calibration).items():
                sums[name][0] += w
                sums[name][1] += f
                sums[name][2] += n
        role = "detection" if kind in ("counter", "backcounter") else "false_positive"
        for name, (w, f, n) in sums.items():
            print(f"{kind:<11} {name:<9} {role:<14} window={w / trials:.2f} ({w}/{trials}) "
                  f"sessions={f / n if n else 0:.3f} ({f}/{n})")  # fmt: skip
    n = len(calibration)
    passed = sum(p >= PRECISION_ON for p in calibration)
    others = " ".join(f"at_{t}={sum(p >= t for p in calibration) / n:.3f}" for t in (0.98, 0.99, 1.0))
    print(f"calibration: basic-strategy players by the printed chart, {n} runs of {d.min_decisions} decisions: "
          f"{passed / n:.3f} ({passed}/{n}) reach min_precision={PRECISION_ON}; {others}; "
          f"lowest precision {min(calibration):.3f}, mean {sum(calibration) / n:.4f}")  # fmt: skip
    moving(moving_trials, moving_shoes, args.seed, configs)
    print(f"elapsed_s={time.monotonic() - start:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
