"""One transaction per batch of changes: the archived envelopes taken, the meter moved, the hits ordered, the
journal appended and the link's row written together, or none of it (a crash at any point leaves the link as
it was at the last commit, and the envelopes not taken are taken again: exactly once, by ``progressive_inputs``'
key (link, site, table_id, event_id)).

The link's row is locked ``FOR UPDATE`` for the transaction: hits are ordered by commit order across tables, and
each is frozen at the meter as it stands at that moment (PT-2001 r.43, r.50)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg

from controller.jackpot.hits import Combination
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef
from floor.common.notify import notify
from floor.progressive import journal, ledger
from floor.progressive import meter as mt
from floor.progressive.intake import (
    Contribution,
    HitPending,
    Input,
    Paid,
    Refused,
    Rejected,
    Source,
    Verified,
    dequeue,
    parse,
)

log = logging.getLogger("floor.progressive")


class LinkMissing(RuntimeError):
    """The link has no row (never created)."""


@dataclass
class Outcome:
    taken: int = 0  # envelopes taken now (applied or refused)
    refused: int = 0
    duplicates: int = 0  # already taken (another controller, a re-read)
    contributions: int = 0
    hits: list[int] = field(default_factory=list)  # hit ids ordered now

    @property
    def changed(self) -> bool:
        return self.taken > 0


Key = tuple[str, str, int]  # (site, table_id, event_id)


def _key(src: Source) -> Key:
    return (src.site, src.table_id, src.event_id)


class _Batch:
    """The state of one transaction: the locked link, the cursor, what was done. The batch's rows are written
    together at its end (``flush``): the claims first, in one statement, the rest pipelined."""

    def __init__(self, cur: psycopg.Cursor, link: ledger.Link, inputs: list[Input]) -> None:
        self.cur = cur
        self.link = link
        self.out = Outcome()
        self.journal_rows: list[journal.Row] = []
        self.contributions: list[tuple[Any, ...]] = []
        self.refusals: list[tuple[Any, ...]] = []
        self.claimed = self._claim_all(inputs)

    def _claim_all(self, inputs: list[Input]) -> set[Key]:
        """Take every envelope of the batch once: those another transaction took already come back not claimed."""
        if not inputs:
            return set()
        srcs = [x.source for x in inputs]
        actions = [(x.action if isinstance(x, Refused) else _ACTION[type(x)])[:32] for x in inputs]
        rows = self.cur.execute(
            "INSERT INTO progressive_inputs (link, site, table_id, event_id, action, outcome)"
            " SELECT %s, * , 'applied' FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[])"
            " ON CONFLICT DO NOTHING RETURNING site, table_id, event_id",
            (
                self.link.link,
                [s.site for s in srcs],
                [s.table_id for s in srcs],
                [s.event_id for s in srcs],
                actions,
            ),
        ).fetchall()
        return {(r[0], r[1], int(r[2])) for r in rows}

    def record(self, kind: str, data: dict[str, Any]) -> None:
        head, row = journal.chain(self.link.link, self.link.journal, kind, data)
        self.journal_rows.append(row)
        self.link = replace(self.link, journal=head)

    def claim(self, src: Source, action: str) -> bool:
        """Whether this transaction took the envelope (False: taken already, by an earlier transaction)."""
        if _key(src) not in self.claimed:
            self.out.duplicates += 1
            return False
        self.claimed.discard(_key(src))  # the same envelope twice in one batch: once
        self.out.taken += 1
        return True

    def refuse(self, src: Source, action: str, reason: str) -> None:
        """A taken envelope that changes nothing: its reason kept, journaled and alerted."""
        self.out.refused += 1
        self.refusals.append((reason, self.link.link, src.site, src.table_id, src.event_id))
        where = {"site": src.site, "table": src.table_id, "event_id": src.event_id, "action": action}
        self.record("refused", where | {"reason": reason})
        raise_alert(
            self.cur,
            TableRef(src.site, src.table_id),
            "progressive_refused",
            "warning",
            f"linked progressive {self.link.link}: {action} of event {src.event_id} refused: {reason}",
            where | {"link": self.link.link, "reason": reason},
            f"progressive:{self.link.link}:{src.site}:{src.table_id}:{src.event_id}",
        )
        log.warning(
            "link %s: %s %s/%s refused: %s", self.link.link, action, src.table_id, src.event_id, reason
        )

    def flush(self) -> None:
        if self.refusals:
            self.cur.executemany(
                "UPDATE progressive_inputs SET outcome = 'refused', reason = %s"
                " WHERE link = %s AND site = %s AND table_id = %s AND event_id = %s",
                self.refusals,
            )
        if self.contributions:
            self.cur.executemany(
                "INSERT INTO progressive_contributions (link, site, table_id, event_id, round_id, chips,"
                " amount_minor, to_meter_units, to_reserve_units, to_overflow_units, ts)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                self.contributions,
            )
        journal.insert(self.cur, self.journal_rows)


def _member(b: _Batch, src: Source) -> str | None:
    if src.table_id not in b.link.params.members:
        return f"table {src.table_id} is not a member of link {b.link.link}"
    return None


def _contribution(b: _Batch, x: Contribution) -> None:
    if not b.claim(x.source, "contribution"):
        return
    why = _member(b, x.source)
    if why is None and x.bet_value != b.link.params.bet_value:
        why = f"bet_value {x.bet_value} is not the link's {b.link.params.bet_value}"
    if why is None and x.currency is not None and x.currency != b.link.params.currency:
        why = f"currency {x.currency} is not the link's {b.link.params.currency}"
    if why is not None:
        b.refuse(x.source, "contribution", why)
        return
    new, shares = mt.contribute(b.link.meter, b.link.params, x.amount_minor)
    b.link = replace(b.link, meter=new)
    src = x.source
    b.contributions.append(
        (
            b.link.link,
            src.site,
            src.table_id,
            src.event_id,
            x.round_id,
            x.chips,
            x.amount_minor,
            shares.to_meter,
            shares.to_reserve,
            shares.to_overflow,
            src.ts,
        ),
    )
    b.record(
        "contribution",
        {
            "table": src.table_id,
            "event_id": src.event_id,
            "round_id": x.round_id,
            "amount_minor": x.amount_minor,
            "to_meter_units": shares.to_meter,
            "to_reserve_units": shares.to_reserve,
            "to_overflow_units": shares.to_overflow,
            "meter_units": new.meter_units,
        },
    )
    b.out.contributions += 1


def _hits(b: _Batch, group: list[HitPending]) -> None:
    """One table's round of hits (PT-2001 r.50: shared together), ordered and frozen now."""
    winners: list[tuple[int, Combination]] = []
    sources: dict[int, HitPending] = {}
    for x in group:
        if not b.claim(x.source, "hit_pending"):
            continue
        why = _member(b, x.source)
        if why is None and x.seat in sources:
            why = f"seat {x.seat} already has a hit in round {x.round_id} (one jackpot chip per seat, PT-2001 r.47)"
        if why is not None:
            b.refuse(x.source, "hit_pending", why)
            continue
        winners.append((x.seat, x.combination))
        sources[x.seat] = x
    if not winners:
        return
    before = b.link.meter
    new, won, reseed = mt.hit(before, b.link.params, winners)
    order = b.link.next_order
    ordered = []
    for p in won:
        x = sources[p.seat]
        row = b.cur.execute(
            "INSERT INTO progressive_hits (link, hit_order, site, table_id, event_id, round_id, seat, combination,"
            " amount_minor, meter_units_before, status) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'pending')"
            " RETURNING hit_id",
            (
                b.link.link,
                order,
                x.source.site,
                x.source.table_id,
                x.source.event_id,
                x.round_id,
                p.seat,
                p.combination.name,
                p.amount_minor,
                before.meter_units,
            ),
        ).fetchone()
        assert row is not None
        ordered.append(
            {
                "hit_id": row[0],
                "order": order,
                "table": x.source.table_id,
                "event_id": x.source.event_id,
                "round_id": x.round_id,
                "seat": p.seat,
                "combination": p.combination.name,
                "amount_minor": p.amount_minor,
                "capped": p.capped,
            }
        )
        b.out.hits.append(int(row[0]))
        order += 1
    b.link = replace(b.link, meter=new, next_order=order)
    data: dict[str, Any] = {
        "hits": ordered,
        "meter_units_before": before.meter_units,
        "meter_units": new.meter_units,
    }
    if reseed is not None:
        data["reseed"] = {
            "base_units": reseed.base,
            "from_overflow_units": reseed.from_overflow,
            "from_reserve_units": reseed.from_reserve,
        }
    b.record("hit", data)


def _settle_target(b: _Batch, src: Source, hit_id: int, action: str) -> ledger.Hit | None:
    h = ledger.hit(b.cur, b.link.link, hit_id)
    why = _member(b, src)
    if why is None and h is None:
        why = f"hit {hit_id}: no such hit on link {b.link.link}"
    elif why is None and h is not None and h.table_id != src.table_id:
        why = f"hit {hit_id} is table {h.table_id}'s, not {src.table_id}'s"
    elif why is None and h is not None and h.status is not ledger.HitStatus.PENDING:
        why = f"hit {hit_id} is {h.status.value} already"
    if why is not None:
        b.refuse(src, action, why)
        return None
    return h


def _settled(b: _Batch, src: Source, h: ledger.Hit, status: ledger.HitStatus) -> None:
    b.cur.execute(
        "UPDATE progressive_hits SET status = %s, settled_at = now(), settled_event_id = %s WHERE hit_id = %s",
        (status.value, src.event_id, h.hit_id),
    )


def _paid(b: _Batch, x: Paid) -> None:
    if not b.claim(x.source, "paid"):
        return
    h = _settle_target(b, x.source, x.hit_id, "paid")
    if h is None:
        return
    if x.amount_minor != h.amount_minor:
        b.refuse(
            x.source, "paid", f"hit {h.hit_id}: paid {x.amount_minor}, the frozen prize is {h.amount_minor}"
        )
        return
    _settled(b, x.source, h, ledger.HitStatus.PAID)
    b.record(
        "paid",
        {
            "hit_id": h.hit_id,
            "table": h.table_id,
            "event_id": x.source.event_id,
            "amount_minor": h.amount_minor,
        },
    )


def _verified(b: _Batch, x: Verified) -> None:
    if not b.claim(x.source, "verified"):
        return
    h = _settle_target(b, x.source, x.hit_id, "verified")
    if h is not None:
        b.record("verified", {"hit_id": h.hit_id, "table": h.table_id, "event_id": x.source.event_id})


def _rejected(b: _Batch, x: Rejected) -> None:
    if not b.claim(x.source, "rejected"):
        return
    h = _settle_target(b, x.source, x.hit_id, "rejected")
    if h is None:
        return
    _settled(b, x.source, h, ledger.HitStatus.REJECTED)
    new = mt.reject(b.link.meter, h.amount_minor)
    b.link = replace(b.link, meter=new)
    b.record(
        "rejected",
        {
            "hit_id": h.hit_id,
            "table": h.table_id,
            "event_id": x.source.event_id,
            "returned_minor": h.amount_minor,
            "reason": x.reason,
            "meter_units": new.meter_units,
        },
    )


def _refused(b: _Batch, x: Refused) -> None:
    if b.claim(x.source, x.action):
        b.refuse(x.source, x.action, x.reason)


_ACTION: dict[type, str] = {
    Verified: "verified",
    Contribution: "contribution",
    HitPending: "hit_pending",
    Paid: "paid",
    Rejected: "rejected",
}
_SINGLE: dict[type, Callable[[_Batch, Any], None]] = {
    Contribution: _contribution,
    Verified: _verified,
    Paid: _paid,
    Rejected: _rejected,
    Refused: _refused,
}


def _groups(inputs: list[Input]) -> list[Input | list[HitPending]]:
    """The inputs in order, a table's consecutive hits of one round joined (shared together, PT-2001 r.50)."""
    out: list[Input | list[HitPending]] = []
    for x in inputs:
        last = out[-1] if out else None
        if (
            isinstance(x, HitPending)
            and isinstance(last, list)
            and (last[0].source.table_id, last[0].round_id) == (x.source.table_id, x.round_id)
        ):
            last.append(x)
        else:
            out.append([x] if isinstance(x, HitPending) else x)
    return out


def take(conn: psycopg.Connection, link_name: str, envelopes: list[tuple[Source, Any]]) -> Outcome:
    """Apply the envelopes to the link in one transaction (nothing of it if any step fails)."""
    with conn.transaction():
        cur = conn.cursor()
        link = ledger.read(cur, link_name, lock=True)
        if link is None:
            raise LinkMissing(f"link {link_name}: not created")
        ours = [(s, d) for s, d in envelopes if isinstance(d, dict) and d.get("link") == link_name]
        inputs = [parse(s, d) for s, d in ours]
        b = _Batch(cur, link, inputs)
        for item in _groups(inputs):
            if isinstance(item, list):
                _hits(b, item)
            else:
                _SINGLE[type(item)](b, item)
        b.flush()
        dequeue(cur, link_name, [s for s, _ in envelopes])
        if b.out.changed:
            ledger.save(cur, b.link)
            notify(cur)  # the dashboard's link page
    return b.out
