"""The one place a paho client is made and configured: every MQTT client of the product (the table's own link,
the pit terminal, the alert console, the floor dashboard, the archive workers, the bench's clients) gets its
account and its TLS here, so they all speak TLS the same way (issue 26).

TLS is the table's ``[mqtt.tls]`` (docs/deploy.md): ``ca`` (the CA that signed the broker's certificate), and
``cert`` + ``key`` (a client certificate, when the broker asks for one). The broker's certificate is always
verified, its chain against ``ca`` and its name against the host connected to (the installer's broker
certificate names the Pi's host name, ``localhost`` and 127.0.0.1); nothing turns this off.
"""

from __future__ import annotations

import ssl
import sys
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.config.endpoint import TlsConfig

RECONNECT_FIRST_S = 0.2  # paho's reconnection back-off (quick_reconnect): the first wait, s
RECONNECT_LONGEST_S = 5  # and the longest, s


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """Where a client connects and as whom; ``tls`` None is plain MQTT (the demo's loopback broker)."""

    host: str
    port: int
    username: str = ""
    password: str = field(default="", repr=False)
    tls: TlsConfig | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} ({'TLS' if self.tls else 'plain'})"


def apply_tls(client: mqtt.Client, tls: TlsConfig) -> None:
    client.tls_set(
        ca_certs=str(tls.ca),
        certfile=str(tls.cert) if tls.cert else None,
        keyfile=str(tls.key) if tls.key else None,
        cert_reqs=ssl.CERT_REQUIRED,
        tls_version=ssl.PROTOCOL_TLS_CLIENT,
    )


def new_client(
    endpoint: BrokerEndpoint,
    client_id: str,
    *,
    protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv5,
    **options: Any,
) -> mqtt.Client:
    """A paho client (callback API 2) with the endpoint's account and TLS; ``options`` go to ``mqtt.Client``
    (clean_session, manual_ack, reconnect_on_failure). Connecting and callbacks are the caller's."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol, **options)
    if endpoint.username:
        client.username_pw_set(endpoint.username, endpoint.password)
    if endpoint.tls is not None:
        apply_tls(client, endpoint.tls)
    return client


def quick_reconnect(client: mqtt.Client) -> None:
    """paho's back-off between the attempts of its network thread: the first after ``RECONNECT_FIRST_S``, doubled
    each time up to ``RECONNECT_LONGEST_S`` (the programs around a table, the archive workers: a broker back
    after a restart is found within a fraction of a second, not the whole second paho's ints allow)."""
    # paho declares int, but only adds the delay to its float clock, doubles and caps it: a float is kept as is
    # (tests/test_paho_client.py holds paho to that)
    client.reconnect_delay_set(RECONNECT_FIRST_S, RECONNECT_LONGEST_S)  # type: ignore[arg-type]  # floats, above


def publish_properties(*, response_topic: str | None = None, correlation: bytes | None = None) -> Properties:
    """The MQTT v5 properties of a PUBLISH: where the answer goes, and the data that pairs it with the request."""
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]  # paho's __init__ has no annotations
    if response_topic is not None:
        props.ResponseTopic = response_topic
    if correlation is not None:
        props.CorrelationData = correlation
    return props


def connect_failure() -> str:
    """Why a connection attempt failed, for a person: called from paho's ``on_connect_fail``, which paho runs while
    it handles the connect's error (so that error is the one being handled): "TLS: certificate verify failed:
    unable to get local issuer certificate", "Connection refused"."""
    exc = sys.exc_info()[1]
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: certificate verify failed: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    return "cannot connect"
