"""The MQTT clients' connection settings (controller/mqtt/client_options.py, issue 26): the pit terminal's and
the alert console's ``--client-config`` file takes exactly the declared keys, the command line wins over it, TLS
uses the names of the table's ``[mqtt.tls]`` (ca, cert, key) and makes 8883 the default port, and every refusal
is one line from the real command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import alerts as alerts_cli
from controller.cli import terminal as pit_cli
from controller.config.endpoint import TlsConfig
from controller.mqtt import client_options as opts


def parsed(add_arguments, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def secret(path: Path, text: str) -> Path:
    path.write_text(text + "\n")
    os.chmod(path, 0o600)
    return path


def test_a_client_file_connects_the_terminal_with_tls_and_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("x")
    secret(tmp_path / "pw", "dealer-password")
    conf = write(
        tmp_path / "terminal.toml",
        'host = "table-bj07.lan"\nca = "ca.crt"\nusername = "dealer-bj07"\npassword_file = "pw"\n'
        'site = "lisboa"\ntable = "bj07"\n',
    )
    conn = pit_cli.connection(parsed(pit_cli.add_arguments, ["--client-config", str(conf)]))
    assert (conn.host, conn.port, conn.user, conn.password) == (
        "table-bj07.lan",
        8883,
        "dealer-bj07",
        "dealer-password",
    )
    assert conn.tls == TlsConfig(tmp_path / "ca.crt") and conn.prefix == "casino/lisboa/table/bj07"
    # an option given on the command line wins over the file
    conn = pit_cli.connection(
        parsed(pit_cli.add_arguments, ["--client-config", str(conf), "--port", "18883", "--table", "bj08"])
    )
    assert conn.port == 18883 and conn.prefix == "casino/lisboa/table/bj08" and conn.tls is not None
    # without a CA: plain MQTT on 1883, as the table's [mqtt] port defaults
    secret(tmp_path / "pw2", "x")
    args = parsed(alerts_cli.add_arguments, ["--password-file", str(tmp_path / "pw2")])
    fleet = alerts_cli.fleet(args)
    assert fleet.mqtt.endpoint.port == 1883 and fleet.mqtt.endpoint.tls is None and fleet.site == "+"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('host = "h"\ninsecure = true\n', "unknown key(s) insecure"),
        ('host = "h"\n[mqtt]\nhost = "h"\n', "unknown key(s) mqtt"),
        ("port = 0\n", "port: expected a port number"),
        ("port = true\n", "port: expected a port number"),
        ('host = "a b"\n', "host: expected a host name"),
        ('site = "a/#"\n', "site: expected a name"),
        ('ca = "missing.crt"\n', "ca "),
        ('ca = "ca.crt"\ncert = "ca.crt"\n', "both cert and key"),
        ('cert = "ca.crt"\nkey = "ca.crt"\n', "needs the broker's CA"),
        ("host = \n", "not TOML"),
    ],
)
def test_a_bad_client_file_is_refused_with_one_line(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "ca.crt").write_text("x")
    conf = write(tmp_path / "c.toml", 'site = "s"\ntable = "t"\n' + text if "site" not in text else text)
    args = parsed(pit_cli.add_arguments, ["--client-config", str(conf), "--password-file", "/nonexistent"])
    with pytest.raises(opts.ClientConfigError) as err:
        pit_cli.connection(args)
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_the_commands_refuse_in_one_line_and_exit_2(tmp_path: Path) -> None:
    conf = write(tmp_path / "c.toml", 'host = "h"\nverify = false\n')
    for command in ("terminal", "alerts"):
        proc = subprocess.run(
            [sys.executable, "-m", "controller.cli", command, "--client-config", str(conf)],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"{command}: {conf}: unknown key(s) verify" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "terminal", "--site", "s", "--table", "t", "--cert", "x.crt"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2 and "needs the broker's CA" in proc.stderr


def test_each_setting_is_declared_once() -> None:
    names = [k.name for k in opts.FILE_KEYS]
    flags = [k.flag for k in opts.FILE_KEYS]
    assert len(set(names)) == len(names) and len(set(flags)) == len(flags)
    # TLS keys are the table's [mqtt.tls] keys (schemas/config/table.schema.json)
    import json

    from controller.config.schema import SCHEMA_DIR

    table = json.loads((SCHEMA_DIR / "table.schema.json").read_text())
    assert set(table["properties"]["mqtt"]["properties"]["tls"]["properties"]) == {
        k.name for k in opts.TLS_KEYS
    }
