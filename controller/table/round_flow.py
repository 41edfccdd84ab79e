"""A round from the engine's phases to its settlement or void, and what follows it (PT-2001 r.12-37, r.61-62)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.rules.cards import Card
from controller.rules.settlement import Settlement
from controller.rules.types import CardOutcome
from controller.table.base import LID_OPEN_TIMEOUT_S
from controller.table.concern import CycleFace, Handlers, LidFace, SetupFace
from controller.table.gate import Gate
from controller.table.machine_names import TableState, Trigger
from controller.table.record_kinds import RecordKind
from controller.table.reporting import hole_card_hidden, settlement_event
from controller.table.rounds import EngineFactory, RoundTracker, jsonable
from controller.table.sink import EffectSink
from controller.table.state import PendingReplacement


@dataclass
class RoundSlice:
    """The round and what follows it (snapshot keys of the same names)."""

    round: RoundTracker | None = None
    round_void: bool = False
    round_no: int = 0
    last_seats: list[int] = field(default_factory=list)
    uninserted: list[str] = field(
        default_factory=list
    )  # settled rounds whose cards are not in the shuffler (r.61-62)
    pending_replacement: PendingReplacement | None = None
    hole_revealed: str | None = None  # round whose hole card has been published (PT-2001 r.17)


class RoundFlow:
    """Owns the round (``RoundSlice``); cards.py deals into it, dealer.py starts and ends it."""

    name: ClassVar[str] = "round_flow"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: SetupFace,
        jackpot: JackpotSeam,
        lid: LidFace,
        shoe_cycle: CycleFace,
        *,
        engine_factory: EngineFactory,
        make_card: Callable[[str], Card],
    ) -> None:
        self.fx, self.gate, self.setup, self.jackpot = fx, gate, setup, jackpot
        self.lid, self.shoe_cycle = lid, shoe_cycle
        self.engine_factory, self.make_card = engine_factory, make_card
        self.s = RoundSlice()

    def handlers(self) -> Handlers:
        return Handlers(supervisor={"void_round": self.sv_void_round})

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        s = self.s
        pending = s.pending_replacement
        snap.update(
            round=s.round.to_dict() if s.round else None,
            round_void=s.round_void,
            round_no=s.round_no,
            last_seats=s.last_seats,
            uninserted=s.uninserted,
            pending_replacement=pending.to_dict() if pending is not None else None,
            hole_revealed=s.hole_revealed,
        )

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap)

    def sv_void_round(self, user: str, args: dict[str, Any]) -> None:
        if not self.round_active():
            raise Rejected("no round in progress to void")
        self.await_replacement(None)
        self.void(str(args.get("reason") or f"voided by supervisor {user}"), user=user)

    # ---- read by the other concerns
    @property
    def round(self) -> RoundTracker:
        """The round in play, typed as there: the callers check the state (a round phase) or ``round_active``
        first, or compare it with None where there may be none."""
        return cast(RoundTracker, self.s.round)

    @property
    def uninserted(self) -> list[str]:
        return self.s.uninserted

    @property
    def last_seats(self) -> list[int]:
        return self.s.last_seats

    @property
    def round_void(self) -> bool:
        return self.s.round_void

    @property
    def pending(self) -> PendingReplacement | None:
        return self.s.pending_replacement

    def await_replacement(self, pending: PendingReplacement | None) -> None:
        """A damaged or unreadable card awaits the chief inspector (PT-2001 r.51); None: no longer."""
        self.s.pending_replacement = pending

    def card(self, code: str, face_up: bool, *, late: bool) -> CardOutcome:
        """The rules engine takes the card (``late``: drawn after the dealer stood, PT-2001 r.19); it may
        refuse it (raises, nothing changed)."""
        return self.round.card(code, face_up, to_dealer=late)

    def dealt(self, entry: dict[str, Any]) -> None:
        """The card's entry in the round's record (round_final, PT-2001 r.62)."""
        self.round.cards.append(entry)

    def number_next(self) -> int:
        self.s.round_no += 1
        return self.s.round_no

    def number_back(self) -> None:
        self.s.round_no -= 1  # the rules refused the bets: no round was started

    def begin(self, round_id: str, bets: list[dict[str, Any]], burn: int, first_round: bool) -> None:
        """No more bets: the round starts (the rules engine may refuse the bets: raises, nothing changed)."""
        self.s.round = RoundTracker(
            round_id,
            self.setup.rules_profile,
            bets,
            burn,
            first_round,
            engine_factory=self.engine_factory,
            make_card=self.make_card,
        )
        self.s.round_void = False

    def end(self, *, batch: bool) -> str | None:
        """Next round: the round is over (``batch``: its cards went to the discard); returns its id."""
        finished = self.current_round_id()
        if batch:
            self.s.uninserted = []
        self.s.round = None
        return finished

    def new_session(self) -> None:
        self.s.round_no, self.s.uninserted = 0, []

    def drop(self) -> None:
        self.s.round = None  # the table closes

    def current_round_id(self) -> str | None:
        return self.s.round.round_id if self.s.round is not None else None

    def players(self, bets_placed: int) -> int:
        """Players at the table for the warning card's position (PT-2001 r.9)."""
        s = self.s
        return len(s.round.bets) if s.round else bets_placed or len(s.last_seats)

    def inserted(self) -> None:
        """The rounds' cards went into the shuffler: their records are final (r.62)."""
        self.s.uninserted = []

    def _engine_phase(self) -> str:
        phase = str(self.round.engine.phase)
        return {"initial_deal": "dealing", "insurance": "players", "players": "players"}.get(phase, phase)

    def advance(self) -> None:
        """Move on where the rules leave no choice (deal done, players done, dealer done)."""
        phase = self._engine_phase()
        self.fx.extend(self.jackpot.on_progress(self.round, phase))  # PT-2001 r.42: first 2-4 cards
        # dealing (or interrupted there)
        if self.gate.may(Trigger.INITIAL_DEALT) and phase != TableState.DEALING:
            self.fx.extend(self.jackpot.after_initial_deal(self.round.round_id, self.round.cards))
            if phase == TableState.PLAYERS:
                self.gate.go(Trigger.INITIAL_DEALT)  # during a fault: where it resumes
        if phase == TableState.DEALER and self.gate.may(Trigger.TO_DEALER):
            self.gate.go(Trigger.TO_DEALER)
        if phase == "complete":
            self.settle()

    def settle(self) -> None:
        rnd = self.round
        settlement = jsonable(rnd.engine.settle())
        self.fx.record(RecordKind.ROUND_SETTLED, round_id=rnd.round_id, settlement=settlement)
        self.finish_round(settlement, void=False)
        self.gate.go(Trigger.SETTLE)
        self.fx.event("settlement", **settlement_event(rnd.round_id, settlement))
        if self.gate.state == TableState.SETTLED:
            self.after_round()  # else when the fault clears (ShoeLink.resync)

    def void(self, reason: str, **details: Any) -> None:
        """PT-ONLINE-2015 r.27-28: a round whose cards or result can't be known is void; bets returned."""
        rnd = self.round
        returned = {b["seat"]: b["amount"] + sum((b.get("side_bets") or {}).values()) for b in rnd.bets}
        self.fx.record(
            RecordKind.ROUND_VOID, round_id=rnd.round_id, reason=reason, bets_returned=returned, **details
        )
        self.fx.alert(
            "round_void", "critical", f"round {rnd.round_id} void: {reason} (PT-ONLINE-2015 r.27-28)"
        )
        self.s.round_void = True
        profile = self.setup.rules_profile
        shoe_burn = profile.burn_before_round(shoe_start=True)
        burnt = sum(1 for c in rnd.cards if c.get("recipient") == "burn")
        if (
            rnd.burn_before_deal == shoe_burn != profile.burn_before_round(shoe_start=False)
            and burnt < shoe_burn
        ):
            # PT-2001 r.10 / MO-2004 art.4.1: the shoe's burn comes before the first deal; a first round voided
            # before it was complete dealt nothing, so the next round burns it again
            self.shoe_cycle.burn_again()
        self.finish_round({"void": True, "bets_returned": returned}, void=True)
        self.gate.go(Trigger.VOID)  # during a fault: it resumes in settled
        self.fx.event("round", round_id=rnd.round_id, phase="void", reason=reason, bets_returned=returned)
        if self.gate.state == TableState.SETTLED:
            self.after_round()

    def finish_round(self, settlement: Settlement | dict[str, Any], *, void: bool) -> None:
        self.record_final(settlement, void=void)
        self.s.uninserted.append(self.round.round_id)
        self.s.last_seats = sorted(int(b["seat"]) for b in self.round.bets)

    def record_final(self, settlement: Settlement | dict[str, Any], *, void: bool) -> None:
        """The round's record for export/replay (PT-2001 r.62); a later one for the round supersedes it."""
        rnd = self.round
        try:
            description = jsonable(rnd.engine.description())
        except Exception as exc:  # a void round may be too incomplete to describe: any error, not a refusal
            description = {"error": str(exc)}
        self.fx.record(
            RecordKind.ROUND_FINAL,
            round_id=rnd.round_id,
            session_id=self.setup.session.id,
            void=void,
            description=description,
            settlement=jsonable(settlement),
            cards=rnd.cards,
        )

    def after_round(self) -> None:
        """Continuous shuffler: open the lid automatically for the round's cards (PT-2001 r.59-60)."""
        if self.setup.tp.continuous and self.s.pending_replacement is not None:
            # PT-2001 r.51: a damaged card awaits the chief inspector (warning light on): no automatic opening
            # meanwhile; the lid cycle starts once the card is replaced (``CardFlow.sv_replace_card``).
            self.fx.record(
                RecordKind.LID_CYCLE_DEFERRED, reason="a damaged card awaits replacement (PT-2001 r.51)"
            )
            return
        if self.setup.tp.continuous:
            self.lid.open_by(self.fx.now + LID_OPEN_TIMEOUT_S)

    def round_in_play(self) -> bool:
        """Cards go to the round: it is dealt or played (or was, when a fault interrupted it): one that can settle."""
        return self.round is not None and self.gate.may(Trigger.SETTLE)

    def round_active(self) -> bool:
        """A round with cards on the table, not settled (or interrupted there by a fault): one that can be void."""
        return self.round is not None and self.gate.may(Trigger.VOID)

    def hole_card_event(self) -> None:
        """The dealer's hole card turned over: one events/round message, the first input it is seen after."""
        rnd = self.s.round
        if rnd is None:
            return
        engine = rnd.engine
        if (
            engine is not None
            and engine.profile.hole_card
            and len(engine.dealer) >= 2
            and not hole_card_hidden(engine)
            and self.s.hole_revealed != rnd.round_id
        ):
            self.s.hole_revealed = rnd.round_id  # the dealer turned the hole card over (PT-2001 r.17)
            self.fx.event(
                "round", round_id=rnd.round_id, phase="hole_card_revealed", card=str(engine.dealer[1])
            )

    def restore(self, snap: dict[str, Any]) -> None:
        pending = snap["pending_replacement"]
        rnd = snap["round"]
        self.s = RoundSlice(
            round=RoundTracker.restore(
                rnd, self.setup.rules_profile, engine_factory=self.engine_factory, make_card=self.make_card
            )
            if rnd
            else None,
            round_void=snap["round_void"],
            round_no=snap["round_no"],
            last_seats=snap["last_seats"],
            uninserted=snap["uninserted"],
            pending_replacement=PendingReplacement.from_dict(pending) if pending is not None else None,
            hole_revealed=snap.get("hole_revealed"),
        )
