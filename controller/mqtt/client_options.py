"""How a person's MQTT client is told where to connect: the command-line options and the small client
configuration file (``--client-config``) of the pit terminal and the alert console, and the TLS options every
floor client shares (issue 26).

Each setting is declared once here (``ClientKey``: its key in the file, its command-line option, its check): the
file takes exactly these keys (anything else is refused), the options are made from the same declarations, and
TLS has the names of the table's own ``[mqtt.tls]``: ``ca``, ``cert``, ``key`` (docs/deploy.md). An option given on
the command line wins over the file, the file over the command's default. With ``ca`` the client speaks TLS and
verifies the broker's certificate (controller/mqtt/paho_client.py), and the port defaults to 8883, as the
table's does; without it, plain MQTT on 1883 (the demo's loopback broker)::

    # /etc/tablectl/terminal.toml (docs/terminal.md)
    host = "localhost"
    ca = "/etc/mosquitto/certs/ca.crt"
    username = "dealer-bj07"
    password_file = "/etc/tablectl/terminal-password"
    site = "lisboa"
    table = "bj07"
"""

from __future__ import annotations

import argparse
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.config.endpoint import TlsConfig, default_port
from controller.config.load import resolve_path

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
MAX_FILE_BYTES = 16 * 1024


class ClientConfigError(ValueError):
    """A connection setting that cannot be used; the message is the one line the command prints."""


def _text(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 253 or any(c.isspace() for c in value):
        raise ClientConfigError("expected a host name or address")
    return value


def _port(value: object) -> int:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
        raise ClientConfigError("expected a port number 1-65535")
    return value


def _name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ClientConfigError("expected a name of letters, digits, '_', '.', '-'")
    return value


def _site(value: object) -> str:
    return "+" if value == "+" else _name(value)


def _path(value: object) -> str:
    if not isinstance(value, str) or not value or "\n" in value or "\0" in value:
        raise ClientConfigError("expected a file path")
    return value


@dataclass(frozen=True, slots=True)
class ClientKey:
    name: str  # the key in a client configuration file, and the option's argparse dest
    flag: str  # the command-line option
    check: Callable[[object], Any]
    help: str
    is_path: bool = False  # relative to the configuration file's folder when read from one


HOST = ClientKey("host", "--host", _text, "broker host (the broker certificate's name when TLS)")
PORT = ClientKey("port", "--port", _port, "broker port (default 8883 with --ca, else 1883)")
USERNAME = ClientKey("username", "--user", _name, "broker account")
PASSWORD_FILE = ClientKey(
    "password_file",
    "--password-file",
    _path,
    "file holding the account's broker password, mode 0600 (else $TABLECTL_MQTT_PASSWORD, else asked)",
    is_path=True,
)
CA = ClientKey(
    "ca",
    "--ca",
    _path,
    "CA certificate that signed the broker's certificate: TLS, the broker verified against it",
    is_path=True,
)
CERT = ClientKey(
    "cert", "--cert", _path, "client certificate (with --key), if the broker asks for one", is_path=True
)
KEY = ClientKey("key", "--key", _path, "the client certificate's private key (with --cert)", is_path=True)
SITE = ClientKey("site", "--site", _site, "site of the topic prefix casino/<site>/table/<id>")
TABLE = ClientKey("table", "--table", _name, "table id")

TLS_KEYS = (CA, CERT, KEY)
FILE_KEYS = (HOST, PORT, USERNAME, PASSWORD_FILE, *TLS_KEYS, SITE, TABLE)  # what a client file may hold


def add_options(
    parser: argparse.ArgumentParser, keys: tuple[ClientKey, ...], defaults: Mapping[str, Any]
) -> None:
    """The options of ``keys``; each defaults to None (not given), ``defaults`` is shown in the help only."""
    for k in keys:
        shown = f" (default: {defaults[k.name]})" if defaults.get(k.name) is not None else ""
        parser.add_argument(k.flag, dest=k.name, default=None, type=str, help=k.help + shown)


def add_client_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--client-config",
        metavar="FILE",
        help="client configuration file (TOML): the broker, the account, its password file, TLS, the site and "
        "the table (docs/terminal.md lists its settings); options given here win over it",
    )


def read_file(path: str) -> dict[str, Any]:
    """The settings of a client configuration file, checked; paths resolved against its folder."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise ClientConfigError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ClientConfigError(
            f"cannot read the client configuration {path}: {exc.strerror or exc}"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"{path}: not TOML: {exc}") from None
    known = {k.name: k for k in FILE_KEYS}
    unknown = sorted(set(doc) - set(known))
    if unknown:
        raise ClientConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")
    out: dict[str, Any] = {}
    for name, value in doc.items():
        key = known[name]
        try:
            checked = key.check(value)
        except ClientConfigError as exc:
            raise ClientConfigError(f"{path}: {name}: {exc}") from None
        out[name] = str(resolve_path(p.parent, checked)) if key.is_path else checked
    return out


def merged(
    args: argparse.Namespace, keys: tuple[ClientKey, ...], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """Each of ``keys``: the command line's value, else the ``--client-config`` file's, else the default."""
    file_values = read_file(args.client_config) if getattr(args, "client_config", None) else {}
    out: dict[str, Any] = {}
    for k in keys:
        given = getattr(args, k.name, None)
        if given is not None:
            try:
                out[k.name] = k.check(given)
            except ClientConfigError as exc:
                raise ClientConfigError(f"{k.flag}: {exc}") from None
        elif k.name in file_values:
            out[k.name] = file_values[k.name]
        else:
            out[k.name] = defaults.get(k.name)
    if PORT in keys and out.get(PORT.name) is None:
        out[PORT.name] = default_port(out.get(CA.name))
    return out


def tls_of(values: Mapping[str, Any]) -> TlsConfig | None:
    """``ca`` (+ ``cert`` and ``key``) as a TlsConfig, each file readable; None without a CA (plain MQTT)."""
    ca, cert, key = (values.get(k.name) for k in TLS_KEYS)
    if ca is None:
        if cert is not None or key is not None:
            raise ClientConfigError("a client certificate needs the broker's CA too (--ca / ca)")
        return None
    if (cert is None) != (key is None):
        raise ClientConfigError("set both cert and key (client certificate) or neither")
    for k, value in zip(TLS_KEYS, (ca, cert, key), strict=True):
        if value is not None and not os.access(value, os.R_OK):
            raise ClientConfigError(f"{k.name} {value}: not a readable file")
    return TlsConfig(Path(ca), Path(cert) if cert else None, Path(key) if key else None)


def tls_from_args(args: argparse.Namespace) -> TlsConfig | None:
    """The TLS options of a command that takes only those (the archive, the dashboard)."""
    return tls_of(merged(args, TLS_KEYS, {}))
