"""``tablectl floor web [--listen 127.0.0.1:8080]``: the floor dashboard (controller/floor/web.py).

Serve it behind a TLS reverse proxy on the floor network; the broker password comes from an environment
variable, never the command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from controller.floor.cli import add_dsn
from controller.floor.web import WebConfig, serve
from controller.mqtt import client_options as opts
from controller.mqtt.paho_client import default_port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--listen", default="127.0.0.1:8080", help="host:port to serve on")
    parser.add_argument(
        "--broker-host", default="127.0.0.1", help="floor broker (for signed acknowledgements)"
    )
    parser.add_argument(
        "--broker-port", type=int, default=None, help="floor broker port (default 8883 with --ca, else 1883)"
    )
    opts.add_options(parser, opts.TLS_KEYS, {})
    parser.add_argument("--username", default="supervisor-floor", help="the dashboard's broker account")
    parser.add_argument("--password-env", default="FLOOR_WEB_PASSWORD", help="env variable with its password")
    parser.add_argument(
        "--key-dir",
        default=None,
        help="the supervisors' PIN-encrypted key files (default: $TABLECTL_KEY_DIR or the user's key directory)",
    )


async def _run(cfg: WebConfig, host: str, port: int) -> None:
    runner = await serve(cfg, host, port)
    print(f"floor dashboard on http://{host}:{port}/", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    host, _, port = args.listen.rpartition(":")
    password = os.environ.get(args.password_env, "")
    if not password:
        print(f"floor web: set the broker password in ${args.password_env}", file=sys.stderr)
        return 2
    try:
        tls = opts.tls_from_args(args)
    except opts.ClientConfigError as exc:
        print(f"floor web: {exc}", file=sys.stderr)
        return 2
    port_ = args.broker_port if args.broker_port is not None else default_port(tls)
    cfg = WebConfig(
        args.dsn, args.broker_host, port_, args.username, password, key_dir=args.key_dir, broker_tls=tls
    )
    try:
        asyncio.run(_run(cfg, host or "127.0.0.1", int(port)))
    except KeyboardInterrupt:
        return 0
    return 0
