"""The lid sub-machine: where the shoe's lid is, as the shoe last reported it, and what each report means
(PT-2001 r.59-62).

A ``transitions`` HierarchicalMachine of its own beside the table's (machine.py): the lid moves independently of
the round (it opens after a round, while the next one is being bet), so it is a second region, not a state of the
table. Its states are nested: ``shut`` holds ``locked``, ``unlocked`` and ``closed`` (closed, not yet latched);
``opened`` holds ``open`` (opened by the machine or an authorised person) and ``forced_open``. A lock report
from an opened lid changes nothing: the lid is open until the shoe reports it closed.

The machine decides where a report leads and runs what it means:
- an opening is ``open`` only while the lid may open (``lid.unlock``, written by lid.py's one writer), or when it
  is the opening a restart interrupted (PT-2001 r.61); otherwise it is ``forced_open`` and tamper (r.60);
- reaching ``open`` ends the deadline to open (r.61); reaching ``closed`` locks the lid again (r.60).
The snapshot keeps the leaf name in ``lid.state`` (``"open"``), as before the machine; ``LID_PATH`` maps it.
"""

from __future__ import annotations

from typing import Any, Protocol

from transitions.extensions.nesting import HierarchicalMachine

from controller.table.machine import SEPARATOR, TableNode, TableTransition
from controller.table.state import LidStatus
from drivers.events import LidState

SHUT = [LidState.LOCKED, LidState.UNLOCKED, LidState.CLOSED]
OPENED = [LidState.OPEN, LidState.FORCED_OPEN]
# the library is given the plain texts
LID_TREE: list[Any] = [
    {"name": "shut", "children": [s.value for s in SHUT]},
    {"name": "opened", "children": [s.value for s in OPENED]},
]
LID_PATH: dict[LidState, str] = {
    **{name: f"shut{SEPARATOR}{name.value}" for name in SHUT},
    **{name: f"opened{SEPARATOR}{name.value}" for name in OPENED},
}
LID_LEAF: dict[str, LidState] = {path: name for name, path in LID_PATH.items()}

# The shoe's report -> the lid machine's trigger (one per LidState; checked complete below).
REPORT_TRIGGER: dict[LidState, str] = {
    LidState.LOCKED: "reported_locked",
    LidState.UNLOCKED: "reported_unlocked",
    LidState.OPEN: "reported_open",
    LidState.FORCED_OPEN: "reported_forced_open",
    LidState.CLOSED: "reported_closed",
}
if set(REPORT_TRIGGER) != set(LidState):  # checked at import, as dispatch.py checks its tables
    raise RuntimeError(f"lid_machine.py: no trigger for {sorted(set(LidState) - set(REPORT_TRIGGER))}")

TAMPER_REASON = "lid opened without an automatic or authorised opening (PT-2001 r.60)"


class LidOwner(Protocol):
    """What the lid machine needs of its owner (``Lid``, lid.py)."""

    status: LidStatus  # ``state`` (the leaf name) and ``unlock``

    def opened_before_restart(self) -> None: ...
    def tamper(self, reason: str) -> None: ...
    def opened_as_granted(self) -> None: ...
    def closed(self) -> None: ...


class LidMachine(HierarchicalMachine):
    state_cls = TableNode  # the table machine's: the same separator, the rule and guard kept for the diagram
    transition_cls = TableTransition


class LidModel:
    """The lid machine's model: its state is the lid's ``status.state`` (the snapshot's leaf name), so a restored
    snapshot is the machine's state with nothing else to set."""

    def __init__(self, owner: LidOwner) -> None:
        self.owner = owner

    @property
    def position(self) -> str:
        return LID_PATH[self.owner.status.state]

    @position.setter
    def position(self, path: str) -> None:
        self.owner.status.state = LID_LEAF[path]


def build_lid_machine(owner: LidOwner) -> LidMachine:
    """The lid machine on ``owner`` (``Lid``). Conditions read its status; callbacks are its methods."""
    model = LidModel(owner)

    def may_open(*_a: Any, **_k: Any) -> bool:
        return owner.status.unlock is not None

    def restart_opening(*_a: Any, restart_opening: bool = False, **_k: Any) -> bool:
        return restart_opening and owner.status.unlock is None

    def tampered(*_a: Any, **_k: Any) -> None:
        owner.tamper(TAMPER_REASON)

    transitions: list[dict[str, Any]] = [
        {
            "trigger": "reported_open",
            "source": "*",
            "dest": LID_PATH[LidState.OPEN],
            "conditions": [restart_opening],
            "after": [lambda *a, **k: owner.opened_before_restart()],
            "label": "the opening a restart interrupted (r.61): no tamper, the lock stays locked",
            "guard": "restart interrupted an automatic opening",
        },
        {
            "trigger": "reported_open",
            "source": "*",
            "dest": LID_PATH[LidState.FORCED_OPEN],
            "unless": [may_open],
            "after": [tampered],
            "label": "opened while it may not: tamper (r.60)",
            "guard": "no opening granted",
        },
        {
            "trigger": "reported_open",
            "source": "*",
            "dest": LID_PATH[LidState.OPEN],
            "after": [lambda *a, **k: owner.opened_as_granted()],
            "label": "opened as granted: the deadline to open ends (r.61)",
        },
        {
            "trigger": "reported_forced_open",
            "source": "*",
            "dest": LID_PATH[LidState.FORCED_OPEN],
            "after": [tampered],
            "label": "forced open: tamper (r.60)",
        },
        {
            "trigger": "reported_closed",
            "source": "*",
            "dest": LID_PATH[LidState.CLOSED],
            "after": [lambda *a, **k: owner.closed()],
            "label": "closed: locked again (r.60)",
        },
    ]
    for report, dest in (("reported_locked", LidState.LOCKED), ("reported_unlocked", LidState.UNLOCKED)):
        transitions.append(
            {"trigger": report, "source": "shut", "dest": LID_PATH[dest], "label": "lock report"}
        )
        transitions.append(
            {"trigger": report, "source": "opened", "dest": None, "label": "open until reported closed"}
        )
    return LidMachine(
        model=model,
        states=LID_TREE,
        transitions=transitions,
        initial=LID_PATH[LidState.LOCKED],
        auto_transitions=False,
        model_attribute="position",
    )
