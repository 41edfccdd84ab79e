"""The table broker's bridge to the floor broker: a mosquitto ``connection`` section, rendered from the table's
configuration (``[table] site/id``, ``[mqtt] prefix``) and the floor's bridge file (``bridge.toml``)::

    [bridge]
    hosts = ["floor1.casino.lan:8883", "floor2.casino.lan:8883"]  # the first is the primary; then failover
    ca = "/etc/mosquitto/certs/floor-ca.crt"                       # the floor broker's CA (TLS is required)
    username = "table-bj07"                                        # the table's account on the floor broker
    password_file = "/etc/tablectl/floor-password"
    # cert = "...", key = "..."                                    # client certificate, if the floor asks one
    # queue_messages = 1000000                                     # held while the uplink is down
    # keepalive = 15                                               # s; a dead link shows on the floor in 1.5x

What the section does (docs/floor.md): out to the floor, QoS 1, retained flags kept: ``status``, ``state/#``,
``events/#``, ``alerts/#``, ``audit/#``, the command responses and the re-fetch answers, and at QoS 0 the table's
``link/head`` (its newest event id) and the table broker's heartbeat; in from the floor, QoS 1:
``cmd/supervisor``, ``cmd/technician``, ``cmd/replay`` (commands stay signed end to end: the bridge only carries
them); and, when the table's ``[jackpot] link`` names a linked progressive, its signed meter document
``casino/<site>/progressive/<link>/meter`` in as ``<prefix>/progressive/meter`` (QoS 1, retained kept; the table
checks its signature, controller/jackpot/link_doc.py). MQTT v5 across the bridge (``bridge_protocol_version
mqttv50``): a command's response topic and correlation data reach the table, so its answer goes to
``cmd/<role>/response/<sender>``, the one response topic the floor broker's ACL lets the sender read (over 3.1.1
they were dropped and no answer came back: issue 26, tests/test_tls_end_to_end.py; the archive's re-fetch requests
also name ``reply_to`` in the payload). ``cleansession false`` with a fixed ``remote_clientid``: both brokers keep
the bridge's session, and the table broker queues what the table publishes while the uplink is down
(``max_queued_messages``) and sends it, in order, when it comes back; ``round_robin true``: the first host while it
answers; when it fails, the next, kept until it fails in turn (after a promotion the bridge stays with the promoted
floor server). Not ``round_robin false``: mosquitto's check whether the primary is back reads a connection still
pending as one made, so while the first host is silent (its server gone, not refusing) the bridge dropped its
working link to the second every few seconds, and re-fetch requests were lost in the gaps. ``notifications true`` on
``<prefix>/link/floor``: "1" when the bridge is connected, "0" (its last will, published by the floor broker) when
the link died.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.jackpot.config import LINK_NAME
from controller.topics import EVENT_HEAD, PROGRESSIVE_METER

# The bridge's two topics the floor reads (floor/archive/contact.py), relative to the table's prefix
LINK_TOPIC = "link/floor"  # the bridge's notification_topic
HEARTBEAT_TOPIC = "link/uptime"  # the table broker's $SYS/broker/uptime, carried out by the bridge (QoS 0)

_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}:[0-9]{1,5}\Z")
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
_KEYS = {
    "hosts",
    "ca",
    "username",
    "password_file",
    "cert",
    "key",
    "queue_messages",
    "keepalive",
    "protocol",
    "insecure_no_tls",
}
OUT_TOPICS = ("status", "state/#", "events/#", "alerts/#", "audit/#", "cmd/+/response", "cmd/+/response/#")
IN_TOPICS = ("cmd/supervisor", "cmd/technician", "cmd/replay")
# The floor broker publishes the bridge's last will (link/floor "0") 1.5 keepalives after the link died: at 15 s
# a cut table shows within 30 s (docs/floor.md).
KEEPALIVE_S = 15


class BridgeConfigError(ValueError):
    pass


@dataclass(frozen=True)
class BridgeConfig:
    site: str
    table_id: str
    prefix: str
    hosts: tuple[str, ...]
    username: str
    password: str
    ca: Path | None
    cert: Path | None = None
    key: Path | None = None
    queue_messages: int = 1_000_000
    keepalive: int = KEEPALIVE_S
    link: str | None = None  # the table's [jackpot] link: its meter document comes in from the floor


def _path(base: Path, value: Any, name: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\n" in value:
        raise BridgeConfigError(f"[bridge] {name}: expected a path")
    p = Path(value)
    return p if p.is_absolute() else base / p


def _table_name(table_config: Path, table: dict[str, object], name: str) -> str:
    value = table.get(name)
    if not isinstance(value, str) or not _ID.match(value):
        raise BridgeConfigError(f"{table_config}: [table] {name} missing or not a topic-safe name")
    return value


def load(table_config: Path, bridge_file: Path) -> BridgeConfig:
    """Read the table's identity from its configuration and the bridge settings from ``bridge_file``."""
    table_doc = tomllib.loads(table_config.read_text())
    table, mqtt = table_doc.get("table", {}), table_doc.get("mqtt", {})
    if not isinstance(table, dict) or not isinstance(mqtt, dict):
        raise BridgeConfigError(f"{table_config}: [table] and [mqtt] must be sections")
    site = _table_name(table_config, table, "site")
    table_id = _table_name(table_config, table, "id")
    prefix = mqtt.get("prefix") or f"casino/{site}/table/{table_id}"
    if not isinstance(prefix, str) or any(c in prefix for c in "+# \n") or not prefix.strip("/"):
        raise BridgeConfigError(f"{table_config}: [mqtt] prefix is not a plain topic")
    doc = tomllib.loads(bridge_file.read_text()).get("bridge")
    if not isinstance(doc, dict):
        raise BridgeConfigError(f"{bridge_file}: expected a [bridge] section")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise BridgeConfigError(f"{bridge_file}: unknown [bridge] keys {unknown}")
    hosts = doc.get("hosts")
    if (
        not isinstance(hosts, list)
        or not 1 <= len(hosts) <= 4
        or not all(isinstance(h, str) and _HOST.match(h) for h in hosts)
    ):
        raise BridgeConfigError(f"{bridge_file}: hosts must list 1-4 'host:port' (first = primary)")
    username = doc.get("username")
    if not isinstance(username, str) or not _ID.match(username):
        raise BridgeConfigError(f"{bridge_file}: username missing or not a plain account name")
    base = bridge_file.parent
    password_path = _path(base, doc.get("password_file"), "password_file")
    if password_path is None:
        raise BridgeConfigError(f"{bridge_file}: password_file is required")
    password = password_path.read_text().strip()
    if not password or any(c in password for c in "\n\r"):
        raise BridgeConfigError(f"{password_path}: empty or multi-line password")
    ca = _path(base, doc.get("ca"), "ca")
    if ca is None and doc.get("insecure_no_tls") is not True:
        raise BridgeConfigError(f"{bridge_file}: ca is required (the uplink is TLS only)")
    cert, key = _path(base, doc.get("cert"), "cert"), _path(base, doc.get("key"), "key")
    if (cert is None) != (key is None):
        raise BridgeConfigError(f"{bridge_file}: cert and key go together")
    queue = doc.get("queue_messages", 1_000_000)
    if not isinstance(queue, int) or isinstance(queue, bool) or not 1000 <= queue <= 100_000_000:
        raise BridgeConfigError(f"{bridge_file}: queue_messages must be 1000..100000000")
    keepalive = doc.get("keepalive", KEEPALIVE_S)
    if not isinstance(keepalive, int) or isinstance(keepalive, bool) or not 2 <= keepalive <= 20:
        raise BridgeConfigError(f"{bridge_file}: keepalive must be 2..20 s (a cut link shows in 1.5 x that)")
    return BridgeConfig(
        site, table_id, prefix.rstrip("/"), tuple(hosts), username, password, ca, cert, key, queue, keepalive,
        _link(table_config, table_doc.get("jackpot", {})),
    )  # fmt: skip


def _link(table_config: Path, jackpot: object) -> str | None:
    """The table's ``[jackpot] link`` (a linked progressive), None without one."""
    if not isinstance(jackpot, dict) or jackpot.get("link") is None:
        return None
    link = jackpot["link"]
    if not isinstance(link, str) or not LINK_NAME.fullmatch(link):
        raise BridgeConfigError(f"{table_config}: [jackpot] link is not a link name ([a-z0-9-]{{1,32}})")
    return link


def render(cfg: BridgeConfig) -> str:
    """The mosquitto configuration lines (a file for ``include_dir``, or appended to mosquitto.conf)."""
    p = cfg.prefix + "/"
    lines = [
        f"# Bridge of table {cfg.site}/{cfg.table_id} to the floor broker; rendered by controller.mqtt.floor_bridge.",
        "# Held while the uplink is down (global setting: the bridge's queue on this broker).",
        f"max_queued_messages {cfg.queue_messages}",
        "max_queued_bytes 0",
        f"connection floor-{cfg.site}-{cfg.table_id}",
        f"address {' '.join(cfg.hosts)}",
        "round_robin true",  # not false: see the module docstring (a silent primary)
        "bridge_protocol_version mqttv50",
        "try_private false",
        "cleansession false",
        f"remote_clientid bridge-{cfg.site}-{cfg.table_id}",
        f"local_clientid bridge-local-{cfg.site}-{cfg.table_id}",
        f"remote_username {cfg.username}",
        f"remote_password {cfg.password}",
        "start_type automatic",
        "restart_timeout 1 30",
        f"keepalive_interval {cfg.keepalive}",
        # link/floor: "1" when the bridge connects, "0" as its last will (published by the floor broker when
        # the link dies): the floor sees a table out of reach (floor/archive/contact.py)
        "notifications true",
        "notifications_local_only false",
        f"notification_topic {p}{LINK_TOPIC}",
        "bridge_max_packet_size 0",
    ]
    if cfg.ca is not None:
        lines += [f"bridge_cafile {cfg.ca}", "bridge_insecure false", "bridge_tls_version tlsv1.2"]
    if cfg.cert is not None and cfg.key is not None:
        lines += [f"bridge_certfile {cfg.cert}", f"bridge_keyfile {cfg.key}"]
    lines += [f"topic {t} out 1 {p} {p}" for t in OUT_TOPICS]
    lines += [f"topic {t} in 1 {p} {p}" for t in IN_TOPICS]
    if cfg.link is not None:  # the linked progressive's signed meter document (retained on the floor broker)
        local, name = PROGRESSIVE_METER.rsplit("/", 1)
        lines.append(f"topic {name} in 1 {p}{local}/ casino/{cfg.site}/progressive/{cfg.link}/")
    # the heartbeat: this broker's uptime, every sys_interval (10 s), QoS 0 (never queued while the link is down)
    lines.append(f"topic uptime out 0 $SYS/broker/ {p}{HEARTBEAT_TOPIC.rsplit('/', 1)[0]}/")
    # the table's newest event id, every 10 s, QoS 0 too: how the floor learns of a lost tail (docs/floor.md)
    lines.append(f"topic {EVENT_HEAD} out 0 {p} {p}")
    return "\n".join(lines) + "\n"


def write(table_config: Path, bridge_file: Path, out: Path) -> None:
    """The rendered section to ``out``, mode 0600 (it holds the bridge account's password)."""
    text = render(load(table_config, bridge_file))
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(out, 0o600)
