"""Rounds the archive does not hold, for ``tablectl floor rounds``: "0 incomplete" is never said of a window whose
rounds are simply absent.

Two signs, both from what is archived:

- **round ids that jump**: a table numbers its rounds ``<session>-0001``, ``-0002``, ... without a gap (a round
  refused at its bets takes no number), so a number missing between two archived rounds of one session is a round
  none of whose events is archived;
- **holes in the window** (floor/reports/coverage.py): event ids not archived that may fall in the window and
  lie outside every archived round's own span (a hole inside a round is already in that round's ``missing``):
  whole rounds, or the start or end of one, may be there.

Each is listed like a round (``complete: false``, ``absent: true``, ``missing`` says why), so a reader counting
incomplete rounds counts them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from floor.reports.coverage import Coverage, Hole, HoleKind
from floor.reports.rounds import ArchivedRound

_ROUND_ID = re.compile(r"^(.{1,64})-([0-9]{4,9})\Z")  # <session id>-<number> (controller/table/dealer.py)
MAX_NAMED = 100  # absent round ids named one by one per jump; a longer jump is one entry


@dataclass(frozen=True, slots=True)
class AbsentRound:
    site: str
    table_id: str
    round_id: str | None  # None: a hole of the window, the rounds in it are not known
    events: tuple[int, int] | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "table": self.table_id,
            "round_id": self.round_id,
            "started": None,
            "settled": None,
            "void": False,
            "complete": False,
            "absent": True,
            "missing": [self.reason],
            "events": list(self.events) if self.events else None,
            "description": None,
            "settlement": None,
        }


def _jumps(rounds: list[ArchivedRound]) -> list[AbsentRound]:
    out: list[AbsentRound] = []
    last: dict[tuple[str, str, str], tuple[int, ArchivedRound]] = {}
    for rnd in rounds:
        m = _ROUND_ID.fullmatch(rnd.round_id)
        if m is None:
            continue
        session, number = m.group(1), int(m.group(2))
        key = (rnd.site, rnd.table_id, session)
        before = last.get(key)
        last[key] = (number, rnd)
        if before is None or number <= before[0] + 1:
            continue
        prev_no, prev = before
        span = (prev.last_event + 1, rnd.first_event - 1) if rnd.first_event > prev.last_event + 1 else None
        why = (
            f"no event of this round is archived: round ids jump from {prev.round_id} (its last event"
            f" {prev.last_event}) to {rnd.round_id} (its first event {rnd.first_event})"
        )
        count = number - prev_no - 1
        if count > MAX_NAMED:
            first, final = f"{session}-{prev_no + 1:04d}", f"{session}-{number - 1:04d}"
            out.append(
                AbsentRound(rnd.site, rnd.table_id, f"{first}..{final}", span, f"{count} rounds: {why}")
            )
            continue
        for n in range(prev_no + 1, number):
            out.append(AbsentRound(rnd.site, rnd.table_id, f"{session}-{n:04d}", span, why))
    return out


def _inside(lo: int, hi: int, rounds: list[ArchivedRound]) -> bool:
    return any(r.first_event <= lo and hi <= r.last_event for r in rounds)


def _runs(holes: tuple[Hole, ...]) -> list[list[Hole]]:
    """Adjacent holes (a pending run beside a given-up one) as one run of ids not archived."""
    runs: list[list[Hole]] = []
    for hole in holes:
        if runs and runs[-1][-1].hi + 1 == hole.lo:
            runs[-1].append(hole)
        else:
            runs.append([hole])
    return runs


def _hole_text(run: list[Hole]) -> str:
    lo, hi = run[0].lo, run[-1].hi
    ids = f"event {lo}" if lo == hi else f"events {lo}-{hi}"
    kinds = []
    for kind, what in (
        (HoleKind.MISSING, "given up, the table no longer has"),
        (HoleKind.PENDING, "pending"),
    ):
        part = " ".join(h.text() for h in run if h.kind is kind)
        if part:
            kinds.append(f"{what} {part}")
    return f"{ids} of the table not archived ({'; '.join(kinds)}): rounds in them are not listed"


def absent_rounds(rounds: list[ArchivedRound], covers: dict[tuple[str, str], Coverage]) -> list[AbsentRound]:
    """The absent rounds and the window's holes outside the archived rounds, in event order per table."""
    out = _jumps(rounds)
    for (site, table_id), cov in sorted(covers.items()):
        mine = [r for r in rounds if (r.site, r.table_id) == (site, table_id)]
        for run in _runs(cov.holes):
            lo, hi = run[0].lo, run[-1].hi
            if not _inside(lo, hi, mine):
                out.append(AbsentRound(site, table_id, None, (lo, hi), _hole_text(run)))
        if cov.truncated:
            out.append(AbsentRound(site, table_id, None, None, cov.summary()))
    return out
