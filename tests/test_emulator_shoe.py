"""The emulated shoe: scenarios, lid/jam/shuffle (PT-2001 r.51, r.59-61), batch shoe, deck check, CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.pty_shoe import shoe_on_pty

from drivers import events as ev
from drivers.protocol.messages import ErrorCode
from drivers.shoe import ShoeDriver
from tablebench.emulator.control_client import ControlCallError, ControlClient
from tablebench.emulator.scenario import ScenarioError, load_scenario, parse_scenario

pytestmark = pytest.mark.timeout(60)
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples" / "scenarios"


async def expect(driver: ShoeDriver, *types: type) -> list[ev.DeviceEvent]:
    got = [await driver.next_event(5) for _ in types]
    assert [type(e) for e in got] == list(types), got
    return got


# ---- scenario files -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "shoe"}, "kind"),
        ({"decks": 0}, "decks"),
        ({"order": ["AS", "1X"]}, "order[1]"),
        ({"decks": 1, "order": ["AS", "AS"]}, "AS appears 2 times"),
        ({"decks": 1, "order": ["AS"], "deck": {"missing": ["AS"]}}, "AS appears 1 times"),
        ({"faults": [{"at_card": 3, "kind": "explode"}]}, "faults[0].kind"),
        ({"faults": [{"at_card": 3, "kind": "jam", "location": "roof"}]}, "faults[0].location"),
        ({"kind": "batch", "batch": {"warning_from_end": 10, "cut_from_end": 20}}, "warning_from_end"),
        ({"colour": "red"}, "unknown key"),
        ({"errors": {"bit_error_rate": 2}}, "errors.bit_error_rate"),
    ],
)
def test_scenario_errors_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(data)


def test_example_scenarios_load_json_and_toml() -> None:
    files = sorted(EXAMPLES.glob("*"))
    assert {p.suffix for p in files} >= {".json", ".toml"}
    for p in files:
        load_scenario(p)
    assert load_scenario(EXAMPLES / "continuous.toml") == load_scenario(EXAMPLES / "continuous.json")


def test_bad_scenario_file_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "x.toml"
    p.write_text("kind = [")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(p)


# ---- continuous shuffler --------------------------------------------------------------------------------


async def test_round_cycle_open_insert_close_shuffles(tmp_path: Path) -> None:
    """PT-2001 r.59-60: discards go in only with the lid open; closing the lid starts the shuffle."""
    async with shoe_on_pty({"order": ["AS", "KH"]}, tmp_path) as (driver, ctl):
        await ctl.draw(2)
        await expect(driver, ev.CardOut, ev.CardOut)
        with pytest.raises(ControlCallError, match=r"r\.61"):
            await ctl.insert()  # lid closed: the cards stay in the discard
        assert (await driver.command(ev.OpenLid())).ok
        await expect(driver, ev.LidChanged)
        await ctl.insert()
        (ins,) = await expect(driver, ev.DiscardInserted)
        assert ins.count == 2  # type: ignore[attr-defined]
        await ctl.close_lid()
        evs = await expect(driver, ev.LidChanged, ev.ShuffleStarted, ev.LidChanged, ev.ShuffleFinished)
        assert evs[3].cards_inside == 312  # type: ignore[attr-defined]
        state = await ctl.state()
        assert state["cards_inside"] == 312 and "order" not in json.dumps(state).lower()


async def test_open_lid_refused_while_jammed_and_unlock_needs_warning_light(tmp_path: Path) -> None:
    """PT-2001 r.51: on a jam the warning light comes on and only the inspector opens the lid to clear it."""
    sc = {"order": ["2H", "3H", "4H"], "faults": [{"at_card": 2, "kind": "jam", "location": "output"}]}
    async with shoe_on_pty(sc, tmp_path) as (driver, ctl):
        assert await ctl.draw(3) == 1
        _, jam = await expect(driver, ev.CardOut, ev.Jammed)
        assert jam.location == ev.JamLocation.OUTPUT  # type: ignore[attr-defined]
        res = await driver.command(ev.OpenLid())
        assert not res.ok and res.error_code == ErrorCode.JAMMED
        res = await driver.command(ev.UnlockLid())
        assert not res.ok and res.error_code == ErrorCode.WARNING_LIGHT_OFF
        with pytest.raises(ControlCallError, match="locked"):
            await ctl.clear_jam()  # the technician cannot reach it through a locked lid
        assert (await driver.command(ev.SetWarningLight(on=True, blink=True))).ok
        assert (await driver.command(ev.UnlockLid())).ok
        await expect(driver, ev.LidChanged)
        await ctl.clear_jam()
        await expect(driver, ev.JamCleared)
        await ctl.draw(2)
        a, b = await expect(driver, ev.CardOut, ev.CardOut)
        assert (a.code, a.shoe_seq, b.code) == ("3H", 2, "4H")  # type: ignore[attr-defined]


async def test_card_faults_unreadable_face_up_forced_lid(tmp_path: Path) -> None:
    sc = {
        "order": ["AS", "2S", "3S", "4S"],
        "faults": [
            {"at_card": 1, "kind": "lid_forced"},
            {"at_card": 2, "kind": "unreadable", "damaged": True},
            {"at_card": 3, "kind": "face_up"},
        ],
    }
    async with shoe_on_pty(sc, tmp_path) as (driver, ctl):
        await ctl.draw(3)
        lid, _, c2, c3 = await expect(driver, ev.LidChanged, ev.CardOut, ev.CardUnreadable, ev.CardOut)
        assert lid.state == ev.LidState.FORCED_OPEN  # type: ignore[attr-defined]
        assert c2 == ev.CardUnreadable(
            2, damaged=True, device_time_ms=c2.device_time_ms, event_no=c2.event_no
        )
        assert c3.face_up and c3.code == "3S"  # type: ignore[attr-defined]
        await ctl.face_up()
        await ctl.draw(1)
        (c4,) = await expect(driver, ev.CardOut)
        assert c4.face_up and c4.code == "4S"  # type: ignore[attr-defined]


async def test_queue_takes_cards_from_inside_only(tmp_path: Path) -> None:
    async with shoe_on_pty({"decks": 1}, tmp_path) as (driver, ctl):
        await ctl.queue(["QS", "QD"])
        with pytest.raises(ControlCallError, match="no QS left"):
            await ctl.queue(["QS"])
        assert (await driver.command(ev.Dispense(2))).ok
        a, b = await expect(driver, ev.CardOut, ev.CardOut)
        assert (a.code, b.code) == ("QS", "QD")  # type: ignore[attr-defined]


async def test_deck_check_reports_missing_and_extra_cards(tmp_path: Path) -> None:
    """PT-2001 r.55: at close every deck is checked complete; the emulator can plant a fault."""
    sc = {"decks": 2, "deck": {"missing": ["7D"], "duplicated": ["AS"], "unreadable": 1}}
    async with shoe_on_pty(sc, tmp_path) as (driver, _ctl):
        assert (await driver.command(ev.RunDeckCheck())).ok
        (res,) = await expect(driver, ev.DeckCheckResult)
        assert res.counts["7D"] == 1 and res.counts["AS"] == 3 and res.counts["KC"] == 2  # type: ignore[attr-defined]
        assert sum(res.counts.values()) == 104 and res.unreadable == 1  # type: ignore[attr-defined]


# ---- batch shoe -----------------------------------------------------------------------------------------


async def test_batch_shoe_warning_and_cut_cards(tmp_path: Path) -> None:
    """PT-2001 r.9: warning card near the 50th card from the end (here 5 of 52); cut card ends the shoe."""
    sc = {"kind": "batch", "decks": 1, "batch": {"warning_from_end": 5, "cut_from_end": 2}}
    async with shoe_on_pty(sc, tmp_path) as (driver, ctl):
        assert driver.identity is not None and not driver.identity.continuous
        await ctl.draw(52)
        seen = [await driver.next_event(5) for _ in range(54)]
        names = [type(e).__name__ for e in seen]
        assert names.index("WarningCardOut") == 47 and names.index("CutCardOut") == 51
        codes = [e.code for e in seen if isinstance(e, ev.CardOut)]
        assert sorted(codes) == sorted(r + s for r in "A23456789TJQK" for s in "SHDC")
        with pytest.raises(ControlCallError, match="no cards"):
            await ctl.draw(1)
        res = await driver.command(ev.OpenLid())
        assert res.error_code == ErrorCode.UNSUPPORTED
        assert (await driver.command(ev.StartShuffle())).ok
        _, fin = await expect(driver, ev.ShuffleStarted, ev.ShuffleFinished)
        assert fin.cards_inside == 52  # type: ignore[attr-defined]
        await ctl.draw(1)
        (c,) = await expect(driver, ev.CardOut)
        assert c.shoe_seq == 1  # type: ignore[attr-defined]


# ---- the real subprocess --------------------------------------------------------------------------------


async def test_tablectl_emulate_shoe_subprocess(tmp_path: Path) -> None:
    link = tmp_path / "shoe"
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"order": ["TD", "JC"], "link": {"heartbeat_s": 0.05}}))
    exe = Path(sys.executable).with_name("tablectl")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "controller.cli"]
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        "emulate-shoe",
        "--scenario",
        str(scenario),
        "--link",
        str(link),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 20))
        assert info["link"] == str(link) and os.path.realpath(link) == info["device"]
        driver = ShoeDriver(str(link), heartbeat_interval=0.05, reconnect_backoff=(0.02, 0.2))
        await driver.start()
        ctl = await ControlClient.connect(info["control"])
        try:
            ident, _ = await expect(driver, ev.Identified, ev.LinkUp)
            assert ident.decks_loaded == 6  # type: ignore[attr-defined]
            await ctl.draw(2)
            a, b = await expect(driver, ev.CardOut, ev.CardOut)
            assert (a.code, b.code) == ("TD", "JC")  # type: ignore[attr-defined]
        finally:
            await ctl.close()
            await driver.stop()
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    assert not link.exists()


def test_cli_rejects_bad_scenario(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"decks": 1, "order": ["AS", "AS"]}')
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "emulate-shoe",
            "--scenario",
            str(bad),
            "--link",
            str(tmp_path / "l"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "AS appears 2 times" in r.stderr


def test_card_order_is_random_unless_a_seed_is_given() -> None:
    """Issue 13 §5: nobody can predict the emulated shoe's cards from its scenario; a seed replays a run."""
    from tablebench.emulator.model import ShoeModel
    from tablebench.emulator.scenario import parse_scenario

    def first_cards(sc: dict) -> list[str]:
        m = ShoeModel(parse_scenario(sc))
        return [e.code for e in m.draw(20).events]  # type: ignore[attr-defined]

    assert first_cards({}) != first_cards({})  # 20 of 312 cards: the same order twice is ~impossible
    assert first_cards({"seed": 5}) == first_cards({"seed": 5})
    assert first_cards({"seed": 5}) != first_cards({"seed": 6})


def test_a_shuffle_a_jam_stopped_ends_when_the_jam_is_cleared_pt2001_r51() -> None:
    """A shuffle that started reports its end: a jam in the shuffler stops it (PT-2001 r.51); once the inspector
    has unlocked the lid and the jam is cleared, the shuffler finishes it (ShuffleFinished with the count).
    Before, the shuffle never ended and the table's ``state/shoe`` said "shuffling" for ever."""
    from tablebench.emulator.model import ShoeModel

    m = ShoeModel(parse_scenario({"kind": "continuous", "decks": 1, "seed": 3}))
    assert m.start_shuffle() == [ev.ShuffleStarted()]
    assert m.jam_now(ev.JamLocation.SHUFFLER) == [ev.Jammed(ev.JamLocation.SHUFFLER)] and not m.shuffling
    m.warning_light = True  # the controller signalled the jam
    m.unlock()
    assert m.clear_jam() == [ev.JamCleared(), ev.ShuffleFinished(52)]
    m.start_shuffle()
    m.jam_now(ev.JamLocation.OUTPUT)
    m.unlock()
    m.clear_jam()
    assert m.jam_now(ev.JamLocation.OUTPUT) == [ev.Jammed(ev.JamLocation.OUTPUT)]  # not shuffling now
    m.unlock()
    assert m.clear_jam() == [ev.JamCleared()]  # no shuffle was running: nothing to finish
