"""``load_config(path) -> TableConfig``: read the table TOML, check it, return typed frozen dataclasses.

Order: TOML syntax -> merge separate firmware files (``file = ...`` in [shoe]/[reader]/[display]) -> JSON
Schema (shape) -> cross-field rules, rule-profile agreement and the jackpot section's own validation. Every
problem found is reported at once (file, dotted key, reason) in one ``ConfigError``; nothing here raises
anything else.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from controller.actions import CHIP_SLOT_PREFIX
from controller.config import profile as profile_mod
from controller.config.endpoint import TlsConfig, default_port
from controller.config.errors import ConfigError, Problem
from controller.config.keys import JACKPOT, ShoeMode, default
from controller.config.model import (
    AlertsConfig,
    AuditConfig,
    DisplayConfig,
    GpioConfig,
    JournalConfig,
    MqttConfig,
    PinConfig,
    ReaderConfig,
    ShoeConfig,
    SupervisorsConfig,
    TableConfig,
    TableSection,
)
from controller.config.schema import schema_problems
from controller.data import PROFILES_DIR
from controller.gpio.base import OUTPUT_SAFE_VALUES, GpioBackend
from controller.jackpot.config import JackpotSection, read_section

DEFAULT_PROFILES_DIR = PROFILES_DIR  # the shipped profiles (package data)
AUDIT_KEY_FILE = "audit_key.pem"  # [audit] key_file's default, in table.state_dir


def _get(data: dict[str, Any], section: str, key: str) -> Any:
    """``data[key]``, else the declared default of ``section.key`` (controller/config/keys.py)."""
    return data[key] if key in data else default(section, key)


FIRMWARE_SECTIONS = ("shoe", "reader", "display")


def read_toml(path: Path, *, file_label: str | None = None, key: str = "") -> dict[str, Any]:
    label = file_label or str(path)
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError.one(label, key, f"file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError.one(label, key, f"is a directory, not a file: {path}") from None
    except PermissionError:
        raise ConfigError.one(label, key, f"permission denied reading {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError.one(label if not key else path, "", f"not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError.one(label, key, f"cannot read {path}: {exc}") from None


def resolve_path(base: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else base / p


def audit_key_path(data: dict[str, Any], base: Path) -> Path:
    """``[audit] key_file``, or ``audit_key.pem`` in the table's state_dir (also read by the integrity manifest)."""
    audit = data.get("audit")
    ref = audit.get("key_file") if isinstance(audit, dict) else None
    if isinstance(ref, str) and ref:
        return resolve_path(base, ref)
    table = data.get("table")
    state_dir = table.get("state_dir") if isinstance(table, dict) else None
    return resolve_path(base, state_dir if isinstance(state_dir, str) else ".") / AUDIT_KEY_FILE


def _merge_firmware_files(
    data: dict[str, Any], path: Path, file: str
) -> tuple[dict[str, str], dict[str, Path], list[Problem]]:
    """Inline each ``[section] file = ...``; a key set in both places is refused (which one would win?)."""
    origins: dict[str, str] = {}
    sources: dict[str, Path] = {}
    problems: list[Problem] = []
    for name in FIRMWARE_SECTIONS:
        section = data.get(name)
        if not isinstance(section, dict) or "file" not in section:
            continue
        ref = section.pop("file")
        if not isinstance(ref, str) or not ref:
            problems.append(Problem(file, f"{name}.file", "expected a file path (string)"))
            continue
        fw_path = resolve_path(path.parent, ref)
        try:
            fw = read_toml(fw_path, file_label=file, key=f"{name}.file")
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        if isinstance(fw.get(name), dict):  # the firmware file may also wrap its keys in a [shoe] table
            for other in sorted(
                k for k in fw if k != name
            ):  # one section per file: a key outside it is unread
                problems.append(
                    Problem(
                        str(fw_path),
                        other,
                        f"unknown option: not read by tablectl (this {name} firmware file holds [{name}] only)",
                    )
                )
            fw = fw[name]
        for key in sorted(set(fw) & set(section)):
            problems.append(
                Problem(file, f"{name}.{key}", f"also set in {fw_path}; set it in one place only")
            )
        data[name] = {**fw, **section}
        origins[name] = str(fw_path)
        sources[name] = fw_path
    return origins, sources, problems


def load_config(path: str | os.PathLike[str], *, check_files: bool = True) -> TableConfig:
    """Load and check a table configuration.

    ``check_files``: also require the credentials, MQTT password and TLS files to exist and be readable (what
    the service needs at start-up; ``tablectl config check --no-file-check`` skips it on a workstation).
    Raises ``ConfigError`` listing every problem (file, key, reason).
    """
    file = str(path)
    path = Path(os.path.abspath(path))  # absolute, symlinks kept: /opt/tablectl/current stays "current"
    data = read_toml(path, file_label=file)
    origins, sources, problems = _merge_firmware_files(data, path, file)
    problems += schema_problems(data, file, origins)
    if problems:
        raise ConfigError(problems)
    return _build(data, path, file, sources, check_files)


def _build(
    data: dict[str, Any], path: Path, file: str, sources: dict[str, Path], check_files: bool
) -> TableConfig:
    base = path.parent
    problems: list[Problem] = []

    t = data["table"]
    profiles_dir = resolve_path(base, t["profiles_dir"]) if "profiles_dir" in t else DEFAULT_PROFILES_DIR
    table = TableSection(
        id=t["id"],
        site=t["site"],
        profile=t["profile"],
        profile_path=profile_mod.profile_path(t["profile"], profiles_dir),
        state_dir=resolve_path(base, t["state_dir"]),
        integrity_manifest=resolve_path(base, _get(t, "table", "integrity_manifest")),
        min_bet=t.get("min_bet"),
        max_bet=t.get("max_bet"),
        currency=t.get("currency"),
    )
    if table.min_bet is not None and table.max_bet is not None and table.max_bet < table.min_bet:
        problems.append(
            Problem(file, "table.max_bet", f"{table.max_bet} is below table.min_bet {table.min_bet}")
        )

    shoe = _shoe(data["shoe"], sources.get("shoe"))
    if shoe.silence_timeout_ms <= 2 * shoe.heartbeat_interval_ms:
        problems.append(
            Problem(
                str(sources.get("shoe", file)),
                "shoe.silence_timeout_ms",
                f"{shoe.silence_timeout_ms} must exceed twice heartbeat_interval_ms "
                f"({shoe.heartbeat_interval_ms}) "
                "so one lost heartbeat does not drop the link",
            )
        )
    reader = _reader(data.get("reader"), sources.get("reader"), problems, file)
    display = _display(data.get("display"), sources.get("display"), problems, file)
    mqtt = _mqtt(data["mqtt"], table, base, problems, file)
    gpio = _gpio(data["gpio"], problems, file)
    jackpot = _jackpot(data.get("jackpot", {"enabled": False}), gpio, problems, file)
    if table.currency and jackpot.enabled and jackpot.currency and jackpot.currency != table.currency:
        problems.append(
            Problem(
                file, "table.currency", f"{table.currency} differs from jackpot.currency {jackpot.currency}"
            )
        )
    supervisors = SupervisorsConfig(
        credentials_file=resolve_path(base, data["supervisors"]["credentials_file"])
    )
    alerts = AlertsConfig(escalate_after_s=_get(data.get("alerts", {}), "alerts", "escalate_after_s"))
    audit = AuditConfig(
        key_file=audit_key_path(data, base),
        checkpoint_interval_s=_get(data.get("audit", {}), "audit", "checkpoint_interval_s"),
    )
    journal = JournalConfig(**data.get("journal", {}))  # its defaults are the declared ones (keys.py)
    for key, refuse, warn in (
        ("disk_refuse_free_mb", journal.disk_refuse_free_mb, journal.disk_warn_free_mb),
        ("disk_refuse_free_inodes", journal.disk_refuse_free_inodes, journal.disk_warn_free_inodes),
    ):
        if refuse > warn:
            problems.append(
                Problem(file, f"journal.{key}", f"{refuse} is above the warning threshold {warn}")
            )

    try:
        prof = profile_mod.read_profile(table.profile_path, file)
        problems += profile_mod.shoe_problems(shoe, prof, table.profile_path, file)
        problems += profile_mod.bet_problems(table, prof, file)
    except ConfigError as exc:
        problems += exc.problems

    if check_files:
        wanted: list[tuple[str, Path | None]] = [
            ("supervisors.credentials_file", supervisors.credentials_file)
        ]
        if mqtt.password_file:
            wanted.append(("mqtt.password_file", mqtt.password_file))
        if mqtt.tls:
            wanted += [
                ("mqtt.tls.ca", mqtt.tls.ca),
                ("mqtt.tls.cert", mqtt.tls.cert),
                ("mqtt.tls.key", mqtt.tls.key),
            ]
        for key, p in wanted:
            if p is not None and not os.access(p, os.R_OK):
                reason = "file not found" if not p.exists() else "not readable by this user"
                problems.append(Problem(file, key, f"{reason}: {p}"))

    if problems:
        raise ConfigError(problems)
    return TableConfig(
        path,
        table,
        shoe,
        reader,
        display,
        mqtt,
        gpio,
        jackpot,
        supervisors,
        alerts,
        audit=audit,
        journal=journal,
    )


def _shoe(s: dict[str, Any], source: Path | None) -> ShoeConfig:
    return ShoeConfig(
        port=s["port"],
        baudrate=_get(s, "shoe", "baudrate"),
        ack_timeout_ms=_get(s, "shoe", "ack_timeout_ms"),
        retries=_get(s, "shoe", "retries"),
        silence_timeout_ms=_get(s, "shoe", "silence_timeout_ms"),
        heartbeat_interval_ms=_get(s, "shoe", "heartbeat_interval_ms"),
        mode=ShoeMode(s["mode"]),
        decks=s["decks"],
        burn_cards=_get(s, "shoe", "burn_cards"),  # PT-2001 r.10: one card burned before dealing starts
        burn_each_round=_get(s, "shoe", "burn_each_round"),
        cut_card=_get(s, "shoe", "cut_card"),
        warning_card_from_end=_get(s, "shoe", "warning_card_from_end"),
        source=source,
    )


def _device_section(
    data: dict[str, Any] | None,
    section: str,
    required: tuple[str, ...],
    source: Path | None,
    problems: list[Problem],
    file: str,
) -> tuple[dict[str, Any], Any]:
    """An optional device's section (the card reader, the jackpot sign): absent, the device is off; on, each of
    the ``required`` keys it cannot work without must be there (a problem names each one missing)."""
    data = data if data is not None else {"enabled": False}
    enabled = _get(data, section, "enabled")
    if enabled:
        problems.extend(
            Problem(str(source or file), f"{section}.{key}", "missing (required when enabled)")
            for key in required
            if key not in data
        )
    return data, enabled


def _reader(
    r: dict[str, Any] | None, source: Path | None, problems: list[Problem], file: str
) -> ReaderConfig:
    r, enabled = _device_section(r, "reader", ("vendor_id", "product_id"), source, problems, file)
    return ReaderConfig(
        enabled=enabled,
        vendor_id=_get(r, "reader", "vendor_id"),
        product_id=_get(r, "reader", "product_id"),
        serial=r.get("serial"),
        read_timeout_ms=_get(r, "reader", "read_timeout_ms"),
        source=source,
    )


def _display(
    d: dict[str, Any] | None, source: Path | None, problems: list[Problem], file: str
) -> DisplayConfig:
    d, enabled = _device_section(d, "display", ("port",), source, problems, file)
    return DisplayConfig(
        enabled=enabled,
        port=_get(d, "display", "port"),
        baudrate=_get(d, "display", "baudrate"),
        ack_timeout_ms=_get(d, "display", "ack_timeout_ms"),
        retries=_get(d, "display", "retries"),
        source=source,
    )


def _mqtt(
    m: dict[str, Any], table: TableSection, base: Path, problems: list[Problem], file: str
) -> MqttConfig:
    tls = None
    if "tls" in m:
        t = m["tls"]
        if ("cert" in t) != ("key" in t):
            problems.append(
                Problem(file, "mqtt.tls", "set both cert and key (client certificate) or neither")
            )
        tls = TlsConfig(
            ca=resolve_path(base, t["ca"]),
            cert=resolve_path(base, t["cert"]) if "cert" in t else None,
            key=resolve_path(base, t["key"]) if "key" in t else None,
        )
    if "password_file" in m and "username" not in m:
        problems.append(
            Problem(file, "mqtt.password_file", "set mqtt.username too (a password needs a user)")
        )
    return MqttConfig(
        host=m["host"],
        port=m.get("port", default_port(tls)),
        prefix=m.get("prefix", f"casino/{table.site}/table/{table.id}"),
        client_id=m.get("client_id", f"tablectl-{table.site}-{table.id}"),
        keepalive_s=_get(m, "mqtt", "keepalive_s"),
        username=m.get("username"),
        password_file=resolve_path(base, m["password_file"]) if "password_file" in m else None,
        tls=tls,
    )


_CHIP_SLOT = re.compile(rf"^{CHIP_SLOT_PREFIX}(\d+)\Z")


def _gpio(g: dict[str, Any], problems: list[Problem], file: str) -> GpioConfig:
    pins: list[PinConfig] = []
    used: dict[int, str] = {}
    for name, p in g["pins"].items():
        output = name in OUTPUT_SAFE_VALUES
        key = f"gpio.pins.{name}"
        if output and "debounce_ms" in p:
            problems.append(Problem(file, f"{key}.debounce_ms", "only inputs are debounced; remove it"))
        if p["pin"] in used:
            problems.append(
                Problem(file, f"{key}.pin", f"BCM {p['pin']} is already used by {used[p['pin']]}")
            )
        used.setdefault(p["pin"], name)
        pin = "gpio.pins.<signal>"
        pins.append(
            PinConfig(name, p["pin"], output, _get(p, pin, "active_low"), _get(p, pin, "debounce_ms"))
        )
    slots = sorted(int(m.group(1)) for n in g["pins"] if (m := _CHIP_SLOT.match(n)))
    if slots and slots != list(range(1, len(slots) + 1)):
        problems.append(
            Problem(file, "gpio.pins", f"chip slots must be numbered 1..N without gaps, got {slots}")
        )
    return GpioConfig(backend=GpioBackend(g["backend"]), pins=tuple(pins))


def _jackpot(j: dict[str, Any], gpio: GpioConfig, problems: list[Problem], file: str) -> JackpotSection:
    """The section is the jackpot's own (controller/jackpot/config.py); its problems are the file's."""
    defaults = {k.name: k.default for k in JACKPOT.keys if not k.required}
    section, found = read_section(j, chip_slots=gpio.chip_slots, defaults=defaults)
    problems += [Problem(file, key, reason) for key, reason in found]
    return section
