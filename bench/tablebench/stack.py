"""Start a whole table on one machine: broker, emulated shoe and jackpot display on pseudo-terminals, and the
real service process (what systemd starts as `tablectl run`; here through tablebench/service.py) with a generated
configuration.

Used by `tablectl demo`, the HIL bench (hil_tests/) and the benchmarks. Every part is a real process speaking
its real protocol; only the hardware is emulated. The service's fake GPIO board is driven through a unix
socket (tablebench/gpio_server.py) that the bench's launcher of the service opens (tablebench/service.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.broker import load_users
from controller.config.endpoint import TlsConfig
from controller.rules.profiles import load_profile
from tablebench import ROOT
from tablebench.broker import Broker
from tablebench.procs import stop_process

DEMO_CONFIG = ROOT / "firmware_configs" / "demo.toml"
TABLECTL = [sys.executable, "-m", "controller.cli"]
# The service as `tablectl run` runs it, plus the fake GPIO board's control socket (tablebench/service.py).
SERVICE = [sys.executable, "-m", "tablebench.service"]

# Demo supervisor/technician users and PINs; never for production. Their key pairs are made when a stack
# starts (write_demo_credentials): the key files (encrypted under these PINs) in <workdir>/keys, the public keys
# in <workdir>/credentials.toml.
DEMO_PINS = {"alice": "123456", "bob": "234567", "tom": "345678"}
DEMO_ROLES = {"alice": "supervisor", "bob": "supervisor", "tom": "technician"}
_demo_keys: dict[str, tuple[bytes, str]] = {}  # user -> (key file bytes, public key): made once per process


def write_demo_credentials(workdir: Path) -> tuple[Path, Path]:
    """Write the demo users' key files and the table's credentials file; returns (credentials, key dir).
    The keys are generated once per process (scrypt costs ~0.5 s per user) and reused by later stacks."""
    from controller.mqtt.auth import add_public_key
    from controller.mqtt.userkeys import encrypt_key, key_path

    key_dir, creds = workdir / "keys", workdir / "credentials.toml"
    key_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    creds.write_text("")
    for user, pin in DEMO_PINS.items():
        if user not in _demo_keys:
            data = encrypt_key(user, pin)
            _demo_keys[user] = (data, str(json.loads(data)["public_key"]))
        data, public = _demo_keys[user]
        path = key_path(key_dir, user)
        path.write_bytes(data)
        os.chmod(path, 0o600)
        add_public_key(creds, user, [DEMO_ROLES[user]], public)
    return creds, key_dir


def dump_toml(doc: dict[str, Any]) -> str:
    """A small TOML writer for configuration documents (tables, scalars, lists, inline tables)."""

    def scalar(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(scalar(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {scalar(x)}" for k, x in v.items()) + " }"
        raise TypeError(f"cannot write {type(v).__name__} to TOML")

    out: list[str] = []

    def table(prefix: str, d: dict[str, Any]) -> None:
        plain = {k: v for k, v in d.items() if not (isinstance(v, dict) and _is_table(k, v))}
        if prefix:
            out.append(f"\n[{prefix}]")
        out.extend(f"{json.dumps(k)} = {scalar(v)}" for k, v in plain.items())
        for k, v in d.items():
            if isinstance(v, dict) and _is_table(k, v):
                table(f"{prefix}.{k}" if prefix else k, v)

    table("", doc)
    return "\n".join(out).lstrip() + "\n"


def shoe_settings_for(profile_file: Path, mode: str) -> dict[str, Any]:
    """The [shoe] settings a rule profile requires (decks, burns, cut and warning card: PT-2001 r.8-10)."""
    prof = load_profile(str(profile_file))  # the one profile parser (controller/rules/profiles.py)
    decks = prof.decks
    continuous = mode == "continuous"
    return {
        "mode": mode,
        "decks": decks,
        "burn_cards": {"none": 0, "one": 1, "decks": decks}.get(prof.burn.shoe_start, 0),
        "burn_each_round": 1 if prof.burn.per_round else 0,
        "cut_card": False if continuous else prof.shoe.cut_card != "none",
        "warning_card_from_end": 0 if continuous else prof.shoe.warning_card_from_end,
    }


def _is_table(key: str, value: dict[str, Any]) -> bool:
    # sections and [gpio.pins] are tables; a pin ({pin = 17}) is an inline table
    return not ("pin" in value and not any(isinstance(v, dict) for v in value.values()))


@dataclass
class StackOptions:
    profile: str = "pt-2001"
    table_id: str = "demo1"
    site: str = "demo"
    scenario: dict[str, Any] = field(default_factory=dict)  # emulated shoe scenario (docs/emulator.md)
    jackpot: bool = True
    min_bet: int | None = None
    max_bet: int | None = None
    broker: tuple[str, int] | None = None  # use this broker instead of starting one
    broker_config: tuple[str, ...] = ()  # appended to the started broker's configuration (a floor bridge)
    broker_tls: TlsConfig | None = (
        None  # that broker's CA (and client certificate): the service and clients use it
    )
    # section -> key -> value (None: leave the key out)
    config_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    verbose: bool = False


class Stack:
    def __init__(self, workdir: str | Path, options: StackOptions | None = None) -> None:
        self.workdir = Path(workdir)
        self.opts = options or StackOptions()
        self.broker: Broker | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.shoe_proc: subprocess.Popen[str] | None = None
        self.display_proc: subprocess.Popen[str] | None = None
        self.controller_proc: subprocess.Popen[bytes] | None = None
        self.shoe_device = ""
        self.shoe_control = ""
        self.display_device = ""
        self.config_path = self.workdir / "table.toml"
        self.gpio_socket = str(self.workdir / "gpio.sock")
        self.users = load_users()
        self.table_user = f"table-{self.opts.table_id}"
        self.users.setdefault(self.table_user, f"demo-{self.table_user}")
        self.log_path = self.workdir / "controller.log"
        self.key_dir = self.workdir / "keys"  # the demo users' key files (write_demo_credentials)

    @property
    def prefix(self) -> str:
        return f"casino/{self.opts.site}/table/{self.opts.table_id}"

    # ---- start ----
    def start(self) -> Stack:
        """Broker, then the emulated parts and the configuration, then the controller."""
        self.start_broker()
        self.start_parts()
        self.start_controller()
        return self

    def start_broker(self) -> None:
        """The embedded broker (or the one in the options); a bench subscribes before the controller starts."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.opts.broker is None:
            self.broker = Broker.start(
                self.workdir / "broker",
                users=self.users,
                site=self.opts.site,
                extra_config=self.opts.broker_config,
            )
            self.host, self.port = self.broker.host, self.broker.port
        else:
            self.host, self.port = self.opts.broker

    def start_parts(self) -> None:
        """The emulated shoe and display, and the generated configuration with its integrity manifest."""
        self._start_shoe()
        if self.opts.jackpot:
            self._start_display()
        self._write_config()

    def _start_shoe(self) -> None:
        scenario = self.workdir / "scenario.json"
        profile = load_profile(str(ROOT / "firmware_configs" / "profiles" / f"{self.opts.profile}.toml"))
        default = {"kind": "continuous", "decks": profile.decks, "seed": 7}
        scenario.write_text(json.dumps(self.opts.scenario or default))
        self.shoe_proc, info = _spawn_json(
            [*TABLECTL, "emulate-shoe", "--scenario", str(scenario), "--link", str(self.workdir / "shoe")],
            self.workdir / "shoe.log",
        )
        self.shoe_device, self.shoe_control = info["link"] or info["device"], info["control"]

    def _start_display(self) -> None:
        self.display_proc, info = _spawn_json(
            [*TABLECTL, "emulate-display", "--link", str(self.workdir / "display")],
            self.workdir / "display.log",
        )
        self.display_device = info["link"] or info["pty"]

    def _write_config(self) -> None:
        cfg = tomllib.loads(DEMO_CONFIG.read_text())
        o = self.opts
        state = self.workdir / "state"
        cfg["table"].update(
            id=o.table_id, site=o.site, profile=o.profile, state_dir=str(state),
            integrity_manifest=str(self.workdir / "integrity.json"),
            profiles_dir=str(ROOT / "firmware_configs" / "profiles"),
        )  # fmt: skip
        for key in ("min_bet", "max_bet"):
            cfg["table"].pop(key, None)
            if getattr(o, key) is not None:
                cfg["table"][key] = getattr(o, key)
        mode = "batch" if o.scenario.get("kind") == "batch" else "continuous"
        cfg["shoe"].update(
            shoe_settings_for(ROOT / "firmware_configs" / "profiles" / f"{o.profile}.toml", mode)
        )
        cfg["shoe"]["port"] = self.shoe_device
        cfg["display"].update(port=self.display_device or "/dev/null", enabled=bool(o.jackpot))
        cfg["jackpot"]["enabled"] = bool(o.jackpot)
        password_file = self.workdir / "mqtt-password"
        password_file.write_text(self.users[self.table_user] + "\n")
        cfg["mqtt"].update(
            host=self.host, port=self.port, username=self.table_user, password_file=str(password_file)
        )
        tls = o.broker_tls
        if tls is not None:  # the table's [mqtt.tls], the keys of docs/deploy.md
            cfg["mqtt"]["tls"] = {"ca": str(tls.ca)} | (
                {"cert": str(tls.cert), "key": str(tls.key)} if tls.cert and tls.key else {}
            )
        creds, self.key_dir = write_demo_credentials(self.workdir)
        cfg["supervisors"]["credentials_file"] = str(creds)
        for section, values in o.config_overrides.items():
            cfg.setdefault(section, {}).update(values)
            for key in [k for k, v in values.items() if v is None]:  # None: the key left out
                del cfg[section][key]
        self.config_path.write_text(dump_toml(cfg))
        manifest = str(self.workdir / "integrity.json")
        subprocess.run(
            [*TABLECTL, "config", "record", str(self.config_path), "--manifest", manifest],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )

    # ---- the controller process ----
    def start_controller(self) -> None:
        cmd = [*SERVICE, "--config", str(self.config_path)]
        if self.gpio_socket:  # a real board (BenchStack) has no control socket
            cmd += ["--gpio-control", self.gpio_socket]
        if self.opts.verbose:
            cmd.append("-v")
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.controller_proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        log.close()

    def kill_controller(self) -> None:
        """kill -9: no shutdown code runs (the bench's power-loss case)."""
        if self.controller_proc and self.controller_proc.poll() is None:
            self.controller_proc.send_signal(signal.SIGKILL)
            self.controller_proc.wait()

    def stop_controller(self, timeout: float = 10.0) -> int | None:
        return stop_process(self.controller_proc, signal.SIGTERM, timeout)

    def controller_log(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # ---- stop ----
    def stop(self) -> None:
        self.stop_controller()
        for proc in (self.shoe_proc, self.display_proc):
            stop_process(proc, signal.SIGTERM, 5)
        if self.broker is not None:
            self.broker.stop()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- clients ----
    def client(self, user: str = "dealer"):
        from controller.client import TableClient

        return TableClient(
            self.host,
            self.port,
            username=user,
            password=self.users[user],
            prefix=self.prefix,
            key_dir=self.key_dir,
            tls=self.opts.broker_tls,
        )


def _spawn_json(
    cmd: list[str], log: Path, timeout: float = 15.0
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start a helper that prints one JSON line when ready; its stderr goes to ``log``."""
    err = open(log, "ab")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT, env=os.environ.copy()
    )
    err.close()
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line or time.monotonic() > deadline:
        proc.kill()
        raise RuntimeError(f"{' '.join(cmd[2:4])} did not start: {log.read_text(errors='replace')[-500:]}")
    return proc, json.loads(line)
