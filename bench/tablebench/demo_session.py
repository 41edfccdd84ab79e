"""`tablectl demo`, the session it prepares: the table opened by the demo supervisor and the shoe loaded (PT-2001
r.53-54), or a batch shoe shuffled and cut (r.8), over MQTT and the emulated shoe's control socket. Also what
the other demo modules share: the bound on one step, the line printer's type, the demo's own error."""

from __future__ import annotations

from collections.abc import Callable

from controller.client import TableClient
from tablebench.stack import DEMO_PINS, Stack

DEMO_SUPERVISOR = "alice"
WAIT = 30.0  # generous bound for one step of the emulated table (not a timing check)
Out = Callable[[str], None]


class DemoError(Exception):
    """The demo cannot go on; the message says why."""


async def cut(dealer: TableClient, seat: int, out: Out) -> None:
    """PT-2001 r.8: the seat with the right cuts (the first time the lowest occupied seat; later the right
    passes on: the controller's refusal names the seat that has it)."""
    import re

    from controller.client import CommandFailed

    try:
        await dealer.dealer("cut", seat=seat)
    except CommandFailed as exc:
        m = re.search(r"seat (\d+) has the right to cut", exc.reason)
        if m is None:
            raise
        seat = int(m.group(1))
        await dealer.dealer("cut", seat=seat)
    out(f"demo: Seat {seat} cuts the cards (PT-2001 r.8)")


async def prepare_session(stack: Stack, profile: str, out: Out, shoe: str = "continuous") -> None:
    """Open the table (alice), load the decks in two packets, close the lid (PT-2001 r.53-54), over MQTT and
    the emulator's control socket. A machine that starts full is emptied first. A batch shoe is shuffled when
    the table opens and then cut by seat 1 (PT-2001 r.8)."""
    from tablebench.emulator.control_client import ControlClient

    dealer, sup = stack.client("dealer"), stack.client("supervisor1")
    ctl = await ControlClient.connect(stack.shoe_control)
    try:
        await dealer.connect()
        await sup.connect()
        await dealer.wait_for(lambda v: v.status == "online" and "table" in v.states, WAIT)
        from controller.rules.profiles import load_profile

        if shoe == "batch":
            await sup.supervisor(DEMO_SUPERVISOR, DEMO_PINS[DEMO_SUPERVISOR], "open_table", profile=profile,
                                 shuffler="batch")  # fmt: skip
            await dealer.wait_for(lambda v: v.states["table"].get("state") == "cut", WAIT)
            await cut(dealer, 1, out)
            await dealer.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
            out(f"demo: table open ({profile}), batch shoe shuffled and cut, opened by {DEMO_SUPERVISOR}")
            return
        total = load_profile(profile).decks * 52
        inside = int((await ctl.state())["cards_inside"])
        if inside:  # a machine that starts full: its cards come out first, to be shown and loaded again
            await ctl.draw(inside)
            await dealer.wait_for(lambda v: v.states["table"].get("cards_out") == inside, WAIT)
        await sup.supervisor(DEMO_SUPERVISOR, DEMO_PINS[DEMO_SUPERVISOR], "open_table", profile=profile,
                             shuffler="continuous")  # fmt: skip
        await dealer.wait_for(lambda v: v.states.get("lid", {}).get("state") == "open", WAIT)
        await ctl.insert(total // 2)
        await ctl.insert(total - total // 2)
        await ctl.close_lid()
        await dealer.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
        out(f"demo: table open ({profile}), {total} cards loaded in two packets by {DEMO_SUPERVISOR}")
    finally:
        await ctl.close()
        await dealer.close()
        await sup.close()
