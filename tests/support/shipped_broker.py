"""A throwaway PKI (``cryptography``) and mosquitto started from the shipped configuration as shipped.

``ShippedBroker`` writes ``firmware_configs/mosquitto/mosquitto.conf`` line by line, changing only what names a
place on this machine (the certificate, password, ACL and persistence paths, the log file) and the listener's port
(bound to loopback); every other line is the shipped one, checked by ``changed_lines``. The accounts are hashed
by ``mosquitto_passwd`` and the ACL rendered from the shipped template (controller/broker.py), as
``systemd/install.sh`` does. Run as root, mosquitto drops to its own ``mosquitto`` account as in production: its
folder is made that account's, the keys readable by it alone (mode 0600)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controller.broker import SHIPPED_CONF, BrokerKind, render_acl, write_password_file
from tablebench.broker import free_port

# The shipped settings that name a place on the machine: the only lines rewritten (with the listener's port).
PLACES = {"cafile", "certfile", "keyfile", "password_file", "acl_file", "persistence_location", "log_dest"}


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


class Pki:
    """A CA (EC P-256, one day) that issues server and client certificates into ``folder``."""

    def __init__(self, folder: Path, name: str = "test CA") -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_usage(ca=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.ca = folder / "ca.crt"
        self.ca.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, *, server: bool) -> Issued:
        """A certificate for ``name``; a server's names localhost and 127.0.0.1 (as systemd/install.sh's)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(ca=False), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        if server:
            sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        issued = Issued(self.folder / f"{name}.crt", self.folder / f"{name}.key")
        issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        fd = os.open(issued.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
        return issued


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=not ca, key_cert_sign=ca, crl_sign=ca, encipher_only=False, decipher_only=False,
    )  # fmt: skip


def shipped_config(folder: Path, port: int, ca: Path, server: Issued) -> str:
    """The shipped mosquitto.conf with its paths moved into ``folder`` and the listener on ``port``."""
    places = {
        "cafile": str(ca),
        "certfile": str(server.cert),
        "keyfile": str(server.key),
        "password_file": str(folder / "passwd"),
        "acl_file": str(folder / "acl"),
        "persistence_location": f"{folder}/",
        "log_dest": f"file {folder / 'mosquitto.log'}",
    }
    out = []
    for line in SHIPPED_CONF.read_text().splitlines():
        word = line.split()[0] if line.strip() and not line.startswith("#") else ""
        if word in places:
            line = f"{word} {places[word]}"
        elif word == "listener":
            line = f"listener {port} 127.0.0.1"
        out.append(line)
    return "\n".join(out) + "\n"


def changed_lines(config: str) -> set[str]:
    """The setting names whose lines differ from the shipped file's (must stay within PLACES + listener)."""
    shipped = SHIPPED_CONF.read_text().splitlines()
    mine = config.splitlines()
    assert len(mine) >= len(shipped)
    changed = {a.split()[0] for a, b in zip(mine, shipped, strict=False) if a != b}
    return changed | {line.split()[0] for line in mine[len(shipped) :] if line.strip() and line[0] != "#"}


def give_to_mosquitto(folder: Path) -> None:
    """Run as root, mosquitto drops to its own account (as on the Pi): its folder (and the CA a bridge reads at
    connect time) must be that account's."""
    if os.geteuid() == 0:
        account = pwd.getpwnam("mosquitto")
        for path in [folder, *folder.iterdir()]:
            os.chown(path, account.pw_uid, account.pw_gid)


class ShippedBroker:
    def __init__(
        self,
        folder: Path,
        ca: Path,
        server: Issued,
        users: dict[str, str],
        site: str,
        extra: str = "",
        kind: BrokerKind = BrokerKind.TABLE,
    ) -> None:
        self.folder, self.host, self.port = folder, "127.0.0.1", free_port()
        folder.mkdir(parents=True, exist_ok=True)
        write_password_file(folder / "passwd", users)
        (folder / "acl").write_text(render_acl(list(users), site=site, kind=kind))
        self.config = shipped_config(folder, self.port, ca, server) + extra
        (folder / "mosquitto.conf").write_text(self.config)
        if (
            os.geteuid() == 0
        ):  # mosquitto drops to its own account, as on the Pi: the folder is that account's
            account = pwd.getpwnam("mosquitto")
            for path in [folder, *folder.iterdir()]:
                os.chown(path, account.pw_uid, account.pw_gid)
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.proc = subprocess.Popen(
            [binary, "-c", str(folder / "mosquitto.conf")],
            stdout=subprocess.DEVNULL,
            stderr=open(folder / "stderr.log", "ab"),  # noqa: SIM115 - the child keeps its copy
        )
        deadline = time.monotonic() + 20
        while True:
            assert self.proc.poll() is None, f"mosquitto exited: {self.log()}"
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                assert time.monotonic() < deadline, f"mosquitto did not listen: {self.log()}"
                time.sleep(0.05)

    def log(self) -> str:
        return "".join(
            (self.folder / n).read_text(errors="replace")
            for n in ("stderr.log", "mosquitto.log")
            if (self.folder / n).exists()
        )[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
