"""The frozen, typed view of the table that the state documents read (documents.py).

Built by the core (``TableCore.table_view``) from every concern's public face, once per publish: after the
step's input changed the state and the safety outputs were derived, so nothing it shows is stale. A concern
that acts during a step (where the machine may move under it) calls its collaborators through their narrow
faces (concern.py) instead."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.table.machine_names import TableState

if TYPE_CHECKING:
    from controller.table.profile import TableProfile
    from controller.table.rounds import RoundTracker
    from controller.table.state import Bet, FaultInfo
    from drivers.events import LidState


@dataclass(frozen=True, slots=True)
class TableView:
    state: TableState
    resume_to: TableState | None
    # the setup (session.py)
    session_id: str | None
    profile_name: str | None
    shuffler: str
    tp: TableProfile | None
    decks: int | None  # the rule profile's, None before a profile is set
    # the round (round_flow.py)
    round: RoundTracker | None
    round_void: bool
    # in a fault state: the fault interrupted a round that can still be voided (RoundFlow.round_active); False
    # outside the fault states (asked only there: the machine's answer costs)
    interrupted_round: bool
    uninserted: tuple[str, ...]
    awaiting_replacement: bool
    # the bets (dealer.py)
    bets: Mapping[str, Bet]
    chips: tuple[int, ...]
    # the faults (faults.py): name -> info
    faults: Mapping[str, FaultInfo]
    # the lid (lid.py)
    lid: LidState
    lid_unlocked_by: str | None
    # the shoe (shoe_cycle.py, link.py)
    inside: int
    out: int
    shoe_no: int
    dealt_this_shoe: int
    last_seq: int
    last_round: str | None
    shuffling: bool
    device_known: bool
    # the outputs (outputs.py), the dealer on duty (dealer_duty.py), the players (players.py)
    outputs: Mapping[str, bool]
    dealer_on_duty: str | None
    players_seated: bool
