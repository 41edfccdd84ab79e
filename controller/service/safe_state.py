"""The systemd ``ExecStopPost=`` helper: ``python -m controller.service.safe_state safe-state --config FILE``
drives the GPIO outputs to their safe values after the service has stopped, including after a crash or a
watchdog kill, when the service's own SIGTERM handling never ran.

Wiring (it reads the configuration and builds the board), so it sits above both ``controller.config`` and
``controller.gpio``; it was ``python -m controller.gpio.factory safe-state`` (issue 31: gpio imported config).
"""

from __future__ import annotations

import argparse
import sys

from controller.config import ConfigError, load_config
from controller.gpio.factory import make_board


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controller.service.safe_state", description=__doc__.splitlines()[0]
    )
    parser.add_argument("action", choices=["safe-state"])
    parser.add_argument("--config", required=True, help="table configuration (TOML)")
    args = parser.parse_args(argv)
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
