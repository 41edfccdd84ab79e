"""The floor demo's console commands (`tablectl demo --workdir W fault|clear|enrol ...`; docs/floor.md "The floor
demo"), run in another terminal while `./scripts/demo --floor` deals. The running demo printed them with its
work folder, where it keeps each table's address (``demo-tables.json``, written by tablebench/floor_stack.py).

- ``fault T2 jam|damaged|lid``: what happens at a real shoe, through the emulated shoe's control socket: a jam,
  a damaged card (the next card out cannot be read), the lid forced open. The table raises its fault and alert
  as it would on the casino floor; the demo's scripted dealer pauses that table (demo_dealer.py), the others
  deal on.
- ``clear T2``: the chief inspector at the table (the demo's supervisor ``bob``, his key enrolled at the
  demo's tables) does what the rules ask (PT-2001 r.51, r.60): for a jam, unlocks the lid, frees the card and
  clears the jam; for a damaged card, reads it and enters it (``replace_card``); for a forced lid, closes it
  and locks it again. Each step a signed supervisor command; the table then counts its cards and deals again.
- ``enrol --user U --role supervisor --public-key HEX``: the dashboard page's "Enrol it at each table"
  command for the demo: the key made in the browser enrolled in every demo table's credentials file (what
  ``tablectl sign --add-to /etc/tablectl/credentials.toml`` does at one table in production); each table reads
  the changed file before the next signed command (controller/mqtt/auth.py), no restart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.client import CommandFailed, TableClient
from controller.hex64 import HEX64
from controller.mqtt.auth import ROLE_ACTIONS, add_public_key
from controller.words import alert_words
from tablebench.emulator.control_client import ControlCallError, ControlClient
from tablebench.stack import DEMO_PINS

TABLES_FILE = "demo-tables.json"  # in the floor demo's work folder: table id -> where its parts are
INSPECTOR = "bob"  # the chief inspector the console signs as (the dashboard's demo login is alice)
STEP = 30.0  # bound on one step of an emulated table (not a timing check)
FAULTS = ("jam", "damaged", "lid")
_TABLE = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")


class ConsoleError(Exception):
    """The console command cannot be done; the message says why (one line)."""


@dataclass(frozen=True)
class DemoTable:
    table_id: str
    host: str
    port: int
    prefix: str
    control: str  # the emulated shoe's control socket
    key_dir: str  # the demo users' key files
    credentials: str  # the table's credentials file (public keys and roles)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def write_tables(workdir: Path, tables: list[DemoTable]) -> None:
    (workdir / TABLES_FILE).write_text(json.dumps({t.table_id: t.to_dict() for t in tables}, indent=1))


def read_tables(workdir: Path) -> dict[str, DemoTable]:
    path = workdir / TABLES_FILE
    try:
        doc = json.loads(path.read_text())
        return {tid: DemoTable(**entry) for tid, entry in doc.items()}
    except FileNotFoundError:
        raise ConsoleError(f"{path}: no floor demo runs with this work folder (--workdir)") from None
    except (OSError, ValueError, TypeError) as exc:
        raise ConsoleError(f"{path}: {exc}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="verb", required=True)
    fault = sub.add_parser("fault", help="cause a fault at a table: jam, damaged (card), lid (forced open)")
    fault.add_argument("table", help="e.g. T2")
    fault.add_argument("fault", choices=FAULTS)
    clear = sub.add_parser("clear", help="the chief inspector clears the table's fault")
    clear.add_argument("table", help="e.g. T2")
    enrol = sub.add_parser("enrol", help="enrol a public key (the dashboard's) at every demo table")
    enrol.add_argument("--user", required=True)
    enrol.add_argument("--role", required=True, choices=sorted(ROLE_ACTIONS))
    enrol.add_argument("--public-key", required=True, metavar="HEX")


def main(workdir: str | None, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tablectl demo --workdir W", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        if workdir is None:
            raise ConsoleError("--workdir: the floor demo's work folder (it printed these commands with it)")
        tables = read_tables(Path(workdir))
        if args.verb == "enrol":
            print(enrol(tables, args.user, args.role, args.public_key))
            return 0
        if not _TABLE.match(args.table) or args.table not in tables:
            raise ConsoleError(f"no table {args.table!r} in this demo (tables: {', '.join(tables)})")
        table = tables[args.table]
        said = asyncio.run(fault(table, args.fault) if args.verb == "fault" else clear(table))
        print(said)
        return 0
    except ConsoleError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 1


def enrol(tables: dict[str, DemoTable], user: str, role: str, public_key: str) -> str:
    if not HEX64.match(public_key):
        raise ConsoleError("--public-key: 64 hex digits (the page shows them)")
    if not re.match(r"^[A-Za-z0-9_.-]{1,64}\Z", user):
        raise ConsoleError("--user: letters, digits, '_', '.', '-'")
    for table in tables.values():
        add_public_key(table.credentials, user, [role], public_key.lower())
    return f"demo: {user}'s key enrolled as {role} at {', '.join(tables)}; the tables use it from now on"


async def fault(table: DemoTable, what: str) -> str:
    ctl = await _control(table)
    try:
        if what == "jam":
            await ctl.jam("output")
            return f"{table.table_id}: the shoe jammed (PT-2001 r.51); the table raises the jam"
        if what == "damaged":
            await ctl.unreadable(damaged=True)
            return f"{table.table_id}: the next card out is damaged and cannot be read (PT-2001 r.51)"
        await ctl.force_lid()
        return f"{table.table_id}: the lid was forced open (PT-2001 r.60); the table raises a tamper alarm"
    except ControlCallError as exc:
        raise ConsoleError(f"{table.table_id}: the shoe refused: {exc}") from None
    finally:
        await ctl.close()


async def clear(table: DemoTable) -> str:
    """The chief inspector's procedure for what the table publishes (its faults, a card awaiting its
    replacement); each supervisor step retried while the table is still catching up with the shoe."""
    ctl = await _control(table)
    sup = TableClient(table.host, table.port, username="supervisor1", password=_password("supervisor1"),
                      prefix=table.prefix, key_dir=table.key_dir)  # fmt: skip
    try:
        await sup.connect()
        await sup.wait_for(lambda v: "table" in v.states, STEP)
        done: list[str] = []
        for _ in range(4):  # one fault may reveal the next (a jam and a forced lid)
            t = sup.view.states["table"]
            faults = [str(f) for f in t.get("faults") or []]
            if "jam" in faults:
                await _clear_jam(sup, ctl)
                done.append("jam cleared (lid unlocked, the card freed, clear_jam)")
            elif "tamper" in faults:
                await _clear_tamper(sup, ctl)
                done.append("lid closed and locked again (lock_lid)")
            elif faults:
                named = ", ".join(alert_words(f) for f in faults)
                raise ConsoleError(f"{table.table_id}: {named}: not a fault this console clears "
                                   "(docs/floor.md, docs/state-machine.md)")  # fmt: skip
            elif t.get("awaiting_card_replacement"):
                card = await _damaged_card(ctl)
                await _supervisor(sup, "replace_card", card=card)
                done.append(f"damaged card read as {card} and entered (replace_card)")
            else:
                break
            await sup.wait_for(lambda v: v.states["table"].get("state") != "resync", STEP)
        if not done:
            return f"{table.table_id}: nothing to clear"
        return f"{table.table_id}: {'; '.join(done)} by {INSPECTOR}; the table deals again"
    except (TimeoutError, OSError) as exc:
        raise ConsoleError(f"{table.table_id}: the table did not answer ({type(exc).__name__})") from None
    finally:
        await sup.close()
        await ctl.close()


async def _clear_jam(sup: TableClient, ctl: ControlClient) -> None:
    """PT-2001 r.51: the inspector alone opens the lid of a jammed shoe, frees the card, clears the jam."""
    if (sup.view.states.get("lid") or {}).get("unlocked_by") is None:
        await _supervisor(sup, "unlock_lid")
    await _until(lambda: _shoe(ctl, lambda s: not s["locked"]), "the shoe to unlock its lid")
    if (await ctl.state())["jam"] is not None:
        await ctl.clear_jam()
    await sup.wait_for(lambda v: (v.states.get("jam") or {}).get("device_cleared") is True, STEP)
    await _supervisor(sup, "clear_jam")


async def _clear_tamper(sup: TableClient, ctl: ControlClient) -> None:
    """PT-2001 r.60: a forced lid is closed and a supervisor locks it again."""
    if (await ctl.state())["lid_open"]:
        await ctl.close_lid()
    await sup.wait_for(lambda v: (v.states.get("lid") or {}).get("state") in ("closed", "locked"), STEP)
    await _supervisor(sup, "lock_lid")


async def _damaged_card(ctl: ControlClient) -> str:
    """The card the inspector reads off the damaged one (the emulator knows it; the table never did)."""
    total = int((await ctl.call("dealt", since=0, limit=1))["total"])
    recent = await ctl.dealt(since=max(0, total - 20))
    damaged = [c for c in recent if c.get("unreadable")]
    if not damaged:
        raise ConsoleError("the table awaits a card's replacement but the shoe dealt no damaged card")
    return str(damaged[-1]["code"])


async def _supervisor(sup: TableClient, action: str, **args: Any) -> None:
    user, pin = INSPECTOR, DEMO_PINS[INSPECTOR]
    for attempt in range(50):
        try:
            await sup.supervisor(user, pin, action, **args)
            return
        except CommandFailed as exc:
            if attempt == 49 or "not authorised" in exc.reason or "not enrolled" in exc.reason:
                raise ConsoleError(f"{action}: {exc.reason}") from None
            await asyncio.sleep(0.1)  # the table may not have heard from the shoe yet


async def _control(table: DemoTable) -> ControlClient:
    try:
        return await ControlClient.connect(table.control)
    except OSError as exc:
        raise ConsoleError(f"{table.table_id}: its emulated shoe does not answer ({exc})") from None


async def _shoe(ctl: ControlClient, test: Callable[[dict[str, Any]], bool]) -> bool:
    return test(await ctl.state())


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(int(STEP / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise ConsoleError(f"timed out waiting for {what}")


def _password(account: str) -> str:
    from controller.broker import load_users

    return load_users()[account]
