"""The dealer's inputs: bets, jackpot chips, no more bets, play decisions, next round."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

from controller.actions import DEALER_PLAY, engine_action
from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.rules.errors import RulesError
from controller.table import machine as m
from controller.table.base import seat_arg
from controller.table.concern import CycleFace, FaultsFace, Handlers, LidFace, RoundsFace, SetupFace
from controller.table.gate import Gate
from controller.table.machine_names import TableState, Trigger
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import Bet, Unlock
from drivers import events as ev
from drivers.events import LidState


def blocked_reason(state: TableState, faults: Iterable[str], awaiting_replacement: bool) -> str | None:
    """Why no dealer input is accepted in ``state`` (PT-2001 r.51), or None. ``faults``: the raised ones' names,
    sorted."""
    if state in m.FAULT_STATES:
        names = ", ".join(faults) or "resynchronising with the shoe"
        return f"dealing blocked: {names} (PT-2001 r.51)"
    if awaiting_replacement:
        return "dealing blocked: a damaged card awaits replacement by a chief inspector (PT-2001 r.51)"
    return None


@dataclass
class BetSlice:
    """Snapshot keys ``bets`` and ``chips``: the bets placed for the next round."""

    bets: dict[str, Bet] = field(default_factory=dict)  # seat (str, JSON keys) -> its bet
    chips: list[int] = field(default_factory=list)  # seats with a jackpot chip (PT-2001 r.41b)


class DealerInputs:
    """Owns the bets placed (``BetSlice``); ``no_more_bets`` turns them into a round (round_flow.py)."""

    name: ClassVar[str] = "dealer_inputs"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: SetupFace,
        jackpot: JackpotSeam,
        rounds: RoundsFace,
        shoe_cycle: CycleFace,
        lid: LidFace,
        faults: FaultsFace,
    ) -> None:
        self.fx, self.gate, self.setup, self.jackpot = fx, gate, setup, jackpot
        self.rounds, self.shoe_cycle, self.lid, self.faults = rounds, shoe_cycle, lid, faults
        self.s = BetSlice()

    def handlers(self) -> Handlers:
        return Handlers(
            dealer={
                "place_bet": self.place_bet,
                "clear_bet": self.clear_bet,
                "jackpot_chip": self.jackpot_chip,
                "no_more_bets": self.close_bets,
                **{action: partial(self.play, action) for action in DEALER_PLAY},
                "next_round": self.call_next_round,
            }
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["bets"] = {seat: bet.to_dict() for seat, bet in self.s.bets.items()}
        snap["chips"] = self.s.chips

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap)

    def close_bets(self, args: dict[str, Any]) -> None:
        self.no_more_bets()

    def call_next_round(self, args: dict[str, Any]) -> None:
        self.next_round(bool(args.get("reshuffle")))

    @property
    def bets(self) -> dict[str, Bet]:
        return self.s.bets

    @property
    def chips(self) -> list[int]:
        return self.s.chips

    def take_all(self) -> dict[str, Bet]:
        """The table closes (or a session opens): the bets come off the table, returned as they were."""
        bets = self.s.bets
        self.s = BetSlice()
        return bets

    def restore(self, snap: dict[str, Any]) -> None:
        self.s = BetSlice(
            bets={seat: Bet.from_dict(b) for seat, b in snap["bets"].items()}, chips=snap["chips"]
        )

    def dealing_blocked(self) -> str | None:
        """Why no dealer input is accepted now (PT-2001 r.51), or None."""
        return blocked_reason(self.gate.state, self.faults.names(), self.rounds.pending is not None)

    def blocked(self) -> None:
        why = self.dealing_blocked()
        if why is not None:
            raise Rejected(why)

    def clear_bet(self, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.CLEAR_BET, "clear_bet")
        seat = seat_arg(args, self.setup.tp.seats)
        if self.s.bets.pop(str(seat), None) is None:
            raise Rejected(f"no bet on seat {seat}")
        if seat in self.s.chips:
            self.s.chips.remove(seat)
        self.fx.record(RecordKind.BET_CLEARED, seat=seat)

    def jackpot_chip(self, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.JACKPOT_CHIP, "jackpot_chip")
        seat = seat_arg(args, self.setup.tp.seats)
        if str(seat) not in self.s.bets:
            raise Rejected(f"seat {seat} has no main bet: no jackpot chip (PT-2001 r.45)")
        if seat in self.s.chips:
            raise Rejected(f"seat {seat} already has its one jackpot chip (PT-2001 r.47)")
        self.jackpot.manual_chip(seat)  # r.41b; refused while the jackpot is unplayable (r.41)
        self.s.chips.append(seat)
        self.fx.record(RecordKind.JACKPOT_CHIP, seat=seat)

    def place_bet(self, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.PLACE_BET, "place_bet")
        seat, amount = seat_arg(args, self.setup.tp.seats), args.get("amount")
        tp = self.setup.tp
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise Rejected(f"amount must be an integer in minor units, got {amount!r}")
        rp = self.setup.rules_profile
        if not tp.min_bet <= amount <= tp.max_bet:
            rule = rp.cite("bet_limits") if amount < tp.min_bet else rp.cite("max_bet")
            raise Rejected(f"bet {amount} outside the table limits {tp.min_bet}..{tp.max_bet} ({rule})")
        if rp.multiple_of_min and amount % tp.min_bet:
            # Refused at the bet, not only when the rules engine sees the round at no more bets.
            raise Rejected(
                f"bet {amount} is not a multiple of the minimum {tp.min_bet} ({rp.cite('bet_limits')})"
            )
        side = args.get("side_bets") or {}
        if not isinstance(side, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in side.values()
        ):
            raise Rejected(f"side_bets must map a side bet name to a positive integer amount, got {side!r}")
        self.s.bets[str(seat)] = Bet(amount=amount, side_bets=dict(side))
        self.fx.record(RecordKind.BET_PLACED, seat=seat, amount=amount, side_bets=side)
        self.fx.result = {"seat": seat, "amount": amount}

    def no_more_bets(self) -> None:
        self.gate.allow(Trigger.CLOSE_BETS, "no_more_bets")
        if not self.s.bets:
            raise Rejected("no bets on the table: bets come before the first card (PT-2001 r.13)")
        round_id = f"{self.setup.session.id}-{self.rounds.number_next():04d}"
        main_bets = sorted(int(s) for s in self.s.bets)
        self.s.chips, chip_fx = self.jackpot.collect(
            round_id, main_bets, list(self.s.chips), seats=self.setup.tp.seats, now=self.fx.now
        )  # PT-2001 r.41, r.45, r.47: the chips accepted for this round
        self.fx.extend(chip_fx)
        bets = [
            {
                "seat": int(seat),
                "amount": b.amount,
                **({"side_bets": b.side_bets} if b.side_bets else {}),
                **({"jackpot_chip": True} if int(seat) in self.s.chips else {}),
            }
            for seat, b in sorted(self.s.bets.items(), key=lambda kv: int(kv[0]))
        ]
        # PT-2001 r.10 / MO-2004 art.4: shoe burn before the first round of a shoe, round burn every round
        first_round = self.shoe_cycle.first_round
        burn = self.setup.rules_profile.burn_before_round(shoe_start=first_round)
        try:
            # MO-2004 art.5.1.1: first card after the shoe-start burns
            self.rounds.begin(round_id, bets, burn, first_round)
        except RulesError as exc:  # the rules refuse the bets (RoundError, RuleViolation: they name the rule)
            self.rounds.number_back()
            raise Rejected(f"bets refused by the rules: {exc}") from exc
        except (
            Exception
        ) as exc:  # not the rules' own error (a fault of the engine): refused alike, never a crash
            self.rounds.number_back()
            raise Rejected(f"bets refused by the rules: {exc}") from exc
        self.shoe_cycle.round_started(round_id)  # r.11: the last round of the shoe, if the warning came
        chips, self.s.bets, self.s.chips = list(self.s.chips), {}, []
        self.setup.count_round()
        self.gate.go(Trigger.CLOSE_BETS)
        self.fx.record(RecordKind.ROUND_STARTED, round_id=round_id, bets=bets, burn=burn, jackpot_chips=chips)
        self.fx.event("round", round_id=round_id, phase="dealing", bets=bets, burn=burn)
        self.fx.extend(self.jackpot.on_no_more_bets(round_id, chips))  # r.48: chips collected, then the deal
        self.gate.go(Trigger.START_DEAL)
        self.fx.result = {"round_id": round_id}

    def play(self, action: str, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.PLAY, action)
        kwargs: dict[str, Any] = {}
        for key in ("amount", "seat", "hand"):
            value = args.get(key)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise Rejected(f"{key} must be a non-negative integer, got {value!r}")
            kwargs[key] = value
        try:
            self.rounds.round.act(engine_action(action), kwargs)
        except RulesError as exc:  # RuleViolation / RoundError: the rules' refusal, naming the rule
            raise Rejected(str(exc)) from exc
        except Exception as exc:  # an argument the engine does not check (a hand past the seat's: IndexError)
            raise Rejected(str(exc)) from exc
        self.fx.record(RecordKind.DEALER_ACTION, round_id=self.rounds.round.round_id, action=action, **kwargs)
        self.fx.event("round", round_id=self.rounds.round.round_id, phase="decision", action=action, **kwargs)
        self.rounds.advance()

    def next_round(self, early: bool = False) -> None:
        """``early``: the bank reshuffles after this round (MO-2004 art.2.2.2), before the warning card."""
        self.gate.allow(Trigger.NEXT_ROUND, "next_round")
        if early and (
            self.setup.tp.continuous or not self.setup.rules_profile.shoe.reshuffle_after_any_round
        ):
            raise Rejected(
                "reshuffle after any round is a shoe rule of MO-2004 art.2.2.2: not for this profile or a "
                "continuous shuffler (the shoe's last round comes with the warning card, PT-2001 r.11)"
            )
        if self.lid.position == LidState.OPEN:
            raise Rejected(
                "the lid is open: insert the round's cards and close the lid first (PT-2001 r.59-60)"
            )
        if (
            self.setup.tp.continuous
            and self.gate.state == TableState.SETTLED
            and self.lid.unlock == Unlock.AUTO
        ):
            self.lid.not_opened("next round called before the lid opened", self.rounds.uninserted)
        # batch shoe: the cards went to the discard; the next round begins
        finished = self.rounds.end(batch=not self.setup.tp.continuous)
        if early and finished is not None:
            self.fx.record(RecordKind.RESHUFFLE_REQUESTED, after_round=finished, rule="MO-2004 art.2.2.2")
            self.shoe_cycle.last_round_is(finished)  # the bank's choice: this round closes the shoe
        if not self.setup.tp.continuous and finished is not None and self.shoe_cycle.last_round == finished:
            self.gate.go(
                Trigger.RESHUFFLE
            )  # r.11 (or MO-2004 art.2.2.2): that was the last round of the shoe
            self.fx.cmd(ev.StartShuffle())
            self.fx.record(RecordKind.RESHUFFLE, after_round=finished)
            return
        self.gate.go(Trigger.NEXT_ROUND)
        self.fx.record(RecordKind.BETTING_OPEN)
