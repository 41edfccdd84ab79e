"""The advantage-play detector (issue 32): which play sessions surveillance should look at, and the floor alert.

A session is flagged when, with at least ``min_rounds`` rounds (``min_decisions`` decisions for precision):

- ``bet_count_trend``: its bets rise with the Hi-Lo true count: Spearman's rho at least ``min_rho`` and its
  one-sided p-value at most ``max_p`` (a counter's bet spread);
- ``high_count_entry``: with at least ``min_entry_rounds`` rounds, the rounds it played have a mean true count at
  least ``min_entry`` above the rounds of the same shoes it sat out, Mann-Whitney p-value at most ``max_p`` (a
  back-counter who sits down only when the count is high);
- ``play_precision``: its share of basic-strategy decisions is at least ``min_precision`` (off by default: a
  flat basic-strategy player is no advantage player; see the rates in docs/floor.md).

Neither count measure applies to a continuous shuffler. The rates of these rules on simulated players (false
positives on a flat basic-strategy player, a poor player and a random bettor; detection of a Hi-Lo counter and a
back-counter) are measured by ``benchmarks/advantage_play.py`` and recorded in docs/floor.md.

``raise_alerts`` writes one ``advantage_play`` floor alert per flagged session (deduplicated by the session's
key). It is a surveillance kind (floor/common/alerts.py): the dashboard's alert list, the supervisors' acknowledgement
and ``floor alerts`` leave it out; only the surveillance view shows it. Nothing is published to a table. An
alert is raised while the shoe may still be in play and is listed at once: its words never hold the count's
figures (``Flag.text(show_count=False)``); surveillance reads them in the session once the count is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import psycopg

from floor.common.alerts import ADVANTAGE_PLAY, raise_alert
from floor.common.messages import TableRef
from floor.reports.sessions_play import Level, PlaySession


class FlagKind(StrEnum):
    COUNT_TREND = "bet_count_trend"
    HIGH_COUNT_ENTRY = "high_count_entry"
    PRECISION = "play_precision"


@dataclass(frozen=True)
class Thresholds:
    min_rounds: int = 20
    max_p: float = 0.001
    min_rho: float = 0.3
    min_entry: float = 1.0  # the played rounds' mean count above the skipped rounds'
    min_entry_rounds: int = 10
    min_decisions: int = 50
    min_precision: float | None = None  # None: the precision rule is off


DEFAULT_THRESHOLDS = Thresholds()
# The precision a correct basic-strategy player reaches over a session of min_decisions or more: at least 99 % of
# runs of 50 decisions by players of a printed chart do (benchmarks/advantage_play.py, docs/floor.md)
CALIBRATED_PRECISION = 0.95


@dataclass(frozen=True)
class Flag:
    kind: FlagKind
    words: str  # surveillance's words, the count's figures included
    without_count: str = ""  # the words for a view that withholds the count (empty: ``words`` hold no count)

    def text(self, *, show_count: bool) -> str:
        return self.words if show_count or not self.without_count else self.without_count


def _trend_flag(s: PlaySession, th: Thresholds) -> Flag | None:
    t = s.trend()
    if not t or t.n < th.min_rounds or t.rho is None or t.p_value is None:
        return None
    if t.rho < th.min_rho or t.p_value > th.max_p:
        return None
    return Flag(
        FlagKind.COUNT_TREND,
        f"bets rise with the count over {t.n} rounds: rho {t.rho:.2f}, p {t.p_value:.2g}",
    )


def _entry_flag(s: PlaySession, th: Thresholds) -> Flag | None:
    e = s.entry()
    if not e or e.n < th.min_entry_rounds or e.difference is None or e.p_value is None:
        return None
    if e.difference < th.min_entry or e.p_value > th.max_p:
        return None
    return Flag(FlagKind.HIGH_COUNT_ENTRY, f"plays at high counts: mean true count {e.mean:.2f} over {e.n} rounds, "
                f"{e.difference:.2f} above the {e.skipped} rounds sat out, p {e.p_value:.2g}",
                f"plays at high counts: {e.n} rounds played against the {e.skipped} rounds sat out, "
                f"p {e.p_value:.2g}")  # fmt: skip


def _precision_flag(s: PlaySession, th: Thresholds) -> Flag | None:
    p = s.precision
    if th.min_precision is None or p is None or s.decisions < th.min_decisions or p < th.min_precision:
        return None
    return Flag(FlagKind.PRECISION, f"{p:.1%} of {s.decisions} decisions by basic strategy")


_RULES = (_trend_flag, _entry_flag, _precision_flag)


def assess(s: PlaySession, th: Thresholds = DEFAULT_THRESHOLDS) -> list[Flag]:
    return [f for rule in _RULES if (f := rule(s, th)) is not None]


def raise_alerts(
    conn: psycopg.Connection, sessions: list[PlaySession], th: Thresholds = DEFAULT_THRESHOLDS
) -> int:
    """One ``advantage_play`` floor alert per flagged session not alerted before; returns how many are new."""
    new = 0
    with conn.transaction():
        cur = conn.cursor()
        for s in sessions:
            flags = assess(s, th)
            if not flags:
                continue
            who = f"seat {s.seat}" if s.level == Level.SEAT else f"player {s.player}"
            where = f"table {s.table}" if s.table else "the floor"
            reasons = [f.text(show_count=False) for f in flags]
            details = {"session": s.key, "level": s.level, "seat": s.seat, "player": s.player,
                       "rounds": len(s.rounds), "first_round": s.round_ids[0], "last_round": s.round_ids[-1],
                       "flags": [f.kind.value for f in flags],
                       "reasons": reasons}  # fmt: skip
            message = f"advantage play? {who} at {where}: " + "; ".join(reasons)
            if raise_alert(cur, TableRef(s.site, s.table or "-"), ADVANTAGE_PLAY, "warning", message, details,
                           f"{ADVANTAGE_PLAY}:{s.key}"):  # fmt: skip
                new += 1
    return new
