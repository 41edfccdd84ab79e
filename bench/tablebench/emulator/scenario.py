"""Scenario files for the emulated shoe (docs/emulator.md): JSON or TOML, same keys, clear errors."""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.events import RANKS, SUITS, JamLocation

FAULT_KINDS = ("jam", "lid_forced", "unreadable", "face_up", "silence", "unplug")


class ScenarioError(ValueError):
    """A scenario that cannot be run; the message names the key at fault."""


@dataclass(frozen=True, slots=True)
class Fault:
    at_card: int  # 1-based count of cards out since the emulator started
    kind: str
    location: JamLocation = JamLocation.OUTPUT
    damaged: bool = False
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Scenario:
    kind: str = "continuous"
    decks: int = 6
    seed: int | None = None  # None: a random order (issue 13 §5); a seed only for tests and benches
    order: tuple[str, ...] = ()
    model: str = "EMU-CSM"
    firmware: str = "1.0.0"
    serial_number: str = "EMU0001"
    shuffle_s: float = 0.2
    warning_from_end: int = 50  # PT-2001 r.9 (~50th from the end); MO-2004 art.2.1.1 (>= 30)
    cut_from_end: int = 10
    ack_timeout_s: float = 0.2
    heartbeat_s: float = 0.5
    silence_timeout_s: float = 3.0
    bit_error_rate: float = 0.0
    byte_error_rate: float = 0.0
    drop_rate: float = 0.0
    faults: tuple[Fault, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    deck_check_unreadable: int = 0
    start_empty: bool = False  # every card starts outside: loaded through the window (PT-2001 r.53-54)

    @property
    def continuous(self) -> bool:
        return self.kind == "continuous"


ALL_CODES = tuple(r + s for s in SUITS for r in RANKS)


def check_code(code: Any, where: str) -> str:
    if not isinstance(code, str) or len(code) != 2 or code[0] not in RANKS or code[1] not in SUITS:
        raise ScenarioError(
            f"{where}: {code!r} is not a card code (rank of {RANKS} + suit of {SUITS}, e.g. 'AS')"
        )
    return code


def _num(
    d: dict[str, Any], key: str, default: float, where: str, *, lo: float = 0.0, hi: float | None = None
) -> float:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ScenarioError(f"{where}{key}: {v!r} is not a number in {rng}")
    return float(v)


def _int(d: dict[str, Any], key: str, default: int, where: str, *, lo: int = 0, hi: int | None = None) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ScenarioError(f"{where}{key}: {v!r} is not an integer in {rng}")
    return v


def _codes(d: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    v = d.get(key, [])
    if not isinstance(v, list):
        raise ScenarioError(f"{where}{key}: expected a list of card codes")
    return tuple(check_code(c, f"{where}{key}[{i}]") for i, c in enumerate(v))


def _table(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise ScenarioError(f"{key}: expected a table/object")
    return v


def parse_scenario(data: dict[str, Any]) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("scenario: expected a table/object at the top level")
    known = {
        "kind",
        "decks",
        "seed",
        "order",
        "device",
        "timings",
        "batch",
        "link",
        "errors",
        "faults",
        "deck",
        "start_empty",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ScenarioError(f"scenario: unknown key(s) {unknown}; known: {sorted(known)}")
    kind = data.get("kind", "continuous")
    if kind not in ("continuous", "batch"):
        raise ScenarioError(f"kind: {kind!r} must be 'continuous' or 'batch'")
    decks = _int(data, "decks", 6, "", lo=1, hi=8)
    seed = _int(data, "seed", 0, "", lo=0) if data.get("seed") is not None else None
    order = _codes(data, "order", "")
    device, timings, batch, link, errors, deck = (
        _table(data, k) for k in ("device", "timings", "batch", "link", "errors", "deck")
    )
    missing = _codes(deck, "missing", "deck.")
    extra = _codes(deck, "extra", "deck.") + _codes(deck, "duplicated", "deck.")
    # The explicit order is taken from the machine's inventory: it must fit in the decks (minus missing).
    available = Counter({c: decks for c in ALL_CODES})
    available.subtract(missing)
    available.update(extra)
    for code, n in available.items():
        if n < 0:
            raise ScenarioError(
                f"deck.missing: {code} removed {decks - n} times but the {decks} decks hold {decks}"
            )
    wanted = Counter(order)
    for code, n in wanted.items():
        if n > available[code]:
            raise ScenarioError(
                f"order: {code} appears {n} times but the machine holds {available[code]} ({decks} decks)"
            )
    total = sum(available.values())
    start_empty = data.get("start_empty", False)
    if not isinstance(start_empty, bool):
        raise ScenarioError(f"start_empty: {start_empty!r} must be true or false")
    if start_empty and kind != "continuous":
        raise ScenarioError("start_empty: only a continuous shuffler is loaded through its window")
    if start_empty and order:
        raise ScenarioError(
            "order: an empty machine has no cards to script; queue them (control op 'queue') after loading"
        )
    faults = []
    raw_faults = data.get("faults", [])
    if not isinstance(raw_faults, list):
        raise ScenarioError("faults: expected a list of tables/objects")
    for i, f in enumerate(raw_faults):
        where = f"faults[{i}]."
        if not isinstance(f, dict):
            raise ScenarioError(f"faults[{i}]: expected a table/object")
        fkind = f.get("kind")
        if fkind not in FAULT_KINDS:
            raise ScenarioError(f"{where}kind: {fkind!r} is not one of {FAULT_KINDS}")
        loc = f.get("location", "output")
        if loc not in list(JamLocation):
            raise ScenarioError(f"{where}location: {loc!r} is not one of {[str(x) for x in JamLocation]}")
        faults.append(
            Fault(
                at_card=_int(f, "at_card", 0, where, lo=1),
                kind=fkind,
                location=JamLocation(loc),
                damaged=bool(f.get("damaged", False)),
                seconds=_num(f, "seconds", 1.0, where, lo=0.0, hi=3600.0),
            )
        )
    warning = _int(batch, "warning_from_end", 50, "batch.", lo=0, hi=total)
    cut = _int(batch, "cut_from_end", 10, "batch.", lo=0, hi=total)
    if kind == "batch" and warning <= cut:
        raise ScenarioError(
            f"batch.warning_from_end ({warning}) must be greater than batch.cut_from_end ({cut})"
        )
    return Scenario(
        kind=kind,
        decks=decks,
        seed=seed,
        order=order,
        model=str(device.get("model", "EMU-CSM" if kind == "continuous" else "EMU-SHOE")),
        firmware=str(device.get("firmware", "1.0.0")),
        serial_number=str(device.get("serial_number", "EMU0001")),
        shuffle_s=_num(timings, "shuffle_s", 0.2, "timings.", hi=600.0),
        warning_from_end=warning,
        cut_from_end=cut,
        ack_timeout_s=_num(link, "ack_timeout_s", 0.2, "link.", lo=0.001, hi=10.0),
        heartbeat_s=_num(link, "heartbeat_s", 0.5, "link.", lo=0.01, hi=60.0),
        silence_timeout_s=_num(link, "silence_timeout_s", 3.0, "link.", lo=0.05, hi=600.0),
        bit_error_rate=_num(errors, "bit_error_rate", 0.0, "errors.", hi=1.0),
        byte_error_rate=_num(errors, "byte_error_rate", 0.0, "errors.", hi=1.0),
        drop_rate=_num(errors, "drop_rate", 0.0, "errors.", hi=1.0),
        faults=tuple(faults),
        missing=missing,
        extra=extra,
        deck_check_unreadable=_int(deck, "unreadable", 0, "deck.", lo=0),
        start_empty=start_empty,
    )


def load_scenario(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read scenario ({exc.strerror})") from exc
    try:
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{p}: not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}") from exc
    try:
        return parse_scenario(data)
    except ScenarioError as exc:
        raise ScenarioError(f"{p}: {exc}") from exc
