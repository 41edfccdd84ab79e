"""Cross-check of the safety guarantees end to end (product guide; PT-2001 r.17, r.51, r.55, r.57, r.60).

"On any fault the lid stays locked and the warning light shows what is wrong until an authorised person clears
it. Nothing ever reveals the cards still inside the shoe." The pure core is driven through the Harness with
random input sequences (hypothesis); the shell (``TableController``) with the fake GPIO board. The bugs this
cross-check found are pinned here (the docstring names the rule and what went wrong before the fix).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.table import SAFETY_PINS, open_continuous

from controller.effects import Alert, GpioWrite, Rejected, ShoeCommand
from controller.gpio import FakeBoard
from controller.journal.store import Journal
from controller.mqtt.alerts import KINDS
from controller.shell.controller import LogAlerts, TableController
from controller.table import inputs
from controller.table import machine as m
from controller.table.core import CARD_CODES
from controller.table.messages import messages
from drivers import events as ev
from tablebench.table_testing import Harness

DOCS = Path(__file__).resolve().parent.parent / "docs"
FULL = {code: 6 for code in CARD_CODES}


# ---------------------------------------------------------------- helpers


def fault_active(h: Harness) -> bool:
    """A fault the warning light must show: a fault state (jam, link down, tamper, resync after a restart or a
    fault), a failed deck check (r.55) or a damaged card awaiting the chief inspector (r.51)."""
    c = h.core
    return (
        c.state in m.FAULT_STATES
        or bool(c.faults)
        or c.state == "deck_check_failed"
        or c.pending_replacement is not None
    )


def authorised_unlock(h: Harness) -> bool:
    """An opening a supervisor authorised: ``unlock_lid`` (r.51, r.60), or the loading (r.53-54) and the
    closing (r.55) the supervisor started. The machine's automatic lid cycle ("auto") is not one."""
    unlock = h.core.lid.unlocked_by or ""
    return unlock.startswith("supervisor:") or unlock in ("loading", "closing")


def start(h: Harness, where: str) -> None:
    """Put the table somewhere interesting before the random inputs."""
    if where == "closed":
        return
    if where == "loading":
        h.sup("open_table", profile="pt-2001", shuffler="continuous")
        return
    h.open_continuous()
    if where == "betting":
        return
    h.start_round({1: 1000})
    h.card("2C")  # burn (r.10)
    h.card("TS")
    if where == "dealing":
        return
    for code in ("6D", "7S", "8C"):
        h.card(code)
    h.dealer("stand")
    h.card("5H")
    if where == "settled":
        return
    h.lid_cycle()
    if where == "returned":
        return
    h.sup("close_table")  # "closing": the discard goes in first (r.55)


ROLES = ["supervisor", "technician", "dealer", "pit", ""]
SUPERVISOR_ACTIONS = [
    "clear_jam",
    "clear_link",
    "unlock_lid",
    "lock_lid",
    "replace_card",
    "ack_deck_check",
    "void_round",
    "open_table",
    "close_table",
    "run_deck_check",
    "ack_alert",
]
DEALER_ACTIONS = [
    "hit",
    "stand",
    "next_round",
    "no_more_bets",
    "place_bet",
    "clear_jam",
    "clear_link",
    "unlock_lid",
    "lock_lid",
]


@st.composite
def an_input(draw: st.DrawFn) -> Any:
    """One input; device events that need the current shoe_seq are built at apply time (a callable)."""
    kind = draw(
        st.sampled_from(["device", "card", "dealer", "supervisor", "restart", "failed", "tick", "gpio"])
    )
    if kind == "device":
        event = draw(
            st.sampled_from(
                [
                    ev.Jammed(ev.JamLocation.OUTPUT),
                    ev.Jammed(ev.JamLocation.SHUFFLER),
                    ev.JamCleared(),
                    ev.LinkDown("unplugged"),
                    ev.LinkUp(),
                    *(ev.LidChanged(s) for s in ev.LidState),
                    ev.ShuffleStarted(),
                    ev.ShuffleFinished(312),
                    ev.DiscardInserted(2),
                    ev.DeviceError(16, "jammed"),
                    ev.DeckCheckResult(FULL),
                    ev.DeckCheckResult(FULL | {"AS": 5}),
                ]
            )
        )
        return inputs.DeviceInput(event)
    if kind == "card":
        code = draw(st.sampled_from(CARD_CODES))
        unreadable = draw(st.booleans())
        skip = draw(st.sampled_from([1, 1, 1, 2]))  # sometimes a card the controller did not see
        damaged = draw(st.booleans())

        def make(h: Harness) -> dict[str, Any]:
            seq = h.core.shoe.last_seq + skip
            if unreadable:
                return inputs.DeviceInput(ev.CardUnreadable(seq, damaged=damaged))
            return inputs.DeviceInput(ev.CardOut(code[0], code[1], seq))

        return make
    if kind == "dealer":
        return inputs.dealer(draw(st.sampled_from(DEALER_ACTIONS)), {"seat": 1, "amount": 1000})
    if kind == "supervisor":
        action = draw(st.sampled_from(SUPERVISOR_ACTIONS))
        role = draw(st.sampled_from(ROLES))
        return inputs.supervisor("ana", action, {"card": "AS", "profile": "pt-2001"}, role=role)
    if kind == "restart":
        return inputs.Restart()
    if kind == "failed":
        command = draw(
            st.sampled_from(["OpenLid", "LockLid", "UnlockLid", "SetWarningLight", "ReportCounts"])
        )
        return inputs.CommandFailed(command, "refused", link=draw(st.booleans()))
    if kind == "tick":
        return inputs.Tick()
    return inputs.GpioInput("lid_switch", draw(st.booleans()))


# ---------------------------------------------------------------- 1. faults: light on, lid locked


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.sampled_from(["closed", "loading", "betting", "dealing", "settled", "returned", "closing"]),
    steps=st.lists(an_input(), min_size=1, max_size=40),
)
def test_any_fault_keeps_the_light_on_and_the_lid_locked_until_authorised_clearing_pt2001_r51_r55_r60(
    where: str, steps: list[Any]
) -> None:
    """PT-2001 r.51 (jam, damaged card), r.55 (failed deck check), r.60 (lid forced), a restart, link loss,
    failed shoe commands: after EVERY input, a fault active => warning light on and lid locked unless an
    authorised opening is recorded; the GPIO board (fed the core's GpioWrite effects, and the safe state on
    restart as the shell does) equals the core's outputs; the shoe's own light follows; a dealer input never
    clears anything; a jam, a tamper, a failed deck check and a pending replacement clear only through a
    supervisor (or, for a jam or a link fault, a technician) action."""
    h = Harness()
    start(h, where)
    board = dict(h.core.outputs)
    for step_input in steps:
        inp = step_input(h) if callable(step_input) else step_input
        c = h.core
        before = (fault_active(h), set(c.faults), c.state, c.pending_replacement is not None)
        try:
            step = h.apply(inp)
        except Rejected:
            continue
        if isinstance(inp, inputs.Restart):  # the shell drove the board to its safe state first
            board = {"lid_lock": True, "warning_light": True}
        for fx in step.effects:
            if isinstance(fx, GpioWrite):
                board[fx.name] = fx.value
        lights = [
            fx.command.on
            for fx in step.effects
            if isinstance(fx, ShoeCommand) and isinstance(fx.command, ev.SetWarningLight)
        ]
        assert board == c.outputs, inp
        assert c.outputs["lid_lock"] is (c.lid.unlock is None), inp
        if lights:
            assert lights[-1] is c.outputs["warning_light"], inp
        if fault_active(h):
            assert c.outputs["warning_light"] is True, (inp, c.state, c.faults)
            assert c.outputs["lid_lock"] is True or authorised_unlock(h), (inp, c.state, c.lid)
        gone = before[1] - set(c.faults)
        if isinstance(inp, inputs.DealerInput):
            assert not gone and (fault_active(h) or not before[0]), inp
        by_supervisor = isinstance(inp, inputs.SupervisorInput)
        assert not (gone & {"jam", "tamper", "link_down"}) or by_supervisor, inp
        # never by the link coming back (product guide: an authorised person clears it)
        if "link_down" in gone:
            assert isinstance(inp, inputs.SupervisorInput), inp
            assert inp.action == "clear_link" and inp.role in ("supervisor", "technician"), inp
        if before[2] == "deck_check_failed" and c.state != "deck_check_failed":
            assert isinstance(inp, inputs.SupervisorInput) and inp.action == "ack_deck_check", inp
        if before[3] and c.pending_replacement is None:
            assert isinstance(inp, inputs.SupervisorInput) and inp.action in ("replace_card", "void_round"), (
                inp
            )


@pytest.mark.parametrize("role", ["dealer", "technician", "pit", "Supervisor"])
@pytest.mark.parametrize(
    "action, args",
    [("lock_lid", {}), ("unlock_lid", {}), ("ack_deck_check", {}), ("replace_card", {"card": "AS"})],
)
def test_only_a_supervisor_clears_or_opens_pt2001_r51_r55_r60(role: str, action: str, args: dict) -> None:
    """docs/mqtt.md roles: lock/unlock the lid, acknowledge a failed deck check, replace a damaged card need a
    chief inspector (PT-2001 r.51, r.55, r.60); any other role is refused naming the rule, nothing changes."""
    h = Harness()
    h.open_continuous()
    before = h.core.snapshot()
    with pytest.raises(Rejected, match=r"r\.51"):
        h.apply(inputs.supervisor("someone", action, args, role=role))
    assert h.core.snapshot() == before


def test_a_dealer_cannot_open_the_lid_or_clear_a_jam_pt2001_r51_r60() -> None:
    """PT-2001 r.60: the dealer never opens the lid by hand; r.51: a chief inspector (or a technician) clears
    a jam. The dealer's command set has no such action: refused, the jam stays, light on, lid locked."""
    h = Harness()
    h.open_continuous()
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    h.dev(ev.JamCleared())
    for action in ("unlock_lid", "clear_jam", "lock_lid", "ack_alert"):
        with pytest.raises(Rejected):
            h.dealer(action)
    assert h.core.state == "jammed" and h.core.outputs == {"lid_lock": True, "warning_light": True}
    h.apply(inputs.supervisor("tech-joao", "clear_jam", role="technician"))  # docs/mqtt.md: a technician may
    assert h.core.state == "resync" and h.core.outputs["warning_light"] is True  # counts first
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "betting" and h.core.outputs == {"lid_lock": True, "warning_light": False}


def test_automatic_void_keeps_the_lid_locked_while_a_damaged_card_awaits_replacement_pt2001_r51() -> None:
    """PT-2001 r.51: a damaged card awaits the chief inspector, warning light on. Before the fix, a round voided
    by the controller itself (a card lost after a restart) started the automatic lid cycle: the lid was
    unlocked ("auto") with the fault still shown. Now the lid stays locked until the replacement, which then
    starts the deferred lid cycle (r.59)."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    h.card("2C")
    h.card("TS")
    h.unreadable(damaged=True)
    h.apply(inputs.Restart())
    h.clear()
    h.dev(ev.CardsInside(h.core.inside - 1))  # one card left unseen while the controller was down
    assert h.core.state == "settled" and h.core.round_void
    assert h.core.outputs == {"lid_lock": True, "warning_light": True}
    assert h.core.lid.unlock is None and not h.commands(ev.OpenLid)
    h.clear()
    h.sup("replace_card", user="chief-rui", card="9D")
    assert h.records("card_replaced")[0]["card"] == "9D"
    assert h.core.outputs["warning_light"] is False
    assert h.commands(ev.OpenLid) and h.core.lid.unlock == "auto"  # now the cards may go in


def test_device_error_is_journaled_and_alerted_not_dropped() -> None:
    """CONTRIBUTING: bad input is counted, logged and reported with a reason. Before the fix a DEVICE_ERROR
    from the shoe or the reader was journaled only as ``device_event_ignored``, without its code or text."""
    h = Harness()
    h.open_continuous()
    h.dev(ev.DeviceError(0x12, "lid open"))
    assert h.records("device_error") == [{"code": 0x12, "text": "lid open", "state": "betting"}]
    assert "18" in h.alerts("device_error")[0].reason and "lid open" in h.alerts("device_error")[0].reason


async def test_gpio_board_gets_the_outputs_after_commit_and_safe_state_at_start_and_stop(
    tmp_path: Path,
) -> None:
    """PT-2001 r.51, r.60 through the shell: the board is driven to the safe state (lid locked, light on) at
    start, mirrors the core's outputs after every committed input (jam on, cleared by a supervisor), and is
    safe again at stop; a lid switch opening while locked is a tamper with the light on."""
    journal = Journal(tmp_path / "journal.db", table_id="T1")
    board = FakeBoard()
    board.setup(SAFETY_PINS)
    board.values.update(lid_lock=False, warning_light=False)  # as if a previous process left them so
    tc = TableController(journal, None, board=board, alerts=LogAlerts())
    try:
        await tc.start()
        assert board.history[:2] == [("lid_lock", True), ("warning_light", True)]  # safe_state first
        assert board.values == {"lid_lock": True, "warning_light": False, "lid_switch": False}
        await open_continuous(tc)
        assert tc.core.state == "betting"
        await tc.submit(inputs.DeviceInput(ev.Jammed(ev.JamLocation.OUTPUT)))
        assert board.values["warning_light"] is True and board.values["lid_lock"] is True
        with pytest.raises(Rejected):
            await tc.dealer_input("clear_jam")
        await tc.submit(inputs.DeviceInput(ev.JamCleared()))
        await tc.supervisor_action("ana", "clear_jam")
        await tc.submit(inputs.DeviceInput(ev.CardsInside(312)))
        assert tc.core.state == "betting"
        assert {k: board.values[k] for k in ("lid_lock", "warning_light")} == tc.core.outputs
        assert tc.core.outputs == {"lid_lock": True, "warning_light": False}
        await tc.submit(inputs.GpioInput("lid_switch", True))
        assert tc.core.state == "tamper" and board.values["warning_light"] is True
        board.history.clear()
    finally:
        await tc.stop()
        journal.close()
    assert ("lid_lock", True) in board.history and ("warning_light", True) in board.history
    assert board.values["lid_lock"] is True and board.values["warning_light"] is True


def test_every_alert_the_core_raises_is_a_kind_the_alert_manager_accepts_pt2001_r51_r55() -> None:
    """PT-2001 r.55 (failed deck check) and r.51 (damaged card) alerts must reach the floor (alerts/open)."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    h.card("2C")
    h.unreadable(damaged=True)
    h.sup("void_round")
    h.lid_cycle()
    h.sup("close_table")
    h.dev(ev.DeckCheckResult(FULL | {"AS": 5}))
    kinds = {a.kind for a in h.alerts()}
    assert {"card_unreadable", "deck_check", "round_void"} <= kinds
    assert kinds <= set(KINDS), sorted(kinds - set(KINDS))


# ---------------------------------------------------------------- 2. nothing reveals the cards inside


CODE = re.compile(r"\b[2-9TJQKA][SHDC]\b")


def codes_in(data: Any) -> set[str]:
    return set(CODE.findall(repr(data)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=st.permutations(CARD_CODES).map(lambda p: list(p[:12])),
    replace_hole=st.booleans(),
    extra=st.lists(an_input(), max_size=8),
)
def test_no_document_reveals_cards_inside_or_the_hole_card_pt2001_r17_r57(
    order: list[str], replace_hole: bool, extra: list[Any]
) -> None:
    """PT-2001 r.57: nothing published (state/*, events/*, alerts), no field of ``view()`` names a card that has
    not come out of the shoe; r.17: the dealer's hole card is withheld everywhere until the dealer turns it
    over. Before the fix, a damaged hole card replaced by the inspector was published in ``events/shoe``
    ``card_replaced`` with its code."""
    h = Harness()
    h.open_continuous()
    h.clear()
    h.dealer("place_bet", seat=1, amount=500)
    h.dealer("no_more_bets")
    burn, p1, up, p2, hole = order[:5]
    out: set[str] = set()
    for code in (burn, p1, up, p2):
        h.card(code)
        out.add(code)
    if replace_hole:
        h.unreadable(damaged=True)
        h.sup("replace_card", card=hole)
    else:
        h.card(hole)
    rnd = h.core.round
    if rnd.cards[-1]["recipient"] != "dealer" or not h.core.view()["round_active"]:
        return  # the round ended on the initial deal (e.g. a blackjack): the hole card is shown anyway
    revealed = False
    for step_input in [*extra, inputs.dealer("stand")]:
        inp = step_input(h) if callable(step_input) else step_input
        try:
            h.apply(inp)
            accepted = True
        except Rejected:
            accepted = False
        if isinstance(inp, inputs.DeviceInput) and isinstance(inp.event, ev.CardOut):
            out.add(inp.event.code)
        if accepted and isinstance(inp, inputs.SupervisorInput) and inp.action == "replace_card":
            out.add(str(inp.args.get("card")))  # the inspector's replacement is on the table, not inside
        revealed = revealed or any(e.data.get("phase") == "hole_card_revealed" for e in messages(h.effects))
        published = [e.data for e in messages(h.effects) if e.topic != "events/deck_check"]
        published += [e.details | {"reason": e.reason} for e in h.effects if isinstance(e, Alert)]
        published.append(h.core.view())
        for data in published:
            leaked = codes_in(data) - out - ({hole} if revealed else set())
            assert not leaked, (leaked, data)
        if not revealed:
            assert all(hole not in codes_in(d) or hole in out for d in published), hole
    assert h.records("card_replaced" if replace_hole else "card")  # the journal keeps the real card


def test_replaced_hole_card_is_withheld_until_revealed_pt2001_r17_r51() -> None:
    """PT-2001 r.17 with r.51: the replacement of a damaged face-down hole card is reported (events/shoe
    ``card_replaced`` with ``hidden: true``, no code) and recorded with its code in the journal; the code is
    published only when the dealer turns it over."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    for code in ("2C", "TS", "6D", "7S"):
        h.card(code)
    h.unreadable(damaged=True)
    h.clear()
    h.sup("replace_card", user="chief-rui", card="KH")
    shoe = [e.data for e in messages(h.effects) if e.topic == "events/shoe"]
    assert shoe == [
        {
            "procedure": "card_replaced",
            "shoe_seq": h.seq,
            "damaged": True,
            "user": "chief-rui",
            "hidden": True,
        }
    ]
    assert h.records("card_replaced")[0]["card"] == "KH"
    assert not any("KH" in codes_in(e.data) for e in messages(h.effects))
    h.clear()
    h.dealer("stand")  # the dealer turns the hole card over
    assert any(
        e.data.get("phase") == "hole_card_revealed" and e.data["card"] == "KH" for e in messages(h.effects)
    )


def test_replaced_player_card_is_reported_with_its_code_pt2001_r51() -> None:
    """PT-2001 r.51: a replaced card dealt face up (here the player's) is reported with its code."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    h.card("2C")
    h.unreadable(damaged=False)
    h.clear()
    h.sup("replace_card", card="TS")
    shoe = [e.data for e in messages(h.effects) if e.topic == "events/shoe"]
    assert shoe[0]["card"] == "TS" and "hidden" not in shoe[0]
    kinds = [e.topic for e in messages(h.effects) if e.topic.startswith("events/")]
    assert kinds.index("events/shoe") < kinds.index("events/card")  # reported before the card's own event


def test_emulator_doc_warns_the_control_channel_is_a_bench_tool_pt2001_r57() -> None:
    """docs/emulator.md: the control channel (and the scenario's ``order``) is a test/bench tool that can reveal
    or choose the cards inside (``queue`` answers whether a card is inside); the product must not use it."""
    text = " ".join((DOCS / "emulator.md").read_text().replace("**", "").split())
    section = text[text.index("## 3. Control socket") :]
    assert "test and bench tool only" in section
    assert "`queue`" in section and "`card_times`" in section


@pytest.mark.parametrize(
    "command, severity",
    [("LockLid", "critical"), ("SetWarningLight", "warning"), ("StartShuffle", "warning")],
)
def test_a_failed_shoe_command_is_never_silent_pt2001_r60(command: str, severity: str) -> None:
    """PT-2001 r.60: a lid the shoe did not lock is a critical alert; any other refused command is a warning
    (the shoe's own warning light included: the table's light is the GPIO output, which stays on)."""
    h = Harness()
    h.open_continuous()
    h.apply(inputs.CommandFailed(command, "refused by the device", link=False))
    (alert,) = h.alerts("shoe_command")
    assert alert.severity == severity and command in alert.reason


def test_a_command_lost_with_the_link_leaves_the_alert_to_the_link_fault() -> None:
    h = Harness()
    h.open_continuous()
    h.apply(inputs.CommandFailed("LockLid", "link down", link=True))
    assert h.alerts("shoe_command") == []


def test_a_supervisor_input_without_a_role_has_no_authority_pt2001_r51() -> None:
    """A supervisor action is the chief inspector's (PT-2001 r.51): an input naming no role is refused, not
    taken as a supervisor's; nothing changes."""
    h = Harness()
    h.open_continuous()
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    before = h.core.snapshot()
    journaled = {"type": "supervisor", "user": "someone", "action": "clear_jam", "args": {}}  # no role
    for inp in (inputs.decode(journaled), inputs.SupervisorInput("someone", "clear_jam", {}, role="")):
        with pytest.raises(Rejected, match="needs a chief inspector"):
            h.apply(inp)
    assert h.core.snapshot() == before and h.core.state == "jammed"
