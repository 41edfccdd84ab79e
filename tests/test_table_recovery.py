"""Crash recovery: the journal holds every input, so a restart rebuilds exactly the state it had (snapshot +
re-applied inputs), keeps the lid locked, and resumes a round whose cards are all known or voids it with the
bets returned (PT-ONLINE-2015 r.27-28). One test kills a real controller process with SIGKILL."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.effects import Rejected
from controller.journal.store import Journal
from controller.shell import TableController
from controller.table import inputs
from drivers import events as ev
from tablebench.emulator.control import ControlServer
from tablebench.emulator.control_client import ControlClient
from tablebench.emulator.device import EmulatedShoe
from tablebench.emulator.scenario import parse_scenario

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(120)


def scripted_inputs() -> list[dict[str, Any]]:
    """A continuous session: loading, two rounds with a lid cycle, a jam cleared during round two."""
    seq = iter(range(1, 10_000))

    def card(code: str) -> dict[str, Any]:
        return inputs.DeviceInput(ev.CardOut(code[0], code[1], next(seq)))

    def dev(e: ev.DeviceEvent) -> dict[str, Any]:
        return inputs.DeviceInput(e)

    steps = [
        inputs.supervisor("ana", "open_table", {"profile": "pt-2001", "shuffler": "continuous"}),
        dev(ev.LidChanged(ev.LidState.OPEN)),
        dev(ev.DiscardInserted(156)),
        dev(ev.DiscardInserted(156)),
        dev(ev.LidChanged(ev.LidState.CLOSED)),
        dev(ev.ShuffleFinished(312)),
        inputs.dealer("place_bet", {"seat": 1, "amount": 1000}),
        inputs.dealer("place_bet", {"seat": 3, "amount": 500}),
        inputs.dealer("no_more_bets"),
        *[card(c) for c in ["2C", "TS", "9H", "6D", "7S", "8C", "8H"]],
        inputs.dealer("stand"),
        inputs.dealer("stand"),
        card("5H"),
        dev(ev.LidChanged(ev.LidState.OPEN)),
        dev(ev.DiscardInserted(8)),
        dev(ev.LidChanged(ev.LidState.CLOSED)),
        inputs.dealer("next_round"),
        inputs.dealer("place_bet", {"seat": 2, "amount": 1500}),
        inputs.dealer("no_more_bets"),
        card("TC"),
        card("4D"),
        dev(ev.Jammed(ev.JamLocation.OUTPUT)),
        inputs.supervisor("rui", "unlock_lid"),
        dev(ev.JamCleared()),
        inputs.supervisor("rui", "clear_jam"),
        dev(ev.CardsInside(312 - 2)),
        card("9D"),
        card("QS"),
        inputs.dealer("stand"),
        card("3S"),
        card("KH"),
    ]
    return steps


async def test_recovery_rebuilds_exactly_the_state_after_every_input(tmp_path: Path) -> None:
    """Kill at any point = the journal as committed after input k: recovery gives the live state after k."""
    journal = Journal(tmp_path / "live.db")
    tc = TableController(journal, None, snapshot_every=4)
    await tc.start()
    copies: list[tuple[Path, dict[str, Any]]] = []
    for k, inp in enumerate(scripted_inputs()):
        await tc.submit(inp)
        copy = tmp_path / f"k{k}.db"
        with sqlite3.connect(copy) as dst:
            journal._conn.backup(dst)  # a consistent copy, as a crash right after COMMIT would leave it
        copies.append((copy, tc.core.snapshot()))
    assert tc.core.state == "settled"
    for copy, expected in copies:
        revived = TableController(Journal(copy), None, snapshot_every=4)
        revived.recover()
        assert revived.core.snapshot() == expected, copy.name
        assert revived.replayed < 4 + 1  # start-up replays only the inputs after the newest snapshot


async def test_start_up_time_does_not_grow_with_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    tc = TableController(journal, None, snapshot_every=20)
    await tc.start()
    for inp in scripted_inputs()[:6]:
        await tc.submit(inp)
    for _ in range(150):  # a long session: bets placed and cleared
        await tc.dealer_input("place_bet", {"seat": 1, "amount": 500})
        await tc.dealer_input("clear_bet", {"seat": 1})
    revived = TableController(Journal(tmp_path / "j.db"), None, snapshot_every=20)
    revived.recover()
    assert revived.replayed < 20
    assert revived.core.snapshot() == tc.core.snapshot()


async def test_rejected_input_is_not_journaled(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    tc = TableController(journal, None)
    await tc.start()
    before = journal.last_seq
    with pytest.raises(Rejected):
        await tc.dealer_input("hit")
    assert journal.last_seq == before


async def test_mqtt_handler_maps_rejections_and_roles(tmp_path: Path) -> None:
    from controller.mqtt.commands import CommandRejected, CommandRequest

    tc = TableController(Journal(tmp_path / "j.db"), None)
    await tc.start()
    with pytest.raises(CommandRejected, match="not allowed in state closed"):
        await tc.handle_request(CommandRequest("dealer", "d1", "hit", {}, "r1"))
    with pytest.raises(CommandRejected, match="needs a chief inspector"):
        await tc.handle_request(
            CommandRequest("technician", "t1", "open_table", {"profile": "pt-2001"}, "r2")
        )
    reply = await tc.handle_request(
        CommandRequest("supervisor", "ana", "open_table", {"profile": "pt-2001"}, "r3")
    )
    assert reply["ok"] and reply["state"] == "loading" and reply["session_id"]


# ---------------------------------------------------------------- a real process, killed with SIGKILL


class Controller:
    """``python -m tablebench.table_process`` as a child process speaking JSON lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ready: dict[str, Any] = {}

    @classmethod
    async def start(cls, port: Path, db: Path) -> Controller:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tablebench.table_process",
            "--port",
            str(port),
            "--db",
            str(db),
            "--fast-link",
            "--snapshot-every",
            "5",
            cwd=str(ROOT),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=open(db.parent / "controller.log", "a"),  # noqa: SIM115 - the child owns it
        )
        c = cls(proc)
        c.ready = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        return c

    async def call(self, op: str, **kw: Any) -> dict[str, Any]:
        self.proc.stdin.write((json.dumps({"op": op, **kw}) + "\n").encode())
        await self.proc.stdin.drain()
        return json.loads(await asyncio.wait_for(self.proc.stdout.readline(), 30))

    async def view(self) -> dict[str, Any]:
        return (await self.call("view"))["view"]

    async def until(self, cond: Any, what: str) -> dict[str, Any]:
        for _ in range(2000):
            view = await self.view()
            if cond(view):
                return view
            await asyncio.sleep(0.01)
        raise AssertionError(f"timed out waiting for {what}: {view}")

    async def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 3)
            except TimeoutError:  # cleanup only: the tests do not depend on a graceful exit
                await self.kill9()


async def emulator(tmp_path: Path) -> tuple[EmulatedShoe, ControlServer, ControlClient]:
    scenario = parse_scenario(
        {
            "kind": "continuous",
            "decks": 6,
            "seed": 11,
            "link": {"heartbeat_s": 0.05, "silence_timeout_s": 1.0, "ack_timeout_s": 0.05},
            "timings": {"shuffle_s": 0.05},
        }
    )
    shoe = EmulatedShoe(scenario, link_path=str(tmp_path / "shoe"))
    server = ControlServer(shoe, str(tmp_path / "shoe.ctl"))
    await shoe.start()
    await server.start()
    return shoe, server, await ControlClient.connect(server.path)


async def open_session(c: Controller, ctl: ControlClient) -> None:
    total = int((await ctl.state())["cards_inside"])
    await ctl.draw(total)  # the emulator starts full: the cards come out before the loading (r.53-54)
    await c.until(lambda v: v["last_shoe_seq"] == total, "all cards out")
    assert (await c.call("supervisor", user="ana", action="open_table", args={"profile": "pt-2001"}))["ok"]
    await c.until(lambda v: v["lid"] == "open", "lid open")
    await ctl.insert(total // 2)
    await ctl.insert(total - total // 2)
    await ctl.close_lid()
    await c.until(lambda v: v["state"] == "betting" and v["lid"] == "locked", "table open")


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 7])  # kill points: no_more_bets, a bet, draws 1, 4 and 7
async def test_sigkill_at_a_random_point_of_a_round_then_restart_resumes(tmp_path: Path, seed: int) -> None:
    """The process is killed with SIGKILL at a random step (possibly mid-input); the restarted process
    recovers the committed state, keeps the lid locked, recounts the cards and resumes the round."""
    rng = random.Random(seed)
    shoe, server, ctl = await emulator(tmp_path)
    db = tmp_path / "journal.db"
    c = await Controller.start(tmp_path / "shoe", db)
    try:
        await open_session(c, ctl)
        await ctl.queue(["2C", "TS", "9H", "6D", "7S", "8C", "8H", "5H", "4C"])
        steps: list[tuple[str, Any]] = [
            ("dealer", ("place_bet", {"seat": 1, "amount": 1000})),
            ("dealer", ("place_bet", {"seat": 3, "amount": 500})),
            ("dealer", ("no_more_bets", {})),
            *[("draw", 1)] * 7,
            ("dealer", ("stand", {})),
        ]
        kill_at = rng.randrange(len(steps))
        for i, (kind, what) in enumerate(steps):
            if kind == "draw":
                before = (await c.view())["cards_out"]
                await ctl.draw(1)
                if i != kill_at:
                    await c.until(lambda v, b=before: v["cards_out"] > b, "card")
            else:
                action, args = what
                if i == kill_at:  # in flight: killed before or after its COMMIT
                    c.proc.stdin.write(
                        (json.dumps({"op": "dealer", "action": action, "args": args}) + "\n").encode()
                    )
                    await c.proc.stdin.drain()
                else:
                    assert (await c.call("dealer", action=action, args=args))["ok"]
            if i == kill_at:
                await c.kill9()
                break
        assert shoe.model.locked  # the lid stayed locked while the controller was dead
        c = await Controller.start(tmp_path / "shoe", db)
        view = await c.until(lambda v: v["state"] != "resync", "resync after restart")
        assert not view["faults"]
        assert view["cards_inside"] == (await ctl.state())["cards_inside"]
        reader = Journal(db)  # WAL: a second reader beside the child process
        voids = [r.data for r in reader.records(kinds=("round_void",))]
        reader.close()
        if voids:
            # a card the killed process had taken from the link but not committed: it is gone with the
            # process, so the round cannot be determined: void, bets returned (PT-ONLINE-2015 r.27-28)
            assert view["state"] == "settled" and steps[kill_at][0] == "draw"
            assert voids[0]["bets_returned"] == {"1": 1000, "3": 500}
            outcome = "void"
        else:
            assert (await ctl.state())["locked"] is True  # the lid stayed locked across the restart
            outcome = "resumed"
            # whatever the kill interrupted, the round plays on from the recovered state
            for i in range(kill_at + 1 if steps[kill_at][0] == "draw" else kill_at, len(steps)):
                kind, what = steps[i]
                if kind == "draw":
                    before = (await c.view())["cards_out"]
                    await ctl.draw(1)
                    await c.until(lambda v, b=before: v["cards_out"] > b, "card")
                else:
                    reply = await c.call("dealer", action=what[0], args=what[1])
                    # the in-flight input may have committed before the kill: its repeat is refused or a no-op
                    assert reply["ok"] or i == kill_at, reply
            view = await c.until(lambda v: v["state"] in ("players", "dealer", "settled"), "round progressed")
            if view["state"] == "players":  # seat 3 still to decide
                assert (await c.call("dealer", action="stand", args={}))["ok"]
            if (await c.view())["state"] == "dealer":
                await ctl.draw(1)
            view = await c.until(lambda v: v["state"] == "settled", "settled")
        assert view["contestable_rounds"] == [view["round_id"]]
    finally:
        await c.close()
        await ctl.close()
        await server.stop()
        await shoe.stop()
    journal = Journal(db)
    assert journal.verify().ok
    finals = [r.data for r in journal.records(kinds=("round_final",))]
    assert finals and finals[-1]["void"] is (outcome == "void")


async def test_sigkill_then_a_card_lost_while_down_voids_the_round_pt_online_r27_r28(tmp_path: Path) -> None:
    shoe, server, ctl = await emulator(tmp_path)
    db = tmp_path / "journal.db"
    c = await Controller.start(tmp_path / "shoe", db)
    try:
        await open_session(c, ctl)
        await ctl.queue(["2C", "TS", "9H"])
        for action, args in [("place_bet", {"seat": 1, "amount": 1000}), ("no_more_bets", {})]:
            assert (await c.call("dealer", action=action, args=args))["ok"]
        await ctl.draw(3)
        await c.until(lambda v: v["cards_out"] == 3, "three cards")
        await c.kill9()
        shoe.model.inside.pop()  # white box: a card leaves the machine and no event ever reports it
        c = await Controller.start(tmp_path / "shoe", db)
        view = await c.until(lambda v: v["state"] != "resync", "resync after restart")
        assert view["state"] == "settled"  # void: the round's cards cannot be determined
        assert (await ctl.state())["locked"] is False or view["lid_unlocked_by"] == "auto"
    finally:
        await c.close()
        await ctl.close()
        await server.stop()
        await shoe.stop()
    journal = Journal(db)
    void = [r.data for r in journal.records(kinds=("round_void",))]
    assert void and void[0]["bets_returned"] == {"1": 1000}
    assert journal.verify().ok


async def test_an_orderly_stop_leaves_a_snapshot_so_the_next_start_replays_nothing(tmp_path: Path) -> None:
    """A stop saves the state as of the last record (a quiet table would otherwise keep replaying, and a prune
    could cut only up to its last periodic snapshot); a second stop with nothing new adds none."""
    journal = Journal(tmp_path / "j.db")
    tc = TableController(journal, None, snapshot_every=1000)
    await tc.start()
    for inp in scripted_inputs()[:9]:
        await tc.submit(inp)
    assert journal.latest_snapshot() is None  # none of the periodic ones yet
    await tc.stop()
    as_of, _state = journal.latest_snapshot()
    assert as_of == journal.last_seq - 1  # the state as of the last record before the snapshot record
    revived = TableController(Journal(tmp_path / "j.db"), None, snapshot_every=1000)
    revived.recover()
    assert revived.replayed == 0 and revived.core.snapshot() == tc.core.snapshot()
    snapshots = revived.journal._conn.execute("SELECT count(*) FROM snapshots").fetchone()[0]
    await revived.stop()  # nothing new since the snapshot it started from
    assert revived.journal._conn.execute("SELECT count(*) FROM snapshots").fetchone()[0] == snapshots


async def test_no_snapshot_at_a_stop_while_commits_are_owed(tmp_path: Path) -> None:
    """The core is ahead of the journal while a commit is owed (journal_io): a snapshot then would store what
    the journal does not hold."""
    journal = Journal(tmp_path / "j.db")
    tc = TableController(journal, None, snapshot_every=1000)
    await tc.start()
    for inp in scripted_inputs()[:3]:
        await tc.submit(inp)
    tc._deferred.append((inputs.dealer("place_bet", {"seat": 1, "amount": 500}), 0.0, None))  # owed
    await tc.stop()
    assert journal.latest_snapshot() is None
