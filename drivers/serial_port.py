"""Serial port naming and opening: stable ``/dev/serial/by-id`` names, globs, exclusive asyncio open."""

from __future__ import annotations

import asyncio
import glob
import os
from collections.abc import Callable

BY_ID_DIR = "/dev/serial/by-id"


class PortNotFound(FileNotFoundError):
    """No device matches the configured port name."""


def resolve_port(name: str, *, by_id_dir: str = BY_ID_DIR) -> str:
    """Turn a configured name into a path to open.

    - an absolute or relative path (``/dev/ttyUSB0``, ``/tmp/tablectl-shoe``) is used as is if it exists;
    - a bare name (``usb-Maker_Shoe_1234-if00-port0``) is looked up in ``/dev/serial/by-id``;
    - a glob (``/dev/serial/by-id/usb-Maker_Shoe*``, or a bare ``usb-Maker_Shoe*``) must match exactly one
      device, so two shoes on one Pi are never confused.
    The by-id name is preferred because ttyUSBn numbers change with plug order; udev keeps by-id stable.
    """
    candidates: list[str]
    if any(ch in name for ch in "*?["):
        pattern = name if os.sep in name else os.path.join(by_id_dir, name)
        candidates = sorted(glob.glob(pattern))
        if len(candidates) > 1:
            raise PortNotFound(
                f"serial port pattern {name!r} matches {len(candidates)} devices: {candidates}"
            )
    elif os.sep in name:
        candidates = [name] if os.path.exists(name) else []
    else:
        path = os.path.join(by_id_dir, name)
        candidates = [path] if os.path.exists(path) else []
    if not candidates:
        raise PortNotFound(f"serial port {name!r} not found")
    return candidates[0]


async def open_serial(
    path: str, protocol_factory: Callable[[], asyncio.Protocol], *, baudrate: int
) -> tuple[asyncio.Transport, asyncio.Protocol]:
    """Open ``path`` exclusively (flock) as an asyncio transport via pyserial-asyncio-fast."""
    import serial_asyncio_fast  # imported lazily: tests of the pure layers need no serial stack

    loop = asyncio.get_running_loop()
    return await serial_asyncio_fast.create_serial_connection(
        loop, protocol_factory, path, baudrate=baudrate, exclusive=True
    )
