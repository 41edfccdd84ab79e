"""A round from the engine's phases to its settlement or void, and what follows it (PT-2001 r.12-37, r.61-62)."""

from __future__ import annotations

from typing import Any

from controller.table import machine as m
from controller.table.base import LID_OPEN_TIMEOUT_S, CoreBase
from controller.table.reporting import (
    settlement_event,
)
from controller.table.rounds import (
    jsonable,
)


class RoundFlow(CoreBase):
    def _engine_phase(self) -> str:
        phase = str(self.round.engine.phase)
        return {"initial_deal": "dealing", "insurance": "players", "players": "players"}.get(phase, phase)

    def _phase_state(self) -> str:
        """The round phase the table is in, or was in when a fault interrupted it."""
        return self.resume_to if self.state in m.FAULT_STATES else self.state

    def _advance(self) -> None:
        """Move on where the rules leave no choice (deal done, players done, dealer done)."""
        phase = self._engine_phase()
        self._fx.extend(self.jackpot.on_progress(self.round, phase))  # PT-2001 r.42: first 2-4 cards
        if self.may_initial_dealt() and phase != "dealing":  # dealing (or interrupted there)
            self._fx.extend(self.jackpot.after_initial_deal(self.round.round_id, self.round.cards))
            if phase == "players":
                self._go("initial_dealt")  # during a fault: where it resumes
        if phase == "dealer" and self.may_to_dealer():
            self._go("to_dealer")
        if phase == "complete":
            self._settle()

    def _settle(self) -> None:
        rnd = self.round
        settlement = jsonable(rnd.engine.settle())
        self._record("round_settled", round_id=rnd.round_id, settlement=settlement)
        self._finish_round(settlement, void=False)
        self._go("settle")
        self._event("settlement", **settlement_event(rnd.round_id, settlement))
        if self.state == "settled":
            self._after_round()  # else when the fault clears (_resync)

    def _void(self, reason: str, **details: Any) -> None:
        """PT-ONLINE-2015 r.27-28: a round whose cards or result can't be known is void; bets returned."""
        rnd = self.round
        returned = {b["seat"]: b["amount"] + sum((b.get("side_bets") or {}).values()) for b in rnd.bets}
        self._record("round_void", round_id=rnd.round_id, reason=reason, bets_returned=returned, **details)
        self._alert("round_void", "critical", f"round {rnd.round_id} void: {reason} (PT-ONLINE-2015 r.27-28)")
        self.round_void = True
        profile = self.rules_profile
        shoe_burn = profile.burn_before_round(shoe_start=True)
        burnt = sum(1 for c in rnd.cards if c.get("recipient") == "burn")
        if (
            rnd.burn_before_deal == shoe_burn != profile.burn_before_round(shoe_start=False)
            and burnt < shoe_burn
        ):
            # PT-2001 r.10 / MO-2004 art.4.1: the shoe's burn comes before the first deal; a first round voided
            # before it was complete dealt nothing, so the next round burns it again
            self.shoe.first_round = True
        self._finish_round({"void": True, "bets_returned": returned}, void=True)
        self._go("void")  # during a fault: it resumes in settled
        self._event("round", round_id=rnd.round_id, phase="void", reason=reason, bets_returned=returned)
        if self.state == "settled":
            self._after_round()

    def _finish_round(self, settlement: Any, *, void: bool) -> None:
        self._record_final(settlement, void=void)
        self.uninserted.append(self.round.round_id)
        self.last_seats = sorted(int(b["seat"]) for b in self.round.bets)

    def _record_final(self, settlement: Any, *, void: bool) -> None:
        """The round's record for export/replay (PT-2001 r.62); a later one for the round supersedes it."""
        rnd = self.round
        try:
            description = jsonable(rnd.engine.description())
        except Exception as exc:  # a void round may be too incomplete to describe
            description = {"error": str(exc)}
        self._record(
            "round_final",
            round_id=rnd.round_id,
            session_id=self.session.id,
            void=void,
            description=description,
            settlement=jsonable(settlement),
            cards=rnd.cards,
        )

    def _after_round(self) -> None:
        """Continuous shuffler: open the lid automatically for the round's cards (PT-2001 r.59-60)."""
        if self.tp.continuous and self.pending_replacement is not None:
            # PT-2001 r.51: a damaged card awaits the chief inspector (warning light on): no automatic opening
            # meanwhile; the lid cycle starts once the card is replaced (``_sv_replace_card``).
            self._record("lid_cycle_deferred", reason="a damaged card awaits replacement (PT-2001 r.51)")
            return
        if self.tp.continuous:
            self.lid.deadline = self.now + LID_OPEN_TIMEOUT_S
            self._grant_opening("auto", open_lid=True)

    def _round_in_play(self) -> bool:
        """Cards go to the round: it is dealt or played (or was, when a fault interrupted it): one that can settle."""
        return self.round is not None and self.may_settle()

    def _round_active(self) -> bool:
        """A round with cards on the table, not settled (or interrupted there by a fault): one that can be void."""
        return self.round is not None and self.may_void()
