"""The shoe's link: identification, link lost and back, resynchronising the counts, restart of the service."""

from __future__ import annotations

from typing import Any, ClassVar

from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.table.concern import (
    CycleFace,
    DeckCheckFace,
    FaultsFace,
    Handlers,
    LidFace,
    RoundsFace,
    SafetyFace,
    SetupFace,
)
from controller.table.gate import Gate
from controller.table.machine_names import TableState, Trigger
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import LinkFault, ShoeDevice, Unlock
from drivers import events as ev
from drivers.events import LidState


class ShoeLink:
    """Owns what the shoe last said of itself (``ShoeDevice``, snapshot ``device``)."""

    name: ClassVar[str] = "shoe_link"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: SetupFace,
        *,
        shoe_cycle: CycleFace,
        deck_checks: DeckCheckFace,
        rounds: RoundsFace,
        lid: LidFace,
        faults: FaultsFace,
        safety: SafetyFace,
        jackpot: JackpotSeam,
    ) -> None:
        self.fx, self.gate, self.setup, self.jackpot = fx, gate, setup, jackpot
        self.shoe_cycle, self.deck_checks, self.rounds = shoe_cycle, deck_checks, rounds
        self.lid, self.faults, self.safety = lid, faults, safety
        self.device = ShoeDevice.unknown()  # the shoe's last Identified

    def handlers(self) -> Handlers:
        return Handlers(
            device={
                ev.Identified: self.on_identified,
                ev.LinkUp: self.on_link_up,
                ev.LinkDown: self.on_link_down,
            },
            supervisor={"clear_link": self.sv_clear_link},
            counts={TableState.RESYNC: self.resync_report},
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["device"] = self.device.to_dict()

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.device = ShoeDevice.from_dict(snap["device"])

    @property
    def continuous(self) -> bool:
        """What the shoe last said of its kind (concern.LinkFace)."""
        return self.device.continuous

    def resync_report(self, count: int, shuffled: bool) -> None:
        self.resync(count)

    def committed(self, event_no: int) -> None:
        """The shoe's resume point: this event is committed with its input (docs/protocol.md §5a)."""
        self.device.event_no = event_no

    def on_identified(self, e: ev.Identified) -> None:
        self.fx.record(RecordKind.SHOE_IDENTIFIED, model=e.model, firmware=e.firmware, serial=e.serial_number)
        known = self.device.to_dict()
        same_boot = bool(e.boot_id) and known.get("boot_id") == e.boot_id
        if not same_boot:
            self.shoe_cycle.shoe_rebooted()
        self.device = ShoeDevice(
            continuous=e.continuous,
            decks_loaded=e.decks_loaded,
            serial=e.serial_number,
            # docs/protocol.md §5a: the newest event of this boot of the shoe committed here
            boot_id=e.boot_id,
            event_no=known.get("event_no", 0) if same_boot else 0,
        )
        if self.setup.tp and e.continuous != self.setup.tp.continuous:
            self.fx.alert(
                "profile_mismatch",
                "critical",
                f"the session runs a {self.setup.shuffler} shoe but the device reports another kind",
                device_continuous=e.continuous,
            )

    def on_link_up(self, e: ev.LinkUp) -> None:
        link = self.faults.get("link_down")
        if link is not None:
            # Safety first (product guide; as a jam, PT-2001 r.51): the link is back but the fault stays raised,
            # light on and lid locked, until a chief inspector (or a technician) ``clear_link``s it.
            self.faults.set_link(restored=True)
            self.fx.record(RecordKind.LINK_UP, at=self.fx.ts(), state=self.gate.state)
            # locked again (r.60), its own light shown again
            self.safety.to_rebooted_shoe(locked=self.lid.unlock is None)
            self.faults.event("link_down", "raised", link)  # "link back, awaiting supervisor"
        elif self.gate.state == TableState.RESYNC:
            self.fx.cmd(ev.ReportCounts())  # the count asked for before the link came up was lost
        elif (
            self.gate.state == TableState.LOADING
            and self.lid.unlock == Unlock.LOADING
            and self.lid.position != LidState.OPEN
        ):
            self.fx.cmd(ev.UnlockLid())  # the opening for the loading was lost with the link
            self.fx.cmd(ev.OpenLid())

    def on_link_down(self, e: ev.LinkDown) -> None:
        link = self.faults.get("link_down")
        if link is not None:
            if link.restored:  # down again before a supervisor cleared it: no second alert
                self.faults.set_link(restored=False, reason=e.reason)
                self.fx.record(RecordKind.LINK_DOWN_AGAIN, reason=e.reason, at=self.fx.ts())
                self.faults.event("link_down", "raised", link)
            return
        if not self.gate.may(Trigger.LINK_LOST):  # no session: no fault state to enter
            return
        self.faults.enter("link_down", Trigger.LINK_LOST, LinkFault(reason=e.reason))
        self.fx.alert(
            "link_down",
            "critical",
            "shoe link down: dealing blocked; once the link is back a chief inspector (or a technician) "
            "clears it (clear_link)",
            reason=e.reason,
        )

    def sv_clear_link(self, user: str, args: dict[str, Any]) -> None:
        """Like ``clear_jam`` (PT-2001 r.51): an authorised person ends the link fault, recorded with who and when;
        the resync that follows counts the cards inside (a round with cards unaccounted for is void)."""
        link = self.faults.get("link_down")
        if link is None:
            raise Rejected("no shoe link fault to clear")
        if not link.restored:
            raise Rejected(
                f"the shoe link is still down: {link.reason}; reconnect the shoe first, then clear it"
            )
        self.faults.mark_cleared_by("link_down", user)
        self.fx.record(RecordKind.LINK_CLEARED, user=user, at=self.fx.ts(), reason=link.reason)
        self.faults.clear("link_down")

    def resync(self, count: int) -> None:
        """After a fault or a restart: if cards left the machine unseen, the round cannot be determined."""
        expected = self.shoe_cycle.resynced(count)
        self.fx.record(RecordKind.RESYNC, expected=expected, count=count, resume_to=self.gate.resume_to)
        if count != expected:
            if self.rounds.round_active():
                self.rounds.void(
                    f"{expected - count} card(s) unaccounted for after the fault", expected=expected
                )
            else:
                self.fx.alert(
                    "shoe_count", "warning", f"shoe reports {count} cards inside, expected {expected}"
                )
            self.shoe_cycle.lost(expected, count)
        if self.lid.unlock == Unlock.SUPERVISOR and not self.lid.is_open():
            self.lid.relock()  # the inspector's opening is over: locked again (PT-2001 r.60)
        target = self.gate.resume_to or TableState.CLOSED
        self.gate.go(Trigger.RESUME)  # to resume_to, forgotten on the way out (machine.py)
        if (
            target == TableState.SETTLED
            and self.setup.tp.continuous
            and self.rounds.uninserted
            and self.lid.unlock is None
        ):
            self.rounds.after_round()  # the lid cycle the fault interrupted, or the voided round's (r.59)
        self._resume_procedure(target, count)

    def _resume_procedure(self, target: TableState, count: int) -> None:
        """Go on with the shoe procedure the fault interrupted. Its end (``ShuffleFinished``, the deck check)
        may have been reported during the fault, where it could not move the table on, or its lid opening
        may have been cancelled by a restart: without this the table would wait for it for ever."""
        tp = self.setup.tp
        if tp is None or self.shoe_cycle.shuffling or self.lid.is_open():
            return  # a shuffle still running reports its end; an open lid is closed first
        if target == TableState.SHUFFLING or (target == TableState.LOADING and not tp.continuous):
            self.fx.record(
                RecordKind.SHUFFLE_REQUESTED_AGAIN, state=target
            )  # batch shoe: shuffled, then cut (r.8)
            self.fx.cmd(ev.StartShuffle())
        elif target == TableState.LOADING:
            if self.setup.session.packets:
                self.shoe_cycle.check_loaded(
                    count
                )  # loaded and shuffled before or during the fault (r.53-54)
            elif self.lid.unlock is None:  # a restart locked the lid before any packet went in
                self.lid.grant_opening(Unlock.LOADING, unlock=True, open_lid=True)
        elif target == TableState.CLOSING:
            if self.shoe_cycle.out > 0 and self.lid.unlock is None:
                if tp.continuous:  # the discard goes in before the inventory (PT-2001 r.55)
                    self.lid.grant_opening(Unlock.CLOSING, open_lid=True)
                else:
                    self.fx.cmd(ev.StartShuffle())  # batch shoe: every card back in
            else:
                self.deck_checks.maybe_deck_check()

    def restart(self) -> None:
        """The service restarted: the lid was re-locked by the shell; count the cards before going on."""
        self.fx.record(RecordKind.RESTART, state=self.gate.state, round_id=self.rounds.current_round_id())
        self.lid.restarted(self.rounds.uninserted)  # the shell locked it (an automatic opening is over)
        self.safety.made_safe()  # the shell applied the safe state
        if self.faults.get("link_down") is not None:
            self.faults.set_link(restored=False)  # this process has not heard the shoe yet
        self.fx.extend(self.jackpot.on_restart())  # the jackpot sign must answer the new process first
        if self.setup.tp and self.setup.tp.continuous and not self.lid.is_open():
            self.fx.cmd(ev.LockLid())
        # the shoe is in use (or resynchronising): count the cards inside
        if self.gate.may(Trigger.RESTARTED):
            self.gate.go(Trigger.RESTARTED)
            self.fx.cmd(ev.ReportCounts())

    def command_failed(self, command: str, text: str, link: bool = False) -> None:
        self.fx.record(RecordKind.COMMAND_FAILED, command=command, text=text, link=link)
        if command == "OpenLid" and self.lid.unlock == Unlock.AUTO and self.lid.position != LidState.OPEN:
            self.lid.not_opened(f"OpenLid failed: {text}", self.rounds.uninserted)
        elif link:
            return  # link faults have their own alert
        elif command == "LockLid":  # the lid may be free to open: the floor must know at once (PT-2001 r.60)
            self.fx.alert(
                "shoe_command",
                "critical",
                f"the shoe did not lock its lid (LockLid failed: {text}) (PT-2001 r.60)",
                command=command,
            )
        else:  # incl. SetWarningLight: the shoe's own light; the table's light is the GPIO output
            self.fx.alert(
                "shoe_command", "warning", f"shoe command {command} failed: {text}", command=command
            )
