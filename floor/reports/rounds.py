"""Archived rounds as replayable round descriptions (docs/rounds.md), rebuilt from the table's own events.

A table publishes each round as events: ``events/round`` ``dealing`` (bets, burn count), every ``events/card``
(the hole card ``hidden`` until ``hole_card_revealed`` names it), ``decision`` events, ``void`` and the
``events/settlement``. A decision the dealer took for "the hand whose turn it is" names no seat: the seat and
hand come from the ``state/round`` document published just before it (its ``turn``). Whatever cannot be rebuilt
(an archived event missing, a hole card never revealed, a decision whose turn is unknown) is listed in
``missing`` and the round is marked ``complete: false``: an inspector sees what the archive lacks instead of a
wrong replay.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from controller.actions import engine_action
from floor.common.rows import one_row


@dataclass
class ArchivedRound:
    site: str
    table_id: str
    round_id: str
    started: datetime | None = None
    settled: datetime | None = None
    void: bool = False
    profile: str | None = None
    burn: int | None = None
    bets: list[dict[str, Any]] | None = None
    cards: list[Any] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    settlement: dict[str, Any] | None = None
    missing: list[str] = field(default_factory=list)
    first_event: int = 0
    last_event: int = 0
    hidden_at: int | None = None  # index in cards of the hole card awaiting its reveal
    decided: tuple[Any, Any] | None = None  # (seat, hand) of a decision since the last card

    def description(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": 1,
            "comment": f"archived round {self.round_id} of table {self.site}/{self.table_id}",
            "profile": self.profile or "",
        }
        if self.burn:
            out["burn_before_deal"] = self.burn
        out["bets"] = self.bets or []
        out["cards"] = self.cards
        out["decisions"] = self.decisions
        return out

    @property
    def complete(self) -> bool:
        return not self.all_missing()

    def all_missing(self) -> list[str]:
        out = list(self.missing)
        if self.bets is None:
            out.append("the round's dealing event (bets) is not archived")
        if not self.profile:
            out.append("the profile is not known (no settlement or session event archived)")
        if self.hidden_at is not None:
            out.append("the hole card was never revealed")
        if self.settlement is None and not self.void:
            out.append("no settlement archived (round unfinished or its settlement event missing)")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "table": self.table_id,
            "round_id": self.round_id,
            "started": self.started.isoformat() if self.started else None,
            "settled": self.settled.isoformat() if self.settled else None,
            "void": self.void,
            "complete": self.complete,
            "absent": False,
            "missing": self.all_missing(),
            "events": [self.first_event, self.last_event],
            "description": self.description(),
            "settlement": self.settlement,
        }


def _recipient(text: Any) -> Any:
    if isinstance(text, str) and text.startswith("seat:"):
        parts = text.split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            return {"seat": int(parts[1]), "hand": int(parts[2])}
    return text if text in ("dealer", "burn", "held", "void") else None


def load_rounds(
    conn: psycopg.Connection, site: str | None, table_id: str, since: datetime, until: datetime | None = None
) -> list[ArchivedRound]:
    """Every round of one table that started at or after ``since`` (and before ``until``), in order: the events
    of the window read by index ranges over the table's times and ids (a table commits its event ids in time
    order), never its history before or after."""
    site_row = conn.execute(
        "SELECT DISTINCT site FROM floor_tables WHERE table_id = %s AND (%s::text IS NULL OR site = %s)",
        (table_id, site, site),
    ).fetchall()
    rounds: list[ArchivedRound] = []
    for (site_name,) in site_row:
        first = conn.execute(
            "SELECT event_id FROM events WHERE table_id = %s AND topic = 'events/round' AND ts >= %s"
            " AND site = %s AND data->>'phase' = 'dealing' ORDER BY ts, event_id LIMIT 1",
            (table_id, since, site_name),
        ).fetchone()
        if first is None:
            continue
        start = int(first[0])
        last = _last_before(conn, site_name, table_id, until) if until is not None else None
        cur = conn.execute(  # of a state/round document only its turn is read (the rest is most of its size)
            "SELECT event_id, topic, ts, CASE WHEN topic = 'state/round' THEN jsonb_build_object('turn', data->'turn')"
            " ELSE data END FROM events WHERE site = %s AND table_id = %s AND event_id >= %s"
            " AND (%s::bigint IS NULL OR event_id <= %s)"
            " AND topic = ANY(%s) AND (%s::timestamptz IS NULL OR ts < %s) ORDER BY event_id",
            (site_name, table_id, start, last, last, list(_ROUND_TOPICS), until, until),
        )
        rounds.extend(_fold(site_name, table_id, cur, start, conn))
    return rounds


_ROUND_TOPICS = ("events/round", "events/card", "events/settlement", "events/session", "state/round")


def _last_before(conn: psycopg.Connection, site: str, table_id: str, until: datetime) -> int:
    """The id of the table's last event of ``_ROUND_TOPICS`` before ``until`` (0: none): one index lookup per
    topic."""
    return int(
        one_row(
            conn.execute(
                "SELECT coalesce(max(e.event_id), 0) FROM unnest(%s::text[]) AS t(topic) CROSS JOIN LATERAL"
                " (SELECT event_id FROM events WHERE table_id = %s AND topic = t.topic AND ts < %s AND site = %s"
                " ORDER BY ts DESC, event_id DESC LIMIT 1) e",
                (list(_ROUND_TOPICS), table_id, until, site),
            ),
            "last event's id before the window's end",
        )[0]
    )


def _fold(site: str, table_id: str, rows: Any, start: int, conn: psycopg.Connection) -> list[ArchivedRound]:
    by_id: dict[str, ArchivedRound] = {}
    order: list[ArchivedRound] = []
    profile: str | None = _session_profile(conn, site, table_id, start)
    turn: dict[str, Any] | None = None
    for event_id, topic, ts, data in rows:
        if topic == "events/session":
            if data.get("action") == "opened" and isinstance(data.get("profile"), str):
                profile = data["profile"]
            continue
        if topic == "state/round":
            turn = data.get("turn") if isinstance(data.get("turn"), dict) else None
            continue
        rid = data.get("round_id")
        if not isinstance(rid, str | int):
            continue
        rid = str(rid)
        rnd = by_id.get(rid)
        if rnd is None:
            if not order and (topic != "events/round" or data.get("phase") != "dealing"):
                continue  # the tail of the round before the first one that started in the window
            # a round seen without its dealing event lost it to a hole: listed, incomplete (bets unknown)
            rnd = by_id[rid] = ArchivedRound(site, table_id, rid, started=ts, profile=profile)
            rnd.first_event = event_id
            order.append(rnd)
        rnd.last_event = event_id
        if topic == "events/round":
            _round_event(rnd, data, turn)
        elif topic == "events/card":
            _implicit_hit(rnd, data, turn)
            _card_event(rnd, data, event_id)
        elif topic == "events/settlement":
            rnd.settlement, rnd.settled = data, ts
            if isinstance(data.get("profile"), str):
                rnd.profile = data["profile"]
    _check_gaps(conn, site, table_id, order)
    return order


def _session_profile(conn: psycopg.Connection, site: str, table_id: str, before: int) -> str | None:
    row = conn.execute(
        "SELECT data->>'profile' FROM events WHERE site = %s AND table_id = %s AND topic = 'events/session'"
        " AND data->>'action' = 'opened' AND event_id < %s ORDER BY event_id DESC LIMIT 1",
        (site, table_id, before),
    ).fetchone()
    return row[0] if row else None


def _round_event(rnd: ArchivedRound, data: dict[str, Any], turn: dict[str, Any] | None) -> None:
    phase = data.get("phase")
    if phase == "dealing":
        rnd.bets = [b for b in data.get("bets") or [] if isinstance(b, dict)]
        rnd.burn = data.get("burn") if isinstance(data.get("burn"), int) else None
    elif phase == "decision":
        action = str(data.get("action"))
        decision: dict[str, Any] = {"action": engine_action(action)}  # the round file's name
        seat, hand = data.get("seat"), data.get("hand")
        if seat is None and turn and turn.get("kind") == "player":
            seat, hand = turn.get("seat"), turn.get("hand") if hand is None else hand
        if seat is None:
            rnd.missing.append(f"decision {action!r}: no seat given and the turn before it is not archived")
        else:
            decision["seat"] = seat
            decision["hand"] = hand if isinstance(hand, int) else 0
        if isinstance(data.get("amount"), int):
            decision["amount"] = data["amount"]
        rnd.decisions.append(decision)
        rnd.decided = (decision.get("seat"), decision.get("hand"))
    elif phase == "hole_card_revealed" and rnd.hidden_at is not None:
        entry = rnd.cards[rnd.hidden_at]
        entry["card"] = str(data.get("card"))
        rnd.hidden_at = None
    elif phase == "void":
        rnd.void = True


def _implicit_hit(rnd: ArchivedRound, data: dict[str, Any], turn: dict[str, Any] | None) -> None:
    """A card taken by the hand whose turn it is, with no decision since the last card, is that hand's hit
    (docs/mqtt.md: the dealer need not press ``hit`` first); the round file needs the decision written."""
    to = _recipient(data.get("recipient"))
    if (
        isinstance(to, dict)
        and turn
        and turn.get("kind") == "player"
        and (turn.get("seat"), turn.get("hand")) == (to["seat"], to["hand"])
        and rnd.decided != (to["seat"], to["hand"])
    ):
        rnd.decisions.append({"action": "hit", "seat": to["seat"], "hand": to["hand"]})
    rnd.decided = None


def _card_event(rnd: ArchivedRound, data: dict[str, Any], event_id: int) -> None:
    """The card as the round file's input (docs/rounds.md): ``recipient`` is where the table's engine put it
    (informational), ``to`` where the dealer put it. The live engine is never told where a card went but for a
    card drawn after the round was settled (PT-2001 r.19, MO-2004 art.6.1: the dealer drew for himself), so
    ``to`` is the engine's placement for a counted card, ``dealer`` for a card after the settlement, and absent
    for a card the engine voided or held in play (a face-up card, MO-2004 art.5.1.1: the file's ``face_up``
    voids it again)."""
    to = _recipient(data.get("recipient"))
    entry: dict[str, Any] = {"card": data.get("code")}
    if data.get("face_up") is True:
        entry["face_up"] = True
    if to is not None:
        entry["recipient"] = to
    if rnd.settlement is not None:
        entry["to"] = "dealer"  # drawn after the round was settled: void (r.19) or, where kept, the dealer's
    elif to is not None and to not in ("void", "held"):
        entry["to"] = to
    if data.get("hidden"):
        entry["card"] = None
        rnd.hidden_at = len(rnd.cards)
    elif not isinstance(data.get("code"), str):
        rnd.missing.append(f"card event {event_id} has no card code")
    rnd.cards.append(entry)


def _check_gaps(conn: psycopg.Connection, site: str, table_id: str, rounds: list[ArchivedRound]) -> None:
    """Each round's event ids not archived between its first and last event: the runs of ids missing over all
    the rounds' span, read once (an index-only range of the table's ids)."""
    if not rounds:
        return
    runs = conn.execute(
        "SELECT prev + 1, event_id - 1 FROM (SELECT event_id, lag(event_id) OVER (ORDER BY event_id) AS prev"
        " FROM events WHERE site = %s AND table_id = %s AND event_id BETWEEN %s AND %s) s"
        " WHERE event_id > prev + 1 ORDER BY 1",
        (site, table_id, min(r.first_event for r in rounds), max(r.last_event for r in rounds)),
    ).fetchall()
    starts = [int(lo) for lo, _hi in runs]
    for rnd in rounds:
        missing = 0
        for lo, hi in runs[max(bisect.bisect_right(starts, rnd.first_event) - 1, 0) :]:
            if lo > rnd.last_event:
                break
            missing += max(0, min(int(hi), rnd.last_event) - max(int(lo), rnd.first_event) + 1)
        if missing:
            rnd.missing.append(f"{missing} event(s) of the table between {rnd.first_event} and {rnd.last_event}"
                           " are not archived")  # fmt: skip
