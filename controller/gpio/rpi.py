"""GpioBoard on the RPi.GPIO API (on a Pi 5 the ``RPi.GPIO`` module comes from rpi-lgpio).

- BCM numbering; ``RPi.GPIO`` is imported only when a board is created, so other machines never need it.
- Values are *logical*: ``write("lid_lock", True)`` engages the lock whatever the wiring; ``active_low`` flips
  the electrical level. Outputs are set up already at their safe value (``initial=``), so there is no glitch
  between set-up and the first write.
- Inputs get the pull-up for active-low wiring (button to ground) and the pull-down otherwise.
- Edge callbacks: RPi.GPIO calls them **on its own event thread**, never on the asyncio loop. Pass ``loop=``
  and each callback is handed to that loop with ``call_soon_threadsafe`` instead; without it the callback
  must be thread-safe. A callback that raises is logged and does not stop later events.
- ``close()`` drives the outputs to their safe values and releases only the *inputs*: ``GPIO.cleanup()`` on an
  output would turn it into a floating input, and a lid lock must not depend on what a floating line does.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from controller.gpio.base import PinSpec

log = logging.getLogger(__name__)

Callback = Callable[[str, bool], None]


# Beside the venv of a release that systemd/install.sh or update.sh built (systemd/lib.sh: <release>/.venv).
RELEASE_MARK = ".source-sha256"


def import_rpi_gpio(prefix: str = sys.prefix) -> ModuleType:
    """``RPi.GPIO``, or a RuntimeError whose text names the step that brings it where this venv came from."""
    try:
        return importlib.import_module("RPi.GPIO")
    except (ImportError, RuntimeError) as exc:  # classic RPi.GPIO raises RuntimeError on a non-Pi
        raise RuntimeError(
            f"the RPi.GPIO module is not available ({exc}): {missing_gpio_fix(prefix)}"
        ) from exc


def missing_gpio_fix(prefix: str) -> str:
    """On an installed table the release's venv is install.sh's (it installs requirements/pi.txt, whose
    rpi-lgpio provides RPi.GPIO): a new release brings it back (docs/deploy.md §2). Elsewhere: the 'pi' extra."""
    if (Path(prefix).parent / RELEASE_MARK).is_file():
        return (
            "on this installed table it comes with the release (rpi-lgpio, requirements/pi.txt): build a new "
            "release with systemd/update.sh, run as root from the source tree (docs/deploy.md §2, Update and "
            'rollback), or set [gpio] backend = "fake" on a table without a GPIO board'
        )
    return (
        "install the project with the 'pi' extra (pip install '.[pi]', which brings rpi-lgpio), or set "
        '[gpio] backend = "fake"'
    )


class RpiBoard:
    def __init__(
        self, gpio: ModuleType | None = None, *, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        self._gpio = gpio if gpio is not None else import_rpi_gpio()
        self._loop = loop
        self._specs: dict[str, PinSpec] = {}
        self._by_pin: dict[int, PinSpec] = {}
        self._callbacks: dict[str, list[Callback]] = {}
        self._last: dict[str, bool] = {}  # last reported logical level per watched input
        self._lock = threading.Lock()
        self._closed = False

    # ---- GpioBoard ----
    def setup(self, specs: list[PinSpec]) -> None:
        g = self._gpio
        g.setwarnings(False)
        g.setmode(g.BCM)
        for spec in specs:
            self._specs[spec.name] = spec
            self._by_pin[spec.pin] = spec
            if spec.output:
                g.setup(spec.pin, g.OUT, initial=self._level(spec, spec.safe_value))
            else:
                g.setup(spec.pin, g.IN, pull_up_down=g.PUD_UP if spec.active_low else g.PUD_DOWN)

    def write(self, name: str, value: bool) -> None:
        spec = self._spec(name)
        if not spec.output:
            raise ValueError(f"{name} is an input")
        self._gpio.output(spec.pin, self._level(spec, value))

    def read(self, name: str) -> bool:
        spec = self._spec(name)
        return bool(self._gpio.input(spec.pin)) != spec.active_low

    def on_edge(self, name: str, callback: Callback) -> None:
        spec = self._spec(name)
        if spec.output:
            raise ValueError(f"{name} is an output")
        with self._lock:
            first = name not in self._callbacks
            self._callbacks.setdefault(name, []).append(callback)
            if first:
                self._last[name] = self.read(name)
        if first:
            kwargs = {"bouncetime": spec.debounce_ms} if spec.debounce_ms > 0 else {}
            self._gpio.add_event_detect(spec.pin, self._gpio.BOTH, callback=self._on_event, **kwargs)

    def safe_state(self) -> None:
        for spec in self._specs.values():
            if spec.output:
                try:
                    self.write(spec.name, spec.safe_value)
                except Exception:  # one broken line must not stop the others reaching their safe value
                    log.exception("could not drive %s to its safe value", spec.name)

    def close(self) -> None:
        if self._closed:
            return
        self.safe_state()
        inputs = [s.pin for s in self._specs.values() if not s.output]
        for name in list(self._callbacks):
            try:
                self._gpio.remove_event_detect(self._specs[name].pin)
            except Exception:
                log.exception("could not stop edge detection on %s", name)
        if inputs:
            self._gpio.cleanup(inputs)
        self._closed = True

    # ---- internals ----
    @staticmethod
    def _level(spec: PinSpec, value: bool) -> int:
        return int(bool(value) != spec.active_low)

    def _spec(self, name: str) -> PinSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise KeyError(f"no GPIO signal named {name!r}") from None

    def _on_event(self, channel: int) -> None:
        """RPi.GPIO's event thread: read the settled level, report only real changes."""
        spec = self._by_pin.get(channel)
        if spec is None:
            return
        try:
            value = self.read(spec.name)
        except Exception:  # never let an exception escape into RPi.GPIO's thread: it would stop all events
            log.exception("could not read %s after an edge", spec.name)
            return
        with self._lock:
            if self._last.get(spec.name) == value:
                return  # a bounce that settled back where it was
            self._last[spec.name] = value
            callbacks = list(self._callbacks.get(spec.name, ()))
        for cb in callbacks:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._call, cb, spec.name, value)
            else:
                self._call(cb, spec.name, value)

    @staticmethod
    def _call(cb: Callback, name: str, value: bool) -> None:
        try:
            cb(name, value)
        except Exception:
            log.exception("GPIO callback for %s failed", name)
