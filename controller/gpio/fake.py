"""An in-memory GPIO board that tests and the bench drive: press buttons, trip sensors, read outputs back."""

from __future__ import annotations

from collections.abc import Callable

from controller.gpio.base import PinSpec


class FakeBoard:
    def __init__(self) -> None:
        self.specs: dict[str, PinSpec] = {}
        self.values: dict[str, bool] = {}
        self.history: list[tuple[str, bool]] = []  # every output write, in order
        self._callbacks: dict[str, list[Callable[[str, bool], None]]] = {}
        self.closed = False

    def setup(self, specs: list[PinSpec]) -> None:
        for spec in specs:
            self.specs[spec.name] = spec
            self.values[spec.name] = spec.safe_value if spec.output else False

    def write(self, name: str, value: bool) -> None:
        spec = self._spec(name)
        if not spec.output:
            raise ValueError(f"{name} is an input")
        self.values[name] = bool(value)
        self.history.append((name, bool(value)))

    def read(self, name: str) -> bool:
        self._spec(name)
        return self.values[name]

    def on_edge(self, name: str, callback: Callable[[str, bool], None]) -> None:
        self._spec(name)
        self._callbacks.setdefault(name, []).append(callback)

    def safe_state(self) -> None:
        for spec in self.specs.values():
            if spec.output:
                self.write(spec.name, spec.safe_value)

    def close(self) -> None:
        self.safe_state()
        self.closed = True

    # ---- test side ----
    def set_input(self, name: str, value: bool) -> None:
        """Simulate an input changing (already debounced)."""
        spec = self._spec(name)
        if spec.output:
            raise ValueError(f"{name} is an output")
        if self.values[name] == bool(value):
            return
        self.values[name] = bool(value)
        for cb in self._callbacks.get(name, []):
            cb(name, bool(value))

    def pulse(self, name: str) -> None:
        """A button press: high then low."""
        self.set_input(name, True)
        self.set_input(name, False)

    def _spec(self, name: str) -> PinSpec:
        try:
            return self.specs[name]
        except KeyError:
            raise KeyError(f"no GPIO signal named {name!r}") from None
