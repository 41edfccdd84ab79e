"""The shoe's link: identification, link lost and back, resynchronising the counts, restart of the service."""

from __future__ import annotations

from typing import Any

from controller.effects import Rejected
from controller.table.base import CoreBase
from controller.table.state import LinkFault, ShoeDevice
from drivers import events as ev


class ShoeLink(CoreBase):
    def _on_Identified(self, e: ev.Identified) -> None:
        self._record("shoe_identified", model=e.model, firmware=e.firmware, serial=e.serial_number)
        known = self.device.to_dict()
        same_boot = bool(e.boot_id) and known.get("boot_id") == e.boot_id
        if not same_boot:
            self.shoe.seq_restart = True  # another boot of the shoe: its shoe_seq may start again at 1
        self.device = ShoeDevice(
            continuous=e.continuous,
            decks_loaded=e.decks_loaded,
            serial=e.serial_number,
            # docs/protocol.md §5a: the newest event of this boot of the shoe committed here
            boot_id=e.boot_id,
            event_no=known.get("event_no", 0) if same_boot else 0,
        )
        if self.tp and e.continuous != self.tp.continuous:
            self._alert(
                "profile_mismatch",
                "critical",
                f"the session runs a {self.shuffler} shoe but the device reports another kind",
                device_continuous=e.continuous,
            )

    def _on_LinkUp(self, e: ev.LinkUp) -> None:
        link = self.faults.get("link_down")
        if link is not None:
            # Safety first (product guide; as a jam, PT-2001 r.51): the link is back but the fault stays raised,
            # light on and lid locked, until a chief inspector (or a technician) ``clear_link``s it.
            link.restored = True
            self._record("link_up", at=self._ts(), state=self.state)
            self._outputs_to_rebooted_shoe()  # locked again (r.60), its own light shown again
            self._fault_event("link_down", "raised", link)  # "link back, awaiting supervisor"
        elif self.state == "resync":
            self._cmd(ev.ReportCounts())  # the count asked for before the link came up was lost
        elif self.state == "loading" and self.lid.unlock == "loading" and self.lid.state != "open":
            self._cmd(ev.UnlockLid())  # the opening for the loading was lost with the link
            self._cmd(ev.OpenLid())

    def _on_LinkDown(self, e: ev.LinkDown) -> None:
        link = self.faults.get("link_down")
        if link is not None:
            if link.restored:  # down again before a supervisor cleared it: no second alert
                link.restored, link.reason = False, e.reason
                self._record("link_down_again", reason=e.reason, at=self._ts())
                self._fault_event("link_down", "raised", link)
            return
        if not self.may_link_lost():  # no session: no fault state to enter
            return
        self._enter_fault("link_down", "link_lost", LinkFault(reason=e.reason))
        self._alert(
            "link_down",
            "critical",
            "shoe link down: dealing blocked; once the link is back a chief inspector (or a technician) "
            "clears it (clear_link)",
            reason=e.reason,
        )

    def _sv_clear_link(self, user: str, args: dict[str, Any]) -> None:
        """Like ``clear_jam`` (PT-2001 r.51): an authorised person ends the link fault, recorded with who and when;
        the resync that follows counts the cards inside (a round with cards unaccounted for is void)."""
        link = self.faults.get("link_down")
        if link is None:
            raise Rejected("no shoe link fault to clear")
        if not link.restored:
            raise Rejected(
                f"the shoe link is still down: {link.reason}; reconnect the shoe first, then clear it"
            )
        link.cleared_by = user
        self._record("link_cleared", user=user, at=self._ts(), reason=link.reason)
        self._clear_fault("link_down")

    def _resync(self, count: int) -> None:
        """After a fault or a restart: if cards left the machine unseen, the round cannot be determined."""
        expected = self.inside
        self.inside = count
        self._record("resync", expected=expected, count=count, resume_to=self.resume_to)
        if count < expected and self.shoe.last_seq:
            # The cards that left unseen took their shoe_seq numbers with them: the next card seen follows
            # them, not a gap (else the next round would be voided for this round's loss, issue 14 item 2).
            self.shoe.last_seq += expected - count
            self.shoe.dealt += expected - count
        if count != expected:
            if self._round_active():
                self._void(f"{expected - count} card(s) unaccounted for after the fault", expected=expected)
            else:
                self._alert(
                    "shoe_count", "warning", f"shoe reports {count} cards inside, expected {expected}"
                )
            self.out = max(0, self.out + expected - count)
        unlock = self.lid.unlock or ""
        if unlock.startswith("supervisor") and not self._lid_is_open():
            self._relock()  # the inspector's opening is over: locked again (PT-2001 r.60)
        target = self.resume_to or "closed"
        self._go("resume")  # to resume_to, forgotten on the way out (machine.py)
        if target == "settled" and self.tp.continuous and self.uninserted and self.lid.unlock is None:
            self._after_round()  # the lid cycle the fault interrupted, or the voided round's (r.59)
        self._resume_procedure(target, count)

    def _resume_procedure(self, target: str, count: int) -> None:
        """Go on with the shoe procedure the fault interrupted. Its end (``ShuffleFinished``, the deck check)
        may have been reported during the fault, where it could not move the table on, or its lid opening
        may have been cancelled by a restart: without this the table would wait for it for ever."""
        tp = self.tp
        if tp is None or self.shoe.shuffling or self._lid_is_open():
            return  # a shuffle still running reports its end; an open lid is closed first
        if target == "shuffling" or (target == "loading" and not tp.continuous):
            self._record("shuffle_requested_again", state=target)  # batch shoe: shuffled, then cut (r.8)
            self._cmd(ev.StartShuffle())
        elif target == "loading":
            if self.session.packets:
                self._check_loaded(count)  # loaded and shuffled before or during the fault (r.53-54)
            elif self.lid.unlock is None:  # a restart locked the lid before any packet went in
                self._grant_opening("loading", unlock=True, open_lid=True)
        elif target == "closing":
            if self.out > 0 and self.lid.unlock is None:
                if tp.continuous:  # the discard goes in before the inventory (PT-2001 r.55)
                    self._grant_opening("closing", open_lid=True)
                else:
                    self._cmd(ev.StartShuffle())  # batch shoe: every card back in
            else:
                self._maybe_deck_check()

    def _restart(self) -> None:
        """The service restarted: the lid was re-locked by the shell; count the cards before going on."""
        self._record("restart", state=self.state, round_id=self.round.round_id if self.round else None)
        if self.lid.unlock == "auto":
            self._lid_not_opened("controller restarted during the lid cycle")
            # The shoe may have opened it before the restart: that LidChanged comes again now (protocol v2
            # replays what was acked but not committed, docs/protocol.md §5a) and is this opening, not tamper.
            self.lid.auto_before_restart = True
        self.lid.deadline = None
        self._relock(command=False)  # the shell locked it
        self._outputs_made_safe()  # the shell applied the safe state
        if "link_down" in self.faults:
            self.faults["link_down"].restored = False  # this process has not heard the shoe yet
        self._fx.extend(self.jackpot.on_restart())  # the jackpot sign must answer the new process first
        if self.tp and self.tp.continuous and not self._lid_is_open():
            self._cmd(ev.LockLid())
        if self.may_restarted():  # the shoe is in use (or resynchronising): count the cards inside
            self._go("restarted")
            self._cmd(ev.ReportCounts())

    def _command_failed(self, command: str, text: str, link: bool = False) -> None:
        self._record("command_failed", command=command, text=text, link=link)
        if command == "OpenLid" and self.lid.unlock == "auto" and self.lid.state != "open":
            self._lid_not_opened(f"OpenLid failed: {text}")
        elif link:
            return  # link faults have their own alert
        elif command == "LockLid":  # the lid may be free to open: the floor must know at once (PT-2001 r.60)
            self._alert(
                "shoe_command",
                "critical",
                f"the shoe did not lock its lid (LockLid failed: {text}) (PT-2001 r.60)",
                command=command,
            )
        else:  # incl. SetWarningLight: the shoe's own light; the table's light is the GPIO output
            self._alert("shoe_command", "warning", f"shoe command {command} failed: {text}", command=command)
