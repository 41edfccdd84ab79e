"""Text from outside (a device, MQTT, the journal) made safe to show: never markup, never a terminal control
sequence, never an invisible reordering of what the reader sees, never unbounded (issue 13 §4).

Every screen builds what it shows from :func:`clean` / :func:`plain` (a :class:`rich.text.Text`, which Textual
and Rich never parse as markup) instead of handing a ``str`` to a widget (``Static.update(str)``,
``DataTable.add_row(str)``, ``Label(str)`` and Rich ``Table`` cells parse ``[...]`` as markup: a ``[/]`` in an
alert reason raised ``MarkupError`` and, the alert being retained, crashed the console at every start).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

LIMIT = 160  # characters of one outside string shown; the rest is cut with "…"
# Characters that reorder or hide text (bidi overrides/isolates/marks): shown by their code point.
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def clean(value: Any, limit: int = LIMIT) -> str:
    """``value`` as one line of printable text: control characters as ``\\xNN``, lone surrogates as U+FFFD,
    format/bidi/unassigned code points as ``<U+XXXX>``, at most ``limit`` characters (then ``…``)."""
    text = value if isinstance(value, str) else _str(value)
    out: list[str] = []
    size = 0
    for ch in text:
        cat = unicodedata.category(ch)
        if cat not in _INVISIBLE_CATEGORIES:
            piece = ch
        elif cat == "Cc":
            piece = f"\\x{ord(ch):02x}"
        elif cat == "Cs":
            piece = "\ufffd"
        else:
            piece = f"<U+{ord(ch):04X}>"
        if size + len(piece) > limit:
            out.append("…")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


def plain(value: Any, limit: int = LIMIT, style: str = "") -> Text:
    """:func:`clean` as a Rich ``Text`` (what widgets are given: never parsed as markup)."""
    from rich.text import Text

    return Text(clean(value, limit), style=style, end="")


def _str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a hostile __str__ cannot happen with JSON values, but never raise here
        return "<unprintable>"
