"""The jackpot's face in the core: the supervisor's four jackpot actions and the jackpot's snapshot slice, for
the seam where the progressive jackpot plugs in (controller/jackpot/seam.py; docs/jackpot.md)."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from controller.jackpot.seam import JackpotSeam
from controller.table.concern import Handlers, RoundsFace
from controller.table.sink import EffectSink

# dual control: one supervisor asks for a meter correction, another confirms it (PT-2001 r.49)
JACKPOT_CORRECTIONS = ("jackpot_correct", "jackpot_correct_confirm")
JACKPOT_ACTIONS = ("jackpot_verify", "jackpot_pay", *JACKPOT_CORRECTIONS)


class JackpotDesk:
    """Owns nothing of its own: the seam's state is its snapshot slice (``jackpot``, journaled with the round
    it belongs to)."""

    name: ClassVar[str] = "jackpot"

    def __init__(self, fx: EffectSink, jackpot: JackpotSeam, rounds: RoundsFace) -> None:
        self.fx, self.jackpot, self.rounds = fx, jackpot, rounds

    def handlers(self) -> Handlers:
        """The four jackpot actions: one method, the seam's own dispatch (controller/jackpot)."""
        return Handlers(supervisor={action: partial(self.action, action) for action in JACKPOT_ACTIONS})

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["jackpot"] = self.jackpot.snapshot()

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.jackpot.restore(snap.get("jackpot"))

    def action(self, action: str, user: str, args: dict[str, Any]) -> None:
        """``jackpot_verify`` / ``_pay`` / ``_correct`` / ``_correct_confirm``: the jackpot's own; a correction is
        made between rounds only, when a second supervisor confirms it (PT-2001 r.49)."""
        correction = action in JACKPOT_CORRECTIONS
        between = correction and not self.rounds.round_active()
        now = self.fx.now if correction else 0.0  # verify and pay are not timed (the seam's default)
        self.fx.extend(self.jackpot.supervisor(action, user, args, between_rounds=between, now=now))
        pending = self.jackpot.pending_correction() if action == "jackpot_correct" else None
        if pending is not None:
            self.fx.result = {"correction_id": pending["correction_id"], "confirm_by": pending["expires_at"]}
