"""The table's pure core: a deterministic state machine from inputs to effects.

No I/O, no clock, no asyncio: ``apply(input, now)`` changes the state and returns the effects (journal
records, outbox events, alerts, shoe commands, GPIO writes) for the shell to commit and execute. The same
inputs from the same snapshot always give the same state: recovery relies on it (re-apply journaled inputs).
A rejected dealer input or supervisor action raises ``Rejected`` and leaves the state exactly as it was.

``TableCore`` keeps the state machine (machine.py; it is the machine's model) and ``apply``; it composes one
object per concern, each with the same face (concern.py, ``Concern``; docs/architecture.md, "The table core"):
it declares the inputs it handles, owns its slice of the state and gives its snapshot slice. The concerns: the
setup (session.py), the shoe link (link.py), the shoe cycle (shoe_cycle.py), the deck check (deck_check.py),
the lid (lid.py), the dealer's inputs (dealer.py), the faults (faults.py), the safety outputs (outputs.py),
the state documents (documents.py), the jackpot's desk (jackpot_desk.py, for controller/jackpot/seam.py), the
dealer on duty (dealer_duty.py), the players at the seats (players.py), the round (round_flow.py) and its cards
(cards.py), and the supervisor's table-wide actions (supervisor.py). Each is given the effect sink of the step
(sink.py), the machine's gate (gate.py) and the narrow faces of the collaborators it calls, in its
constructor; the core walks the list once to build the dispatch tables (dispatch.py) and at every step to
compose the snapshot (snapshot.py).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from controller.actions import CHIP_SLOT_PREFIX
from controller.effects import Effect, Rejected
from controller.jackpot.seam import JackpotSeam
from controller.rules.cards import Card
from controller.rules.profiles import Profile
from controller.table import inputs as i
from controller.table import machine as m
from controller.table.base import LID_OPEN_TIMEOUT_S, _copy
from controller.table.cards import CardFlow
from controller.table.concern import Concern
from controller.table.dealer import DealerInputs
from controller.table.dealer_duty import DealerDuty
from controller.table.deck_check import DeckChecks
from controller.table.dispatch import DispatchTables
from controller.table.documents import StateDocuments
from controller.table.faults import Faults
from controller.table.gate import Gate
from controller.table.jackpot_desk import JackpotDesk
from controller.table.lid import Lid
from controller.table.lid_machine import LidMachine
from controller.table.link import ShoeLink
from controller.table.machine_names import TableState
from controller.table.outputs import SafetyOutputs
from controller.table.players import SeatedPlayers
from controller.table.profile import TableProfile
from controller.table.record_kinds import RecordKind
from controller.table.round_flow import RoundFlow
from controller.table.rounds import EngineFactory, RoundTracker, default_card, default_engine_factory
from controller.table.session import TableSetup
from controller.table.shoe_cycle import ShoeCycle
from controller.table.sink import EffectSink
from controller.table.snapshot import frozen, slices
from controller.table.state import (
    Bet,
    DeckCheck,
    FaultInfo,
    LidStatus,
    PendingReplacement,
    SessionState,
    ShoeDevice,
    ShoeState,
)
from controller.table.supervisor import SupervisorActions
from controller.table.view import TableView
from drivers import events as ev
from drivers.cards import CARD_CODES

__all__ = ["CARD_CODES", "LID_OPEN_TIMEOUT_S", "JackpotSeam", "Step", "TableCore"]


@dataclass
class Step:
    effects: list[Effect]
    result: dict[str, Any] = field(default_factory=dict)


class TableCore:
    # the concerns (docs/architecture.md, "The table core"), built in __init__
    fx: EffectSink
    gate: Gate
    setup: TableSetup
    jackpot: JackpotSeam
    safety: SafetyOutputs
    dealer_duty: DealerDuty
    players: SeatedPlayers
    lid_ctl: Lid
    shoe_cycle: ShoeCycle
    round_flow: RoundFlow
    fault_ctl: Faults
    deck_checks: DeckChecks
    card_flow: CardFlow
    dealer_in: DealerInputs
    shoe_link: ShoeLink
    supervisor: SupervisorActions
    jackpot_desk: JackpotDesk
    documents: StateDocuments
    # in the order their slices are restored (the setup first: the round needs its rules)
    concerns: tuple[Concern, ...]

    def __init__(
        self,
        load_profile: Callable[[str], Profile],
        *,
        engine_factory: EngineFactory = default_engine_factory,
        make_card: Callable[[str], Card] = default_card,
        jackpot: JackpotSeam | None = None,
    ) -> None:
        self.undo: bytes = b""  # the state before the last apply(), pickled (restore() takes it)
        self.resume_to: TableState | None = None  # the machine's: where a fault resumes (machine.py)
        self.machine = m.build_machine(self)  # the authority on the state (machine.py)
        self.fx = fx = EffectSink()
        self.gate = gate = Gate(self)
        self.tables = tables = DispatchTables()  # filled from the concerns' declarations, below
        self.setup = setup = TableSetup(load_profile)
        self.jackpot = jp = jackpot or JackpotSeam()
        self.safety = safety = SafetyOutputs(fx)
        self.dealer_duty = duty = DealerDuty(fx, gate, setup)
        self.players = players = SeatedPlayers(fx, gate, setup, duty)
        self.lid_ctl = lid = Lid(fx, on_tamper=lambda reason: self.fault_ctl.tamper(reason))
        self.shoe_cycle = cycle = ShoeCycle(
            fx, gate, setup, lid, rounds=lambda: self.round_flow, players=self._players, counts=tables
        )
        self.round_flow = rounds = RoundFlow(
            fx, gate, setup, jp, lid, cycle, engine_factory=engine_factory, make_card=make_card
        )
        self.fault_ctl = faults = Faults(fx, gate, lid, rounds)
        self.deck_checks = checks = DeckChecks(fx, gate, setup, lid, cycle)
        self.card_flow = CardFlow(fx, gate, setup, cycle, rounds, faults, lid)
        self.dealer_in = dealer = DealerInputs(fx, gate, setup, jp, rounds, cycle, lid, faults)
        self.shoe_link = link = ShoeLink(
            fx, gate, setup, shoe_cycle=cycle, deck_checks=checks, rounds=rounds, lid=lid, faults=faults,
            safety=safety, jackpot=jp,
        )  # fmt: skip
        self.supervisor = SupervisorActions(
            fx, gate, setup, jp, link=link, shoe_cycle=cycle, deck_checks=checks, rounds=rounds, dealer=dealer,
            duty=duty, players=players, lid=lid, faults=faults,
        )  # fmt: skip
        self.jackpot_desk = JackpotDesk(fx, jp, rounds)
        self.documents = StateDocuments(fx, gate, jp, players, self.table_view)
        self.concerns = (
            setup, link, cycle, checks, lid, dealer, faults, safety, self.documents, self.jackpot_desk, duty,
            players, rounds, self.card_flow, self.supervisor,
        )  # fmt: skip
        tables.build(self.concerns)  # complete, each input claimed once (dispatch.py)
        slices({"state": None, "resume_to": None}, self.concerns)  # each snapshot key from one concern

    def _players(self) -> int:
        return self.round_flow.players(len(self.dealer_in.bets))

    def table_view(self) -> TableView:
        """The table as it is now, frozen (view.py): what the state documents read."""
        setup, rounds, cycle, lid = self.setup, self.round_flow, self.shoe_cycle, self.lid_ctl.status
        shoe, profile = cycle.shoe, setup.s.rules_profile
        return TableView(
            state=self.state,
            resume_to=self.resume_to,
            session_id=setup.session.id,
            profile_name=setup.profile_name,
            shuffler=setup.shuffler,
            tp=setup.s.tp,
            decks=profile.decks if profile is not None else None,
            round=rounds.s.round,
            round_void=rounds.round_void,
            interrupted_round=self.state in m.FAULT_STATES and rounds.round_active(),
            uninserted=tuple(rounds.uninserted),
            awaiting_replacement=rounds.pending is not None,
            bets=dict(self.dealer_in.bets),
            chips=tuple(self.dealer_in.chips),
            faults=dict(self.fault_ctl.raised),
            lid=lid.state,
            lid_unlocked_by=lid.unlocked_by,
            inside=cycle.inside,
            out=cycle.out,
            shoe_no=shoe.no,
            dealt_this_shoe=shoe.dealt,
            last_seq=shoe.last_seq,
            last_round=shoe.last_round,
            shuffling=shoe.shuffling,
            device_known=self.shoe_link.device.known,
            outputs=dict(self.safety.values),
            dealer_on_duty=self.dealer_duty.on_duty,
            players_seated=self.players.seated,
        )

    # ================================================================ entry point
    def apply(self, inp: i.Input, now: float, *, states: bool = True) -> Step:
        """Apply one input. Raises ``Rejected`` (state unchanged) for a forbidden dealer/supervisor input.

        ``states=False``: leave the retained state documents out of this step; the caller takes them with
        ``publish_states()`` after the last input of a burst (a document superseded within one commit would
        never be read by anyone, and building it is most of the core's cost per card)."""
        before = self._frozen()
        self.undo = before  # the shell restores this if the journal commit fails
        self.fx.begin(now)
        try:
            handler = INPUT_HANDLERS.get(type(inp))
            if handler is None:
                raise Rejected(f"unknown input {type(inp).__name__}")
            handler(self, inp)
            pending = self.round_flow.pending is not None
            self.safety.sync(self.state, self.lid_ctl.status, self.fault_ctl.raised, pending)
            if states:
                self.documents.publish()
            self.round_flow.hole_card_event()  # every input, in order with the card events (never deferred)
        except BaseException:
            self.restore(before)
            raise
        return Step(self.fx.items, self.fx.result)

    def publish_states(self) -> list[Effect]:
        """The retained state documents whose content changed since they were last published (after inputs
        applied with ``states=False``). Part of the state like any input's effects: ``undo`` covers it."""
        return self.documents.publish_states()

    def view(self) -> dict[str, Any]:
        """The table state as published (retained) and shown on the pit terminal."""
        return self.documents.view()

    def dealer_inputs(self) -> list[str]:
        """The dealer commands the core would accept now (the pit terminal enables exactly these)."""
        return self.documents.dealer_inputs()

    # ================================================================ the state as plain data
    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain data (journal snapshots, tests)."""
        return cast(dict[str, Any], pickle.loads(self._frozen()))

    def _frozen(self) -> bytes:
        # Pickled: a deep copy of plain data several times faster than copy.deepcopy. Every input takes one
        # for the rollback of a refused input or a failed commit, and it is unpickled only then.
        machine = {
            "state": str(self.state),  # plain text in the snapshot
            "resume_to": str(self.resume_to) if self.resume_to is not None else None,
        }
        return frozen(machine, self.concerns)

    def restore(self, snap: dict[str, Any] | bytes) -> None:
        s = pickle.loads(snap) if isinstance(snap, bytes) else _copy(snap)
        self.undo = b""
        self.machine.set_state(TableState.CLOSED)
        for concern in self.concerns:  # each takes its slice back (``s``: a private copy), the setup first
            concern.restore_from(s)
        self.machine.set_state(s["state"])
        self.resume_to = TableState(s["resume_to"]) if s["resume_to"] is not None else None

    # ================================================================ dispatch (the concerns' tables)
    def _device(self, e: ev.DeviceEvent) -> None:
        if e.event_no:  # the shoe's resume point: committed with this input (docs/protocol.md §5a)
            self.shoe_link.committed(e.event_no)
        self.tables.device[type(e)](e)  # complete: checked when the tables were built (dispatch.py)

    def _dealer(self, action: str, args: dict[str, Any]) -> None:
        self.dealer_in.blocked()
        handler = self.tables.dealer.get(action)
        if handler is None:
            raise Rejected(f"unknown dealer action {action!r}")
        handler(args)

    def _supervisor(self, user: str, role: str, action: str, args: dict[str, Any]) -> None:
        self.supervisor.authorise(user, role, action)
        handler = self.tables.supervisor.get(action)
        if handler is None:
            raise Rejected(f"unknown supervisor action {action!r}")
        handler(user, args)
        self.fx.record(
            RecordKind.SUPERVISOR_ACTION, user=user, role=role, action=action, args=args, at=self.fx.ts()
        )

    def _gpio(self, name: str, value: bool) -> None:
        if name == "lid_switch":  # True: the lid is open
            self.fx.record(RecordKind.LID_SWITCH, open=value)
            if value and self.lid_ctl.status.unlock is None:
                self.fault_ctl.tamper("lid switch open while the lid is locked (PT-2001 r.60)")
        elif name.startswith(CHIP_SLOT_PREFIX) and name[len(CHIP_SLOT_PREFIX) :].isdigit():  # PT-2001 r.41a
            rnd = self.round_flow.round if self.round_flow.round_active() else None
            tp = self.setup.tp
            self.fx.extend(
                self.jackpot.on_chip_sensor(
                    int(name[len(CHIP_SLOT_PREFIX) :]),
                    value,
                    betting=self.state == TableState.BETTING,
                    round_id=rnd.round_id if rnd else None,
                    seats=tp.seats if tp else 0,
                    now=self.fx.now,
                )
            )
        else:
            self.fx.record(RecordKind.GPIO_INPUT, name=name, value=value)

    # ================================================================ read by the shell and the tests
    @property
    def state(self) -> TableState:
        """The leaf state ("betting", "jammed"): the name in snapshots and documents (machine.py)."""
        return m.LEAF[self.machine_state]

    machine_state: str  # set by the machine (model_attribute), like the two below (transitions adds them)
    may_trigger: Callable[[str], bool]
    trigger: Callable[..., bool]

    # what the shell and the tests read (each concern owns it; faults and bets are also set by tests)
    @property
    def faults(self) -> dict[str, FaultInfo]:
        return self.fault_ctl.raised

    @faults.setter
    def faults(self, value: dict[str, FaultInfo]) -> None:
        self.fault_ctl.raised = value

    @property
    def bets(self) -> dict[str, Bet]:
        return self.dealer_in.s.bets

    @bets.setter
    def bets(self, value: dict[str, Bet]) -> None:
        self.dealer_in.s.bets = value

    @property
    def outputs(self) -> dict[str, bool]:
        return self.safety.values

    @property
    def lid(self) -> LidStatus:
        return self.lid_ctl.status

    @property
    def lid_machine(self) -> LidMachine:
        return self.lid_ctl.machine

    @property
    def device(self) -> ShoeDevice:
        return self.shoe_link.device

    @property
    def shoe(self) -> ShoeState:
        return self.shoe_cycle.shoe

    @property
    def inside(self) -> int:
        return self.shoe_cycle.inside

    @property
    def out(self) -> int:
        return self.shoe_cycle.out

    @property
    def round(self) -> RoundTracker:  # as round_flow.py gives it (None between rounds)
        return self.round_flow.round

    @property
    def round_void(self) -> bool:
        return self.round_flow.round_void

    @property
    def pending_replacement(self) -> PendingReplacement | None:
        return self.round_flow.pending

    @property
    def session(self) -> SessionState:
        return self.setup.session

    @property
    def tp(self) -> TableProfile:  # as session.py gives it (None before a profile is set)
        return self.setup.tp

    @property
    def rules_profile(self) -> Profile:
        return self.setup.rules_profile

    @property
    def dealer_on_duty(self) -> str | None:
        return self.dealer_duty.on_duty

    @property
    def deck_check(self) -> DeckCheck | None:
        return self.deck_checks.check

    @property
    def _load_profile(self) -> Callable[[str], Profile]:  # tests build a second core with the same loader
        return self.setup.load_profile


InputHandler = Callable[[TableCore, Any], None]  # (core, the input of the type it is registered for)

# The input types (controller/table/inputs.py), by type; anything else is refused.
INPUT_HANDLERS: dict[type[i.Input], InputHandler] = {
    i.DeviceInput: lambda core, inp: core._device(inp.event),
    i.DealerInput: lambda core, inp: core._dealer(inp.action, dict(inp.args)),
    i.SupervisorInput: lambda core, inp: core._supervisor(inp.user, inp.role, inp.action, dict(inp.args)),
    i.Tick: lambda core, _inp: core.lid_ctl.tick(core.fx.now, core.round_flow.uninserted),
    i.GpioInput: lambda core, inp: core._gpio(inp.name, inp.value),
    i.CommandFailed: lambda core, inp: core.shoe_link.command_failed(inp.command, inp.text, inp.link),
    i.Restart: lambda core, _inp: core.shoe_link.restart(),
    # the jackpot sign's link (PT-2001 r.41), journaled
    i.JackpotDisplay: lambda core, inp: core.fx.extend(core.jackpot.on_display(inp.connected)),
    # a linked progressive (docs/jackpot.md): its meter documents valid or not, a prize it froze for a hit here
    i.JackpotLink: lambda core, inp: core.fx.extend(core.jackpot.on_link(inp.up, inp.reason, inp.seq)),
    i.LinkHitAwarded: lambda core, inp: core.fx.extend(core.jackpot.on_link_award(inp.link, inp)),
    # the shell's journal commit failed (issue 14 item 3)
    i.JournalFault: lambda core, inp: core.fault_ctl.journal_fault(inp.kind, inp.text),
    # chain, snapshot or pinned configuration (issue 13 §1-2)
    i.IntegrityFault: lambda core, inp: core.fault_ctl.integrity_fault(inp.reason, dict(inp.details)),
}
