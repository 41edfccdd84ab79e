"""The shoe's lid: opened by the machine after the round, locked otherwise, the lid timeout (PT-2001 r.60-62).

``Lid`` owns the lid's slice of the state (``LidStatus``: the shoe's last report, why it may open now, the
deadline to open) and the lid sub-machine on it (lid_machine.py). An opening it did not grant is tamper: the
lid tells ``on_tamper`` (the faults, faults.py), given in its constructor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from controller.table.concern import Handlers
from controller.table.lid_machine import OPENED, REPORT_TRIGGER, LidMachine, build_lid_machine
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import LidStatus, Unlock
from drivers import events as ev
from drivers.events import LidState


class Lid:
    """Owns the lid's status (``LidStatus``, snapshot ``lid``)."""

    name: ClassVar[str] = "lid"

    def __init__(self, fx: EffectSink, on_tamper: Callable[[str], None]) -> None:
        self.fx = fx
        self.on_tamper = on_tamper
        self.status = LidStatus()
        self.machine: LidMachine = build_lid_machine(self)  # the lid sub-machine, on ``status``

    def handlers(self) -> Handlers:
        return Handlers(
            device={ev.LidChanged: self.on_changed},
            supervisor={"unlock_lid": self.sv_unlock_lid},
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["lid"] = self.status.to_dict()

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap["lid"])

    # ---- read by the other concerns (concern.LidFace)
    @property
    def position(self) -> LidState:
        """The shoe's last lid report."""
        return self.status.state

    @property
    def unlock(self) -> Unlock | None:
        """Why the lid may open now; None: locked (the lid_lock output follows it, outputs.py)."""
        return self.status.unlock

    def on_changed(self, e: ev.LidChanged) -> None:
        """The shoe's lid report; where it leads and what it means is the lid machine's (lid_machine.py)."""
        lid = self.status
        state = str(e.state)  # the plain text (also given a plain str)
        lid_event: dict[str, Any] = {"state": state, "previous": str(lid.state)}
        if lid.unlock:
            lid_event["by"] = lid.unlocked_by
        self.fx.event("lid", **lid_event)
        self.fx.record(RecordKind.LID, state=state, unlocked_by=lid.unlocked_by)
        auto_before, lid.auto_before_restart = lid.auto_before_restart, False  # read once
        model: Any = self.machine.model  # a LidModel; transitions gave it ``trigger``
        model.trigger(REPORT_TRIGGER[e.state], restart_opening=auto_before)

    # ---- what the lid machine's transitions run (lid_machine.LidOwner)
    def opened_before_restart(self) -> None:
        # The opening the restart interrupted: not tamper, but no longer an unlock either. The restart ended the
        # lid cycle (the cards are carried, PT-2001 r.61) and the table is in a fault until it has counted the
        # cards, so the lock output stays locked: the lid latches when it is closed (product guide: on any
        # fault the lid stays locked; PT-2001 r.60).
        self.fx.record(RecordKind.LID_OPENED_BEFORE_RESTART, at=self.fx.ts())

    def opened_as_granted(self) -> None:
        self.status.deadline = None  # it opened in time (r.61)

    def closed(self) -> None:
        # closed: lock again (PT-2001 r.60); the continuous shuffler starts shuffling by itself
        if self.status.unlock is not None:
            self.relock()

    def tamper(self, reason: str) -> None:
        self.on_tamper(reason)

    def is_open(self) -> bool:
        """Open or forced open (the lid machine's ``opened``): nothing is locked or counted until it closes."""
        return self.status.state in OPENED

    # ---- the one writer of ``unlock`` (the lid_lock output is derived from it, outputs.py)
    def grant_opening(
        self, why: Unlock, *, by: str | None = None, unlock: bool = False, open_lid: bool = False
    ) -> None:
        """The lid may open now, and why (``by``: the supervisor's name); ``unlock`` / ``open_lid``: tell the
        shoe to release its lock / to open the lid."""
        self.status.unlock, self.status.by = why, by
        if unlock:
            self.fx.cmd(ev.UnlockLid())
        if open_lid:
            self.fx.cmd(ev.OpenLid())

    def relock(self, *, command: bool = True) -> None:
        """No opening allowed any more: locked (``command``: tell the shoe; False when it is already told)."""
        self.status.unlock = self.status.by = None
        if command:
            self.fx.cmd(ev.LockLid())

    def open_by(self, deadline: float) -> None:
        """An automatic opening after the round (r.59-60): it must open before ``deadline`` (r.61)."""
        self.status.deadline = deadline
        self.grant_opening(Unlock.AUTO, open_lid=True)

    def no_deadline(self) -> None:
        self.status.deadline = None

    def not_opened(self, why: str, carried: list[str]) -> None:
        """PT-2001 r.61: the cards (of the ``carried`` rounds) stay in the discard, to go in with the next round
        whose lid opens."""
        self.status.deadline = None
        self.relock()
        self.fx.record(RecordKind.LID_NOT_OPENED, reason=why, carried=carried)
        self.fx.event("shoe", procedure="cards_carried", rounds=carried, reason=why, rule="PT-2001 r.61")

    def restarted(self, carried: list[str]) -> None:
        """The service restarted: the shell locked the lid; an automatic opening under way ends (r.61)."""
        if self.status.unlock == Unlock.AUTO:
            self.not_opened("controller restarted during the lid cycle", carried)
            # The shoe may have opened it before the restart: that LidChanged comes again now (protocol v2
            # replays what was acked but not committed, docs/protocol.md §5a) and is this opening, not tamper.
            self.status.auto_before_restart = True
        self.status.deadline = None
        self.relock(command=False)  # the shell locked it

    def sv_unlock_lid(self, user: str, args: dict[str, Any]) -> None:
        """Only the machine or an authorised supervisor opens the lid (PT-2001 r.51, r.60)."""
        self.grant_opening(Unlock.SUPERVISOR, by=user, unlock=True)

    def tick(self, now: float, carried: list[str]) -> None:
        deadline = self.status.deadline
        due = self.status.unlock == Unlock.AUTO and deadline is not None and now >= deadline
        if due and self.status.state != LidState.OPEN:
            self.not_opened("lid did not open after the round", carried)

    def restore(self, snap: dict[str, Any]) -> None:
        self.status = LidStatus.from_dict(snap)
