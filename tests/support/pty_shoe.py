"""Reusable fixture helper: an in-process emulated shoe on a real pty, with a connected ``ShoeDriver``.

Usage (pytest-asyncio, asyncio_mode=auto)::

    from support.pty_shoe import shoe_on_pty      # tests/ is on sys.path when pytest runs files in tests/

    async def test_something(tmp_path):
        async with shoe_on_pty({"order": ["AS", "KD"]}, tmp_path) as (driver, ctl):
            await ctl.draw(2)
            first = await driver.next_event(5)          # CardOut AS ...

``shoe_on_pty(scenario, tmp_path, **driver_kwargs)``:
- ``scenario``: a scenario dict (docs/emulator.md keys); fast link timings are filled in when absent
  (heartbeat 0.05 s, silence timeout 1 s, ack timeout 0.05 s, shuffle 0.05 s);
- starts ``EmulatedShoe`` on ``os.openpty`` with a symlink ``tmp_path/shoe`` and a control socket
  ``tmp_path/shoe.ctl``, then a ``ShoeDriver`` on the symlink (driver kwargs override the fast defaults);
- waits until the driver is identified and has delivered ``Identified`` and ``LinkUp`` (both consumed, so the
  first ``driver.next_event()`` is the first device event);
- yields ``(driver, control_client)``; the emulator object is at ``control_client.shoe`` for white-box tests;
- stops everything on exit.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from drivers import events as ev
from drivers.shoe import ShoeDriver
from tablebench.emulator.control import ControlServer
from tablebench.emulator.control_client import ControlClient
from tablebench.emulator.device import EmulatedShoe
from tablebench.emulator.scenario import parse_scenario

FAST_LINK = {"heartbeat_s": 0.05, "silence_timeout_s": 1.0, "ack_timeout_s": 0.05}
FAST_DRIVER = {
    "ack_timeout": 0.05,
    "max_retries": 8,
    "silence_timeout": 1.0,
    "heartbeat_interval": 0.05,
    "reconnect_backoff": (0.02, 0.2),
    "result_timeout": 10.0,
}


@asynccontextmanager
async def shoe_on_pty(
    scenario: dict[str, Any], tmp_path: Path, *, wait_link_up: bool = True, **driver_kwargs: Any
) -> AsyncIterator[tuple[ShoeDriver, ControlClient]]:
    data = copy.deepcopy(scenario)
    data.setdefault("link", {})
    for k, v in FAST_LINK.items():
        data["link"].setdefault(k, v)
    data.setdefault("timings", {}).setdefault("shuffle_s", 0.05)
    shoe = EmulatedShoe(parse_scenario(data), link_path=str(tmp_path / "shoe"))
    control = ControlServer(shoe, str(tmp_path / "shoe.ctl"))
    await shoe.start()
    await control.start()
    ctl = await ControlClient.connect(control.path)
    ctl.shoe = shoe  # type: ignore[attr-defined]
    driver = ShoeDriver(str(tmp_path / "shoe"), **{**FAST_DRIVER, **driver_kwargs})
    await driver.start()
    try:
        if wait_link_up:
            first = await driver.next_event(10)
            second = await driver.next_event(10)
            assert isinstance(first, ev.Identified) and isinstance(second, ev.LinkUp), (first, second)
        yield driver, ctl
    finally:
        await driver.stop()
        await ctl.close()
        await control.stop()
        await shoe.stop()
        await asyncio.sleep(0)
