"""``tablectl floor bridge --config TABLE.toml --bridge BRIDGE.toml --out FILE``: write the table broker's bridge
section (controller/mqtt/floor_bridge.py; also ``python -m controller.broker render ... --bridge``). The file holds
the bridge account's password: it is written with mode 0600."""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

from controller.mqtt.floor_bridge import BridgeConfigError, write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="the table configuration (table.toml)")
    parser.add_argument("--bridge", type=Path, required=True, help="the floor bridge settings (bridge.toml)")
    parser.add_argument(
        "--out", type=Path, required=True, help="e.g. /etc/mosquitto/conf.d/floor-bridge.conf"
    )


def main(args: argparse.Namespace) -> int:
    try:
        write(args.config, args.bridge, args.out)
    except (BridgeConfigError, OSError, tomllib.TOMLDecodeError) as exc:
        print(f"floor bridge: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0
