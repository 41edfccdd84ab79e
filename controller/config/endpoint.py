"""The broker endpoint's vocabulary, read from ``[mqtt]``/``[mqtt.tls]`` and from every client's options: the
TLS files and the default ports. Plain data, below the MQTT package (``controller.mqtt.paho_client`` applies it
to a paho client), so reading the configuration never imports an MQTT client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PLAIN_PORT = 1883
TLS_PORT = 8883  # the shipped broker's only listener (firmware_configs/mosquitto/mosquitto.conf)


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """``[mqtt.tls]`` of the table's configuration, ``--ca``/``--cert``/``--key`` of the clients."""

    ca: Path
    cert: Path | None = None  # client certificate and its key: both or neither
    key: Path | None = None


def default_port(tls: object | None) -> int:
    """8883 with TLS, else 1883: the default of the table's ``[mqtt] port`` and of every client's port."""
    return TLS_PORT if tls is not None else PLAIN_PORT
