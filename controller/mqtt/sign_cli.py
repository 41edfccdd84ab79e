"""``tablectl sign``: print a signed supervisor/technician command, ready for mosquitto_pub.

    tablectl sign --user alice --pin 1234 --role supervisor --action clear_jam --args '{"alert_id": 3}'

With ``--add-to FILE`` it instead adds (or replaces) the user's PBKDF2-derived key in a credentials file. The
PIN may come from ``--pin``, the ``TABLECTL_PIN`` environment variable, or a prompt.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import sys
import time
from typing import Any

from controller.mqtt.auth import DEFAULT_ITERATIONS, ROLE_ACTIONS, AuthError, add_user, derive_key, sign


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", required=True)
    parser.add_argument("--pin", help="the user's PIN (else $TABLECTL_PIN, else prompt)")
    parser.add_argument("--role", required=True, choices=sorted(ROLE_ACTIONS))
    parser.add_argument("--action", help="e.g. clear_jam (required unless --add-to)")
    parser.add_argument("--args", default="{}", help="JSON object of action arguments")
    parser.add_argument(
        "--iterations", type=int, default=DEFAULT_ITERATIONS, help="PBKDF2 iterations of the user"
    )
    parser.add_argument("--request-id", help="default: random")
    parser.add_argument("--ts", type=int, help="Unix seconds (default: now)")
    parser.add_argument("--nonce", help="hex, 16-64 digits (default: random 32)")
    parser.add_argument(
        "--add-to", metavar="CREDENTIALS_TOML", help="add/replace the user in this file instead"
    )


def build_command(
    user: str,
    pin: str,
    role: str,
    action: str,
    args: dict[str, Any],
    *,
    iterations: int = DEFAULT_ITERATIONS,
    ts: int | None = None,
    nonce: str | None = None,
    request_id: str | None = None,
    key: bytes | None = None,
) -> dict[str, Any]:
    cmd: dict[str, Any] = {
        "request_id": request_id or f"req-{secrets.token_hex(6)}",
        "user": user,
        "role": role,
        "action": action,
        "args": args,
        "ts": int(time.time()) if ts is None else ts,
        "nonce": nonce or secrets.token_hex(16),
    }
    cmd["mac"] = sign(cmd, key if key is not None else derive_key(user, pin, iterations))
    return cmd


def main(args: argparse.Namespace) -> int:
    pin = args.pin or os.environ.get("TABLECTL_PIN") or getpass.getpass(f"PIN for {args.user}: ")
    try:
        if args.add_to:
            add_user(args.add_to, args.user, pin, [args.role], args.iterations)
            print(f"{args.add_to}: {args.user} ({args.role}) added")
            return 0
        if not args.action:
            print("error: --action is required", file=sys.stderr)
            return 2
        if args.action not in ROLE_ACTIONS[args.role]:
            print(
                f"error: {args.action!r} is not a {args.role} action "
                f"({', '.join(sorted(ROLE_ACTIONS[args.role]))})",
                file=sys.stderr,
            )
            return 2
        try:
            cmd_args = json.loads(args.args)
        except json.JSONDecodeError as exc:
            print(f"error: --args is not JSON: {exc}", file=sys.stderr)
            return 2
        if not isinstance(cmd_args, dict):
            print("error: --args must be a JSON object", file=sys.stderr)
            return 2
        cmd = build_command(
            args.user,
            pin,
            args.role,
            args.action,
            cmd_args,
            iterations=args.iterations,
            ts=args.ts,
            nonce=args.nonce,
            request_id=args.request_id,
        )
    except AuthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(cmd, separators=(",", ":"), ensure_ascii=False))
    return 0
