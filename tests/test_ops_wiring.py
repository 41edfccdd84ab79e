"""The GPIO wiring picture (docs/wiring.md) is drawn from the pin map the configuration uses."""

from __future__ import annotations

import dataclasses
import re

from controller.config.load import load_config
from controller.config.model import OUTPUT_SAFE_VALUES
from controller.ops.wiring import EXAMPLE_CONFIG, HEADER, physical_pin, render


def _row(text: str, phys: int) -> str:
    return next(line for line in text.splitlines() if f"[{phys:2d}]" in line)


def test_every_configured_pin_is_drawn_on_its_physical_header_pin():
    gpio = load_config(EXAMPLE_CONFIG, check_files=False).gpio
    text = render(gpio, "example")
    for p in gpio.pins:
        row = _row(text, physical_pin(p.pin))
        assert p.name in row and f"GPIO{p.pin}" in row
    assert len(re.findall(r"\[\s?\d+\]", text)) == 40  # the whole header, both columns
    assert sorted(HEADER) == list(range(1, 41))
    assert physical_pin(17) == 11 and physical_pin(21) == 40 and HEADER[1] == "3V3" and HEADER[39] == "GND"


def test_safe_values_come_from_the_code_and_follow_the_wiring():
    gpio = load_config(EXAMPLE_CONFIG, check_files=False).gpio
    assert OUTPUT_SAFE_VALUES["lid_lock"] is True
    text = render(gpio, "example")
    assert "lid_lock (out, safe: locked = HIGH)" in text
    # an active-low lock driver: the same logical safe value (locked) is the LOW level
    inverted = dataclasses.replace(
        gpio,
        pins=tuple(dataclasses.replace(p, active_low=True) if p.name == "lid_lock" else p for p in gpio.pins),
    )
    assert "lid_lock (out, safe: locked = LOW)" in render(inverted, "example")
    moved = dataclasses.replace(
        gpio, pins=tuple(dataclasses.replace(p, pin=9) if p.name == "warning_light" else p for p in gpio.pins)
    )
    assert "warning_light" in _row(render(moved, "example"), 21)
    assert "warning_light" not in _row(render(moved, "example"), 13)
