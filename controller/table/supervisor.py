"""Supervisor actions that belong to no single concern: who may do what, open and close the table, alerts."""

from __future__ import annotations

from typing import Any, ClassVar

from controller.actions import TECHNICIAN_ACTIONS
from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.table.base import PROFILE_NAME_CHARS, SUPERVISOR_ROLES
from controller.table.concern import (
    BetsFace,
    CycleFace,
    DeckCheckFace,
    DutyFace,
    FaultsFace,
    Handlers,
    LidFace,
    LinkFace,
    PlayersFace,
    RoundsFace,
    SessionControl,
)
from controller.table.gate import Gate
from controller.table.machine_names import TableState, Trigger
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import Unlock
from drivers import events as ev
from drivers.events import LidState


class SupervisorActions:
    """No state of its own: opening and closing the table changes the other concerns through their methods."""

    name: ClassVar[str] = "supervisor"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: SessionControl,
        jackpot: JackpotSeam,
        *,
        link: LinkFace,
        shoe_cycle: CycleFace,
        deck_checks: DeckCheckFace,
        rounds: RoundsFace,
        dealer: BetsFace,
        duty: DutyFace,
        players: PlayersFace,
        lid: LidFace,
        faults: FaultsFace,
    ) -> None:
        self.fx, self.gate, self.setup, self.jackpot = fx, gate, setup, jackpot
        self.link, self.shoe_cycle, self.deck_checks, self.rounds = link, shoe_cycle, deck_checks, rounds
        self.dealer, self.duty, self.lid, self.faults = dealer, duty, lid, faults
        self.players = players

    def handlers(self) -> Handlers:
        return Handlers(
            supervisor={
                "open_table": self.sv_open_table,
                "close_table": self.sv_close_table,
                "ack_alert": self.sv_ack_alert,
            }
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        return None  # no state of its own

    def restore_from(self, snap: dict[str, Any]) -> None:
        return None

    def authorise(self, user: str, role: str, action: str) -> None:
        """Who may do what (PT-2001 r.49, r.51); the action itself is the concern's that declares it (dispatch.py)."""
        if not user:
            raise Rejected("supervisor actions must name the user")
        if role not in SUPERVISOR_ROLES and not (role == "technician" and action in TECHNICIAN_ACTIONS):
            rule = "PT-2001 r.49" if action.startswith("jackpot_") else "PT-2001 r.51"  # r.49: verify and pay
            raise Rejected(f"{action} needs a chief inspector (supervisor), not role {role!r} ({rule})")

    def sv_open_table(self, user: str, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.OPEN_TABLE, "open_table")  # closed, no service fault (machine.py)
        profile = args.get("profile") or self.setup.profile_name
        if not profile:
            raise Rejected("open_table needs a rule profile")
        if not isinstance(profile, str) or not set(profile) <= PROFILE_NAME_CHARS or len(profile) > 64:
            raise Rejected("open_table takes a rule profile's name (e.g. 'pt-2001'), never a path")
        pinned = args.get("pinned")
        if isinstance(pinned, dict):  # the service's digests and profile text, journaled with open_table
            self.setup.pin(pinned)
        default = "continuous" if self.link.continuous else "batch"  # unknown: continuous
        shuffler = args.get("shuffler", default)
        if shuffler not in ("continuous", "batch"):
            raise Rejected(f"shuffler must be 'continuous' or 'batch', got {shuffler!r}")
        try:
            self.setup.set_profile(str(profile), shuffler)
        except (
            Exception
        ) as exc:  # ProfileError, or the loader's own (a missing file: OSError): refused with it
            raise Rejected(f"cannot load profile {profile!r}: {exc}") from exc
        if isinstance(pinned, dict):
            self.fx.record(
                RecordKind.CONFIGURATION_PINNED, **{k: v for k, v in pinned.items() if k != "profile_text"}
            )
        self.fx.extend(self.jackpot.on_open_table(args, self.setup.rules_profile))  # r.38: config AND profile
        allowed = self.setup.rules_profile.shoe.shufflers
        if (shuffler == "continuous" and "continuous" not in allowed) or (
            shuffler == "batch" and "manual" not in allowed
        ):
            raise Rejected(
                f"profile {profile} does not allow a {shuffler} shoe (allowed: {', '.join(allowed)})"
            )
        self.setup.open_session(user, self.fx.now)
        self.rounds.new_session()
        self.dealer.take_all()
        self.shoe_cycle.new_session()
        self.gate.go(Trigger.OPEN_TABLE)
        if self.setup.tp.continuous:
            # r.53-54: loaded in packets with the chief inspector present
            self.lid.grant_opening(Unlock.LOADING, unlock=True, open_lid=True)
        else:
            self.fx.cmd(ev.StartShuffle())  # batch shoe: shuffled, then cut (PT-2001 r.8)
        self.fx.result = {"session_id": self.setup.session.id}

    def sv_close_table(self, user: str, args: dict[str, Any]) -> None:
        # issue 13 §2: the faulty session ends by closing it (integrity_close: no round interrupted)
        from_integrity = self.gate.has_trigger(Trigger.INTEGRITY_CLOSE)
        trigger = (
            Trigger.INTEGRITY_CLOSE if from_integrity else Trigger.CLOSE_TABLE
        )  # close_table: no bets on the table
        self.gate.allow(trigger, "close_table")
        if from_integrity:
            # placed, nothing dealt on them: returned to the players
            returned = {seat: bet.to_dict() for seat, bet in self.dealer.take_all().items()}
        self.jackpot.check_close()  # PT-2001 r.49: a winning hand stays until paid
        if self.lid.position == LidState.OPEN and self.gate.state != TableState.LOADING:
            raise Rejected("the lid is open: insert the cards and close it first (PT-2001 r.59-60)")
        self.lid.no_deadline()
        if from_integrity:
            raised = self.faults.take("integrity")
            info = raised.to_dict() if raised is not None else {}
            self.fx.record(
                RecordKind.INTEGRITY_CLEARED,
                user=user,
                at=self.fx.ts(),
                fault=info,
                by="close_table",
                bets=returned,
            )
            self.faults.event("integrity", "cleared", {"by": user})
            self.gate.go(Trigger.INTEGRITY_CLOSE)  # leaving the faults: resume_to forgotten (machine.py)
        else:
            self.gate.go(Trigger.CLOSE_TABLE)
        self.rounds.drop()
        self.setup.close_session(user)
        self.duty.off_duty("close_table")
        self.players.end_all(user)  # every visit ends (issue 41)
        if (
            self.shoe_cycle.out > 0 and self.setup.tp.continuous
        ):  # the discard goes in before the inventory (PT-2001 r.55)
            self.lid.grant_opening(Unlock.CLOSING, open_lid=True)
        elif self.shoe_cycle.out > 0:
            self.fx.cmd(ev.StartShuffle())  # batch shoe: every card back in
        else:
            self.deck_checks.maybe_deck_check()

    def sv_ack_alert(self, user: str, args: dict[str, Any]) -> None:
        self.fx.record(RecordKind.ALERT_ACKNOWLEDGED, user=user, alert=args)
