"""Text from the tables shown on a terminal: control characters (escape sequences) never reach it."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe(value: object, limit: int = 300) -> str:
    """Printable text: control and bidi characters shown as ``\\xNN``/``\\uNNNN``, cut at ``limit``."""
    text = str(value)[:limit]
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def whole(value: object) -> int | None:
    """An integer from a document (a bool is not one), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
