"""Bench description files (TOML, like a labgrid environment): where each part of the table is.

```toml
[table]      id = "T1", site = "bench", profile = "pt-2001"
[broker]     kind = "embedded" | "external" (+ host, port, users_file)
[shoe]       kind = "emulated" (+ [shoe.scenario], docs/emulator.md) | "serial" (+ port, shuffler)
[display]    kind = "emulated" | "serial" (+ port) | "none"
[gpio]       kind = "fake" | "rpi"
```
Every key is optional; a wrong one is an error naming it (never a silent default).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablebench import ROOT

DEFAULT_BENCH = ROOT / "hil_tests" / "benches" / "emulated.toml"

_KINDS = {
    "broker": ("embedded", "external"),
    "shoe": ("emulated", "serial"),
    "display": ("emulated", "serial", "none"),
    "gpio": ("fake", "rpi"),
}
_KEYS = {
    "bench": {"name", "description"},
    "table": {"id", "site", "profile", "min_bet", "max_bet"},
    "broker": {"kind", "host", "port", "users_file"},
    "shoe": {"kind", "port", "shuffler", "scenario"},
    "display": {"kind", "port"},
    "gpio": {"kind"},
}


class BenchError(ValueError):
    """A bench file that cannot be used; the message names the file and key at fault."""


@dataclass(frozen=True)
class BenchConfig:
    name: str = "emulated"
    path: str = ""
    table_id: str = "T1"
    site: str = "bench"
    profile: str = "pt-2001"
    min_bet: int | None = None
    max_bet: int | None = None
    broker: str = "embedded"
    broker_host: str = "127.0.0.1"
    broker_port: int = 1883
    users_file: str | None = None
    shoe: str = "emulated"
    shoe_port: str = ""
    shuffler: str = "continuous"
    scenario: dict[str, Any] = field(default_factory=dict)
    display: str = "emulated"
    display_port: str = ""
    gpio: str = "fake"

    @property
    def emulated_shoe(self) -> bool:
        """Card orders can be scripted and faults injected only through the emulator's control channel."""
        return self.shoe == "emulated"

    @property
    def fake_gpio(self) -> bool:
        return self.gpio == "fake"


def parse_bench(doc: dict[str, Any], where: str = "bench") -> BenchConfig:
    for section, value in doc.items():
        if section not in _KEYS:
            raise BenchError(f"{where}: unknown section [{section}]; known: {sorted(_KEYS)}")
        if not isinstance(value, dict):
            raise BenchError(f"{where}: [{section}] must be a table")
        unknown = set(value) - _KEYS[section]
        if unknown:
            raise BenchError(f"{where}: [{section}] unknown key(s) {sorted(unknown)}")
        kind = value.get("kind")
        if section in _KINDS and kind is not None and kind not in _KINDS[section]:
            raise BenchError(f"{where}: [{section}] kind = {kind!r} is not one of {_KINDS[section]}")

    def get(section: str, key: str, typ: type | tuple[type, ...], default: Any) -> Any:
        v = doc.get(section, {}).get(key, default)
        if v is not default and (not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool)):
            raise BenchError(f"{where}: [{section}] {key} = {v!r} has the wrong type")
        return v

    cfg = BenchConfig(
        name=get("bench", "name", str, "emulated"),
        path=where,
        table_id=get("table", "id", str, "T1"),
        site=get("table", "site", str, "bench"),
        profile=get("table", "profile", str, "pt-2001"),
        min_bet=get("table", "min_bet", int, None),
        max_bet=get("table", "max_bet", int, None),
        broker=get("broker", "kind", str, "embedded"),
        broker_host=get("broker", "host", str, "127.0.0.1"),
        broker_port=get("broker", "port", int, 1883),
        users_file=get("broker", "users_file", str, None),
        shoe=get("shoe", "kind", str, "emulated"),
        shoe_port=get("shoe", "port", str, ""),
        shuffler=get("shoe", "shuffler", str, "continuous"),
        scenario=dict(get("shoe", "scenario", dict, {})),
        display=get("display", "kind", str, "emulated"),
        display_port=get("display", "port", str, ""),
        gpio=get("gpio", "kind", str, "fake"),
    )
    if cfg.shoe == "serial" and not cfg.shoe_port:
        raise BenchError(f"{where}: [shoe] kind = 'serial' needs port (e.g. /dev/serial/by-id/...)")
    if cfg.display == "serial" and not cfg.display_port:
        raise BenchError(f"{where}: [display] kind = 'serial' needs port")
    if cfg.shuffler not in ("continuous", "batch"):
        raise BenchError(f"{where}: [shoe] shuffler = {cfg.shuffler!r} must be 'continuous' or 'batch'")
    if cfg.scenario:
        from tablebench.emulator.scenario import ScenarioError, parse_scenario

        try:
            parse_scenario(cfg.scenario)
        except ScenarioError as exc:
            raise BenchError(f"{where}: [shoe.scenario] {exc}") from None
    return cfg


def load_bench(path: str | Path | None = None) -> BenchConfig:
    p = Path(path) if path else DEFAULT_BENCH
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchError(f"{p}: cannot read bench file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BenchError(f"{p}: not valid TOML: {exc}") from None
    return parse_bench(doc, str(p))
