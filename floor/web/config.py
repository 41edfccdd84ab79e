"""The floor dashboard's settings (``tablectl floor web`` options), shared by its modules."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from controller.config.endpoint import TlsConfig
from floor.common.layout import Layout

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# What the page shows for enrolling a browser's signing key at a table (docs/floor.md "Acknowledging alerts"),
# followed by ``--user U --role supervisor --public-key HEX``; the table reads its changed credentials file
# before its next signed command.
ENROL_COMMAND = "tablectl sign --add-to /etc/tablectl/credentials.toml"
# The most connections to PostgreSQL the dashboard's requests hold at once (its pool, floor/web/auth.py); the builds
# and the listener have one each beside it. Default of ``WebConfig.db_pool`` and ``--db-pool``.
DB_POOL = 4


class ConfigError(ValueError):
    pass


def public_origin(url: str) -> str:
    """The origin (``scheme://host[:port]``) browsers send for the dashboard at ``url``, the URL people open
    (``https://floor.casino.lan``, behind a TLS reverse proxy). https, or http on a loopback host only (the
    session cookie is ``Secure``: browsers keep it on https and on http://localhost / 127.0.0.1 only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigError(f"public URL {url!r}: expected https://HOST[:PORT]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError(f"public URL {url!r}: the dashboard is served at the root, without path or query")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        raise ConfigError(f"public URL {url!r}: https (http only on localhost, for development and tests)")
    default_port = {"https": 443, "http": 80}[parts.scheme]
    host = parts.netloc.lower()
    if parts.port == default_port:
        host = host.rpartition(":")[0]
    return f"{parts.scheme}://{host}"


def proxy_addresses(values: list[str]) -> frozenset[str]:
    out = set()
    for value in values:
        try:
            out.add(str(ipaddress.ip_address(value)))
        except ValueError:
            raise ConfigError(f"trusted proxy {value!r}: expected an IP address") from None
    return frozenset(out)


@dataclass
class WebConfig:
    dsn: str
    broker_host: str
    broker_port: int
    username: str  # the dashboard's broker account: it relays the commands supervisors sign in their browsers
    password: str = field(repr=False)
    public_url: str = "http://127.0.0.1:8080"  # what people open; its origin is the only one accepted
    trusted_proxies: frozenset[str] = frozenset()  # peers whose X-Forwarded-For names the client address
    session_s: int = 8 * 3600  # a session's lifetime (a shift), from login
    sse_per_user: int = 4  # concurrent /events streams per user ...
    sse_total: int = 64  # ... and in all
    kdf_parallel: int = 2  # password hashes computed at once (32 MiB each) ...
    kdf_waiting: int = 16  # ... and logins waiting for one; beyond that a login is answered "busy"
    relay_parallel: int = 4  # signed commands being relayed to tables at once
    db_pool: int = DB_POOL  # connections to PostgreSQL the requests hold at once, at most (the pool's size)
    min_interval: float = 0.3
    ack_timeout: float = 15.0
    broker_tls: TlsConfig | None = None  # the floor broker's CA (and a client certificate): verified
    layout: Layout = field(default_factory=Layout)  # pits and areas (floor.toml): the map, the shift
    surveillance_live: bool = False  # the surveillance view shows a shoe's count while the shoe is in play
    enrol_command: str = ENROL_COMMAND  # the page's enrolment command, before --user ... --public-key HEX

    @property
    def origin(self) -> str:
        return public_origin(self.public_url)
