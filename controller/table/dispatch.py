"""Which code handles which input: explicit tables, checked complete when this module is imported.

Every device event class (drivers/events.py), every dealer action and every supervisor action
(controller/actions.py) has exactly one entry; an input not in a table is refused with a reason
(``Rejected``), never recorded as "ignored". A renamed event or action fails the import, not a round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.actions import DEALER_ACTIONS, DEALER_PLAY, SUPERVISOR_ACTIONS
from controller.table.cards import CardFlow
from controller.table.faults import Faults
from controller.table.lid import Lid
from controller.table.link import ShoeLink
from controller.table.shoe_cycle import ShoeCycle
from controller.table.supervisor import SupervisorActions
from drivers import events as ev

DeviceHandler = Callable[[Any, Any], None]  # (core, event)
DealerHandler = Callable[[Any, str, dict[str, Any]], None]  # (core, action, args)
SupervisorHandler = Callable[[Any, str, dict[str, Any]], None]  # (core, user, args)

DEVICE_HANDLERS: dict[type[ev.DeviceEvent], DeviceHandler] = {
    ev.Identified: ShoeLink._on_Identified,
    ev.LinkUp: ShoeLink._on_LinkUp,
    ev.LinkDown: ShoeLink._on_LinkDown,
    ev.CardOut: CardFlow._on_CardOut,
    ev.CardUnreadable: CardFlow._on_CardUnreadable,
    ev.CutCardOut: ShoeCycle._on_CutCardOut,
    ev.WarningCardOut: ShoeCycle._on_WarningCardOut,
    ev.LidChanged: Lid._on_LidChanged,
    ev.ShuffleStarted: ShoeCycle._on_ShuffleStarted,
    ev.ShuffleFinished: ShoeCycle._on_ShuffleFinished,
    ev.CardsInside: ShoeCycle._on_CardsInside,
    ev.DiscardInserted: ShoeCycle._on_DiscardInserted,
    ev.DeckCheckResult: ShoeCycle._on_DeckCheckResult,
    ev.Jammed: Faults._on_Jammed,
    ev.JamCleared: Faults._on_JamCleared,
    ev.DeviceError: Faults._on_DeviceError,
}


def _play(core: Any, action: str, args: dict[str, Any]) -> None:
    core._play(action, args)


DEALER_HANDLERS: dict[str, DealerHandler] = {
    "place_bet": lambda core, _action, args: core._place_bet(args),
    "clear_bet": lambda core, _action, args: core._clear_bet(args),
    "jackpot_chip": lambda core, _action, args: core._jackpot_chip(args),
    "no_more_bets": lambda core, _action, _args: core._no_more_bets(),
    **dict.fromkeys(DEALER_PLAY, _play),
    "next_round": lambda core, _action, args: core._next_round(bool(args.get("reshuffle"))),
    "cut": lambda core, _action, args: core._cut(args),
    "dealer_sign_in": lambda core, _action, args: core._dealer_sign_in(args),
}

SUPERVISOR_HANDLERS: dict[str, SupervisorHandler] = {
    "open_table": SupervisorActions._sv_open_table,
    "close_table": SupervisorActions._sv_close_table,
    "clear_jam": Faults._sv_clear_jam,
    "clear_link": ShoeLink._sv_clear_link,
    "unlock_lid": Lid._sv_unlock_lid,
    "lock_lid": Lid._sv_lock_lid,
    "replace_card": CardFlow._sv_replace_card,
    "ack_alert": SupervisorActions._sv_ack_alert,
    "ack_deck_check": ShoeCycle._sv_ack_deck_check,
    "jackpot_verify": SupervisorActions._sv_jackpot_verify,
    "jackpot_pay": SupervisorActions._sv_jackpot_pay,
    "jackpot_correct": SupervisorActions._sv_jackpot_correct,
    "jackpot_correct_confirm": SupervisorActions._sv_jackpot_correct_confirm,
    "void_round": SupervisorActions._sv_void_round,
    "run_deck_check": ShoeCycle._sv_run_deck_check,
    "clear_shoe_fault": Faults._sv_clear_shoe_fault,
    "clear_journal_io": Faults._sv_clear_journal_io,
    "clear_integrity": Faults._sv_clear_integrity,
}


def device_event_classes() -> set[type[ev.DeviceEvent]]:
    return {
        cls
        for cls in vars(ev).values()
        if isinstance(cls, type) and issubclass(cls, ev.DeviceEvent) and cls is not ev.DeviceEvent
    }


def check_complete() -> None:
    """Each table covers exactly its list; raises at import otherwise."""
    problems = []
    for name, table, expected in (
        ("device events", set(DEVICE_HANDLERS), device_event_classes()),
        ("dealer actions", set(DEALER_HANDLERS), set(DEALER_ACTIONS)),
        ("supervisor actions", set(SUPERVISOR_HANDLERS), set(SUPERVISOR_ACTIONS)),
    ):
        if table != expected:
            missing = sorted(map(str, expected - table))
            extra = sorted(map(str, table - expected))
            problems.append(f"{name}: no handler for {missing}, handler for unknown {extra}")
    if problems:
        raise RuntimeError("controller/table/dispatch.py is incomplete: " + "; ".join(problems))


check_complete()
