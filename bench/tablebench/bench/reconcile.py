"""After a run: prove from the journal, the MQTT consumer's log and the emulator's record that nothing was
lost.

- every round in the journal is settled or void by the rules: each exported round is replayed with the rules
  engine and must be valid with the same net result the table journaled (PT-2001 r.62: the record settles
  complaints);
- every event id reached the consumer exactly once after dedupe, in order, with no gap (docs/mqtt.md);
- the jackpot meter equals seed + contributions - hits (when the table journals a jackpot);
- zero cards attributed to the wrong hand: the journal's cards, in order, are exactly the cards the emulator
  dealt, and the replay accepts every card's recipient.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.journal.export import final_rounds, sessions
from controller.journal.outbox import last_event_id
from controller.journal.store import Journal
from controller.rules.rounds import InvalidRound, replay

CARD_KINDS = ("card", "card_out_while_closed")


@dataclass
class Reconciliation:
    rounds: int = 0
    settled: int = 0
    void: int = 0
    replay_failures: list[str] = field(default_factory=list)
    events_committed: int = 0
    events_received: int = 0
    duplicates: int = 0
    gaps: list[int] = field(default_factory=list)
    out_of_order: int = 0
    order_examples: list[str] = field(default_factory=list)
    stale_states: int = 0
    outbox_left: int = 0
    invalid_messages: list[tuple[str, str]] = field(default_factory=list)
    cards_dealt: int = 0
    cards_journaled: int = 0
    card_mismatches: list[str] = field(default_factory=list)
    jackpot: str = "not journaled"
    chain_ok: bool = False

    @property
    def ok(self) -> bool:
        return (
            not self.replay_failures
            and not self.gaps
            and self.out_of_order == 0
            and self.outbox_left == 0
            and not self.invalid_messages
            and not self.card_mismatches
            and self.cards_dealt == self.cards_journaled
            and self.chain_ok
            and not self.jackpot.startswith("MISMATCH")
        )

    def lines(self) -> list[str]:
        mark = "OK " if self.ok else "FAIL"
        return [
            f"[{mark}] reconciliation",
            f"  rounds in journal      {self.rounds}: settled {self.settled}, void {self.void}, "
            f"replay failures {len(self.replay_failures)}",
            *(f"    - {f}" for f in self.replay_failures[:10]),
            f"  events                 committed {self.events_committed}, received {self.events_received} "
            f"(duplicates dropped {self.duplicates}), gaps {len(self.gaps)}, "
            f"out of order {self.out_of_order}, left in outbox {self.outbox_left}",
            *(f"    - missing event ids {self.gaps[:20]}" for _ in [0] if self.gaps),
            *(f"    - {x}" for x in self.order_examples),
            *(
                f"    - {self.stale_states} retained state documents arrived after a newer one of their topic"
                for _ in [0]
                if self.stale_states
            ),
            f"  schema                 invalid messages {len(self.invalid_messages)}",
            *(f"    - {t}: {e}" for t, e in self.invalid_messages[:5]),
            f"  cards                  dealt by the shoe {self.cards_dealt}, "
            f"in the journal {self.cards_journaled}, wrong card/hand {len(self.card_mismatches)}",
            *(f"    - {m}" for m in self.card_mismatches[:10]),
            f"  jackpot                {self.jackpot}",
            f"  journal hash chain     {'intact' if self.chain_ok else 'BROKEN'}",
        ]


def _net(settlement: dict[str, Any]) -> int | None:
    v = settlement.get("total_net")
    return int(v) if isinstance(v, int) else None


def check_rounds(journal: Journal, rep: Reconciliation) -> None:
    settled_net = {
        r.data["round_id"]: _net(r.data.get("settlement", {}))
        for r in journal.records(kinds=("round_settled",))
    }
    for sid in sessions(journal):
        for data in final_rounds(journal, sid):
            rep.rounds += 1
            rid = data.get("round_id")
            if data.get("void"):
                rep.void += 1
                continue
            try:
                result = replay(data["description"]).to_json()
            except (InvalidRound, KeyError, ValueError) as exc:
                rep.replay_failures.append(f"{rid}: replay refused: {exc}")
                continue
            if not result.get("valid"):
                rep.replay_failures.append(f"{rid}: not valid by the rules: {result.get('errors')}")
                continue
            given = [(c.get("card"), c.get("recipient")) for c in data["description"].get("cards", [])]
            understood = [(c.get("card"), c.get("to")) for c in result.get("cards", [])]
            if given != understood:
                rep.replay_failures.append(
                    f"{rid}: the rules put the cards elsewhere: {understood} vs {given}"
                )
                continue
            replayed = _net(result.get("settlement") or result)
            if rid in settled_net and replayed is not None and replayed != settled_net[rid]:
                rep.replay_failures.append(f"{rid}: table net {settled_net[rid]} != replay net {replayed}")
                continue
            rep.settled += 1


def check_cards(journal: Journal, dealt: list[dict[str, Any]], rep: Reconciliation) -> None:
    """The journal's cards in arrival order must be the emulator's dealt cards in the same order."""
    journaled = [r.data for r in journal.records(kinds=CARD_KINDS)]
    rep.cards_dealt, rep.cards_journaled = len(dealt), len(journaled)
    for i, (shoe, rec) in enumerate(zip(dealt, journaled, strict=False)):
        code = rec.get("card") or rec.get("code")
        if code != shoe["code"]:
            rep.card_mismatches.append(
                f"card #{i + 1} (shoe_seq {shoe['shoe_seq']}): shoe dealt {shoe['code']}, journal has {code} "
                f"for {rec.get('recipient')} in {rec.get('round_id')}"
            )


def check_events(
    journal_db: Path, first_seen: list[int], received: int, rep: Reconciliation, since: int = 0
) -> None:
    conn = sqlite3.connect(f"file:{journal_db}?mode=ro", uri=True)
    try:
        rep.events_committed = last_event_id(conn)
        rep.outbox_left = int(conn.execute("SELECT count(*) FROM outbox").fetchone()[0])
    finally:
        conn.close()
    rep.events_received = len(first_seen)
    rep.duplicates = received - len(first_seen)
    seen = set(first_seen)
    rep.gaps = [i for i in range(since + 1, rep.events_committed + 1) if i not in seen]
    high = 0
    for eid in first_seen:
        if eid < high:
            rep.out_of_order += 1
            if len(rep.order_examples) < 5:
                rep.order_examples.append(f"event {eid} first arrived after event {high}")
        high = max(high, eid)


UNIT = 10_000  # meter units per minor unit (controller/jackpot/meter.py)


def check_jackpot(journal: Journal, rep: Reconciliation) -> None:
    """meter == seed + contributions - hits (+ the reserve moved in at a reset, PT-2001 r.44), summed
    independently from the journal's jackpot records (r.40, r.43: every contribution counted exactly)."""
    recs = [r.data for r in journal.records(kinds=("jackpot",))]
    if not recs:
        return
    seed = contrib = paid = reserve = 0
    other: set[str] = set()
    for d in recs:
        kind = str(d.get("kind"))
        if kind == "seed":
            seed = int(d.get("meter_units", 0))
        elif kind == "contribute":
            contrib += int(d.get("to_meter_units", 0))
        elif kind == "pay":
            paid += int(d.get("amount", 0)) * UNIT
        elif kind == "reset":  # after the top prize: the seed again plus the reserve pool (r.44)
            seed += int(d.get("seed", 0)) * UNIT
            reserve += int(d.get("reserve_units", 0))
        elif kind not in ("freeze", "reject"):  # those two move no money
            other.add(kind)
    meter = recs[-1].get("meter_units")
    if not isinstance(meter, int):
        rep.jackpot = f"unverified: last jackpot record has no meter_units ({len(recs)} records)"
    elif other:
        rep.jackpot = f"unverified: records of kinds {sorted(other)} (corrections) in the journal"
    elif seed + contrib + reserve - paid == meter:
        rep.jackpot = (
            f"meter {meter / UNIT:.4f} = seed {seed / UNIT:.0f} + contributions {contrib / UNIT:.4f} "
            f"+ reserve {reserve / UNIT:.4f} - hits {paid / UNIT:.0f} (minor units, {len(recs)} records)"
        )
    else:
        rep.jackpot = (
            f"MISMATCH: meter units {meter} != seed {seed} + contributions {contrib} + reserve {reserve} "
            f"- hits {paid}"
        )


def reconcile(
    journal_db: Path,
    *,
    dealt: list[dict[str, Any]] | None,
    first_seen_ids: list[int],
    received: int,
    invalid: list[tuple[str, str]],
    table_id: str,
    since: int = 0,
    stale_states: int = 0,
) -> Reconciliation:
    rep = Reconciliation(invalid_messages=list(invalid), stale_states=stale_states)
    journal = Journal(journal_db, table_id=table_id)
    try:
        rep.chain_ok = journal.verify().ok
        check_rounds(journal, rep)
        if dealt is not None:
            check_cards(journal, dealt, rep)
        check_jackpot(journal, rep)
    finally:
        journal.close()
    check_events(journal_db, first_seen_ids, received, rep, since)
    return rep
