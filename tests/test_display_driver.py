"""Jackpot sign driver against the emulated sign over a real pty (PT-2001 r.41: the display increments)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.jackpot.availability import Availability
from controller.jackpot.config import JackpotConfig
from controller.jackpot.hits import Combination, allocate
from controller.jackpot.meter import MeterState, contribute, freeze
from drivers.display.driver import DisplayDriver, DisplayError
from tablebench.display.emulator import DisplayEmulator

pytestmark = pytest.mark.timeout(30)


class Link:
    """Records connection changes; ``wait(value)`` returns once the driver reported that value."""

    def __init__(self) -> None:
        self.changes: list[bool] = []
        self._cond = asyncio.Condition()

    def __call__(self, up: bool) -> None:
        self.changes.append(up)
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    async def wait(self, up: bool, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout), self._cond:
            await self._cond.wait_for(lambda: bool(self.changes) and self.changes[-1] is up)


@pytest.fixture
async def sign() -> AsyncIterator[DisplayEmulator]:
    emu = DisplayEmulator()
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def link() -> Link:
    return Link()


@pytest.fixture
async def driver(sign: DisplayEmulator, link: Link) -> AsyncIterator[DisplayDriver]:
    drv = DisplayDriver(sign.path, ack_timeout=0.3, retries=1, ping_interval=0.1, on_connection=link)
    await drv.start()
    yield drv
    await drv.stop()


def config() -> JackpotConfig:
    return JackpotConfig.from_dict(
        {
            "enabled": True,
            "mode": "automatic",
            "bet_value": 500,
            "increment_bp": 3333,
            "reserve_bp": 0,
            "seed": 5_000_000,
            "currency": "EUR",
        }
    )


async def test_display_shows_meter_increments_and_win_pt2001_r41a(
    driver: DisplayDriver, sign: DisplayEmulator
) -> None:
    """Each round's collected chips increment the meter and the sign shows it; then a WIN."""
    assert driver.connected
    state = MeterState.initial(config())
    assert await driver.show_meter(state.display_value, state.currency)
    for chips in (3, 1, 5):
        state, _ = contribute(state, chips, "r")
        assert await driver.show_meter(state.display_value, state.currency)
    # 5.00 x 33.33 % = 1.6665 per chip: 3 -> 4.9995 (shows 4.99), 4 -> 6.666, 9 -> 14.9985
    assert sign.history == [
        "JACKPOT EUR 50,000.00",
        "JACKPOT EUR 50,004.99",
        "JACKPOT EUR 50,006.66",
        "JACKPOT EUR 50,014.99",
    ]
    awards = allocate(state, [(5, Combination.THREE_ACES_MIXED)])
    state, _ = freeze(state, awards, "r4")
    assert await driver.show_win(5, awards[0].amount, state.currency)
    assert sign.current == "WIN SEAT 5 EUR 1,250.00"
    assert await driver.show_fault("HIT PENDING")
    assert sign.current == "FAULT HIT PENDING"


async def test_display_loss_detected_and_jackpot_unplayable_until_back(
    driver: DisplayDriver, sign: DisplayEmulator, link: Link
) -> None:
    """A sign that stops answering is reported lost by the pings; no jackpot until it is back (r.41)."""
    av = Availability()
    av.set_display(driver.connected)
    driver.on_connection = lambda up: (link(up), av.set_display(up))
    assert av.playable
    sign.mute = True
    await link.wait(False)
    assert not driver.connected and not av.playable
    assert not await driver.show_meter(1, "EUR")  # commands fail instead of hanging
    sign.mute = False
    await link.wait(True)
    assert driver.connected and av.playable
    assert await driver.show_meter(123, "EUR") and sign.current == "JACKPOT EUR 1.23"


async def test_pty_gone_is_detected(driver: DisplayDriver, sign: DisplayEmulator, link: Link) -> None:
    assert driver.connected
    await sign.stop()  # the sign's line is unplugged
    await link.wait(False)
    assert not driver.connected


async def test_start_without_sign_reports_not_connected(tmp_path: Path) -> None:
    drv = DisplayDriver(str(tmp_path / "no-such-tty"), ping_interval=0.1)
    await drv.start()
    try:
        assert not drv.connected
        assert not await drv.show_meter(1, "EUR")
    finally:
        await drv.stop()


async def test_malformed_command_nak_raises_and_keeps_link(driver: DisplayDriver) -> None:
    with pytest.raises(DisplayError, match="BADARG"):
        await driver.show_win(0, 100, "EUR")  # seat 0 does not exist
    assert driver.connected and driver.stats.naks == 1


async def test_corrupted_acks_are_retried_then_link_declared_lost(
    driver: DisplayDriver, sign: DisplayEmulator, link: Link
) -> None:
    sign.corrupt_replies = True
    assert not await driver.show_meter(5, "EUR")
    assert driver.stats.bad_lines >= 2 and driver.stats.retries >= 1
    assert link.changes[-1] is False
    sign.corrupt_replies = False
    await link.wait(True)


async def test_emulate_display_cli(tmp_path: Path) -> None:
    """`tablectl emulate-display --link PATH` prints its pty as one JSON line and logs what it shows."""
    tablectl = Path(sys.executable).parent / "tablectl"
    link_path = tmp_path / "jackpot-sign"
    proc = subprocess.Popen(
        [str(tablectl), "emulate-display", "--link", str(link_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 20)
        info = json.loads(first)
        assert info["link"] == str(link_path) and info["pty"].startswith("/dev/")
        drv = DisplayDriver(str(link_path), ack_timeout=1.0, ping_interval=5)
        await drv.start()
        try:
            assert drv.connected
            assert await drv.show_win(2, 99_900, "EUR")
        finally:
            await drv.stop()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert "SHOW WIN SEAT 2 EUR 999.00" in err
    assert not link_path.exists()  # the link is removed on exit
