"""The retained state documents and the table view (docs/mqtt.md): published only when their text changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.actions import DEALER_PLAY
from controller.canonical import canonical
from controller.effects import DocumentName, Effect, StateDocument
from controller.jackpot.seam import JackpotSeam
from controller.table import machine as m
from controller.table.dealer import DealerInputs
from controller.table.dealer_duty import DealerDuty
from controller.table.faults import Faults
from controller.table.gate import Gate
from controller.table.lid import Lid
from controller.table.link import ShoeLink
from controller.table.machine_names import Trigger
from controller.table.outputs import SafetyOutputs
from controller.table.players import SeatedPlayers
from controller.table.reporting import allowed_commands, round_state
from controller.table.round_flow import RoundFlow
from controller.table.session import TableSetup
from controller.table.shoe_cycle import ShoeCycle
from controller.table.sink import EffectSink
from drivers.events import LidState

_NAMES = {name.value: name for name in DocumentName}  # by text, without an enum lookup per document


class StateDocuments:
    """Owns the text last published per document (snapshot ``published``); reads every other concern."""

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: TableSetup,
        jackpot: JackpotSeam,
        *,
        link: ShoeLink,
        shoe_cycle: ShoeCycle,
        rounds: RoundFlow,
        dealer: DealerInputs,
        duty: DealerDuty,
        lid: Lid,
        faults: Faults,
        safety: SafetyOutputs,
        players: SeatedPlayers,
    ) -> None:
        self.fx, self.gate, self.setup, self.jackpot = fx, gate, setup, jackpot
        self.link, self.shoe_cycle, self.rounds, self.dealer = link, shoe_cycle, rounds, dealer
        self.duty, self.lid, self.faults, self.safety = duty, lid, faults, safety
        self.players = players
        self.published: dict[str, str] = {}  # JSON text of the last retained state document per topic

    def view(self, allowed: Callable[[], list[str]] | None = None) -> dict[str, Any]:
        """The table state as published (retained) and shown on the pit terminal. ``allowed``: as for
        ``dealer_inputs``."""
        rnd = self.rounds.round
        return {
            "state": self.gate.state,
            "session_id": self.setup.session.id,
            "profile": self.setup.profile_name,
            "shuffler": self.setup.shuffler,
            "round_id": rnd.round_id if rnd else None,
            "round_active": self.gate.state in m.ROUND_ACTIVE
            or (self.gate.state in m.FAULT_STATES and self.rounds.round_active()),
            "bets": {seat: bet.to_dict() for seat, bet in self.dealer.bets.items()},
            "contestable_rounds": list(self.rounds.uninserted),  # r.62: final but contestable until inserted
            "carried_rounds": [r for r in self.rounds.uninserted if not rnd or r != rnd.round_id],  # r.61
            "faults": sorted(self.faults.raised),
            "resume_to": self.gate.resume_to,
            "lid": str(self.lid.status.state),
            "lid_unlocked_by": self.lid.status.unlocked_by,
            "cards_inside": self.shoe_cycle.inside,
            "cards_out": self.shoe_cycle.out,
            "last_shoe_seq": self.shoe_cycle.shoe.last_seq,
            "last_round_of_shoe": self.shoe_cycle.shoe.last_round is not None,
            "awaiting_card_replacement": self.rounds.pending is not None,
            "outputs": dict(self.safety.values),
            # the open session's bet limits in minor units (the pit terminal's chips stay within them)
            "limits": {"min_bet": self.setup.tp.min_bet, "max_bet": self.setup.tp.max_bet}
            if self.setup.tp
            else None,
            # the dealer inputs the core accepts now: the pit terminal enables exactly these
            "dealer_inputs": self.dealer_inputs(allowed),
            # the dealer on duty (issue 29), only while someone is signed in
            **({"dealer": self.duty.on_duty} if self.duty.on_duty is not None else {}),
        }

    def dealer_inputs(self, allowed: Callable[[], list[str]] | None = None) -> list[str]:
        """The dealer commands (controller/actions.py) the core would accept now, from the machine's
        ``may_<trigger>()`` answers and, during play, the rules engine's allowed actions. Arguments (which seat,
        how much) are still checked when the input comes; everything else is decided here, once. ``allowed``:
        the round engine's ``allowed_commands``, when the caller already has them (``publish``)."""
        if self.dealer.dealing_blocked() is not None:
            return []
        accepted: list[str] = []
        if self.gate.may(Trigger.PLACE_BET):
            accepted.append("place_bet")
        if self.dealer.bets and self.gate.may(Trigger.CLEAR_BET):
            accepted.append("clear_bet")
        if self.dealer.bets and self.gate.may(Trigger.CLOSE_BETS):
            accepted.append("no_more_bets")
        if self.gate.may(Trigger.JACKPOT_CHIP) and any(
            int(seat) not in self.dealer.chips for seat in self.dealer.bets
        ):
            jackpot = self.jackpot.state_doc() or {}  # manual mode only (r.41b; automatic: sensed, r.41a)
            if jackpot.get("mode") == "manual" and jackpot.get("playable"):
                accepted.append("jackpot_chip")
        if (
            self.gate.may(Trigger.NEXT_ROUND) and self.lid.status.state != LidState.OPEN
        ):  # closed first (r.59-60)
            accepted.append("next_round")
        if self.gate.may(Trigger.CUT_DONE):
            accepted.append("cut")
        if self.gate.may(Trigger.PLAY) and self.rounds.round is not None:
            play = allowed() if allowed is not None else allowed_commands(self.rounds.round.engine)
            accepted += [a for a in play if a in DEALER_PLAY]
        return sorted(accepted)

    def publish_states(self) -> list[Effect]:
        """The retained state documents whose content changed since they were last published (after inputs
        applied with ``states=False``). Part of the state like any input's effects: ``undo`` covers it."""
        self.fx.items = []
        self.publish()  # appends StateDocument effects only
        return self.fx.items

    def publish(self) -> None:
        """Retained state documents, each published only when its content changed."""
        rnd = self.rounds.round
        commands: list[list[str]] = []  # the engine's allowed commands, asked at most once per publish

        def allowed() -> list[str]:
            if not commands:
                assert rnd is not None  # asked only about the round in progress
                commands.append(allowed_commands(rnd.engine))
            return commands[0]

        jam = self.faults.get("jam")
        link = self.faults.get("link_down")
        link_back = link is None or bool(link.restored)
        docs = {
            "table": self.view(allowed),
            "round": {
                **round_state(
                    rnd,
                    void=self.rounds.round_void,
                    contestable=bool(rnd and rnd.round_id in self.rounds.uninserted),
                    allowed=allowed,
                ),
                **self.jackpot.round_doc(rnd.round_id if rnd else None),
            },
            "lid": {
                "state": str(self.lid.status.state),
                "locked": bool(self.safety.values.get("lid_lock", True)),
                "unlocked_by": self.lid.status.unlocked_by,
            },
            "jam": {
                "jammed": jam is not None,
                **({"location": jam.location} if jam else {}),
                "device_cleared": bool(jam and jam.device_cleared),
            },  # r.51: awaits the supervisor
            "shoe": {
                "shuffler": self.setup.shuffler,
                "decks": self.setup.rules_profile.decks if self.setup.rules_profile is not None else None,
                "cards_inside": self.shoe_cycle.inside,  # a count only: nothing reveals the cards inside
                "cards_out": self.shoe_cycle.out,
                "dealt_this_shoe": self.shoe_cycle.shoe.dealt,
                "shoe_no": self.shoe_cycle.shoe.no,
                "shuffling": bool(self.shoe_cycle.shoe.shuffling),
                # The link itself; a link fault stays in state/table "faults" until clear_link, even when back.
                "linked": self.link.device.known and link_back,
                "last_round_of_shoe": self.shoe_cycle.shoe.last_round is not None,
            },
        }
        jackpot = self.jackpot.state_doc()
        if jackpot is not None:
            docs["jackpot"] = jackpot
        if self.players.seats or "players" in self.published:  # issue 41: once a player was seated
            docs["players"] = self.players.document()
        for name, data in docs.items():
            # The JSON text is the cache key: immutable (the documents share live dicts such as the bets),
            # cheap to compare, and it proves the document is plain JSON.
            text = canonical(data)
            if self.published.get(name) != text:
                self.published[name] = text
                self.fx.items.append(StateDocument(_NAMES[name], text))
