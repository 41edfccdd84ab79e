"""The RPi.GPIO adapter and the board factory.

There is no Raspberry Pi here, so the only way to exercise controller/gpio/rpi.py is a stand-in ``RPi.GPIO``
module injected into ``sys.modules``: it records every call with the real API's names and constants and fires
edge callbacks from its own thread, as RPi.GPIO does. What it proves: BCM numbering, safe initial output
levels (lid locked, warning light on, honouring active_low), pull-ups for active-low inputs, edge detection
with the configured bouncetime, callbacks (on the library's thread or marshalled to an asyncio loop) and
clean-up that leaves the outputs driven.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.config import load_config
from controller.config.model import GpioConfig, PinConfig
from controller.gpio import FakeBoard, PinSpec
from controller.gpio.base import GpioBackend
from controller.gpio.factory import make_board, pin_specs
from controller.gpio.rpi import RpiBoard, import_rpi_gpio
from controller.service.safe_state import main as factory_main

ROOT = Path(__file__).resolve().parents[1]


class FakeRPiGPIO(types.ModuleType):
    """The subset of the RPi.GPIO API the adapter uses, with the real constant values."""

    BCM, BOARD = 11, 10
    OUT, IN = 0, 1
    HIGH, LOW = 1, 0
    PUD_OFF, PUD_DOWN, PUD_UP = 20, 21, 22
    RISING, FALLING, BOTH = 31, 32, 33

    def __init__(self) -> None:
        super().__init__("RPi.GPIO")
        self.mode: int | None = None
        self.calls: list[tuple[Any, ...]] = []
        self.directions: dict[int, int] = {}
        self.levels: dict[int, int] = {}
        self.pulls: dict[int, int] = {}
        self.events: dict[int, tuple[int, Callable[[int], None], int | None]] = {}
        self.cleaned: list[int] = []

    def setwarnings(self, flag: bool) -> None:
        self.calls.append(("setwarnings", flag))

    def setmode(self, mode: int) -> None:
        self.mode = mode

    def setup(self, pin: int, direction: int, pull_up_down: int = 20, initial: int = -1) -> None:
        assert self.mode == self.BCM, "setup before setmode(BCM)"
        self.directions[pin] = direction
        if direction == self.OUT:
            assert initial in (0, 1), "outputs must be set up with an initial level"
            self.levels[pin] = initial
        else:
            self.pulls[pin] = pull_up_down
            self.levels[pin] = 1 if pull_up_down == self.PUD_UP else 0  # idle level through the pull

    def output(self, pin: int, level: int) -> None:
        assert self.directions.get(pin) == self.OUT, f"output() on non-output {pin}"
        self.levels[pin] = int(level)
        self.calls.append(("output", pin, int(level)))

    def input(self, pin: int) -> int:
        return self.levels[pin]

    def add_event_detect(
        self,
        pin: int,
        edge: int,
        callback: Callable[[int], None] | None = None,
        bouncetime: int | None = None,
    ) -> None:
        assert pin not in self.events, "RuntimeError: Conflicting edge detection already enabled"
        assert callback is not None
        self.events[pin] = (edge, callback, bouncetime)

    def remove_event_detect(self, pin: int) -> None:
        self.events.pop(pin)

    def cleanup(self, channels: list[int] | int | None = None) -> None:
        pins = (
            list(self.directions)
            if channels is None
            else ([channels] if isinstance(channels, int) else channels)
        )
        for pin in pins:
            self.directions[pin] = self.IN
            self.cleaned.append(pin)

    # ---- test side: a physical level change, delivered from RPi.GPIO's own thread ----
    def drive(self, pin: int, level: int) -> None:
        self.levels[pin] = level
        _, callback, _ = self.events[pin]
        t = threading.Thread(target=callback, args=(pin,), name="rpi-gpio-events")
        t.start()
        t.join()


@pytest.fixture
def gpio(monkeypatch: pytest.MonkeyPatch) -> FakeRPiGPIO:
    module = FakeRPiGPIO()
    package = types.ModuleType("RPi")
    package.GPIO = module  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "RPi", package)
    monkeypatch.setitem(sys.modules, "RPi.GPIO", module)
    return module


SPECS = [
    PinSpec("lid_lock", 17, output=True, safe_value=True),
    PinSpec("warning_light", 27, output=True, safe_value=True, active_low=True),
    PinSpec("lid_switch", 22, output=False, active_low=True, debounce_ms=30),
    PinSpec("button_hit", 5, output=False, active_low=True, debounce_ms=20),
    PinSpec("chip_slot_1", 23, output=False, active_low=False, debounce_ms=0),
]


def board(gpio: FakeRPiGPIO, **kwargs: Any) -> RpiBoard:
    b = RpiBoard(**kwargs)  # imports the injected RPi.GPIO lazily
    b.setup(SPECS)
    return b


def test_bcm_numbering_and_safe_initial_levels(gpio: FakeRPiGPIO) -> None:
    """PT-2001 r.60/r.51: from the first instant the lid is locked and the warning light is on."""
    b = board(gpio)
    assert gpio.mode == gpio.BCM
    assert gpio.directions[17] == gpio.OUT and gpio.levels[17] == 1  # lock engaged, active high
    assert gpio.directions[27] == gpio.OUT and gpio.levels[27] == 0  # light on, active low: level 0
    assert not [c for c in gpio.calls if c[0] == "output"]  # no glitch: set by initial=, not a later write
    assert b.read("lid_lock") and b.read("warning_light")


def test_inputs_get_pull_ups_when_active_low(gpio: FakeRPiGPIO) -> None:
    board(gpio)
    assert gpio.pulls == {22: gpio.PUD_UP, 5: gpio.PUD_UP, 23: gpio.PUD_DOWN}


def test_logical_values_honour_active_low(gpio: FakeRPiGPIO) -> None:
    b = board(gpio)
    b.write("warning_light", False)
    assert gpio.levels[27] == 1  # off = high on an active-low line
    b.write("lid_lock", False)
    assert gpio.levels[17] == 0
    assert b.read("button_hit") is False  # idle: pulled up, not pressed
    gpio.levels[5] = 0
    assert b.read("button_hit") is True
    with pytest.raises(ValueError, match="input"):
        b.write("button_hit", True)
    with pytest.raises(KeyError, match="button_split"):
        b.read("button_split")


def test_edge_callback_on_the_library_thread(gpio: FakeRPiGPIO) -> None:
    b = board(gpio)
    seen: list[tuple[str, bool, str]] = []
    b.on_edge("button_hit", lambda name, value: seen.append((name, value, threading.current_thread().name)))
    edge, _, bouncetime = gpio.events[5]
    assert edge == gpio.BOTH and bouncetime == 20
    gpio.drive(5, 0)  # pressed
    gpio.drive(5, 0)  # a bounce that settled at the same level: not reported twice
    gpio.drive(5, 1)  # released
    assert seen == [("button_hit", True, "rpi-gpio-events"), ("button_hit", False, "rpi-gpio-events")]


def test_zero_debounce_passes_no_bouncetime(gpio: FakeRPiGPIO) -> None:
    b = board(gpio)
    b.on_edge("chip_slot_1", lambda *_: None)
    assert gpio.events[23][2] is None


def test_several_callbacks_share_one_edge_detection(gpio: FakeRPiGPIO) -> None:
    b = board(gpio)
    a: list[bool] = []
    c: list[bool] = []
    b.on_edge("lid_switch", lambda _n, v: a.append(v))
    b.on_edge("lid_switch", lambda _n, v: c.append(v))  # a second add_event_detect would raise on a Pi
    gpio.drive(22, 0)
    assert a == c == [True]


def test_a_failing_callback_does_not_stop_the_others(
    gpio: FakeRPiGPIO, caplog: pytest.LogCaptureFixture
) -> None:
    b = board(gpio)
    got: list[bool] = []

    def broken(_name: str, _value: bool) -> None:
        raise RuntimeError("boom")

    b.on_edge("button_hit", broken)
    b.on_edge("button_hit", lambda _n, v: got.append(v))
    gpio.drive(5, 0)
    assert got == [True]
    assert "GPIO callback for button_hit failed" in caplog.text


async def test_callbacks_marshalled_to_the_event_loop(gpio: FakeRPiGPIO) -> None:
    loop = asyncio.get_running_loop()
    b = board(gpio, loop=loop)
    loop_thread = threading.get_ident()
    done: asyncio.Future[tuple[str, bool, int]] = loop.create_future()
    b.on_edge("lid_switch", lambda name, value: done.set_result((name, value, threading.get_ident())))
    gpio.drive(22, 0)  # fired on another thread; must not touch the future there
    assert await asyncio.wait_for(done, 10) == ("lid_switch", True, loop_thread)


def test_on_edge_refuses_outputs(gpio: FakeRPiGPIO) -> None:
    with pytest.raises(ValueError, match="output"):
        board(gpio).on_edge("lid_lock", lambda *_: None)


def test_safe_state_and_close_leave_outputs_driven(gpio: FakeRPiGPIO) -> None:
    b = board(gpio)
    b.on_edge("button_hit", lambda *_: None)
    b.write("lid_lock", False)  # unlocked for the discard window (PT-2001 r.59)
    b.write("warning_light", False)
    b.safe_state()
    assert (gpio.levels[17], gpio.levels[27]) == (1, 0)
    b.write("lid_lock", False)
    b.close()
    assert gpio.levels[17] == 1  # locked again by close()
    assert sorted(gpio.cleaned) == [5, 22, 23]  # only inputs released: outputs are never left floating
    assert gpio.directions[17] == gpio.OUT and gpio.directions[27] == gpio.OUT
    assert 5 not in gpio.events
    b.close()  # idempotent


def test_missing_rpi_gpio_names_the_pi_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "RPi", None)
    monkeypatch.setitem(sys.modules, "RPi.GPIO", None)
    with pytest.raises(RuntimeError, match=r"'pi' extra"):
        RpiBoard()


def test_missing_rpi_gpio_on_an_installed_table_names_a_new_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """install.sh owns an installed table's venv (<release>/.venv beside the release's .source-sha256): pip
    there is not the technician's step, a new release is (docs/deploy.md §2)."""
    monkeypatch.setitem(sys.modules, "RPi", None)
    monkeypatch.setitem(sys.modules, "RPi.GPIO", None)
    release = tmp_path / "releases" / "20261122T101500.123456789Z"
    (release / ".venv").mkdir(parents=True)
    (release / ".source-sha256").write_text("0" * 64 + "\n")
    with pytest.raises(RuntimeError) as raised:
        import_rpi_gpio(str(release / ".venv"))
    text = str(raised.value)
    assert "systemd/update.sh" in text and "docs/deploy.md" in text and 'backend = "fake"' in text
    assert "pip install" not in text and "'pi' extra" not in text


# ---- factory ----------

GPIO_CONFIG = GpioConfig(
    backend=GpioBackend.FAKE,
    pins=(
        PinConfig("lid_lock", 17, output=True),
        PinConfig("warning_light", 27, output=True),
        PinConfig("lid_switch", 22, output=False, active_low=True, debounce_ms=30),
        PinConfig("chip_slot_1", 23, output=False),
    ),
)


def test_pin_specs_carry_the_fixed_safe_values() -> None:
    specs = {s.name: s for s in pin_specs(GPIO_CONFIG)}
    assert specs["lid_lock"] == PinSpec("lid_lock", 17, output=True, safe_value=True)
    assert specs["warning_light"].safe_value is True
    assert specs["lid_switch"] == PinSpec("lid_switch", 22, output=False, active_low=True, debounce_ms=30)


def test_make_board_fake_is_set_up_at_safe_values() -> None:
    b = make_board(GPIO_CONFIG)
    assert isinstance(b, FakeBoard)
    assert b.read("lid_lock") and b.read("warning_light") and not b.read("lid_switch")


def test_make_board_rpi(gpio: FakeRPiGPIO) -> None:
    cfg = GpioConfig(backend=GpioBackend.RPI, pins=GPIO_CONFIG.pins)
    b = make_board(cfg)
    assert isinstance(b, RpiBoard)
    assert gpio.levels[17] == 1 and gpio.pulls[22] == gpio.PUD_UP


def _rpi_demo_config(tmp_path: Path) -> Path:
    text = (
        (ROOT / "firmware_configs" / "demo.toml").read_text().replace('backend = "fake"', 'backend = "rpi"')
    )
    path = tmp_path / "table.toml"
    path.write_text(
        text.replace("[table]\n", f'[table]\nprofiles_dir = "{ROOT / "firmware_configs/profiles"}"\n')
    )
    return path


def test_exec_stop_post_safe_state(
    gpio: FakeRPiGPIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """systemd ExecStopPost: after a crash the outputs are driven safe by a fresh process."""
    path = _rpi_demo_config(tmp_path)
    assert load_config(path, check_files=False).gpio.backend is GpioBackend.RPI
    assert factory_main(["safe-state", "--config", str(path)]) == 0
    assert gpio.levels[17] == 1 and gpio.levels[27] == 1  # demo wiring: both active high
    assert "safe values" in capsys.readouterr().out


def test_exec_stop_post_with_a_bad_config_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "table.toml"
    path.write_text("[table\n")
    assert factory_main(["safe-state", "--config", str(path)]) == 1
    assert "not valid TOML" in capsys.readouterr().err
