"""The core's dispatch tables, built once from what each concern declares (``Concern.handlers()``, concern.py).

Every device event class (drivers/events.py), every dealer action and every supervisor action
(controller/actions.py) has exactly one handler; two concerns claiming one input, or an input nobody claims, is
an error when the core is built (``Rejected`` is for inputs from outside, never for a gap here). An input not
in a table is refused with a reason (``Rejected``), never recorded as "ignored"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.actions import DEALER_ACTIONS, SUPERVISOR_ACTIONS
from controller.table import machine as m
from controller.table.concern import Concern, CountHandler, DealerHandler, DeviceHandler, SupervisorHandler
from controller.table.machine_names import TableState
from drivers import events as ev


def device_event_classes() -> set[type[ev.DeviceEvent]]:
    return {
        cls
        for cls in vars(ev).values()
        if isinstance(cls, type) and issubclass(cls, ev.DeviceEvent) and cls is not ev.DeviceEvent
    }


def _claim(table: dict[Any, Any], owner: dict[Any, str], name: str, declared: Mapping[Any, Any]) -> list[str]:
    problems = []
    for key, handler in declared.items():
        if key in table:
            problems.append(f"{key} claimed by both {owner[key]} and {name}")
        table[key], owner[key] = handler, name
    return problems


class DispatchTables:
    """Which concern's method handles which input: filled once by ``build`` (the core's constructor)."""

    def __init__(self) -> None:
        self.device: dict[type[ev.DeviceEvent], DeviceHandler] = {}
        self.dealer: dict[str, DealerHandler] = {}
        self.supervisor: dict[str, SupervisorHandler] = {}
        self.counts: dict[TableState, CountHandler] = {}

    def build(self, concerns: Iterable[Concern]) -> None:
        """Walk the concerns; raises ``RuntimeError`` unless each table covers exactly its list, once."""
        problems: list[str] = []
        owners: tuple[dict[Any, str], ...] = ({}, {}, {}, {})
        tables: tuple[dict[Any, Any], ...] = (self.device, self.dealer, self.supervisor, self.counts)
        for concern in concerns:
            declared = concern.handlers()
            parts: tuple[Mapping[Any, Any], ...] = (
                declared.device,
                declared.dealer,
                declared.supervisor,
                declared.counts,
            )
            for table, owner, part in zip(tables, owners, parts, strict=True):
                problems += _claim(table, owner, concern.name, part)
        covered: tuple[tuple[str, set[Any], set[Any]], ...] = (
            ("device events", set(self.device), set(device_event_classes())),
            ("dealer actions", set(self.dealer), set(DEALER_ACTIONS)),
            ("supervisor actions", set(self.supervisor), set(SUPERVISOR_ACTIONS)),
        )
        for name, claimed, expected in covered:
            if claimed != expected:
                missing = sorted(map(str, expected - claimed))
                extra = sorted(map(str, claimed - expected))
                problems.append(f"{name}: no handler for {missing}, handler for unknown {extra}")
        if set(self.counts) - set(m.STATES):  # a renamed state would silently lose its procedure
            problems.append(f"count handlers name no state {sorted(set(self.counts) - set(m.STATES))}")
        if problems:
            raise RuntimeError("the table's concerns do not cover the inputs once: " + "; ".join(problems))

    def count_handler(self, state: TableState) -> CountHandler | None:
        """The procedure the shoe's count is part of in ``state`` (PT-2001 r.53-55), or None."""
        return self.counts.get(state)
