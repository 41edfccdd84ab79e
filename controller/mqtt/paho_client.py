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
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.config.endpoint import TlsConfig

RECONNECT_FIRST_S = 0.2  # paho's reconnection back-off (quick_reconnect): the first wait, s
RECONNECT_LONGEST_S = 5  # and the longest, s
READ_AHEAD = 64 * 1024  # bytes a read-ahead client asks its socket for at once (``ReadAheadClient``)
PACKETS_PER_READ = (
    256  # packets a read-ahead client handles from its buffer before it looks at the socket again
)


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


class _ReadAhead:
    """A connected socket read ahead: one ``recv`` of up to ``READ_AHEAD`` bytes serves the many small reads paho
    makes for each packet (the command byte, each byte of the remaining length, the rest). ``pending`` counts the
    bytes held here (and those an SSL socket holds): paho's loop does not wait in ``select`` while there are any,
    so nothing buffered stalls. Everything else is the socket's."""

    __slots__ = ("_buf", "_pos", "_sock")

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._buf = b""
        self._pos = 0

    def recv(self, bufsize: int) -> bytes:
        if self._pos >= len(self._buf):
            data = self._sock.recv(max(bufsize, READ_AHEAD))  # BlockingIOError, SSLWantReadError: paho's
            if len(data) <= bufsize:
                self._buf, self._pos = b"", 0
                return data  # type: ignore[no-any-return]  # the socket's bytes
            self._buf, self._pos = data, 0
        end = self._pos + bufsize
        out = self._buf[self._pos : end]
        self._pos = min(end, len(self._buf))
        return out

    def peek_packet(self) -> tuple[int, bytes, int] | None:
        """The MQTT packet at the front of the buffer if it is all there: (its first byte, what follows its
        remaining length, where it ends); None if not (or if its remaining length is malformed: paho's)."""
        buf, pos = self._buf, self._pos
        size, i, length, shift = len(buf), pos + 1, 0, 0
        while True:
            if i >= size or i > pos + 4:
                return None
            byte = buf[i]
            length += (byte & 127) << shift
            shift += 7
            i += 1
            if not byte & 128:
                break
        end = i + length
        return (buf[pos], buf[i:end], end) if end <= size else None

    def consume(self, end: int) -> None:
        """The buffer's bytes up to ``end`` (a ``peek_packet``'s) taken."""
        self._pos = end

    def buffered(self) -> int:
        """Bytes read from the socket and not yet handed to paho."""
        return len(self._buf) - self._pos

    def pending(self) -> int:
        inner = self._sock.pending() if hasattr(self._sock, "pending") else 0
        return self.buffered() + int(inner)

    def __getattr__(self, name: str) -> Any:  # send, fileno, close, setblocking, getpeercert, ...
        return getattr(self._sock, name)


_PUBACK = struct.Struct("!BBH")
_NO_INFO = mqtt.MQTTMessageInfo(0)  # a received message's (paho makes one, with its lock, for each)


class _Publish(mqtt.MQTTMessage):
    """A received PUBLISH as paho hands it over, made without the ``MQTTMessageInfo`` (and its ``Condition``) paho
    gives each: only a message sent is waited on."""

    __slots__ = ()

    def __init__(self, mid: int, topic: bytes, payload: bytes, header: int) -> None:
        self.timestamp = 0.0
        self.state = mqtt.mqtt_ms_invalid
        self.dup = bool(header & 0x08)
        self.mid = mid
        self._topic = topic
        self.payload = payload
        self.qos = (header & 0x06) >> 1
        self.retain = bool(header & 0x01)
        self.info = _NO_INFO
        self.properties = None


class ReadAheadClient(mqtt.Client):
    """A paho client for a subscriber that receives floods of small messages (the floor archive's workers):

    - its socket is read ahead (``_ReadAhead``) and each pass of the network loop handles the packets already
      read (up to ``PACKETS_PER_READ``), where paho alone makes a ``select`` and three or four ``recv`` calls per
      message;
    - a PUBLISH of MQTT 3.1.1 at QoS 0 or 1 goes straight to ``on_message`` (as paho's ``_handle_publish`` would
      hand it: the same fields, the same callback lock), without paho's topic-filter walk (this client has no
      ``message_callback_add``: refused) and its per-message log lines; anything else is paho's;
    - ``ack_many`` acknowledges many QoS 1 messages (``manual_ack``) with one write to the broker: the PUBACK
      packets one after another, where paho's ``ack`` queues each alone (and wakes its network thread for each).

    These stand on paho's own ``_create_socket``, ``_handle_publish``, ``_in_packet`` and ``_packet_queue``;
    tests/test_paho_client.py holds paho to them."""

    def _create_socket(self) -> Any:
        return _ReadAhead(super()._create_socket())

    def message_callback_add(self, sub: str, callback: Any) -> None:
        raise NotImplementedError("a ReadAheadClient hands every message to on_message")

    def _lean(self, header: int, packet: bytes | bytearray) -> _Publish | None:
        """The PUBLISH packet (``header``: its first byte, ``packet``: after the remaining length) as handed to
        ``on_message``; None for one paho handles itself (v5 properties, QoS 2, automatic acks, malformed, a
        topic that is not UTF-8: paho's own way with each)."""
        qos = (header & 0x06) >> 1
        end = 2 + ((packet[0] << 8) | packet[1]) if len(packet) >= 2 else 0
        if self._protocol == mqtt.MQTTv5 or qos == 2 or (qos == 1 and not self._manual_ack) or end <= 2:
            return None
        topic = bytes(packet[2:end])
        mid = 0
        if qos:
            if len(packet) < end + 2:
                return None
            mid = (packet[end] << 8) | packet[end + 1]
            end += 2
        try:
            topic.decode()
        except UnicodeDecodeError:
            return None
        return _Publish(mid, topic, bytes(packet[end:]), header)

    def _hand_over(self, message: _Publish) -> None:
        """As paho's ``_handle_on_message`` with no topic callbacks: ``on_message`` under the callback lock."""
        message.timestamp = mqtt.time_func()
        on_message = self.on_message
        if on_message:
            with self._in_callback_mutex:
                try:
                    on_message(self, self._userdata, message)
                except Exception as err:
                    self._easy_log(mqtt.MQTT_LOG_ERR, "Caught exception in on_message: %s", err)
                    if not self.suppress_exceptions:
                        raise

    def _handle_publish(self) -> MQTTErrorCode:
        message = self._lean(self._in_packet["command"], self._in_packet["packet"])
        if message is None:
            return super()._handle_publish()
        self._hand_over(message)
        return mqtt.MQTT_ERR_SUCCESS

    def loop_read(self, max_packets: int = 1) -> MQTTErrorCode:
        """paho's read of one packet (which fills the buffer), then the packets already in the buffer: a whole
        PUBLISH taken from it here, anything else (or a packet not all read yet) by paho, which reads it from the
        buffer too; at most ``PACKETS_PER_READ``, then the network loop runs its other work (writes, pings)."""
        rc = super().loop_read(max_packets)
        sock = self._sock
        if not isinstance(sock, _ReadAhead):
            return rc
        handled = 0
        while (
            rc == mqtt.MQTT_ERR_SUCCESS
            and handled < PACKETS_PER_READ
            and id(self._sock) == id(sock)  # still connected on it (``is`` would widen the type of ``sock``)
            and self._in_packet["command"] == 0  # paho is not halfway through a packet
            and sock.buffered()
        ):
            handled += 1
            whole = sock.peek_packet()
            message = None if whole is None or whole[0] & 0xF0 != mqtt.PUBLISH else self._lean(*whole[:2])
            if message is None or whole is None:
                rc = super().loop_read(max_packets)
                continue
            sock.consume(whole[2])
            self._hand_over(message)
        if handled:
            with self._msgtime_mutex:
                self._last_bytes_received = mqtt.time_func()
        return rc

    def ack_many(self, acks: Iterable[tuple[int, int]]) -> None:
        """Acknowledge the (mid, qos) received messages (``manual_ack``): the QoS 1 ones in one write, in their
        order; a QoS 2 one by paho's own ``ack``."""
        pubacks = bytearray()
        for mid, qos in acks:
            if qos == 1:
                pubacks += _PUBACK.pack(mqtt.PUBACK, 2, mid)
            elif qos == 2:
                self.ack(mid, qos)
        if pubacks and self._manual_ack:
            self._packet_queue(mqtt.PUBACK, bytes(pubacks), 0, 1)


def new_client(
    endpoint: BrokerEndpoint,
    client_id: str,
    *,
    protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv5,
    read_ahead: bool = False,
    **options: Any,
) -> mqtt.Client:
    """A paho client (callback API 2) with the endpoint's account and TLS; ``options`` go to ``mqtt.Client``
    (clean_session, manual_ack, reconnect_on_failure); ``read_ahead``: a ``ReadAheadClient``. Connecting and
    callbacks are the caller's."""
    cls = ReadAheadClient if read_ahead else mqtt.Client
    client = cls(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol, **options)
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
