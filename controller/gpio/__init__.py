"""GPIO behind a small named-signal interface: a fake for tests and an RPi.GPIO-API adapter for the Pi."""

from controller.gpio.base import Edge, GpioBoard, PinSpec
from controller.gpio.fake import FakeBoard

__all__ = ["Edge", "FakeBoard", "GpioBoard", "PinSpec"]
