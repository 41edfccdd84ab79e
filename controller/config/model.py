"""The table configuration as typed, frozen dataclasses (what ``load_config`` returns). The keys, their
defaults and ranges are declared once in ``controller/config/keys.py``.

Money is integer minor units (cents). Durations carry their unit in the name (``_ms``, ``_s``).
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

from controller.actions import CHIP_SLOT_PREFIX
from controller.config.endpoint import TlsConfig  # the one definition, shared with every MQTT client
from controller.config.keys import ShoeMode, bool_default, int_default
from controller.gpio.base import OUTPUT_SAFE_VALUES, GpioBackend, PinSpec
from controller.jackpot.config import JackpotSection


@dataclass(frozen=True, slots=True)
class TableSection:
    id: str
    site: str
    profile: str  # rule profile name, e.g. "pt-2001" -> <profiles_dir>/pt-2001.toml
    profile_path: Path
    state_dir: Path
    integrity_manifest: Path
    min_bet: int | None = None  # minor units; overrides the profile when set
    max_bet: int | None = None
    currency: str | None = None  # ISO 4217; None: the jackpot's, if any (TableConfig.currency)


def resolve_port(port: str) -> str:
    """``port`` itself if it has no glob characters, else its single match; ValueError naming it otherwise."""
    if not glob.has_magic(port):
        return port
    matches = sorted(glob.glob(port))
    if len(matches) != 1:
        found = ", ".join(matches) if matches else "no device"
        raise ValueError(f"serial port pattern {port!r} must match exactly one device, found {found}")
    return matches[0]


@dataclass(frozen=True, slots=True)
class ShoeConfig:
    port: str  # device path, or a glob (e.g. /dev/serial/by-id/usb-FTDI_*) that must match exactly one device
    baudrate: int
    ack_timeout_ms: int
    retries: int
    silence_timeout_ms: int
    heartbeat_interval_ms: int
    mode: ShoeMode
    decks: int
    burn_cards: int  # burned after each shuffle before dealing (PT-2001 r.10; MO-2004 art.4)
    burn_each_round: int  # extra burn at the start of each round (MO-2004 art.4 option)
    cut_card: bool  # batch only (PT-2001 r.8)
    warning_card_from_end: int  # batch only, 0 = none (PT-2001 r.9: about the 50th card from the end)
    source: Path | None = None  # separate firmware file the section was read from, if any

    @property
    def continuous(self) -> bool:
        return self.mode is ShoeMode.CONTINUOUS

    def resolve_port(self) -> str:
        """The device to open: ``port`` itself, or the one device its glob matches (e.g. a by-id pattern)."""
        return resolve_port(self.port)


@dataclass(frozen=True, slots=True)
class ReaderConfig:
    enabled: bool
    vendor_id: int
    product_id: int
    serial: str | None
    read_timeout_ms: int
    source: Path | None = None


@dataclass(frozen=True, slots=True)
class DisplayConfig:
    enabled: bool
    port: str
    baudrate: int
    ack_timeout_ms: int
    retries: int
    source: Path | None = None


@dataclass(frozen=True, slots=True)
class MqttConfig:
    host: str
    port: int
    prefix: str  # default "casino/<site>/table/<id>"
    client_id: str
    keepalive_s: int
    username: str | None = None
    password_file: Path | None = None
    tls: TlsConfig | None = None

    def password(self) -> str | None:
        """Read the password at connect time (never kept in the config object or its repr)."""
        if self.password_file is None:
            return None
        return self.password_file.read_text(encoding="utf-8").strip()


@dataclass(frozen=True, slots=True)
class PinConfig:
    name: str
    pin: int  # BCM
    output: bool
    active_low: bool = bool_default("gpio.pins.<signal>", "active_low")
    debounce_ms: int = int_default("gpio.pins.<signal>", "debounce_ms")

    def spec(self) -> PinSpec:
        return PinSpec(
            name=self.name,
            pin=self.pin,
            output=self.output,
            safe_value=OUTPUT_SAFE_VALUES.get(self.name, False),
            active_low=self.active_low,
            debounce_ms=self.debounce_ms,
        )


@dataclass(frozen=True, slots=True)
class GpioConfig:
    backend: GpioBackend
    pins: tuple[PinConfig, ...]

    def pin(self, name: str) -> PinConfig:
        for p in self.pins:
            if p.name == name:
                return p
        raise KeyError(f"no GPIO signal named {name!r}")

    @property
    def chip_slots(self) -> int:
        return sum(1 for p in self.pins if p.name.startswith(CHIP_SLOT_PREFIX))


@dataclass(frozen=True, slots=True)
class SupervisorsConfig:
    credentials_file: Path  # format owned by controller.mqtt (roles, salted PIN hashes / HMAC keys)


@dataclass(frozen=True, slots=True)
class AlertsConfig:
    escalate_after_s: int


@dataclass(frozen=True, slots=True)
class AuditConfig:
    key_file: Path  # the table's Ed25519 checkpoint key (controller/audit/keys.py); made on first start
    # a checkpoint at least this often while records are written (and per round)
    checkpoint_interval_s: int = int_default("audit", "checkpoint_interval_s")


@dataclass(frozen=True, slots=True)
class JournalConfig:
    """``[journal]``; keys, defaults and ranges: controller/config/keys.py."""

    event_retention_days: int = int_default("journal", "event_retention_days")
    # the journal's filesystem (controller/ops/disk.py): a warning alert below the first, no new round below
    # the second (the round in progress finishes)
    disk_warn_free_mb: int = int_default("journal", "disk_warn_free_mb")
    disk_refuse_free_mb: int = int_default("journal", "disk_refuse_free_mb")
    disk_warn_free_inodes: int = int_default("journal", "disk_warn_free_inodes")
    disk_refuse_free_inodes: int = int_default("journal", "disk_refuse_free_inodes")


@dataclass(frozen=True, slots=True)
class TableConfig:
    path: Path
    table: TableSection
    shoe: ShoeConfig
    reader: ReaderConfig
    display: DisplayConfig
    mqtt: MqttConfig
    gpio: GpioConfig
    jackpot: JackpotSection
    supervisors: SupervisorsConfig
    alerts: AlertsConfig
    audit: AuditConfig | None = None  # load_config always sets it (default <state_dir>/audit_key.pem)
    journal: JournalConfig = JournalConfig()

    @property
    def currency(self) -> str | None:
        """What the table's amounts are in: ``table.currency``, else the enabled jackpot's, else unknown."""
        if self.table.currency:
            return self.table.currency
        return self.jackpot.currency if self.jackpot.enabled and self.jackpot.currency else None

    def firmware_files(self) -> dict[str, Path]:
        """Separate firmware configuration files (``file = ...`` in [shoe]/[reader]/[display]) by section."""
        out: dict[str, Path] = {}
        for name in ("shoe", "reader", "display"):
            src = getattr(self, name).source
            if src is not None:
                out[name] = src
        return out
