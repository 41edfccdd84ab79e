"""``tablectl floor web [--listen 127.0.0.1:8080] --public-url https://floor.casino.lan``: the floor dashboard
(floor/web/app.py).

Serve it over TLS itself (``--tls-cert``/``--tls-key``: the installed floor, systemd/floor/) or behind a TLS
reverse proxy on the floor network; ``--public-url`` is the URL people open (its origin is the only one whose
requests are accepted). Under systemd (``Type=notify``) it says READY=1 once it serves (schema checked, first
snapshot built) and pings the watchdog from its event loop. The broker password comes from an environment
variable, never the command line. The dashboard holds no supervisor key: supervisors sign in their browsers
(docs/floor.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import ssl
import sys
from pathlib import Path

import psycopg

from controller import sdnotify
from controller.config.endpoint import default_port
from controller.mqtt import client_options as opts
from floor.archive import store
from floor.cli.tablectl import add_dsn
from floor.common.layout import LayoutError, load_layout
from floor.web.app import serve
from floor.web.config import (
    DB_POOL,
    ENROL_COMMAND,
    ConfigError,
    WebConfig,
    proxy_addresses,
    public_origin,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--listen", default="127.0.0.1:8080", help="host:port to serve on")
    parser.add_argument(
        "--public-url",
        default=None,
        help="the URL people open, e.g. https://floor.casino.lan (default: http://<--listen>, local use only)",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="IP",
        help="the reverse proxy's address: its X-Forwarded-For names the client (repeatable)",
    )
    parser.add_argument(
        "--layout", type=Path, default=None, help="floor.toml: pits and areas (docs/floor.md)"
    )
    parser.add_argument("--session-hours", type=float, default=8.0, help="a login lasts this long")
    parser.add_argument("--sse-per-user", type=int, default=4, help="live connections per user")
    parser.add_argument("--sse-total", type=int, default=64, help="live connections in all")
    parser.add_argument(
        "--db-pool", type=int, default=DB_POOL, metavar="N",
        help="connections to PostgreSQL the requests hold at once, at most (one pool per process; the live "
        "updates have two more of their own)",
    )  # fmt: skip
    parser.add_argument(
        "--broker-host", default="127.0.0.1", help="floor broker (relays signed acknowledgements)"
    )
    parser.add_argument(
        "--broker-port", type=int, default=None, help="floor broker port (default 8883 with --ca, else 1883)"
    )
    opts.add_options(parser, opts.TLS_KEYS, {})
    parser.add_argument(
        "--tls-cert", type=Path, default=None, help="serve HTTPS with this certificate (PEM chain)"
    )
    parser.add_argument("--tls-key", type=Path, default=None, help="and this private key (PEM)")
    parser.add_argument("--username", default="supervisor-floor", help="the dashboard's broker account")
    parser.add_argument("--password-env", default="FLOOR_WEB_PASSWORD", help="env variable with its password")
    parser.add_argument(
        "--enrol-command", default=ENROL_COMMAND, metavar="COMMAND",
        help="what the page shows for enrolling a signing key at the tables, before --user U --role supervisor "
        "--public-key HEX",
    )  # fmt: skip
    parser.add_argument(
        "--surveillance-live", action="store_true",
        help="show surveillance a shoe's count while it is in play (default: only after the shoe ended)",
    )  # fmt: skip


async def _run(cfg: WebConfig, host: str, port: int, tls: ssl.SSLContext | None) -> None:
    runner = await serve(cfg, host, port, tls)
    scheme = "https" if tls else "http"
    print(f"floor dashboard on {scheme}://{host}:{port}/ (public URL {cfg.public_url})", flush=True)
    sdnotify.ready(f"serving {scheme}://{host}:{port}/")
    try:
        await sdnotify.watchdog_loop()  # returns at once without a watchdog
        await asyncio.Event().wait()
    finally:
        sdnotify.stopping()
        await runner.cleanup()


def server_tls(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    """HTTPS context (TLS 1.2 or later) from --tls-cert/--tls-key; None when neither is given."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError("--tls-cert and --tls-key go together")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"--tls-cert {cert} / --tls-key {key}: {exc}") from None
    return context


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    host, _, port = args.listen.rpartition(":")
    host = host or "127.0.0.1"
    password = os.environ.get(args.password_env, "")
    if not password:
        print(f"floor web: set the broker password in ${args.password_env}", file=sys.stderr)
        return 2
    if not (
        0 < args.session_hours <= 24
        and args.sse_per_user > 0
        and args.sse_total > 0
        and 0 < args.db_pool <= 100
    ):
        print(
            "floor web: --session-hours 0-24, --sse-per-user and --sse-total above 0, --db-pool 1-100",
            file=sys.stderr,
        )
        return 2
    public_url = args.public_url or f"{'https' if args.tls_cert else 'http'}://{host}:{port}"
    try:
        public_origin(public_url)
        proxies = proxy_addresses(args.trusted_proxy)
        tls = opts.tls_from_args(args)
        layout = load_layout(args.layout)
        https = server_tls(args.tls_cert, args.tls_key)
        if https is not None and not public_url.startswith("https://"):
            raise ConfigError("--tls-cert: the --public-url must be https://")
    except (ConfigError, opts.ClientConfigError, LayoutError) as exc:
        print(f"floor web: {exc}", file=sys.stderr)
        return 2
    cfg = WebConfig(
        args.dsn,
        args.broker_host,
        args.broker_port if args.broker_port is not None else default_port(tls),
        args.username,
        password,
        public_url=public_url,
        trusted_proxies=proxies,
        session_s=int(args.session_hours * 3600),
        sse_per_user=args.sse_per_user,
        sse_total=args.sse_total,
        db_pool=args.db_pool,
        broker_tls=tls,
        layout=layout,
        surveillance_live=args.surveillance_live,
        enrol_command=args.enrol_command[:500],
    )
    try:
        asyncio.run(_run(cfg, host, int(port), https))
    except KeyboardInterrupt:
        return 0
    except (psycopg.Error, store.MigrationError, OSError) as exc:  # the database or the port
        print(f"floor web: {exc}", file=sys.stderr)
        return 1
    return 0
