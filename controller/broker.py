"""The production broker's accounts and ACL: ``python -m controller.broker render --users USERS.toml --site SITE
--out DIR`` renders ``passwd`` (hashed with mosquitto_passwd) and ``acl`` from the ACL template
``firmware_configs/mosquitto/acl`` (every ACL rule names the site; no wildcard site); with ``--bridge`` also the
table broker's bridge to the floor. The templates are package data (``controller/data/mosquitto``, found with
``importlib.resources``), so an installed wheel renders from its own copy and never from a source tree;
``python -m controller.broker path conf|acl|users`` prints where a template is (the installer copies
``mosquitto.conf`` from there).
The systemd installer runs it. The embedded broker the tests, the bench and the demo start is development
tooling: tablebench/broker.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tomllib
from enum import Enum
from pathlib import Path

from controller.actions import ACCOUNT_ROLES
from controller.data import MOSQUITTO_DIR
from controller.jackpot.config import LINK_NAME

# package data (controller/data/mosquitto -> firmware_configs/mosquitto in a checkout; the files in a wheel)
SHIPPED_CONF = MOSQUITTO_DIR / "mosquitto.conf"
SHIPPED_ACL = MOSQUITTO_DIR / "acl"
DEMO_USERS = MOSQUITTO_DIR / "users.example.toml"
TEMPLATES = {"conf": SHIPPED_CONF, "acl": SHIPPED_ACL, "users": DEMO_USERS}
_USER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
_SITE = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")


# "supervisor-floor": an account of the floor, for every table (not a table called "floor")
EVERY_TABLE_SUFFIX = "floor"
FLOOR_SECTION = "floor-"  # the floor broker's sections of the template: [floor-<role>]
PROGRESSIVE_PREFIX = (
    "progressive-"  # a linked progressive's controller on the floor broker (floor/progressive/)
)


class BrokerError(RuntimeError):
    pass


class BrokerKind(Enum):
    """Which broker an ACL is rendered for: a table's own broker, or the casino floor's (docs/floor.md)."""

    TABLE = "table"
    FLOOR = "floor"


def role_of(user: str) -> tuple[str, str]:
    """(role, table) of an account: ``table-T1`` → ("controller", "T1"); ``dealer-T1`` → ("dealer", "T1");
    ``supervisor-floor`` → ("supervisor", "+") (the floor's account, every table)."""
    if user.startswith("table-") and len(user) > 6:
        return "controller", user[6:]
    for role in ACCOUNT_ROLES:
        if user.startswith(role):
            rest = user[len(role) :]
            table = rest[1:] if rest.startswith("-") and len(rest) > 1 else "+"
            return role, "+" if table == EVERY_TABLE_SUFFIX else table
    raise BrokerError(
        f"account {user!r}: name must start with table-, dealer, supervisor, technician, monitor or archive"
    )


def floor_role_of(user: str) -> tuple[str, str]:
    """(section, table) of an account on the floor broker: ``table-T1``/``bridge-T1`` → the bridge of table T1,
    ``dashboard*`` → a supervisor of every table, ``progressive-<link>`` → a linked progressive's controller (its
    link's name in the ``{table}`` place, docs/progressive.md), the others by their table-broker role
    (``[floor-<role>]``)."""
    if user.startswith("bridge-") and len(user) > 7:
        return f"{FLOOR_SECTION}bridge", user[7:]
    if user.startswith("dashboard"):
        return f"{FLOOR_SECTION}supervisor", "+"
    if user.startswith(PROGRESSIVE_PREFIX) and LINK_NAME.match(user[len(PROGRESSIVE_PREFIX) :]):
        return f"{FLOOR_SECTION}progressive", user[len(PROGRESSIVE_PREFIX) :]  # {table}: the link's name
    role, table = role_of(user)
    return f"{FLOOR_SECTION}{'bridge' if role == 'controller' else role}", table


def parse_acl_template(text: str) -> dict[str, list[str]]:
    roles: dict[str, list[str]] = {}
    current: list[str] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = roles.setdefault(line[1:-1], [])
        elif current is None or not line.startswith("topic "):
            raise BrokerError(f"acl template line {n}: expected [role] or 'topic ...', got {line!r}")
        else:
            current.append(line)
    return roles


_ROLE_OF = {BrokerKind.TABLE: role_of, BrokerKind.FLOOR: floor_role_of}


def render_acl(
    users: list[str], template: str | None = None, *, site: str, kind: BrokerKind = BrokerKind.TABLE
) -> str:
    """The acl_file for ``users`` at ``site`` (the table's own site; "+" only for the shared unit-test broker,
    whose tests isolate themselves by a random site each). ``kind``: the table's broker or the floor's (its
    ``[floor-*]`` sections of the same template)."""
    if site != "+" and not _SITE.match(site):
        raise BrokerError(f"site {site!r}: letters, digits, '_', '.', '-' only")
    roles = parse_acl_template(template if template is not None else SHIPPED_ACL.read_text())
    out = [
        f"# Rendered by controller/broker.py from firmware_configs/mosquitto/acl ({kind.value}); do not edit."
    ]
    for user in sorted(users):
        role, table = _ROLE_OF[kind](user)
        if role not in roles:
            raise BrokerError(f"account {user!r}: role {role!r} has no section in the ACL template")
        if not _USER_NAME.match(user):
            raise BrokerError(f"account {user!r}: bad name characters")
        out.append(f"\nuser {user}")
        out.extend(
            line.replace("{site}", site).replace("{table}", table).replace("{user}", user)
            for line in roles[role]
        )
    return "\n".join(out) + "\n"


def write_password_file(path: Path, users: dict[str, str]) -> None:
    """Plain ``user:password`` lines, hashed in place by ``mosquitto_passwd -U`` (passwords never logged)."""
    for user, password in users.items():
        if not _USER_NAME.match(user) or ":" in password or "\n" in password:
            raise BrokerError(f"account {user!r}: bad name or password characters")
    path.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
    os.chmod(path, 0o600)
    tool = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    res = subprocess.run([tool, "-U", str(path)], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise BrokerError(f"mosquitto_passwd -U failed: {res.stderr.strip() or res.stdout.strip()}")


def load_users(path: Path = DEMO_USERS) -> dict[str, str]:
    data = tomllib.loads(path.read_text())
    users = data.get("users")
    if not isinstance(users, dict) or not all(isinstance(v, str) for v in users.values()):
        raise BrokerError(f'{path}: expected a [users] table of name = "password"')
    return dict(users)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.broker")
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="render passwd (hashed) and acl for a production broker")
    r.add_argument("--users", type=Path, default=DEMO_USERS, help="TOML [users] name = password")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--site", required=True, help="the table's site (the ACL's site level; no wildcard)")
    r.add_argument("--floor", action="store_true", help="the floor broker's ACL (its [floor-*] roles)")
    # the floor bridge (controller/mqtt/floor_bridge.py): also write the table broker's bridge to the floor broker
    r.add_argument("--bridge", type=Path, default=None, help="floor bridge settings (bridge.toml)")
    r.add_argument("--table-config", type=Path, default=None, help="table.toml (with --bridge)")
    p = sub.add_parser("path", help="print where a shipped template is (package data)")
    p.add_argument("template", choices=sorted(TEMPLATES))
    args = parser.parse_args(argv)
    if args.cmd == "path":
        print(TEMPLATES[args.template])
        return 0
    try:
        users = load_users(args.users)
        args.out.mkdir(parents=True, exist_ok=True)
        write_password_file(args.out / "passwd", users)
        if args.site == "+":
            raise BrokerError("--site: give the table's own site, not a wildcard")
        kind = BrokerKind.FLOOR if args.floor else BrokerKind.TABLE
        (args.out / "acl").write_text(render_acl(list(users), site=args.site, kind=kind))
        if args.bridge is not None:
            from controller.mqtt.floor_bridge import write as write_bridge

            if args.table_config is None:
                raise BrokerError("--bridge needs --table-config")
            write_bridge(args.table_config, args.bridge, args.out / "floor-bridge.conf")
            print(f"wrote {args.out / 'floor-bridge.conf'}")
    except (BrokerError, OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out / 'passwd'} and {args.out / 'acl'} for {len(users)} accounts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
