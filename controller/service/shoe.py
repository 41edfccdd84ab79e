"""The service's card line from ``[shoe]`` and ``[reader]``: the shoe's serial driver, and, when a separate USB
card reader deals (docs/reader.md), the reader with the two joined (drivers/card_line.py). Built, not started:
the service starts it after the recovery (controller/service/table_service.py)."""

from __future__ import annotations

from typing import Any

from controller.config import TableConfig
from drivers.card_line import ShoeWithReader
from drivers.serial_port import resolve_port
from drivers.shoe import ShoeDriver
from drivers.usb_reader import PyUsbBackend, UsbCardReader


def build_card_line(config: TableConfig, usb_backend: Any = None) -> tuple[ShoeDriver, UsbCardReader | None]:
    """The shoe (joined with the reader when ``[reader]`` is enabled) and the reader; ``usb_backend``: a pyusb
    backend for the reader, None for libusb."""
    shoe_cfg = config.shoe
    try:
        port = resolve_port(shoe_cfg.port)
    except FileNotFoundError:  # not plugged in yet: the driver resolves it again on every attempt
        port = shoe_cfg.port
    shoe = ShoeDriver(
        port,
        baudrate=shoe_cfg.baudrate,
        ack_timeout=shoe_cfg.ack_timeout_ms / 1000,
        max_retries=shoe_cfg.retries,
        silence_timeout=shoe_cfg.silence_timeout_ms / 1000,
        heartbeat_interval=shoe_cfg.heartbeat_interval_ms / 1000,
    )
    r = config.reader
    if not r.enabled:
        return shoe, None
    # cards from the separate USB reader, the rest from the shoe (docs/reader.md)
    reader = UsbCardReader(
        PyUsbBackend(r.vendor_id, r.product_id, r.serial, backend=usb_backend), poll_ms=r.read_timeout_ms
    )
    # ShoeWithReader serves the ShoeDriver's face (drivers/card_line.py) without being one
    return ShoeWithReader(shoe, reader), reader  # type: ignore[return-value]  # duck-typed ShoeDriver
