"""Cards leaving the shoe: read, unreadable, out of sequence, stray, dealt to a seat or the dealer; a damaged card
replaced (PT-2001 r.51)."""

from __future__ import annotations

from typing import Any, ClassVar

from controller.effects import Event, EventKind, Rejected
from controller.rules.errors import RulesError
from controller.table import machine as m
from controller.table.base import _card_valid
from controller.table.concern import CycleFace, FaultsFace, Handlers, LidFace, RoundsFace, SetupFace
from controller.table.faults import SHOE_LINE_ALERT
from controller.table.gate import Gate
from controller.table.machine_names import TableState
from controller.table.record_kinds import RecordKind
from controller.table.reporting import card_event, is_hole_card
from controller.table.rounds import jsonable
from controller.table.sink import EffectSink
from controller.table.state import PendingReplacement
from drivers import events as ev


class CardFlow:
    """No state of its own: a card is counted by the shoe cycle, dealt into the round (round_flow.py), or
    raises a shoe-line fault (faults.py)."""

    name: ClassVar[str] = "card_flow"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: SetupFace,
        shoe_cycle: CycleFace,
        rounds: RoundsFace,
        faults: FaultsFace,
        lid: LidFace,
    ) -> None:
        self.fx, self.gate, self.setup, self.lid = fx, gate, setup, lid
        self.shoe_cycle, self.rounds, self.faults = shoe_cycle, rounds, faults

    def handlers(self) -> Handlers:
        return Handlers(
            device={ev.CardOut: self.on_card_out, ev.CardUnreadable: self.on_card_unreadable},
            supervisor={"replace_card": self.sv_replace_card},
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        return None  # no state of its own

    def restore_from(self, snap: dict[str, Any]) -> None:
        return None

    def on_card_out(self, e: ev.CardOut) -> None:
        if not self._card_came_out(e.shoe_seq, e.code):
            return
        code = e.code
        if self.gate.state == TableState.CLOSED:
            self.fx.record(RecordKind.CARD_OUT_WHILE_CLOSED, card=code, shoe_seq=e.shoe_seq)
            return
        if (
            self.gate.state == TableState.SETTLED
            and self.rounds.round is not None
            and not self.rounds.round_void
        ):
            self._deal(code, e.shoe_seq, e.face_up, late=True)  # PT-2001 r.19: drawn after the dealer stood
            return
        if self.rounds.round_in_play():
            # a card out before the fault, delivered after it: it is known
            if self.gate.state in m.FAULT_STATES:
                self.fx.record(
                    RecordKind.CARD_DURING_FAULT, card=code, shoe_seq=e.shoe_seq, fault=self.gate.state
                )
        else:
            self._stray_card(code, e.shoe_seq, "card drawn outside the dealing of a round")
            return
        if self.rounds.pending is not None:
            self._stray_card(
                code, e.shoe_seq, "card drawn while a damaged card awaits replacement (PT-2001 r.51)"
            )
            return
        self._deal(code, e.shoe_seq, e.face_up)

    def on_card_unreadable(self, e: ev.CardUnreadable) -> None:
        if not self._card_came_out(e.shoe_seq, None):
            return
        what = "damaged" if e.damaged else "unreadable"
        self.fx.record(RecordKind.CARD_UNREADABLE, shoe_seq=e.shoe_seq, damaged=e.damaged, at=self.fx.ts())
        in_round = self.rounds.round_in_play()
        if in_round:
            self.rounds.await_replacement(PendingReplacement(shoe_seq=e.shoe_seq, damaged=e.damaged))
        self.fx.alert(
            "card_unreadable",
            "critical" if in_round else "warning",
            f"{what} card #{e.shoe_seq}: a chief inspector replaces it at once; reported (PT-2001 r.51)",
            shoe_seq=e.shoe_seq,
            damaged=e.damaged,
        )

    def _card_came_out(self, shoe_seq: int, code: str | None) -> bool:
        """Count a card out; False (and a shoe-line fault) when the frame cannot be a card the shoe dealt."""
        last = self.shoe_cycle.last_seq
        restart = self.shoe_cycle.take_seq_restart()  # the shoe rebooted: its shoe_seq starts again at 1
        if last and shoe_seq <= last and not (restart and shoe_seq == 1):
            # A valid CRC is not proof of a card (issue 13 §5): a number the shoe already used is a replayed,
            # forged or misread frame. Never dealt; the table stops until an authorised person clears it.
            reason = f"card #{shoe_seq} after #{last}: shoe_seq repeated or out of order"
            self.faults.shoe_line_fault("shoe_sequence", reason, shoe_seq=shoe_seq, last_seq=last, card=code)
            self.fx.alert("shoe_sequence", "critical", f"{reason}: {SHOE_LINE_ALERT}", shoe_seq=shoe_seq)
            self._claimed_twice(shoe_seq, code)
            return False
        impossible: dict[str, Any] | None = None
        impossible_why = ""
        if (
            code is not None
            and self.setup.tp is not None
            and self.rounds.round is not None
            and not self.rounds.round_void
        ):
            rnd = self.rounds.round
            # phase_state: "settled" also when a fault came after the settlement
            if self.rounds.round_active() or self.gate.phase_state() == TableState.SETTLED:
                seen = sum(1 for c in rnd.cards if c.get("card") == code)
                if seen >= self.setup.tp.decks:  # this one would be one more than the decks hold
                    decks = self.setup.tp.decks
                    impossible = {
                        "shoe_seq": shoe_seq,
                        "card": code,
                        "round_id": rnd.round_id,
                        "decks": decks,
                    }
                    impossible_why = (
                        f"{code} {seen + 1} times in round {rnd.round_id}: {decks} deck(s) hold {decks}"
                    )
        if shoe_seq != last + 1 and shoe_seq != 1 and last != 0:
            missing = shoe_seq - last - 1
            self.fx.record(RecordKind.CARD_GAP, expected=last + 1, got=shoe_seq)
            if missing > 0 and self.rounds.round_active():
                self.rounds.void("cards came out that the controller did not see", missing=missing)
        # Counted out even when impossible: a card with a fresh number left the machine (a foreign card slipped
        # in, say); the shoe's own count at the resync says whether it did.
        self.shoe_cycle.card_out(shoe_seq)
        if impossible is not None:
            self.faults.shoe_line_fault("card_count", impossible_why, **impossible)
            self.fx.alert("card_count", "critical", f"{impossible_why}: {SHOE_LINE_ALERT}", **impossible)
            return False  # never dealt
        return True

    def _claimed_twice(self, shoe_seq: int, code: str | None) -> None:
        """Two different cards claiming one shoe number: one of them is not the card the shoe dealt, and which
        seat holds which can no longer be told, so the round is void (PT-ONLINE-2015 r.27-28) — the card
        identities compared, not only the count (a forged frame taking a real card's number keeps the count)."""
        rnd = self.rounds.round
        if code is None or rnd is None or self.rounds.round_void or not self.rounds.round_active():
            return
        dealt = next((c for c in rnd.cards if c.get("shoe_seq") == shoe_seq), None)
        if dealt is None or dealt.get("card") == code:
            return  # a repeated frame of the same card: the fault alone (nothing was misattributed)
        self.rounds.void(
            f"two different cards claimed shoe number {shoe_seq} ({dealt.get('card')} dealt, then {code}): "
            "the round's cards can no longer be attributed",
            shoe_seq=shoe_seq,
            cards=[dealt.get("card"), code],
        )

    def _stray_card(self, code: str, shoe_seq: int, why: str) -> None:
        self.fx.record(
            RecordKind.CARD_DISCARDED, card=code, shoe_seq=shoe_seq, reason=why, state=self.gate.state
        )
        self.fx.alert(
            "dealer_error", "warning", f"{why}: {code} goes to the discard (PT-2001 r.58)", card=code
        )

    def _deal(self, code: str, shoe_seq: int, face_up: bool, *, late: bool = False) -> None:
        rnd = self.rounds.round
        try:
            outcome = self.rounds.card(code, face_up, late=late)
        except (
            RulesError
        ) as exc:  # the rules refused the card (RoundError, CardError): to the discard, recorded
            self._stray_card(code, shoe_seq, f"card refused by the rules engine: {exc}")
            return
        except Exception as exc:  # not the rules' own error (a fault of the engine): the same, never a crash
            self._stray_card(code, shoe_seq, f"card refused by the rules engine: {exc}")  # (CONTRIBUTING)
            return
        errors = [{"rule": err.rule, "message": err.message} for err in outcome.errors]
        entry = {
            "shoe_seq": shoe_seq,
            "card": code,
            "face_up": face_up,
            "recipient": jsonable(outcome.recipient) if outcome.recipient is not None else "void",
            "counts": outcome.counts,  # PT-2001 r.19: a card drawn on 17+ does not count
            "errors": errors,
        }
        self.rounds.dealt(entry)
        self.fx.record(RecordKind.CARD, round_id=rnd.round_id, **entry)
        self.fx.event("card", **card_event(rnd.round_id, entry, hidden=is_hole_card(rnd.engine, entry)))
        for err in errors:
            # PT-2001 r.19 / MO-2004 art.5.1: raised as it happens, the card that does not count is marked
            self.fx.record(RecordKind.DEALER_ERROR, round_id=rnd.round_id, card=code, **err)
            self.fx.event(
                "dealer_error", round_id=rnd.round_id, code=code, reason=err["message"], rule=err["rule"]
            )
            self.fx.alert("dealer_error", "warning", f"{err['rule']}: {err['message']}", card=code)
        if late:  # the round's record (still contestable, r.62) now shows the card that does not count
            self.rounds.record_final(rnd.engine.settle(), void=False)
            return
        self.rounds.advance()

    def sv_replace_card(self, user: str, args: dict[str, Any]) -> None:
        """PT-2001 r.51: a damaged card is replaced at once by a chief inspector and reported."""
        pending = self.rounds.pending
        if pending is None:
            raise Rejected("no damaged or unreadable card awaits replacement")
        code = str(args.get("card", "")).upper()
        if not _card_valid(code):
            raise Rejected(f"card must be a code like 'AS' or 'TD', got {args.get('card')!r}")
        self.rounds.await_replacement(None)
        report = {"shoe_seq": pending.shoe_seq, "damaged": pending.damaged, "card": code, "user": user}
        self.fx.record(RecordKind.CARD_REPLACED, at=self.fx.ts(), **report)
        at = len(self.fx.items)  # the report goes before the card's own events, as it happens
        hidden = False
        rnd = self.rounds.round
        if self.rounds.round_in_play():
            self._deal(code, pending.shoe_seq, False)
            last = rnd.cards[-1] if rnd.cards else None
            hidden = bool(last and last["shoe_seq"] == pending.shoe_seq and is_hole_card(rnd.engine, last))
        elif self.gate.state == TableState.SETTLED and self.rounds.uninserted and self.lid.unlock is None:
            self.rounds.after_round()  # the lid cycle deferred while the card awaited replacement (r.51, r.59)
        # Reported to the inspection service (r.51); a replacement that became the dealer's face-down hole
        # card is withheld like its events/card until the dealer turns it over (PT-2001 r.17).
        shown = ({k: v for k, v in report.items() if k != "card"} | {"hidden": True}) if hidden else report
        self.fx.items.insert(at, Event(EventKind.SHOE, jsonable({"procedure": "card_replaced", **shown})))
