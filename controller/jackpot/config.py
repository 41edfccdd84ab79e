"""The table configuration's ``[jackpot]`` section (PT-2001 r.38-50), validated.

The regulator fixes the jackpot bet value, the increment percentage and the conditions (PT-2001 r.40); the
starting value must be at least 10,000 x the jackpot bet (PT-2001 r.44). Money is integer minor units; shares
are basis points (1 bp = 0.01 %), so every contribution is an exact integer number of 1/10,000 minor units.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from controller.actions import CHIP_SLOT_PREFIX as CHIP_SLOT_PREFIX  # re-exported for the config's readers
from controller.hex64 import HEX64
from controller.jackpot import JackpotError
from drivers.display.protocol import MAX_AMOUNT_DIGITS

BP_DENOMINATOR = 10_000  # basis points in 100 %
MIN_SEED_MULTIPLE = 10_000  # PT-2001 r.44: seed >= 10,000 x bet value
# The meter's range, minor units: what the sign can show (and below 2**53, exact in every JSON reader).
METER_MAX = 10**MAX_AMOUNT_DIGITS - 1
KEYS = ("enabled", "mode", "bet_value", "increment_bp", "reserve_bp", "seed", "currency")
# The table's own meter: required without a link, refused with one (the link's controller keeps the meter).
METER_KEYS = ("increment_bp", "reserve_bp", "seed")
# A linked progressive (docs/jackpot.md "Linked progressive (table side)"): the link's name, its controller's
# public key (Ed25519, hex), how long the table waits for a valid meter document before refusing linked chips.
LINK_KEYS = ("link", "link_public_key", "link_timeout_s")
LINK_NAME = re.compile(r"^[a-z0-9-]{1,32}\Z")
PUBLIC_KEY_HEX = HEX64  # an Ed25519 public key, as every key is written (controller/hex64.py)
DEFAULT_LINK_TIMEOUT_S = 15  # three heartbeats of the link's controller (it republishes at least every 5 s)
MIN_LINK_TIMEOUT_S, MAX_LINK_TIMEOUT_S = 6, 300
# Bounds of a supervisor's meter correction (docs/jackpot.md "Corrections"); optional, defaults below.
CORRECTION_KEYS = ("correction_ceiling", "correction_max_change", "correction_confirm_s")
DEFAULT_CONFIRM_S = 300  # a second supervisor confirms a correction within this many seconds
MAX_CONFIRM_S = 3600
CURRENCY_CODE = re.compile(r"^[A-Z]{3}\Z")  # ISO 4217 (the floor reads it too)


class Mode(StrEnum):
    AUTOMATIC = "automatic"  # PT-2001 r.41a: slot senses the chip, display increments automatically
    MANUAL = "manual"  # PT-2001 r.41b: dealer collects, leaves a marker and increments by hand


@dataclass(frozen=True, slots=True)
class JackpotConfig:
    enabled: bool
    mode: Mode
    bet_value: int  # minor units, one chip per player per hand (PT-2001 r.47)
    increment_bp: int  # share of each jackpot bet added to the meter (PT-2001 r.40)
    reserve_bp: int  # share diverted to the next-seed reserve pool (may be 0)
    seed: int  # minor units, >= 10,000 x bet_value (PT-2001 r.44)
    currency: str  # ISO 4217 code
    # A correction (dual control): the meter after it at most this (default: METER_MAX) ...
    correction_ceiling: int | None = None
    # ... changed by at most this much (default: the seed) ...
    correction_max_change: int | None = None
    # ... confirmed by a second supervisor within this many seconds (default: DEFAULT_CONFIRM_S).
    correction_confirm_s: int | None = None
    # A linked progressive: the link's name (None: the table runs its own meter), its controller's public key
    # and the seconds without a valid meter document after which linked chips are refused.
    link: str | None = None
    link_public_key: str | None = None
    link_timeout_s: int | None = None

    @property
    def linked(self) -> bool:
        return self.link is not None

    @property
    def timeout_s(self) -> int:
        return DEFAULT_LINK_TIMEOUT_S if self.link_timeout_s is None else self.link_timeout_s

    @property
    def ceiling(self) -> int:
        return METER_MAX if self.correction_ceiling is None else self.correction_ceiling

    @property
    def max_change(self) -> int:
        return self.seed if self.correction_max_change is None else self.correction_max_change

    @property
    def confirm_s(self) -> int:
        return DEFAULT_CONFIRM_S if self.correction_confirm_s is None else self.correction_confirm_s

    @classmethod
    def from_dict(cls, d: Any) -> JackpotConfig:
        """Validate a ``[jackpot]`` section; raise ``JackpotError`` naming the first bad key."""
        if not isinstance(d, dict):
            raise JackpotError(f"jackpot: expected a table (dict), got {type(d).__name__}")
        unknown = sorted(set(d) - set(KEYS) - set(CORRECTION_KEYS) - set(LINK_KEYS))
        if unknown:
            raise JackpotError(f"jackpot: unknown key(s) {', '.join(map(str, unknown))}")
        if "link" in d:
            return cls._linked(d)
        for key in LINK_KEYS:
            if key in d:
                raise JackpotError(f"jackpot.{key}: only with a link (jackpot.link)")
        missing = [k for k in KEYS if k not in d]
        if missing:
            raise JackpotError(f"jackpot.{missing[0]}: missing")
        enabled, mode = _enabled_and_mode(d)
        bet_value = _int(d, "bet_value", minimum=1)
        increment_bp = _int(d, "increment_bp", minimum=0, maximum=BP_DENOMINATOR)
        reserve_bp = _int(d, "reserve_bp", minimum=0, maximum=BP_DENOMINATOR)
        if increment_bp + reserve_bp > BP_DENOMINATOR:
            raise JackpotError(
                f"jackpot.reserve_bp: increment_bp + reserve_bp = {increment_bp + reserve_bp} exceeds "
                f"{BP_DENOMINATOR} (100 % of the bet)"
            )
        seed = _int(d, "seed", minimum=0, maximum=METER_MAX)
        if seed < MIN_SEED_MULTIPLE * bet_value:
            raise JackpotError(
                f"jackpot.seed: {seed} is below the minimum {MIN_SEED_MULTIPLE} x bet_value = "
                f"{MIN_SEED_MULTIPLE * bet_value} (PT-2001 r.44)"
            )
        currency = d["currency"]
        if not isinstance(currency, str) or not CURRENCY_CODE.fullmatch(currency):
            raise JackpotError(f"jackpot.currency: expected a 3-letter ISO 4217 code, got {currency!r}")
        ceiling = (
            _int(d, "correction_ceiling", minimum=seed, maximum=METER_MAX)
            if "correction_ceiling" in d
            else None
        )
        max_change = (
            _int(d, "correction_max_change", minimum=1, maximum=METER_MAX)
            if "correction_max_change" in d
            else None
        )
        confirm_s = (
            _int(d, "correction_confirm_s", minimum=1, maximum=MAX_CONFIRM_S)
            if "correction_confirm_s" in d
            else None
        )
        return cls(
            enabled, mode, bet_value, increment_bp, reserve_bp, seed, currency, ceiling, max_change, confirm_s
        )

    @classmethod
    def _linked(cls, d: dict[str, Any]) -> JackpotConfig:
        """A linked table's section: no meter of its own (one chip feeds one meter: the link's)."""
        for key in (*METER_KEYS, *CORRECTION_KEYS):
            if key in d:
                raise JackpotError(
                    f"jackpot.{key}: not with a link: the link's controller keeps the meter (jackpot.link)"
                )
        missing = [k for k in (*KEYS, *LINK_KEYS[:2]) if k not in d and k not in METER_KEYS]
        if missing:
            raise JackpotError(f"jackpot.{missing[0]}: missing")
        enabled, mode = _enabled_and_mode(d)
        bet_value = _int(d, "bet_value", minimum=1, maximum=METER_MAX)
        currency = d["currency"]
        if not isinstance(currency, str) or not CURRENCY_CODE.fullmatch(currency):
            raise JackpotError(f"jackpot.currency: expected a 3-letter ISO 4217 code, got {currency!r}")
        link = d["link"]
        if not isinstance(link, str) or not LINK_NAME.fullmatch(link):
            raise JackpotError(f"jackpot.link: expected 1-32 of a-z, 0-9 and '-', got {link!r}")
        key = d["link_public_key"]
        if not isinstance(key, str) or not PUBLIC_KEY_HEX.fullmatch(key):
            raise JackpotError(
                "jackpot.link_public_key: expected an Ed25519 public key, 64 lower-case hex digits"
            )
        timeout = (
            _int(d, "link_timeout_s", minimum=MIN_LINK_TIMEOUT_S, maximum=MAX_LINK_TIMEOUT_S)
            if "link_timeout_s" in d
            else None
        )
        return cls(
            enabled, mode, bet_value, 0, 0, 0, currency,
            link=link, link_public_key=key, link_timeout_s=timeout,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        # the dict ``dataclasses.asdict`` makes (every field int, str, bool or None), without its generic
        # recursion: part of every input's rollback copy
        d = {f.name: getattr(self, f.name) for f in _CONFIG_FIELDS}
        d["mode"] = str(self.mode)
        for key in (
            *CORRECTION_KEYS,
            *LINK_KEYS,
        ):  # unset: left out (a section without them reads back the same)
            if d[key] is None:
                del d[key]
        if self.linked:  # no meter of its own
            for key in METER_KEYS:
                del d[key]
        return d


_CONFIG_FIELDS = fields(JackpotConfig)


def _enabled_and_mode(d: dict[str, Any]) -> tuple[bool, Mode]:
    """``enabled`` and ``mode``, the same for a table's own meter and a linked one."""
    enabled = d["enabled"]
    if not isinstance(enabled, bool):
        raise JackpotError(f"jackpot.enabled: expected true or false, got {enabled!r}")
    try:
        return enabled, Mode(d["mode"])
    except ValueError:
        raise JackpotError(f"jackpot.mode: expected 'automatic' or 'manual', got {d['mode']!r}") from None


def _int(d: dict[str, Any], key: str, *, minimum: int, maximum: int | None = None) -> int:
    value = d[key]
    # bool is an int subclass: refuse it explicitly so `bet_value = true` is not 1 cent.
    if isinstance(value, bool) or not isinstance(value, int):
        raise JackpotError(f"jackpot.{key}: expected an integer, got {value!r}")
    if value < minimum:
        raise JackpotError(f"jackpot.{key}: {value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise JackpotError(f"jackpot.{key}: {value} is above the maximum {maximum}")
    return value


@dataclass(frozen=True, slots=True)
class JackpotSection:
    """The ``[jackpot]`` section as the table configuration holds it (``TableConfig.jackpot``)."""

    enabled: bool
    mode: str  # "automatic" (chip slots sense the chip, PT-2001 r.41a) or "manual" (r.41b)
    bet_value: int  # minor units (PT-2001 r.47)
    increment_bp: int  # basis points of each jackpot bet added to the jackpot (r.40)
    reserve_bp: int
    seed: int  # minor units, at least 10,000 x bet_value (PT-2001 r.44)
    currency: str
    correction_ceiling: int | None = None  # minor units; the meter after a correction at most this
    correction_max_change: int | None = None  # minor units one correction may change the meter by
    correction_confirm_s: int | None = None  # seconds for the second supervisor's confirmation
    link: str | None = None  # a linked progressive's name; None: the table's own meter
    link_public_key: str | None = None  # the link's controller's Ed25519 public key (hex)
    link_timeout_s: int | None = (
        None  # seconds without a valid meter document before linked chips are refused
    )
    parsed: JackpotConfig | None = field(default=None, compare=False)  # the validated parameters


def read_section(
    j: dict[str, Any], *, chip_slots: int, defaults: Mapping[str, Any]
) -> tuple[JackpotSection, list[tuple[str, str]]]:
    """The configuration's ``[jackpot]`` (its shape already checked by the config schema): the section, and
    every problem as (key, reason), the key naming the ``jackpot.<key>`` that is wrong. ``defaults``: what an
    absent key holds (the configuration's declarations, controller/config/keys.py)."""
    problems: list[tuple[str, str]] = []
    parsed = None
    if j["enabled"] or len(j) > 1:
        try:
            parsed = JackpotConfig.from_dict(dict(j))
        except ValueError as exc:  # JackpotError is a ValueError; its message starts "jackpot.key: "
            key, _, reason = str(exc).partition(": ")
            problems.append((key if key.startswith("jackpot") else "jackpot", reason or str(exc)))
    names = (*KEYS, *CORRECTION_KEYS, *LINK_KEYS)
    values: dict[str, Any] = {name: j.get(name, defaults.get(name)) for name in names}
    section = JackpotSection(**values, parsed=parsed)
    # PT-2001 r.41a: in automatic mode the slot senses the chip, so there must be slots to sense it.
    if section.enabled and section.mode == "automatic" and chip_slots == 0:
        problems.append(("jackpot.mode", f"automatic mode needs {CHIP_SLOT_PREFIX}N inputs in [gpio.pins]"))
    return section, problems
