"""Which code handles which input: explicit tables, checked complete when this module is imported.

Every device event class (drivers/events.py), every dealer action and every supervisor action
(controller/actions.py) has exactly one entry; an input not in a table is refused with a reason
(``Rejected``), never recorded as "ignored". A renamed event or action fails the import, not a round."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.actions import DEALER_ACTIONS, DEALER_PLAY, SUPERVISOR_ACTIONS
from controller.table import machine as m
from controller.table.machine_names import TableState
from drivers import events as ev

if TYPE_CHECKING:
    from controller.table.core import TableCore

DeviceHandler = Callable[["TableCore", Any], None]  # (core, event)
DealerHandler = Callable[["TableCore", str, dict[str, Any]], None]  # (core, action, args)
SupervisorHandler = Callable[["TableCore", str, dict[str, Any]], None]  # (core, user, args)

# Each entry names the concern (docs/architecture.md, "The table core") and its method.
DEVICE_HANDLERS: dict[type[ev.DeviceEvent], DeviceHandler] = {
    ev.Identified: lambda core, e: core.shoe_link.on_identified(e),
    ev.LinkUp: lambda core, e: core.shoe_link.on_link_up(e),
    ev.LinkDown: lambda core, e: core.shoe_link.on_link_down(e),
    ev.CardOut: lambda core, e: core.card_flow.on_card_out(e),
    ev.CardUnreadable: lambda core, e: core.card_flow.on_card_unreadable(e),
    ev.CutCardOut: lambda core, e: core.shoe_cycle.on_cut_card_out(e),
    ev.WarningCardOut: lambda core, e: core.shoe_cycle.on_warning_card_out(e),
    ev.LidChanged: lambda core, e: core.lid_ctl.on_changed(e),
    ev.ShuffleStarted: lambda core, e: core.shoe_cycle.on_shuffle_started(e),
    ev.ShuffleFinished: lambda core, e: core.shuffle_finished(e),
    ev.CardsInside: lambda core, e: core.cards_inside(e),
    ev.DiscardInserted: lambda core, e: core.shoe_cycle.on_discard_inserted(e),
    ev.DeckCheckResult: lambda core, e: core.deck_checks.on_deck_check_result(e),
    ev.Jammed: lambda core, e: core.fault_ctl.on_jammed(e),
    ev.JamCleared: lambda core, e: core.fault_ctl.on_jam_cleared(e),
    ev.DeviceError: lambda core, e: core.fault_ctl.on_device_error(e),
}


def _play(core: TableCore, action: str, args: dict[str, Any]) -> None:
    core.dealer_in.play(action, args)


DEALER_HANDLERS: dict[str, DealerHandler] = {
    "place_bet": lambda core, _action, args: core.dealer_in.place_bet(args),
    "clear_bet": lambda core, _action, args: core.dealer_in.clear_bet(args),
    "jackpot_chip": lambda core, _action, args: core.dealer_in.jackpot_chip(args),
    "no_more_bets": lambda core, _action, _args: core.dealer_in.no_more_bets(),
    **dict.fromkeys(DEALER_PLAY, _play),
    "next_round": lambda core, _action, args: core.dealer_in.next_round(bool(args.get("reshuffle"))),
    "cut": lambda core, _action, args: core.shoe_cycle.cut(args),
    "dealer_sign_in": lambda core, _action, args: core.dealer_duty.sign_in(args),
    # issue 41: by the dealer on duty (the dealer role names nobody else: docs/mqtt.md)
    "player_in": lambda core, _action, args: core.players.player_in(args, by=core.dealer_duty.by()),
    "player_out": lambda core, _action, args: core.players.player_out(args, by=core.dealer_duty.by()),
}


def _jackpot(action: str) -> SupervisorHandler:
    """The four jackpot actions: one handler, the jackpot seam's own dispatch (controller/jackpot)."""
    return lambda core, user, args: core.supervisor.jackpot_action(action, user, args)


SUPERVISOR_HANDLERS: dict[str, SupervisorHandler] = {
    "open_table": lambda core, user, args: core.supervisor.sv_open_table(user, args),
    "close_table": lambda core, user, args: core.supervisor.sv_close_table(user, args),
    "clear_jam": lambda core, user, args: core.fault_ctl.sv_clear_jam(user, args),
    "clear_link": lambda core, user, args: core.shoe_link.sv_clear_link(user, args),
    "unlock_lid": lambda core, user, args: core.lid_ctl.sv_unlock_lid(user, args),
    "lock_lid": lambda core, user, args: core.fault_ctl.sv_lock_lid(user, args),
    "replace_card": lambda core, user, args: core.card_flow.sv_replace_card(user, args),
    "ack_alert": lambda core, user, args: core.supervisor.sv_ack_alert(user, args),
    "ack_deck_check": lambda core, user, args: core.deck_checks.sv_ack_deck_check(user, args),
    "jackpot_verify": _jackpot("jackpot_verify"),
    "jackpot_pay": _jackpot("jackpot_pay"),
    "jackpot_correct": _jackpot("jackpot_correct"),
    "jackpot_correct_confirm": _jackpot("jackpot_correct_confirm"),
    "void_round": lambda core, user, args: core.supervisor.sv_void_round(user, args),
    "run_deck_check": lambda core, user, args: core.deck_checks.sv_run_deck_check(user, args),
    "clear_shoe_fault": lambda core, user, args: core.fault_ctl.sv_clear_shoe_fault(user, args),
    "clear_journal_io": lambda core, user, args: core.fault_ctl.sv_clear_journal_io(user, args),
    "clear_integrity": lambda core, user, args: core.fault_ctl.sv_clear_integrity(user, args),
    "player_in": lambda core, user, args: core.players.player_in(args, by=user),  # issue 41
    "player_out": lambda core, user, args: core.players.player_out(args, by=user),
}

# The states in which a count from the shoe is part of a procedure; in any other, a count that differs from the
# table's is a warning (PT-2001 r.53-55: loading, the shoe's reshuffle, the resync after a fault, the closing).
CountReport = Callable[["TableCore", int, bool], None]  # (core, count, after a shuffle)
COUNT_REPORTS: dict[TableState, CountReport] = {
    TableState.LOADING: lambda core, count, _shuffled: core.shoe_cycle.check_loaded(count),
    TableState.SHUFFLING: lambda core, count, _shuffled: core.shoe_cycle.shuffled_count(count),
    TableState.RESYNC: lambda core, count, _shuffled: core.shoe_link.resync(count),
    TableState.CLOSING: lambda core, count, shuffled: core.deck_checks.closing_count(
        count, returned=shuffled
    ),
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
    if set(COUNT_REPORTS) - set(m.STATES):  # a renamed state would silently lose its procedure
        problems.append(f"COUNT_REPORTS names no state {sorted(set(COUNT_REPORTS) - set(m.STATES))}")
    if problems:
        raise RuntimeError("controller/table/dispatch.py is incomplete: " + "; ".join(problems))


check_complete()
