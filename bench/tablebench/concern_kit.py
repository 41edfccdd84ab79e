"""What a test needs to build one concern of the table core alone (tests/test_concern_<name>.py): the step's
effect sink, a stand-in for the machine's gate, stand-ins for the collaborators' faces (controller/table/
concern.py) and a ``TableView`` (controller/table/view.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from controller.effects import Alert, Event, JournalRecord, Rejected, ShoeCommand
from controller.rules.profiles import Profile, load_profile
from controller.table import machine as m
from controller.table.machine_names import TableState, Trigger
from controller.table.profile import TableProfile, table_profile
from controller.table.sink import EffectSink
from controller.table.state import SessionState
from controller.table.view import TableView
from drivers.events import LidState

NOW = 1_790_000_000.0


def sink(now: float = NOW) -> EffectSink:
    fx = EffectSink()
    fx.begin(now)
    return fx


class StubGate:
    """The gate's face (controller/table/gate.py): the state, the triggers the machine allows now (``allowed``),
    and the transitions fired (``fired``); ``moves`` says where a fired trigger leads."""

    def __init__(
        self,
        state: TableState = TableState.BETTING,
        allowed: Iterable[Trigger] = (),
        *,
        resume_to: TableState | None = None,
        moves: dict[Trigger, TableState] | None = None,
    ) -> None:
        self.state, self.resume_to = state, resume_to
        self.allowed = set(allowed)
        self.moves = moves or {}
        self.fired: list[Trigger] = []

    def phase_state(self) -> TableState | None:
        return self.resume_to if self.state in m.FAULT_STATES else self.state

    def may(self, trigger: Trigger) -> bool:
        return trigger in self.allowed

    def has_trigger(self, trigger: Trigger) -> bool:
        return trigger in self.allowed

    def go(self, trigger: Trigger) -> None:
        if trigger not in self.allowed:
            raise RuntimeError(f"transition {trigger} refused in state {self.state}")
        self.fired.append(trigger)
        self.state = self.moves.get(trigger, self.state)

    def allow(self, trigger: Trigger, action: str) -> None:
        if trigger not in self.allowed:
            raise Rejected(f"{action} not allowed in state {self.state}")


class Stub:
    """A collaborator's face: the attributes given, and any method call recorded in ``calls`` (answered from
    ``returns``: a value, or a function of the call's arguments)."""

    def __init__(self, returns: dict[str, Any] | None = None, **attrs: Any) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._returns = returns or {}
        for key, value in attrs.items():
            setattr(self, key, value)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            answer = self._returns.get(name)
            return answer(*args, **kwargs) if callable(answer) else answer

        return method

    def called(self, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        return [(args, kwargs) for n, args, kwargs in self.calls if n == name]


def rules(name: str = "pt-2001") -> Profile:
    return load_profile(name)


def tprofile(name: str = "pt-2001", *, continuous: bool = True) -> TableProfile:
    return table_profile(rules(name), continuous=continuous)


def setup(name: str = "pt-2001", *, continuous: bool = True, session_id: str = "20260101-120000") -> Stub:
    """The setup's face (concern.SetupFace) of an open session."""
    return Stub(
        session=SessionState(id=session_id, no=1, opened_by="chief"),
        tp=tprofile(name, continuous=continuous),
        rules_profile=rules(name),
        shuffler="continuous" if continuous else "batch",
        profile_name=name,
    )


def lid(position: LidState = LidState.LOCKED, unlock: Any = None, *, is_open: bool = False) -> Stub:
    """The lid's face (concern.LidFace)."""
    return Stub({"is_open": is_open}, position=position, unlock=unlock)


def view(**changes: Any) -> TableView:
    """A table between rounds with nothing on it; ``changes``: the fields that differ."""
    base = TableView(
        state=TableState.BETTING,
        resume_to=None,
        session_id="20260101-120000",
        profile_name="pt-2001",
        shuffler="continuous",
        tp=tprofile(),
        decks=rules().decks,
        round=None,
        round_void=False,
        interrupted_round=False,
        uninserted=(),
        awaiting_replacement=False,
        bets={},
        chips=(),
        faults={},
        lid=LidState.LOCKED,
        lid_unlocked_by=None,
        inside=312,
        out=0,
        shoe_no=1,
        dealt_this_shoe=0,
        last_seq=0,
        last_round=None,
        shuffling=False,
        device_known=True,
        outputs={"lid_lock": True, "warning_light": False},
        dealer_on_duty=None,
        players_seated=False,
    )
    return replace(base, **changes)


# ---- what the sink holds


def records(fx: EffectSink, kind: str | None = None) -> list[dict[str, Any]]:
    return [e.data for e in fx.items if isinstance(e, JournalRecord) and (kind is None or e.kind == kind)]


def record_kinds(fx: EffectSink) -> list[str]:
    return [e.kind for e in fx.items if isinstance(e, JournalRecord)]


def alerts(fx: EffectSink) -> list[Alert]:
    return [e for e in fx.items if isinstance(e, Alert)]


def events(fx: EffectSink, kind: str | None = None) -> list[dict[str, Any]]:
    return [e.data for e in fx.items if isinstance(e, Event) and (kind is None or str(e.kind) == kind)]


def commands(fx: EffectSink) -> list[Any]:
    return [e.command for e in fx.items if isinstance(e, ShoeCommand)]
