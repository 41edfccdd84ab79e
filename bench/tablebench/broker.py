"""An embedded mosquitto broker built from the shipped configuration (tests, HIL bench, ``tablectl demo``):
development tooling, not in the product (issue 16).

``Broker.start(workdir)`` writes a config derived from ``firmware_configs/mosquitto/mosquitto.conf``
(keeping its general settings, replacing the environment-specific ones), a hashed password file
(``mosquitto_passwd -U``) and the ACL rendered from ``firmware_configs/mosquitto/acl`` (controller/broker.py),
then starts mosquitto on a free port and waits until it accepts connections. ``restart()`` comes back on the
SAME port (outage tests); ``kill()`` is a crash (SIGKILL).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from controller.broker import (  # the production broker's accounts and ACL, and what tests also use of it
    SHIPPED_CONF,
    BrokerError,
    BrokerKind,
    load_users,
    render_acl,
    write_password_file,
)

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


def _shipped_listener_settings() -> list[str]:
    """Settings of the shipped listener that are not environment-specific (e.g. use_username_as_clientid)."""
    keep, in_listener = [], False
    for raw in SHIPPED_CONF.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.split()[0] == "listener":
            in_listener = True
        elif in_listener and line.split()[0] not in _GENERATED:
            keep.append(line)
    return keep


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
        acl: bool | BrokerKind,
        tls: BrokerTls | None,
        persistence: bool,
        extra_config: tuple[str, ...] = (),
        site: str = "+",
    ) -> None:
        self.site = site
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
        acl: bool | BrokerKind = True,
        tls: BrokerTls | None = None,
        persistence: bool = True,
        host: str = "127.0.0.1",
        extra_config: tuple[str, ...] = (),
        site: str = "+",
    ) -> Broker:
        """``acl``: True (or ``BrokerKind.TABLE``) the table broker's shipped ACL, ``BrokerKind.FLOOR`` the floor
        broker's (docs/floor.md), False none (tests of the broker itself only). ``site``: the ACL's site level
        (the table's site; ``tablectl demo`` and the stacks give theirs). The default "+" is for the shared
        unit-test broker only, whose tests each use a random site."""
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
                site=site,
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
            "# Generated by tablebench/broker.py from firmware_configs/mosquitto/mosquitto.conf",
            *_shipped_general_settings(),
        ]
        lines.append(f"password_file {self.workdir / 'passwd'}")
        if self.acl:
            kind = BrokerKind.TABLE if self.acl is True else self.acl
            (self.workdir / "acl").write_text(render_acl(list(self.users), site=self.site, kind=kind))
            lines.append(f"acl_file {self.workdir / 'acl'}")
        lines.append(f"persistence {'true' if self.persistence else 'false'}")
        if self.persistence:
            # Saved every second as well as on a clean stop: a SIGKILL loses at most 1 s of session state
            # (issue 14 item 5; docs/reliability.md).
            lines += [f"persistence_location {self.workdir}/", "autosave_interval 1"]
        lines += [f"log_dest file {self.workdir / 'mosquitto.log'}", "log_type all"]
        if os.geteuid() == 0:
            lines.append("user root")  # otherwise mosquitto drops to 'mosquitto', who cannot read workdir
        lines.append(f"listener {self.port} {self.host}")
        lines += _shipped_listener_settings()
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
