"""TLS to the broker: a throwaway CA made with the openssl CLI; the link verifies the broker certificate."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest
from support.broker import USERS, link_config, new_topics

from controller.config.endpoint import TlsConfig
from controller.mqtt.link import MqttLink
from tablebench.broker import Broker, BrokerTls

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")


def _ssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d: Path, name: str) -> tuple[Path, Path]:
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _ssl(
        "req",
        "-x509",
        *ec,
        "-days",
        "1",
        "-subj",
        f"/CN={name}",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.crt",
        cwd=d,
    )
    _ssl("req", *ec, "-subj", "/CN=127.0.0.1", "-keyout", "broker.key", "-out", "broker.csr", cwd=d)
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _ssl(
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        f"{name}.crt",
        "-CAkey",
        f"{name}.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext",
        "-out",
        "broker.crt",
        cwd=d,
    )
    return d / f"{name}.crt", d / "broker.crt"


async def test_link_over_tls_verifies_the_broker(tmp_path: Path) -> None:
    ca, cert = make_ca(tmp_path, "ca")
    other = tmp_path / "other"
    other.mkdir()
    wrong_ca, _ = make_ca(other, "wrongca")
    broker = Broker.start(tmp_path / "b", users=USERS, tls=BrokerTls(ca, cert, tmp_path / "broker.key"))
    try:
        good = MqttLink(link_config(broker, tls=TlsConfig(ca=ca)), new_topics())
        await good.start()
        await good.wait_connected()
        assert good.publish("status", b"online") is not None
        await good.stop()
        # A broker certificate not signed by the configured CA is refused: the link never comes up.
        bad = MqttLink(link_config(broker, tls=TlsConfig(ca=wrong_ca), reconnect_max_s=0.2), new_topics())
        await bad.start()
        while "certificate verify failed" not in bad.last_error:
            await asyncio.sleep(0.02)
        assert not bad.connected
        await bad.stop()
    finally:
        broker.stop()
