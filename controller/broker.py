"""An embedded mosquitto broker built from the shipped configuration (tests, HIL bench, ``tablectl demo``).

``Broker.start(workdir)`` writes a config derived from ``firmware_configs/mosquitto/mosquitto.conf``
(keeping its general settings, replacing the environment-specific ones), a hashed password file
(``mosquitto_passwd -U``) and the ACL rendered from ``firmware_configs/mosquitto/acl``, then starts mosquitto
on a free port and waits until it accepts connections. ``restart()`` comes back on the SAME port (outage
tests); ``kill()`` is a crash (SIGKILL).

Also ``python -m controller.broker render --users USERS.toml --out DIR`` renders ``passwd`` and ``acl`` for a
production broker.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parents[1] / "firmware_configs" / "mosquitto"
SHIPPED_CONF = CONFIG_DIR / "mosquitto.conf"
SHIPPED_ACL = CONFIG_DIR / "acl"
DEMO_USERS = CONFIG_DIR / "users.example.toml"
# Settings that depend on where the broker runs; generated, never copied from the shipped file.
_GENERATED = {
    "listener",
    "port",
    "bind_address",
    "cafile",
    "capath",
    "certfile",
    "keyfile",
    "require_certificate",
    "tls_version",
    "password_file",
    "acl_file",
    "persistence_location",
    "log_dest",
    "persistence",
    "autosave_interval",
    "user",
}
_USER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class BrokerError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class BrokerTls:
    """Server-side TLS files; ``require_certificate``: clients must also show a certificate from ``ca``."""

    ca: Path
    cert: Path
    key: Path
    require_certificate: bool = False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def role_of(user: str) -> tuple[str, str]:
    """(role, table) of an account: ``table-T1`` → ("controller", "T1"); ``dealer-T1`` → ("dealer", "T1")."""
    if user.startswith("table-") and len(user) > 6:
        return "controller", user[6:]
    for role in ("dealer", "supervisor", "technician", "monitor"):
        if user.startswith(role):
            rest = user[len(role) :]
            return role, rest[1:] if rest.startswith("-") and len(rest) > 1 else "+"
    raise BrokerError(
        f"account {user!r}: name must start with table-, dealer, supervisor, technician or monitor"
    )


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


def render_acl(users: list[str], template: str | None = None) -> str:
    roles = parse_acl_template(template if template is not None else SHIPPED_ACL.read_text())
    out = ["# Rendered by controller/broker.py from firmware_configs/mosquitto/acl; do not edit."]
    for user in sorted(users):
        role, table = role_of(user)
        if role not in roles:
            raise BrokerError(f"account {user!r}: role {role!r} has no section in the ACL template")
        out.append(f"\nuser {user}")
        out.extend(line.replace("{table}", table) for line in roles[role])
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


def _shipped_general_settings() -> list[str]:
    keep = []
    for raw in SHIPPED_CONF.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.split()[0] in _GENERATED:
            if line.split()[0] == "listener":
                break  # everything after the first listener belongs to that listener
            continue
        keep.append(line)
    return keep


class Broker:
    def __init__(
        self,
        workdir: Path,
        *,
        host: str,
        port: int,
        users: dict[str, str],
        acl: bool,
        tls: BrokerTls | None,
        persistence: bool,
        extra_config: tuple[str, ...] = (),
    ) -> None:
        self.workdir = workdir
        self.extra_config = extra_config  # appended after the listener (e.g. a floor bridge section)
        self.host = host
        self.port = port
        self.users = users
        self.acl = acl
        self.tls = tls
        self.persistence = persistence
        self._proc: subprocess.Popen[bytes] | None = None

    # ---- lifecycle ----
    @classmethod
    def start(
        cls,
        workdir: str | Path,
        *,
        port: int | None = None,
        users: dict[str, str] | None = None,
        acl: bool = True,
        tls: BrokerTls | None = None,
        persistence: bool = True,
        host: str = "127.0.0.1",
        extra_config: tuple[str, ...] = (),
    ) -> Broker:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        users = load_users() if users is None else dict(users)
        for attempt in range(5):
            broker = cls(
                workdir,
                host=host,
                port=port or free_port(host),
                users=users,
                acl=acl,
                tls=tls,
                persistence=persistence,
                extra_config=extra_config,
            )
            try:
                broker._launch()
                return broker
            except BrokerError:
                if port is not None or attempt == 4:
                    raise  # a fixed port that is taken is the caller's problem; a random one we retry
        raise AssertionError("unreachable")

    def _write_config(self) -> Path:
        conf = self.workdir / "mosquitto.conf"
        write_password_file(self.workdir / "passwd", self.users)
        lines = [
            "# Generated by controller/broker.py from firmware_configs/mosquitto/mosquitto.conf",
            *_shipped_general_settings(),
        ]
        lines.append(f"password_file {self.workdir / 'passwd'}")
        if self.acl:
            (self.workdir / "acl").write_text(render_acl(list(self.users)))
            lines.append(f"acl_file {self.workdir / 'acl'}")
        lines.append(f"persistence {'true' if self.persistence else 'false'}")
        if self.persistence:
            lines += [f"persistence_location {self.workdir}/", "autosave_interval 0"]  # save on clean stop
        lines += [f"log_dest file {self.workdir / 'mosquitto.log'}", "log_type all"]
        if os.geteuid() == 0:
            lines.append("user root")  # otherwise mosquitto drops to 'mosquitto', who cannot read workdir
        lines.append(f"listener {self.port} {self.host}")
        if self.tls:
            lines += [
                f"cafile {self.tls.ca}",
                f"certfile {self.tls.cert}",
                f"keyfile {self.tls.key}",
                f"require_certificate {'true' if self.tls.require_certificate else 'false'}",
            ]
        lines += self.extra_config
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def _launch(self, timeout: float = 10.0) -> None:
        conf = self._write_config()
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        with open(self.workdir / "stderr.log", "ab") as err:  # the child keeps its own copy of the fd
            self._proc = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerError(f"mosquitto exited with {self._proc.returncode}: {self.log_tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        self._terminate(signal.SIGKILL)
        raise BrokerError(
            f"mosquitto did not accept connections on {self.host}:{self.port}: {self.log_tail()}"
        )

    def log_tail(self, lines: int = 15) -> str:
        text = ""
        for name in ("stderr.log", "mosquitto.log"):
            p = self.workdir / name
            if p.exists():
                text += p.read_text(errors="replace")
        return " | ".join(text.strip().splitlines()[-lines:])

    def _terminate(self, sig: signal.Signals) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """Clean stop (SIGTERM): persistent sessions and their queued messages are saved."""
        self._terminate(signal.SIGTERM)

    def kill(self) -> None:
        """Crash (SIGKILL): nothing saved since the last autosave."""
        self._terminate(signal.SIGKILL)

    def restart(self) -> None:
        """Stop if running, then start again on the same port."""
        self.stop()
        self._launch()

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Broker({self.host}:{self.port}, running={self.running})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.broker")
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="render passwd (hashed) and acl for a production broker")
    r.add_argument("--users", type=Path, default=DEMO_USERS, help="TOML [users] name = password")
    r.add_argument("--out", type=Path, required=True)
    # floor hook (controller/floor/bridge.py): also write the table broker's bridge to the floor broker
    r.add_argument("--bridge", type=Path, default=None, help="floor bridge settings (bridge.toml)")
    r.add_argument("--table-config", type=Path, default=None, help="table.toml (with --bridge)")
    args = parser.parse_args(argv)
    try:
        users = load_users(args.users)
        args.out.mkdir(parents=True, exist_ok=True)
        write_password_file(args.out / "passwd", users)
        (args.out / "acl").write_text(render_acl(list(users)))
        if args.bridge is not None:
            from controller.floor.bridge_cli import write as write_bridge

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
