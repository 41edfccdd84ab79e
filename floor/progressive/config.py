"""A link's configuration file (``link.toml``, docs/progressive.md "Configuration"): ``[link]`` its parameters
(floor/progressive/params.py; recorded as version 1 when the link is created, changed afterwards only by
``tablectl floor progressive set``), ``[service]`` how the controller runs, ``[broker]`` the floor broker.

Each key is declared once, in ``SERVICE_KEYS`` / ``BROKER_KEYS`` below (name, type, default, range, meaning);
docs/progressive.md lists them and tests/test_floor_progressive_meter.py checks that it names each one."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from controller.config.endpoint import TlsConfig, default_port
from floor.progressive.params import LinkParams, ParamsError


class LinkConfigError(ValueError):
    """The file cannot be read, or a key is missing or out of range; says which."""


@dataclass(frozen=True, slots=True)
class Key:
    name: str
    kind: type
    default: Any
    lo: float | None
    hi: float | None
    meaning: str


SERVICE_KEYS = (
    Key(
        "heartbeat_s", float, 5.0, 0.2, 60.0, "the meter is published at least this often, even unchanged (s)"
    ),
    Key(
        "poll_s",
        float,
        0.5,
        0.02,
        10.0,
        "the archive is read at least this often besides its notifications (s)",
    ),
    Key("batch", int, 500, 1, 10_000, "archived envelopes taken in one transaction at most"),
    Key(
        "verified_only",
        bool,
        True,
        None,
        None,
        "take only envelopes the archive proved the table's (signed checkpoint); false: as soon as archived",
    ),
    Key("key_file", str, None, None, None, "the link's Ed25519 key (PEM, 0600), made on first start"),
    Key(
        "manifest",
        str,
        None,
        None,
        None,
        "the software manifest checked at start (tablectl floor progressive record)",
    ),
)
BROKER_KEYS = (
    Key("host", str, "127.0.0.1", None, None, "the floor broker's host"),
    Key("port", int, None, 1, 65535, "its port (default 8883 with ca, else 1883)"),
    Key("username", str, None, None, None, "the broker account (default progressive-<link>)"),
    Key(
        "password_env",
        str,
        "FLOOR_PROGRESSIVE_PASSWORD",
        None,
        None,
        "the environment variable holding the account's password",
    ),
    Key("ca", str, None, None, None, "the CA of the floor broker's certificate (TLS, verified)"),
    Key("cert", str, None, None, None, "a client certificate (with key)"),
    Key("key", str, None, None, None, "its private key"),
)


@dataclass(frozen=True, slots=True)
class LinkConfig:
    params: LinkParams
    heartbeat_s: float
    poll_s: float
    batch: int
    verified_only: bool
    key_file: Path
    manifest: Path
    host: str
    port: int
    username: str
    password_env: str
    tls: TlsConfig | None = field(default=None)


def _section(data: dict[str, Any], name: str, keys: tuple[Key, ...], label: str) -> dict[str, Any]:
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        raise LinkConfigError(f"{label}: [{name}] is not a table")
    unknown = sorted(set(raw) - {k.name for k in keys})
    if unknown:
        raise LinkConfigError(f"{label}: [{name}] unknown key(s) {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for k in keys:
        value = raw.get(k.name, k.default)
        if value is None:
            out[k.name] = None
            continue
        if k.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not k.kind:
            raise LinkConfigError(f"{label}: {name}.{k.name}: expected {k.kind.__name__}, got {value!r}")
        if k.lo is not None and k.hi is not None and not k.lo <= float(cast(float, value)) <= k.hi:
            raise LinkConfigError(f"{label}: {name}.{k.name}: from {k.lo:g} to {k.hi:g}, got {value!r}")
        out[k.name] = value
    return out


def _path(base: Path, value: str | None, what: str, label: str) -> Path:
    if not value:
        raise LinkConfigError(f"{label}: {what} is required")
    p = Path(value)
    return p if p.is_absolute() else base / p


def load(path: str | os.PathLike[str]) -> LinkConfig:
    p = Path(path)
    label = str(p)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LinkConfigError(f"{label}: cannot read: {exc}") from None
    unknown = sorted(set(data) - {"link", "service", "broker"})
    if unknown:
        raise LinkConfigError(f"{label}: unknown section(s) {', '.join(unknown)}")
    try:
        params = LinkParams.from_dict(data.get("link"))
    except ParamsError as exc:
        raise LinkConfigError(f"{label}: [link] {exc}") from None
    svc = _section(data, "service", SERVICE_KEYS, label)
    brk = _section(data, "broker", BROKER_KEYS, label)
    tls = None
    if brk["ca"]:
        if bool(brk["cert"]) != bool(brk["key"]):
            raise LinkConfigError(f"{label}: broker.cert and broker.key: both or neither")
        tls = TlsConfig(
            Path(brk["ca"]),
            Path(brk["cert"]) if brk["cert"] else None,
            Path(brk["key"]) if brk["key"] else None,
        )
    return LinkConfig(
        params=params,
        heartbeat_s=svc["heartbeat_s"],
        poll_s=svc["poll_s"],
        batch=svc["batch"],
        verified_only=svc["verified_only"],
        key_file=_path(p.parent, svc["key_file"], "service.key_file", label),
        manifest=_path(p.parent, svc["manifest"], "service.manifest", label),
        host=brk["host"],
        port=brk["port"] or default_port(tls),
        username=brk["username"] or f"progressive-{params.link}",
        password_env=brk["password_env"],
        tls=tls,
    )
