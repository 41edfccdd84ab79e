"""The core's snapshot, composed from the concerns' slices: the format is persisted in journals in the field,
keep it byte for byte (the keys, their order, which are left out while unset)."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from controller.table.machine_names import TableState
from controller.table.state import Plain, ShoeDevice, fault_from_dict

if TYPE_CHECKING:
    from controller.table.core import TableCore


def _plain(value: Plain | None) -> dict[str, Any] | None:
    return value.to_dict() if value is not None else None


def frozen(core: TableCore) -> bytes:
    """The state, pickled (a deep copy of plain data several times faster than copy.deepcopy)."""
    setup, cycle, rounds, bets = core.setup.s, core.shoe_cycle.s, core.round_flow.s, core.dealer_in.s
    on_duty = core.dealer_duty.on_duty
    players = core.players
    return pickle.dumps(
        {
            "state": str(core.state),  # plain text in the snapshot
            "resume_to": str(core.resume_to) if core.resume_to is not None else None,
            "profile": setup.profile_name,
            "shuffler": setup.shuffler,
            "device": core.shoe_link.device.to_dict(),
            "session": setup.session.to_dict(),
            "shoe": cycle.shoe.to_dict(),
            "inside": cycle.inside,
            "out": cycle.out,
            "lid": core.lid_ctl.status.to_dict(),
            "bets": {seat: bet.to_dict() for seat, bet in bets.bets.items()},
            "chips": bets.chips,
            "round": rounds.round.to_dict() if rounds.round else None,
            "round_void": rounds.round_void,
            "round_no": rounds.round_no,
            "last_seats": rounds.last_seats,
            "uninserted": rounds.uninserted,
            "faults": {name: f.to_dict() for name, f in core.fault_ctl.raised.items()},
            "pending_replacement": _plain(rounds.pending_replacement),
            "deck_check": _plain(core.deck_checks.check),
            "outputs": core.safety.values,
            "hole_revealed": rounds.hole_revealed,
            "published": core.documents.published,  # so a restored core publishes exactly what the live one would
            "jackpot": core.jackpot.snapshot(),  # the meter is journaled with the round it belongs to
            # only while someone is signed in: older snapshots (and journals) hold no such key
            **({"dealer_on_duty": on_duty} if on_duty is not None else {}),
            # issue 41, likewise: only once players were seated (the pseudonyms' count is kept with them)
            **({"players": players.snapshot()} if players.used() else {}),
        },
        pickle.HIGHEST_PROTOCOL,
    )


def restore_parts(core: TableCore, s: dict[str, Any]) -> None:
    """Each concern takes its slice back (``s``: a private copy); the setup first (the round needs its rules)."""
    core.shoe_link.device = ShoeDevice.from_dict(s["device"])
    core.setup.restore(s)  # the session first: a pinned session carries its profile's text
    core.machine.set_state(s["state"])
    core.resume_to = TableState(s["resume_to"]) if s["resume_to"] is not None else None
    core.shoe_cycle.restore(s)
    core.deck_checks.restore(s)
    core.lid_ctl.restore(s["lid"])
    core.dealer_in.restore(s)
    core.fault_ctl.raised = {name: fault_from_dict(name, d) for name, d in s["faults"].items()}
    core.safety.values = s["outputs"]
    core.documents.published = s.get("published", {})
    core.jackpot.restore(s.get("jackpot"))
    core.dealer_duty.on_duty = s.get("dealer_on_duty")
    core.players.restore(s.get("players"))
    core.round_flow.restore(s)
