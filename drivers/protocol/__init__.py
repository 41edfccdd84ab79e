"""Shoe wire protocol: CRC, framing (bytes <-> frames) and message codecs (frames <-> events/commands).

Pure code, no I/O. See docs/protocol.md for the published specification.
"""

from drivers.protocol.crc import crc16_ccitt_false
from drivers.protocol.framing import MAX_PAYLOAD, Frame, FrameDecoder, FramingStats, encode_frame

__all__ = ["MAX_PAYLOAD", "Frame", "FrameDecoder", "FramingStats", "crc16_ccitt_false", "encode_frame"]
