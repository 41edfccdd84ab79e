"""``tablectl sign``: enrol a user, or print a signed supervisor/technician command ready for mosquitto_pub.

Enrol (once per user; writes the user's PIN-encrypted key file on the terminal side and adds the public key and
role to the table's credentials file):

    tablectl sign --add-to /etc/tablectl/credentials.toml --user alice --role supervisor \\
        --key-file ~/.config/tablectl/keys/alice.key          (prompts for the PIN twice)

Enrol a key made elsewhere, e.g. a supervisor's browser key (the floor dashboard shows its public key; its
private key never leaves the supervisor's device):

    tablectl sign --add-to /etc/tablectl/credentials.toml --user alice --role supervisor --public-key HEX

Sign (with the key file and the PIN):

    tablectl sign --user alice --role supervisor --action clear_jam --args '{"alert_id": 3}'

The key file defaults to ``$TABLECTL_KEY_DIR/<user>.key`` (else ``~/.config/tablectl/keys/<user>.key``). The
PIN (6-32 digits) is asked on the terminal, or read from ``--pin-file FILE`` (its first line; ``-``: standard
input) or the ``TABLECTL_PIN`` environment variable. Never from the command line: every local account can read
a process's arguments (``ps``), so ``--pin`` is refused with the reason (issue 37).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.mqtt import userkeys
from controller.mqtt.auth import ROLE_ACTIONS, AuthError, add_public_key, enrol
from controller.mqtt.signed_command import build_command

PIN_ON_COMMAND_LINE = (
    "--pin: a PIN on the command line can be read by every account on this computer (the process list); "
    "type it when asked, or use --pin-file FILE ('-' for standard input) or $TABLECTL_PIN"
)
MAX_PIN_FILE = 1024  # bytes read from a PIN file at most


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user", required=True, help="the supervisor's or technician's user name, as enrolled at the table"
    )
    parser.add_argument("--pin", help=argparse.SUPPRESS)  # refused, with the reason (PIN_ON_COMMAND_LINE)
    parser.add_argument(
        "--pin-file",
        metavar="FILE",
        help="read the PIN (6-32 digits) from the first line of this file, readable by its owner only; "
        "'-' reads it from standard input (without it: $TABLECTL_PIN, else asked on the terminal)",
    )
    parser.add_argument(
        "--role",
        required=True,
        choices=sorted(ROLE_ACTIONS),
        help="the role the command is signed in: it decides which commands are allowed",
    )
    parser.add_argument(
        "--action",
        help="the command, as the table names it (docs/mqtt.md lists each role's commands); "
        "required unless --add-to",
    )
    parser.add_argument("--args", default="{}", help="the command's arguments as a JSON object")
    parser.add_argument(
        "--key-file", type=Path, help="the user's encrypted key file (default: $TABLECTL_KEY_DIR/<user>.key)"
    )
    parser.add_argument("--request-id", help="the request's id (default: random)")
    parser.add_argument(
        "--ts", type=int, metavar="SECONDS", help="when it was signed, Unix seconds (default: now)"
    )
    parser.add_argument("--nonce", help="hex, 16-64 digits (default: random 32)")
    parser.add_argument(
        "--add-to",
        metavar="CREDENTIALS",
        help="enrol: create the user's key file and add its public key to the table's credentials file (TOML)",
    )
    parser.add_argument(
        "--public-key",
        metavar="HEX",
        help="with --add-to: enrol this Ed25519 public key (64 hex digits) made elsewhere; no key file is written",
    )


def _pin_file(name: str) -> str:
    """The PIN on the first line of a file ('-': standard input); a file others may read is refused."""
    try:
        if name == "-":
            first = sys.stdin.readline(MAX_PIN_FILE)
        else:
            with open(name, encoding="utf-8") as fh:
                if os.fstat(fh.fileno()).st_mode & 0o077:
                    raise AuthError(f"--pin-file {name}: others may read it (chmod 600 {name})")
                first = fh.readline(MAX_PIN_FILE)
    except (OSError, UnicodeDecodeError) as exc:
        raise NoTerminal(f"--pin-file {name}: {getattr(exc, 'strerror', None) or exc}") from None
    pin = first.rstrip("\r\n")
    if not pin:
        raise NoTerminal(f"--pin-file {name}: no PIN on its first line")
    return pin


def _pin(args: argparse.Namespace, *, confirm: bool) -> str:
    if getattr(args, "pin_file", None):
        return _pin_file(args.pin_file)
    pin = os.environ.get("TABLECTL_PIN")
    if pin:
        return pin
    try:
        os.close(os.open("/dev/tty", os.O_RDWR))
    except OSError:
        raise NoTerminal(
            "no terminal to ask the PIN: give --pin-file FILE ('-' for standard input) or set $TABLECTL_PIN"
        ) from None
    try:
        pin = getpass.getpass(f"PIN for {args.user}: ")
        if confirm and getpass.getpass("PIN again: ") != pin:
            raise AuthError("the two PINs differ")
    except EOFError:
        raise NoTerminal("no PIN given (end of input)") from None
    return pin


def _public_key(text: str) -> str:
    """A raw Ed25519 public key as 64 lowercase hex digits, or AuthError."""
    key = text.strip().lower()
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key))
    except ValueError:
        raise AuthError("--public-key: expected an Ed25519 public key, 64 hex digits") from None
    return key


class NoTerminal(Exception):
    """The PIN is needed and there is no terminal to ask it on (a usage error: exit 2, docs/cli.md)."""


def main(args: argparse.Namespace) -> int:
    if getattr(args, "pin", None) is not None:
        print(f"error: {PIN_ON_COMMAND_LINE}", file=sys.stderr)
        return 2
    try:
        key_file = args.key_file or userkeys.key_path(userkeys.default_key_dir(), args.user)
        if args.public_key and not args.add_to:
            print("error: --public-key goes with --add-to", file=sys.stderr)
            return 2
        if args.add_to and args.public_key:
            add_public_key(args.add_to, args.user, [args.role], _public_key(args.public_key))
            print(f"{args.add_to}: {args.user} ({args.role}) added, public key {args.public_key.lower()}")
            return 0
        if args.add_to:
            pin = _pin(args, confirm=True)
            userkeys.check_pin(pin)
            public = enrol(args.add_to, key_file, args.user, pin, [args.role])
            print(f"{args.add_to}: {args.user} ({args.role}) added, public key {public}")
            print(
                f"{key_file}: the private key, encrypted under the PIN (keep it on the terminal, mode 0600)"
            )
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
            _pin(args, confirm=False),
            args.role,
            args.action,
            cmd_args,
            key_file=key_file,
            ts=args.ts,
            nonce=args.nonce,
            request_id=args.request_id,
        )
    except NoTerminal as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (AuthError, userkeys.KeyFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(cmd, separators=(",", ":"), ensure_ascii=False))
    return 0
