"""Build the GPIO board named by the configuration's ``[gpio]`` section.

Also the systemd ``ExecStopPost=`` helper: ``python -m controller.gpio.factory safe-state --config FILE``
drives the outputs to their safe values after the service has stopped, including after a crash or a watchdog
kill, when the service's own SIGTERM handling never ran.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from controller.config.model import GpioBackend, GpioConfig
from controller.gpio.base import GpioBoard, PinSpec
from controller.gpio.fake import FakeBoard


def pin_specs(gpio_config: GpioConfig) -> list[PinSpec]:
    """One PinSpec per configured signal; outputs carry their fixed safe values (lid locked, light on)."""
    return [p.spec() for p in gpio_config.pins]


def make_board(gpio_config: GpioConfig, *, loop: asyncio.AbstractEventLoop | None = None) -> GpioBoard:
    """A board of the configured backend, already set up: its outputs are at their safe values on return.

    ``loop``: for the rpi backend, edge callbacks are handed to this loop instead of running on RPi.GPIO's
    thread (the fake board calls them synchronously from ``set_input``).
    """
    board: GpioBoard
    if gpio_config.backend is GpioBackend.RPI:
        from controller.gpio.rpi import RpiBoard

        board = RpiBoard(loop=loop)
    else:
        board = FakeBoard()
    board.setup(pin_specs(gpio_config))
    return board


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controller.gpio.factory", description=__doc__.splitlines()[0]
    )
    parser.add_argument("action", choices=["safe-state"])
    parser.add_argument("--config", required=True, help="table configuration (TOML)")
    args = parser.parse_args(argv)
    from controller.config import ConfigError, load_config

    try:
        cfg = load_config(args.config, check_files=False)
        board = make_board(cfg.gpio)  # set-up alone already writes the safe values
        board.close()
    except (ConfigError, RuntimeError, OSError) as exc:
        print(f"safe-state: {exc}", file=sys.stderr)
        return 1
    print(f"safe-state: outputs of {cfg.table.id} at their safe values (lid locked, warning light on)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
